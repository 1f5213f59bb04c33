"""Power-user names: what libraries built on flowchart (the agent, a custom store or stage
kit) need beyond the façade, under one documented namespace (as trio's ``lowlevel``).

Law: outside code imports flowchart from the façade (``flowchart``), this module, and the
subpackages docs/api.md names; every other module is internal and may change without
notice. The names here are stable: a change to one is a change to the public API.
"""

from __future__ import annotations

from flowchart._core.commits import apply_commit
from flowchart._core.context import emit_owned, freeze, thaw
from flowchart._core.coroutines import drive, run_coroutine
from flowchart._core.fingerprint import canonical_json, json_digest, spec_fingerprint
from flowchart._core.options import RunOptions
from flowchart._core.scope import append_owned_to, peek, raw_read, set_owned
from flowchart._core.serde import every_key, json_type, make_converter
from flowchart._core.serde import structure as structure_untrusted
from flowchart._core.tracked import append_owned
from flowchart._core.untrusted import check as check_untrusted
from flowchart._core.untrusted import parse as parse_untrusted
from flowchart._core.values import NotJsonSafe, copy_json, escape_surrogates, is_json_safe, same_json
from flowchart._engine.entry import _run_input as validated_input
from flowchart._engine.entry import check_checkpoint
from flowchart._record.event_log import EventLog
from flowchart._record.trace import shown_of
from flowchart._rerun import fork_chart

__all__ = [
    "EventLog",
    "NotJsonSafe",
    "RunOptions",
    "append_owned",
    "append_owned_to",
    "apply_commit",
    "canonical_json",
    "check_checkpoint",
    "check_untrusted",
    "copy_json",
    "drive",
    "emit_owned",
    "escape_surrogates",
    "every_key",
    "fork_chart",
    "freeze",
    "is_json_safe",
    "json_digest",
    "json_type",
    "make_converter",
    "parse_untrusted",
    "peek",
    "raw_read",
    "run_coroutine",
    "same_json",
    "set_owned",
    "shown_of",
    "spec_fingerprint",
    "structure_untrusted",
    "thaw",
    "validated_input",
]
