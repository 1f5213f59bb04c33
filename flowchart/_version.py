"""The package version, from one source: the installed distribution's metadata (pyproject.toml).

Law of this file: nothing in the code repeats the version number. ``pyproject.toml``
holds it; the installed ``pyfootprint`` distribution carries it; ``flowchart.__version__``,
``flowchart --version``, ``agent --version`` and a trace's ``library_version`` read it
through :func:`package_version`. It is read when first asked for, not at import
(``importlib.metadata`` costs a command's start-up a fifth of its import time). In a
source tree that was never installed there is no metadata, and the version is
``0+unknown`` rather than a number that might be wrong. This is a bottom-layer module: it
imports nothing from the package.
"""

from __future__ import annotations

import functools

DISTRIBUTION = "pyfootprint"


@functools.cache
def package_version() -> str:
    """The installed ``pyfootprint`` version (``0+unknown`` when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:  # pragma: no cover - a checkout used without `pip install -e .`
        return "0+unknown"
