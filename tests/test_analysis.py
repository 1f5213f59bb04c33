"""The commit-log queries: ``find_commit``, ``find_commits``, ``find_last_writer``, ``commit_value_at``."""

from __future__ import annotations

from typing import Any

import pytest

from flowchart import commit_value_at, find_commit, find_commits, find_last_writer, flow_chart, replay


def _log() -> list[Any]:
    """seed (count=0, items=[], user) → work ×3 via a loop → done (deletes tmp)."""

    def seed(scope: Any) -> None:
        scope.count, scope.items, scope.user, scope.tmp = 0, [], {"name": "Ann"}, 1

    def work(scope: Any) -> None:
        scope.count += 1
        scope.items.append(scope.count)
        scope.user["age"] = 30 + scope.count

    def check(scope: Any) -> str:
        return "again" if scope.count < 3 else "done"

    def done(scope: Any) -> None:
        del scope.tmp

    chart = (
        flow_chart("Seed", seed, "seed")
        .add_function("Work", work, "work")
        .add_decider_function("Check", check, "check")
        .add_function_branch("again", "Again", lambda s: None, loop_to="work")
        .add_function_branch("done", "Done", done)
        .end()
        .build()
    )
    return chart.run().commit_log


def test_find_commit_is_the_first_commit_of_a_stage():
    """``find_commit(log, stage_id)`` is that stage's first commit; ``key=`` narrows to a writer."""
    log = _log()
    first = find_commit(log, "work")
    assert first is log[1]
    assert find_commit(log, "check", key="count") is None
    assert find_commit(log, "nope") is None


def test_find_commit_takes_a_predicate():
    """A predicate picks the first commit it accepts."""
    log = _log()
    assert find_commit(log, lambda c: any(op.verb == "delete" for op in c.trace)) is log[-1]


def test_find_commits_lists_every_commit_of_a_stage():
    """``find_commits`` returns all of a stage's commits in log order."""
    log = _log()
    assert [c.runtime_stage_id for c in find_commits(log, "work")] == ["work#1", "work#4", "work#7"]


def test_find_last_writer_walks_back_from_before():
    """The last writer of a key, optionally before an index (exclusive)."""
    log = _log()
    assert find_last_writer(log, "count") is log[7]
    assert find_last_writer(log, "count", before=7) is log[4]
    assert find_last_writer(log, "count", before=1) is log[0]
    assert find_last_writer(log, "count", before=0) is None
    assert find_last_writer(log, "never") is None


def test_commit_value_at_folds_one_key_like_replay():
    """The value at each index equals ``replay``'s for that key (set, merge, append, delete)."""
    log = _log()
    for idx in range(len(log)):
        state = replay(log, idx)
        for key in ("count", "items", "user", "tmp"):
            assert commit_value_at(log, key, idx) == state.get(key), (key, idx)


def test_commit_value_at_refuses_an_index_outside_the_log():
    """An index past the log is an error naming the log's length."""
    log = _log()
    with pytest.raises(IndexError, match=rf"^commit index 99 is out of range: the log has {len(log)} commits$"):
        commit_value_at(log, "count", 99)
