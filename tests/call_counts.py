"""Call budgets: how many Python calls a piece of code makes into given modules (``sys.setprofile``).

A count does not depend on the machine's load, so a test can pin that work is left undone
where a timed test could not.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any


def module_files(names: Iterable[str]) -> set[str]:
    """The real paths of the (imported) modules ``names``."""
    return {os.path.realpath(sys.modules[name].__file__ or "") for name in names}


def profiled(run: Callable[[], Any], profile: Callable[[Any, str, Any], None]) -> None:
    """``run()`` with ``profile(frame, event, arg)`` as the interpreter's profile hook."""
    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)


def calls_into(files: set[str], run: Callable[[], Any]) -> Counter[str]:
    """The Python calls ``run()`` makes into code of ``files``, by function name."""
    calls: Counter[str] = Counter()

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event == "call" and os.path.realpath(frame.f_code.co_filename) in files:
            calls[frame.f_code.co_name] += 1

    profiled(run, profile)
    return calls


def calls_of(code: Any, run: Callable[[], Any]) -> int:
    """How many times ``run()`` enters the one Python function whose code object is ``code``
    (for a function whose file cannot be named, such as ``ABCMeta.__instancecheck__``)."""
    count = [0]

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event == "call" and frame.f_code is code:
            count[0] += 1

    profiled(run, profile)
    return count[0]
