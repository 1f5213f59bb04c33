"""Value summaries for the narrative: footprintjs's ``summarizeValue`` over JSON values.

The law: every value the narrative prints goes through :func:`summarize_value`, which
renders exactly what footprintjs 9.24.0 prints for the same JSON value —

* a string is quoted and, past ``max_len`` characters, cut to ``max_len - 3`` plus
  ``...`` (lengths count UTF-16 code units, as JavaScript does);
* a number is printed as JavaScript's ``String(number)`` (``1.0`` → ``1``,
  ``1e21`` → ``1e+21``, ``1e-7`` → ``1e-7``); booleans are ``true`` / ``false``;
* ``None`` is ``null``;
* a list is ``[]``, ``(1 item)`` or ``(N items)``;
* a dict is ``{}``, ``{k1, k2, k3, k4, ... (N keys)}``, or ``{N keys}`` when that
  preview is longer than ``max_len``; keys come in JavaScript's ``Object.keys`` order
  (integer-like keys first, ascending).

:func:`js_json` is JavaScript's ``JSON.stringify`` for the same values; the decision
evidence prints rule thresholds with it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

__all__ = ["js_json", "js_number", "js_object_keys", "summarize_value"]

#: largest canonical array index, per ECMAScript (2**32 - 2)
_MAX_ARRAY_INDEX = 2**32 - 2
#: JavaScript prints a number below this in plain digits (from 1e21 on, in exponent form)
_PLAIN_DIGITS_BELOW = 10**21
#: its negative, made once (``-_PLAIN_DIGITS_BELOW`` in a test would build a new int at every call)
_PLAIN_DIGITS_ABOVE = -_PLAIN_DIGITS_BELOW
_NUMBERS = (int, float)
_SEQUENCES = (list, tuple)


def js_number(value: float | int) -> str:
    """Render a number as JavaScript's ``String(number)`` does (shortest round trip)."""
    if isinstance(value, int) and abs(value) < _PLAIN_DIGITS_BELOW:
        # below 1e21 JS prints integers in plain digits; Python ints are exact there
        return str(value)
    number = float(value)
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"  # JS prints -0 as "0"
    sign = "-" if number < 0 else ""
    # repr() gives the shortest digits that round-trip, as ECMAScript requires
    _, digit_tuple, exponent = Decimal(repr(abs(number))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    exp = int(exponent) + (len(digit_tuple) - len(digits))
    k = len(digits)
    n = exp + k  # the value is 0.<digits> * 10**n
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = f"{digits[:n]}.{digits[n:]}"
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
        body = f"{mantissa}e{'+' if e > 0 else '-'}{abs(e)}"
    return sign + body


def _is_array_index(key: str) -> bool:
    return key.isdigit() and key.isascii() and (key == "0" or key[0] != "0") and int(key) <= _MAX_ARRAY_INDEX


def js_object_keys(mapping: Mapping[Any, Any]) -> list[str]:
    """A dict's keys in ``Object.keys`` order: integer-like keys ascending, then the rest."""
    keys = [str(k) for k in mapping]
    index_keys = [k for k in keys if k.isdigit() and _is_array_index(k)]  # isdigit: a cheap first test
    if not index_keys:
        return keys  # the usual case: insertion order
    return sorted(index_keys, key=int) + [k for k in keys if not _is_array_index(k)]


def _utf16_len(text: str) -> int:
    if text.isascii():  # one UTF-16 unit per character: no need to encode
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def _utf16_slice(text: str, end: int) -> str:
    """``text.slice(0, end)`` in UTF-16 units; a surrogate pair cut in half is dropped."""
    units = text.encode("utf-16-le")
    count = len(units) // 2
    stop = max(count + end, 0) if end < 0 else min(end, count)
    return units[: 2 * stop].decode("utf-16-le", errors="ignore")


def list_summary(count: int) -> str:
    """How ``summarize_value`` shows a list of ``count`` items: ``[]``, ``(1 item)``, ``(3 items)``."""
    if not count:
        return "[]"
    return f"({count} item{'s' if count > 1 else ''})"


def summarize_value(value: Any, max_len: int = 80) -> str:
    """Summarise a JSON value for one narrative line, as footprintjs's ``summarizeValue``."""
    kind = type(value)
    if kind is str or (kind is not int and isinstance(value, str)):  # the commonest kinds first
        if _utf16_len(value) <= max_len:
            return f'"{value}"'
        return f'"{_utf16_slice(value, max_len - 3)}..."'
    if kind is int:  # exactly int: a bool is an int subclass, handled below
        # the common small int inline, as js_number prints it; the rest through js_number
        return str(value) if _PLAIN_DIGITS_ABOVE < value < _PLAIN_DIGITS_BELOW else js_number(value)
    if value is None:
        return "null"
    if isinstance(value, _SEQUENCES):  # before bool and number: lists are the more common
        return list_summary(len(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _NUMBERS):
        return js_number(value)
    if isinstance(value, Mapping):
        keys = js_object_keys(value)
        if not keys:
            return "{}"
        preview = ", ".join(keys[:4])
        suffix = f", ... ({len(keys)} keys)" if len(keys) > 4 else ""
        result = f"{{{preview}{suffix}}}"
        return result if _utf16_len(result) <= max_len else f"{{{len(keys)} keys}}"
    return str(value)


def js_json(value: Any) -> str:
    """JavaScript's ``JSON.stringify(value)`` for JSON values (compact, numbers as JS)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _NUMBERS):
        if isinstance(value, float) and not math.isfinite(value):
            return "null"  # JSON.stringify(NaN) and Infinity are null
        return js_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, _SEQUENCES):
        return "[" + ",".join(js_json(item) for item in value) + "]"
    if isinstance(value, Mapping):
        items = {str(k): v for k, v in value.items()}
        return (
            "{"
            + ",".join(f"{json.dumps(k, ensure_ascii=False)}:{js_json(items[k])}" for k in js_object_keys(value))
            + "}"
        )
    return json.dumps(str(value), ensure_ascii=False)
