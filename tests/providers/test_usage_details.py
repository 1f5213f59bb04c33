"""openai_compatible reads cached and reasoning tokens as the server reports them (unknown is None)."""

from __future__ import annotations

from agent.providers import LLMRequest, Usage, openai_compatible

from .wire import Reply, WireServer


async def test_openai_cached_and_reasoning_tokens_are_read_from_the_wire(server: WireServer) -> None:
    """``prompt_tokens_details.cached_tokens`` and ``completion_tokens_details.reasoning_tokens``
    are read as reported; a server that sends neither leaves them unknown (None)."""
    usage = {
        "prompt_tokens": 40,
        "completion_tokens": 9,
        "prompt_tokens_details": {"cached_tokens": 32},
        "completion_tokens_details": {"reasoning_tokens": 4},
    }
    body = {
        "model": "x",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
    }
    server.push(Reply(json={**body, "usage": usage}))
    server.push(Reply(json={**body, "usage": {"prompt_tokens": 40, "completion_tokens": 9}}))
    request = LLMRequest(None, [{"role": "user", "content": "hi"}], [], "x")
    provider = openai_compatible(f"{server.url}/v1")
    assert (await provider.complete(request)).usage == Usage(40, 9, 32, 4)
    assert (await provider.complete(request)).usage == Usage(40, 9, None, None)


async def test_anthropic_cache_tokens_count_as_prompt_tokens_and_reads_as_cached(server: WireServer) -> None:
    """Anthropic reports cache reads and writes apart from ``input_tokens``: the usage counts them
    as prompt tokens, the reads as ``cached_input_tokens``; without them the usage is as before."""
    from agent.providers import anthropic

    answer = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": "hi"}],
        "stop_reason": "end_turn",
    }
    cached = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}
    server.push(Reply(json={**answer, "usage": cached}))
    server.push(Reply(json={**answer, "usage": {"input_tokens": 10, "output_tokens": 5}}))
    request = LLMRequest(None, [{"role": "user", "content": "hi"}], [], "claude-test")
    provider = anthropic(api_key="sk-ant-test", base_url=server.url)
    assert (await provider.complete(request)).usage == Usage(130, 5, 100, None)
    assert (await provider.complete(request)).usage == Usage(10, 5, None, None)
