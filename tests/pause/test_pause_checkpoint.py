"""The checkpoint as data: its stable keys, JSON round trips, equality, and fail-closed loading.

Every field of ``Checkpoint`` and of ``ResumeFrame`` is broken in turn (missing, wrong
type, unknown key, wrong version, unknown frame kind) and must be refused with a
``CheckpointError`` whose message and ``path`` name the field.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import attrs
import pause_charts
import pytest
from hypothesis import given, settings
from strategies import checkpoints, json_values

from flowchart import Checkpoint, CheckpointError

KEYS = [
    "shared_state",
    "paused_stage_id",
    "subflow_path",
    "pause_data",
    "subflow_states",
    "execution_count",
    "visit_counts",
    "invoker_stage_id",
    "continuation_stage_id",
    "paused_at",
    "chart_fingerprint",
    "version",
    "run_id",
    "run_input",
    "subflow_args",
    "loop_counts",
    "frames",
    "recorder_states",
]
FRAME_KEYS = ["stage_id", "kind", "continuation_stage_id", "continuation_is_loop", "invoker_stage_id", "namespace"]


def paused(chart: str = "nested") -> Checkpoint:
    """A real checkpoint (by default two subflows deep, so every field has content)."""
    result = pause_charts.CHARTS[chart]([]).run({"who": "ada"})
    assert result.checkpoint is not None
    return result.checkpoint


def refused(data: Any) -> CheckpointError:
    """Load ``data`` and return the refusal."""
    with pytest.raises(CheckpointError) as info:
        Checkpoint.from_dict(data)
    return info.value


def test_to_dict_has_the_documented_keys_in_order() -> None:
    """The JSON keys are stable: exactly these, in this order (docs/pause-resume.md)."""
    data = paused().to_dict()
    assert list(data) == KEYS
    assert all(list(frame) == FRAME_KEYS for frame in data["frames"])
    assert data["version"] == 2


def test_to_json_is_compact_deterministic_json_of_to_dict() -> None:
    """``to_json`` is the compact JSON of ``to_dict`` and the same text on every call."""
    cp = paused()
    text = cp.to_json()
    assert json.loads(text) == cp.to_dict()
    assert text == cp.to_json() == Checkpoint.from_json(text).to_json()
    assert ", " not in text.replace('", "', "")  # compact separators


def test_round_trip_of_a_real_checkpoint_is_equal() -> None:
    """``from_json(to_json())`` and ``from_dict(to_dict())`` give an equal checkpoint."""
    cp = paused()
    assert Checkpoint.from_json(cp.to_json()) == cp
    assert Checkpoint.from_dict(cp.to_dict()) == cp
    assert isinstance(Checkpoint.from_json(cp.to_json().encode()).paused_at, float)


def test_equality_is_by_value() -> None:
    """Two checkpoints are equal when every field is; one changed field makes them differ."""
    cp = paused()
    twin = Checkpoint.from_dict(cp.to_dict())
    assert twin == cp and twin is not cp
    twin = attrs.evolve(twin, pause_data={"other": True})
    assert twin != cp


def test_to_dict_is_a_private_copy() -> None:
    """Mutating ``to_dict()``'s output does not change the checkpoint."""
    cp = paused()
    data = cp.to_dict()
    data["shared_state"]["seed"] = "changed"
    data["frames"][0]["namespace"].append("x")
    assert cp == Checkpoint.from_json(cp.to_json())
    assert cp.shared_state["seed"] == "s0"


@settings(max_examples=150, deadline=None)
@given(checkpoints())
def test_generated_checkpoints_round_trip_through_json(cp: Checkpoint) -> None:
    """Property: ``Checkpoint.from_json(cp.to_json()) == cp`` (and through ``to_dict``)."""
    assert Checkpoint.from_json(cp.to_json()) == cp
    assert Checkpoint.from_dict(cp.to_dict()) == cp
    assert Checkpoint.from_json(cp.to_json()).to_json() == cp.to_json()


@settings(max_examples=100, deadline=None)
@given(json_values())
def test_any_json_pause_data_round_trips(data: Any) -> None:
    """Property: whatever JSON value a stage pauses with comes back equal after a round trip."""
    cp = paused("linear")
    cp = attrs.evolve(cp, pause_data=data)
    assert Checkpoint.from_json(cp.to_json()).pause_data == data


# -- refusals: each field broken in turn ------------------------------------------------------------
WRONG = {
    "shared_state": ([], "expected an object, got a list"),
    "paused_stage_id": (5, "expected a string, got an integer"),
    "subflow_path": ({"outer": 1}, "expected a list, got an object"),
    "pause_data": ({1, 2}, "expected a JSON value: a set is not JSON-safe"),
    "subflow_states": ("outer", "expected an object, got a string"),
    "execution_count": ("6", "expected an integer, got a string"),
    "visit_counts": ([["seed", 1]], "expected an object, got a list"),
    "invoker_stage_id": (1, "expected a string, got an integer"),
    "continuation_stage_id": (["done"], "expected a string, got a list"),
    "paused_at": ("yesterday", "expected a number, got a string"),
    "chart_fingerprint": (None, "expected a string, got null"),
    "version": ("1", "expected an integer, got a string"),
    "run_id": (7, "expected a string, got an integer"),
    "run_input": ("ada", "expected an object, got a string"),
    "subflow_args": ([], "expected an object, got a list"),
    "loop_counts": (3, "expected an object, got an integer"),
    "frames": ({"0": {}}, "expected a list, got an object"),
    "recorder_states": ([], "expected an object, got a list"),
}
FRAME_WRONG = {
    "stage_id": (None, "expected a string, got null"),
    "kind": ("pause", "expected one of 'stage', 'mount', 'fork', got 'pause'"),
    "continuation_stage_id": (3, "expected a string, got an integer"),
    "continuation_is_loop": (1, "expected a boolean, got an integer"),
    "invoker_stage_id": (True, "expected a string, got a boolean"),
    "namespace": ("runs", "expected a list, got a string"),
}


def test_every_field_is_covered() -> None:
    """The tables below name every field of Checkpoint and ResumeFrame."""
    assert sorted(WRONG) == sorted(KEYS)
    assert sorted(FRAME_WRONG) == sorted(FRAME_KEYS)


@pytest.mark.parametrize("key", KEYS)
def test_missing_key_is_refused_naming_it(key: str) -> None:
    """A missing key is refused, also for fields that have a default in Python."""
    data = paused().to_dict()
    del data[key]
    error = refused(data)
    assert str(error) == f"Invalid checkpoint: required key missing @ $.{key}"
    assert error.path == f"$.{key}"


@pytest.mark.parametrize("key", KEYS)
def test_wrong_type_is_refused_naming_the_field_and_the_type(key: str) -> None:
    """A value of the wrong type is refused with what was expected and what came."""
    data = paused().to_dict()
    data[key], expected = WRONG[key]
    error = refused(data)
    assert str(error) == f"Invalid checkpoint: {expected} @ $.{key}"
    assert error.path == f"$.{key}"


@pytest.mark.parametrize("key", FRAME_KEYS)
def test_missing_frame_key_is_refused_naming_the_frame(key: str) -> None:
    """A frame with a key missing is refused with the frame's index in the path."""
    data = paused().to_dict()
    del data["frames"][1][key]
    assert str(refused(data)) == f"Invalid checkpoint: required key missing @ $.frames[1].{key}"


@pytest.mark.parametrize("key", FRAME_KEYS)
def test_wrong_frame_type_is_refused_naming_the_frame_field(key: str) -> None:
    """A frame field of the wrong type (or an unknown frame kind) is refused with its path."""
    data = paused().to_dict()
    data["frames"][0][key], expected = FRAME_WRONG[key]
    error = refused(data)
    assert str(error) == f"Invalid checkpoint: {expected} @ $.frames[0].{key}"
    assert error.path == f"$.frames[0].{key}"


def test_unknown_keys_are_refused_at_the_top_and_in_a_frame() -> None:
    """Unknown keys are not ignored: they are named, with where they are."""
    data = paused().to_dict()
    data["resume_here"] = True
    assert str(refused(data)) == "Invalid checkpoint: unknown key(s) resume_here @ $"
    data = paused().to_dict()
    data["frames"][2]["code"] = "print(1)"
    data["frames"][2]["z"] = 1
    assert str(refused(data)) == "Invalid checkpoint: unknown key(s) code, z @ $.frames[2]"


def test_an_unknown_version_is_refused() -> None:
    """Versions 1 and 2 are read; a newer or older version is refused before anything else."""
    for version in (0, 3):
        data = paused().to_dict()
        data["version"] = version
        error = refused(data)
        assert str(error) == (
            f"Invalid checkpoint: unsupported version {version} @ $.version (this library reads versions 1 and 2)"
        )
        assert error.path == "$.version"


def test_bad_values_deep_in_state_are_named_by_path() -> None:
    """A non-JSON value inside a state is named by its full path."""
    data = paused().to_dict()
    data["subflow_states"]["outer"]["history"] = [1, float("nan")]
    error = refused(data)
    assert str(error) == (
        "Invalid checkpoint: expected a JSON value: a non-finite float (nan) @ $.subflow_states.outer.history[1]"
    )
    data = paused().to_dict()
    data["visit_counts"]["outer/o1"] = True
    error = refused(data)
    assert str(error) == 'Invalid checkpoint: expected an integer, got a boolean @ $.visit_counts["outer/o1"]'


def test_several_problems_are_all_named() -> None:
    """Every bad field is reported, the first one as ``path``; ``detail`` lists them all."""
    data = paused().to_dict()
    data["execution_count"] = "x"
    data["paused_at"] = None
    error = refused(data)
    assert error.path == "$.execution_count"
    assert error.detail == [
        "expected an integer, got a string @ $.execution_count",
        "expected a number, got null @ $.paused_at",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", r"^Invalid checkpoint: not JSON \(Expecting value: line 1 column 1 \(char 0\)\)$"),
        ("[1, 2]", r"^Invalid checkpoint: expected an object, got a list @ \$$"),
        ("{}", r"^Invalid checkpoint: required key missing @ \$\.shared_state; "),
        ('{"version": 99}', r"^Invalid checkpoint: unsupported version 99 @ \$\.version"),
    ],
)
def test_from_json_refuses_what_is_not_a_checkpoint(text: str, message: str) -> None:
    """Text that is not JSON, or JSON that is not a checkpoint object, is refused."""
    with pytest.raises(CheckpointError, match=message):
        Checkpoint.from_json(text)


def mutate(data: dict[str, Any], change: Any) -> dict[str, Any]:
    """A deep copy of ``data`` with ``change(copy)`` applied."""
    out = copy.deepcopy(data)
    change(out)
    return out


CONSISTENCY = [
    (
        "frames empty",
        lambda d: d.update(frames=[]),
        "$.frames",
        "frames must not be empty (the last frame is the paused stage)",
    ),
    (
        "leaf not a stage",
        lambda d: d["frames"][-1].update(kind="mount"),
        "$.frames[2].kind",
        "the last frame must be of kind 'stage', got 'mount'",
    ),
    (
        "stage above the leaf",
        lambda d: d["frames"][0].update(kind="stage"),
        "$.frames[0].kind",
        "only the last frame may be of kind 'stage'",
    ),
    (
        "paused stage disagrees",
        lambda d: d.update(paused_stage_id="outer/mid/other"),
        "$.paused_stage_id",
        "the last frame is 'outer/mid/ask' but paused_stage_id is 'outer/mid/other'",
    ),
    (
        "subflow path disagrees",
        lambda d: d.update(subflow_path=["outer"]),
        "$.subflow_path",
        "subflow_path must list the mount frames ['outer', 'outer/mid'], got ['outer']",
    ),
    (
        "invoker disagrees",
        lambda d: d.update(invoker_stage_id="seed"),
        "$.invoker_stage_id",
        "invoker_stage_id must equal the last frame's (None)",
    ),
    (
        "continuation disagrees",
        lambda d: d.update(continuation_stage_id="done"),
        "$.continuation_stage_id",
        "continuation_stage_id must equal the last frame's (None)",
    ),
    (
        "subflow state missing",
        lambda d: d["subflow_states"].pop("outer/mid"),
        "$.subflow_states",
        "no subflow_state for mount 'outer/mid'",
    ),
    (
        "subflow args extra",
        lambda d: d["subflow_args"].update(elsewhere={}),
        "$.subflow_args.elsewhere",
        "'elsewhere' is not a subflow the pause is inside (['outer', 'outer/mid'])",
    ),
    ("negative counter", lambda d: d.update(execution_count=-1), "$.execution_count", "execution_count must be >= 0"),
    (
        "negative visit count",
        lambda d: d["visit_counts"].update(seed=-2),
        "$.visit_counts.seed",
        "a count must be >= 0",
    ),
]


@pytest.mark.parametrize(("case", "change", "path", "message"), CONSISTENCY, ids=[c[0] for c in CONSISTENCY])
def test_fields_that_repeat_the_frames_must_agree(case: str, change: Any, path: str, message: str) -> None:
    """Redundant fields (paused stage, subflow path, invoker, continuation, subflow states)
    must agree with the frames, and counts are not negative."""
    error = refused(mutate(paused().to_dict(), change))
    assert str(error) == f"Invalid checkpoint: {message} @ {path}"
    assert error.path == path


def test_loading_never_executes_anything() -> None:
    """Strings that look like code or import paths stay strings; nothing is imported or run."""
    data = paused().to_dict()
    data["pause_data"] = {"__class__": "os.system", "py/object": "subprocess.Popen", "!!python/object": "x"}
    cp = Checkpoint.from_dict(data)
    assert cp.pause_data == data["pause_data"]
    assert re.fullmatch(r"[0-9a-f]{64}", cp.chart_fingerprint)


def test_paused_at_is_a_float_even_when_stored_as_an_integer() -> None:
    """``paused_at`` is seconds as a float; an integer (``1700000000``) loads as a float."""
    data = paused().to_dict()
    assert isinstance(data["paused_at"], float)
    data["paused_at"] = 1700000000
    cp = Checkpoint.from_dict(data)
    assert type(cp.paused_at) is float and cp.paused_at == 1.7e9
    data["paused_at"] = True
    assert str(refused(data)) == "Invalid checkpoint: expected a number, got a boolean @ $.paused_at"
