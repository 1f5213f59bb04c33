"""The inbox's loaders on arbitrary input (hypothesis): a decision body, a policies mapping, a
users file and a receipt either load or are refused with the inbox's own error naming the
problem — never a KeyError, TypeError or anything rawer."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import json_values

from agent.serve import Policies, UsersFile, verify_receipt
from agent.serve.auth import UsersFileError
from agent.serve.decide import InboxRefusal, parse_body
from flowchart.store import MemoryStore

anything = json_values(12)
bodies = st.one_of(
    anything,
    st.fixed_dictionaries(
        {},
        optional={
            "request_id": anything,
            "approved": anything,
            "note": anything,
            "args": anything,
            "response": anything,
            "by": anything,
        },
    ),
)


@settings(max_examples=200, deadline=None)
@given(bodies)
def test_a_decision_body_loads_or_is_a_400(body: Any) -> None:
    """parse_body: the checked fields, or InboxRefusal(400) naming a field."""
    try:
        fields = parse_body(body)
    except InboxRefusal as refusal:
        assert refusal.status == 400 and ("field" in refusal.message or "body" in refusal.message)
        return
    assert isinstance(fields["request_id"], str) and fields["request_id"]
    assert fields["approved"] in (None, True, False)


@settings(max_examples=200, deadline=None)
@given(st.one_of(anything, st.fixed_dictionaries({}, optional={k: anything for k in Policies.__annotations__})))
def test_a_policies_mapping_loads_or_is_a_value_error(data: Any) -> None:
    """Policies.from_mapping: a Policies, or ValueError naming the key."""
    try:
        policies = Policies.from_mapping(data)
    except ValueError as exc:
        assert str(exc).startswith("policies: ")
        return
    assert isinstance(policies, Policies)


@settings(max_examples=100, deadline=None)
@given(anything)
def test_a_users_file_loads_or_is_refused_naming_it(data: Any) -> None:
    """Whatever JSON a users file holds, UsersFile reads it or raises UsersFileError naming the file."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "users.json"
        path.write_text(json.dumps(data))
        try:
            users = UsersFile(path)
        except UsersFileError as exc:
            assert str(exc).startswith(f"users file {path}") or str(exc).startswith("user name ")
            return
        assert users.check("nobody.secret") is None


@settings(max_examples=100, deadline=None)
@given(st.one_of(anything, st.fixed_dictionaries({"receipt": anything, "signature": anything})))
def test_a_receipt_of_any_shape_gets_a_list_of_problems(data: Any) -> None:
    """verify_receipt on anything: a list of problem strings (a non-receipt is one)."""
    problems = verify_receipt(data, MemoryStore(), b"k" * 32)
    assert problems and all(isinstance(p, str) for p in problems)
