"""``summarize_value`` and ``js_json``: footprintjs's value summaries over JSON values.

Expected strings were printed by footprintjs 9.24.0's ``summarizeValue`` /
JavaScript's ``String`` and ``JSON.stringify`` for the same values.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flowchart._core.summary import js_json, js_number, js_object_keys, summarize_value


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("hello", '"hello"'),
        ("", '""'),
        (42, "42"),
        (-0.5, "-0.5"),
        (1.5, "1.5"),
        (1.0, "1"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (1e20, "100000000000000000000"),
        (1e-6, "0.000001"),
        (0.1 + 0.2, "0.30000000000000004"),
        (-0.0, "0"),
        (True, "true"),
        (False, "false"),
        (None, "null"),
        ([], "[]"),
        (["a"], "(1 item)"),
        ([1, 2, 3], "(3 items)"),
        ({}, "{}"),
        ({"a": 1, "b": 2}, "{a, b}"),
        ({k: 1 for k in "abcdef"}, "{a, b, c, d, ... (6 keys)}"),
    ],
)
def test_summaries_match_footprintjs(value: object, expected: str) -> None:
    """Each JSON value kind is summarised as footprintjs prints it."""
    assert summarize_value(value) == expected


def test_long_string_is_cut_to_max_len_minus_three_plus_dots() -> None:
    """A string past 80 characters keeps 77 of them and ends in ``...`` inside the quotes."""
    assert summarize_value("x" * 100) == '"' + "x" * 77 + '..."'


def test_string_of_exactly_max_len_is_kept_whole() -> None:
    """The cut happens only when the string is longer than ``max_len``."""
    assert summarize_value("y" * 80) == '"' + "y" * 80 + '"'
    assert summarize_value("z" * 81) == '"' + "z" * 77 + '..."'


def test_wide_object_preview_collapses_to_key_count() -> None:
    """When the key preview is longer than ``max_len`` only the key count is shown."""
    wide = {f"{name}_long_key_name": 1 for name in ("alpha", "beta", "gamma", "delta")}
    wide["eps"] = 5
    assert summarize_value(wide) == "{5 keys}"
    assert summarize_value({"alpha": 1, "beta": 2}, 12) == "{2 keys}"


def test_max_len_applies_to_strings() -> None:
    """A short ``max_len`` cuts strings sooner (``narrative(max_value_length=12)``)."""
    assert summarize_value("a fairly long message here", 12) == '"a fairly ..."'


def test_integer_like_keys_come_first_as_in_object_keys() -> None:
    """JavaScript lists integer-like keys first, ascending; the summary follows it."""
    assert js_object_keys({"b": 1, "2": 2, "1": 3, "01": 4}) == ["1", "2", "b", "01"]
    assert summarize_value({"b": 1, "10": 2, "9": 3}) == "{9, 10, b}"


def test_length_counts_utf16_units() -> None:
    """Lengths count UTF-16 code units, so an emoji counts twice as in JavaScript."""
    assert summarize_value("\U0001f600" * 40) == '"' + "\U0001f600" * 40 + '"'
    assert summarize_value("\U0001f600" * 41).startswith('"' + "\U0001f600" * 38)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (700, "700"),
        (0.43, "0.43"),
        (1.0, "1"),
        ("gold", '"gold"'),
        (["gold", "silver"], '["gold","silver"]'),
        ({"a": [1, 2.0], "b": None}, '{"a":[1,2],"b":null}'),
        (True, "true"),
        (math.inf, "null"),
        ("é\n", '"é\\n"'),
    ],
)
def test_js_json_matches_json_stringify(value: object, expected: str) -> None:
    """Thresholds print as ``JSON.stringify`` would: compact, JS numbers, no ASCII escaping."""
    assert js_json(value) == expected


def test_non_finite_numbers_print_as_javascript() -> None:
    """NaN and infinities print as JavaScript's ``String`` does."""
    assert js_number(math.nan) == "NaN"
    assert js_number(math.inf) == "Infinity"
    assert js_number(-math.inf) == "-Infinity"


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_js_number_round_trips(value: float) -> None:
    """Whatever the notation, the printed number parses back to the same float."""
    assert float(js_number(value)) == value


@given(st.integers(min_value=-(10**15), max_value=10**15))
def test_integral_floats_print_like_ints(value: int) -> None:
    """An integral float prints without ``.0``, exactly like the int (JS has one number type)."""
    assert js_number(float(value)) == str(value)
