"""``store.list(limit=..., after=cursor)`` pages through a store by cursor, on every store: each
run is listed once, in the listing's order, and nothing but the page is read."""

from __future__ import annotations

import pytest
from charts import approval_chart
from chat_agent import chat_agent

from flowchart.store import RunStore


def _pages(store: RunStore, **options: object) -> list[list[str]]:
    pages, after = [], None
    while True:
        page = store.list(limit=2, after=after, **options)  # type: ignore[arg-type]
        pages.append([r.run_id for r in page])
        after = page.next
        if after is None:
            return pages


def test_pages_list_every_run_once_newest_first(store: RunStore) -> None:
    """Five runs in pages of two: three pages, every run once, in ``list()``'s order; the last
    page says there is no next (``next is None``)."""
    for n in range(5):
        approval_chart().run({"amount": n}, store=store, run_id=f"r{n}")
    whole = [r.run_id for r in store.list()]
    pages = _pages(store)
    assert [run for page in pages for run in page] == whole
    assert [len(page) for page in pages] == [2, 2, 1]
    assert store.list(limit=10).next is None


def test_pages_filter_by_status_and_page_a_conversation(store: RunStore) -> None:
    """A status filter pages as well; a conversation pages by turn, newest first."""
    for n in range(3):
        approval_chart().run({"amount": n}, store=store, run_id=f"p{n}")
    agent = chat_agent(store)
    for text in ("one", "two", "three"):
        agent.run(text, conversation="c")
    assert sorted(run for page in _pages(store, status="paused") for run in page) == ["p0", "p1", "p2"]
    turns = [r.turn for page in _pages(store, conversation="c") for r in [*map(store.get, page)]]
    assert turns == [3, 2, 1]


def test_a_cursor_that_is_not_one_is_refused_saying_what_to_pass(store: RunStore) -> None:
    """A made-up cursor, or one of the other kind of listing, is a ``ValueError`` naming it."""
    approval_chart().run({"amount": 1}, store=store, run_id="r1")
    with pytest.raises(ValueError, match=r"^list\(after='nonsense'\): not a cursor of this listing — pass the"):
        store.list(after="nonsense")
    cursor = store.list(limit=1).next
    assert cursor is not None
    with pytest.raises(ValueError, match=r"not a cursor of this listing"):
        store.list(after=cursor, conversation="c")
