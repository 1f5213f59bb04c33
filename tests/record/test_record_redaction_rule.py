"""A redaction rule travels with the run it hides: its JSON form round-trips and refuses garbage."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flowchart import CheckpointError, Redaction

NAMES = st.text(min_size=1, max_size=8)
#: field paths: plain names (none shaped like a selector) and well-formed selectors before a field
PATHS = st.one_of(
    NAMES.filter(lambda s: not any(p.startswith("[") and p.endswith("]") for p in s.split("."))),
    st.sampled_from(["[role=user].content", "items.[kind=card].num", "[a=].b"]),
)
PATTERNS = st.sampled_from([r"(?i)token", r"^api_", r"secret$", r"\d{4}"])
FLAGS = st.sampled_from([0, re.IGNORECASE, re.MULTILINE])


@given(
    keys=st.frozensets(NAMES, max_size=4),
    patterns=st.lists(st.tuples(PATTERNS, FLAGS).map(lambda p: re.compile(*p)), max_size=3),
    fields=st.dictionaries(NAMES, st.lists(PATHS, min_size=1, max_size=3), max_size=3),
)
def test_a_rule_survives_its_json_form(keys: frozenset[str], patterns: list[re.Pattern[str]], fields: dict) -> None:
    """Property: ``Redaction.from_dict(rule.to_dict()) == rule`` (keys, patterns with flags, fields)."""
    rule = Redaction(keys=keys, patterns=patterns, fields=fields)
    assert Redaction.from_dict(rule.to_dict()) == rule


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], r"^Invalid redaction: expected an object, got a list @ \$$"),
        ({"keys": [], "patterns": []}, r"^Invalid redaction: required key missing @ \$\.fields$"),
        (
            {"keys": "ssn", "patterns": [], "fields": {}},
            r"^Invalid redaction: expected a list, got a string @ \$\.keys$",
        ),
        (
            {"keys": [], "patterns": ["x"], "fields": {}},
            r"^Invalid redaction: expected a \[source, flags\] pair, got a string @ \$\.patterns\[0\]$",
        ),
        (
            {"keys": [], "patterns": [], "fields": {"a": "b"}},
            r"^Invalid redaction: expected a list, got a string @ \$\.fields\.a$",
        ),
        (
            {"keys": [], "patterns": [["(", 0]], "fields": {}},
            r"^Invalid redaction: not a pattern \(.*\); write a Python regular expression @ \$\.patterns\[0\]$",
        ),
        (
            {"keys": [], "patterns": [], "fields": {"history": ["[role].content"]}},
            r"^Invalid redaction: redaction.fields\['history'\]: '\[role\]' in '\[role\].content' is not a selector",
        ),
        (
            {"keys": ["\ud800"], "patterns": [], "fields": {}},
            r"^Invalid redaction: a lone surrogate in a string \(valid JSON, but not Unicode text\) @ \$\.keys\[0\]$",
        ),
    ],
)
def test_a_rule_that_is_not_one_is_refused_naming_the_field(data: object, message: str) -> None:
    """``from_dict`` reads untrusted storage through the one codec: anything but the exact shape is
    a ``CheckpointError`` (a ``ValueError``) naming the path. (A lone surrogate in a key loaded
    before — the rule then failed to be written back.)"""
    with pytest.raises(CheckpointError, match=message):
        Redaction.from_dict(data)


def test_scrub_state_hides_keys_fields_and_fork_children() -> None:
    """``scrub_state`` (what readers apply to a stored input) hides keys, fields, ``runs/<child>``
    keys and a map item's (``runs/<map>/<index>``)."""
    rule = Redaction(keys={"ssn"}, fields={"card": ["num"]})
    state = {
        "ssn": "1",
        "card": {"num": "4111", "exp": "12/30"},
        "name": "Ann",
        "runs": {"a": {"ssn": "2"}, "map": {"0": {"ssn": "3", "card": {"num": "4"}}}},
    }
    assert rule.scrub_state(state) == {
        "ssn": "REDACTED",
        "card": {"num": "REDACTED", "exp": "12/30"},
        "name": "Ann",
        "runs": {"a": {"ssn": "REDACTED"}, "map": {"0": {"ssn": "REDACTED", "card": {"num": "REDACTED"}}}},
    }
    assert state["card"]["num"] == "4111"


def test_a_selector_hides_the_field_of_the_objects_it_selects_only() -> None:
    """``[name=value]`` picks the objects (of a list, at any depth) whose ``name`` is ``value``:
    their field is hidden, the others' is kept, and the value given is never changed."""
    rule = Redaction(fields={"history": ["[role=user].content"], "order": ["items.[kind=card].num"]})
    history = [
        {"role": "user", "content": "my card is 4111"},
        {"role": "assistant", "content": "ok"},
        {"role": "tool", "content": "done"},
        {"role": "user", "content": "thanks"},
        "not an object",
    ]
    order = {"items": [{"kind": "card", "num": "4111"}, {"kind": "gift", "num": "G-7"}, {"num": "9"}]}
    assert rule.scrub_state({"history": history, "order": order}) == {
        "history": [
            {"role": "user", "content": "REDACTED"},
            {"role": "assistant", "content": "ok"},
            {"role": "tool", "content": "done"},
            {"role": "user", "content": "REDACTED"},
            "not an object",
        ],
        "order": {"items": [{"kind": "card", "num": "REDACTED"}, {"kind": "gift", "num": "G-7"}, {"num": "9"}]},
    }
    shown, hidden = rule.shown("history", history)
    assert hidden and [m["content"] for m in shown[:4]] == ["[REDACTED]", "ok", "done", "[REDACTED]"]
    assert history[0]["content"] == "my card is 4111"
    assert rule.shown("history", [{"role": "assistant", "content": "ok"}]) == (
        [{"role": "assistant", "content": "ok"}],
        False,
    )


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("[role].content", r"'\[role\]' in '\[role\].content' is not a selector: write \[field=value\]"),
        ("[=user].content", r"'\[=user\]' in '\[=user\].content' is not a selector"),
        ("[role=user]", r"'\[role=user\]' ends with a selector: name the field it hides after it, e.g. "),
        ("items.[kind=card]", r"'items.\[kind=card\]' ends with a selector"),
    ],
)
def test_a_path_that_could_hide_nothing_is_refused_when_the_rule_is_made(path: str, message: str) -> None:
    """A malformed selector, or one with no field after it, would hide nothing and so leak
    what the user meant to hide: ``Redaction(...)`` refuses it, naming the key and the path."""
    with pytest.raises(ValueError, match=r"^redaction.fields\['history'\]: " + message):
        Redaction(fields={"history": [path]})


@given(
    keys=st.frozensets(NAMES, max_size=3),
    scopes=st.dictionaries(
        st.lists(st.text("abc_", min_size=1, max_size=4), min_size=1, max_size=3).map("/".join),
        st.builds(Redaction, keys=st.frozensets(NAMES, min_size=1, max_size=3)),
        max_size=3,
    ),
)
def test_a_rule_with_subflow_scopes_survives_its_json_form(keys: frozenset[str], scopes: dict) -> None:
    """Property: a rule with scopes (a mounted agent's own rule, per mount path) round-trips, and
    inside a scoped mount (and below it) the scope's keys are hidden as well as the run's."""
    rule = Redaction(keys=keys, scopes=scopes)
    assert Redaction.from_dict(rule.to_dict()) == rule
    for path, scope in scopes.items():
        assert rule.within(path).keys >= keys | scope.keys
        assert rule.within(f"{path}/deeper").keys >= scope.keys


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"keys": [], "patterns": [], "fields": {}, "scopes": []},
            r"^Invalid redaction: expected an object, got a list @ \$\.scopes$",
        ),
        (
            {"keys": [], "patterns": [], "fields": {}, "scopes": {"planner": "ssn"}},
            r'^Invalid redaction: expected an object, got a string @ \$\.scopes\["planner"\]$',
        ),
        (
            {
                "keys": [],
                "patterns": [],
                "fields": {},
                "scopes": {"planner#1": {"keys": [], "patterns": [], "fields": {}}},
            },
            r'^Invalid redaction: a scope is a subflow mount path, got \'planner#1\' @ \$\.scopes\["planner#1"\]$',
        ),
        (
            {
                "keys": [],
                "patterns": [],
                "fields": {},
                "scopes": {"a": {"keys": [], "patterns": [], "fields": {}, "scopes": {}}},
            },
            r"^Invalid redaction: a scope holds no scopes of its own",
        ),
        (
            {"keys": [], "patterns": [], "fields": {}, "scopes": {"a": {"keys": [1], "patterns": [], "fields": {}}}},
            r'^Invalid redaction: expected a string, got an integer @ \$\.scopes\["a"\]\.keys\[0\]$',
        ),
    ],
)
def test_a_scope_that_is_not_one_is_refused_naming_it(data: object, message: str) -> None:
    """A stored rule's scopes go through the one codec too: a scope that is not a rule, or not under
    a mount path, is a ``CheckpointError`` naming its path."""
    with pytest.raises(CheckpointError, match=message):
        Redaction.from_dict(data)
