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
