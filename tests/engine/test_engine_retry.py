"""Retry policies: a stage tried again leaves one commit, its failed attempts recorded once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowchart import BuildError, Pausable, Retry, Trace, flow_chart, narrative


class Flaky:
    """A stage body that writes ``partial`` then fails ``failures`` times with ``error``."""

    def __init__(self, key: str, failures: int, error: type[Exception] = TimeoutError) -> None:
        self.key, self.failures, self.error, self.calls = key, failures, error, 0

    def __call__(self, scope: Any) -> None:
        self.calls += 1
        scope[f"{self.key}_partial"] = self.calls
        if self.calls <= self.failures:
            raise self.error(f"{self.key} try {self.calls}")
        scope[self.key] = "ok"


def seed(scope: Any) -> None:
    scope.seeded = True


# -- the policy value --------------------------------------------------------------------------------
def test_a_bad_policy_is_refused_when_made_naming_the_field() -> None:
    """Each field is checked when the policy is made, with the fix in the message."""
    with pytest.raises(
        ValueError, match=r"^Retry\(attempts=\.\.\.\) must be an integer >= 1 \(the first try counts\), got 0$"
    ):
        Retry(attempts=0)
    with pytest.raises(TypeError, match=r"^Retry\(on=\.\.\.\) must be an exception class or a tuple of them"):
        Retry(on="TimeoutError")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^Retry\(jitter=\.\.\.\) must be a fraction between 0 and 1, got 2$"):
        Retry(jitter=2)
    with pytest.raises(ValueError, match=r"^Retry\(backoff=\.\.\.\) must be a number of seconds >= 0, got -1$"):
        Retry(backoff=-1)


def test_a_builder_refuses_a_retry_that_is_not_a_policy() -> None:
    """``retry=3`` is a build error naming the stage, not a silent no-op."""
    with pytest.raises(
        BuildError, match=r"retry of 'fetch' must be a flowchart\.Retry \(e\.g\. Retry\(attempts=3\)\), got int"
    ):
        flow_chart("Seed", seed, "seed").add_function("Fetch", seed, "fetch", retry=3).build()  # type: ignore[arg-type]


def test_backoff_is_exponential_capped_and_deterministic_under_a_seed() -> None:
    """Delays double up to the cap; jitter is drawn from the seed and the stage, the same every time."""
    assert Retry(attempts=5, backoff=1, max_backoff=3).delays("fetch") == [1.0, 2.0, 3.0, 3.0]
    jittered = Retry(attempts=4, backoff=1, jitter=0.5, seed=7)
    first = jittered.delays("fetch")
    assert first == Retry(attempts=4, backoff=1, jitter=0.5, seed=7).delays("fetch")
    assert first != Retry(attempts=4, backoff=1, jitter=0.5, seed=8).delays("fetch")
    assert first != jittered.delays("other")
    assert all(0.5 * base <= d <= 1.5 * base for d, base in zip(first, [1, 2, 4], strict=True))
    assert Retry(attempts=3, backoff=lambda n: n * 10.0).delays() == [10.0, 20.0]


# -- a plain stage -----------------------------------------------------------------------------------
def test_a_flaky_stage_commits_once_with_its_failed_attempts_and_the_narrative_tells_each() -> None:
    """Two timeouts then success: one commit (the third attempt's writes), two attempts recorded,
    two ``[Retry]`` lines, and the policy's delays handed to the sleep seam (no real sleeping)."""
    slept: list[float] = []
    fetch = Flaky("page", 2)
    chart = (
        flow_chart("Seed", seed, "seed")
        .add_function("Fetch", fetch, "fetch", retry=Retry(attempts=3, backoff=0.5, sleep=slept.append))
        .build()
    )
    rec = narrative()
    result = chart.run(recorders=[rec])
    assert fetch.calls == 3 and slept == [0.5, 1.0]
    commit = result.commit_log[1]
    assert commit.runtime_stage_id == "fetch#1"
    assert commit.to_dict()["trace"] == [
        {"path": ["page_partial"], "verb": "set", "value": 3},
        {"path": ["page"], "verb": "set", "value": "ok"},
    ]
    assert [a.to_dict() for a in commit.attempts] == [
        {"attempt": 1, "error_type": "TimeoutError", "message": "page try 1"},
        {"attempt": 2, "error_type": "TimeoutError", "message": "page try 2"},
    ]
    assert rec.lines() == [
        "Stage 1: The process began with Seed.",
        "Step 1: Write seeded = true",
        "[Retry]: retried Fetch (attempt 2 of 3) after TimeoutError: page try 1",
        "[Retry]: retried Fetch (attempt 3 of 3) after TimeoutError: page try 2",
        "Stage 2: Next, it moved on to Fetch.",
        "Step 1: Write page_partial = 3",
        'Step 2: Write page = "ok"',
    ]


def test_when_every_attempt_fails_the_last_attempts_partial_writes_commit_and_the_error_is_raised() -> None:
    """Out of attempts: the no-retry law applies to the last attempt; the earlier ones are recorded."""
    fetch = Flaky("page", 5)
    chart = flow_chart("Seed", seed, "seed").add_function("Fetch", fetch, "fetch", retry=Retry(attempts=2)).build()
    with pytest.raises(TimeoutError, match=r"^page try 2$") as caught:
        chart.run()
    from flowchart import failed_run

    found = failed_run(caught.value)
    assert found is not None
    last = found[0].commit_log[-1]
    assert last.to_dict()["trace"] == [{"path": ["page_partial"], "verb": "set", "value": 2}]
    assert [a.attempt for a in last.attempts] == [1]


def test_an_error_the_policy_does_not_name_is_not_retried() -> None:
    """``on=(TimeoutError,)``: a ``KeyError`` fails at once, with no attempt recorded."""
    fetch = Flaky("page", 1, KeyError)
    chart = (
        flow_chart("Seed", seed, "seed")
        .add_function("Fetch", fetch, "fetch", retry=Retry(attempts=3, on=(TimeoutError,)))
        .build()
    )
    with pytest.raises(KeyError):
        chart.run()
    assert fetch.calls == 1


def test_without_a_policy_a_commit_records_as_before() -> None:
    """Absent means byte-identical: no ``attempts`` or ``recovers`` key in the commit."""
    result = flow_chart("Seed", seed, "seed").build().run()
    assert list(result.commit_log[0].to_dict()) == [
        "idx",
        "stage",
        "stage_id",
        "runtime_stage_id",
        "trace",
        "reads",
        "redacted_paths",
    ]


# -- every stage kind, and the run's default -----------------------------------------------------------
def test_deciders_branches_pausables_and_fork_children_take_a_policy() -> None:
    """A decider, a branch, a pausable's execute half and each fork child are retried on their own."""
    policy = Retry(attempts=2)
    decide_calls = {"n": 0}

    def choose(scope: Any) -> str:
        decide_calls["n"] += 1
        if decide_calls["n"] == 1:
            raise TimeoutError("decider slow")
        return "go"

    branch, child_a, child_b = Flaky("branch", 1), Flaky("a", 1), Flaky("b", 0)
    execute_calls = {"n": 0}

    def execute(scope: Any) -> None:
        execute_calls["n"] += 1
        if execute_calls["n"] == 1:
            raise TimeoutError("execute slow")
        return None

    chart = (
        flow_chart("Seed", seed, "seed")
        .add_decider_function("Choose", choose, "choose", retry=policy)
        .add_function_branch("go", "Go", branch, retry=policy)
        .end()
        .add_pausable_function("Ask", Pausable(execute=execute, resume=lambda s, i: None), "ask", retry=policy)
        .add_list_of_function([("a", "A", child_a), ("b", "B", child_b)], retry=policy)
        .build()
    )
    result = chart.run()
    attempts = {c.stage_id: [a.message for a in c.attempts] for c in result.commit_log}
    assert attempts == {
        "seed": [],
        "choose": ["decider slow"],
        "go": ["branch try 1"],
        "ask": ["execute slow"],
        "a": ["a try 1"],
        "b": [],
    }
    assert result.state["runs"] == {"a": {"a_partial": 2, "a": "ok"}, "b": {"b_partial": 1, "b": "ok"}}


def test_the_run_default_applies_to_every_stage_without_its_own() -> None:
    """``run(retry=...)`` retries each stage; a stage's own policy wins over it."""
    one, two = Flaky("one", 1), Flaky("two", 2)
    chart = flow_chart("One", one, "one").add_function("Two", two, "two", retry=Retry(attempts=3)).build()
    result = chart.run(retry=Retry(attempts=2))
    assert [len(c.attempts) for c in result.commit_log] == [1, 2]
    with pytest.raises(TypeError, match=r"^retry must be a flowchart\.Retry \(e\.g\. Retry\(attempts=3\)\), got int$"):
        chart.run(retry=3)  # type: ignore[arg-type]


def test_an_async_run_awaits_an_async_sleep_seam() -> None:
    """In ``arun`` a coroutine ``sleep`` is awaited with the policy's delay."""
    waited: list[float] = []

    async def sleep(seconds: float) -> None:
        waited.append(seconds)

    fetch = Flaky("page", 1)
    chart = flow_chart("Fetch", fetch, "fetch", retry=Retry(backoff=2, sleep=sleep)).build()
    result = asyncio.run(chart.arun())
    assert waited == [2.0] and result.state["page"] == "ok"


def test_failed_attempts_survive_a_trace_save_and_load_and_show_once(tmp_path: Path) -> None:
    """The trace file keeps the attempts on the commit; the narrative tells each attempt once."""
    rec = narrative()
    chart = flow_chart("Fetch", Flaky("page", 1), "fetch", retry=Retry()).build()
    trace = chart.run(recorders=[rec]).trace()
    path = tmp_path / "run.json"
    trace.save(path)
    loaded = Trace.load(path)
    assert [a.to_dict() for a in loaded.commit_log[0].attempts] == [
        {"attempt": 1, "error_type": "TimeoutError", "message": "page try 1"}
    ]
    text = path.read_text()
    assert text.count("page try 1") == 2  # once in the commit, once in the narrative line
    assert sum("retried Fetch" in line for line in loaded.narrative_lines or []) == 1


def test_a_trace_with_a_malformed_attempt_is_refused_naming_the_path(tmp_path: Path) -> None:
    """The trace loader checks each attempt's shape (fail closed)."""
    chart = flow_chart("Fetch", Flaky("page", 1), "fetch", retry=Retry()).build()
    data = chart.run().trace().to_dict()
    data["commit_log"][0]["attempts"][0]["attempt"] = "one"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    from flowchart import CheckpointError

    with pytest.raises(
        CheckpointError, match=r"expected an integer, got a string @ \$\.commit_log\[0\]\.attempts\[0\]\.attempt"
    ):
        Trace.load(path)


# -- the property ------------------------------------------------------------------------------------
class Steady:
    """Fails ``failures`` times after writing ``junk`` (a write that must be discarded), then writes ``key``."""

    def __init__(self, key: str, failures: int) -> None:
        self.key, self.failures, self.calls = key, failures, 0

    def __call__(self, scope: Any) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            scope.junk = self.calls
            raise TimeoutError(f"{self.key} try {self.calls}")
        scope[self.key] = self.calls - self.failures


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2), min_size=1, max_size=5))
def test_a_run_whose_retries_succeed_equals_a_run_that_succeeds_first_time(failures: list[int]) -> None:
    """Same final state and the same commits, minus the attempt records, as a run with no failures."""

    def build(counts: list[int]) -> Any:
        builder = flow_chart("Seed", seed, "seed")
        for index, count in enumerate(counts):
            builder = builder.add_function(
                f"S{index}", Steady(f"k{index}", count), f"s{index}", retry=Retry(attempts=3)
            )
        return builder.build()

    flaky = build(failures).run()
    clean = build([0] * len(failures)).run()
    assert flaky.state == clean.state
    assert [{k: v for k, v in c.to_dict().items() if k != "attempts"} for c in flaky.commit_log] == [
        c.to_dict() for c in clean.commit_log
    ]
    assert [len(c.attempts) for c in flaky.commit_log[1:]] == failures


def test_a_stream_takes_the_run_default_and_streams_the_retry_line_before_the_commit() -> None:
    """``chart.stream(retry=...)``: the ``[Retry]`` line, then the one commit with its attempt."""
    chart = flow_chart("Fetch", Flaky("page", 1), "fetch").build()
    events = [e.to_dict() for e in chart.stream(retry=Retry(), modes=["commit", "narrative"])]
    assert [(e["kind"], e.get("text")) for e in events[:2]] == [
        ("narrative", "[Retry]: retried Fetch (attempt 2 of 3) after TimeoutError: page try 1"),
        ("commit", None),
    ]
    assert events[1]["commit"]["attempts"] == [{"attempt": 1, "error_type": "TimeoutError", "message": "page try 1"}]


_ATTEMPT_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["attempt", "error_type", "message", "x"]), inner, max_size=4)
    ),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(_ATTEMPT_VALUES)
def test_fuzz_a_traces_attempts_load_or_fail_closed(value: Any) -> None:
    """Any JSON in a commit's ``attempts`` loads as ``Attempt`` records or is a ``CheckpointError``
    naming ``$.commit_log[0].attempts``: never another exception."""
    from flowchart import CheckpointError

    data = flow_chart("Fetch", Flaky("page", 1), "fetch", retry=Retry()).build().run().trace().to_dict()
    data["commit_log"][0]["attempts"] = value
    try:
        loaded = Trace.from_dict(data)
    except CheckpointError as exc:
        assert exc.path is not None and exc.path.startswith("$.commit_log[0].attempts")
    else:
        assert all(isinstance(a.attempt, int) for a in loaded.commit_log[0].attempts)
