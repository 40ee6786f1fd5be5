"""Response cache and replay: client."""

from __future__ import annotations

import asyncio
import json

import pytest

from agents.extract import extract_code
from agents.models import (
    CachedClient,
    Completion,
    GenerationParams,
    Message,
    ModelRequest,
    RequestContext,
    Usage,
    replay_inventory,
    resolve,
)


class CountingClient:
    spec = provider = "counting"
    model = "m"

    def __init__(self, finish="stop"):
        self.calls = 0
        self.finish = finish

    async def complete(self, request):
        self.calls += 1
        return Completion(text=f"answer {self.calls}", finish=self.finish, usage=Usage(output_tokens=7),
                          cost_usd=0.01, model="m-2026", provider="counting")

    async def aclose(self):
        pass


def req(sample=0, content="hi", turn=1, **params):
    ctx = RequestContext(problem_id="level1/19_ReLU", level=1, number=19, backend="cpu", sample=sample, turn=turn)
    return ModelRequest(messages=[Message(role="user", content=content)], params=GenerationParams(**params),
                        context=ctx)


def test_second_call_is_cached(tmp_path):
    inner = CountingClient()
    client = CachedClient(inner, tmp_path / "cache")
    first = asyncio.run(client.complete(req()))
    second = asyncio.run(client.complete(req()))
    assert inner.calls == 1
    assert (first.cached, first.cost_usd) == (False, 0.01)
    assert (second.cached, second.cost_usd, second.text, second.usage.output_tokens) == (True, 0.0, "answer 1", 7)
    assert not list((tmp_path / "cache").rglob(".tmp-*"))  # atomic writes leave no temp files
    entry = next((tmp_path / "cache").rglob("*.json"))
    assert json.loads(entry.read_text())["text"] == "answer 1"


def test_key_covers_sample_messages_and_params_not_timeout(tmp_path):
    inner = CountingClient()
    client = CachedClient(inner, tmp_path)
    for r in (req(), req(sample=1), req(content="other"), req(temperature=0.5), req(timeout_s=5)):
        asyncio.run(client.complete(r))
    assert inner.calls == 4  # only the timeout change was a hit


def test_errors_are_not_cached_and_corrupt_entries_are_misses(tmp_path):
    inner = CountingClient(finish="error")
    client = CachedClient(inner, tmp_path)
    asyncio.run(client.complete(req()))
    asyncio.run(client.complete(req()))
    assert inner.calls == 2
    ok = CachedClient(CountingClient(), tmp_path / "b")
    asyncio.run(ok.complete(req()))
    next((tmp_path / "b").rglob("*.json")).write_text("{truncated")
    assert asyncio.run(ok.complete(req())).cached is False


def test_cached_api_client_makes_no_http_request(tmp_path, llm_server):
    from tests.fake_llm_server import Step, responses_body

    llm_server.script("/v1/responses", Step.json(responses_body("kernel")))

    async def go():
        client = resolve("gpt", cache_dir=tmp_path)
        try:
            return [await client.complete(req()) for _ in range(2)]
        finally:
            await client.aclose()

    first, second = asyncio.run(go())
    assert len(llm_server.requests) == 1
    assert first.cost_usd > 0 and (second.cached, second.cost_usd, second.text) == (True, 0.0, "kernel")


# ---- replay -----------------------------------------------------------------------------------------

KERNEL = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


@pytest.fixture
def recordings(tmp_path):
    flat = tmp_path / "run"
    flat.mkdir()
    (flat / "level_1_problem_19_sample_0_kernel.py").write_text(KERNEL)
    (flat / "level_1_problem_19_sample_1_kernel.py").write_text(KERNEL.replace("x\n", "x * 1\n"))
    (flat / "level_2_problem_12_sample_0_turn_1.txt").write_text("First try:\n```python\n" + KERNEL + "```\n")
    (flat / "level_2_problem_12_sample_0_turn_2.md").write_text("Fixed:\n```python\n" + KERNEL + "```\n")
    (flat / "level_1_problem_19_sample_0_prompt.txt").write_text("not a response")  # ignored
    nested = tmp_path / "kb" / "level1"
    nested.mkdir(parents=True)
    (nested / "23_Softmax.py").write_text(KERNEL)
    (tmp_path / "kb" / "level1" / "notes.txt").write_text("ignored")
    return tmp_path


def replay(path, level, number, sample=0, turn=1):
    ctx = RequestContext(problem_id=f"level{level}/{number}", level=level, number=number, backend="cuda",
                         sample=sample, turn=turn)
    client = resolve(f"replay:{path}")
    return asyncio.run(client.complete(ModelRequest(messages=[Message(role="user", content="x")], context=ctx)))


def test_replay_kernelbench_names(recordings):
    c = replay(recordings / "run", 1, 19, sample=1)
    assert c.finish == "stop" and c.provider == "replay" and c.cost_usd == 0.0
    assert c.text.startswith("```python\n") and "x * 1" in extract_code(c.text, "cuda").code


def test_replay_raw_turns(recordings):
    assert replay(recordings / "run", 2, 12, turn=1).text.startswith("First try")
    assert replay(recordings / "run", 2, 12, turn=2).text.startswith("Fixed")
    missing = replay(recordings / "run", 2, 12, turn=3)
    assert missing.finish == "error" and "no turn 3" in missing.error and "[1, 2]" in missing.error


def test_replay_nested_names(recordings):
    c = replay(recordings / "kb", 1, 23)
    assert c.finish == "stop" and extract_code(c.text, "cuda").code == KERNEL


def test_replay_missing_recording_is_an_error_completion(recordings):
    c = replay(recordings / "run", 1, 99)
    assert c.finish == "error" and "level 1 problem 99" in c.error and c.text == ""
    c = replay(recordings / "run", 1, 19, sample=5)
    assert c.finish == "error" and "no sample 5" in c.error


def test_replay_inventory(recordings):
    assert replay_inventory(recordings / "run") == [(1, 19, 0), (1, 19, 1), (2, 12, 0)]
    assert replay_inventory(recordings / "kb") == [(1, 23, 0)]
    assert replay_inventory(recordings) == [(1, 19, 0), (1, 19, 1), (1, 23, 0), (2, 12, 0)]


def test_a_recording_that_is_not_utf8_is_that_turns_error_not_a_crash(recordings):
    (recordings / "run" / "level_1_problem_30_sample_0_kernel.py").write_bytes(b"# caf\xe9\n" + KERNEL.encode())
    c = replay(recordings / "run", 1, 30)
    assert c.finish == "error" and "cannot read" in c.error and "utf-8" in c.error.lower() and c.text == ""
    assert replay(recordings / "run", 1, 19).finish == "stop"  # the others still replay
