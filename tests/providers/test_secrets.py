"""The API key never leaves the Authorization header: not in errors, reprs or tracebacks."""

from __future__ import annotations

import copy
import pickle
import traceback
from collections.abc import Callable

import attrs
import pytest

from agent.providers import LLMRequest, ProviderError, anthropic, openai_compatible
from agent.providers.secret import redact

from .wire import Reply, Sleeps, WireServer, closed_port

KEY = "sk-SECRET-do-not-print-0123456789"
REQ = LLMRequest("sys", [{"role": "user", "content": "hi"}], [], "m")

Factory = Callable[[str, Sleeps], object]
FACTORIES: dict[str, Factory] = {
    "openai_compatible": lambda url, sleep: openai_compatible(f"{url}/v1", api_key=KEY, sleep=sleep),
    "anthropic": lambda url, sleep: anthropic(api_key=KEY, base_url=url, sleep=sleep),
}


def assert_no_key(exc: BaseException) -> None:
    text = "".join(traceback.format_exception(exc))
    assert KEY not in text
    assert KEY not in repr(exc)
    assert all(KEY not in repr(value) for value in vars(exc).values())


@pytest.mark.parametrize("flavour", sorted(FACTORIES))
def test_repr_hides_the_key(flavour: str, sleeps: Sleeps) -> None:
    """A provider's repr shows its address and model, never its key."""
    provider = FACTORIES[flavour]("http://127.0.0.1:1", sleeps)
    assert KEY not in repr(provider)
    assert KEY not in str(provider)


@pytest.mark.parametrize("flavour", sorted(FACTORIES))
@pytest.mark.parametrize(
    "reply",
    [
        Reply(status=401, json={"error": {"message": f"Incorrect API key provided: {KEY}"}}),
        Reply(status=404, json={"error": {"message": f"model m not found for key {KEY}"}}),
        Reply(status=400, json={"error": {"message": f"context length exceeded ({KEY})"}}),
        Reply(status=418, body=f"teapot {KEY}".encode()),
        Reply(status=500, json={"error": {"message": KEY}}),
    ],
    ids=["401", "404", "context", "418", "500"],
)
async def test_errors_never_carry_the_key(server: WireServer, sleeps: Sleeps, flavour: str, reply: Reply) -> None:
    """Even when the server echoes the key, the error text shows *** instead."""
    server.push(reply, reply, reply)
    provider = FACTORIES[flavour](server.url, sleeps)
    with pytest.raises(ProviderError, match=r"\*\*\*") as info:
        await provider.complete(REQ)  # type: ignore[attr-defined]
    assert_no_key(info.value)


@pytest.mark.parametrize("flavour", sorted(FACTORIES))
async def test_connection_errors_never_carry_the_key(sleeps: Sleeps, flavour: str) -> None:
    """A refused connection's error and traceback carry no key (and no httpx traceback)."""
    provider = FACTORIES[flavour](f"http://127.0.0.1:{closed_port()}", sleeps)
    with pytest.raises(ProviderError) as info:
        await provider.complete(REQ)  # type: ignore[attr-defined]
    assert_no_key(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


# --- masking: only real keys, whole runs of them, before the cut --------------------------------


def test_a_short_key_never_masks_ordinary_words() -> None:
    """``api_key="x"`` (shorter than 8 characters) masks nothing: "maximum context" stays readable."""
    said = "This model's maximum context length is 2048 tokens"
    assert redact(said, "x") == said
    assert redact(said, "context") == said  # 7 characters: not a secret worth masking


def test_every_run_of_eight_characters_of_the_key_is_masked() -> None:
    """The whole key, a prefix, a suffix and a middle part (≥ 8 characters) each become ``***``."""
    assert redact(f"got {KEY}.", KEY) == "got ***."
    assert redact(f"key {KEY[:12]}… rejected", KEY) == "key ***… rejected"
    assert redact(f"ends in {KEY[-9:]}", KEY) == "ends in ***"
    assert redact(f"[{KEY[5:20]}]", KEY) == "[***]"
    assert redact(f"{KEY}{KEY}", KEY) == "***"
    assert redact(f"short {KEY[:7]} run", KEY) == f"short {KEY[:7]} run"


async def test_a_key_echoed_across_the_cut_leaves_no_run_of_it(server: WireServer, sleeps: Sleeps) -> None:
    """The key sits where a long message is cut: masked first, so no 8-character run of it survives."""
    for filler in (150, 155, 160, 290, 295, 300):
        server.push(Reply(status=400, json={"error": {"message": "x" * filler + KEY + "y" * 600}}))
        with pytest.raises(ProviderError) as info:
            await FACTORIES["openai_compatible"](server.url, sleeps).complete(REQ)  # type: ignore[attr-defined]
        assert leaked_runs(str(info.value)) == [], filler


def leaked_runs(text: str, key: str = KEY) -> list[str]:
    """Every 8-character run of ``key`` found in ``text``."""
    return sorted({key[i : i + 8] for i in range(len(key) - 7) if key[i : i + 8] in text})


# --- the key's container: repr, asdict, pickle -------------------------------------------------


@pytest.mark.parametrize("flavour", sorted(FACTORIES))
def test_asdict_of_a_provider_shows_a_masked_key(flavour: str, sleeps: Sleeps) -> None:
    """``attrs.asdict(provider)`` keeps the key as a ``Secret`` whose repr is ``***``; pickling is refused."""
    provider = FACTORIES[flavour]("http://127.0.0.1:1", sleeps)
    dumped = attrs.asdict(provider)  # type: ignore[arg-type]
    assert leaked_runs(repr(dumped)) == [] and leaked_runs(str(dumped)) == []
    assert repr(dumped["api_key"]) == "Secret('***')"
    with pytest.raises(TypeError, match=r"^a Secret is never pickled"):
        pickle.dumps(provider)
    assert copy.deepcopy(provider) == provider


# --- the exception chain ------------------------------------------------------------------------


@pytest.mark.parametrize("flavour", sorted(FACTORIES))
@pytest.mark.parametrize("failure", ["refused", "timeout", "reset", "stream-bad-json"])
async def test_an_error_carries_no_transport_request(
    server: WireServer, sleeps: Sleeps, flavour: str, failure: str
) -> None:
    """Refused, timed out, reset (also mid-stream): the error's chain holds no httpx exception or request."""
    if failure == "refused":
        provider = FACTORIES[flavour](f"http://127.0.0.1:{closed_port()}", sleeps)
    else:
        reply = {"timeout": Reply(json={}, delay=2.0), "reset": Reply(drop=True)}.get(failure)
        server.push(*([reply] * 3 if reply else [Reply(sse=("data: {",))]))
        provider = FACTORIES[flavour](server.url, sleeps)
        if failure == "timeout":
            provider = attrs.evolve(provider, timeout=0.2)  # type: ignore[misc]
    with pytest.raises(ProviderError) as info:
        if failure == "stream-bad-json":
            [_ async for _ in provider.stream(REQ)]  # type: ignore[attr-defined]
        else:
            await provider.complete(REQ)  # type: ignore[attr-defined]
    error = info.value
    assert error.__cause__ is None and error.__context__ is None and error.__suppress_context__
    assert "httpx" not in "".join(traceback.format_exception(error))
    assert KEY not in repr(vars(error))
