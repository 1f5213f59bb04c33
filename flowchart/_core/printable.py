"""Text that is safe to print on an operator's terminal: ``printable(text)``.

Law: a character that a terminal would act on instead of showing — a C0/C1 control
(ESC starts the sequences that clear the screen, set the window title or move the
cursor; CR overwrites a line), DEL, a line or paragraph separator, a bidirectional
override that reorders what is shown — is written as a visible escape (ESC → ``\\x1b``,
DEL → ``\\u007f``, U+202E → ``\\u202e``), so an end user's message or a caller-chosen run
id can never drive the terminal. A backslash is printed as itself (the escapes are for
people, not a round-trip encoding). JSON output stays JSON: its encoder already escapes
the C0 controls, and what it leaves raw (DEL, C1, separators, bidi) is written
``\\uXXXX``, a JSON escape. Tabs are kept; newlines are kept only where the caller says
the text is multi-line by design (``newlines=True``). Every pyfootprint command line
writes through this one function (``flowchart._cli_support.write``), and the run-id rule
names a refused id with it.
"""

from __future__ import annotations

import re

# C0 controls but TAB and LF, DEL, C1 controls, LINE/PARAGRAPH SEPARATOR, the bidi embeddings,
# overrides and isolates (U+202A-U+202E, U+2066-U+2069) and U+200E/U+200F/U+061C marks
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
_UNSAFE_WITH_LF = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code == 0x0A:
        return "\\n"
    if code == 0x0D:
        return "\\r"
    return f"\\x{code:02x}" if code < 0x20 else f"\\u{code:04x}"


def printable(text: str, *, newlines: bool = False) -> str:
    """``text`` with every control character escaped visibly (ESC → ``\\x1b``); LF is kept
    when ``newlines`` (multi-line output by design) and written ``\\n`` otherwise."""
    return (_UNSAFE if newlines else _UNSAFE_WITH_LF).sub(_escape, text)


def is_printable(text: str) -> bool:
    """True when ``printable(text) == text`` (no newline either)."""
    return _UNSAFE_WITH_LF.search(text) is None
