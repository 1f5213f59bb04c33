"""One background event loop per MCP connection: the sync/async bridge.

Law: an MCP session (its subprocess or HTTP stream) is entered and left in ONE task of
ONE loop, which lives in a daemon thread for as long as the connection is open. A run of
the agent — sync ``agent.run`` (a fresh loop per run) or ``await agent.arun`` in the
caller's loop — reaches it through ``call``, which never blocks the caller's loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """A daemon thread running an event loop until ``stop``."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()
        self.loop.close()

    def submit(self, make: Callable[[], Awaitable[T]]) -> concurrent.futures.Future[T]:
        """Run ``make()`` on the background loop; a concurrent future of its result."""

        async def run() -> T:
            return await make()

        return asyncio.run_coroutine_threadsafe(run(), self.loop)

    async def call(self, make: Callable[[], Awaitable[T]]) -> T:
        """Await ``make()`` run on the background loop, from any other loop."""
        return await asyncio.wrap_future(self.submit(make))

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the loop and wait for the thread (idempotent)."""
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout)


def wait(future: concurrent.futures.Future[Any], timeout: float | None) -> Any:
    """The future's result in synchronous code (re-raising what it raised)."""
    return future.result(timeout)
