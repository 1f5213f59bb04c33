"""A trace's narrative as columns — one list per ``NarrativeEntry`` field — and read on demand.

Laws:
- Columns are the version-3 trace file's narrative (``{"type": [...], "depth": [...], ...}``,
  the fields in ``FIELDS`` order, one value per record in every column: each key written once,
  in record order, so the text is as deterministic as the records) and how a loaded trace
  keeps its narrative until someone reads it (``Trace.narrative`` builds the records then,
  once: ``built_on_read``).
- Validation happens when the columns are made, never when they are read: ``check_columns``
  refuses columns of unequal length, an unknown record type or a negative depth with a
  ``CheckpointError`` naming the field path, and the loaders take only columns whose values
  have their field's exact JSON type (``COLUMN_KINDS``). So a bad trace is refused by
  ``Trace.load``, and a record read later equals the record that was saved (``records``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import chain
from operator import attrgetter
from typing import Any, TypeVar

import attrs

from flowchart._core.errors import CheckpointError
from flowchart._core.narrative_entry import RECORD_TYPES, NarrativeEntry

T = TypeVar("T", bound=type)
FIELDS = tuple(f.name for f in attrs.fields(NarrativeEntry))
"""The record's fields, in order: the columns' keys in a trace file."""
_KINDS = {"type": (str,), "depth": (int,), "text": (str,), "step_number": (int, type(None))}
COLUMN_KINDS = tuple(frozenset(_KINDS.get(name, (str, type(None)))) for name in FIELDS)
"""The exact JSON types each column's values may have (as the converter reads a record)."""
_GETTERS = tuple(map(attrgetter, FIELDS))


@attrs.frozen(eq=False)
class NarrativeColumns:
    """A narrative as one list per ``FIELDS`` entry (``columns``, in that order), already checked.

    The lists are owned (freshly parsed, or gathered from records): never mutate them."""

    columns: tuple[list[Any], ...]
    _plain: list[bool] = attrs.field(factory=list, init=False, repr=False)  # ``plain()``'s answer, once known

    def __len__(self) -> int:
        return len(self.columns[0])

    def records(self) -> list[NarrativeEntry]:
        """The records, built now (equal to the records the columns were made from)."""
        return list(map(NarrativeEntry, *self.columns))

    def texts(self) -> list[str]:
        """Each record's text, in order, without building the records."""
        return list(self.columns[FIELDS.index("text")])

    def data(self) -> dict[str, list[Any]]:
        """The version-3 JSON form (the lists are shared: serialise it and let it go)."""
        return dict(zip(FIELDS, self.columns, strict=True))

    @classmethod
    def of_records(cls, records: Sequence[Any]) -> NarrativeColumns:
        """The columns of ``records`` (``NarrativeEntry`` or anything with its fields), gathered in C."""
        return cls(tuple(list(map(getter, records)) for getter in _GETTERS))

    @classmethod
    def of_lines(cls, lines: Sequence[str]) -> NarrativeColumns:
        """Bare lines (a version-1 narrative) as records of type ``line`` with no stage."""
        n = len(lines)
        return cls((["line"] * n, [0] * n, list(lines), *([None] * n for _ in FIELDS[3:])))

    @classmethod
    def joined(cls, parts: Sequence[NarrativeColumns]) -> NarrativeColumns:
        """One narrative of ``parts`` in order (a stored run's segments)."""
        if len(parts) == 1:
            return parts[0]
        return cls(tuple(list(chain.from_iterable(part.columns[n] for part in parts)) for n in range(len(FIELDS))))

    def plain(self) -> bool:
        """True when every value has its field's exact JSON type (so orjson writes what ``json`` does);
        shown once (a loaded narrative was shown so when it was read), then remembered."""
        if not self._plain:
            kinds = zip(self.columns, COLUMN_KINDS, strict=True)
            self._plain.append(all(set(map(type, column)) <= allowed for column, allowed in kinds))
        return self._plain[0]


def column_path(name: str, n: int) -> str:
    """The JSON path of value ``n`` of column ``name`` in a version-3 trace."""
    return f"$.narrative.{name}[{n}]"


def record_path(name: str, n: int) -> str:
    """The JSON path of field ``name`` of record ``n`` in a version-2 trace (a list of records)."""
    return f"$.narrative[{n}].{name}"


def check_columns(narrative: NarrativeColumns, path: Callable[[str, int], str] = column_path) -> None:
    """Refuse columns a narrative recorder could not have written (``CheckpointError``,
    ``Invalid trace: ... @ <path>``): unequal lengths, an unknown type, a negative depth.
    ``path`` places a value (``column_path``, or ``record_path`` for columns gathered from a
    version-2 file's records). The plainly right case is shown in C, without a loop per record."""
    columns = dict(zip(FIELDS, narrative.columns, strict=True))
    count = len(columns["type"])
    for name, column in columns.items():
        if len(column) != count:
            raise _refuse(
                f"narrative column '{name}' has {len(column)} values where 'type' has {count} "
                "(one value per record in every column)",
                f"$.narrative.{name}",
            )
    types, depths = columns["type"], columns["depth"]
    if not set(types) <= RECORD_TYPES:
        n = next(n for n, kind in enumerate(types) if kind not in RECORD_TYPES)
        known = ", ".join(sorted(RECORD_TYPES))
        raise _refuse(f"unknown narrative record type {types[n]!r} (one of {known})", path("type", n))
    if min(depths, default=0) < 0:
        n = next(n for n, depth in enumerate(depths) if depth < 0)
        raise _refuse("a narrative depth is 0 or more", path("depth", n))


def parsed_columns(raw: Any) -> NarrativeColumns | None:
    """A freshly parsed version-3 narrative (an object of columns, at nesting 2) as columns, or
    ``None`` when anything is not plainly right (exactly the ``FIELDS`` keys, each a list of
    values of its field's exact JSON types): then the converter names what is wrong. The
    values are leaves at nesting 3, within every limit of ``flowchart._core.untrusted``. The lists
    are shared, not copied (nobody else holds them); ``check_columns`` runs after, as for any trace."""
    if type(raw) is not dict or raw.keys() != _FIELD_SET:
        return None
    columns = tuple(raw[name] for name in FIELDS)
    if not set(map(type, columns)) <= {list}:
        return None
    found = NarrativeColumns(columns)
    return found if found.plain() else None


_FIELD_SET = frozenset(FIELDS)


def built_on_read(name: str, build: Callable[[NarrativeColumns], Any] = NarrativeColumns.records) -> Callable[[T], T]:
    """A class decorator, written above ``@attrs.define``/``@attrs.frozen``: slot ``name`` of the
    class builds its value on first read — a ``NarrativeColumns`` stored there (through
    ``stored_slot``) is turned into ``build(columns)`` (once, kept in the slot) when the
    attribute is read. A frozen class still refuses assignment (its ``__setattr__`` comes first)."""

    def decorate(cls: T) -> T:
        slot = cls.__dict__[name]

        def read(self: Any) -> Any:
            value = slot.__get__(self, cls)
            if type(value) is NarrativeColumns:
                value = build(value)
                slot.__set__(self, value)
            return value

        doc = f"``{cls.__name__}.{name}`` (built on first read)."
        type.__setattr__(cls, name, property(read, slot.__set__, doc=doc))
        type.__setattr__(cls, f"_{name}_slot", slot)
        return cls

    return decorate


def stored_slot(cls: type, name: str) -> Any:
    """The slot descriptor behind a ``built_on_read`` attribute: it reads and sets what is stored
    (columns included) without building anything (``slot.__get__(obj, cls)``)."""
    return cls.__dict__[f"_{name}_slot"]


def _refuse(message: str, path: str) -> CheckpointError:
    return CheckpointError(f"Invalid trace: {message} @ {path}", path=path)


__all__ = [
    "COLUMN_KINDS",
    "FIELDS",
    "NarrativeColumns",
    "built_on_read",
    "check_columns",
    "column_path",
    "parsed_columns",
    "record_path",
    "stored_slot",
]
