"""The one module of hypothesis strategies: JSON values, checkpoints, chart specs and the
governance value types. (``engine/engine_strategies.py`` keeps only the random-chart plan
that its own builder interprets, drawn from the JSON values here.)

Import them by module name (``from strategies import checkpoints``, ``import strategies
as gs``): ``tests/`` is on ``sys.path`` because ``tests/conftest.py`` lives there.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from flowchart._core.narrative_entry import RECORD_TYPES, NarrativeEntry
from flowchart._core.pause import CHECKPOINT_VERSION, Checkpoint, ResumeFrame
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

INTS, FINITE, TEXT, KEYS = (
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
    st.text(max_size=8),
)


def json_scalars(
    *,
    ints: st.SearchStrategy[int] = INTS,
    floats: st.SearchStrategy[float] = FINITE,
    text: st.SearchStrategy[str] = TEXT,
) -> st.SearchStrategy[Any]:
    """The JSON scalars a run may store (no NaN or infinity; ``st.text`` draws no lone
    surrogate); narrow a domain to make values collide."""
    return st.none() | st.booleans() | ints | floats | text


def json_values(
    max_leaves: int = 20,
    *,
    scalars: st.SearchStrategy[Any] | None = None,
    keys: st.SearchStrategy[str] = KEYS,
    max_size: int = 4,
) -> st.SearchStrategy[Any]:
    """Any JSON value: scalars, lists and string-keyed objects, nested."""
    return st.recursive(
        json_scalars() if scalars is None else scalars,
        lambda inner: st.lists(inner, max_size=max_size) | st.dictionaries(keys, inner, max_size=max_size),
        max_leaves=max_leaves,
    )


def json_objects(max_leaves: int = 20) -> st.SearchStrategy[dict[str, Any]]:
    """A JSON object (what a state, a run input or a subflow state is)."""
    return st.dictionaries(st.text(max_size=8), json_values(max_leaves), max_size=5)


stage_ids = st.text(
    alphabet=st.characters(blacklist_characters="/#", blacklist_categories=("Cs",)), min_size=1, max_size=10
)
counts = st.dictionaries(st.text(max_size=12), st.integers(min_value=0, max_value=10**6), max_size=5)


@st.composite
def frame_paths(draw: st.DrawFn) -> list[ResumeFrame]:
    """A consistent resume path: mounts (each maybe behind a fork) down to one paused stage."""
    frames: list[ResumeFrame] = []
    prefix = ""
    depth = draw(st.integers(min_value=0, max_value=3))
    for level in range(depth + 1):
        optional_id = st.none() | stage_ids.map(lambda s, p=prefix: p + s)
        if draw(st.booleans()):
            frames.append(
                ResumeFrame(prefix + draw(stage_ids), "fork", draw(optional_id), draw(st.booleans()), draw(optional_id))
            )
        stage_id = prefix + draw(stage_ids)
        kind = "stage" if level == depth else "mount"
        namespace = draw(st.lists(st.text(max_size=6), max_size=3))
        frames.append(ResumeFrame(stage_id, kind, draw(optional_id), draw(st.booleans()), draw(optional_id), namespace))  # type: ignore[arg-type]
        prefix = stage_id + "/"
    return frames


@st.composite
def checkpoints(draw: st.DrawFn) -> Checkpoint:
    """A checkpoint whose repeated fields agree with its frames and whose counters agree with
    each other (what ``from_dict`` accepts)."""
    frames = draw(frame_paths())
    leaf = frames[-1]
    mounts = [f.stage_id for f in frames if f.kind == "mount"]
    visits = draw(counts)
    for frame in frames:  # the paused stage and every level it is inside ran
        visits[frame.stage_id] = visits.get(frame.stage_id, 0) + 1
    loops = {t: draw(st.integers(0, n)) for t, n in visits.items() if draw(st.booleans())}
    return Checkpoint(
        shared_state=draw(json_objects()),
        paused_stage_id=leaf.stage_id,
        subflow_path=mounts,
        pause_data=draw(json_values()),
        subflow_states={m: draw(json_objects(8)) for m in mounts},
        execution_count=sum(visits.values()) + draw(st.integers(min_value=0, max_value=10**9)),
        visit_counts=visits,
        invoker_stage_id=leaf.invoker_stage_id,
        continuation_stage_id=leaf.continuation_stage_id,
        paused_at=draw(st.floats(allow_nan=False, allow_infinity=False)),
        chart_fingerprint=draw(st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)),
        version=CHECKPOINT_VERSION,
        run_id=draw(st.text(max_size=32)),
        run_input=draw(json_objects(8)),
        subflow_args={m: draw(json_objects(4)) for m in mounts},
        loop_counts=loops,
        frames=frames,
        recorder_states=draw(st.dictionaries(st.text(max_size=8), json_objects(3), max_size=2)),
    )


@st.composite
def chart_specs(draw: st.DrawFn, depth: int = 2) -> dict[str, Any]:
    """A spec of ``chart.spec``'s shape: unique ids, every reference naming a stage of its level."""
    ids = draw(st.lists(st.text("abcdefgh-", min_size=1, max_size=6), min_size=1, max_size=4, unique=True))
    stages: list[dict[str, Any]] = []
    for stage_id in ids:
        kind = draw(st.sampled_from(["stage", "decider", "selector", "pausable"] + (["subflow"] if depth else [])))
        stage: dict[str, Any] = {"id": stage_id, "name": draw(st.text(max_size=8)), "kind": kind}
        if draw(st.booleans()):
            stage["description"] = draw(st.text(max_size=12))
        target = draw(st.none() | st.sampled_from(ids))
        if target is not None:
            stage["loop_to" if draw(st.booleans()) else "next"] = target
        if kind in ("decider", "selector"):
            stage["branches"] = draw(st.dictionaries(st.text("xyz", min_size=1, max_size=3), st.sampled_from(ids)))
        if kind == "subflow":
            stage.update(subflow=draw(chart_specs(depth - 1)), propagate_break=draw(st.booleans()))
            stage["array_merge"] = "concat"
        stages.append(stage)
    return {"root": ids[0], "name": draw(st.text(max_size=8)), "stages": stages}


# -- governance value types -----------------------------------------------------------

text = st.text(max_size=40)
ids = st.text(min_size=1, max_size=20)
# JSON the governance wire types carry: integers a JavaScript reader keeps exactly
wire_values = json_values(12, scalars=json_scalars(ints=st.integers(-(2**53), 2**53), text=text), keys=text)
wire_objects = st.dictionaries(text, wire_values, max_size=5)
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
    args=wire_objects,
    intent=st.none() | text,
    evidence=evidence,
)
middleware_asks = st.builds(
    MiddlewareAsk,
    id=ids,
    question=ids,
    detail=wire_values,
    middleware=ids,
    tool=ids,
    args=wire_objects,
    tool_call_id=ids,
)
decisions = st.builds(
    CheckInDecision,
    request_id=ids,
    approved=st.booleans(),
    by=ids,
    note=st.none() | text,
    at=text,
    value=wire_values,
)


def narrative_entries(
    names: st.SearchStrategy[str | None], *, max_depth: int = 1, steps: st.SearchStrategy[int] | None = None
) -> st.SearchStrategy[NarrativeEntry]:
    """Valid narrative records: a known type, a depth up to ``max_depth``, any text, every
    stage field drawn from ``names`` and a step number from ``steps`` (0-9 unless given; or none)."""
    return st.builds(
        NarrativeEntry,
        type=st.sampled_from(sorted(RECORD_TYPES)),
        depth=st.integers(0, max_depth),
        text=st.text(max_size=20),
        stage_name=names,
        stage_id=names,
        runtime_stage_id=names,
        subflow_id=names,
        key=names,
        step_number=st.none() | (st.integers(0, 9) if steps is None else steps),
    )
