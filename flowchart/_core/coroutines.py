"""Running a run's coroutine from synchronous code: without an event loop when nothing awaits.

Law: a chart with no ``async`` stage never suspends, so its coroutine is driven to the
end directly (no loop, no thread); one that awaits gets a fresh event loop, in a helper
thread when the calling thread already runs one (a notebook, an ASGI handler) — the
helper runs in a copy of the caller's context. A bottom-layer module: it needs only
``errors``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
from collections.abc import Coroutine
from typing import Any

from flowchart._core.errors import RunError

__all__ = ["drive", "run_coroutine"]


def drive(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends (a chart with no async stage) without a loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RunError("internal: a chart without async stages suspended; please report this with the chart")


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_coroutine(make: Any, needs_loop: bool) -> Any:
    """Run ``make()``'s coroutine: directly when nothing awaits, else in a fresh event loop.

    When the calling thread already runs a loop (a notebook, a test harness) the fresh loop
    runs in a helper thread, so ``chart.run()`` works there too; ``arun`` is the way to
    share the caller's loop.
    """
    if not needs_loop:
        return drive(make(False))
    if not _loop_running():
        # outside the ``except``: an error of the run must not chain "no running event loop"
        return asyncio.run(make(True))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="flowchart-run") as pool:
        # the helper thread runs in a copy of the caller's context (its current span, its contextvars)
        return pool.submit(contextvars.copy_context().run, asyncio.run, make(True)).result()
