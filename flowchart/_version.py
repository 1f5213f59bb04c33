"""The package version, from one source: the installed distribution's metadata (pyproject.toml).

Law of this file: nothing in the code repeats the version number. ``pyproject.toml``
holds it; the installed ``pyfootprint`` distribution carries it; ``flowchart.__version__``,
``flowchart --version``, ``agent --version`` and a trace's ``library_version`` read it
here. In a source tree that was never installed there is no metadata, and the version is
``0+unknown`` rather than a number that might be wrong. This is a bottom-layer module: it
imports nothing from the package.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "pyfootprint"

try:
    __version__ = version(DISTRIBUTION)
except PackageNotFoundError:  # pragma: no cover - a checkout used without `pip install -e .`
    __version__ = "0+unknown"
