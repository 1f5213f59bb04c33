"""Replay footprintjs's own event streams through our narrative recorder.

Each fixture in ``tests/fixtures/footprintjs`` was produced by running a chart on the
published footprintjs 9.24.0 package with its ``narrative()`` recorder and a tracing
recorder attached side by side. Feeding the traced events (translated to
:mod:`flowchart.events`) into :class:`NarrativeRecorder` must give back the very
entries footprintjs wrote — the recorder alone, independent of our engine.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from flowchart import events as ev
from flowchart.recorders.narrative import NarrativeRecorder, narrative

FIXTURES = Path(__file__).parent / "fixtures" / "footprintjs"
CASES = sorted(p.stem for p in FIXTURES.glob("*.json"))


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def _snake_keys(value: Any) -> Any:
    """Evidence in snake_case, as our ``decide()``/``select()`` produce it."""
    if isinstance(value, dict):
        return {_snake(k): _snake_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_snake_keys(v) for v in value]
    return value


def _ctx(raw: dict[str, Any]) -> ev.TraversalContext:
    runtime_id = raw.get("runtimeStageId", "")
    stage_id = raw.get("stageId") or runtime_id.rpartition("#")[0]
    subflow_id = raw.get("subflowId")
    # footprintjs's subflowId is the full mount path ("writer/deep"); ours is the last
    # element of subflow_path, so build the path of full ids down to it
    path: tuple[str, ...] = ()
    if subflow_id:
        parts = subflow_id.split("/")
        path = tuple("/".join(parts[: i + 1]) for i in range(len(parts)))
    return ev.TraversalContext(
        run_id="run",
        stage_id=stage_id,
        runtime_stage_id=runtime_id,
        stage_name=raw.get("stageName", ""),
        subflow_path=path,
    )


def _event(raw: dict[str, Any]) -> tuple[str, Any]:
    """Translate one traced footprintjs hook call into (our hook name, our event)."""
    hook = raw["hook"]
    ctx = _ctx(raw["ctx"])
    built: Any
    if hook == "onRead":
        # the tracer leaves "value" out for a read of a missing key (JS undefined)
        missing = "value" not in raw
        built = ev.ReadEvent(ctx, raw["key"], raw.get("value"), raw.get("redacted", False), missing)
    elif hook == "onWrite":
        op = raw["operation"]
        built = ev.WriteEvent(ctx, raw["key"], raw.get("value"), op, raw.get("redacted", False))
    elif hook == "onEmit":
        built = ev.EmitEvent(ctx, raw["name"], raw.get("payload"))
    elif hook == "onStageExecuted":
        built = ev.StageExecutedEvent(ctx, raw["stageName"], raw.get("description"), raw["stageType"])
    elif hook == "onDecision":
        built = ev.DecisionEvent(
            ctx,
            raw["decider"],
            raw["chosen"],
            raw["chosen"],
            raw.get("rationale"),
            raw.get("description"),
            _snake_keys(raw.get("evidence")),
        )
    elif hook == "onFork":
        built = ev.ForkEvent(ctx, raw["parent"], tuple(raw["children"]))
    elif hook == "onSelected":
        selected = tuple(raw["selected"])
        evidence = _snake_keys(raw.get("evidence"))
        built = ev.SelectedEvent(ctx, raw["parent"], selected, selected, raw["total"], evidence)
    elif hook in ("onSubflowEntry", "onSubflowExit"):
        state = raw.get("mappedInput")
        built = ev.SubflowEvent(ctx, raw["name"], raw["subflowId"], raw.get("description"), state)
    elif hook == "onLoop":
        built = ev.LoopEvent(ctx, raw["target"], raw["target"], raw["iteration"], raw.get("description"))
    elif hook == "onBreak":
        built = ev.BreakEvent(ctx, raw["stageName"], raw.get("reason"), raw.get("propagatedFromSubflow"))
    elif hook == "onError":
        built = ev.ErrorEvent(ctx, raw["stageName"], raw["message"])
    elif hook == "onPause":
        built = ev.PauseEvent(ctx, raw["stageName"], raw["stageId"], raw.get("pauseData"))
    elif hook == "onResume":
        built = ev.ResumeEvent(ctx, raw["stageName"], raw["stageId"], raw["hasInput"])
    else:  # pragma: no cover - the tracer records only the hooks above
        raise AssertionError(hook)
    return _snake(hook), built


def _feed(rec: NarrativeRecorder, stream: list[dict[str, Any]]) -> None:
    for raw in stream:
        hook, event = _event(raw)
        getattr(rec, hook)(event)


def _recorder(doc: dict[str, Any]) -> NarrativeRecorder:
    options = {_snake(k): v for k, v in doc.get("narrative_options", {}).items()}
    return narrative(**options)


def _load(case: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{case}.json").read_text(encoding="utf-8"))


def _tuples(entries: list[list[Any]]) -> list[tuple[str, int, str]]:
    return [(t, d, x) for t, d, x in entries]


@pytest.mark.parametrize("case", CASES)
def test_replayed_run_matches_footprintjs(case: str) -> None:
    """footprintjs's event stream for a run gives footprintjs's narrative, byte for byte."""
    doc = _load(case)
    rec = _recorder(doc)
    _feed(rec, doc["events"])
    assert rec.entries() == _tuples(doc["entries"])


@pytest.mark.parametrize("case", [c for c in CASES if "events_same_executor_resume" in _load(c)])
def test_replayed_same_executor_resume_continues_the_narrative(case: str) -> None:
    """A resume on the same recorder appends to the paused run's narrative (Stage N goes on)."""
    doc = _load(case)
    rec = _recorder(doc)
    _feed(rec, doc["events"])
    _feed(rec, doc["events_same_executor_resume"])
    assert rec.entries() == _tuples(doc["entries_after_same_executor_resume"])


@pytest.mark.parametrize("case", [c for c in CASES if "events_fresh_executor_resume" in _load(c)])
def test_replayed_fresh_executor_resume_starts_a_new_narrative(case: str) -> None:
    """A resume on a fresh recorder starts over at ``Stage 1``, as footprintjs does."""
    doc = _load(case)
    rec = _recorder(doc)
    _feed(rec, doc["events_fresh_executor_resume"])
    assert rec.entries() == _tuples(doc["entries_fresh_executor_resume"])
