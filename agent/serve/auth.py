"""Who is asking: the inbox's approvers, their tokens, browser sessions and CSRF tokens.

Laws:
- An approver is who authentication says, never a form field or a JSON key: every decision
  the inbox records takes ``by`` from the :class:`Approver` an authenticator returned.
- A users file keeps no token: each user has a random salt and the ``hashlib.scrypt`` hash of
  their token (n=2**14, r=8, p=1). A token is ``NAME.SECRET``; it is shown once, when made
  (``agent users add``). A token that verified is remembered by its SHA-256 only, so a request
  costs one scrypt per token per process, not one per request.
- A trusted header (``X-Forwarded-User`` from a reverse proxy) is believed only from the
  addresses given; from any other address it is ignored.
- A browser session is a cookie ``name|role|expiry|mac`` signed with HMAC-SHA256 under the
  server's key; its CSRF token is a second HMAC of the same session, so a form posted from
  another site (which cannot read the cookie) carries no valid token.
- A users file that does not load is refused with its path and what is wrong; a bad token is
  ``None`` (401), never an exception.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import time
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Any

import attrs

from agent.errors import AgentError

ROLES = ("approver", "viewer")
_SCRYPT = {"n": 2**14, "r": 8, "p": 1}
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-@+")
SESSION_COOKIE = "inbox_session"
SESSION_SECONDS = 8 * 3600


class UsersFileError(AgentError, ValueError):
    """A users file that cannot be read or written (the message names the file and the problem)."""


@attrs.frozen
class Approver:
    """An authenticated person: ``name`` (recorded as the decision's ``by``) and ``role``
    (``approver`` may decide; ``viewer`` may only look)."""

    name: str
    role: str = "approver"

    @property
    def may_decide(self) -> bool:
        """True for the ``approver`` role."""
        return self.role == "approver"


Authenticate = Callable[[Any], "Approver | None"]


def check_name(name: object) -> str:
    """A user name: 1-64 letters, digits, ``_ - @ +`` (it is part of the token and of records)."""
    if not isinstance(name, str) or not 0 < len(name) <= 64 or not set(name) <= _NAME_CHARS:
        raise UsersFileError(
            f"user name {name!r}: use 1-64 letters, digits, '_', '-', '@' or '+' (it is recorded as the approver)"
        )
    return name


def _hash(secret: str, salt: bytes) -> bytes:
    return hashlib.scrypt(secret.encode(), salt=salt, maxmem=64 * 1024 * 1024, dklen=32, **_SCRYPT)


def _read(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsersFileError(f"users file {path}: not readable JSON ({exc})") from None
    users = data.get("users") if isinstance(data, dict) else None
    if not isinstance(users, dict):
        raise UsersFileError(f'users file {path}: expected {{"users": {{NAME: {{...}}}}}}, as `agent users add` writes')
    for name, entry in users.items():
        check_name(name)
        ok = isinstance(entry, dict) and entry.get("role") in ROLES
        ok = ok and all(isinstance(entry.get(k), str) for k in ("salt", "hash"))
        if not ok:
            raise UsersFileError(
                f"users file {path}: user {name!r} needs 'role' (approver or viewer), 'salt' and 'hash' strings"
            )
    return users


def add_user(path: str | Path, name: str, role: str) -> str:
    """Add (or replace) ``name`` with ``role`` in the users file at ``path``; return the new token
    ``NAME.SECRET`` — the only time it exists in clear."""
    check_name(name)
    if role not in ROLES:
        raise UsersFileError(f"role {role!r}: expected one of {', '.join(ROLES)}")
    file = Path(path)
    users = _read(file)
    secret = secrets.token_urlsafe(24)
    salt = os.urandom(16)
    users[name] = {"role": role, "salt": salt.hex(), "hash": _hash(secret, salt).hex(), "scrypt": dict(_SCRYPT)}
    text = json.dumps({"users": users}, indent=2, sort_keys=True) + "\n"
    tmp = file.with_name(file.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.chmod(tmp, 0o600)
    tmp.replace(file)
    return f"{name}.{secret}"


class UsersFile:
    """Bearer tokens checked against a users file (``agent users add`` writes it); read at each
    check when the file changed, so a user added while the server runs can log in."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise UsersFileError(
                f"users file {self.path}: no such file; create it with `agent users add NAME --file ...`"
            )
        self._stamp: float = -1.0
        self._users: dict[str, Any] = {}
        self._known: dict[str, Approver] = {}
        self._load()

    def _load(self) -> None:
        stamp = self.path.stat().st_mtime_ns
        if stamp != self._stamp:
            self._users, self._stamp, self._known = _read(self.path), stamp, {}

    def check(self, token: str) -> Approver | None:
        """The approver ``token`` belongs to, or ``None``."""
        self._load()
        digest = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
        known = self._known.get(digest)
        if known is not None:
            return known
        name, dot, secret = token.rpartition(".")
        entry = self._users.get(name) if dot else None
        if entry is None or not secret or len(secret) > 256:
            return None
        try:
            salt = bytes.fromhex(entry["salt"])
            expected = bytes.fromhex(entry["hash"])
        except ValueError:
            return None
        if not hmac.compare_digest(_hash(secret, salt), expected):
            return None
        approver = Approver(name, entry["role"])
        self._known[digest] = approver
        return approver

    def __call__(self, request: Any) -> Approver | None:
        """An authenticator: the ``Authorization: Bearer TOKEN`` header's approver."""
        token = bearer_token(request)
        return self.check(token) if token else None


def bearer_token(request: Any) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header, else ``None``."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def trusted_header(
    header: str, addresses: Collection[str], roles: Mapping[str, str] | None = None, default_role: str = "approver"
) -> Authenticate:
    """An authenticator believing ``header`` (the user name a reverse proxy authenticated) only
    on requests from ``addresses``; the role from ``roles`` (name → role), else ``default_role``."""
    allowed = frozenset(addresses)
    if not allowed:
        raise ValueError(f"trusted_header({header!r}): name the proxy's addresses it is accepted from")

    def authenticate(request: Any) -> Approver | None:
        client = request.client.host if request.client is not None else None
        name = request.headers.get(header)
        if client not in allowed or not name:
            return None
        try:
            check_name(name)
        except UsersFileError:
            return None
        return Approver(name, (roles or {}).get(name, default_role))

    return authenticate


def first_of(*authenticators: Authenticate | None) -> Authenticate:
    """An authenticator asking each of ``authenticators`` in turn (``None``s skipped)."""
    chain = [a for a in authenticators if a is not None]

    def authenticate(request: Any) -> Approver | None:
        for one in chain:
            found = one(request)
            if found is not None:
                return found
        return None

    return authenticate


# -- browser sessions ---------------------------------------------------------------------------
def _mac(key: bytes, *parts: str) -> str:
    return hmac.new(key, "|".join(parts).encode(), hashlib.sha256).hexdigest()


def make_session(key: bytes, approver: Approver, now: float | None = None) -> str:
    """The signed session cookie's value for ``approver`` (valid ``SESSION_SECONDS``)."""
    expiry = str(int((time.time() if now is None else now) + SESSION_SECONDS))
    body = f"{approver.name}|{approver.role}|{expiry}"
    return f"{body}|{_mac(key, 'session', body)}"


def read_session(key: bytes, value: str | None, now: float | None = None) -> Approver | None:
    """The approver of a session cookie, or ``None`` (absent, forged, expired)."""
    if not value:
        return None
    parts = value.split("|")
    if len(parts) != 4:
        return None
    name, role, expiry, mac = parts
    if not hmac.compare_digest(mac, _mac(key, "session", f"{name}|{role}|{expiry}")):
        return None
    if not expiry.isdigit() or int(expiry) < (time.time() if now is None else now) or role not in ROLES:
        return None
    return Approver(name, role)


def csrf_token(key: bytes, session: str) -> str:
    """The CSRF token of a session: every form of that session carries it."""
    return _mac(key, "csrf", session)


def check_csrf(key: bytes, session: str | None, token: str | None) -> bool:
    """True when ``token`` is the session's CSRF token."""
    return bool(session and token) and hmac.compare_digest(csrf_token(key, str(session)), str(token))
