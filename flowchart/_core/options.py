"""``RunOptions``: how one run is run — one value instead of the same keywords threaded everywhere.

Law: a run's options are checked once, when the value is made, with an error naming the
option and what it takes; everything after that (the chart's entry points, the engine's
entry, the run's state, the store runner, the stream plan) passes the same frozen value
on and never checks again. The public entry points keep their keyword signatures
(``chart.run(input, env=..., recorders=..., ...)``) and build the value from them.

Adding an option (``retry``, for instance) is: one field here with its default and its
check in ``__attrs_post_init__``, one keyword on each public entry point that takes it
(``FlowChart.run`` / ``arun`` / ... in ``flowchart/_chart/chart.py``; ``STREAM_OPTIONS`` in
``flowchart/stream.py`` when streams take it too), and the engine reads
``run.options.<name>`` (``flowchart/_engine/run_state.py`` keeps the value). Nothing in
between changes: the store runner and the stream plan pass the value through whole.

A bottom-layer module: it needs only ``redaction``, ``retry`` and ``run_ids`` (for the checks).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from flowchart._core.redaction import Redaction
from flowchart._core.retry import Retry
from flowchart._core.run_ids import check_run_id

if TYPE_CHECKING:
    from flowchart._core.cancel import CancelToken
    from flowchart.store.protocol import RunStore

__all__ = ["DEFAULT_MAX_ITERATIONS", "STREAM_OPTIONS", "RunOptions", "stream_options"]

#: the per-target loop cap when ``max_iterations`` is not given (footprintjs's default)
DEFAULT_MAX_ITERATIONS = 1000


def _recorders(value: Iterable[Any]) -> tuple[Any, ...]:
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise TypeError(f"recorders must be a list of recorders, got {type(value).__name__}")
    return tuple(value)


@attrs.frozen
class RunOptions:
    """The options of one run (or one resume).

    ``env``: an environment the stages read through ``ctx.env``, never recorded.
    ``recorders``: observers (any objects with some hooks of ``flowchart.events``).
    ``max_iterations``: the per-target loop cap. ``timeout``: seconds for the whole run.
    ``redaction``: what to hide in every record. ``cancel``: a ``CancelToken``.
    ``store``: a run store that records the run (``None``: the run is not stored).
    ``run_id``: the run's id (a fresh one when ``None``): the stored run's id with ``store``,
    else the id the run reports (``ctx.run_id``, ``result.run_id``); checked against the one
    run-id rule (``flowchart._core.run_ids``) here, before anything runs or is written.
    ``retry``: the default ``Retry`` of every stage without its own (docs/durable.md).
    ``reuse``: a fork only — stages whose recorded reads did not change are taken from the
    record instead of run (``flowchart._engine.reusing``).
    Later issues add their options here: see the module docstring for how.
    """

    env: Mapping[str, Any] | None = None
    recorders: tuple[Any, ...] = attrs.field(default=(), converter=_recorders)
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    timeout: float | None = None
    redaction: Redaction | None = None
    cancel: CancelToken | None = None
    store: RunStore | None = None
    run_id: str | None = None
    retry: Retry | None = None
    #: a fork only: take from the record every stage whose reads did not change (``engine.reusing``)
    reuse: bool = False

    def __attrs_post_init__(self) -> None:
        count = self.max_iterations
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ValueError(f"max_iterations must be a positive integer, got {count!r}")
        timeout = self.timeout
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if self.cancel is not None and not callable(getattr(self.cancel, "check", None)):
            raise TypeError(f"cancel must be a flowchart.CancelToken, got {type(self.cancel).__name__}")
        if self.env is not None and not isinstance(self.env, Mapping):
            raise TypeError(f"env must be a dict or None, got {type(self.env).__name__}")
        if self.redaction is not None and not isinstance(self.redaction, Redaction):
            raise TypeError(f"redaction must be a flowchart.Redaction or None, got {type(self.redaction).__name__}")
        if self.run_id is not None and (not isinstance(self.run_id, str) or not self.run_id):
            raise TypeError(f"run_id must be a non-empty string or None, got {self.run_id!r}")
        if self.run_id is not None:
            check_run_id(self.run_id)
        if self.retry is not None and not isinstance(self.retry, Retry):
            raise TypeError(
                f"retry must be a flowchart.Retry (e.g. Retry(attempts=3)), got {type(self.retry).__name__}"
            )
        if self.store is not None and not all(callable(getattr(self.store, m, None)) for m in ("create", "get")):
            raise TypeError(f"store must be a run store (flowchart.store.RunStore), got {type(self.store).__name__}")

    def but(self, **changes: Any) -> RunOptions:
        """These options with ``changes`` (checked again): ``options.but(store=None)``."""
        return attrs.evolve(self, **changes)


#: the keyword options ``chart.stream()`` passes on to the run (a stream cancels through its consumer)
STREAM_OPTIONS = frozenset({"env", "recorders", "max_iterations", "timeout", "redaction", "retry"})


def stream_options(given: Mapping[str, Any], store: Any = None, run_id: str | None = None) -> RunOptions:
    """The ``RunOptions`` of ``chart.stream(store=..., run_id=..., **given)``; an unknown keyword is refused."""
    unknown = sorted(set(given) - STREAM_OPTIONS)
    if unknown:
        raise TypeError(
            f"chart.stream() got unknown run option(s) {', '.join(unknown)}: "
            f"expected {', '.join(sorted(STREAM_OPTIONS))}, modes, store or run_id"
        )
    return RunOptions(store=store, run_id=run_id, **given)
