"""A chart's identity: the SHA-256 of its spec's canonical JSON.

Law: the same structure has the same fingerprint in every process and on every machine
(sorted keys, no spaces, UTF-8), and any change of structure changes it. Functions are
not part of a spec, so they are not part of the fingerprint. Checkpoints, traces and
stored runs are refused on a chart whose fingerprint differs. A bottom-layer module: it
imports nothing from the package.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

__all__ = ["canonical_json", "json_digest", "spec_fingerprint"]


def canonical_json(value: Any) -> str:
    """The canonical JSON text of a JSON-safe ``value``: sorted keys, no whitespace, UTF-8 as is
    (``ensure_ascii=False``). The one spelling every fingerprint and request id is hashed from."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def json_digest(value: Any) -> str:
    """SHA-256 (64 hex digits) of the canonical JSON of a JSON-safe ``value``."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def spec_fingerprint(spec: Any) -> str:
    """SHA-256 of a chart spec's canonical JSON (sorted keys, no spaces): the chart's identity."""
    return json_digest(spec)
