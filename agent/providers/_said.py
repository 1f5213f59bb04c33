"""What a server said in a failed answer, made safe and short enough for an error message.

Law of this file: the body is masked (the API key out) before it is read, summarised or
cut; a request-validation report (pydantic / FastAPI, as llama.cpp's and vLLM's servers
send) is summarised as ``field: problem`` pairs without the input values it echoes — a
union's members that failed on their discriminator (``literal_error``) left out, so the
member that names the cause shows; and a
long text is cut in the MIDDLE — its head says what failed, its tail often says where
(the field), so both survive.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: the most characters of a server's words an error message carries
EXCERPT = 400
_ELLIPSIS = " … "

# pydantic's report, as Python reprs in a message ('loc': ('body', 'top_k'), 'msg': '...')
_PY_ERROR = re.compile(r"'type': '(?P<type>[^']*)', 'loc': \((?P<loc>[^)]*)\), 'msg': (?P<q>['\"])(?P<msg>.*?)(?P=q)")

#: one reported problem: (pydantic error type, location parts, message)
Problem = tuple[str, tuple[str, ...], str]
_VALIDATION = re.compile(r"\bvalidation errors?\b|RequestValidationError|Field required|Input should be", re.IGNORECASE)


def excerpt(text: str, limit: int = EXCERPT) -> str:
    """``text`` with runs of whitespace collapsed, cut in the middle past ``limit`` characters."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    keep = limit - len(_ELLIPSIS)
    head = keep * 2 // 5
    return text[:head] + _ELLIPSIS + text[len(text) - (keep - head) :]


def is_request_invalid(text: str) -> bool:
    """True when a body reports that the request itself was malformed (no retry can help)."""
    return bool(_VALIDATION.search(text)) or _detail_errors(text) is not None


def server_message(text: str) -> str:
    """The human part of an (already masked) error body, summarised and cut.

    ``error.message``, ``error``, ``message`` or the raw text; a validation report becomes
    ``N validation errors: field: problem; ...``.
    """
    detail = _detail_errors(text)
    if detail is not None:
        return excerpt(_summary(detail))
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error", data.get("message"))
        if isinstance(error, dict):
            error = error.get("message", error)
        if error is not None:
            text = error if isinstance(error, str) else json.dumps(error)
    found = [(m["type"], _loc(m["loc"].split(",")), m["msg"]) for m in _PY_ERROR.finditer(text)]
    if found:
        text = _summary(found)
    return excerpt(text)


def _loc(parts: list[Any]) -> tuple[str, ...]:
    names = (str(p).strip().strip("'\"") for p in parts)
    return tuple(n for n in names if n and n != "body")


def _summary(errors: list[Problem]) -> str:
    """``N validation errors: field: problem; ...`` — without the union members that did not match."""
    count = len(errors)
    mismatched = {loc[:-1] for kind, loc, _msg in errors if kind == "literal_error" and len(loc) > 1}
    kept = [e for e in errors if e[1][:-1] not in mismatched] or errors
    problems = "; ".join(f"{'.'.join(loc) or 'request'}: {msg}" for _kind, loc, msg in kept)
    left_out = count - len(kept)
    tail = f" (and {left_out} from union members that did not match)" if left_out else ""
    return f"{count} validation error{'s' if count != 1 else ''}: {problems}{tail}"


def _detail_errors(text: str) -> list[Problem] | None:
    """FastAPI's 422 shape ``{"detail": [{"loc": [...], "msg": ...}, ...]}`` as pairs."""
    if '"detail"' not in text:
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    detail = data.get("detail") if isinstance(data, dict) else None
    if not isinstance(detail, list) or not detail:
        return None
    pairs = []
    for item in detail:
        if not isinstance(item, dict) or not isinstance(item.get("loc"), list):
            return None
        pairs.append((str(item.get("type", "")), _loc(item["loc"]), str(item.get("msg", ""))))
    return pairs
