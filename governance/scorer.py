"""Which context drove a tool choice: context units, drivers, and the default lexical scorer.

Law this file enforces: the default ranking is deterministic, zero-LLM and zero-network —
``lexical_driver_scorer`` lower-cases the text, takes the runs of ``[a-z0-9]`` longer than
one character, drops the stop words ``the a an and or to of in on for with is are this that
it as at by be you your i``, scores each unit by the Jaccard index of its token set against
the tool text (``"<name> <description> <k=v ...>"``), and sorts descending with a STABLE
sort (ties keep the units' order). The same input always gives the same drivers.

A custom scorer has the same signature (``ScoreInput -> Sequence[Driver]``, sync or async),
e.g. an embedding-backed one.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import attrs

from governance import _codec
from governance._json import as_tuple

STOP_WORDS: Final = frozenset(
    {"the", "a", "an", "and", "or", "to", "of", "in", "on", "for", "with", "is", "are"}
    | {"this", "that", "it", "as", "at", "by", "be", "you", "your", "i"}
)
"""Words too common to say anything about which context drove a choice."""

_TOKEN = re.compile(r"[a-z0-9]+")


@attrs.frozen
class ContextUnit:
    """One piece of context the run consumed: ``id`` (``system-1``, ``task-1``, ``result-1``),
    ``channel`` (``system`` | ``task`` | ``result``) and its full ``text``."""

    id: str
    channel: str
    text: str


@attrs.frozen
class Driver:
    """One ranked context unit: how strongly it aligns with the tool choice (``score``;
    higher drove it more; compare within one request, not across scorers)."""

    id: str
    channel: str
    text: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {"id": self.id, "channel": self.channel, "text": self.text, "score": self.score}

    @classmethod
    def from_dict(cls, data: Any, path: str = "$") -> Driver:
        """Read a driver back (strict; ``WireFormatError`` names the bad field)."""
        return _codec.load(cls, data, path)


_codec.register(Driver)


@attrs.frozen
class ScoreInput:
    """What a scorer ranks: the chosen tool (``tool_name``, and ``tool_text`` — name,
    description and rendered args — which is what gets scored) and the context ``units``."""

    tool_name: str
    tool_text: str
    units: tuple[ContextUnit, ...] = attrs.field(converter=as_tuple)


Scorer = Callable[[ScoreInput], Sequence[Driver] | Awaitable[Sequence[Driver]]]
"""Ranks context units by how strongly each drove one tool choice."""


def tokens(text: str) -> frozenset[str]:
    """The scorer's token set of ``text``: lower-cased ``[a-z0-9]`` runs longer than one
    character, minus ``STOP_WORDS``."""
    return frozenset(t for t in _TOKEN.findall(text.lower()) if len(t) > 1 and t not in STOP_WORDS)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a ∩ b| / |a ∪ b|``, and 0.0 when both are empty."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def lexical_driver_scorer(score_input: ScoreInput) -> list[Driver]:
    """The default scorer: Jaccard token overlap of each unit with the tool text, ranked
    highest first by a stable sort (ties keep the units' order). Deterministic."""
    tool = tokens(score_input.tool_text)
    scored = [
        Driver(id=u.id, channel=u.channel, text=u.text, score=jaccard(tool, tokens(u.text))) for u in score_input.units
    ]
    # sorted() is stable, so equal scores keep the order the units came in.
    return sorted(scored, key=lambda d: -d.score)
