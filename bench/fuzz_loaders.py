"""The fuzz campaign over every loader of untrusted input (outside the suite; minutes, not seconds).

    .venv/bin/python -m bench.fuzz_loaders [N [SEED]] [--only loaders|rows]
                                    # N mutated inputs per target (default 4000)

Targets, each fed ``mutate(base, rng)`` (``tests/mutations.py``) of a real document:
``Checkpoint.from_json`` (then ``to_json`` and a second load of what it accepted);
``Trace.from_json`` of an agent trace and of a chart trace (then ``final_state``, ``why``,
``to_json`` and the viewer's ``render_page``); ``agent.resume`` with the approval that
answers the real pause; and the ``flowchart replay / narrate / why / view`` commands
in-process on a mutated trace file. An outcome is ``accepted``, a ``CheckpointError`` (the
loaders' one error class), a decision refusal by ``governance`` (``ResumeDecisionError``,
``DecisionRequiredError``: a call that changed since the ask), a one-line CLI error naming
the trace's problem, or OTHER — any other exception, or a CLI line that is not one of
those. The campaign passes when OTHER is 0.

Stored rows (``--only rows`` runs these alone): on SQLite, on SQLite with ``key=``, and on
PostgreSQL with and without a key (skipped, with the reason printed, when no server can start),
three real runs are stored — a paused agent run, an approved and done one, and a chart run with a
subflow and a redaction rule — and each target is ONE column of a store's tables (every column of
``runs``, ``commits``, ``segments``, ``answers`` and ``charts``): each input writes one edited
value into that column of one row with the database's own client (``tests/stored_rows.py``:
``mutate`` of the real value, NULL, an integer, a real, a blob, deep JSON, a lone surrogate
escape, a huge number, another JSON type), then reads a fresh store: ``list()`` (which must
never raise, and must still list every other run), ``get``, ``verify``, and for a run that
loads, ``record_trace``, ``Trace.to_json``/``from_json``/``save``, ``render_page``, ``agent runs
show / list / trace`` and ``agent view`` in-process, and ``resume_run`` of the paused run with
the approval that answers its real pause. Outcomes: ``accepted``; ``refused (<Error>)`` by
``get`` with an error of the store's documented tree (``StoredRowError``; ``RunNotFoundError``
when the run id was edited); ``refused at resume (<Error>)`` (a documented refusal of
``resume_run``: the question or checkpoint no longer matches); ``unwritable`` or ``unchanged``
(the database refused the value, or it equals the stored one: nothing to read); OTHER — an
exception outside the tree, ``list()`` raising or hiding a run, a run that loads and then fails
a reader, and, on a keyed store, any edit that is not refused.
"""

from __future__ import annotations

import contextlib
import io
import random
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for sub in ("tests", "tests/pause", "tests/agent", "tests/store"):
    sys.path.insert(0, str(ROOT / sub))

import pause_charts  # noqa: E402
import stored_rows  # noqa: E402
from agent_helpers import build, call, calls, refund_tool, weather_tool  # noqa: E402
from mutations import mutate  # noqa: E402

from agent import Paused  # noqa: E402
from flowchart import Checkpoint, CheckpointError, Trace, narrative  # noqa: E402
from flowchart.cli import main as flowchart_main  # noqa: E402
from flowchart.viewer import render_page  # noqa: E402
from governance import DecisionRequiredError, ResumeDecisionError, check_in_approved  # noqa: E402

CLI_EXPECTED = ("Invalid trace", "has no narrative", "was never written", "out of range", "cannot write")


def _agent_pause() -> tuple[Any, Paused, Any]:
    weather = calls(call("w1", "weather", city="Oslo"))
    refunds = calls(call("c1", "refund", order_id="A1", amount=250), call("c2", "refund", order_id="A2", amount=9))
    agent, _ = build([weather, refunds, "Done."], weather_tool(), refund_tool(check_in="always"))
    out = agent.run("refund both")
    assert isinstance(out, Paused) and out.check_in is not None
    return agent, out, check_in_approved(request=out.check_in, by="alice", at="2026-01-01T00:00:00Z")


def _after_trace(trace: Trace) -> None:
    trace.final_state  # noqa: B018 - replays the log
    for key in list(trace.final_state)[:3]:
        trace.why(key).format()
    Trace.from_json(trace.to_json())
    render_page(trace)


def run(n: int, seed: int = 20261201) -> dict[str, Counter[str]]:
    """``n`` inputs per target; returns each target's outcome counts (OTHER examples printed)."""
    rng = random.Random(seed)
    agent, paused, decision = _agent_pause()
    agent_cp = paused.checkpoint.to_dict()
    nested = pause_charts.CHARTS["nested"]([]).run({"who": "ada"}).checkpoint
    assert nested is not None
    nested_cp = nested.to_dict()
    agent_trace = agent.last_snapshot().result.trace().to_dict()
    chart_trace = pause_charts.CHARTS["nested"]([]).run({"who": "ada"}, recorders=[narrative()]).trace().to_dict()
    outcomes: dict[str, Counter[str]] = {}
    shown: Counter[str] = Counter()

    def attempt(target: str, body: Any) -> None:
        counts = outcomes.setdefault(target, Counter())
        try:
            counts[body() or "accepted"] += 1
        except CheckpointError:
            counts["CheckpointError"] += 1
        except (ResumeDecisionError, DecisionRequiredError) as exc:
            counts[f"decision refused ({type(exc).__name__})"] += 1
        except Exception as exc:
            counts["OTHER"] += 1
            if shown[target] < 5:
                shown[target] += 1
                print(f"--- OTHER in {target}: {type(exc).__name__}: {str(exc)[:200]}")
                traceback.print_exc(limit=-3)

    def load_checkpoint(text: str) -> None:
        cp = Checkpoint.from_json(text)
        Checkpoint.from_json(cp.to_json())

    def resume_agent(text: str) -> None:
        agent.resume(Checkpoint.from_json(text), decision)

    def load_trace(text: str) -> None:
        _after_trace(Trace.from_json(text))

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.json"

        def cli(text: str, command: list[str]) -> str | None:
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
            err = io.StringIO()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                status = flowchart_main([command[0], str(path), *command[1:]])
            if status == 0:
                return None
            line = err.getvalue()
            if status == 2 and line.startswith("flowchart: error: ") and any(e in line for e in CLI_EXPECTED):
                return "CLI error naming the problem"
            raise AssertionError(f"exit {status}: {line.strip()[:200]}")

        page = ["view", "-o", tmp + "/p.html"]
        commands = [["replay"], ["narrate"], ["why", "history"], ["why", "final_content"], page]
        for i in range(n):
            texts = [mutate(base, rng) for base in (nested_cp, agent_cp, agent_cp, agent_trace, chart_trace)]
            attempt("Checkpoint.from_json", lambda t=texts[0]: load_checkpoint(t))
            attempt("Checkpoint.from_json (agent)", lambda t=texts[1]: load_checkpoint(t))
            attempt("agent.resume", lambda t=texts[2]: resume_agent(t))
            attempt("Trace.from_json (agent)", lambda t=texts[3]: load_trace(t))
            attempt("Trace.from_json (chart)", lambda t=texts[4]: load_trace(t))
            command = commands[i % len(commands)]
            text = mutate(agent_trace if i % 2 else chart_trace, rng)
            attempt(f"flowchart {command[0]}", lambda c=command, t=text: cli(t, c))
    return outcomes


def _row_targets(
    name: str, db: stored_rows.Db, n: int, rng: random.Random, key: bytes | None, outcomes: dict[str, Counter[str]]
) -> None:
    """``n`` edits of each column of ``db``'s tables (a store with ``key`` when given)."""
    base = stored_rows.Base.build(db, key)
    for table, column in stored_rows.TARGETS:
        counts = outcomes.setdefault(f"{name} {table}.{column}", Counter())
        shown = 0
        for _ in range(n):
            outcome = stored_rows.attempt(db, base, table, column, rng, key=key)
            if outcome.startswith("OTHER"):
                if shown < 5:
                    shown += 1
                    print(f"--- OTHER in {name} {table}.{column}: {outcome[7:]}")
                outcome = "OTHER"
            counts[outcome] += 1


def run_rows(n: int, seed: int = 20261206) -> dict[str, Counter[str]]:
    """``n`` edited values per column of every table, on SQLite and PostgreSQL, each with and
    without a key; returns each target's outcome counts (OTHER examples printed)."""
    from servers import ServerUnavailable, fresh_pg_dsn, postgres_server

    rng = random.Random(seed)
    outcomes: dict[str, Counter[str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for key, name in ((None, "sqlite"), (stored_rows.KEY, "sqlite+key")):
            _row_targets(name, stored_rows.sqlite_db(Path(tmp) / f"{name}.db"), n, rng, key, outcomes)
    try:
        import psycopg  # noqa: F401

        with postgres_server() as dsn:
            for key, name in ((None, "postgres"), (stored_rows.KEY, "postgres+key")):
                _row_targets(name, stored_rows.postgres_db(fresh_pg_dsn(dsn)), n, rng, key, outcomes)
    except (ImportError, ServerUnavailable) as exc:
        print(f"PostgreSQL targets skipped: {exc}")
    return outcomes


def main(argv: list[str]) -> int:
    """Run the campaign and print the table; exit 1 when anything OTHER happened."""
    only = argv[argv.index("--only") + 1] if "--only" in argv else None
    argv = [a for i, a in enumerate(argv) if a != "--only" and (i == 0 or argv[i - 1] != "--only")]
    n = int(argv[0]) if argv else 4000
    started = time.perf_counter()
    outcomes: dict[str, Counter[str]] = {}
    if only != "rows":
        outcomes.update(run(n, int(argv[1])) if len(argv) > 1 else run(n))
    if only != "loaders":
        outcomes.update(run_rows(n, int(argv[1])) if len(argv) > 1 else run_rows(n))
    total = sum(sum(c.values()) for c in outcomes.values())
    other = sum(c["OTHER"] for c in outcomes.values())
    for target, counts in outcomes.items():
        print(f"{target:36} {sum(counts.values()):6}  " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    took = time.perf_counter() - started
    print(f"inputs tried: {total}; OTHER (outside the documented errors): {other}; {took:.0f} s")
    return 1 if other else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
