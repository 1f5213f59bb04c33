"""Traces the viewer tests open: the loan example, the support-agent demo (paused and
resumed), a trace full of hostile text, and a 10,000-commit run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flowchart import Checkpoint, Redaction, Trace, decide, flow_chart, narrative

HOSTILE = '</script><img src=x onerror="window.__pwned=1"><!-- \u2028\u2029 <b>bold</b> &amp;'


def loan_trace() -> Trace:
    """The loan example (``examples/loan.py``) run with a narrative: Route matches "Low risk"."""
    from examples import loan

    result = loan.chart.run({"applicant": loan.APPLICANT}, recorders=[narrative()])
    return result.trace()


def support_traces() -> tuple[Trace, Trace]:
    """The support-agent demo in-process: (the paused run's trace, the resumed run's trace)."""
    from examples import support_agent as demo
    from governance import check_in_approved

    agent = demo.build_agent()
    first = agent.run(demo.QUESTION)
    paused = agent.last_snapshot().result.trace()
    resumed_agent = demo.build_agent()
    decision = check_in_approved(
        request=first.check_in, by="alice", note="duplicate charge confirmed", at="2026-12-01T00:00:00Z"
    )
    resumed_agent.resume(Checkpoint.from_json(first.checkpoint.to_json()), decision)
    return paused, resumed_agent.last_snapshot().result.trace()


def stored_support_trace(folder: Path) -> Trace:
    """The demo's page: the support run stored in SQLite, paused, approved by alice, resumed, exported."""
    from examples import support_agent as demo
    from flowchart.store import SqliteStore
    from flowchart.store.export import record_trace
    from governance import check_in_approved

    first_agent = demo.build_agent(SqliteStore(folder / "runs.db"))
    first = first_agent.run(demo.QUESTION)
    resumed_agent = demo.build_agent(SqliteStore(folder / "runs.db"))
    decision = check_in_approved(
        request=first.check_in, by="alice", note="duplicate charge confirmed", at="2026-12-01T00:00:00Z"
    )
    resumed_agent.resume_run(first.run_id, decision)
    stored = SqliteStore(folder / "runs.db").get(first.run_id)
    return record_trace(stored, redaction=resumed_agent.redaction)


def hostile_trace() -> Trace:
    """Stage names, keys, values and a decision label that are all HTML / script text."""

    def write(scope: Any) -> None:
        scope.note = HOSTILE
        scope["<i>key</i>"] = {"html": "<a href='javascript:alert(1)'>x</a>"}
        scope.secret = "hunter2"

    def route(scope: Any) -> Any:
        return decide(scope, [{"when": {"note": {"eq": HOSTILE}}, "then": "yes", "label": "</script><b>"}], "no")

    chart = (
        flow_chart("<img src=x onerror=alert(1)>", write, "write")
        .add_decider_function("Route</script>", route, "route")
        .add_function_branch("yes", "Yes<!--", lambda s: None)
        .add_function_branch("no", "No", lambda s: None)
        .end()
        .build()
    )
    return chart.run({}, recorders=[narrative()], redaction=Redaction(keys={"secret"})).trace()


def big_trace(commits: int = 10_000) -> Trace:
    """Tick → Check → Again (loops to Tick) until the log holds ``commits`` commits (rounded up to whole rounds)."""
    rounds = -(-commits // 3)

    def tick(scope: Any) -> None:
        scope.n = getattr(scope, "n", 0) + 1
        scope.total = getattr(scope, "total", 0) + scope.n
        scope.tail = {"last": scope.n, "even": scope.n % 2 == 0}

    def check(scope: Any) -> Any:
        return decide(scope, [{"when": {"n": {"lt": rounds}}, "then": "again", "label": "not done"}], "stop")

    chart = (
        flow_chart("Tick", tick, "tick")
        .add_decider_function("Check", check, "check")
        .add_function_branch("again", "Again", lambda s: None, loop_to="tick")
        .add_function_branch("stop", "Stop", lambda s: None)
        .end()
        .build()
    )
    return chart.run({}, recorders=[narrative()], max_iterations=commits).trace()
