"""The inbox tests' helpers: a real uvicorn server on 127.0.0.1 in a thread, and the agents the
inbox serves (the demo's refund agent; an agent whose tool asks a person with ``ask_human``)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from agent import Agent, ask_human, define_tool
from agent.providers import scripted
from agent.serve import add_user
from flowchart.store import SqliteStore


def free_port() -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def served(app: Any) -> Iterator[str]:
    """Run ``app`` on uvicorn (127.0.0.1, a free port) in a thread; yield its base URL."""
    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def cancel_agent(store: Any, order: str = "A-7", more: tuple[Any, ...] = ()) -> Agent:
    """An agent whose ``confirm`` tool asks the customer (``ask_human``) about ``order``, then
    answers; ``more`` replies continue the script (a conversation's later turns)."""
    confirm = define_tool(
        name="confirm",
        description="Ask the customer to confirm.",
        input_schema={"type": "object", "properties": {"order": {"type": "string"}}},
        execute=lambda args, ctx: ask_human({"question": f"Cancel order {args['order']}?"}),
    )
    replies = [
        {"content": "", "tool_calls": [{"id": "c1", "name": "confirm", "args": {"order": order}}]},
        "Order A-7 is cancelled.",
        *more,
    ]
    return Agent.create(provider=scripted(replies), model="mock", store=store).tool(confirm).build()


@attrs.define
class Setup:
    """A store with paused runs, a users file and the tokens of its users."""

    folder: Path
    db: str
    users: str
    tokens: dict[str, str]

    def store(self) -> SqliteStore:
        return SqliteStore(self.db)

    def headers(self, name: str) -> dict[str, str]:
        return {"authorization": f"Bearer {self.tokens[name]}"}


def make_setup(folder: Path) -> Setup:
    """alice, bob and carol approve; vera only views."""
    users = str(folder / "users.json")
    tokens = {name: add_user(users, name, "approver") for name in ("alice", "bob", "carol")}
    tokens["vera"] = add_user(users, "vera", "viewer")
    return Setup(folder, str(folder / "runs.db"), users, tokens)
