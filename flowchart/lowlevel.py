"""Power-user names: what libraries built on flowchart (the agent, a custom store or stage
kit) need beyond the façade, under one documented namespace (as trio's ``lowlevel``).

Law: outside code imports flowchart from the façade (``flowchart``), this module, and the
subpackages docs/api.md names; every other module is internal and may change without
notice. The names here are stable: a change to one is a change to the public API.
"""

from __future__ import annotations

from .commits import apply_commit
from .context import emit_owned, freeze, thaw
from .coroutines import drive, run_coroutine
from .engine.entry import _run_input as validated_input
from .engine.entry import check_checkpoint
from .fingerprint import canonical_json, json_digest, spec_fingerprint
from .forking import fork_chart
from .options import RunOptions
from .scope import peek, raw_read, set_owned
from .serde import json_type
from .tracked import append_owned
from .values import NotJsonSafe, copy_json, escape_surrogates, is_json_safe, same_json, slot_setters

__all__ = [
    "NotJsonSafe",
    "RunOptions",
    "append_owned",
    "apply_commit",
    "canonical_json",
    "check_checkpoint",
    "copy_json",
    "drive",
    "emit_owned",
    "escape_surrogates",
    "fork_chart",
    "freeze",
    "is_json_safe",
    "json_digest",
    "json_type",
    "peek",
    "raw_read",
    "run_coroutine",
    "same_json",
    "set_owned",
    "slot_setters",
    "spec_fingerprint",
    "thaw",
    "validated_input",
]
