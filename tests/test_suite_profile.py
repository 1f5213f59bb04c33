"""The suite's hypothesis profile: a busy machine makes property tests slower, never red."""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def _slow(value: int) -> int:
    time.sleep(0.3)  # a strategy as slow as building a trace on a loaded machine
    return value


def test_the_ci_profile_has_no_deadline_and_tolerates_slow_generation() -> None:
    """The loaded profile turns off the deadline and the too_slow health check, and nothing else."""
    assert settings.default.deadline is None
    assert list(settings.default.suppress_health_check) == [HealthCheck.too_slow]


@settings(max_examples=5, database=None)
@given(value=st.integers().map(_slow))
def test_slow_generation_and_a_slow_body_pass_under_the_profile(value: int) -> None:
    """Draws of 0.3 s (too_slow after 1 s) and a 0.3 s body (deadline 200 ms) still pass."""
    time.sleep(0.3)
    assert isinstance(value, int)
