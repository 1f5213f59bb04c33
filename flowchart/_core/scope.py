"""The transactional scope a stage runs over.

Laws:
- Reads see committed state plus the stage's own writes (read-your-writes).
- Writes are validated (JSON-safe, not a run-input key) and copied at write time; they
  stay in the stage's private working set until the stage ends. The one write of a run
  input's name allowed is an unchanged copy of it (``scope.amount = ctx.args["amount"]``,
  when the transaction knows the input as a ``Mapping``); any other write, delete or
  nested change of that name is footprintjs's ``Cannot write to readonly input key``
  (API.md's message, exactly: a changed value needs another state key).
- ``Transaction.commit()`` turns the NET change into ops and applies them to the state:
  a no-op write or a write-then-revert leaves no op; a dict changed only through
  nested key assignment commits a ``merge`` of the changed keys; anything else a
  ``set``; a removed key a ``delete``.
- Inside a fork or selector child the transaction has a namespace (``("runs", id)``):
  reads look there first and fall back to the root, writes land there.
- A read of a key that is not there is a read too (footprintjs's ``undefined``): the key
  joins the stage's reads and observers hear ``missing(key)``, then the Python error
  (``KeyError`` / ``AttributeError``) is raised. ``"k" in scope`` records ``k`` among
  the reads, and tells observers only when ``k`` is absent.
- With an operation log (``oplog``, set by the engine when a recorder takes operations in
  one batch) every read, miss and write is also appended there as it happens, with the
  value as it is at that moment: a live view is logged as ``plain()`` of it, a committed
  or freshly copied value as itself (neither is ever changed in place).
- Nothing here copies the whole state: reading a primitive is a dict lookup, reading a
  container makes a shallow tracked view, a commit touches only the changed keys.
- A list that grows by appends costs what each stage adds (``flowchart._core.lending``): its commit
  is the appended tail, applied in place when nobody else holds the list, and a top-level
  transaction is lent the view an earlier stage left when it is provably still the list's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

from flowchart._core.commits import Op, apply_op, make_op
from flowchart._core.errors import ReadonlyInputError, ScopeWriteError
from flowchart._core.lending import SHORT, append_tail, lend, shelve
from flowchart._core.tracked import APPEND, MERGE, SET, Owner, TrackedDict, TrackedList, plain, wrap
from flowchart._core.values import NotJsonSafe, copy_json, same_json

_MISSING: Any = object()
_DELETED: Any = object()
#: the kinds of value an operation log keeps by a copy or a snapshot (any other is kept as it is)
_CONTAINERS = frozenset({TrackedDict, TrackedList, dict, list})


class ScopeObserver(Protocol):
    """What a transaction tells while a stage runs (the engine's recorder bridge)."""

    def read(self, key: str, value: Any) -> None: ...

    def missing(self, key: str) -> None: ...

    def write(self, key: str, value: Any, operation: str) -> None: ...


def _dict_patch(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any] | None:
    """The nested merge patch that turns ``old`` into ``new`` (no top-level key was removed).

    ``None`` when a nested dict lost a key (``user["prefs"] = {"a": 1}`` over
    ``{"a": 1, "b": 2}``): a merge cannot remove keys, so the change must commit as a set.
    """
    patch: dict[str, Any] = {}
    for key, value in new.items():
        if key in old:
            before = old[key]
            if same_json(before, value):
                continue
            if type(before) is dict and type(value) is dict:
                if not before.keys() <= value.keys():
                    return None
                sub = _dict_patch(before, value)
                if sub is None:
                    return None
                patch[key] = sub
                continue
        patch[key] = value
    return patch


def _readonly(key: str) -> ReadonlyInputError:
    return ReadonlyInputError(
        f'Cannot write to readonly input key "{key}" — use ctx.args to read input values', key=key
    )


class Transaction:
    """One stage's view of the state: a working set over the committed state."""

    __slots__ = (
        "_lists",
        "_reads",
        "_touched",
        "_working",
        "hides",
        "namespace",
        "observer",
        "oplog",
        "readonly",
        "shelf",
        "snapshot",
        "state",
    )

    def __init__(
        self,
        state: dict[str, Any],
        # positional too: the engine makes one a stage, and a keyword call costs type() a third more
        namespace: tuple[str, ...] = (),
        # the run input's keys (a Mapping: the input itself, whose unchanged copies may be written)
        readonly: frozenset[str] | Mapping[str, Any] = frozenset(),
        observer: ScopeObserver | None = None,
    ) -> None:
        self.state = state
        self.namespace = namespace
        self.readonly = readonly
        self.observer = observer
        #: the stage's operation log (``StageOp`` tuples), or ``None`` when nobody takes it
        self.oplog: list[Any] | None = None
        #: how a live view is kept in the log, ``snapshot(key, view)`` (``None``: ``plain()``)
        self.snapshot: Any = None
        #: redaction test for recordings (set by the engine; ``None`` = nothing hidden)
        self.hides: Any = None
        #: the views of top-level lists that earlier stages left for the next reader (set by the
        #: engine for a transaction at the top of the state; ``None``: every read copies)
        self.shelf: dict[str, TrackedList] | None = None
        self._working: dict[str, Any] = {}
        # key -> bit mask of the changes made to it (tracked.MERGE | APPEND | SET)
        self._touched: dict[str, int] = {}
        self._reads: dict[str, None] = {}
        #: the views of committed lists this stage read (for the shelf), ``None`` until one is read
        self._lists: list[TrackedList] | None = None

    # -- committed lookups --------------------------------------------------------------
    def _namespace_dict(self) -> dict[str, Any] | None:
        node: Any = self.state
        for part in self.namespace:
            if type(node) is not dict or part not in node:
                return None
            node = node[part]
        return node if type(node) is dict else None

    def _committed(self, key: str) -> Any:
        if self.namespace:
            space = self._namespace_dict()
            if space is not None and key in space:
                return space[key]
        return self.state.get(key, _MISSING)

    def _own_committed(self, key: str) -> Any:
        """The committed value at the path this transaction writes to (no root fallback)."""
        if self.namespace:
            space = self._namespace_dict()
            return _MISSING if space is None else space.get(key, _MISSING)
        return self.state.get(key, _MISSING)

    def committed_values(self, keep: Any) -> dict[str, Any]:
        """The committed values (not copies) of the keys this transaction changed that
        ``keep(key)`` selects, as they are before it commits; a key not yet in the state is left out."""
        out: dict[str, Any] = {}
        for key in self._touched:
            if keep(key):
                old = self._own_committed(key)
                if old is not _MISSING:
                    out[key] = old
        return out

    # -- the stage-facing surface ---------------------------------------------------------
    def get(self, key: str) -> Any:
        """Read ``key`` (tracked); ``KeyError`` when it is not in the state."""
        value = raw = self._working.get(key, _MISSING)
        if value is _MISSING:
            value = raw = self._committed(key)
            if value is _MISSING:
                raise self._miss(key)
            kind = type(value)
            if kind is list:
                value = self._list_view(key, value)
            elif kind is dict:
                value = self._view(key, value)
        elif value is _DELETED:
            raise self._miss(key)
        elif type(value) is dict or type(value) is list:
            value = self._view(key, value)
        if key not in self._reads:
            self._reads[key] = None
        if self.observer is not None:
            self.observer.read(key, value)
        if self.oplog is not None:
            kind = type(raw)
            if kind not in _CONTAINERS:  # a str, a number, ...: kept as it is (one test)
                kept = raw
            elif kind is TrackedDict or kind is TrackedList:
                kept = plain(raw) if self.snapshot is None else self.snapshot(key, raw)
            elif self.snapshot is not None:
                kept = self.snapshot(key, raw)  # not a reference that would keep this version alive
            else:
                kept = raw
            self.oplog.append(("read", key, kept, "", False))
        return value

    def _miss(self, key: str) -> KeyError:
        """Record a read of the absent ``key`` and return the error to raise."""
        if key not in self._reads:
            self._reads[key] = None
        if self.observer is not None:
            self.observer.missing(key)
        if self.oplog is not None:
            self.oplog.append(("missing", key, None, "", False))
        return KeyError(key)

    def contains(self, key: str) -> bool:
        """``key in scope``: True when ``key`` holds a value; the check is recorded as a read."""
        if key not in self._reads:
            self._reads[key] = None
        found = self.has(key)
        if not found:
            if self.observer is not None:
                self.observer.missing(key)
            if self.oplog is not None:
                self.oplog.append(("missing", key, None, "", False))
        return found

    def _view(self, key: str, value: Any) -> Any:
        view = wrap(value, Owner(key, self._touch, self._reject))
        if type(view) is TrackedList:
            view._fc_root = True
            view._fc_source = None  # a view of the stage's own write, not of a committed list
        self._working[key] = view
        return view

    def _list_view(self, key: str, value: list[Any]) -> TrackedList:
        """The stage's view of the committed list ``value`` (lent from the shelf when it may be)."""
        shelf = None if self.namespace or len(value) < SHORT else self.shelf
        view = self._working[key] = lend(shelf, key, value, Owner(key, self._touch, self._reject))
        if shelf is not None:
            if self._lists is None:
                self._lists = []
            self._lists.append(view)
        return view

    def has(self, key: str) -> bool:
        """True when ``key`` holds a value (an untracked existence check)."""
        value = self._working.get(key, _MISSING)
        if value is _MISSING:
            return self._committed(key) is not _MISSING
        return value is not _DELETED

    def _input_copy(self, key: str, value: Any) -> bool:
        """True when ``value`` is an unchanged copy of run input ``key`` (``scope.amount =
        ctx.args["amount"]``): the one write of an input's name the state allows."""
        inputs = self.readonly
        return isinstance(inputs, Mapping) and same_json(inputs[key], value)

    def set(self, key: str, value: Any) -> None:
        """Stage a ``set`` of ``key``: validated and copied now, committed at stage end."""
        if key in self.readonly and not isinstance(self.readonly, Mapping):
            raise _readonly(key)
        try:
            copied = copy_json(value)  # ctx.args's tuples and frozen dicts become JSON lists and dicts
        except NotJsonSafe as exc:
            raise self._not_json_safe(key, exc) from None
        if key in self.readonly and not self._input_copy(key, copied):
            raise _readonly(key)
        self._working[key] = copied
        self._touched[key] = SET
        if self.observer is not None:
            self.observer.write(key, copied, "set")
        if self.oplog is not None:
            self.oplog.append(("write", key, copied, "set", False))

    def set_owned(self, key: str, value: Any) -> None:
        """``set`` without the copy: ``value`` is a fresh JSON-safe value its caller built for this
        write and hands over (``flowchart.lowlevel.set_owned``); told and committed as ``set``."""
        if key in self.readonly:
            raise _readonly(key)
        self._working[key] = value
        self._touched[key] = SET
        if self.observer is not None:
            self.observer.write(key, value, "set")
        if self.oplog is not None:
            self.oplog.append(("write", key, value, "set", False))

    def append_owned(self, key: str, value: Any) -> None:
        """Append ``value`` to the list at ``key`` without reading it: no read is recorded (the
        stage does not depend on what the list holds) and ``value`` is handed over uncopied
        (``flowchart.lowlevel.append_owned_to``); told and committed as the same ``append``.
        ``KeyError`` when ``key`` is not in the state, ``TypeError`` when it holds no list."""
        view = self._working.get(key, _MISSING)
        if view is _MISSING:
            view = self._committed(key)
            if type(view) is list:
                view = self._list_view(key, view)
        elif type(view) is list:  # the stage's own plain write of it
            view = self._view(key, view)
        if view is _MISSING or view is _DELETED:
            raise KeyError(key)
        if type(view) is not TrackedList:
            raise TypeError(f"cannot append to '{key}': it holds {type(view).__name__}, not a list")
        list.append(view, value)
        view._appended()

    def delete(self, key: str) -> None:
        """Stage the removal of ``key``; ``KeyError`` when it is not there."""
        if key in self.readonly:
            raise _readonly(key)
        if not self.has(key):
            raise KeyError(key)
        self._working[key] = _DELETED
        self._touched[key] = SET
        if self.observer is not None:
            self.observer.write(key, None, "delete")
        if self.oplog is not None:
            self.oplog.append(("write", key, None, "delete", False))

    def keys(self) -> list[str]:
        """Every key visible to the stage (committed, plus own writes, minus own deletes)."""
        seen = dict.fromkeys(self.state)
        if self.namespace:
            seen.update(dict.fromkeys(self._namespace_dict() or ()))
        seen.update(dict.fromkeys(self._working))
        return [k for k in seen if self.has(k)]

    def raw(self, key: str, default: Any = None) -> Any:
        """The committed-or-staged value WITHOUT tracking or copying: read-only by contract.

        For engine-internal hot paths (the agent's history) that only read. Mutating the
        returned value corrupts committed state.
        """
        value = self._working.get(key, _MISSING)
        if value is _MISSING:
            value = self._committed(key)
        if value is _MISSING or value is _DELETED:
            return default
        return value

    def peek(self, key: str, default: Any = None) -> Any:
        """A tracked read (recorded, observed) that returns the value WITHOUT a view or copy.

        For library hot paths that only read (the agent's history). The value is shared
        with committed state: mutating it corrupts the run's record.
        """
        value = self.raw(key, _MISSING)
        if value is _MISSING:
            return default
        if key not in self._reads:
            self._reads[key] = None
        if self.observer is not None:
            self.observer.read(key, value)
        if self.oplog is not None:
            kind = type(value)
            if kind is TrackedDict or kind is TrackedList or ((kind is dict or kind is list) and self.snapshot):
                kept = plain(value) if self.snapshot is None else self.snapshot(key, value)
            else:
                kept = value
            self.oplog.append(("read", key, kept, "", False))
        return value

    def note_reads(self, keys: Iterable[str]) -> None:
        """Record reads made outside the scope (a subflow's input mapper)."""
        for key in keys:
            self._reads.setdefault(key, None)

    @property
    def reads(self) -> tuple[str, ...]:
        """Keys read by the stage so far, in first-read order."""
        return tuple(self._reads)

    # -- tracking callbacks -----------------------------------------------------------------
    def _touch(self, key: str, change: int, fields: tuple[str, ...] | None = None) -> None:
        if key in self.readonly:
            raise _readonly(key)
        self._touched[key] = self._touched.get(key, 0) | change
        if self.observer is None and self.oplog is None:
            return
        value = self._working.get(key)
        if change != MERGE:
            operation = "set"
        else:
            operation = "update"
            if fields is not None and type(value) is TrackedDict:
                # a nested merge is told by what it changed: the touched fields only
                value = {field: dict.__getitem__(value, field) for field in fields if dict.__contains__(value, field)}
        if self.observer is not None:
            self.observer.write(key, value, operation)
        if self.oplog is not None:
            # the view lives on (the stage may change it again): log it as it is now
            # a live view is logged as it is now, never the view itself (``snapshot``, else a plain copy)
            if type(value) is dict:
                shown = {f: plain(v) for f, v in value.items()}
            else:
                shown = plain(value) if self.snapshot is None else self.snapshot(key, value)
            self.oplog.append(("write", key, shown, operation, False))

    def _reject(self, key: str, exc: NotJsonSafe) -> None:
        raise self._not_json_safe(key, exc)

    @staticmethod
    def _not_json_safe(key: str, exc: NotJsonSafe) -> ScopeWriteError:
        return ScopeWriteError(
            f"Cannot write '{key}': {exc.what}{' at ' + key + exc.where if exc.where else ''}. "
            "State values must be JSON-safe (dict with str keys, list, str, int, float, bool, None).",
            key=key,
        )

    # -- commit -----------------------------------------------------------------------------
    def commit(self) -> list[Op]:
        """Apply the net change to the state and return it as ops (empty when nothing changed)."""
        ops: list[Op] = []
        if not self._touched:
            return ops
        prefix = self.namespace
        state = self.state
        for key, change in self._touched.items():  # each op applied as made: every key is its own
            new = self._working[key]
            old = self._own_committed(key) if prefix else state.get(key, _MISSING)
            if new is _DELETED:
                if old is _MISSING:
                    continue
                op = make_op((*prefix, key), "delete")
            elif change == APPEND and type(new) is TrackedList and type(old) is list and new._fc_source is old:
                # appends only, to a view of this very list: the tail is the change (no whole-list diff)
                tail = new._fc_tail(len(old))
                if not tail:
                    continue
                op = make_op((*prefix, key), "append", tail)
                ops.append(op)
                if prefix:
                    apply_op(state, op)
                else:
                    old = None  # no stray name for the list: append_tail counts who holds it
                    append_tail(state, key, tail, new)
                continue
            else:
                kind = type(new)
                if kind is TrackedDict or kind is TrackedList:
                    new = plain(new)
                if old is not _MISSING and same_json(old, new):
                    continue
                if change == APPEND and type(old) is list and type(new) is list and len(new) > len(old):
                    # only appends to the list itself: the op carries the tail, not the whole list
                    op = make_op((*prefix, key), "append", new[len(old) :])
                else:
                    patch = (
                        _dict_patch(old, new) if change == MERGE and type(old) is dict and type(new) is dict else None
                    )
                    if patch is None:
                        op = make_op((*prefix, key), "set", new)
                        if not prefix:  # ``apply_op`` of a top-level set, inline (the commonest change)
                            ops.append(op)
                            state[key] = new
                            continue
                    else:
                        op = make_op((*prefix, key), "merge", patch)
            ops.append(op)
            apply_op(state, op)
        if self._lists is not None:
            shelve(self.shelf, state, self._lists, self._working)
            self._lists = None
        self._touched = {}
        self._working = {}
        return ops


class Scope:
    """A pure namespace over the run state: ``scope.count``, ``scope["odd-key"]``, ``"k" in scope``.

    Missing keys raise ``AttributeError`` / ``KeyError`` (so ``getattr(scope, "k", 0)``
    works). Dicts and lists read from it are tracked views: mutating them is a write.
    """

    __slots__ = ("_fc_txn",)

    def __init__(self, txn: Transaction) -> None:
        object.__setattr__(self, "_fc_txn", txn)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self._fc_txn.get(name)
        except KeyError:
            raise AttributeError(
                f"'{name}' is not in the state (use getattr(scope, '{name}', default) for optional keys)"
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self._fc_txn.set(name, value)

    def __delattr__(self, name: str) -> None:
        try:
            self._fc_txn.delete(name)
        except KeyError:
            raise AttributeError(f"cannot delete '{name}': it is not in the state") from None

    def __getitem__(self, key: str) -> Any:
        return self._fc_txn.get(key)

    def __setitem__(self, key: str, value: Any) -> None:
        self._fc_txn.set(key, value)

    def __delitem__(self, key: str) -> None:
        self._fc_txn.delete(key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._fc_txn.contains(key)

    def get(self, key: str, default: Any = None) -> Any:
        """``scope[key]``, or ``default`` when ``key`` is not in the state (the miss is recorded)."""
        try:
            return self._fc_txn.get(key)
        except KeyError:
            return default

    def __iter__(self) -> Iterator[str]:
        return iter(self._fc_txn.keys())

    def __dir__(self) -> list[str]:
        return self._fc_txn.keys()

    def __repr__(self) -> str:
        return f"<Scope keys={self._fc_txn.keys()!r}>"


_SET_TXN = Scope.__dict__["_fc_txn"].__set__
_new_object = object.__new__


def scope_of(txn: Transaction) -> Scope:
    """``Scope(txn)`` as the engine makes one per stage: its one slot filled directly."""
    scope = _new_object(Scope)
    _SET_TXN(scope, txn)
    return scope


def transaction_of(scope: Scope) -> Transaction:
    """The transaction behind a scope (for library code such as ``decide`` and the agent)."""
    return object.__getattribute__(scope, "_fc_txn")


def raw_read(scope: Scope, key: str, default: Any = None) -> Any:
    """Read ``key`` without tracking or copying; the value is shared and must not be mutated."""
    return transaction_of(scope).raw(key, default)


def append_owned_to(scope: Scope, key: str, value: Any) -> None:
    """``scope[key].append(value)`` without the read and without the copy: for a library that adds
    an item it built for the append alone (fresh dicts and lists of strings and numbers) to a log
    whose earlier items it does not look at. No read of ``key`` is recorded (the stage's commit does
    not list it among its reads, and the narrative tells no read of it); the append is told and
    committed as the same ``append``. ``KeyError`` when ``key`` is absent (``set_owned`` a
    one-item list first), ``TypeError`` when it holds no list. (The agent's ``tool_effects``.)
    """
    transaction_of(scope).append_owned(key, value)


def set_owned(scope: Scope, key: str, value: Any) -> None:
    """``scope[key] = value`` without the defensive copy, for a value its caller built for the write.

    A write checks and copies its value, because the stage may go on changing it. A library
    that builds the value for the write alone — fresh dicts and lists of strings, numbers and
    values already copied or committed — may hand it over as it is: the caller vouches that it
    is JSON-safe and that nothing inside it changes afterwards. It is told and committed as the
    same ``set``. (The agent's ``llm_latest_tool_calls``, once an iteration.)
    """
    transaction_of(scope).set_owned(key, value)


def peek(scope: Scope, key: str, default: Any = None) -> Any:
    """A recorded read of ``key`` that returns the shared committed value: never mutate it."""
    return transaction_of(scope).peek(key, default)


__all__ = [
    "Scope",
    "ScopeObserver",
    "TrackedDict",
    "TrackedList",
    "Transaction",
    "peek",
    "raw_read",
    "set_owned",
    "transaction_of",
]
