"""Hypothesis strategies shared by the test suites: JSON values and checkpoints.

Import them by module name (``from strategies import checkpoints``): ``tests/`` is on
``sys.path`` because ``tests/conftest.py`` lives there.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from flowchart.pause import CHECKPOINT_VERSION, Checkpoint, ResumeFrame

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()


def json_values(max_leaves: int = 20) -> st.SearchStrategy[Any]:
    """Any JSON value: scalars, lists and string-keyed objects, nested."""
    return st.recursive(
        json_scalars,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
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
