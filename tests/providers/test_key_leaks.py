"""The API key leaks through no channel, whatever a hostile server echoes back.

Law of this file: a server on 127.0.0.1 echoes the key in 429/401/500 bodies, in response
headers, in malformed JSON and in a malformed stream; the agent runs against it with a
run store and an event listener, and every channel a person or a program could read —
the exception (text, repr, attributes, the whole ``__cause__``/``__context__`` chain), the
agent's snapshot and narrative, the stored rows (a full SQL dump), the exported trace,
the ``agent runs`` CLI output, the events, the log, the provider's ``repr`` and
``attrs.asdict`` — is searched for ANY 8-character run of the key. None may be found.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import traceback
from pathlib import Path

import attrs
import pytest

from agent import Agent, define_tool
from agent.cli import main as agent_cli
from agent.providers import ProviderError, RetryPolicy, openai_compatible
from flowchart.store import SqliteStore
from flowchart.store.export import record_trace

from .wire import Reply, Sleeps, WireServer, sse

KEY = "sk-proj-Zq81mXvT4kLr0Pw7Yb2Nc9Hd5Fg3Js6Ua1Ve8Wi4Ox0"
RUN_OF = 8


def runs_of_key(text: str) -> list[str]:
    """Every 8-character run of the key that occurs in ``text``."""
    return sorted({KEY[i : i + RUN_OF] for i in range(len(KEY) - RUN_OF + 1) if KEY[i : i + RUN_OF] in text})


ECHO_HEADERS = (("x-echo-key", KEY), ("www-authenticate", f'Bearer realm="api", key="{KEY}"'))
SCENARIOS: dict[str, tuple[Reply, ...]] = {
    "429": (Reply(status=429, json={"error": {"message": f"Rate limit for key {KEY}"}}, headers=ECHO_HEADERS),) * 3,
    "401": (
        Reply(status=401, json={"error": {"message": f"Incorrect API key provided: {KEY}"}}, headers=ECHO_HEADERS),
    ),
    "500": (Reply(status=500, body=f"<html>Internal error for Bearer {KEY}</html>".encode(), headers=ECHO_HEADERS),)
    * 3,
    "500-cut": (Reply(status=500, json={"error": {"message": "x" * 290 + KEY + "tail" * 50}}),) * 3,
    "malformed-json": (Reply(body=f'{{"choices": [{{"message": "{KEY}'.encode(), headers=ECHO_HEADERS),),
    "wrong-shape": (Reply(json={"key": KEY, "choices": [{"message": KEY}]}, headers=ECHO_HEADERS),),
    "malformed-stream": (Reply(sse=sse(f'{{"choices": "{KEY}', "[DONE]"), headers=ECHO_HEADERS),),
    "stream-error-event": (Reply(sse=sse({"error": {"message": f"bad key {KEY}"}}), headers=ECHO_HEADERS),),
}


def chain_text(exc: BaseException) -> str:
    """The exception as a person sees it (traceback with chain) and as code sees it (reprs, attributes)."""
    parts = ["".join(traceback.format_exception(exc))]
    link: BaseException | None = exc
    seen: set[int] = set()
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        parts += [repr(link), str(link), repr(vars(link)), repr(link.args)]
        request = getattr(link, "request", None)  # an httpx error's request, if one slipped through
        if request is not None:
            parts.append(repr(dict(request.headers)))
        link = link.__cause__ or link.__context__
    return "\n".join(parts)


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    agent_cli(list(argv))
    captured = capsys.readouterr()
    return captured.out + captured.err


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_no_channel_carries_any_run_of_the_key(
    server: WireServer,
    sleeps: Sleeps,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    scenario: str,
) -> None:
    """A server echoing the key everywhere: every channel is searched for an 8-character run of it; none is found."""
    caplog.set_level(logging.DEBUG)
    server.push(*SCENARIOS[scenario])
    provider = openai_compatible(f"{server.url}/v1", api_key=KEY, model="m", sleep=sleeps, retry=RetryPolicy(2))
    db = tmp_path / "runs.db"
    store = SqliteStore(db)
    weather = define_tool(name="weather", description="d", input_schema={"type": "object"}, execute=lambda a, c: "ok")
    stream = scenario.endswith(("stream", "event"))
    agent = Agent.create(provider=provider, model="m", store=store, stream=stream).tool(weather).build()
    events: list[str] = []
    agent.on("*", lambda name, payload: events.append(f"{name} {payload!r}"))

    with pytest.raises(ProviderError) as info:
        agent.run("hello")

    [record] = store.list()
    dump = "\n".join(sqlite3.connect(db).iterdump())
    channels: dict[str, str] = {
        "exception": chain_text(info.value),
        "store rows (SQL dump)": dump,
        "store record": repr(record) + json.dumps(attrs.asdict(record, recurse=True), default=repr),
        "trace": record_trace(record).to_json(),
        "cli runs list --json": cli(capsys, "runs", "list", "--json", "--db", str(db)),
        "cli runs show": cli(capsys, "runs", "show", record.run_id, "--db", str(db)),
        "cli runs show --json": cli(capsys, "runs", "show", record.run_id, "--json", "--db", str(db)),
        "cli runs trace": cli(capsys, "runs", "trace", record.run_id, "--db", str(db)),
        "events": "\n".join(events),
        "log": caplog.text,
        "provider repr and asdict": repr(provider) + repr(attrs.asdict(provider)) + repr(agent.config),
    }
    try:
        snapshot = agent.last_snapshot()
    except RuntimeError:  # a run that failed may leave no snapshot; the store has its record
        pass
    else:
        channels["snapshot and narrative"] = repr(snapshot.shared_state) + "\n".join(snapshot.narrative)
    leaks = {name: runs_of_key(text) for name, text in channels.items() if runs_of_key(text)}
    assert leaks == {}
    assert len(channels) >= 11
