"""The run's state: bookkeeping shared by the top-level traversal and every subflow traversal.

``Run`` holds the run's ``RunOptions`` (``run.options``) and what changes as it goes
(counters, visit and loop counts, subflow results). Runs are started in ``entry.py``.

Law: one execution counter per run, shared with subflows, so every runtime stage id
``[subflow/]stage_id#N`` is unique across the run — and across a pause, because a
resumed run continues the counter, the visit counts and the loop counts from the
checkpoint.
"""

from __future__ import annotations

import copy
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs

from flowchart._core.errors import RunTimeoutError
from flowchart._core.options import RunOptions
from flowchart._core.redaction import NO_REDACTION
from flowchart._engine.observers import Observers


@attrs.frozen
class SubflowResult:
    """What a subflow mount left: its final state, its own commit log and its initial state.

    ``subflow_name`` is the mount's name (footprintjs ``subflowName``).
    """

    mount_id: str
    runtime_stage_id: str
    state: dict[str, Any]
    commit_log: tuple[Any, ...]
    initial: dict[str, Any]
    output: Any = None
    subflow_name: str = ""


class SubflowResults(Mapping[str, SubflowResult]):
    """A run's subflow executions: ONE entry per execution, keyed by the mount's runtime id
    (``"sf#3"``), in the order they ended. A mount's path (``"sf"``, ``"outer/inner"`` —
    footprintjs's ``subflowResults`` key) also finds its latest execution, as footprintjs's
    map holds it, without being an entry of its own: ``len``, iteration, ``keys``, ``items``
    and ``values`` list each execution once. A map's children are found by runtime id only."""

    __slots__ = ("_latest", "_runs")

    def __init__(self, results: Iterable[SubflowResult] = (), *, latest: Mapping[str, str] | None = None) -> None:
        self._runs: dict[str, SubflowResult] = {}
        #: mount path -> the runtime id of its latest execution
        self._latest: dict[str, str] = dict(latest or {})
        for result in results:
            self._runs[result.runtime_stage_id] = result

    def add(self, result: SubflowResult, *, by_path: bool = True) -> None:
        """Record one execution; ``by_path``: its mount path now finds it too."""
        self._runs[result.runtime_stage_id] = result
        if by_path:
            self._latest[result.mount_id] = result.runtime_stage_id

    def paths(self) -> list[str]:
        """Every mount path that found an execution, in the order each first ended."""
        return list(self._latest)

    def replaced(self, changed: Mapping[str, SubflowResult]) -> SubflowResults:
        """A copy with the executions of ``changed`` (runtime id -> result) replaced."""
        return SubflowResults((changed.get(rid, sub) for rid, sub in self._runs.items()), latest=self._latest)

    def __getitem__(self, key: str) -> SubflowResult:
        found = self._runs.get(key)
        if found is None:
            latest = self._latest.get(key)
            if latest is None:
                raise KeyError(key)
            found = self._runs[latest]
        return found

    def __contains__(self, key: object) -> bool:
        return key in self._runs or key in self._latest

    def __iter__(self) -> Iterator[str]:
        return iter(self._runs)

    def __len__(self) -> int:
        return len(self._runs)

    def __repr__(self) -> str:
        return f"SubflowResults({self._runs!r})"


class Run:
    """The state of one run (or one resume) that every level of the traversal shares."""

    __slots__ = (
        "cancel",
        "concurrent",
        "counter",
        "current_stage",
        "deadline",
        "env",
        "failed_before",
        "failure_site",
        "loop_counts",
        "map_finished",
        "max_iterations",
        "observers",
        "options",
        "recovery",
        "redacted_paths",
        "redacting",
        "redaction",
        "reported_errors",
        "retry",
        "retry_log",
        "reuse",
        "run_id",
        "subflow_results",
        "timeout",
        "visit_counts",
    )

    def __init__(
        self,
        options: RunOptions,
        *,
        observers: Observers,
        concurrent: bool = False,
        counter: int = 0,
        visit_counts: Mapping[str, int] | None = None,
        loop_counts: Mapping[str, int] | None = None,
    ) -> None:
        #: the run's options, checked when they were made (``flowchart._core.options``)
        self.options = options
        # a caller-chosen id names a run that is not stored; a stored run's id is the store's
        self.run_id = options.run_id if options.run_id is not None and options.store is None else uuid.uuid4().hex
        self.observers = observers
        self.env: Mapping[str, Any] = dict(options.env or {})
        self.max_iterations = options.max_iterations
        self.timeout = options.timeout
        self.deadline = None if options.timeout is None else time.monotonic() + options.timeout
        #: the run's ``CancelToken`` (``None``: not cancellable, nothing checked)
        self.cancel = options.cancel
        self.redaction = options.redaction or NO_REDACTION
        #: ``redaction.active``, asked once per run rather than per stage
        self.redacting = self.redaction.active
        self.concurrent = concurrent
        self.counter = counter
        self.visit_counts: dict[str, int] = dict(visit_counts or {})
        self.loop_counts: dict[str, int] = dict(loop_counts or {})
        self.subflow_results = SubflowResults()
        self.redacted_paths: dict[str, None] = {}
        self.current_stage = ""
        #: errors already reported to recorders (an error is reported once, where it arose):
        #: ``id(error)`` → the (stage id, runtime id) of the innermost stage that raised it
        self.reported_errors: dict[int, tuple[str, str]] = {}
        #: the run-wide default ``Retry`` (``run(retry=...)``); a stage's own policy wins
        self.retry = options.retry
        #: failed attempts per runtime id, waiting for that execution's commit (``engine.retrying``)
        self.retry_log: dict[str, tuple[Any, ...]] = {}
        #: where the run failed, built while the error unwinds (``engine.retrying.FailureSite``)
        self.failure_site: Any = None
        #: a failed execution to re-run on resume: its writes to undo (``pause.Recovery``)
        self.recovery: Any = None
        #: while redacting: per execution whose stage call raised, the real values its hidden keys
        #: had before its commit (the log holds placeholders for them; each attempt of a retried
        #: stage replaces the last one's), so that undoing a failed commit restores real values
        self.failed_before: dict[str, dict[str, Any]] = {}
        #: per execution of a map that failed, its children that finished (index → result), kept
        #: in the failure's ``Recovery.finished`` so a resume runs only the others
        self.map_finished: dict[str, dict[str, Any]] = {}
        #: a reuse-fork's plan (``engine.reusing.ReusePlan``); ``None`` for every other run
        self.reuse: Any = None

    def check_deadline(self, stage_id: str) -> None:
        """Raise ``RunTimeoutError`` when ``run(timeout=...)`` has expired before ``stage_id``."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise RunTimeoutError(f"Run timed out after {self.timeout} s before stage '{stage_id}'", stage_id=stage_id)


class ScopedRun(Run):
    """A subflow's view of the run when its mount brings options of its own (``add_agent``): the
    rule inside it (``Redaction.within`` its path), its loop limit and its deadline. Everything
    else is the shared run's: the containers (counts, subflow results, observers, ...) are the
    same objects, and what the engine reassigns as it goes (``_SHARED``: the execution counter,
    the current stage, ...) is read and written through to the shared run — so runtime ids stay
    unique across the run."""

    __slots__ = ("base",)
    base: Run

    def __init__(
        self, base: Run, redaction: Any, max_iterations: int, deadline: float | None, timeout: float | None
    ) -> None:
        object.__setattr__(self, "base", base)
        for name in Run.__slots__:
            if name not in _SHARED and hasattr(base, name):
                object.__setattr__(self, name, getattr(base, name))
        self.redaction = redaction
        self.redacting = redaction.active
        self.max_iterations = max_iterations
        self.deadline = deadline
        self.timeout = timeout

    def __copy__(self) -> ScopedRun:
        """A map child's own run (its own counter): a copy of the shared run, seen the same way."""
        return ScopedRun(copy.copy(self.base), self.redaction, self.max_iterations, self.deadline, self.timeout)


#: the run's attributes the engine reassigns while it goes: one value for the whole run
_SHARED = ("counter", "current_stage", "failure_site", "recovery", "reuse")


def _through(name: str) -> property:
    def read(self: ScopedRun) -> Any:
        return getattr(self.base, name)

    def write(self: ScopedRun, value: Any) -> None:
        setattr(self.base, name, value)

    return property(read, write)


for _name in _SHARED:
    setattr(ScopedRun, _name, _through(_name))


def root_run(run: Run) -> Run:
    """The shared run under any subflow's view of it."""
    return run.base if isinstance(run, ScopedRun) else run
