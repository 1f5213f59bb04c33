"""API keys: held in a value that never shows itself, and masked out of every text we make.

Law of this file: the only way to read a key is :meth:`Secret.reveal`, called where a
request's authentication header is built. Everything else — ``repr``, ``str``,
``attrs.asdict(provider)``, pickling — sees ``***`` or refuses. Text that may echo the key
(a server's error body, a transport error) passes through :func:`redact` *before* it is
cut or stored: every run of 8 or more characters of the key becomes ``***``, so a key
echoed whole, in part, or across a cut never survives. Keys shorter than 8 characters are
not secrets worth the name and are never masked — masking them would rewrite ordinary
words ("maximum" with a key ``"x"``). :func:`scrub_chain` drops the exception chain that
would otherwise carry an ``httpx`` request (and its ``Authorization`` header) along with
an error. The transport's own debug log (``httpx``/``httpcore``, which prints response
headers a server may echo the key in) is masked too, by a filter that costs nothing while
those loggers are not enabled.
"""

from __future__ import annotations

import hmac
import logging
import weakref
from typing import Any, NoReturn

MASK = "***"

#: the shortest key that is masked, and the shortest run of it that counts as a leak
MIN_SECRET_LENGTH = 8


class Secret:
    """An API key that never shows itself: ``repr``/``str`` print ``***``.

    Not an attrs class on purpose: ``attrs.asdict(provider)`` keeps this object as it is
    (so its masked ``repr`` is all a dump shows) instead of unpacking a ``value`` field.
    Pickling is refused: a pickle would carry the key in clear.
    """

    __slots__ = ("__weakref__", "_value")

    def __init__(self, value: str) -> None:
        if not isinstance(value, str) or not value:
            raise TypeError("Secret(value): expected a non-empty str")
        object.__setattr__(self, "_value", value)
        _LIVE[id(self)] = self

    def reveal(self) -> str:
        """The key itself, for the one place that builds the authentication header."""
        value: str = object.__getattribute__(self, "_value")
        return value

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError("Secret is immutable")

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self.reveal().encode(), other.reveal().encode())

    def __hash__(self) -> int:
        return hash((Secret, len(self.reveal())))

    def __reduce__(self) -> NoReturn:
        raise TypeError("a Secret is never pickled (the pickle would hold the key in clear)")

    def __copy__(self) -> Secret:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Secret:
        return self


#: every key alive in this process, for the transport-log filter; keyed by identity, since
#: equal keys held by two providers are two entries (a WeakSet would keep only one)
_LIVE: weakref.WeakValueDictionary[int, Secret] = weakref.WeakValueDictionary()

#: the loggers of the HTTP stack; a filter on a logger sees only that logger's own records
TRANSPORT_LOGGERS = (
    "httpx",
    "httpcore.connection",
    "httpcore.http11",
    "httpcore.http2",
    "httpcore.proxy",
)


class _MaskKeys(logging.Filter):
    """Masks every live key out of a transport log record (runs only for records emitted)."""

    def filter(self, record: logging.LogRecord) -> bool:
        keys = {secret.reveal() for secret in list(_LIVE.values())}
        if keys:
            text = record.getMessage()
            masked = text
            for key in keys:
                masked = redact(masked, key)
            if masked != text:
                record.msg, record.args = masked, None
        return True


_FILTER = _MaskKeys("agent.providers.secret")


def mask_transport_logs() -> None:
    """Install the key-masking filter on the HTTP stack's loggers (idempotent)."""
    for name in TRANSPORT_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


def secret_from(value: str | None) -> Secret | None:
    """Wrap a non-empty key; ``None`` or ``""`` mean no key."""
    if not value:
        return None
    mask_transport_logs()
    return Secret(value)


def redact(text: str, secret: str | Secret | None) -> str:
    """``text`` with every run of ≥ 8 characters of ``secret`` replaced by ``***``.

    A key shorter than 8 characters is left alone (see the module law). Overlapping and
    adjacent runs merge into one ``***``.
    """
    key = secret.reveal() if isinstance(secret, Secret) else secret
    if not key or len(key) < MIN_SECRET_LENGTH or len(text) < MIN_SECRET_LENGTH:
        return text
    width = MIN_SECRET_LENGTH
    grams = {key[i : i + width] for i in range(len(key) - width + 1)}
    covered_to = -1  # the end (exclusive) of the masked span being built
    spans: list[list[int]] = []
    for start in range(len(text) - width + 1):
        if text[start : start + width] in grams:
            if spans and start <= covered_to:
                spans[-1][1] = covered_to = start + width
            else:
                spans.append([start, start + width])
                covered_to = start + width
    if not spans:
        return text
    out: list[str] = []
    last = 0
    for start, end in spans:
        out.append(text[last:start])
        out.append(MASK)
        last = end
    out.append(text[last:])
    return "".join(out)


def scrub_chain(exc: BaseException) -> BaseException:
    """Cut ``exc``'s ``__cause__``/``__context__`` chain where a transport error begins.

    An ``httpx`` error keeps the request it failed on, headers included; anything chained
    below it is dropped. A provider error (``agent.providers.errors.ProviderError``) already
    says everything in its message, so its whole chain is dropped. Returns ``exc``.
    """
    from agent.providers.errors import ProviderError

    if isinstance(exc, ProviderError):
        exc.__cause__ = None
        exc.__context__ = None
        exc.__suppress_context__ = True
        return exc
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        for attr in ("__cause__", "__context__"):
            below = getattr(link, attr)
            if below is not None and _is_transport_error(below):
                setattr(link, attr, None)
                if attr == "__context__":
                    link.__suppress_context__ = True
        link = link.__cause__ or link.__context__
    return exc


def _is_transport_error(exc: BaseException) -> bool:
    module = type(exc).__module__ or ""
    return module == "httpx" or module.startswith(("httpx.", "httpcore"))
