"""Signed checkpoints: ``to_json(key=...)`` appends an HMAC-SHA256 that ``from_json(text, key=...)``
verifies before parsing; a missing, wrong or foreign signature is a ``CheckpointError``."""

from __future__ import annotations

import hashlib
import hmac
import json

import pause_charts
import pytest

from flowchart import Checkpoint, CheckpointError

KEY = b"k" * 32


def paused() -> Checkpoint:
    """A real checkpoint, two subflows deep."""
    cp = pause_charts.CHARTS["nested"]([]).run({"who": "ada"}).checkpoint
    assert cp is not None
    return cp


def test_a_signed_checkpoint_round_trips_with_its_key() -> None:
    """The signed text is the plain text plus one last key, and loads back equal with the key."""
    cp = paused()
    signed = cp.to_json(key=KEY)
    plain = cp.to_json()
    assert signed.startswith(plain[:-1] + ',"signature":"hmac-sha256:')
    mac = hmac.new(KEY, b"pyfootprint checkpoint v1\x00" + plain.encode(), hashlib.sha256).hexdigest()
    assert json.loads(signed)["signature"] == f"hmac-sha256:{mac}"
    assert Checkpoint.from_json(signed, key=KEY) == cp
    assert Checkpoint.from_json(signed.encode() + b"\n", key=KEY) == cp


def test_an_edited_signed_checkpoint_is_refused() -> None:
    """Changing one value (here the run input) after signing fails the signature check."""
    signed = paused().to_json(key=KEY)
    edited = signed.replace('"who":"ada"', '"who":"eve"')
    assert edited != signed
    with pytest.raises(
        CheckpointError,
        match=r"^Invalid checkpoint: the signature does not match @ \$\.signature \(the text was changed after it was "
        r"signed, or it was signed with another key\)$",
    ) as caught:
        Checkpoint.from_json(edited, key=KEY)
    assert caught.value.path == "$.signature"


def test_another_key_is_refused() -> None:
    """A checkpoint signed with one key does not verify with another."""
    with pytest.raises(CheckpointError, match=r"^Invalid checkpoint: the signature does not match @ \$\.signature"):
        Checkpoint.from_json(paused().to_json(key=KEY), key=b"x" * 32)


def test_an_unsigned_checkpoint_is_refused_when_a_key_is_given() -> None:
    """With a key, the signature is required: an unsigned checkpoint is refused."""
    with pytest.raises(CheckpointError, match=r"^Invalid checkpoint: no signature @ \$\.signature \(a key was given"):
        Checkpoint.from_json(paused().to_json(), key=KEY)


def test_a_signed_checkpoint_without_a_key_is_refused_naming_what_to_do() -> None:
    """Without a key a signed text is not silently half-checked: the error says how to verify it."""
    with pytest.raises(
        CheckpointError,
        match=r"^Invalid checkpoint: it is signed, but no key was given @ \$\.signature; verify it with "
        r"Checkpoint\.from_json\(text, key=\.\.\.\)$",
    ):
        Checkpoint.from_json(paused().to_json(key=KEY))


def test_a_forged_or_malformed_signature_is_refused() -> None:
    """A signature of the right form but made up, or of the wrong form, is refused the same way."""
    plain = paused().to_json()
    for mark in ("hmac-sha256:" + "0" * 64, "sha1:abc", ""):
        forged = plain[:-1] + f',"signature":"{mark}"}}'
        with pytest.raises(CheckpointError, match=r"^Invalid checkpoint: the signature does not match"):
            Checkpoint.from_json(forged, key=KEY)


def test_a_key_must_be_non_empty_bytes() -> None:
    """``key="secret"`` (a str) and ``key=b""`` are refused before anything is signed."""
    cp = paused()
    with pytest.raises(
        TypeError, match=r"^key must be bytes \(e\.g\. key=b'\.\.\.' or secrets\.token_bytes\(32\)\), got str$"
    ):
        cp.to_json(key="secret")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^key must not be empty"):
        Checkpoint.from_json(cp.to_json(), key=b"")
