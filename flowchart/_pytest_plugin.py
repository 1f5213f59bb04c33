"""The pytest entry point (``pytest11``) of ``flowchart.testing``'s replay plugin.

Law: with pyfootprint installed, every pytest run knows ``--replay DIR``, ``--replay-target``
and the ``replay_run`` fixture — when syrupy is installed too (``flowchart.testing`` needs it:
the ``[testing]`` extra). Without syrupy this module defines nothing, so pytest starts as it
would without pyfootprint. Registering ``flowchart.testing`` as well (``-p``) adds nothing twice.
"""

from __future__ import annotations

import importlib.util

if importlib.util.find_spec("syrupy") is not None:
    from flowchart.testing import pytest_addoption, pytest_generate_tests, replay_run

    __all__ = ["pytest_addoption", "pytest_generate_tests", "replay_run"]
