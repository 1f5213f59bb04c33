"""Hypothesis strategies for the governance value types (one place, shared by every property)."""

from __future__ import annotations

from hypothesis import strategies as st

from governance import (
    CheckInDecision,
    CheckInEvidence,
    CheckInRequest,
    ContextFrame,
    ContextUnit,
    Driver,
    MiddlewareAsk,
    Trail,
    TrailCall,
)

text = st.text(max_size=40)
ids = st.text(min_size=1, max_size=20)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=12,
)
json_objects = st.dictionaries(text, json_values, max_size=5)
channels = st.sampled_from(["system", "task", "result"])
scores = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)

frames = st.builds(ContextFrame, id=ids, channel=channels, summary=text)
drivers = st.builds(Driver, id=ids, channel=channels, text=text, score=scores)
units = st.builds(ContextUnit, id=ids, channel=channels, text=text)
trails = st.builds(
    Trail,
    iteration=st.integers(min_value=0, max_value=50),
    tool_calls=st.lists(st.builds(TrailCall, name=ids, ok=st.booleans()), max_size=4),
    summary=text,
)
evidence = st.builds(
    CheckInEvidence,
    will_do=text,
    read=st.none() | st.lists(frames, max_size=4),
    drivers=st.none() | st.lists(drivers, max_size=4),
    trail=st.none() | trails,
)
check_in_requests = st.builds(
    CheckInRequest,
    id=ids,
    tool=ids,
    args=json_objects,
    intent=st.none() | text,
    evidence=evidence,
)
middleware_asks = st.builds(
    MiddlewareAsk,
    id=ids,
    question=ids,
    detail=json_values,
    middleware=ids,
    tool=ids,
    args=json_objects,
    tool_call_id=ids,
)
decisions = st.builds(
    CheckInDecision,
    request_id=ids,
    approved=st.booleans(),
    by=ids,
    note=st.none() | text,
    at=text,
    value=json_values,
)
