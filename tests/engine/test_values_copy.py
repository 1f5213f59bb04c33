"""``copy_json`` after round three (a C copy of a container's entries, then one checking pass
that replaces only the containers): still a deep, plain, private copy, and a refusal still
names the first bad spot in iteration order."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flowchart._core.tracked import Owner, wrap
from flowchart.lowlevel import NotJsonSafe, copy_json

_SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


def _containers(value: Any) -> list[int]:
    """The ids of every dict and list inside ``value`` (``value`` included)."""
    if isinstance(value, dict):
        return [id(value), *(i for v in value.values() for i in _containers(v))]
    if isinstance(value, list):
        return [id(value), *(i for v in value for i in _containers(v))]
    return []


@given(_JSON)
def test_a_copy_is_equal_plain_and_shares_no_container(value: Any) -> None:
    """Equal to the original, of the same types, and no dict or list of it is the original's."""
    copied = copy_json(value)
    assert copied == value and repr(copied) == repr(value)
    assert not set(_containers(copied)) & set(_containers(value))


def test_tuples_and_tracked_views_come_out_as_plain_lists_and_dicts() -> None:
    """A tuple becomes a list; a scope's tracked dict/list views become plain dict/list."""
    view = wrap({"a": [1, {"b": (2, 3)}]}, Owner("k", lambda *_a: None, lambda *_a: None))
    copied = copy_json(view)
    assert type(copied) is dict and type(copied["a"]) is list and type(copied["a"][1]) is dict
    assert copied == {"a": [1, {"b": [2, 3]}]} and type(copied["a"][1]["b"]) is list


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"a": [1, {"b": math.nan}]}, ".a[1].b"),
        ({"ok": 1, "a": {"x": "fine", "y": object()}, "z": math.inf}, ".a.y"),
        ([1, "\ud800", object()], "[1]"),
        ({"é": 1, 2: 3}, ""),
    ],
)
def test_a_refusal_names_the_first_bad_spot(value: Any, where: str) -> None:
    """The first unsafe value in iteration order is the one named, with its path."""
    with pytest.raises(NotJsonSafe) as refused:
        copy_json(value)
    assert refused.value.where == where


def test_a_non_string_key_is_refused_by_name() -> None:
    """A dict key that is not a string is refused, showing the key."""
    with pytest.raises(NotJsonSafe, match=r"a non-string dict key 2 at \.a"):
        copy_json({"a": {2: 3}})
