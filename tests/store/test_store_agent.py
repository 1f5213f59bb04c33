"""Durable agent runs: ``Agent.create(..., store=)``, ``Paused.run_id``, ``resume_run``."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from refund_agent import REFUNDS, refund_agent

from agent import Paused
from flowchart import replay
from flowchart.store import RunNotFoundError, RunStore
from governance import CheckInRequest, ResumeDecisionError, check_in_approved, check_in_declined


@pytest.fixture(autouse=True)
def _clear_refunds() -> None:
    REFUNDS.clear()


def test_a_paused_agent_run_is_stored_with_its_question(make_store: Callable[[], RunStore]) -> None:
    """run() returns Paused with run_id; the store gives the check-in request back TYPED, with its
    evidence, so a process holding only the run id can decide on it."""
    out = refund_agent(make_store()).run("refund order A-1 150")
    assert isinstance(out, Paused) and out.run_id is not None and out.check_in is not None
    record = make_store().get(out.run_id)
    assert (record.kind, record.status, record.input) == ("agent", "paused", {"input_message": "refund order A-1 150"})
    assert record.question == out.check_in
    assert isinstance(record.question, CheckInRequest)
    assert check_in_approved(request=record.question, by="alice").request_id == out.check_in.id
    assert record.narrative and record.checkpoint == out.checkpoint


def test_resume_run_in_another_process_finishes_the_run_once(make_store: Callable[[], RunStore]) -> None:
    """A freshly built agent on another store view resumes by id; the tool runs once, keyed by run."""
    paused = refund_agent(make_store()).run("refund order A-1 150")
    assert isinstance(paused, Paused) and paused.run_id and paused.check_in
    final = refund_agent(make_store()).resume_run(paused.run_id, check_in_approved(request=paused.check_in, by="alice"))
    assert final == "Done: refunded 150.00 on A-1"
    assert [f"{paused.run_id}:call-1"] == REFUNDS
    record = make_store().get(paused.run_id)
    assert (record.status, record.output, record.question) == ("done", final, None)
    assert record.answered == frozenset({paused.check_in.id})
    assert [c.idx for c in record.commit_log] == list(range(len(record.commit_log)))
    assert replay(record.commit_log)["final_content"] == final


def test_a_second_answer_raises_resume_decision_error(make_store: Callable[[], RunStore]) -> None:
    """Answering the same request again, from any process, is refused; the tool does not rerun."""
    paused = refund_agent(make_store()).run("refund order A-1 150")
    assert isinstance(paused, Paused) and paused.run_id and paused.check_in
    decision = check_in_approved(request=paused.check_in, by="alice")
    refund_agent(make_store()).resume_run(paused.run_id, decision)
    with pytest.raises(ResumeDecisionError, match=f"run '{paused.run_id}' is done: it is not waiting") as err:
        refund_agent(make_store()).resume_run(paused.run_id, check_in_declined(request=paused.check_in, by="bob"))
    assert err.value.problem == "already-used"
    assert len(REFUNDS) == 1


def test_racing_answers_from_many_processes_resume_once(make_store: Callable[[], RunStore]) -> None:
    """Six agents (own store connections) answer the same pause at once: one resumes, five are refused."""
    paused = refund_agent(make_store()).run("refund order A-1 150")
    assert isinstance(paused, Paused) and paused.run_id and paused.check_in
    agents = [refund_agent(make_store()) for _ in range(6)]
    barrier = threading.Barrier(len(agents))
    outcomes: list[str] = []

    def answer(n: int) -> None:
        barrier.wait()
        try:
            outcomes.append(
                str(agents[n].resume_run(paused.run_id, check_in_approved(request=paused.check_in, by=f"u{n}")))
            )
        except ResumeDecisionError:
            outcomes.append("refused")

    threads = [threading.Thread(target=answer, args=(n,)) for n in range(len(agents))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["Done: refunded 150.00 on A-1"] + ["refused"] * 5
    assert len(REFUNDS) == 1 and make_store().get(paused.run_id).status == "done"


def test_a_decline_is_recorded_and_the_tool_never_runs(store: RunStore) -> None:
    """A declined check-in finishes the run without the refund; the answer id is stored."""
    agent = refund_agent(store)
    paused = agent.run("refund order A-1 150")
    assert isinstance(paused, Paused) and paused.run_id and paused.check_in
    final = agent.resume_run(paused.run_id, check_in_declined(request=paused.check_in, by="bob", note="fraud"))
    assert final == "Done: declined by human: fraud" and REFUNDS == []
    assert store.get(paused.run_id).answered == frozenset({paused.check_in.id})


def test_a_run_without_a_pause_is_stored_done(store: RunStore) -> None:
    """A small refund needs no check-in: one segment, done, output is the final answer."""
    out = refund_agent(store).run("refund order A-1 20")
    assert out == "Done: refunded 20.00 on A-1"
    (record,) = store.list()
    assert (record.status, record.output) == ("done", out)
    assert [f"{record.run_id}:call-1"] == REFUNDS


def test_resume_run_of_an_unknown_run_says_so(store: RunStore) -> None:
    """An unknown run id raises RunNotFoundError naming it."""
    with pytest.raises(RunNotFoundError, match="no run 'missing'"):
        refund_agent(store).resume_run("missing", None)


def test_a_non_decision_answer_is_refused_before_anything_is_recorded(store: RunStore) -> None:
    """A consent pause answered with a plain value raises DecisionRequiredError; the run stays paused."""
    from governance import DecisionRequiredError

    agent = refund_agent(store)
    paused = agent.run("refund order A-1 150")
    assert isinstance(paused, Paused) and paused.run_id
    with pytest.raises(DecisionRequiredError, match="answered with a DECISION"):
        agent.resume_run(paused.run_id, "yes")
    assert store.get(paused.run_id).status == "paused" and store.get(paused.run_id).answered == frozenset()


def test_a_decision_for_one_run_never_approves_another_run_with_an_identical_call(
    make_store: Callable[[], RunStore],
) -> None:
    """Two runs pause on the very same call (same tool, args, call id, identity): their request
    ids differ, and run A's decision is refused on run B, which stays paused; nothing runs."""
    agent = refund_agent(make_store())
    run_a, run_b = agent.run("refund order A-1 150"), agent.run("refund order A-1 150")
    assert isinstance(run_a, Paused) and isinstance(run_b, Paused) and run_a.check_in and run_b.check_in
    assert run_a.check_in.args == run_b.check_in.args and run_a.check_in.id != run_b.check_in.id
    decision_for_a = check_in_approved(request=run_a.check_in, by="alice")
    with pytest.raises(
        ResumeDecisionError,
        match=r"^this decision answers request 'cki_\w{32}', but the run is paused on "
        r"request 'cki_\w{32}'\. ",
    ) as caught:
        refund_agent(make_store()).resume_run(run_b.run_id or "", decision_for_a)
    assert caught.value.problem == "another-request"
    assert make_store().get(run_b.run_id or "").status == "paused" and REFUNDS == []


def test_a_process_holding_only_the_run_id_decides_from_the_stored_question(
    make_store: Callable[[], RunStore],
) -> None:
    """``check_in_approved(request=store.get(id).question, ...)`` in another store view finishes the run."""
    paused = refund_agent(make_store()).run("refund order A-1 150")
    assert isinstance(paused, Paused) and paused.run_id
    question = make_store().get(paused.run_id).question
    final = refund_agent(make_store()).resume_run(paused.run_id, check_in_approved(request=question, by="dana"))
    assert final == "Done: refunded 150.00 on A-1" and len(REFUNDS) == 1
    rows = replay(make_store().get(paused.run_id).commit_log)["human_decisions"]
    assert [(r["by"], r["request_id"]) for r in rows] == [("dana", paused.check_in.id if paused.check_in else "")]
