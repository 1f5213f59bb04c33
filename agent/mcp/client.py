"""Tools in: ``mcp_tools(command=[...])`` / ``mcp_tools(url=...)`` → the server's tools as ``Tool``s.

Laws:
- Each MCP tool becomes an ordinary ``Tool`` (its JSON Schema as ``input_schema``), so a
  call to it goes through every gate of the agent — permission, middleware, argument
  validation, check-in, the ledger, the commit log — like a tool defined in code. Its
  ``source`` is the server's name (``ToolCallInfo.source`` for middleware).
- The server lives as long as the returned ``McpTools`` (so, handed to a builder, as long
  as the agent), or until ``close()`` / the end of a ``with`` block. One connection serves
  every run: its session runs in its own loop thread (``_loop``), so sync ``agent.run``
  and ``await agent.arun`` both reach it.
- A server that cannot start, or a tool name an agent cannot offer, is an error raised by
  ``mcp_tools`` before any run, naming the server and the fix. A stdio server's stderr is
  kept in a temporary file (and written to ours when the session closes): when its process
  ends — before it answers, or later, in the middle of a call — the error says the process
  ended and quotes its last stderr lines (a missing module, a bad config), never a bare
  "Connection closed". A tool result flagged
  ``isError`` is the tool failing: the model reads the server's text, the call is marked
  as an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AsyncExitStack
from datetime import timedelta
from typing import Any

try:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
except ImportError as exc:  # without the extra: say which one to install
    raise ImportError(
        "agent.mcp needs the MCP SDK: pip install 'mcp>=1.30,<2' (in a pyfootprint checkout: pip install -e '.[mcp]')"
    ) from exc

import attrs

from agent._tools.function_tools import define_tool
from agent._tools.tools import Tool
from agent.errors import McpConnectionError, McpToolError, ToolDefinitionError

from ._loop import LoopThread, wait


class _Session:
    """The live session, owned by the loop thread (nothing here refers back to ``McpTools``)."""

    def __init__(self, where: str, errlog: Any = None) -> None:
        self.where = where
        #: a stdio server's stderr, kept to say why its process ended (``None`` over HTTP)
        self.errlog = errlog
        self.thread = LoopThread(f"mcp {where}")
        self.session: ClientSession | None = None
        self.closing: asyncio.Event | None = None
        self.done: asyncio.Future[None] | None = None
        self.closed = False

    async def open(self, transport: Any) -> tuple[str, list[Any]]:
        ready: asyncio.Future[tuple[str, list[Any]]] = asyncio.get_running_loop().create_future()
        self.closing = asyncio.Event()
        self.done = asyncio.ensure_future(self._hold(transport, ready))
        return await ready

    async def _hold(self, transport: Any, ready: asyncio.Future[tuple[str, list[Any]]]) -> None:
        """Enter the transport and the session, list the tools, then wait for ``close`` (one task)."""
        assert self.closing is not None
        try:
            async with AsyncExitStack() as stack:
                streams = await stack.enter_async_context(transport)
                session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
                init = await session.initialize()
                tools: list[Any] = []
                cursor: str | None = None
                while True:
                    listed = await session.list_tools(cursor)
                    tools.extend(listed.tools)
                    cursor = listed.nextCursor
                    if not cursor:
                        break
                self.session = session
                ready.set_result((init.serverInfo.name, tools))
                await self.closing.wait()
        except BaseException as exc:  # after ``ready`` a failure only ends the session: calls then say so
            if not ready.done():
                ready.set_exception(McpConnectionError(f"MCP server {self.where}: {self.why_ended(exc, 'answered')}"))
        finally:
            self.session = None

    async def call(self, name: str, args: dict[str, Any], timeout: float | None) -> Any:
        if self.session is None:
            raise McpConnectionError(f"MCP server {self.where} is closed: its tools cannot be called any more")
        try:
            result = await self.session.call_tool(
                name, args, read_timeout_seconds=timedelta(seconds=timeout) if timeout else None
            )
        except Exception as exc:
            said = self.stderr_tail()
            if said is None and not _pipe_closed(_cause(exc)):
                raise
            raise McpConnectionError(f"MCP server {self.where}: {self.why_ended(exc, 'replied to {name}')}") from None
        return _result_value(result)

    def stderr_tail(self, lines: int = 3) -> str | None:
        """The last lines the server process wrote on stderr (``None``: none, or not stdio)."""
        log = self.errlog
        if log is None:
            return None
        with contextlib.suppress(OSError, ValueError):
            log.flush()
            log.seek(0)
            said = [line.strip() for line in log.read()[-4000:].splitlines() if line.strip()]
            log.seek(0, 2)
            return " | ".join(said[-lines:]) or None
        return None

    def why_ended(self, exc: BaseException, before: str) -> str:
        """The failure, in words: a closed connection of a stdio server is its process ending."""
        cause = _cause(exc)
        if self.errlog is None or not _pipe_closed(cause):
            return cause
        said = self.stderr_tail()
        told = f"; its last words on stderr: {said}" if said else " (it wrote nothing on stderr)"
        return f"the server process ended before it {before.replace('{name}', 'the call')}{told}"

    def close(self) -> None:
        self.closed = True
        if self.closing is not None:
            closing, done = self.closing, self.done

            async def finish() -> None:
                closing.set()
                if done is not None:
                    await asyncio.wait({done}, timeout=10)

            with contextlib.suppress(Exception):  # a session that died already has nothing to close
                wait(self.thread.submit(finish), 15)
            self.closing = None
        self.thread.stop()
        if self.errlog is not None:
            with contextlib.suppress(OSError):
                self.errlog.close()


class _TeeLog:
    """A stdio server's stderr: a temporary file the process writes to, read back on failure."""

    def __init__(self) -> None:
        # owned by this object for the session's life, closed by ``close`` (no ``with`` block spans it)
        self.file = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115

    def flush(self) -> None:
        self.file.flush()

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.file.seek(offset, whence)

    def read(self) -> str:
        return self.file.read()

    def close(self) -> None:
        self.file.seek(0)
        text = self.file.read()
        self.file.close()
        if text and sys.stderr is not None:  # what the server said is the operator's too
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write(text)


#: how a stdio server's end reaches the client: the session's own words, or anyio's stream errors
#: when the client wrote to (or read from) the pipe of a process that had already exited
_CLOSED = ("Connection closed", "BrokenResourceError", "ClosedResourceError", "EndOfStream")


def _pipe_closed(cause: str) -> bool:
    """True when ``cause`` (``_cause``'s words) says the server's pipe is gone."""
    return any(word in cause for word in _CLOSED)


def _cause(exc: BaseException) -> str:
    """The innermost useful error of an (exception-group-wrapped) failure."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _result_value(result: Any) -> Any:
    """What the model reads: the text blocks joined (structured content when there is no text)."""
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind}: {getattr(block, 'mimeType', '')}]")
        elif kind == "resource_link":
            parts.append(f"[resource: {block.uri}]")
        elif kind == "resource":
            parts.append(getattr(block.resource, "text", None) or f"[resource: {block.resource.uri}]")
    text = "\n".join(parts)
    if result.isError:
        raise McpToolError(text or "the MCP tool reported an error")
    if not parts and result.structuredContent is not None:
        return dict(result.structuredContent)
    return text


class McpTools(list[Tool]):
    """The tools of one MCP server (a list of ``Tool``), and the connection that serves them.

    ``name`` is the server's name (every tool's ``source``). ``close()`` ends the session
    and the server process; so does the end of a ``with`` block, and so does dropping the
    last reference (the agent that holds the tools).
    """

    def __init__(self, tools: list[Tool], name: str, session: _Session) -> None:
        super().__init__(tools)
        self.name = name
        self._session = session
        self._finalizer = weakref.finalize(self, session.close)

    def close(self) -> None:
        """End the session and stop the server (idempotent)."""
        self._finalizer()

    @property
    def closed(self) -> bool:
        """True once ``close()`` ran."""
        return not self._finalizer.alive

    def __enter__(self) -> McpTools:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<McpTools {self.name!r}: {', '.join(t.name for t in self)}>"


def mcp_tools(
    *,
    command: Sequence[str] | None = None,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    headers: Mapping[str, str] | None = None,
    name: str | None = None,
    prefix: str = "",
    timeout: float | None = 60.0,
    check_in: Any = None,
) -> McpTools:
    """Connect to an MCP server and return its tools.

    ``command=[program, *args]`` starts the server as a subprocess over stdio (``env``,
    ``cwd``); ``url=`` connects over streamable HTTP (``headers``). ``name`` overrides the
    server's own name as the tools' ``source``; ``prefix`` is put before every tool name
    (two servers with a ``search`` tool); ``timeout`` bounds each call in seconds;
    ``check_in`` is given to every tool (``"always"`` or a predicate).
    """
    if (command is None) == (url is None):
        raise ValueError("mcp_tools: pass exactly one of command=[program, *args] (stdio) or url='http://…' (HTTP)")
    if command is not None:
        if isinstance(command, str) or not command or not all(isinstance(p, str) and p for p in command):
            raise ValueError(
                f"mcp_tools(command=...): expected a list of non-empty strings [program, *args], got {command!r}"
            )
        where = f"'{command[0]}'"
        errlog: Any = _TeeLog()
        transport: Any = stdio_client(
            StdioServerParameters(
                command=command[0], args=list(command[1:]), env=dict(env) if env is not None else None, cwd=cwd
            ),
            errlog=errlog.file,
        )
    else:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"mcp_tools(url=...): expected an http:// or https:// URL, got {url!r}")
        where = url
        errlog = None
        transport = _http_transport(url, dict(headers or {}))
    session = _Session(where, errlog)
    try:
        server_name, listed = wait(session.thread.submit(lambda: session.open(transport)), timeout)
    except BaseException:
        session.close()
        raise
    source = name or server_name
    owner = McpTools([], source, session)
    try:
        owner.extend(_tool(owner, spec, source, prefix, timeout, check_in) for spec in listed)
    except ToolDefinitionError:
        owner.close()
        raise
    return owner


@contextlib.asynccontextmanager
async def _http_transport(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """Streamable HTTP: the SDK's client on an httpx client this session owns (and closes)."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


def _tool(owner: McpTools, spec: Any, source: str, prefix: str, timeout: float | None, check_in: Any) -> Tool:
    """One MCP tool as a ``Tool``; its ``execute`` holds ``owner``, so the server lives as long as any tool."""
    remote = spec.name

    async def execute(args: dict[str, Any], _ctx: Any) -> Any:
        session = owner._session
        if session.closed:
            raise McpConnectionError(f"MCP server {session.where} is closed: its tools cannot be called any more")
        return await session.thread.call(lambda: session.call(remote, args, timeout))

    schema = dict(spec.inputSchema or {"type": "object"})
    schema.setdefault("type", "object")
    try:
        tool = define_tool(
            name=prefix + remote,
            description=spec.description or spec.title or f"{remote} (MCP tool of {source})",
            input_schema=schema,
            execute=execute,
            check_in=check_in,
        )
    except ToolDefinitionError as exc:
        raise ToolDefinitionError(f"MCP server '{source}', tool {remote!r}: {exc}") from None
    return attrs.evolve(tool, source=source)
