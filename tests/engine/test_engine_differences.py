"""One test per deliberate difference from footprintjs listed in docs/differences.md (round two).

Each docstring names the difference; docs/differences.md gives the reason.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

from flowchart import flow_chart, narrative, replay
from flowchart._core.commits import Verb

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_appending_to_a_list_commits_an_append_of_the_tail_and_replay_folds_it():
    """``scope.items.append(x)`` commits ``append items [x]`` (not a set of the whole list)."""

    def seed(scope: Any) -> None:
        scope.items = [1, 2]

    def work(scope: Any) -> None:
        scope.items.append(3)
        scope.items.extend([4])

    log = flow_chart("Seed", seed, "seed").add_function("Work", work, "work").build().run().commit_log
    assert [op.to_dict() for op in log[1].trace] == [{"path": ["items"], "verb": "append", "value": [3, 4]}]
    assert replay(log) == {"items": [1, 2, 3, 4]}


def test_a_list_change_other_than_appending_commits_a_set():
    """Any other list change (here a pop) commits a ``set`` of the whole key."""

    def seed(scope: Any) -> None:
        scope.items = [1, 2]

    def work(scope: Any) -> None:
        scope.items.append(3)
        scope.items.pop(0)

    log = flow_chart("Seed", seed, "seed").add_function("Work", work, "work").build().run().commit_log
    assert [op.to_dict() for op in log[1].trace] == [{"path": ["items"], "verb": "set", "value": [2, 3]}]


def test_the_default_branch_runs_under_its_own_id():
    """An unknown id falls back to the default branch, stamped with the branch's id (not ``default``)."""
    chart = (
        flow_chart("Seed", lambda s: None, "seed")
        .add_decider_function("Check", lambda s: "zzz", "check")
        .add_function_branch("a", "A", lambda s: None)
        .add_function_branch("b", "B", lambda s: None)
        .set_default("b")
        .end()
        .build()
    )
    assert [c.runtime_stage_id for c in chart.run().commit_log] == ["seed#0", "check#1", "b#2"]


def test_a_later_loop_pass_keeps_the_stage_name():
    """The second pass of ``Work`` commits as ``Work`` (footprintjs names it ``Work.1``)."""

    def work(scope: Any) -> None:
        scope.n = getattr(scope, "n", 0) + 1

    chart = (
        flow_chart("Work", work, "work")
        .add_decider_function("Check", lambda s: "again" if s.n < 2 else "done", "check")
        .add_function_branch("again", "Again", lambda s: None, loop_to="work")
        .add_function_branch("done", "Done", lambda s: None)
        .end()
        .build()
    )
    log = chart.run().commit_log
    assert [(c.stage, c.runtime_stage_id) for c in log if c.stage_id == "work"] == [
        ("Work", "work#0"),
        ("Work", "work#3"),
    ]


def test_a_key_written_twice_in_one_stage_commits_one_net_op():
    """Two writes of one key in a stage leave ONE op with the final value (footprintjs keeps both)."""

    def work(scope: Any) -> None:
        scope.k = 1
        scope.k = 2

    log = flow_chart("Work", work, "work").build().run().commit_log
    assert [op.to_dict() for op in log[0].trace] == [{"path": ["k"], "verb": "set", "value": 2}]


def test_a_read_after_the_stages_own_delete_misses():
    """After ``del scope.k`` the stage reads ``k`` as missing (footprintjs reads the committed value)."""
    seen: list[Any] = []

    def seed(scope: Any) -> None:
        scope.k = 1

    def work(scope: Any) -> None:
        del scope.k
        seen.append(getattr(scope, "k", "absent"))

    rec = narrative()
    flow_chart("Seed", seed, "seed").add_function("Work", work, "work").build().run(recorders=[rec])
    assert seen == ["absent"]
    assert rec.lines()[-1] == "Step 2: Read k = undefined"


def test_membership_on_a_present_key_is_a_read_without_a_narrative_line():
    """``"k" in scope`` records ``k`` among the reads; only a miss is narrated."""

    def seed(scope: Any) -> None:
        scope.k = 1

    def work(scope: Any) -> None:
        assert "k" in scope

    rec = narrative()
    result = flow_chart("Seed", seed, "seed").add_function("Work", work, "work").build().run(recorders=[rec])
    assert result.commit_log[1].reads == ("k",)
    assert rec.lines()[-1] == "Stage 2: Next, it moved on to Work."


def _verbs_in_table(text: str, heading: str) -> set[str]:
    """The op verbs named (in backticks) in the section under ``heading``."""
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`(set|merge|append|delete|update|concat)\b", section))


def test_the_docs_op_tables_name_exactly_the_op_verbs():
    """docs/concepts.md's "Commits and ops" and docs/differences.md name every ``Op`` verb, and no other."""
    verbs = set(typing.get_args(Verb))
    concepts = (DOCS / "concepts.md").read_text(encoding="utf-8")
    assert _verbs_in_table(concepts, "## Commits and ops") == verbs
    differences = (DOCS / "differences.md").read_text(encoding="utf-8")
    assert _verbs_in_table(differences, "## The commit log") == verbs
