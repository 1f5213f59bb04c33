"""Tracked views: the dicts and lists a stage reads out of its scope.

Law: a committed value is never mutated in place. Reading a dict or list from the scope
gives a tracked view — a shallow copy whose container children are wrapped lazily, on
access — so ``scope.items.append(x)`` changes only the stage's private working copy and
tells the stage's transaction which top-level key changed and how:

- a dict key assigned (at any depth, with no list on the way) may commit as a ``merge``;
- items appended to the top-level list itself (``append``, ``extend``, ``+=``) may commit
  as an ``append`` of the new tail;
- any other list change, or a dict key deleted, makes the top-level key commit as a
  ``set`` of its whole new value (as footprintjs 9.24 does).

Values put INTO a view are validated and copied (``copy_json``) at the moment of writing.
``plain()`` turns a view back into plain dict/list values, sharing every child that was
never touched, so a commit costs what the stage touched, not the size of the value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, SupportsIndex

from flowchart._core.values import NotJsonSafe, copy_json

#: what kind of change a view made (a bit mask, so a stage's changes combine)
MERGE = 1  # a dict key assigned: the top-level key may commit as a merge patch
APPEND = 2  # items appended to the top-level list itself: it may commit as an append of the tail
SET = 4  # anything else: the top-level key commits as a set of its whole new value

#: ``touch(key, change, fields)``: tells the owning transaction that ``key`` changed;
#: ``fields`` are the keys of the top-level dict that a ``MERGE`` changed (else ``None``)
Touch = Callable[[str, int, "tuple[str, ...] | None"], None]


def _checked(owner: Owner, value: Any) -> Any:
    try:
        return copy_json(value)
    except NotJsonSafe as exc:
        owner.reject(exc)
        raise  # unreachable: reject raises


class Owner:
    """Links every view under one top-level key back to the transaction that owns it.

    ``field`` is the key of the top-level dict that the view sits under (``None`` for the
    top-level view itself), so a nested change can say which part of the value it changed.
    """

    __slots__ = ("_reject", "field", "key", "touch")

    def __init__(
        self, key: str, touch: Touch, reject: Callable[[str, NotJsonSafe], None], field: str | None = None
    ) -> None:
        self.key = key
        self.touch = touch
        self._reject = reject
        self.field = field

    def under(self, field: str) -> Owner:
        """The owner of the views below ``field`` of the top-level dict."""
        return Owner(self.key, self.touch, self._reject, field)

    def reject(self, exc: NotJsonSafe) -> None:
        """Refuse a non-JSON-safe value put into a view under this key (raises, naming the key)."""
        self._reject(self.key, exc)

    def changed(self, change: int, fields: tuple[str, ...] | None = None) -> None:
        """Record that a view under this key changed (``MERGE``, ``APPEND`` or ``SET``)."""
        self.touch(self.key, change, fields)


def wrap(value: Any, owner: Owner) -> Any:
    """Return a tracked view of ``value`` if it is a plain dict or list, else ``value``."""
    kind = type(value)
    if kind is dict:
        return TrackedDict(value, owner)
    if kind is list:
        return TrackedList(value, owner)
    return value


def plain(value: Any) -> Any:
    """Turn tracked views back into plain values, sharing every untouched child."""
    kind = type(value)
    if kind is TrackedDict:
        if not value._fc_wrapped:
            return dict(value)
        return {k: plain(v) for k, v in dict.items(value)}
    if kind is TrackedList:
        if not value._fc_wrapped:
            return list.copy(value)
        return [plain(v) for v in list.__iter__(value)]
    return value


class TrackedDict(dict):
    """A dict read from the scope: reads wrap children lazily, writes are tracked."""

    __slots__ = ("_fc_owner", "_fc_wrapped")

    def __init__(self, data: dict[str, Any], owner: Owner) -> None:
        dict.__init__(self, data)
        self._fc_owner = owner
        self._fc_wrapped = False

    # -- reads ---------------------------------------------------------------------
    def _child(self, key: str, value: Any) -> Any:
        kind = type(value)
        if kind is dict or kind is list:
            owner = self._fc_owner
            value = wrap(value, owner.under(key) if owner.field is None else owner)
            dict.__setitem__(self, key, value)
            self._fc_wrapped = True
        return value

    def __getitem__(self, key: str) -> Any:
        return self._child(key, dict.__getitem__(self, key))

    def get(self, key: str, default: Any = None) -> Any:
        if key in self:
            return self._child(key, dict.__getitem__(self, key))
        return default

    def _wrap_all(self) -> None:
        for key, value in list(dict.items(self)):
            self._child(key, value)

    def values(self):
        self._wrap_all()
        return dict.values(self)

    def items(self):
        self._wrap_all()
        return dict.items(self)

    # -- writes --------------------------------------------------------------------
    def __setitem__(self, key: str, value: Any) -> None:
        if type(key) is not str:
            self._fc_owner.reject(NotJsonSafe(f"a non-string dict key {key!r}", ""))
        owner = self._fc_owner
        dict.__setitem__(self, key, _checked(owner, value))
        owner.changed(MERGE, (key,) if owner.field is None else (owner.field,))

    def __delitem__(self, key: str) -> None:
        dict.__delitem__(self, key)
        self._fc_owner.changed(SET)

    def setdefault(self, key: str, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args: Any, **kwargs: Any) -> None:
        """Assign every key, then report ONE change (footprintjs's ``$update`` of a patch)."""
        patch = dict(*args, **kwargs)
        if not patch:
            return
        owner = self._fc_owner
        for key, value in patch.items():
            if type(key) is not str:
                owner.reject(NotJsonSafe(f"a non-string dict key {key!r}", ""))
            dict.__setitem__(self, key, _checked(owner, value))
        owner.changed(MERGE, tuple(patch) if owner.field is None else (owner.field,))

    def __ior__(self, other: Any) -> TrackedDict:  # type: ignore[misc]
        self.update(other)
        return self

    def pop(self, key: str, *default: Any) -> Any:
        if key in self:
            value = plain(dict.pop(self, key))
            self._fc_owner.changed(SET)
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self) -> tuple[str, Any]:
        key, value = dict.popitem(self)
        self._fc_owner.changed(SET)
        return key, plain(value)

    def clear(self) -> None:
        if self:
            dict.clear(self)
            self._fc_owner.changed(SET)

    def copy(self) -> dict[str, Any]:
        """A plain deep copy (changes to it are not tracked)."""
        return copy_json(self)

    def __copy__(self) -> dict[str, Any]:
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return self.copy()

    def __reduce__(self) -> Any:
        return (dict, (plain(self),))


class TrackedList(list):
    """A list read from the scope: reads wrap items lazily; appends to a top-level list are an
    ``append``, every other change a ``set``."""

    __slots__ = ("_fc_dirty", "_fc_owner", "_fc_root", "_fc_source", "_fc_wrapped")
    _fc_source: list[Any] | None
    _fc_dirty: bool

    def __init__(self, data: Iterable[Any], owner: Owner) -> None:
        list.__init__(self, data)
        self._fc_owner = owner
        self._fc_wrapped = False
        #: True for the top-level list of a key (appends to it may commit as an append)
        self._fc_root = False
        # set on a key's top-level view only, by the scope (``flowchart._core.lending``): ``_fc_source``,
        # the committed list it was made from (``None``: the stage's own write), whose very items
        # it holds until it changes; ``_fc_dirty``, True once it changed in any way

    # -- reads ---------------------------------------------------------------------
    def _child(self, index: int, value: Any) -> Any:
        kind = type(value)
        if kind is dict or kind is list:
            value = wrap(value, self._fc_owner)
            list.__setitem__(self, index, value)
            self._fc_wrapped = True
        return value

    def _wrap_all(self) -> None:
        for index, value in enumerate(list.__iter__(self)):
            self._child(index, value)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            self._wrap_all()
            return list.__getitem__(self, index)
        value = list.__getitem__(self, index)
        return self._child(index if index >= 0 else len(self) + index, value)

    def __iter__(self) -> Iterator[Any]:
        self._wrap_all()
        return list.__iter__(self)

    def __reversed__(self) -> Iterator[Any]:
        self._wrap_all()
        return list.__reversed__(self)

    # -- writes: appends to the top-level list are appends; every other change is a set --
    def _changed(self) -> None:
        self._fc_dirty = True
        self._fc_owner.changed(SET)

    def _appended(self) -> None:
        self._fc_dirty = True
        self._fc_owner.changed(APPEND if self._fc_root else SET)

    def _fc_tail(self, start: int) -> list[Any]:
        """The items from ``start`` on as plain values (what an ``append`` commits), without
        copying the items before ``start``."""
        items = list.__getitem__(self, slice(start, None))
        return [plain(v) for v in items] if self._fc_wrapped else items

    def append(self, value: Any) -> None:
        list.append(self, _checked(self._fc_owner, value))
        self._appended()

    def extend(self, values: Iterable[Any]) -> None:
        list.extend(self, [_checked(self._fc_owner, v) for v in values])
        self._appended()

    def __iadd__(self, values: Iterable[Any]) -> TrackedList:  # type: ignore[misc]
        self.extend(values)
        return self

    def __imul__(self, times: SupportsIndex) -> TrackedList:
        items = plain(self)
        list.clear(self)
        list.extend(self, copy_json(items * times))
        self._changed()
        return self

    def insert(self, index: SupportsIndex, value: Any) -> None:
        list.insert(self, index, _checked(self._fc_owner, value))
        self._changed()

    def __setitem__(self, index: Any, value: Any) -> None:
        if isinstance(index, slice):
            list.__setitem__(self, index, [_checked(self._fc_owner, v) for v in value])
        else:
            list.__setitem__(self, index, _checked(self._fc_owner, value))
        self._changed()

    def __delitem__(self, index: Any) -> None:
        list.__delitem__(self, index)
        self._changed()

    def pop(self, index: SupportsIndex = -1) -> Any:
        value = list.pop(self, index)
        self._changed()
        return plain(value)

    def remove(self, value: Any) -> None:
        list.remove(self, value)
        self._changed()

    def clear(self) -> None:
        if self:
            list.clear(self)
            self._changed()

    def sort(self, *, key: Any = None, reverse: bool = False) -> None:
        list.sort(self, key=key, reverse=reverse)
        self._changed()

    def reverse(self) -> None:
        list.reverse(self)
        self._changed()

    def copy(self) -> list[Any]:
        """A plain deep copy (changes to it are not tracked)."""
        return copy_json(self)

    def __copy__(self) -> list[Any]:
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> list[Any]:
        return self.copy()

    def __reduce__(self) -> Any:
        return (list, (plain(self),))


def append_owned(view: Any, value: Any) -> None:
    """``view.append(value)`` without the defensive copy, for a value its caller built and hands over.

    ``TrackedList.append`` checks and copies what it is given, because the caller may go on
    changing it. A library that builds the item for the append alone, from strings and numbers
    and values already committed (a committed value is never changed in place: ``values``),
    may hand it over as it is: the caller vouches that it is JSON-safe and that nothing inside
    it changes afterwards. The change is told and committed as an append, exactly as
    ``view.append(value)`` tells and commits it. (The agent appends two messages an iteration
    to its history: their copies were ≈ 3 µs of a W6 iteration.) Anything but a tracked list is
    appended to as it is.
    """
    if type(view) is TrackedList:
        list.append(view, value)
        view._appended()
    else:
        view.append(value)
