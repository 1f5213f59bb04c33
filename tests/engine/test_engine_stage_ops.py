"""The batch recorder protocol: a stage's operations in one ``on_stage_ops`` at commit time."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from flowchart import Redaction, flow_chart, narrative
from flowchart.events import StageOpsEvent

sentences = importlib.import_module("flowchart.recorders.sentences")


class Batch:
    """Takes operations in batches; also has the per-operation hooks, which must stay silent."""

    def __init__(self) -> None:
        self.batches: list[tuple[str, list[Any]]] = []
        self.live: list[str] = []
        self.order: list[str] = []

    def on_stage_ops(self, event: StageOpsEvent) -> None:
        self.batches.append((event.ctx.runtime_stage_id, list(event.ops)))
        self.order.append("ops")

    def on_commit(self, _event: Any) -> None:
        self.order.append("commit")

    def on_read(self, event: Any) -> None:
        self.live.append(f"read {event.key}")

    def on_write(self, event: Any) -> None:
        self.live.append(f"write {event.key}")

    def on_emit(self, event: Any) -> None:
        self.live.append(f"emit {event.name}")


class Live(Batch):
    """The same recorder asking for the per-operation events too."""

    live_operations = True


def _chart() -> Any:
    def seed(scope: Any) -> None:
        scope.items = [1]
        scope.user = {"name": "Ada"}

    def work(scope: Any, ctx: Any) -> None:
        items = scope.items
        items.append(2)
        items.append(3)
        ctx.emit("worked", {"n": len(items)})
        _ = getattr(scope, "absent", None)
        del scope.user

    return flow_chart("Seed", seed, "seed").add_function("Work", work, "work").build()


def test_a_batch_recorder_gets_each_stage_s_operations_once_in_order_before_its_commit() -> None:
    """Reads, writes, misses and emits arrive in arrival order in one batch per stage, right
    before ``on_commit``; the per-operation hooks of a batch recorder are never called."""
    rec = Batch()
    _chart().run(recorders=[rec])
    assert rec.live == []
    assert rec.order == ["ops", "commit", "ops", "commit"]
    (seed_rid, seed_ops), (work_rid, work_ops) = rec.batches
    assert (seed_rid, work_rid) == ("seed#0", "work#1")
    assert seed_ops == [("write", "items", [1], "set", False), ("write", "user", {"name": "Ada"}, "set", False)]
    assert work_ops == [
        ("read", "items", [1], "", False),
        ("write", "items", [1, 2], "set", False),
        ("write", "items", [1, 2, 3], "set", False),
        ("emit", "worked", {"n": 3}, "", False),
        ("missing", "absent", None, "", False),
        ("write", "user", None, "delete", False),
    ]


def test_each_batched_value_is_as_it_was_when_the_operation_happened() -> None:
    """A list the stage goes on changing is logged as it was at each write (a snapshot, not
    the live view): the two appends above show ``[1, 2]`` then ``[1, 2, 3]``."""
    rec = Batch()
    _chart().run(recorders=[rec])
    writes = [value for kind, key, value, *_ in rec.batches[1][1] if kind == "write" and key == "items"]
    assert writes == [[1, 2], [1, 2, 3]]
    assert writes[0] is not writes[1]


def test_live_operations_asks_for_the_per_operation_events_as_well() -> None:
    """``live_operations = True`` binds ``on_read`` / ``on_write`` / ``on_emit`` again."""
    rec = Live()
    _chart().run(recorders=[rec])
    assert rec.live == [
        "write items",
        "write user",
        "read items",
        "write items",
        "write items",
        "emit worked",
        "read absent",
        "write user",
    ]
    assert len(rec.batches) == 2


def test_a_batch_carries_the_run_s_redaction() -> None:
    """A hidden key's value is the placeholder in the batch, flagged redacted, as on a WriteEvent."""
    rec = Batch()

    def seed(scope: Any) -> None:
        scope.secret = "s3cr3t"
        scope.plain = 1

    flow_chart("Seed", seed, "seed").build().run(recorders=[rec], redaction=Redaction(keys={"secret"}))
    ((_, ops),) = rec.batches
    assert ops[0][0:2] == ("write", "secret") and ops[0][2] != "s3cr3t" and ops[0][4] is True
    assert ops[1] == ("write", "plain", 1, "set", False)


def test_the_narrative_tells_its_batches_only_when_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the default options the narrative words no step while the run goes on: its step
    sentences are made when ``lines()`` is first asked for, then kept."""
    told: list[str] = []
    operation = sentences.operation

    def counting(*args: Any, **kwargs: Any) -> str:
        told.append(args[2])
        return operation(*args, **kwargs)

    monkeypatch.setattr(sentences, "operation", counting)
    rec = narrative()
    _chart().run(recorders=[rec])
    assert told == []
    lines = rec.lines()
    assert "Step 2: Write items = (2 items)" in lines
    count = len(told)
    assert count > 0 and rec.lines() == lines and len(told) == count


def test_a_narrative_with_its_own_formatter_tells_each_stage_at_its_headline() -> None:
    """A custom ``format_value`` sees every value at the stage's headline, so no value is kept
    past its stage (a lazy batch would hold them all until the narrative is read)."""
    seen: list[Any] = []

    def formatter(value: Any, max_len: int) -> str:
        seen.append(value)
        return "v"

    rec = narrative(format_value=formatter)
    _chart().run(recorders=[rec])
    assert [1, 2, 3] in seen
    assert "Step 2: Write items = v" in rec.lines()


def test_the_narrative_shows_a_list_grown_in_place_as_it_was_at_each_step() -> None:
    """Two appends in one stage are told as ``(2 items)`` then ``(3 items)`` (the batch keeps
    each step's summary, not the list as it ended)."""
    rec = narrative()
    _chart().run(recorders=[rec])
    assert (
        rec.entries_for_step("work#1")[1:4]
        == [e for e in rec.records() if e.runtime_stage_id == "work#1" and e.type == "step"][:3]
    )
    texts = [e.text for e in rec.entries_for_step("work#1")]
    assert texts[1:4] == [
        "Step 1: Read items = (1 item)",
        "Step 2: Write items = (2 items)",
        "Step 3: Write items = (3 items)",
    ]
