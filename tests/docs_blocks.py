"""Code blocks of the docs pages, as a reader pastes them: the parser behind the docs tests.

A page is ``README.md`` or ``docs/*.md``. ``blocks(text)`` returns every fenced block in
page order with its language (the word after the opening fence, ``""`` for none), its
first body line (1-based, for error messages) and whether it is a *fragment*: a block
whose opening fence comes right after a line that is exactly ``<!-- fragment -->``.
Fragments are illustrations (they need a server, a model, the network, or names
defined elsewhere); every other ``python`` block must run as pasted, and every
``console`` block is a shell session whose claimed output is checked.

A ``console`` session is ``$ command`` lines, each followed by the output it claims
(every line up to the next ``$`` line or the end of the block).
"""

from __future__ import annotations

from pathlib import Path

import attrs

REPO = Path(__file__).resolve().parents[1]
FRAGMENT = "<!-- fragment -->"


@attrs.frozen
class Block:
    """One fenced block of a page."""

    language: str
    line: int  # the 1-based line number of the block's first body line
    body: str
    fragment: bool


@attrs.frozen
class Command:
    """One ``$ command`` of a console block and the output the page claims for it."""

    command: str
    claimed: list[str]


def pages() -> list[Path]:
    """README.md and every docs page, in a stable order."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def blocks(text: str) -> list[Block]:
    """Every fenced block of a markdown page, in page order (an unclosed fence is an error)."""
    lines = text.splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.startswith("```"):
            index += 1
            continue
        language = line[3:].strip()
        fragment = index > 0 and lines[index - 1].strip() == FRAGMENT
        end = index + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if end == len(lines):
            raise ValueError(f"line {index + 1}: the ``` fence is never closed")
        body = "\n".join(lines[index + 1 : end]) + "\n"
        found.append(Block(language=language, line=index + 2, body=body, fragment=fragment))
        index = end + 1
    return found


def commands(block: Block) -> list[Command]:
    """The ``$ command`` lines of a console block, each with the output lines it claims."""
    parsed: list[Command] = []
    for line in block.body.splitlines():
        if line.startswith("$ "):
            parsed.append(Command(command=line[2:], claimed=[]))
        elif parsed:
            parsed[-1].claimed.append(line)
        else:
            raise ValueError(f"line {block.line}: a console block must start with a '$ ' command line")
    return parsed
