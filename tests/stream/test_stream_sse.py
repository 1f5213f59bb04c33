"""``examples/stream_sse.py``: an agent served as server-sent events (standard library only),
read with a real HTTP client (httpx) over 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from examples import stream_sse


@pytest.fixture
def base_url() -> Iterator[str]:
    """The example's server on a free 127.0.0.1 port, serving in a thread for one test."""
    server = stream_sse.serve(port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    host, port = server.server_address[:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def read_sse(response: httpx.Response) -> list[dict[str, Any]]:
    """Parse an SSE body into messages ``{"id", "event", "data"}`` (data decoded from JSON)."""
    messages: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for line in response.iter_lines():
        if not line:
            if current:
                messages.append(current)
                current = {}
            continue
        field, _, value = line.partition(": ")
        current[field] = json.loads(value) if field == "data" else value
    if current:
        messages.append(current)
    return messages


def test_the_sse_endpoint_streams_tokens_tools_and_the_final_answer(base_url: str) -> None:
    """GET /chat streams text/event-stream: the tool call and result, the answer's tokens, the
    model calls, and last a final event whose output is the answer the tokens spell."""
    with (
        httpx.Client(timeout=10) as client,
        client.stream("GET", f"{base_url}/chat", params={"message": "Weather in Paris?"}) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
        messages = read_sse(response)
    kinds = [m["event"] for m in messages]
    assert kinds[:3] == ["model_call", "tool_call", "tool_result"]
    assert kinds[-1] == "final"
    assert [m["id"] for m in messages] == [str(n) for n in range(len(messages))]
    assert all(m["data"]["kind"] == m["event"] for m in messages)
    tokens = "".join(m["data"]["text"] for m in messages if m["event"] == "token")
    final = messages[-1]["data"]
    assert final["paused"] is False
    assert tokens == final["output"] == "It is 18°C with light rain in Paris: take an umbrella."
    assert messages[2]["data"]["result"] == "Paris: 18°C, light rain"


def test_a_request_without_a_message_is_a_400(base_url: str) -> None:
    """The endpoint refuses a missing message with a 400 naming the usage."""
    response = httpx.get(f"{base_url}/chat", timeout=10)
    assert response.status_code == 400
    assert "use GET /chat?message=" in response.text
