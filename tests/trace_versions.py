"""Older trace files, made from a current one: the forms the loader must still read.

Version 3 (today's) keeps the narrative as columns; version 2 kept it as a list of record
objects; version 1 as bare lines. These helpers turn a version-3 trace dict (``to_dict()``)
into the older form, so a test can show that a file written before still loads, or is
refused with the words and paths it always was.
"""

from __future__ import annotations

import copy
from typing import Any


def as_version_2(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a version-3 trace dict) as a version-2 file: the narrative a list of records."""
    out = copy.deepcopy(data)
    out["version"] = 2
    columns = out["narrative"]
    if columns is not None:
        names = list(columns)
        out["narrative"] = [dict(zip(names, values, strict=True)) for values in zip(*columns.values(), strict=True)]
    return out


def as_version_1(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a version-3 trace dict) as a version-1 file: the narrative bare lines."""
    out = copy.deepcopy(data)
    out["version"] = 1
    if out["narrative"] is not None:
        out["narrative"] = list(out["narrative"]["text"])
    return out
