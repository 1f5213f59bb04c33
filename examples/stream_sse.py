"""Serve an agent as server-sent events, with the standard library only.

``GET /chat?message=...`` answers ``text/event-stream``: one SSE message per stream event
(``event: <kind>``, ``id: <n>``, ``data: <event.to_dict() as JSON>``), the model's tokens
as they come, the tool calls and results, and last the ``final`` event with the answer.
A client that hangs up mid-answer ends the loop, and leaving the ``with`` block cancels
the run (a stored run would be marked so).

The agent here runs offline on the scripted provider (one fresh agent per request, as a
scripted provider is used up by one run); put a real provider in ``make_agent`` to serve
a real model. Run it with ``python examples/stream_sse.py`` and open
``http://127.0.0.1:8765/chat?message=Weather%20in%20Paris%3F`` (or ``curl -N`` it).
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from agent import Agent, tool
from agent.providers import scripted

#: the kinds a chat UI needs: tokens and model calls, tool calls and results (final always comes)
MODES = ("messages", "tools")


@tool
def weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city's name, e.g. "Paris".
    """
    return f"{city}: 18°C, light rain"


def make_agent() -> Agent:
    """A weather agent on a scripted model that streams its answer word by word."""
    provider = scripted(
        [
            {"content": "", "tool_calls": [{"id": "call-1", "name": "weather", "args": {"city": "Paris"}}]},
            "It is 18°C with light rain in Paris: take an umbrella.",
        ]
    )
    return Agent.create(provider=provider, model="scripted", stream=True).tool(weather).build()


def sse(event_id: int, kind: str, data: dict[str, Any]) -> bytes:
    """One server-sent-events message."""
    return f"id: {event_id}\nevent: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


class ChatHandler(BaseHTTPRequestHandler):
    """``GET /chat?message=...`` streams one agent turn as SSE."""

    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        url = urlparse(self.path)
        message = parse_qs(url.query).get("message", [""])[0]
        if url.path != "/chat" or not message.strip():
            self.send_error(400, "use GET /chat?message=<your question>")
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        with make_agent().stream(message, modes=MODES) as events:
            for number, event in enumerate(events):
                try:
                    self.wfile.write(sse(number, event.kind, event.to_dict()))
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    break  # the client left: leaving the with block cancels the run

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: no access log on stderr."""


def serve(host: str = "127.0.0.1", port: int = 8765) -> ThreadingHTTPServer:
    """A server bound to ``host:port`` (port 0: any free port); call ``serve_forever()`` on it."""
    return ThreadingHTTPServer((host, port), ChatHandler)


def main() -> None:
    server = serve(port=int(sys.argv[1]) if len(sys.argv) > 1 else 8765)
    host, port = server.server_address[:2]
    print(f"serving SSE on http://{host}:{port}/chat?message=Weather%20in%20Paris%3F (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
