"""A redaction rule travels with the run it hides: its JSON form round-trips and refuses garbage."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flowchart import Redaction

NAMES = st.text(min_size=1, max_size=8)
PATTERNS = st.sampled_from([r"(?i)token", r"^api_", r"secret$", r"\d{4}"])
FLAGS = st.sampled_from([0, re.IGNORECASE, re.MULTILINE])


@given(
    keys=st.frozensets(NAMES, max_size=4),
    patterns=st.lists(st.tuples(PATTERNS, FLAGS).map(lambda p: re.compile(*p)), max_size=3),
    fields=st.dictionaries(NAMES, st.lists(NAMES, min_size=1, max_size=3), max_size=3),
)
def test_a_rule_survives_its_json_form(keys: frozenset[str], patterns: list[re.Pattern[str]], fields: dict) -> None:
    """Property: ``Redaction.from_dict(rule.to_dict()) == rule`` (keys, patterns with flags, fields)."""
    rule = Redaction(keys=keys, patterns=patterns, fields=fields)
    assert Redaction.from_dict(rule.to_dict()) == rule


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], r"^a redaction must be an object with exactly 'keys', 'patterns' and 'fields'$"),
        ({"keys": [], "patterns": []}, r"^a redaction must be an object with exactly"),
        ({"keys": "ssn", "patterns": [], "fields": {}}, r"^redaction.keys must be a list of strings$"),
        ({"keys": [], "patterns": ["x"], "fields": {}}, r"^redaction.patterns must be a list of \[source, flags\]"),
        ({"keys": [], "patterns": [], "fields": {"a": "b"}}, r"^redaction.fields must map keys to lists of dot paths$"),
        ({"keys": [], "patterns": [["(", 0]], "fields": {}}, r"^redaction.patterns holds an invalid pattern: "),
    ],
)
def test_a_rule_that_is_not_one_is_refused_naming_the_field(data: object, message: str) -> None:
    """``from_dict`` reads untrusted storage: anything but the exact shape is a ``ValueError``."""
    with pytest.raises(ValueError, match=message):
        Redaction.from_dict(data)


def test_scrub_state_hides_keys_fields_and_fork_children() -> None:
    """``scrub_state`` (what readers apply to a stored input) hides keys, fields, ``runs/<child>``
    keys and a map item's (``runs/<map>/<index>``)."""
    rule = Redaction(keys={"ssn"}, fields={"card": ["num"]})
    state = {
        "ssn": "1", "card": {"num": "4111", "exp": "12/30"}, "name": "Ann",
        "runs": {"a": {"ssn": "2"}, "map": {"0": {"ssn": "3", "card": {"num": "4"}}}},
    }  # fmt: skip
    assert rule.scrub_state(state) == {
        "ssn": "REDACTED", "card": {"num": "REDACTED", "exp": "12/30"}, "name": "Ann",
        "runs": {"a": {"ssn": "REDACTED"}, "map": {"0": {"ssn": "REDACTED", "card": {"num": "REDACTED"}}}},
    }  # fmt: skip
    assert state["card"]["num"] == "4111"
