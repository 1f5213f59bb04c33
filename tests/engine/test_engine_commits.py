"""The commit log: one commit per executed stage, net change only, runtime ids, replay."""

from __future__ import annotations

import json

import pytest
from engine_charts import CommitTape, StateTape, exact, noop

from flowchart import Commit, flow_chart, replay


def test_one_commit_per_executed_stage_also_when_nothing_changed():
    """A stage that writes nothing still leaves exactly one (empty) commit."""

    def seed(scope):
        scope.x = 1

    result = flow_chart("Seed", seed, "seed").add_function("Idle", noop, "idle").build().run()
    assert [(c.idx, c.stage, c.stage_id, c.runtime_stage_id) for c in result.commit_log] == [
        (0, "Seed", "seed", "seed#0"),
        (1, "Idle", "idle", "idle#1"),
    ]
    assert result.commit_log[1].trace == ()


def test_a_raising_stage_commits_its_partial_writes_then_the_error_propagates_unchanged():
    """No rollback: the partial writes are committed, then the original error is raised."""
    tape = CommitTape()

    class Boom(LookupError):
        pass

    def seed(scope):
        scope.x = 1

    def explode(scope):
        scope.partial = "kept"
        raise Boom("bad thing")

    def never(scope):
        raise AssertionError("must not run")

    chart = flow_chart("Seed", seed, "seed").add_function("Explode", explode, "explode")
    chart = chart.add_function("Never", never, "never").build()
    with pytest.raises(Boom, match=exact("bad thing")):
        chart.run(recorders=[tape])
    assert tape.ids == ["seed#0", "explode#1"]
    assert [op.to_dict() for op in tape.commits[1].trace] == [{"path": ["partial"], "verb": "set", "value": "kept"}]


def test_only_the_net_change_is_committed():
    """A write of the committed value and a write-then-revert leave no op."""

    def seed(scope):
        scope.a = 1
        scope.items = [1]

    def churn(scope):
        scope.a = 1  # same value
        scope.b = 5
        scope.b = 6  # only the last value counts
        scope.items.append(2)
        scope.items.pop()  # reverted
        scope.tmp = "x"
        del scope.tmp  # never existed before

    result = flow_chart("Seed", seed, "seed").add_function("Churn", churn, "churn").build().run()
    assert [op.to_dict() for op in result.commit_log[1].trace] == [{"path": ["b"], "verb": "set", "value": 6}]


def test_delete_removes_the_key():
    """``del scope.k`` commits a ``delete`` op and the key is gone from state and replay."""

    def seed(scope):
        scope.tmp = 1
        scope.keep = 2

    def drop(scope):
        del scope.tmp

    result = flow_chart("Seed", seed, "seed").add_function("Drop", drop, "drop").build().run()
    assert [op.to_dict() for op in result.commit_log[1].trace] == [{"path": ["tmp"], "verb": "delete"}]
    assert result.state == {"keep": 2}
    assert replay(result.commit_log) == {"keep": 2}


def test_runtime_ids_share_one_counter_with_subflows():
    """``[subflow/]id#N``: one run-wide counter, the mount first, then its inner stages."""
    inner = flow_chart("In", noop, "inner").add_function("In2", noop, "inner2").build()
    chart = (
        flow_chart("Seed", noop, "seed")
        .add_subflow_chart_next("sf", inner, mount_name="Sub")
        .add_function("After", noop, "after")
        .build()
    )
    result = chart.run()
    assert [c.runtime_stage_id for c in result.commit_log] == ["seed#0", "sf#1", "after#4"]
    inner_log = result.subflow_results["sf"].commit_log
    assert [c.runtime_stage_id for c in inner_log] == ["sf/inner#2", "sf/inner2#3"]
    assert [c.stage_id for c in inner_log] == ["sf/inner", "sf/inner2"]


def test_runtime_ids_count_loop_visits():
    """Each pass of a loop gets a fresh index from the same counter."""

    def bump(scope):
        scope.n = getattr(scope, "n", 0) + 1

    def check(scope):
        return "again" if scope.n < 3 else "done"

    chart = (
        flow_chart("Bump", bump, "bump")
        .add_decider_function("Check", check, "check")
        .add_function_branch("again", "Again", noop, loop_to="bump")
        .add_function_branch("done", "Done", noop)
        .end()
        .build()
    )
    ids = [c.runtime_stage_id for c in chart.run().commit_log]
    assert ids == [
        "bump#0",
        "check#1",
        "again#2",
        "bump#3",
        "check#4",
        "again#5",
        "bump#6",
        "check#7",
        "done#8",
    ]


def test_replay_equals_the_live_state_at_every_index():
    """Folding the log up to commit i gives exactly the state right after commit i."""
    tape = StateTape()

    def seed(scope):
        tape.grab(scope)
        scope.user = {"name": "a", "prefs": {"x": 1}}
        scope.items = [1]

    def work(scope):
        scope.user["prefs"]["y"] = 2
        scope.items.append(2)
        scope.tmp = 1

    def cleanup(scope):
        del scope.tmp
        scope.user["name"] = "b"

    chart = flow_chart("Seed", seed, "seed").add_function("Work", work, "work")
    result = chart.add_function("Cleanup", cleanup, "cleanup").build().run(recorders=[tape])
    assert len(tape.snapshots) == len(result.commit_log) == 3
    for i, snapshot in enumerate(tape.snapshots):
        assert replay(result.commit_log, i) == snapshot
    assert replay(result.commit_log) == result.state
    assert replay(result.commit_log, -1) == {}


def test_replay_from_an_initial_state_and_out_of_range_index():
    """``initial`` seeds the fold; an index past the log raises ``IndexError`` with the range."""

    from flowchart._core.commits import Op

    commits = [Commit(0, "S", "s", "s#0", (Op(("y",), "set", 2),))]
    assert replay(commits, 0, initial={"x": 1}) == {"x": 1, "y": 2}
    assert replay(commits, -1, initial={"x": 1}) == {"x": 1}
    with pytest.raises(IndexError, match=exact("commit index 1 is out of range: the log has 1 commits (0..0)")):
        replay(commits, 1)


def test_replay_returns_a_copy():
    """Mutating what ``replay`` returned does not change the log or the live state."""

    def seed(scope):
        scope.items = [1]

    result = flow_chart("Seed", seed, "seed").build().run()
    replayed = replay(result.commit_log)
    replayed["items"].append(2)
    assert result.state == {"items": [1]}
    assert replay(result.commit_log) == {"items": [1]}


def test_commit_to_dict_is_json_safe_and_round_trips():
    """``to_dict`` is JSON-safe; ``from_dict`` rebuilds an equal commit; ``overwrite``/``updates`` split ops."""

    def seed(scope):
        scope.user = {"name": "a"}
        scope.n = 1

    def work(scope):
        scope.user["name"] = "b"
        scope.n = 2

    result = flow_chart("Seed", seed, "seed").add_function("Work", work, "work").build().run()
    data = [c.to_dict() for c in result.commit_log]
    assert json.loads(json.dumps(data)) == data
    assert [Commit.from_dict(d) for d in data] == result.commit_log
    work_commit = result.commit_log[1]
    assert work_commit.overwrite == {"n": 2}
    assert work_commit.updates == {"user": {"name": "b"}}
    assert work_commit.written_keys == ("user", "n")
