"""The cycle collector during a run: young collections only, so a stage costs the same at
stage 30,000 as at stage 100.

Law: while any run is in progress in the process, the collector's oldest generation is not
collected automatically (its threshold is raised; generations 0 and 1 run as before, so a
cycle a stage makes and drops is still freed at once). A run's record grows by a few
objects per commit and holds no cycle; with the default thresholds every full collection
walks the whole growing log, which made a stage of a 10,000-stage run cost twice a stage
of a 100-stage one. When the last run in progress ends, the thresholds are given back as
they were (nested and concurrent runs, in any thread, count in and out under one lock), and
the full collections resume. Nothing a run records changes.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

#: the oldest generation's threshold while runs are in progress (out of reach: no automatic full collection)
HELD_THRESHOLD = 1 << 30

_lock = threading.Lock()
_active = 0
_saved: tuple[int, int, int] | None = None


@contextlib.contextmanager
def young_collections_only() -> Iterator[None]:
    """Hold the oldest generation's automatic collections for the duration (see the module law)."""
    global _active, _saved
    with _lock:
        if _active == 0:
            _saved = gc.get_threshold()
            gc.set_threshold(_saved[0], _saved[1], HELD_THRESHOLD)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0 and _saved is not None:
                if gc.get_threshold()[2] == HELD_THRESHOLD:  # nobody changed them meanwhile: give them back
                    gc.set_threshold(*_saved)
                _saved = None
