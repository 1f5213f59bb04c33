"""A list that grows by appends costs what each stage adds, not the list's length.

Laws:
- A committed list is never changed while anyone else may hold it. A commit's appended tail
  extends the state's list in place only when the reference count proves that the state's
  entry is its one holder (``owned.holders``); otherwise the list is copied with the tail,
  as ``apply_op`` does (the commit log, a recorder, a checkpoint, a result, a ``raw_read``
  caller or a view still hold the old list, which stays as it was).
- A stage reads a list through a tracked view, a list of its own. When a stage ends, each
  view it read that is still item for item the committed list (never changed, or changed
  only by appends that this commit applied to that list) goes on the traverser's shelf;
  the next stage that reads the key is lent that view instead of a new copy, but only if
  the view is still the committed list's (same source, same length, never changed since)
  and nothing but the shelf held it (a stage, tool or recorder that kept it gets a fresh
  copy next time, so what it kept never sees a later stage's appends). A list shorter than
  ``SHORT`` items is copied, never shelved: the copy costs less than the bookkeeping.

Only the top of the state takes part (transactions without a namespace): a fork child's
writes land in its own namespace and copy as before.
"""

from __future__ import annotations

from typing import Any

from flowchart._core.owned import holders
from flowchart._core.tracked import Owner, TrackedList

#: a list shorter than this is not shelved: copying it costs less than lending it
SHORT = 64


def lend(shelf: dict[str, TrackedList] | None, key: str, value: list[Any], owner: Owner) -> TrackedList:
    """A stage's view of the committed list ``value`` at ``key``, tracked by ``owner``: the view an
    earlier stage left on ``shelf`` when it may be lent (no copy), else a fresh one (a copy)."""
    view = shelf.pop(key, None) if shelf else None
    if (
        view is not None
        and view._fc_source is value  # made from (or kept in step with) this very list
        and not view._fc_dirty  # never changed since
        and not view._fc_wrapped  # no child replaced by a view of it
        and list.__len__(view) == len(value)
        and holders(view) == 0  # nobody kept it: this name is its one holder
    ):
        view._fc_owner = owner
        return view
    view = TrackedList(value, owner)
    view._fc_root = True
    view._fc_source = value
    view._fc_dirty = False
    return view


def append_tail(state: dict[str, Any], key: str, tail: list[Any], view: Any) -> None:
    """Apply a top-level ``append`` of ``tail`` to ``state[key]``: in place when the state's
    entry is the list's one holder, else on a copy. ``view`` (the stage's view of ``key``, or
    ``None``) made the tail when it was a view of this very list: it is then the new list's
    items again, and may be lent on."""
    synced = type(view) is TrackedList and view._fc_source is not None and view._fc_source is state.get(key)
    if synced:
        view._fc_source = None  # the view's own hold on the list is not someone else's
    current = state.get(key)
    if type(current) is list and holders(current) == 1:  # the state's entry alone
        current.extend(tail)
    else:
        current = state[key] = [*current, *tail] if isinstance(current, list) else list(tail)
    if synced:
        view._fc_source = current
        view._fc_dirty = False


def _after_its_stage(_key: str, _change: int, _fields: tuple[str, ...] | None = None) -> None:
    """A shelved view changed by someone who kept it past its stage: nothing to commit it to."""


def _refuse(_key: str, exc: Exception) -> None:
    raise exc


def shelve(shelf: Any, state: dict[str, Any], views: list[TrackedList], working: dict[str, Any]) -> None:
    """Put the ``views`` of committed lists a stage read on the shelf, each one that is still its
    key's view (in ``working``) and item for item the list the state now holds at that key. A
    shelved view belongs to no stage until it is lent (it holds no finished transaction)."""
    for view in views:
        key = view._fc_owner.key
        if (
            working.get(key) is view
            and view._fc_source is not None
            and view._fc_source is state.get(key)
            and not view._fc_dirty
            and not view._fc_wrapped
        ):
            view._fc_owner = Owner(key, _after_its_stage, _refuse)
            shelf[key] = view


__all__ = ["SHORT", "append_tail", "lend", "shelve"]
