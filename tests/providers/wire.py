"""A tiny real HTTP server on 127.0.0.1 that speaks whatever the test scripts.

Law of this file: the providers under test talk to a real socket, never to a mock
transport — each test queues the exact replies (JSON, server-sent events, NDJSON, a
status, or a dropped connection) and afterwards reads back the exact requests that
arrived (path, headers, parsed JSON body). Nothing here reaches beyond 127.0.0.1.
"""

from __future__ import annotations

import json
import select
import socket
import sys
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs


@attrs.frozen
class Reply:
    """One scripted answer: a JSON body, an event stream, NDJSON lines, or a drop."""

    status: int = 200
    json: Any = None
    sse: tuple[str, ...] = ()  # raw SSE blocks, written and flushed one by one
    ndjson: tuple[Any, ...] = ()  # objects written one per line
    body: bytes | None = None  # raw bytes, for malformed answers
    headers: tuple[tuple[str, str], ...] = ()
    drop: bool = False  # close the connection without answering
    delay: float = 0.0  # seconds to wait before answering; a client that hangs up meanwhile gets nothing


@attrs.frozen
class Seen:
    """One request as it arrived on the wire."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


def sse(*events: Any, event_names: bool = False) -> tuple[str, ...]:
    """SSE blocks for JSON events (``data: {...}``), with ``event: <type>`` lines if asked."""
    blocks = []
    for item in events:
        data = item if isinstance(item, str) else json.dumps(item)
        prefix = f"event: {item['type']}\n" if event_names and isinstance(item, dict) else ""
        blocks.append(f"{prefix}data: {data}\n\n")
    return tuple(blocks)


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (timeout tests) leaves a broken pipe behind; that is expected.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class WireServer:
    """Queue replies with :meth:`push`; read requests from :attr:`seen`."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        #: paths of requests whose client closed the connection while the server was waiting
        self.hung_up: list[str] = []
        self._hangup = threading.Event()
        self._replies: deque[Reply] = deque()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                server.seen.append(
                    Seen(
                        method="POST",
                        path=self.path,
                        headers={k.lower(): v for k, v in self.headers.items()},
                        body=json.loads(raw) if raw else None,
                    )
                )
                reply = server._replies.popleft() if server._replies else Reply(status=599)
                if reply.delay and server._client_hung_up(self.connection, reply.delay):
                    server.hung_up.append(self.path)
                    server._hangup.set()
                    self.close_connection = True
                    return
                if reply.drop:
                    self.close_connection = True
                    return
                self.send_response(reply.status)
                for name, value in reply.headers:
                    self.send_header(name, value)
                if reply.sse or reply.ndjson:
                    kind = "text/event-stream" if reply.sse else "application/x-ndjson"
                    self.send_header("content-type", kind)
                    self.end_headers()
                    chunks = reply.sse or tuple(json.dumps(o) + "\n" for o in reply.ndjson)
                    for chunk in chunks:
                        self.wfile.write(chunk.encode())
                        self.wfile.flush()
                    return
                data = reply.body if reply.body is not None else json.dumps(reply.json).encode()
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        # A short poll interval keeps shutdown (once per test) from costing half a second.
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self._thread.start()

    @staticmethod
    def _client_hung_up(conn: socket.socket, delay: float) -> bool:
        """Wait ``delay`` seconds; True as soon as the client closes its end (EOF)."""
        deadline = time.monotonic() + delay
        while (left := deadline - time.monotonic()) > 0:
            readable, _, _ = select.select([conn], [], [], left)
            if readable:
                try:
                    if not conn.recv(1, socket.MSG_PEEK):
                        return True
                except ConnectionError:
                    return True
                time.sleep(min(0.01, max(left, 0)))  # unread bytes: keep waiting, without spinning
        return False

    def wait_for_hangup(self, timeout: float = 2.0) -> bool:
        """True once some client hung up on a delayed reply (waits up to ``timeout`` seconds)."""
        return self._hangup.wait(timeout)

    def push(self, *replies: Reply) -> None:
        """Queue replies, answered in order, one per request."""
        self._replies.extend(replies)

    def close(self) -> None:
        """Stop serving and free the port."""
        self._httpd.shutdown()
        self._httpd.server_close()


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Sleeps:
    """An injectable ``sleep`` that records the delays instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
