"""The approval inbox (``agent serve``): where the people an agent waits for see the evidence,
decide, and get a receipt. Needs the ``[serve]`` extra (Starlette, uvicorn, Jinja2).

Law of this package: the approver is who authentication says — never a form field — and every
decision is the run store's answer-once, a ``human_decisions`` row, an audit row and a signed
receipt bound to the run, the request, the exact arguments, the evidence shown and the run's
chain head. ``inbox_app(store, agent=None, authenticate=None, policies=None)`` is the Starlette
application; the modules: ``auth`` (who is asking), ``policies``, ``decide`` (the checks and the
answer), ``receipts``, ``ledger`` (the inbox's own records), ``views`` (what a run shows),
``app`` (routes, pages, the live list), ``cli`` (``agent serve`` / ``users`` / ``receipt``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .auth import Approver, Authenticate, UsersFile, add_user, trusted_header
from .policies import Policies
from .receipts import verify_receipt


def inbox_app(
    store: Any,
    agent: Any = None,
    authenticate: Authenticate | None = None,
    policies: Policies | None = None,
    *,
    users: str | Path | None = None,
    state: str | Path | None = None,
    queue: Any = None,
    poll: float = 0.5,
) -> Any:
    """The approval inbox over ``store``, a Starlette application (``agent.serve.app.inbox_app``
    says what each argument does). Raises ``ImportError`` naming the ``[serve]`` extra when
    Starlette or Jinja2 is not installed."""
    try:
        from .app import inbox_app as make
    except ImportError as exc:
        raise ImportError(
            "agent.serve needs the [serve] extra (Starlette, uvicorn, Jinja2): "
            "pip install starlette uvicorn jinja2 "
            f"(in a pyfootprint checkout: pip install -e '.[serve]') ({exc})"
        ) from exc
    return make(store, agent, authenticate, policies, users=users, state=state, queue=queue, poll=poll)


__all__ = ["Approver", "Policies", "UsersFile", "add_user", "inbox_app", "trusted_header", "verify_receipt"]
