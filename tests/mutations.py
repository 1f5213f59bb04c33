"""Damage a JSON document the way an attacker or a bad disk would — one place for the mutations.

The fuzz tests draw a ``random.Random`` from hypothesis (``st.randoms()``), the campaign
script (``bench/fuzz_loaders.py``) a seeded one; both call ``mutate(base, rng)``: replace a
value, drop or add a key, copy a value from elsewhere, insert a huge integer, reorder or grow
a list, maybe nest a value 150 to 3,000 levels deep, then
maybe damage the text (a duplicate key, NaN, Infinity, 1e999, a 5,000-digit integer, a
flipped character, a cut).
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

NASTY: list[Any] = [
    None,
    True,
    0,
    -1,
    10**30,
    1.5,
    "",
    "x",
    [],
    {},
    [1, 2],
    {"a": 1},
    "REDACTED",
    "stage",
    "mount",
    "check_in",
    "ask",
    "ask_human",
    "tool-calls",
    2**63,
    -(2**63),
    {"role": "tool"},
    [{"id": "c1"}],
]
KEYS = ["extra", "kind", "id", "index", "signature", "tool_calls", "role"]


def paths(value: Any, limit: int = 40) -> list[tuple[Any, ...]]:
    """Paths into ``value`` (keys and indexes), the root included, at most ``limit`` steps deep."""
    out: list[tuple[Any, ...]] = []
    pending: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while pending:
        current, prefix = pending.pop()
        out.append(prefix)
        if len(prefix) >= limit:
            continue
        if isinstance(current, dict):
            pending.extend((item, (*prefix, key)) for key, item in current.items())
        elif isinstance(current, list):
            pending.extend((item, (*prefix, index)) for index, item in enumerate(current))
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


def _nest(depth: int) -> Any:
    value: Any = 1
    for i in range(depth):
        value = [value] if i % 2 else {"n": value}
    return value


def _mutate_data(doc: Any, rng: random.Random) -> Any:
    where = rng.choice(paths(doc))
    target = _get(doc, where)
    kind = rng.choice(["replace", "replace", "drop", "add", "bigint", "long", "swap", "copy"])
    if kind == "replace":
        return _set(doc, where, copy.deepcopy(rng.choice(NASTY)))
    if kind == "drop" and where:
        del _get(doc, where[:-1])[where[-1]]
    elif kind == "add" and isinstance(target, dict):
        target[rng.choice(KEYS)] = copy.deepcopy(rng.choice(NASTY))
    elif kind == "bigint":
        return _set(doc, where, 10 ** rng.choice([20, 4299]))
    elif kind == "long" and isinstance(target, list):
        target.extend(copy.deepcopy([rng.choice(NASTY)] * rng.choice([1, 250])))
    elif kind == "swap" and isinstance(target, list):
        target.reverse()
    elif kind == "copy":  # a value from elsewhere in the document (plausible, and wrong)
        other = _get(doc, rng.choice(paths(doc)))
        return _set(doc, where, copy.deepcopy(other))
    return doc


def _damage_text(text: str, doc: Any, rng: random.Random) -> str:
    kind = rng.choice(["duplicate", "nan", "infinity", "huge-float", "bigint", "flip", "cut"] + ["none"] * 5)
    if kind == "duplicate" and text.startswith("{") and isinstance(doc, dict) and doc:
        return "{" + json.dumps(rng.choice(list(doc))) + ":0," + text[1:]
    colons = [i for i, c in enumerate(text) if c == ":"]
    if kind in ("nan", "infinity", "huge-float", "bigint") and colons:
        token = {"nan": "NaN", "infinity": "-Infinity", "huge-float": "1e999", "bigint": "9" * 5000}[kind]
        at = rng.choice(colons)
        end = at + 1
        while end < len(text) and text[end] not in ",}]":
            end += 1
        return text[: at + 1] + token + text[end:]
    if kind == "flip" and text:
        at = rng.randrange(len(text))
        return text[:at] + rng.choice(list('{}[]",:0a\\')) + text[at + 1 :]
    if kind == "cut" and text:
        return text[: rng.randrange(len(text))]
    return text


def mutate(base: Any, rng: random.Random) -> str:
    """JSON text: ``base`` after one to three data mutations and perhaps one text mutation."""
    doc = copy.deepcopy(base)
    for _ in range(rng.randint(1, 3)):
        doc = _mutate_data(doc, rng)
    if rng.random() < 0.15:  # last, so no other mutation has to walk it
        doc = _set(doc, rng.choice(paths(doc)), _nest(rng.choice([150, 195, 199, 201, 400, 990, 3000])))
    try:
        text = json.dumps(doc, ensure_ascii=False)
    except (RecursionError, ValueError):
        text = "[" * 3000 + "]" * 3000
    return _damage_text(text, doc, rng)
