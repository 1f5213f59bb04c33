"""Reading a tool function's docstring: its description and one description per argument.

Law: the description is the docstring's text before its first section, paragraphs kept;
an argument's description comes from a Google-style ``Args:`` section (also ``Arguments:``,
``Parameters:``; ``name: text`` or ``name (type): text``, continuation lines indented
further) or a NumPy-style ``Parameters`` section (``name : type`` then the indented text).
Any other section (``Returns:``, ``Raises:``, ``Examples``, ...) ends the argument list
and is not part of the description.
"""

from __future__ import annotations

import inspect
import re

import attrs

_GOOGLE_ARGS = ("args", "arguments", "parameters", "params", "keyword args", "keyword arguments")
_HEADERS = frozenset(
    {
        *_GOOGLE_ARGS,
        "other parameters",
        "returns",
        "return",
        "raises",
        "yields",
        "yield",
        "examples",
        "example",
        "note",
        "notes",
        "see also",
        "warning",
        "warnings",
        "attributes",
        "todo",
        "references",
    }
)
_GOOGLE_SECTION = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
_NUMPY_RULE = re.compile(r"^-{3,}\s*$")
_GOOGLE_ITEM = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_ITEM = re.compile(r"^(\*{0,2}\w+)\s*(?::.*)?$")


@attrs.frozen
class Docstring:
    """A docstring split into ``description`` and ``args`` (argument name → its description)."""

    description: str
    args: dict[str, str]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _section_at(lines: list[str], index: int) -> tuple[str, int] | None:
    """``(name, first content line)`` when a section header starts at ``index``, else ``None``."""
    line = lines[index]
    google = _GOOGLE_SECTION.match(line)
    if google and google.group(1).strip().lower() in _HEADERS:
        return google.group(1).strip().lower(), index + 1
    if index + 1 < len(lines) and line.strip() and _NUMPY_RULE.match(lines[index + 1]) and _indent(line) == 0:
        return line.strip().lower(), index + 2
    return None


def _join(parts: list[str]) -> str:
    return " ".join(p.strip() for p in parts if p.strip())


def _google_args(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    base = min((_indent(line) for line in lines if line.strip()), default=0)
    name: str | None = None
    parts: list[str] = []
    for line in lines:
        if not line.strip():
            continue
        item = _GOOGLE_ITEM.match(line.strip()) if _indent(line) == base else None
        if item:
            if name is not None:
                out[name] = _join(parts)
            name, parts = item.group(1).lstrip("*"), [item.group(2)]
        elif name is not None:
            parts.append(line)
    if name is not None:
        out[name] = _join(parts)
    return out


def _numpy_args(lines: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    name: str | None = None
    parts: list[str] = []
    for line in lines:
        if not line.strip():
            continue
        item = _NUMPY_ITEM.match(line) if _indent(line) == 0 else None
        if item:
            if name is not None:
                out[name] = _join(parts)
            name, parts = item.group(1).lstrip("*"), []
        elif name is not None:
            parts.append(line)
    if name is not None:
        out[name] = _join(parts)
    return out


def parse_docstring(text: str | None) -> Docstring:
    """Split ``text`` (a raw ``__doc__``) into its description and its argument descriptions."""
    lines = inspect.cleandoc(text or "").splitlines()
    sections: list[tuple[str, int, int]] = []  # (name, first content line, header line)
    for index in range(len(lines)):
        found = _section_at(lines, index)
        if found is not None:
            sections.append((found[0], found[1], index))
    end = sections[0][2] if sections else len(lines)
    paragraphs = "\n".join(lines[:end]).strip().split("\n\n")
    description = "\n\n".join(" ".join(part.split()) for part in paragraphs if part.strip())
    args: dict[str, str] = {}
    for number, (name, start, _header) in enumerate(sections):
        stop = sections[number + 1][2] if number + 1 < len(sections) else len(lines)
        body = lines[start:stop]
        numpy = start >= 2 and _NUMPY_RULE.match(lines[start - 1]) is not None
        if numpy and name in ("parameters", "other parameters"):
            args.update(_numpy_args(body))
        elif not numpy and name in _GOOGLE_ARGS:
            args.update(_google_args(body))
    return Docstring(description, args)
