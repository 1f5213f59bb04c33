"""MCP results of a redacted agent run hide what the run hides (the canary probe, served over MCP).

The probe agent (``record_probe.probe_agent``: the secret card in the question, a tool
argument, the model's texts and the answer, under a rule that hides them) is served with
``mcp_server`` and called in-process through the MCP SDK (``FastMCP.call_tool``): the first
call pauses for a check-in ("needs a person"), a person approves through the store, and the
caller asks again with the run id. The reply is a reader of the stored run, so it shows the
answer as the run's shown record has it — as ``agent runs show`` and ``agent runs approve``
print it — never the secret.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from record_probe import SECRET, leaking, probe_agent

pytest.importorskip("mcp")

from agent.mcp import mcp_server
from flowchart.store import MemoryStore
from governance import check_in_approved


def _call(server: Any, arguments: dict[str, Any]) -> str:
    content = asyncio.run(server.mcp.call_tool("pay", arguments))
    blocks = content[0] if isinstance(content, tuple) else content
    return "".join(block.text for block in blocks)


def test_no_mcp_result_of_a_redacted_agent_run_shows_a_hidden_value() -> None:
    """The "needs a person" reply and the stored run's answer asked for again with ``run_id``:
    ``REDACTED`` where the rule hides ``final_content`` (before, the raw answer, the secret in it)."""
    store = MemoryStore()
    agent = probe_agent(store, turns=1)
    server = mcp_server(agent, name="pay")
    first = _call(server, {"message": f"pay with {SECRET}"})
    found = re.search(r"Run id: (\S+)\.", first)
    assert first.startswith("needs a person") and found is not None, first
    run_id = found.group(1)
    request = store.get(run_id)
    paused = agent.resume_run  # the person's approval, through the store
    check_in = re.search(r"\(check-in (cki_[0-9a-f]+)\)", first)
    assert check_in is not None
    paused(run_id, check_in_approved(request={"id": check_in.group(1)}, by="alice"))
    again = _call(server, {"run_id": run_id})
    assert again == "REDACTED"
    assert leaking([("mcp first reply", first), ("mcp answer", again)]) == []
    assert store.get(run_id).output == f"done, card {SECRET}" and request.status == "paused"
