"""The items M100K searches, made the same way for every peer (seeded: the same each run).

100,000 sentences of 8–16 made-up words from a 5,000-word vocabulary, the low ranks far more
common (Zipf-like), spread over ``users`` namespaces; 4-word queries from the 2,000 commonest
words. No pyfootprint import: the LangGraph peer's venv runs this module too.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

ITEMS = 100_000


def vocabulary(rng: random.Random, size: int = 5_000) -> list[str]:
    """``size`` distinct made-up words."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 9))))
    return sorted(words)


def sentence(rng: random.Random, words: list[str]) -> str:
    """8–16 words, the low ranks far more common (Zipf-like)."""
    return " ".join(words[min(int(rng.paretovariate(1.1)) - 1, len(words) - 1)] for _ in range(rng.randint(8, 16)))


def items(users: int, count: int = ITEMS) -> Iterator[tuple[tuple[str, ...], str]]:
    """``(namespace, text)`` for ``count`` items over ``users`` namespaces."""
    words = vocabulary(random.Random(42))
    rng = random.Random(1)
    spaces = [("acme", f"u-{n}") for n in range(users)]
    for n in range(count):
        yield spaces[n % users], f"{sentence(rng, words)} #{n}"


def queries(users: int) -> Iterator[tuple[tuple[str, ...], str]]:
    """An endless stream of ``(namespace, 4-word query)``."""
    words = vocabulary(random.Random(42))
    rng = random.Random(7)
    while True:
        yield ("acme", f"u-{rng.randrange(users)}"), " ".join(rng.choice(words[:2_000]) for _ in range(4))


def p95_ms(samples: list[float]) -> float:
    """The 95th percentile of ``samples`` (seconds) in milliseconds."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000
