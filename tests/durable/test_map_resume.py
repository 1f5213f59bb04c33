"""A failed map resumes where it failed: finished children are kept, only the others run.

The children call a model (the scripted provider, counted); item 6 of 8 fails the first time.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent.providers import LLMRequest, mock
from flowchart import Checkpoint, FlowChart, MapError, flow_chart, replay

MODEL = mock("a short summary")  # the same answer for every document: the state does not depend on call order
BROKEN = {6}


def seed(scope: Any) -> None:
    scope.docs = [f"doc {i}" for i in range(8)]


def summarise(scope: Any, ctx: Any) -> str:
    """One model call per item; the items in ``BROKEN`` fail (before calling the model)."""
    if ctx.index in BROKEN:
        raise ConnectionError(f"item {ctx.index}: the document store is down")
    reply = MODEL.complete(LLMRequest(None, [{"role": "user", "content": ctx.item}], [], "m"))
    scope.summary = reply.content
    return f"{ctx.item}: {len(reply.content)}"


def chart(concurrency: int = 8) -> FlowChart:
    return (
        flow_chart("Seed", seed, "seed")
        .add_map("Summarise", summarise, "summarise", items=lambda s: s.docs, into="summaries", concurrency=concurrency)
        .add_function("Done", lambda s: None, "done")
        .build()
    )


def failed_checkpoint(made: FlowChart) -> Checkpoint:
    with pytest.raises(MapError, match="failed at item 6") as caught:
        made.run()
    checkpoint = caught.value.checkpoint  # type: ignore[attr-defined]
    assert isinstance(checkpoint, Checkpoint)
    return Checkpoint.from_json(checkpoint.to_json())  # through JSON, as another process reads it


@pytest.mark.parametrize("concurrency", [1, 8])
def test_resume_runs_only_the_child_that_failed(concurrency: int) -> None:
    """7 of 8 children called the model before item 6 failed; resuming makes exactly 1 model
    call, and ``into`` is what an uninterrupted run writes, in item order."""
    MODEL.requests.clear()
    BROKEN.clear()
    BROKEN.add(6)
    checkpoint = failed_checkpoint(chart(concurrency))
    assert len(MODEL.requests) == 7
    assert sorted(checkpoint.recovery.finished) == ["0", "1", "2", "3", "4", "5", "7"]  # type: ignore[union-attr]
    BROKEN.clear()
    MODEL.requests.clear()
    resumed = chart(concurrency).resume(checkpoint)
    assert len(MODEL.requests) == 1 and MODEL.requests[0].messages[0]["content"] == "doc 6"
    MODEL.requests.clear()
    whole = chart(concurrency).run()
    assert resumed.state == whole.state  # every child's namespace and ``into``, as uninterrupted
    assert [s.split(":")[0] for s in resumed.state["summaries"]] == [f"doc {i}" for i in range(8)]


def test_a_stored_failed_map_retried_runs_only_the_failed_child(tmp_path: Any) -> None:
    """The same through a run store: ``resume_run`` of the failed run (what ``agent runs retry`` and
    a Celery retry do) makes 1 model call, and the stored record folds to the uninterrupted state."""
    from flowchart.store import SqliteStore

    store = SqliteStore(tmp_path / "runs.db")
    MODEL.requests.clear()
    BROKEN.clear()
    BROKEN.add(6)
    with pytest.raises(MapError):
        chart().run(store=store, run_id="map-run")
    BROKEN.clear()
    MODEL.requests.clear()
    chart().resume_run("map-run", store=store)
    assert len(MODEL.requests) == 1
    record = store.get("map-run")
    assert record.status == "done"
    MODEL.requests.clear()
    whole = chart().run()
    assert replay(record.commit_log) == whole.state


def test_a_resume_that_fails_again_keeps_what_finished_before() -> None:
    """Items 2 and 6 fail; after a resume where 2 succeeds and 6 fails again, the next resume
    runs item 6 alone: no finished child is ever run twice."""
    MODEL.requests.clear()
    BROKEN.clear()
    BROKEN.update({2, 6})
    with pytest.raises(MapError, match="failed at item 2") as caught:
        chart(1).run()
    assert len(MODEL.requests) == 6
    BROKEN.discard(2)
    MODEL.requests.clear()
    with pytest.raises(MapError, match="failed at item 6") as again:
        chart(1).resume(caught.value.checkpoint)  # type: ignore[attr-defined]
    assert [r.messages[0]["content"] for r in MODEL.requests] == ["doc 2"]
    BROKEN.clear()
    MODEL.requests.clear()
    resumed = chart(1).resume(again.value.checkpoint)  # type: ignore[attr-defined]
    assert [r.messages[0]["content"] for r in MODEL.requests] == ["doc 6"]
    assert len(resumed.state["summaries"]) == 8


def test_a_bad_finished_index_in_a_checkpoint_is_refused() -> None:
    """``recovery.finished`` is untrusted: a key that is not an item index is refused, naming it."""
    BROKEN.clear()
    BROKEN.add(6)
    checkpoint = failed_checkpoint(chart(1))
    text = checkpoint.to_json().replace('"finished":{"0"', '"finished":{"x0"')
    from flowchart import CheckpointError

    with pytest.raises(CheckpointError, match=r"finished map child's key must be its item index, got 'x0'"):
        Checkpoint.from_json(text)
