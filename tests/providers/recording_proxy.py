"""A recording proxy on 127.0.0.1: what went over the wire between a provider and a real server.

Law of this file: the proxy forwards each POST unchanged to the upstream server (the real
llama.cpp server, also on 127.0.0.1) and streams the answer back as it arrives, recording
the exact request body, the status, the raw answer bytes and how long it took; when the
client hangs up mid-answer it records that and closes the upstream connection. It never
rewrites a byte, so the tests can assert both what the provider sent and how it parsed
what came back.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import attrs


@attrs.define
class Exchange:
    """One request and its answer, as they crossed the proxy."""

    path: str
    body: Any
    status: int = 0
    raw: bytes = b""
    seconds: float = 0.0
    client_hung_up: bool = False
    done: threading.Event = attrs.field(factory=threading.Event, repr=False, eq=False)

    @property
    def json(self) -> Any:
        """The answer parsed as one JSON document."""
        return json.loads(self.raw)

    @property
    def sse_data(self) -> list[Any]:
        """A streamed answer's ``data:`` payloads (JSON parsed; ``[DONE]`` kept as the string)."""
        out: list[Any] = []
        for line in self.raw.decode().splitlines():
            if line.startswith("data:"):
                data = line[5:].strip()
                out.append(data if data == "[DONE]" else json.loads(data))
        return out


class RecordingProxy:
    """Forward to ``upstream`` (``http://127.0.0.1:port``); read :attr:`exchanges` afterwards."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        assert parts.hostname in ("127.0.0.1", "localhost"), "the proxy only forwards to this machine"
        self.exchanges: list[Exchange] = []
        self.hung_up = threading.Event()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._forward(None)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self._forward(self.rfile.read(length))

            def _forward(self, raw: bytes | None) -> None:
                exchange = Exchange(path=self.path, body=json.loads(raw) if raw else None)
                proxy.exchanges.append(exchange)
                started = time.monotonic()
                upstream_conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=600)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                upstream_conn.request(self.command, self.path, body=raw, headers=headers)
                answer = upstream_conn.getresponse()
                exchange.status = answer.status
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in ("transfer-encoding", "content-length", "connection", "server", "date"):
                        self.send_header(name, value)
                self.end_headers()  # HTTP/1.0: the body ends when the connection closes
                try:
                    while chunk := answer.read1(65536):
                        exchange.raw += chunk  # recorded before the client can act on it
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    exchange.client_hung_up = True
                    proxy.hung_up.set()
                finally:
                    upstream_conn.close()
                    exchange.seconds = time.monotonic() - started
                    exchange.done.set()
                    self.close_connection = True

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def take(self, timeout: float = 120.0) -> list[Exchange]:
        """The exchanges so far (each finished: its answer fully read), cleared for the next test."""
        taken, self.exchanges = self.exchanges, []
        for exchange in taken:
            exchange.done.wait(timeout)
        self.hung_up.clear()
        return taken

    def close(self) -> None:
        """Stop forwarding."""
        self._httpd.shutdown()
        self._httpd.server_close()
