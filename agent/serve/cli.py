"""The inbox's commands: ``agent serve``, ``agent users add``, ``agent receipt verify``.

    agent serve --store PATH|DSN [--agent MODULE:ATTR] [--users FILE] [--policies FILE]
                [--trust-header HEADER --trust-from ADDR ...] [--host 127.0.0.1] [--port 8000]
    agent users add NAME --role approver|viewer --file FILE     prints the new token, once
    agent receipt verify FILE --store PATH|DSN [--state FILE | --key-file FILE]

Laws: ``serve`` binds 127.0.0.1 unless told otherwise and says where it listens (and that
another host makes it reachable from the network) before it starts. A token is printed once
and never stored in clear. ``receipt verify`` exits 0 when the receipt holds, 1 naming each
field that does not match, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from flowchart._cli_support import CliError

from .auth import ROLES, UsersFileError, add_user
from .ledger import InboxLedger, default_path


def open_any_store(target: str) -> Any:
    """A run store from a SQLite path or a ``postgresql://`` DSN (an absent path is refused)."""
    if target.startswith(("postgresql://", "postgres://")):
        from flowchart.store import PostgresStore

        return PostgresStore(target)
    from flowchart.store import SqliteStore

    try:
        return SqliteStore(target, create=False)
    except Exception as exc:
        raise CliError(f"--store {target}: {exc}") from None


def cmd_serve(args: argparse.Namespace) -> str:
    """``serve``: run the inbox on uvicorn until interrupted."""
    try:
        import uvicorn
    except ImportError:
        raise CliError(
            "agent serve needs the [serve] extra: pip install starlette uvicorn jinja2 "
            "(in a pyfootprint checkout: pip install -e '.[serve]')"
        ) from None
    from agent._edge.cli_common import load_object
    from agent._run.loading import load_agent

    from . import inbox_app, trusted_header
    from .policies import Policies

    store = open_any_store(args.store)
    agent = None
    if args.agent:
        agent = load_agent(args.agent, args.app_dir)
        agent.store = store
    queue = load_object(args.queue, "--queue", args.app_dir) if args.queue else None
    policies = None
    if args.policies:
        try:
            policies = Policies.from_file(args.policies)
        except ValueError as exc:
            raise CliError(str(exc)) from None
    header = None
    if args.trust_header:
        if not args.trust_from:
            raise CliError("--trust-header needs --trust-from ADDR (the reverse proxy's address)")
        header = trusted_header(args.trust_header, args.trust_from)
    if args.users is None and header is None:
        raise CliError("nobody could log in: pass --users FILE (agent users add ...) or --trust-header")
    try:
        app = inbox_app(store, agent, header, policies, users=args.users, state=args.state, queue=queue)
    except UsersFileError as exc:
        raise CliError(str(exc)) from None
    where = (
        "only this machine can reach it"
        if args.host in ("127.0.0.1", "localhost", "::1")
        else ("reachable from the network: put it behind TLS")
    )
    print(f"agent serve: the approval inbox on http://{args.host}:{args.port}/ ({where})", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return ""


def cmd_users_add(args: argparse.Namespace) -> str:
    """``users add``: add a user to the users file and print their token once."""
    try:
        token = add_user(args.file, args.name, args.role)
    except UsersFileError as exc:
        raise CliError(str(exc)) from None
    return f"{args.name} ({args.role}) added to {args.file}; their token (shown once, keep it secret):\n{token}"


def cmd_receipt_verify(args: argparse.Namespace) -> str:
    """``receipt verify``: check a receipt against the run store, offline."""
    from .receipts import load_receipt, verify_receipt

    try:
        receipt = load_receipt(Path(args.file).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CliError(f"{args.file}: {exc}") from None
    store = open_any_store(args.store)
    if args.key_file:
        key: bytes | None = Path(args.key_file).read_bytes().strip()
    else:
        state = args.state or default_path(store)
        key = InboxLedger(state).key("receipts") if state != ":memory:" and Path(state).exists() else None
    problems = verify_receipt(receipt, store, key)
    body = receipt.get("receipt", {}) if isinstance(receipt, dict) else {}
    if not problems:
        return (
            f"receipt holds: {body.get('verdict')} by {body.get('approver')} at {body.get('at')} on request "
            f"{body.get('request_id')} of run {body.get('run_id')}"
        )
    print("receipt does NOT hold:", file=sys.stderr)
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)
    raise SystemExit(1)


def add_commands(groups: Any) -> None:
    """Add ``serve``, ``users`` and ``receipt`` to the ``agent`` command."""
    text = "Serve the approval inbox: paused runs, their evidence, decisions and receipts (needs [serve])."
    serve = groups.add_parser("serve", help=text, description=text)
    serve.set_defaults(handler=cmd_serve)
    serve.add_argument(
        "--store", required=True, metavar="PATH|DSN", help="the run store (SQLite file or postgresql://)"
    )
    serve.add_argument("--agent", metavar="MODULE:ATTR", help="the agent that resumes a decided run in this process")
    serve.add_argument("--queue", metavar="MODULE:ATTR", help="a Celery app to hand decided runs to instead")
    serve.add_argument("--users", metavar="FILE", help="the users file (agent users add)")
    serve.add_argument("--policies", metavar="FILE", help="a JSON policies file (four_eyes, expire_after, ...)")
    serve.add_argument("--state", metavar="FILE", help="the inbox's own records (default STORE.inbox.db)")
    serve.add_argument("--trust-header", metavar="HEADER", help="a reverse proxy's user header, e.g. X-Forwarded-User")
    serve.add_argument("--trust-from", metavar="ADDR", action="append", help="an address the header is accepted from")
    serve.add_argument("--host", default="127.0.0.1", help="the address to bind (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="the port (default 8000)")
    serve.add_argument("--app-dir", metavar="DIR", help="import --agent from DIR too")
    users = groups.add_parser("users", help="manage the inbox's users file")
    commands = users.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add = commands.add_parser("add", help="add a user and print their token once")
    add.set_defaults(handler=cmd_users_add)
    add.add_argument("name", metavar="NAME")
    add.add_argument("--role", choices=ROLES, default="approver")
    add.add_argument("--file", required=True, metavar="FILE", help="the users file (created when absent)")
    receipt = groups.add_parser("receipt", help="check a decision receipt")
    commands = receipt.add_subparsers(dest="command", required=True, metavar="COMMAND")
    verify = commands.add_parser("verify", help="check a receipt against the run store, offline")
    verify.set_defaults(handler=cmd_receipt_verify)
    verify.add_argument("file", metavar="FILE")
    verify.add_argument("--store", required=True, metavar="PATH|DSN")
    verify.add_argument("--state", metavar="FILE", help="the inbox's records holding its key (default STORE.inbox.db)")
    verify.add_argument("--key-file", metavar="FILE", help="the receipt key, when kept elsewhere")
