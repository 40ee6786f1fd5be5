"""The real OpenAI and Anthropic SDKs against a local fake server (tests/conftest.py llm_server), through resolve()."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from agents.models import (
    BadResponse,
    GenerationParams,
    Message,
    ModelRequest,
    ProviderUnavailable,
    RequestContext,
    RequestRejected,
    resolve,
)
from tests.fake_llm_server import Step, anthropic_events, chat_body, responses_body

CTX = RequestContext(problem_id="level1/19_ReLU", level=1, number=19, backend="cpu")
MESSAGES = [Message(role="system", content="You write kernels."), Message(role="user", content="Write ReLU.")]
RESPONSES, CHAT, MESSAGES_PATH = "/v1/responses", "/v1/chat/completions", "/v1/messages"



def run(spec: str, config: Path | None = None, **params):
    async def go():
        client = resolve(spec, config_path=config)
        try:
            request = ModelRequest(messages=MESSAGES, params=GenerationParams(**params), context=CTX)
            return await client.complete(request)
        finally:
            await client.aclose()

    return asyncio.run(go())


# ---- normal answers, with the packaged models.toml (no code change, only env vars) ------------------

def test_gpt_alias_uses_responses_api(llm_server):
    llm_server.script(RESPONSES, Step.json(responses_body("```python\nclass ModelNew: ...\n```"),
                                       headers={"x-request-id": "req_abc"}))
    c = run("gpt")
    assert c.finish == "stop" and c.text.startswith("```python")
    assert (c.provider, c.model, c.request_id) == ("openai", "gpt-5.5-2026-04-23", "req_abc")
    u = c.usage
    assert (u.input_tokens, u.cached_input_tokens, u.output_tokens, u.reasoning_tokens) == (1200, 1024, 900, 700)
    # gpt-5.5 at $5 / $0.5 cached / $30 per MTok: 176 fresh + 1024 cached in, 900 out
    assert c.cost_usd == pytest.approx((176 * 5 + 1024 * 0.5 + 900 * 30) / 1e6)
    body = llm_server.requests_to(RESPONSES)[0].body
    assert body["model"] == "gpt-5.5" and body["store"] is False
    assert body["reasoning"] == {"effort": "high"} and body["max_output_tokens"] == 32000  # alias defaults
    assert body["instructions"] == "You write kernels."
    assert body["input"] == [{"role": "user", "content": "Write ReLU."}]
    assert "temperature" not in body
    assert llm_server.requests_to(RESPONSES)[0].headers["authorization"] == "Bearer sk-dummy"


def test_explicit_params_override_alias_defaults(llm_server):
    llm_server.script(RESPONSES, Step.json(responses_body("ok")))
    run("gpt", max_tokens=1000, reasoning_effort="low", temperature=0.2)
    body = llm_server.requests_to(RESPONSES)[0].body
    assert (body["max_output_tokens"], body["reasoning"], body["temperature"]) == (1000, {"effort": "low"}, 0.2)


def test_claude_alias_streams_messages_and_drops_thinking(llm_server):
    llm_server.script(MESSAGES_PATH, Step.sse(anthropic_events("Here is the kernel."), headers={"request-id": "req_1"}))
    c = run("claude")
    assert c.text == "Here is the kernel." and c.finish == "stop"
    assert (c.provider, c.model, c.request_id) == ("anthropic", "claude-opus-5-5", "req_1")
    u = c.usage
    # Anthropic's input_tokens excludes cache reads/writes; normalised input includes them.
    assert (u.input_tokens, u.cached_input_tokens, u.cache_write_tokens) == (1200, 800, 300)
    assert (u.output_tokens, u.reasoning_tokens) == (500, 200)
    assert c.cost_usd == pytest.approx((100 * 5 + 800 * 0.5 + 300 * 6.25 + 500 * 25) / 1e6)
    req = llm_server.requests_to(MESSAGES_PATH)[0]
    assert req.body["stream"] is True and req.body["max_tokens"] == 32000
    assert req.body["thinking"] == {"type": "adaptive"} and req.body["output_config"] == {"effort": "high"}
    assert req.body["system"] == "You write kernels."
    # anthropic 2.x sends the key as a bearer token; older SDKs used x-api-key
    assert "sk-ant-dummy" in req.headers.get("x-api-key", "") + req.headers.get("authorization", "")


def test_claude_thinking_budget(llm_server):
    llm_server.script(MESSAGES_PATH, Step.sse(anthropic_events("ok", thinking=None)))
    run("anthropic:claude-sonnet-4-6", thinking_budget=4096, max_tokens=8000)
    body = llm_server.requests_to(MESSAGES_PATH)[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert "output_config" not in body


def test_openai_compatible_chat_completions(llm_server):
    llm_server.script(CHAT, Step.json(chat_body("hello")))
    c = run(f"openai-compatible:qwen3-coder@{llm_server.url}/v1", temperature=0.0)
    assert (c.text, c.finish, c.provider, c.model) == ("hello", "stop", "openai-compatible", "qwen3-coder")
    assert (c.usage.input_tokens, c.usage.output_tokens) == (50, 20)
    assert c.cost_usd is None  # not in prices.toml: no cost, no error
    req = llm_server.requests_to(CHAT)[0]
    assert req.headers["authorization"] == "Bearer EMPTY"
    assert req.body["messages"][0] == {"role": "system", "content": "You write kernels."}
    assert req.body["max_tokens"] == 16000 and req.body["temperature"] == 0.0


def test_openai_compatible_without_usage(llm_server):
    llm_server.script(CHAT, Step.json(chat_body("hi", usage=False)))
    c = run(f"openai-compatible:m@{llm_server.url}/v1")
    assert c.usage.input_tokens == 0 and c.text == "hi"


# ---- truncation is an outcome, not an error -----------------------------------------------------------

def test_truncated_outputs(llm_server, fast_models_toml):
    llm_server.script(RESPONSES, Step.json(responses_body("```python\nclass Mo", status="incomplete",
                                                      incomplete_reason="max_output_tokens")))
    llm_server.script(MESSAGES_PATH, Step.sse(anthropic_events("```python\nclass Mo", stop_reason="max_tokens")))
    llm_server.script(CHAT, Step.json(chat_body("```python\nclass Mo", finish_reason="length")))
    assert run("gpt", fast_models_toml).finish == "length"
    assert run("claude", fast_models_toml).finish == "length"
    assert run(f"openai-compatible:m@{llm_server.url}/v1", fast_models_toml).finish == "length"


# ---- the retry layer --------------------------------------------------------------------------------

def test_429_retry_after_is_honoured(llm_server, fast_models_toml):
    llm_server.script(RESPONSES, Step.error(429, "slow down", {"retry-after": "1"}, "rate_limit_error"),
                  Step.json(responses_body("ok")))
    start = time.monotonic()
    c = run("gpt", fast_models_toml)
    first, second = llm_server.requests_to(RESPONSES)
    assert c.text == "ok"
    assert second.at - first.at >= 0.95  # waited the server's 1 s, not the 0.01 s backoff
    assert time.monotonic() - start < 5


def test_429_retry_after_ms_anthropic(llm_server, fast_models_toml):
    llm_server.script(MESSAGES_PATH, Step.error(429, "slow down", {"retry-after-ms": "300"}, "rate_limit_error"),
                  Step.sse(anthropic_events("ok")))
    c = run("claude", fast_models_toml)
    first, second = llm_server.requests_to(MESSAGES_PATH)
    assert c.text == "ok" and second.at - first.at >= 0.28


def test_500_then_success(llm_server, fast_models_toml):
    llm_server.script(RESPONSES, Step.error(500), Step.json(responses_body("ok")))
    assert run("gpt", fast_models_toml).text == "ok"
    assert len(llm_server.requests_to(RESPONSES)) == 2


def test_529_overloaded_then_success(llm_server, fast_models_toml):
    llm_server.script(MESSAGES_PATH, Step.error(529, "Overloaded", kind="overloaded_error"),
                  Step.sse(anthropic_events("ok")))
    assert run("claude", fast_models_toml).text == "ok"
    assert len(llm_server.requests_to(MESSAGES_PATH)) == 2


def test_retries_exhausted(llm_server, fast_models_toml):
    llm_server.script(MESSAGES_PATH, *[Step.error(529, "Overloaded", kind="overloaded_error")] * 3)
    with pytest.raises(ProviderUnavailable) as err:
        run("claude", fast_models_toml)
    assert err.value.attempts == 3 and len(llm_server.requests_to(MESSAGES_PATH)) == 3  # SDK retries are off


def test_timeout_then_success(llm_server, fast_models_toml):
    llm_server.script(RESPONSES, Step.hang(1.5), Step.json(responses_body("ok")))
    c = run("gpt", fast_models_toml, timeout_s=0.3)
    assert c.text == "ok" and len(llm_server.requests_to(RESPONSES)) == 2
    assert c.latency_s < 1.4  # gave up on the hung attempt at the timeout


def test_timeout_exhausted_anthropic(llm_server, fast_models_toml):
    llm_server.script(MESSAGES_PATH, *[Step.hang(1.0)] * 3)
    with pytest.raises(ProviderUnavailable, match="attempt"):
        run("claude", fast_models_toml, timeout_s=0.2)


def test_connection_refused(monkeypatch, fast_models_toml):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-dummy")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # discard port: nothing listens
    with pytest.raises(ProviderUnavailable):
        run("gpt", fast_models_toml)


def test_bad_request_is_not_retried(llm_server, fast_models_toml):
    llm_server.script(RESPONSES, Step.error(400, "unknown parameter", kind="invalid_request_error"))
    with pytest.raises(RequestRejected) as err:
        run("gpt", fast_models_toml)
    assert err.value.status == 400 and len(llm_server.requests_to(RESPONSES)) == 1


@pytest.mark.parametrize("path,spec", [(RESPONSES, "gpt"), (CHAT, "openai-compatible:m@{url}/v1")])
def test_malformed_json_body(llm_server, fast_models_toml, path, spec):
    llm_server.script(path, Step.raw(b'{"id": "resp_1", "output": [tru'))
    with pytest.raises(BadResponse):
        run(spec.format(url=llm_server.url), fast_models_toml)


def test_malformed_sse_stream(llm_server, fast_models_toml):
    llm_server.script(MESSAGES_PATH, Step.raw(b"event: message_start\ndata: {not json\n\n", content_type="text/event-stream"))
    with pytest.raises(BadResponse):
        run("claude", fast_models_toml)


def test_concurrency_limit_per_provider(llm_server, fast_models_toml):
    llm_server.script(CHAT, *[Step.json(chat_body("ok"), delay_s=0.2)] * 6)

    async def go():
        client = resolve(f"openai-compatible:m@{llm_server.url}/v1", config_path=fast_models_toml)
        try:
            reqs = [ModelRequest(messages=MESSAGES, context=CTX.model_copy(update={"sample": i})) for i in range(6)]
            return await asyncio.gather(*(client.complete(r) for r in reqs))
        finally:
            await client.aclose()

    results = asyncio.run(go())
    assert all(r.text == "ok" for r in results)
    assert llm_server.max_in_flight == 2  # concurrency = 2 in the config
