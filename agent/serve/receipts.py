"""Decision receipts: what a person decided, bound to the run, signed by the inbox.

A receipt is JSON ``{"receipt": {...}, "signature": "hmac-sha256:HEX"}``. The body names the
run (``run_id``), the pause (``request_id``), the ``verdict`` (``approved``, ``declined`` or
``answered``), the ``approver`` (who authentication said; both names for four-eyes), the
``tool``, ``args_digest`` (SHA-256 of the canonical JSON of the exact arguments that run —
the edited ones when edited), ``evidence_digest`` (of the evidence pack shown), the ``policy``,
the decision time ``at`` and ``chain_head`` (``store.verify(run_id)`` just before the answer
was recorded: the digest of every stored row of the run the person decided on).

Laws:
- The signature is HMAC-SHA256 under the inbox's key over the canonical JSON of the body: any
  changed field breaks it. It proves the holder of the key issued this body; it does not prove
  who held the keyboard (that is authentication's job) and anyone holding the key could issue
  another.
- :func:`verify_receipt` checks one offline against a run store and names every field that does
  not match: the signature, the run, the decision row (approver, verdict, args digest, chain
  head). It returns the problems; an empty list means it holds.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

from flowchart.lowlevel import canonical_json, json_digest

RECEIPT_VERSION = 1
_FIELDS = (
    "version",
    "run_id",
    "request_id",
    "verdict",
    "approver",
    "tool",
    "args_digest",
    "evidence_digest",
    "policy",
    "at",
    "chain_head",
)


def sign(key: bytes, body: dict[str, Any]) -> dict[str, Any]:
    """The signed receipt of ``body``."""
    mac = hmac.new(key, canonical_json(body).encode(), hashlib.sha256).hexdigest()
    return {"receipt": body, "signature": f"hmac-sha256:{mac}"}


def make_receipt(
    key: bytes,
    *,
    run_id: str,
    request_id: str,
    verdict: str,
    approver: str,
    tool: str | None,
    args: Any,
    evidence: Any,
    policy: str,
    at: str,
    chain_head: str,
    note: str | None = None,
) -> dict[str, Any]:
    """A signed receipt (see the module's docstring for the fields)."""
    body: dict[str, Any] = {
        "version": RECEIPT_VERSION,
        "run_id": run_id,
        "request_id": request_id,
        "verdict": verdict,
        "approver": approver,
        "tool": tool,
        "args_digest": json_digest(args),
        "evidence_digest": json_digest(evidence),
        "policy": policy,
        "at": at,
        "chain_head": chain_head,
    }
    if note is not None:
        body["note"] = note
    return sign(key, body)


def _decision_row(store: Any, run_id: str, request_id: str) -> dict[str, Any] | None:
    from flowchart import replay
    from governance import HUMAN_DECISIONS

    record = store.get(run_id)
    if not record.commit_log:
        return None
    rows = replay(list(record.commit_log)).get(HUMAN_DECISIONS)
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and row.get("request_id") == request_id:
            return row
    return None


def verify_receipt(receipt: Any, store: Any, key: bytes | None) -> list[str]:
    """The problems of ``receipt`` against ``store`` (empty: it holds). ``key`` ``None`` skips
    the signature (said in the result)."""
    if not isinstance(receipt, dict) or not isinstance(receipt.get("receipt"), dict):
        return ['not a receipt: expected {"receipt": {...}, "signature": "hmac-sha256:..."}']
    body = receipt["receipt"]
    missing = [f for f in _FIELDS if f not in body]
    if missing:
        return [f"receipt: missing field {', '.join(repr(f) for f in missing)}"]
    problems: list[str] = []
    if key is None:
        problems.append("signature: not checked (no key: pass --key-file or the inbox's --state)")
    else:
        expected = sign(key, body)["signature"]
        if not hmac.compare_digest(str(receipt.get("signature", "")), expected):
            problems.append("signature: does not match the body under this key (a field was changed, or another key)")
    from flowchart.store import RunNotFoundError

    run_id, request_id = str(body["run_id"]), str(body["request_id"])
    try:
        row = _decision_row(store, run_id, request_id)
    except RunNotFoundError:
        return [*problems, f"run_id: no run '{run_id}' in this store"]
    if row is None:
        return [*problems, f"request_id: run '{run_id}' records no decision on request '{request_id}' (yet)"]
    if body["verdict"] == "answered":
        if row.get("gate") != "ask_human":
            problems.append(f"verdict: the run records a {row.get('gate')} decision, not an ask_human answer")
        if json_digest(row.get("answer")) != body["args_digest"]:
            problems.append("args_digest: the recorded answer differs from the one the receipt names")
        return problems
    by = row.get("by")
    if by != body["approver"]:
        problems.append(f"approver: the run records {by!r}, the receipt {body['approver']!r}")
    verdict = "approved" if row.get("approved") is True else "declined"
    if verdict != body["verdict"]:
        problems.append(f"verdict: the run records {verdict}, the receipt {body['verdict']}")
    ran = row.get("after", row.get("args"))
    if json_digest(ran) != body["args_digest"]:
        problems.append("args_digest: the arguments the run records differ from the ones the receipt names")
    if row.get("store_head") != body["chain_head"]:
        problems.append(
            f"chain_head: the decision was recorded on head {row.get('store_head')!r}, the receipt names "
            f"{body['chain_head']!r}"
        )
    return problems


def load_receipt(text: str) -> Any:
    """A receipt file's JSON (``ValueError`` naming what is wrong)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
