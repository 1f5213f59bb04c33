"""The approval inbox on the demo's store: a few paused refunds, a user, a URL and a token.

``make demo-inbox`` (or ``python examples/inbox_demo.py``) makes ``runs/inbox/`` with a run
store holding three of the demo's refunds paused at their check-in (``examples/support_agent.py``:
a refund over 100 needs a person), a users file with ``alice`` (approver), and serves the inbox
on http://127.0.0.1:8000/ with the demo agent, so a decision resumes the run in the server's
process. It prints the URL and alice's token: log in, open the refund, read the evidence, edit the
amount, approve — then ``agent why RUN --db runs/inbox/runs.db`` names alice and the edited args.

The same as commands::

    agent users add alice --role approver --file runs/inbox/users.json
    agent serve --store runs/inbox/runs.db --agent examples.support_agent:build_agent \\
        --users runs/inbox/users.json --app-dir .

``HOST`` / ``PORT`` change where it listens (127.0.0.1:8000).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from agent.serve import add_user, inbox_app  # noqa: E402
from examples import support_agent as demo  # noqa: E402
from flowchart.store import SqliteStore  # noqa: E402

FOLDER = Path(os.environ.get("RUNS_DIR", "runs")) / "inbox"


def prepare(folder: Path = FOLDER, runs: int = 3) -> tuple[SqliteStore, str, str, list[str]]:
    """A fresh store in ``folder`` with ``runs`` paused refunds and a users file with alice:
    (store, users file, alice's token, the paused run ids, oldest first)."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    store = SqliteStore(folder / "runs.db")
    ids = []
    for _ in range(runs):
        paused = demo.build_agent(store).run(demo.QUESTION)
        ids.append(str(getattr(paused, "run_id", "")))
    users = str(folder / "users.json")
    return store, users, add_user(users, "alice", "approver"), ids


def main() -> int:
    """Prepare the store and serve the inbox until Ctrl-C."""
    import uvicorn

    store, users, token, ids = prepare()
    host, port = os.environ.get("HOST", "127.0.0.1"), int(os.environ.get("PORT", "8000"))
    app: Any = inbox_app(store, demo.build_agent(store), users=users)
    print(f"{len(ids)} paused refunds in {FOLDER / 'runs.db'}")
    print(f"The approval inbox: http://{host}:{port}/  (only this machine can reach it)")
    print(f"Log in as alice with this token: {token}")
    print("Ctrl-C stops it.", flush=True)
    uvicorn.run(app, host=host, port=port, log_level="warning")
    return 0


if __name__ == "__main__":
    sys.exit(main())
