"""Random interleavings of failure, retry, pause, resume and fork: every checkpoint the engine
writes loads again, every stored run stays listable, and every commit of a recovered run is
either a fork point or refused as one, naming the nearest.

Random charts hold plain stages, stages that fail on their first call (after a partial
write), pausable stages, maps whose second item fails once — also inside subflows — and forks whose
children may fail. Each run is driven to
its end: a failure is resumed from ``Checkpoint.from_json(checkpoint.to_json())`` (or with
``resume_run`` on a store), a pause is answered the same way. Whatever the order of
failures and pauses, the final state is the one a run without failures and pauses reaches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowchart import Checkpoint, FlowChart, FlowChartBuilder, ForkError, Pausable, RunResult, flow_chart
from flowchart.store import SqliteStore

leaf = st.sampled_from(["plain", "flaky", "pause", "flaky-pause", "map", "flaky-map"])
segment = st.one_of(
    st.tuples(leaf),
    st.tuples(st.just("sub"), st.lists(st.tuples(leaf), min_size=1, max_size=3)),
    # at most one failing child per fork: two children of one batch failing leave no single resume
    # point (documented in docs/durable.md), which is not what this property is about
    st.tuples(
        st.just("fork"),
        st.lists(st.sampled_from(["plain", "flaky"]), min_size=2, max_size=3).filter(lambda k: k.count("flaky") <= 1),
    ),
)
specs = st.lists(segment, min_size=1, max_size=5)


class Charts:
    """Builds a spec's chart; a flaky stage fails on its first call only (after a partial write)."""

    def __init__(self) -> None:
        self.failed: set[str] = set()

    def body(self, label: str, flaky: bool) -> Any:
        def fn(scope: Any) -> None:
            scope.trail = [*getattr(scope, "trail", []), label]
            if flaky and label not in self.failed:
                self.failed.add(label)
                raise ConnectionError(f"{label} is down")

        return fn

    def item(self, label: str, flaky: bool) -> Any:
        """A map child: doubles its item; with ``flaky`` the second item fails on its first call."""

        def fn(scope: Any, ctx: Any) -> int:
            if flaky and ctx.index == 1 and f"{label}[1]" not in self.failed:
                self.failed.add(f"{label}[1]")
                raise ConnectionError(f"{label}[1] is down")
            return int(ctx.item) * 2

        return fn

    def pausable(self, label: str, flaky: bool) -> Pausable:
        def execute(scope: Any) -> dict[str, Any]:
            self.body(label, flaky)(scope)
            return {"id": label}

        def resume(scope: Any, given: Any) -> None:
            scope.trail = [*scope.trail, f"{label}:{given}"]

        return Pausable(execute, resume)

    def add(self, b: FlowChartBuilder, sid: str, seg: tuple[Any, ...]) -> FlowChartBuilder:
        kind = seg[0]
        if kind in ("plain", "flaky"):
            return b.add_function(sid, self.body(sid, kind == "flaky"), sid)
        if kind in ("pause", "flaky-pause"):
            return b.add_pausable_function(sid, self.pausable(sid, kind == "flaky-pause"), sid)
        if kind in ("map", "flaky-map"):
            return b.add_map(sid, self.item(sid, kind == "flaky-map"), sid, items=lambda s: [1, 2, 3], into=sid)
        if kind == "sub":
            inner = flow_chart(f"{sid}s", self.body(f"{sid}s", False), f"{sid}s")
            for j, part in enumerate(seg[1]):
                inner = self.add(inner, f"{sid}i{j}", part)
            return b.add_subflow_chart_next(
                sid,
                inner.build(),
                input_mapper=lambda parent: {"trail": []},
                output_mapper=lambda sub, parent: {"trail": [*parent.get("trail", []), *sub["trail"]]},
            )
        assert kind == "fork"
        children = [
            (f"{sid}c{j}", f"{sid}c{j}", self.body(f"{sid}c{j}", kind == "flaky")) for j, kind in enumerate(seg[1])
        ]
        return b.add_list_of_function(children)

    def build(self, spec: list[tuple[Any, ...]]) -> FlowChart:
        b = flow_chart("start", self.body("start", False), "start")
        for i, seg in enumerate(spec):
            b = self.add(b, f"s{i}", seg)
        return b.build()


def round_trip(checkpoint: Checkpoint | None) -> Checkpoint:
    """The checkpoint through its JSON text: it must load, and save to the same text."""
    assert checkpoint is not None, "a failure or pause the engine can resume carries a checkpoint"
    text = checkpoint.to_json()
    loaded = Checkpoint.from_json(text)
    assert loaded.to_json() == text
    return loaded


def drive(spec: list[tuple[Any, ...]], store: SqliteStore | None) -> tuple[FlowChart, RunResult, int]:
    """Run the spec to its end, answering every failure and pause; how many interruptions."""
    charts = Charts()
    chart = charts.build(spec)
    step: Any = (lambda: chart.run(store=store, run_id="r")) if store is not None else chart.run
    for interruptions in range(60):
        try:
            result = step()
        except Exception as exc:
            checkpoint = round_trip(getattr(exc, "checkpoint", None))
            if store is not None:
                assert [r.status for r in store.list()] == ["failed"]
                step = lambda: chart.resume_run("r")  # noqa: E731
            else:
                step = lambda c=checkpoint: chart.resume(c)  # noqa: E731
            continue
        if not result.paused:
            return chart, result, interruptions
        checkpoint = round_trip(result.checkpoint)
        if store is not None:
            assert [r.status for r in store.list()] == ["paused"]
            step = lambda: chart.resume_run("r", "ok")  # noqa: E731
        else:
            step = lambda c=checkpoint: chart.resume(c, "ok")  # noqa: E731
    raise AssertionError("the run did not end")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs)
def test_every_checkpoint_of_any_interleaving_loads_and_the_run_ends_as_without_interruptions(
    spec: list[tuple[Any, ...]],
) -> None:
    """Property: each checkpoint written (failure or pause, after any number of earlier ones)
    round-trips through JSON, and the resumed run ends in the state of a run with no failure."""
    _chart, result, _ = drive(spec, None)
    assert result.state == drive_calm(spec).state


def drive_calm(spec: list[tuple[Any, ...]]) -> RunResult:
    """The same chart with no failures (every flaky stage counts as failed already), pauses answered."""
    charts = Charts()
    charts.failed = _AllFailed()
    chart = charts.build(spec)
    result = chart.run()
    while result.paused:
        assert result.checkpoint is not None
        result = chart.resume(result.checkpoint, "ok")
    return result


class _AllFailed(set[str]):
    """A set that holds every label: no flaky stage fails."""

    def __contains__(self, item: object) -> bool:
        return True


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs)
def test_a_stored_run_stays_listable_and_every_commit_forks_or_names_the_nearest(
    tmp_path_factory: pytest.TempPathFactory, spec: list[tuple[Any, ...]]
) -> None:
    """Property: with a store, every interruption leaves the run listable; at the end every commit
    of the recovered run either forks or is refused as 'not a fork point' naming valid ones."""
    path: Path = tmp_path_factory.mktemp("interleave") / "runs.db"
    store = SqliteStore(path)
    try:
        chart, _result, _ = drive(spec, store)
        stored = store.get("r")
        assert stored.status == "done"
        for k in range(-1, len(stored.commit_log)):
            try:
                chart.fork("r", at=k, store=store, run_id=f"f{k}")
            except ForkError as exc:
                assert "is not a fork point" in str(exc), str(exc)
                assert "nearest valid commits are none" not in str(exc)
            except Exception as exc:  # a fork that re-runs a flaky stage may fail: it must be resumable
                assert getattr(exc, "checkpoint", None) is not None, repr(exc)
        assert len(store.list()) >= 1
    finally:
        store.close()


def test_a_failure_retried_then_paused_writes_a_checkpoint_that_loads() -> None:
    """The reproduction: a stage fails, the run is resumed, the next stage pauses — the pause's
    checkpoint names only the paused stage (it named the re-run one too, and did not load)."""
    charts = Charts()
    chart = charts.build([("flaky",), ("pause",)])
    with pytest.raises(ConnectionError, match=r"^s0 is down$") as caught:
        chart.run()
    resumed = chart.resume(caught.value.checkpoint)  # type: ignore[attr-defined]
    assert resumed.paused
    checkpoint = round_trip(resumed.checkpoint)
    assert [(f.stage_id, f.kind) for f in checkpoint.frames] == [("s1", "stage")]
    assert chart.resume(checkpoint, "yes").state["trail"] == ["start", "s0", "s1", "s1:yes"]


def test_a_stored_failure_retried_then_paused_keeps_the_store_readable(tmp_path: Path) -> None:
    """The reproduction on a store: after fail → resume_run → pause, get, list and the answer work."""
    store = SqliteStore(tmp_path / "runs.db")
    charts = Charts()
    chart = charts.build([("flaky",), ("pause",)])
    with pytest.raises(ConnectionError):
        chart.run(store=store, run_id="r1")
    assert chart.resume_run("r1").paused
    assert [(r.run_id, r.status) for r in store.list()] == [("r1", "paused")]
    assert store.get("r1").checkpoint is not None
    done = chart.resume_run("r1", "yes")
    assert done.state["trail"] == ["start", "s0", "s1", "s1:yes"]
    assert store.get("r1").status == "done"


def test_a_failure_retried_then_failing_later_is_resumable_again() -> None:
    """A re-run that goes on and fails at a later stage leaves a checkpoint at that stage
    (it was refused as 'in an unknown state')."""
    charts = Charts()
    chart = charts.build([("flaky",), ("flaky",)])
    with pytest.raises(ConnectionError, match=r"^s0 is down$") as first:
        chart.run()
    with pytest.raises(ConnectionError, match=r"^s1 is down$") as second:
        chart.resume(round_trip(first.value.checkpoint))  # type: ignore[attr-defined]
    checkpoint = round_trip(second.value.checkpoint)  # type: ignore[attr-defined]
    assert checkpoint.paused_stage_id == "s1"
    assert chart.resume(checkpoint).state["trail"] == ["start", "s0", "s1"]


def test_every_commit_of_a_recovered_stored_run_forks_or_names_the_nearest(tmp_path: Path) -> None:
    """The reproduction: a stored run that failed and was resumed forks at its commits (it was
    refused at every one as 'not written by this chart')."""
    store = SqliteStore(tmp_path / "runs.db")
    charts = Charts()
    chart = charts.build([("flaky",), ("plain",)])
    with pytest.raises(ConnectionError):
        chart.run(store=store, run_id="r1")
    chart.resume_run("r1")
    ids = [c.runtime_stage_id for c in store.get("r1").commit_log]
    assert ids == ["start#0", "s0#1", "s0#2", "s1#3"]
    with pytest.raises(ForkError, match=r"^commit 1 is not a fork point \(the stage failed there .*2$"):
        chart.fork("r1", at=1, store=store)
    forked = chart.fork("r1", at=2, store=store, run_id="f2")
    assert forked.state["trail"] == ["start", "s0", "s1"]
    assert chart.fork("r1", at=0, store=store, run_id="f0").state["trail"] == ["start", "s0", "s1"]


def test_a_pausable_stage_with_fork_children_runs_them_after_its_resume() -> None:
    """A pausable stage followed by ``add_list_of_function`` runs its children after the resume
    half, as it does after an ``execute`` that does not pause (they were skipped on resume)."""
    charts = Charts()
    chart = charts.build([("pause",), ("fork", ["plain", "plain"]), ("plain",)])
    paused = chart.run()
    done = chart.resume(round_trip(paused.checkpoint), "ok")
    assert [c.runtime_stage_id for c in done.commit_log] == ["s0#2", "s1c0#3", "s1c1#4", "s2#5"]
    before = ["start", "s0", "s0:ok"]  # a child reads the parent's trail, writes its own namespace
    assert done.state["runs"] == {"s1c0": {"trail": [*before, "s1c0"]}, "s1c1": {"trail": [*before, "s1c1"]}}


def test_a_subflow_mount_with_fork_children_runs_them() -> None:
    """``add_list_of_function`` after a subflow mount runs its children after the mount (they
    were skipped, while the fork walk of the record expected them)."""
    chart = Charts().build([("sub", [("plain",)]), ("fork", ["plain", "plain"]), ("plain",)])
    done = chart.run()
    assert [c.runtime_stage_id for c in done.commit_log] == ["start#0", "s0#1", "s1c0#4", "s1c1#5", "s2#6"]
    assert sorted(done.state["runs"]) == ["s1c0", "s1c1"]
