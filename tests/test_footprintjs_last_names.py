"""The last footprintjs names (issue 30): what footprintjs's own tests ask of them, in Python."""

from __future__ import annotations

import re

import pytest

from flowchart import BuildError, FlowChartBuilder, causal_chain, flow_chart, format_causal_chain


def _a(scope, ctx):  # type: ignore[no-untyped-def]
    scope.x = 1


def _b(scope, ctx):  # type: ignore[no-untyped-def]
    scope.y = scope.x + 1


def _d(scope, ctx):  # type: ignore[no-untyped-def]
    scope.z = scope.x + scope.y


def test_add_function_before_start_is_refused_in_footprintjs_words() -> None:
    """``add_function`` on a builder with no first stage raises at once, with footprintjs's
    "cursor undefined; call start() first" and the stage it could not add."""
    with pytest.raises(BuildError, match=re.escape("cursor undefined; call start() first — cannot add 'b'")):
        FlowChartBuilder().add_function("B", _b, "b")


def test_format_causal_chain_draws_the_chain_as_footprintjs_does() -> None:
    """The root first, each parent indented under the node that read it, ``← via key`` for the
    key it was reached through, ``[wrote: …]``, and a node drawn once (``↳ … (see above)``)."""
    run = flow_chart("A", _a, "a").add_function("B", _b, "b").add_function("D", _d, "d").build().run()
    assert format_causal_chain(causal_chain(run.commit_log, "z")) == "\n".join(
        [
            "D (d#2) [wrote: z]",
            "  A (a#0) ← via x [wrote: x]",
            "  B (b#1) ← via y [wrote: y]",
            "    ↳ a#0 (see above)",
        ]
    )


def test_format_causal_chain_says_where_a_slice_was_cut() -> None:
    """A chain cut by ``max_depth`` ends with footprintjs's horizon line."""
    run = flow_chart("A", _a, "a").add_function("B", _b, "b").add_function("D", _d, "d").build().run()
    text = format_causal_chain(causal_chain(run.commit_log, "z", max_depth=0))
    assert text.splitlines() == [
        "D (d#2) [wrote: z]",
        "⚠ slice truncated (max_depth reached) — older causes exist beyond this horizon",
    ]


def test_format_causal_chain_of_a_key_never_written() -> None:
    """A key no commit wrote is said in words, not drawn."""
    run = flow_chart("A", _a, "a").build().run()
    assert "never written" in format_causal_chain(causal_chain(run.commit_log, "nope"))


def test_event_log_numbers_what_it_records_and_folds_exclusively() -> None:
    """``EventLog`` records commits numbered by their place (whatever ``idx`` they carried),
    ``materialise(n)`` folds the first ``n`` onto its starting state, ``clear`` forgets the
    commits but not the starting state."""
    from flowchart.lowlevel import EventLog

    run = flow_chart("A", _a, "a").add_function("B", _b, "b").add_function("D", _d, "d").build().run()
    log = EventLog({"seed": 1})
    recorded = [log.record(c) for c in reversed(run.commit_log)]  # out of order: numbered by place
    assert [c.idx for c in recorded] == [0, 1, 2] and len(log) == 3
    assert [c.stage_id for c in log.list()] == ["d", "b", "a"]
    fresh = EventLog({"seed": 1})
    for commit in run.commit_log:
        fresh.record(commit)
    assert fresh.materialise(0) == {"seed": 1}
    assert fresh.materialise(2) == {"seed": 1, "x": 1, "y": 2}
    assert fresh.materialise() == {"seed": 1, "x": 1, "y": 2, "z": 3}
    fresh.clear()
    assert len(fresh) == 0 and fresh.materialise() == {"seed": 1} == fresh.initial_state()
    with pytest.raises(IndexError, match=r"EventLog.materialise\(4\): expected 0..0"):
        fresh.materialise(4)
