"""Snapshot testing for runs: ``assert result == trace_snapshot``.

Law: a run's snapshot is a stable, readable text rendering of its TRACE — chart name
and fingerprint, status (finished, or paused with the pause data), run input, initial
state, narrative, every commit with its reads and ops, each subflow's log, and the final
state — with nothing that changes from run to run: no run ids, no ``paused_at``, no
library version, and no opaque ids derived from a run id (``<3 letters>_<32 hex digits>``,
e.g. a request id bound to its run: each becomes ``<cki#1>``, numbered by first
appearance, so which values are the same id still shows). JSON values are rendered with
sorted keys, so the text depends only on what the run did. Snapshots are stored one file per test under the TOP-LEVEL
``snapshots/<test module>/`` folder of the project (pytest's rootdir), not next to the
test.

Use it with the fixture (import it in your ``conftest.py``)::

    from flowchart.testing import trace_snapshot  # noqa: F401

    def test_loan(trace_snapshot):
        assert chart.run(recorders=[narrative()]) == trace_snapshot

or directly: ``assert result == snapshot.use_extension(TraceSnapshotExtension)``.
Create or refresh the files with ``pytest --snapshot-update``.

Replay as a test (``pytest --replay tests/runs/``: the plugin is installed with pyfootprint, as
the ``pytest11`` entry point ``flowchart._pytest_plugin``, active when syrupy is; ``-p
flowchart.testing`` or ``pytest_plugins = ["flowchart.testing"]`` load it too): every fixture file
in the directory (``*.trace.json``, as ``agent runs export`` writes them) parametrizes the
``replay_run`` fixture. ``replay_run.check()`` re-runs TODAY's chart or agent against the
fixture's recorded world — the target is ``--replay-target MODULE:ATTR`` or a ``replay_target``
fixture: a ``FlowChart`` (run on the recorded input) or a function taking the recorded
(shown) record and returning today's run (``agent.replaying.replayer(agent)``) — and fails with
the decision diff (``flowchart.diff_runs``: the first divergent commit named) when anything
moved. ``replay_run.rerun()`` is today's run, for ``assert ... == trace_snapshot``. A fixture
from another chart is refused naming both fingerprints.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

try:
    import pytest
    from syrupy.assertion import SnapshotAssertion
    from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
    from syrupy.location import PyTestLocation
except ImportError as exc:
    raise ImportError(
        f"flowchart.testing needs pytest and syrupy ({exc}): pip install pytest syrupy "
        "(in a pyfootprint checkout: pip install -e '.[testing]')"
    ) from None

import attrs

from flowchart._core.commits import Commit
from flowchart._record.diff import DiffError, RunDiff, diff_runs
from flowchart._record.record import Record, ShownRecord
from flowchart._record.result import RunResult
from flowchart._record.trace import Trace

SNAPSHOT_DIR = "snapshots"
_OPAQUE_ID = re.compile(r"\b([a-z]{3})_[0-9a-f]{32}\b")


def _number_opaque_ids(text: str) -> str:
    """Replace each opaque run-bound id by ``<prefix#n>``, numbered by first appearance."""
    seen: dict[str, str] = {}

    def number(match: re.Match[str]) -> str:
        return seen.setdefault(match.group(0), f"<{match.group(1)}#{len(seen) + 1}>")

    return _OPAQUE_ID.sub(number, text)


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _commit_lines(log: list[Commit], indent: str) -> list[str]:
    lines = []
    for commit in log:
        reads = ", ".join(commit.reads) or "-"
        lines.append(f"{indent}#{commit.idx} {commit.stage} ({commit.runtime_stage_id}) reads: {reads}")
        for op in commit.trace:
            path = "/".join(op.path)
            shown = "" if op.verb == "delete" else f" = {_json(op.value)}"
            lines.append(f"{indent}    {op.verb} {path}{shown}")
    return lines


def render_trace(trace: Trace) -> str:
    """The stable text form of ``trace`` that snapshots store (see the module law)."""
    spec_name = trace.chart_spec.get("name", "?")
    lines = [f"chart: {spec_name} (fingerprint {trace.chart_fingerprint[:16]})"]
    checkpoint = trace.checkpoint
    if checkpoint is None:
        lines.append("status: finished")
    else:
        lines.append(f"status: paused at {checkpoint.paused_stage_id}")
        lines.append(f"pause data: {_json(checkpoint.pause_data)}")
    lines.append(f"input: {_json(trace.run_input)}")
    lines.append(f"initial state: {_json(trace.initial_state)}")
    if trace.redacted_paths:
        lines.append(f"redacted: {', '.join(trace.redacted_paths)}")
    if trace.narrative_lines is not None:
        lines += ["", "narrative:", *(f"  {line}" for line in trace.narrative_lines)]
    lines += ["", "commits:", *_commit_lines(trace.commit_log, "  ")]
    for rid, sub in trace.subflows.items():
        lines += ["", f"subflow {sub.mount_id} ({rid}) initial state: {_json(sub.initial_state)}"]
        lines += _commit_lines(sub.commit_log, "  ")
    lines += ["", f"final state: {_json(trace.final_state)}"]
    return _number_opaque_ids("\n".join(lines) + "\n")


class TraceSnapshotExtension(SingleFileSnapshotExtension):
    """A syrupy extension: one ``.trace.txt`` file per snapshot in ``<rootdir>/snapshots/``.

    Serialises a ``RunResult`` (through ``result.trace()``) or a ``Trace`` with
    ``render_trace``; anything else is refused with a ``TypeError``.
    """

    _write_mode = WriteMode.TEXT
    file_extension = "trace.txt"

    def serialize(self, data: Any, **_options: Any) -> str:
        """Render a run result or trace as stable text."""
        if isinstance(data, RunResult):
            data = data.trace()
        elif not isinstance(data, Trace | Record | ShownRecord) and isinstance(getattr(data, "record", None), Record):
            data = data.record  # an agent's snapshot, a stored run: the record it carries
        if isinstance(data, Record):
            data = data.shown()
        if isinstance(data, ShownRecord):
            data = Trace.of(data)
        if not isinstance(data, Trace):
            raise TypeError(
                f"trace_snapshot compares a RunResult, a Trace, a Record or what carries one, got {type(data).__name__}"
            )
        return render_trace(data)

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        """``<rootdir>/snapshots/<test module>``: the project's top-level snapshot folder."""
        root = Path(test_location.item.config.rootpath)
        return str(root / SNAPSHOT_DIR / test_location.basename)


class TextSnapshotExtension(SingleFileSnapshotExtension):
    """A syrupy extension: one ``.txt`` file per snapshot of a ``str`` in ``<rootdir>/snapshots/``
    (an explanation, a narrative, CLI output), opaque ids numbered as in traces."""

    _write_mode = WriteMode.TEXT
    file_extension = "text.txt"

    def serialize(self, data: Any, **_options: Any) -> str:
        """The text itself, with a final newline (anything but a ``str`` is refused)."""
        if not isinstance(data, str):
            raise TypeError(f"text_snapshot compares a str, got {type(data).__name__}")
        return _number_opaque_ids(data.rstrip("\n") + "\n")

    dirname = TraceSnapshotExtension.dirname


# -- replay as a test ------------------------------------------------------------------------------
REPLAY_SUFFIX = ".trace.json"
_PARAMETRIZED = pytest.StashKey[set]()


def pytest_addoption(parser: Any) -> None:
    """``--replay DIR`` and ``--replay-target MODULE:ATTR``."""
    group = parser.getgroup("flowchart replay")
    if any("--replay" in option.names() for option in group.options):
        return  # registered twice (the entry point, and -p flowchart.testing): once is enough
    group.addoption(
        "--replay",
        metavar="DIR",
        default=None,
        help="re-run today's chart/agent against each recorded run (*.trace.json) in DIR (the replay_run fixture)",
    )
    group.addoption(
        "--replay-target",
        metavar="MODULE:ATTR",
        default=None,
        help="what replay_run re-runs: a FlowChart, or a function(record) -> today's run",
    )


def replay_fixtures(directory: str | Path) -> list[Path]:
    """The fixture files of a replay directory (``*.trace.json``), sorted by name."""
    root = Path(directory)
    if not root.is_dir():
        raise pytest.UsageError(f"--replay {directory}: no such directory (agent runs export RUN -o DIR makes one)")
    return sorted(root.glob("*" + REPLAY_SUFFIX))


def pytest_generate_tests(metafunc: Any) -> None:
    """One test per fixture file of ``--replay DIR`` for a test asking for ``replay_run``."""
    if "replay_run" not in metafunc.fixturenames:
        return
    seen = metafunc.config.stash.setdefault(_PARAMETRIZED, set())
    if metafunc.definition.nodeid in seen:  # the hook registered twice: parametrize once
        return
    seen.add(metafunc.definition.nodeid)
    directory = metafunc.config.getoption("--replay", default=None)
    if directory is None:
        metafunc.parametrize(
            "replay_run",
            [pytest.param(None, marks=pytest.mark.skip(reason="no --replay DIR given"))],
            indirect=True,
        )
        return
    files = replay_fixtures(directory)
    metafunc.parametrize("replay_run", files, ids=[f.name[: -len(REPLAY_SUFFIX)] for f in files], indirect=True)


@attrs.frozen
class ReplayRun:
    """One recorded run, replayed: ``check()``, ``diff()``, ``rerun()`` (see the module law)."""

    path: Path
    fixture: ShownRecord
    target: Any = None

    def _target(self, target: Any) -> Any:
        chosen = target if target is not None else self.target
        if chosen is None:
            raise pytest.UsageError(
                "replay_run needs a target: pass --replay-target MODULE:ATTR, define a replay_target fixture, "
                "or call replay_run.check(target)"
            )
        return chosen

    def rerun(self, target: Any = None) -> Any:
        """Today's run against the fixture's recorded world."""
        from flowchart._chart.chart import FlowChart

        chosen = self._target(target)
        if isinstance(chosen, FlowChart):
            if chosen.fingerprint != self.fixture.chart_fingerprint:
                raise DiffError(
                    f"{self.path.name} is a run of chart {self.fixture.chart_fingerprint[:12]}…, not of the target "
                    f"chart {chosen.fingerprint[:12]}… (a fixture from another chart: re-export it from a run of "
                    "this chart)"
                )
            return chosen.run(dict(self.fixture.input))
        if not callable(chosen):
            raise TypeError(f"a replay target is a FlowChart or a function(record), got {type(chosen).__name__}")
        return chosen(self.fixture)

    def diff(self, target: Any = None) -> RunDiff:
        """The decision diff of the recorded run (A) and today's (B)."""
        return diff_runs(self.fixture, self.rerun(target))

    def check(self, target: Any = None) -> RunDiff:
        """Fail with the decision diff when anything moved; the (empty) diff otherwise."""
        diff = self.diff(target)
        if not diff.same:
            pytest.fail(f"{self.path.name}: the replayed run moved\n{diff.format()}", pytrace=False)
        return diff


@pytest.fixture
def replay_run(request: Any) -> ReplayRun:
    """One fixture file of ``--replay DIR``, loaded (see the module law)."""
    path = Path(request.param)
    target = None
    spec = request.config.getoption("--replay-target", default=None)
    if spec is not None:
        from flowchart._cli_support import CliError, import_target

        try:
            target = import_target(spec, "expected MODULE:ATTR (a FlowChart or a function)", None)
        except CliError as exc:
            raise pytest.UsageError(f"--replay-target: {exc}") from None
    else:
        try:
            target = request.getfixturevalue("replay_target")
        except pytest.FixtureLookupError:
            target = None
    return ReplayRun(path, Trace.load(path).record.shown(), target)


@pytest.fixture
def text_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """syrupy's ``snapshot`` for plain text, kept in the top-level ``snapshots/`` folder."""
    return snapshot.use_extension(TextSnapshotExtension)


@pytest.fixture
def trace_snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """syrupy's ``snapshot`` with the trace extension: ``assert result == trace_snapshot``."""
    return snapshot.use_extension(TraceSnapshotExtension)


__all__ = [
    "REPLAY_SUFFIX",
    "SNAPSHOT_DIR",
    "ReplayRun",
    "TextSnapshotExtension",
    "TraceSnapshotExtension",
    "pytest_addoption",
    "pytest_generate_tests",
    "render_trace",
    "replay_fixtures",
    "replay_run",
    "text_snapshot",
    "trace_snapshot",
]
