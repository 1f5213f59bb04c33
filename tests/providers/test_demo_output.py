"""What ``make demo`` and ``make demo-local`` show the person: the model's tool calls, live, and why.

Law of this file: the support demo prints each tool call the model made — its arguments, then
its result — as it happens, and each approval a call needed; it ends with the ``agent why``
story of the answer (not the key tree). On a real model (here the local wire server speaking
OpenAI's wire format, as llama.cpp's server does for ``make demo-local``) the same lines show
what the model really did, calls that needed no approval included.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agent import explain_answer

from .wire import Reply, WireServer

REPO = Path(__file__).resolve().parents[2]


def demo(tmp_path: Path, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "examples/support_agent.py"],
        cwd=REPO,
        env={**os.environ, "RUNS_DIR": str(tmp_path), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_make_demo_prints_the_tool_calls_live_and_ends_with_the_agent_why_story(tmp_path: Path) -> None:
    """Scripted: lookup, then the refund asking for approval, then alice's approval and the refund's
    result, in that order; the last section is exactly ``agent why`` on the saved trace."""
    out = demo(tmp_path, PROVIDER="scripted")
    live = [line for line in out.splitlines() if line.startswith(("  -> ", "  <- ", "  ?? ", "  ok "))]
    assert live == [
        '  -> lookup_order({"order_id": "A-1001"})',
        '  <- lookup_order: {"order_id":"A-1001","item":"Noise-cancelling headphones","amount":129.0,'
        '"status":"charged twice"}',
        '  -> issue_refund({"order_id": "A-1001", "amount": 129.0})',
        "  ?? issue_refund needs a person's approval (check-in)",
        "  ok alice approved issue_refund",
        "  <- issue_refund: refunded 129.00 on A-1001",
    ]
    trace = tmp_path / "support.trace.json"
    heading = f"== WHY this answer? (agent why {trace}) =="
    assert out.endswith(f"{heading}\n{explain_answer(trace).format()}\n")
    assert "final_content ←" not in out  # the key tree is gone


def call(call_id: str, name: str, args: dict[str, object]) -> Reply:
    raw = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    message = {"content": "", "tool_calls": [raw]}
    return Reply(json={"model": "smollm2", "choices": [{"message": message, "finish_reason": "tool_calls"}]})


def test_demo_local_shows_what_a_real_model_did(server: WireServer, tmp_path: Path) -> None:
    """A model that refunds an invented order under the approval threshold, then looks up another:
    each call and result is printed as it happens (the refund needed no approval), then the answer,
    then why. The provider is told the llama.cpp server's capabilities, as ``make demo-local`` does."""
    answer = {"model": "smollm2", "choices": [{"message": {"content": "Done."}, "finish_reason": "stop"}]}
    server.push(
        call("c1", "issue_refund", {"order_id": "Z-9", "amount": 20}),
        call("c2", "lookup_order", {"order_id": "Q-1"}),
        Reply(json=answer),
    )
    out = demo(
        tmp_path,
        PROVIDER="openai",
        OPENAI_BASE_URL=f"{server.url}/v1",
        OPENAI_API_KEY="",
        OPENAI_CAPABILITIES="llama.cpp",
        MODEL="smollm2",
    )
    live = [line for line in out.splitlines() if line.startswith(("  -> ", "  <- ", "  ?? ", "  ok "))]
    assert live == [
        '  -> issue_refund({"order_id": "Z-9", "amount": 20})',
        "  <- issue_refund: refunded 20.00 on Z-9",
        '  -> lookup_order({"order_id": "Q-1"})',
        "  <- lookup_order: no order Q-1",
    ]
    assert "== ANSWER (no call needed an approval) ==\nDone.\n" in out
    assert out.rstrip().splitlines()[-1].startswith("  - route#")  # the why story closes the demo
    assert all(seen.body["tool_choice"] == "auto" for seen in server.seen[:2])
