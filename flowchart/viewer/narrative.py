"""Which narrative lines belong to which commit, recovered from the narrative text alone.

Law: a trace keeps its narrative as plain lines, so the mapping is a best-effort parse
that never invents text. At subflow depth 0 a block starts at ``Stage N:`` (a stage or a
decider), ``Execution paused at`` (the paused stage tells nothing else), ``Recorded the
answer at`` (a pausable's answer commit), ``Entering ...``
(a subflow mount: everything up to the matching ``Exiting`` line belongs to it),
``[Selected]:`` or ``[Parallel]:``; an ``On pass N ...`` line
starts the block that follows it; lines before the first block join the first block.
Blocks are paired with commits in order, a block of the wrong shape for a commit (a
mount's ``Entering`` block for a plain stage) is skipped over (up to a few blocks), and a
commit left without a block simply has no narrative. The step's decision sentence is
the first ``[Condition]:`` / ``[Selected]:`` line of its block.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from ..commits import Commit

_STAGE = re.compile(r"^Stage \d+: ")
_PASS = re.compile(r"^On pass \d+")
_LOOKAHEAD = 4


@attrs.frozen
class Block:
    """Lines ``[start, end)`` of the narrative, opened by a line of ``shape``."""

    start: int
    end: int
    shape: str  # "stage" | "subflow" | "selector" | "fork"


def _shape(line: str) -> str | None:
    if _STAGE.match(line) or line.startswith(("Execution paused at ", "Recorded the answer at ")):
        return "stage"
    if line.startswith("Entering "):
        return "subflow"
    if line.startswith("[Selected]:"):
        return "selector"
    if line.startswith("[Parallel]:"):
        return "fork"
    return None


def split_blocks(lines: Sequence[str]) -> list[Block]:
    """The depth-0 blocks of ``lines`` (see the module law)."""
    starts: list[tuple[int, str]] = []
    depth = 0
    pending_pass: int | None = None
    for i, line in enumerate(lines):
        if depth == 0:
            if _PASS.match(line):
                pending_pass = i
                continue
            shape = _shape(line)
            if shape is not None:
                starts.append((i if pending_pass is None else pending_pass, shape))
            pending_pass = None
        if line.startswith("Entering "):
            depth += 1
        elif line.startswith("Exiting ") and depth > 0:
            depth -= 1
    blocks = []
    for n, (start, shape) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        blocks.append(Block(0 if n == 0 else start, end, shape))
    return blocks


def _fits(shape: str, kind: str) -> bool:
    if kind == "subflow":
        return shape == "subflow"
    if kind == "selector":
        return shape in ("selector", "stage")
    return shape in ("stage", "fork")


def commit_blocks(
    lines: Sequence[str] | None, commits: Sequence[Commit], kinds: dict[str, str]
) -> list[tuple[int, int] | None]:
    """For each commit, the ``(start, end)`` of its narrative lines, or ``None``.

    ``kinds`` maps a stage id to its spec ``kind``.
    """
    if not lines:
        return [None] * len(commits)
    blocks = split_blocks(lines)
    out: list[tuple[int, int] | None] = []
    cursor = 0
    for commit in commits:
        kind = kinds.get(commit.stage_id, "stage")
        found = None
        for j in range(cursor, min(cursor + _LOOKAHEAD, len(blocks))):
            if _fits(blocks[j].shape, kind):
                found = j
                break
        if found is None:
            out.append(None)
            continue
        out.append((blocks[found].start, blocks[found].end))
        cursor = found + 1
    return out


def decision_line(lines: Sequence[str], span: tuple[int, int] | None) -> int | None:
    """The index of the block's first ``[Condition]:`` / ``[Selected]:`` line, if any."""
    if span is None:
        return None
    for i in range(*span):
        if lines[i].startswith(("[Condition]:", "[Selected]:")):
            return i
    return None


__all__ = ["Block", "commit_blocks", "decision_line", "split_blocks"]
