"""One run-id rule for every store, and for runs without one.

A run id is 1 to 200 printable characters with no space at either end. Every store
(memory, SQLite, PostgreSQL) refuses anything else by name with ``RunIdError`` before a
row is written — PostgreSQL would otherwise fail on a NUL with a raw ``DataError`` while
SQLite stored it — and a lookup of such an id is a plain "no run" that quotes the rule.
Without a store, ``chart.run(run_id=...)`` makes the id the run's own.
"""

from __future__ import annotations

from typing import Any

import pytest

from flowchart import flow_chart
from flowchart._core.errors import RunIdError
from flowchart.store import RunNotFoundError, RunStore

BAD_IDS = [
    ("a\x00b", r"^run id 'a\\x00b' has a control character \(\\x00 at 1\): a run id is 1 to 200 printable"),
    ("x\x1b]0;t\x07", r"^run id 'x\\x1b\]0;t\\x07' has a control character \(\\x1b at 1\)"),
    ("line\nbreak", r"^run id 'line\\nbreak' has a control character \(\\n at 4\)"),
    ("r" * 201, r"^run id 'r{60}\.\.\.' is 201 characters long: a run id is 1 to 200"),
    (" padded", r"^run id ' padded' starts or ends with a space"),
    ("\ud800", r"has a lone surrogate \(it is not text\)"),
]


def _seen(scope: Any, ctx: Any) -> None:
    scope.seen = ctx.run_id


CHART = flow_chart("Seen", _seen, "seen").build()


@pytest.mark.parametrize(("run_id", "message"), BAD_IDS, ids=["nul", "osc", "newline", "long", "space", "surrogate"])
def test_every_store_refuses_a_bad_id_before_writing(store: RunStore, run_id: str, message: str) -> None:
    """``create`` (directly, and through ``chart.run(store=...)``) raises ``RunIdError`` naming the id
    and the fault; the store holds no run afterwards."""
    with pytest.raises(RunIdError, match=message):
        store.create(run_id, kind="chart", chart_fingerprint="f", input={})
    with pytest.raises(RunIdError, match=message):
        CHART.run(store=store, run_id=run_id)
    assert store.list() == []


def test_looking_up_a_bad_id_is_not_found_with_the_rule(store: RunStore) -> None:
    """``get``, ``forks`` and ``answer`` of an id no store can hold are a ``RunNotFoundError`` quoting the
    rule, not a database error (PostgreSQL's raw ``DataError`` on a NUL)."""
    with pytest.raises(RunNotFoundError, match=r"^no run 'a\\x00b' in run store .*: run id 'a\\x00b' has a control"):
        store.get("a\x00b")
    with pytest.raises(RunNotFoundError, match=r"^no run 'a\\x00b' in run store "):
        store.forks("a\x00b")
    with pytest.raises(RunNotFoundError, match=r"^no run 'a\\x00b' in run store "):
        store.answer("a\x00b", "request-1", True)


def test_a_good_id_is_kept_exactly(store: RunStore) -> None:
    """Spaces inside, punctuation and non-ASCII letters are fine, up to 200 characters."""
    for run_id in ("order 42/ä", "r" * 200):
        assert CHART.run(store=store, run_id=run_id).run_id == run_id
        assert store.get(run_id).run_id == run_id


def test_without_a_store_the_given_id_is_the_runs_id() -> None:
    """``chart.run(run_id=...)`` with no store: ``result.run_id``, ``ctx.run_id`` and the trace carry it."""
    result = CHART.run(run_id="order-42")
    assert (result.run_id, result.state["seen"]) == ("order-42", "order-42")
    assert result.trace().run_id == "order-42"


def test_without_a_store_a_bad_id_is_refused_before_the_run() -> None:
    """The rule holds for runs that are not stored too: nothing runs."""
    ran: list[str] = []
    chart = flow_chart("Seen", lambda scope: ran.append("x"), "seen").build()
    with pytest.raises(RunIdError, match=r"^run id 'bad\\x1b\[2J' has a control character"):
        chart.run(run_id="bad\x1b[2J")
    assert ran == []


def test_a_conversation_id_follows_the_same_rule(store: RunStore) -> None:
    """A conversation id with a NUL is refused at ``create`` by name; listing it finds no turn (no
    database error)."""
    with pytest.raises(RunIdError, match=r"^conversation id 'c\\x00' has a control character \(\\x00 at 1\)"):
        store.create("r1", kind="chart", chart_fingerprint="f", input={}, conversation=("c\x00", 1))
    assert store.list() == [] and store.list(conversation="c\x00") == []
