"""The data a viewer page embeds: one JSON-safe dict built from a ``Trace``.

Law: the payload holds only what the trace holds (already redacted) plus what is DERIVED
from it in Python — the narrative records of each commit (placed by stage id), the causal
chain of each key at the end of the log, what each ``Panel`` builds
(``flowchart.viewer.panels``: the viewer itself reads no one's state keys), visit counts.
States are NOT stored per commit: the page replays the commit ops itself (the fold
``flowchart._core.commits.replay`` defines), so the payload grows with the log, not with log × state.
The two lists that grow with the log's values (the commits' rows and the narrative's) are
kept as ``Rows``, a recipe for any slice: a page being written encodes them a slice at a
time, so their rows never all exist at once; ``build_payload`` makes them lists. Values are
shared with the trace, never copied.

A page stays small whatever a run holds: every string longer than ``CUT_AT`` characters —
a tool's 50 MB result, a 200 MB document — is embedded cut (``cut_long``): its first
``CUT_HEAD`` characters, then a note with its full size and the command that prints the
whole value (``flowchart replay TRACE --at N``, N the commit that wrote it). Each copy a
reader makes of a value (the history, the agent panel's tool result) is cut the same way,
so a big value costs a page a few kilobytes, not its size once per place it shows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from flowchart._core.commits import Commit
from flowchart._core.narrative_entry import NarrativeEntry
from flowchart._record.causal import causal_chains
from flowchart._record.trace import Trace
from flowchart.viewer.narrative import commit_records, decision_record, headline_record
from flowchart.viewer.panels import Panel, panel_data, panels_title

MAX_WHY_KEYS = 200
#: a string longer than this many characters is embedded cut (see the module law)
CUT_AT = 20_000
#: how many leading characters of a cut string a page keeps
CUT_HEAD = 2_000


def _cut(text: str, at: int | None) -> str:
    where = "" if at is None else f" --at {at}"
    return (
        f"{text[:CUT_HEAD]}… [cut by the viewer: {len(text):,} characters in all; the whole value: "
        f"flowchart replay TRACE{where}]"
    )


def cut_long(value: Any, at: int | None = None) -> Any:
    """``value`` with every string longer than ``CUT_AT`` cut (``at``: the commit that wrote it,
    named in the note); ``value`` itself, not a copy, when nothing in it is that long."""
    if isinstance(value, str):
        return value if len(value) <= CUT_AT else _cut(value, at)
    if isinstance(value, dict):
        changed: dict[Any, Any] | None = None
        for key, item in value.items():
            cut = cut_long(item, at)
            if cut is not item:
                changed = dict(value) if changed is None else changed
                changed[key] = cut
        return value if changed is None else changed
    if isinstance(value, list | tuple):
        items: list[Any] | None = None
        for i, item in enumerate(value):
            cut = cut_long(item, at)
            if cut is not item:
                items = list(value) if items is None else items
                items[i] = cut
        return value if items is None else items
    return value


def stage_kinds(spec: dict[str, Any]) -> dict[str, str]:
    """Full stage id (``mount/inner`` inside subflows) → ``kind``, for every spec level."""
    kinds: dict[str, str] = {}
    pending = [("", spec)]
    while pending:
        prefix, current = pending.pop()
        for stage in current.get("stages", []):
            kinds[prefix + stage["id"]] = str(stage.get("kind", "stage"))
            if isinstance(stage.get("subflow"), dict):
                pending.append((f"{prefix}{stage['id']}/", stage["subflow"]))
    return kinds


def visits_and_taken(trace: Trace) -> tuple[dict[str, int], set[tuple[str, str]]]:
    """How often each stage ran, and the (source, target) stage pairs that ran back to back."""
    visits: dict[str, int] = {}
    taken: set[tuple[str, str]] = set()
    logs = [trace.commit_log, *(sub.commit_log for sub in trace.subflows.values())]
    for log in logs:
        previous: str | None = None
        for commit in log:
            visits[commit.stage_id] = visits.get(commit.stage_id, 0) + 1
            if previous is not None:
                taken.add((previous, commit.stage_id))
            previous = commit.stage_id
    for sub in trace.subflows.values():  # into a subflow: mount → its first inner stage
        if sub.commit_log:
            taken.add((sub.mount_id, sub.commit_log[0].stage_id))
    return visits, taken


@attrs.frozen
class Rows:
    """A payload list of ``count`` items kept as a recipe: ``make(start, stop)`` builds that slice."""

    count: int
    make: Callable[[int, int], list[Any]]

    @classmethod
    def of(cls, items: list[Any]) -> Rows:
        """The rows of a list that already exists."""
        return cls(len(items), lambda start, stop: items[start:stop])

    def slice(self, start: int, stop: int) -> list[Any]:
        """Items ``start`` up to ``stop`` (cut at ``count``)."""
        return self.make(start, min(stop, self.count))


def _commit_rows(trace: Trace) -> Rows:
    log = trace.commit_log

    def make(start: int, stop: int) -> list[list[Any]]:
        rows = []
        for c in log[start:stop]:
            ops = [
                [list(op.path), op.verb] if op.verb == "delete" else [list(op.path), op.verb, cut_long(op.value, c.idx)]
                for op in c.trace
            ]
            rows.append([c.runtime_stage_id, c.stage, c.stage_id, ops, list(c.reads), list(c.redacted_paths)])
        return rows

    return Rows(len(log), make)


def _narrative_rows(records: Sequence[NarrativeEntry]) -> Rows:
    return Rows(len(records), lambda start, stop: [[r.type, r.depth, cut_long(r.text)] for r in records[start:stop]])


def why_chains(trace: Trace, keys: list[str]) -> dict[str, dict[str, Any]]:
    """Each key's causal chain at the end of the log: its text and the commits in it."""
    out = {}
    started_with = {*trace.initial_state, *trace.run_input}  # as ``trace.why`` passes them
    for key, chain in causal_chains(trace.commit_log, keys, initial=started_with).items():
        out[key] = {
            "text": chain.format() if chain.root is not None else "",
            "missing": chain.missing,
            "nodes": [[n.idx, n.runtime_stage_id, n.stage, n.depth, n.linked_by] for n in chain.nodes],
        }
    return out


def _why_keys(trace: Trace) -> tuple[list[str], bool]:
    written: dict[str, None] = {}
    for commit in reversed(trace.commit_log):  # the most recently written first
        for key in commit.written_keys:
            written.setdefault(key, None)
    keys = list(written)
    return sorted(keys[:MAX_WHY_KEYS]), len(keys) > MAX_WHY_KEYS


def _op_dicts(commit: Commit) -> list[dict[str, Any]]:
    """``commit.to_dict()["trace"]`` without its deep copies (the page only reads the values)."""
    return [
        {"path": list(op.path), "verb": op.verb}
        if op.verb == "delete"
        else {"path": list(op.path), "verb": op.verb, "value": cut_long(op.value, commit.idx)}
        for op in commit.trace
    ]


def _subflows(trace: Trace) -> dict[str, Any]:
    return {
        rid: {
            "mount_id": sub.mount_id,
            "initial": sub.initial_state,
            "commits": [[c.runtime_stage_id, c.stage, c.stage_id, _op_dicts(c)] for c in sub.commit_log],
        }
        for rid, sub in trace.subflows.items()
    }


def build_payload(trace: Trace, panels: Sequence[Panel] = ()) -> dict[str, Any]:
    """Everything the page shows, as one JSON-safe dict (see the module law); ``panels`` add
    their data under ``panels`` (and may name the run)."""
    fields = payload_fields(trace, panels)
    return {key: value.slice(0, value.count) if isinstance(value, Rows) else value for key, value in fields.items()}


def payload_fields(trace: Trace, panels: Sequence[Panel] = ()) -> dict[str, Any]:
    """``build_payload``'s dict with its long lists (``commits``, ``narrative``) as ``Rows``."""
    kinds = stage_kinds(trace.chart_spec)
    records = trace.narrative or []
    blocks = commit_records(records, trace.commit_log, trace.subflows)
    keys, cut = _why_keys(trace)
    checkpoint = trace.checkpoint
    pause = None
    if checkpoint is not None:
        pause = {"stage_id": checkpoint.paused_stage_id, "data": checkpoint.pause_data}
    extra = panel_data(trace, panels)
    name = str(trace.chart_spec.get("name", ""))
    fields = {
        "meta": {
            "name": name,
            "title": panels_title(panels, extra) or name or "run",
            "run_id": trace.run_id,
            "fingerprint": trace.chart_fingerprint,
            "library_version": trace.library_version,
            "paused": trace.paused,
            "failed": trace.failure is not None,
            "redacted_paths": list(trace.redacted_paths),
            "why_keys_cut": cut,
        },
        "kinds": kinds,
        "run_input": trace.run_input,
        "initial": trace.initial_state,
        "commits": _commit_rows(trace),
        "narrative": _narrative_rows(records),
        "blocks": blocks,
        "headlines": [headline_record(records, mine) for mine in blocks],
        "decisions": [decision_record(records, mine) for mine in blocks],
        "choices": [c.decision for c in trace.commit_log],
        "why": why_chains(trace, keys),
        "subflows": _subflows(trace),
        "panels": extra,
        "pause": pause,
        "failure": None if trace.failure is None else trace.failure.to_dict(),
    }
    return {key: value if isinstance(value, Rows) else cut_long(value) for key, value in fields.items()}


__all__ = [
    "CUT_AT",
    "Rows",
    "build_payload",
    "cut_long",
    "payload_fields",
    "stage_kinds",
    "visits_and_taken",
    "why_chains",
]
