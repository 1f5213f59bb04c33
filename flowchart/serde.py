"""The one owned cattrs converter for checkpoints (and, through it, trace files).

Laws: fail closed. Unknown keys, missing keys, wrong types (an int is not a str, a bool
is not an int), non-JSON values and unknown versions are refused with a
``CheckpointError`` whose message carries the field path (``$.subflow_states.sf``) and
what was expected. Loading never executes code: JSON in, plain values and this
package's own attrs classes out — no pickle, no eval, no import by name.
"""

from __future__ import annotations

import json
from typing import Any

import cattrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError

from .errors import CheckpointError
from .pause import CHECKPOINT_VERSION, Checkpoint, ResumeFrame
from .values import NotJsonSafe, copy_json


def _strict(kind: type) -> Any:
    def hook(value: Any, _type: Any) -> Any:
        if type(value) is not kind and not (kind is float and type(value) is int):
            raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    return hook


def _json_value(value: Any, _type: Any) -> Any:
    try:
        return copy_json(value)
    except NotJsonSafe as exc:
        raise TypeError(f"expected a JSON value, got {exc}") from None


def make_converter() -> cattrs.Converter:
    """Build the strict converter (exposed for the trace module, which extends it)."""
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for kind in (str, int, float, bool):
        converter.register_structure_hook(kind, _strict(kind))
    converter.register_structure_hook(Any, _json_value)  # type: ignore[arg-type]
    return converter


CONVERTER = make_converter()


def _messages(exc: BaseException, root: str = "$") -> list[str]:
    try:
        return list(cattrs.transform_error(exc, path=root))  # type: ignore[arg-type]
    except Exception:  # pragma: no cover - transform_error handles every cattrs error
        return [f"{exc} @ {root}"]


def load_error(exc: BaseException, what: str) -> CheckpointError:
    """Turn a cattrs failure into one ``CheckpointError`` that names every bad path."""
    if isinstance(exc, ForbiddenExtraKeysError):
        keys = ", ".join(sorted(exc.extra_fields))
        return CheckpointError(f"Invalid {what}: unknown key(s) {keys} @ $", path="$")
    messages = _messages(exc)
    first = messages[0] if messages else str(exc)
    path = first.rsplit(" @ ", 1)[-1] if " @ " in first else "$"
    return CheckpointError(f"Invalid {what}: {'; '.join(messages)}", path=path, detail=messages)


def dumps(data: Any) -> str:
    """Deterministic compact JSON (non-ASCII kept, no NaN)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def loads(text: str | bytes, *, what: str) -> Any:
    """Parse JSON or raise ``CheckpointError`` naming the position."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"Invalid {what}: not JSON ({exc})", path="$") from None


def unstructure_checkpoint(checkpoint: Checkpoint) -> dict[str, Any]:
    """Checkpoint → JSON-safe dict (state values are deep-copied)."""
    data: dict[str, Any] = CONVERTER.unstructure(checkpoint)
    return copy_json(data)  # type: ignore[no-any-return]


def structure_checkpoint(data: Any) -> Checkpoint:
    """JSON-safe dict → Checkpoint, validated field by field."""
    if not isinstance(data, dict):
        raise CheckpointError(f"Invalid checkpoint: expected an object, got {type(data).__name__} @ $", path="$")
    version = data.get("version")
    if type(version) is int and version != CHECKPOINT_VERSION:
        raise CheckpointError(
            f"Invalid checkpoint: unsupported version {version} @ $.version "
            f"(this library reads version {CHECKPOINT_VERSION})",
            path="$.version",
        )
    try:
        checkpoint = CONVERTER.structure(data, Checkpoint)
    except (ClassValidationError, ForbiddenExtraKeysError, TypeError, ValueError) as exc:
        raise load_error(exc, "checkpoint") from None
    _check_consistency(checkpoint)
    return checkpoint


def _check_consistency(cp: Checkpoint) -> None:
    if not cp.frames:
        raise CheckpointError("Invalid checkpoint: frames must not be empty @ $.frames", path="$.frames")
    if cp.frames[-1].stage_id != cp.paused_stage_id:
        raise CheckpointError(
            f"Invalid checkpoint: the last frame is '{cp.frames[-1].stage_id}' but paused_stage_id is "
            f"'{cp.paused_stage_id}' @ $.paused_stage_id",
            path="$.paused_stage_id",
        )
    for index, frame in enumerate(cp.frames):
        if frame.kind == "mount" and frame.stage_id not in cp.subflow_states:
            raise CheckpointError(
                f"Invalid checkpoint: no subflow state for mount '{frame.stage_id}' @ $.subflow_states",
                path="$.subflow_states",
            )
        if frame.kind not in ("stage", "mount", "fork"):
            raise CheckpointError(
                f"Invalid checkpoint: unknown frame kind {frame.kind!r} @ $.frames[{index}].kind",
                path=f"$.frames[{index}].kind",
            )
    if cp.execution_count < 0:
        raise CheckpointError(
            "Invalid checkpoint: execution_count must be >= 0 @ $.execution_count", path="$.execution_count"
        )


__all__ = ["CONVERTER", "ResumeFrame", "dumps", "load_error", "loads", "make_converter"]
