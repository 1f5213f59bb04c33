"""Signed JSON: an HMAC-SHA256 over the exact text, checked before the text is parsed.

Law: a signed document is its usual compact JSON text with ONE key appended at the end,
``"signature":"hmac-sha256:<64 hex digits>"``, the HMAC (stdlib ``hmac``) of the text
without it, under a ``purpose`` that names what the text is (a signed checkpoint is not a
signed store row) and, for a store, which run and column it belongs to. Verifying
recomputes the HMAC over the bytes as they arrived and compares in constant time
(``hmac.compare_digest``) BEFORE anything parses them; a missing, malformed or wrong
signature is a ``CheckpointError`` naming ``$.signature``. Unsigned text stays the default:
nothing here runs unless a key is given.

What a signature proves: the text was written by a holder of the key and not changed
since. It does not hide anything (the text stays readable), does not stop a holder of the
key, and cannot tell an older signed text of the same purpose from the newest one.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any

from flowchart._core.errors import CheckpointError

SIGNATURE_KEY = "signature"
ALGORITHM = "hmac-sha256"
_TAIL = re.compile(r',"signature":"([^"]*)"\}\s*\Z')
_WELL_FORMED = re.compile(rf"^{ALGORITHM}:[0-9a-f]{{64}}$")


def check_key(key: Any) -> bytes:
    """The signing key as bytes; ``TypeError``/``ValueError`` for anything else or an empty key."""
    if not isinstance(key, bytes | bytearray):
        raise TypeError(f"key must be bytes (e.g. key=b'...' or secrets.token_bytes(32)), got {type(key).__name__}")
    if not key:
        raise ValueError("key must not be empty: use at least 32 random bytes (secrets.token_bytes(32))")
    return bytes(key)


def signature(key: bytes, text: str, purpose: str) -> str:
    """``hmac-sha256:<hex>`` over ``purpose`` and ``text`` (UTF-8; lone surrogates kept as-is)."""
    message = purpose.encode("utf-8", "surrogatepass") + b"\x00" + text.encode("utf-8", "surrogatepass")
    return f"{ALGORITHM}:{hmac.new(check_key(key), message, hashlib.sha256).hexdigest()}"


def sign(text: str, key: bytes, purpose: str) -> str:
    """``text`` (a compact JSON object) with its signature appended as the last key."""
    if not text.startswith("{") or not text.endswith("}"):
        raise ValueError("only a JSON object can carry a signature")
    mark = signature(key, text, purpose)
    return f'{text[:-1]}{"," if text != "{}" else ""}"{SIGNATURE_KEY}":"{mark}"}}'


def unsign(text: str | bytes, key: bytes, purpose: str, *, what: str) -> str:
    """The signed ``text`` without its signature, once the signature is verified."""
    key = check_key(key)
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CheckpointError(f"Invalid {what}: not JSON ({exc})", path="$") from None
    found = _TAIL.search(text)
    if found is None:
        raise CheckpointError(
            f"Invalid {what}: no signature @ $.{SIGNATURE_KEY} (a key was given, so the text must end with the "
            f'"{SIGNATURE_KEY}" that to_json(key=...) appends)',
            path=f"$.{SIGNATURE_KEY}",
        )
    body = text[: found.start()] + "}"
    given = found.group(1)
    if not _WELL_FORMED.match(given) or not hmac.compare_digest(given, signature(key, body, purpose)):
        raise CheckpointError(
            f"Invalid {what}: the signature does not match @ $.{SIGNATURE_KEY} (the text was changed after it was "
            "signed, or it was signed with another key)",
            path=f"$.{SIGNATURE_KEY}",
        )
    return body


def refuse_signed(data: Any, *, what: str, how: str) -> None:
    """A signed document loaded without a key is refused, never silently half-checked."""
    if isinstance(data, dict) and SIGNATURE_KEY in data:
        raise CheckpointError(
            f"Invalid {what}: it is signed, but no key was given @ $.{SIGNATURE_KEY}; verify it with {how}",
            path=f"$.{SIGNATURE_KEY}",
        )


__all__ = ["ALGORITHM", "SIGNATURE_KEY", "check_key", "refuse_signed", "sign", "signature", "unsign"]
