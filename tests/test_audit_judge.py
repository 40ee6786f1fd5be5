"""python -m agents.audit RUN --judge ...: the LLM judge of fast survivors, through the real OpenAI and Anthropic SDKs
against the local fake server (tests/fake_llm_server.py), on the synthetic run (agents/report/synthetic.py).

The synthetic run has two verified-correct kernels at >= 1.2x: level1/88_MinGPTNewGelu (2.0x) and
level1/20_LeakyReLU turn 2 (1.25x); at --min-speedup 1.5 only the first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import problems as P
from agents.audit import JUDGE_FILE, JudgeConfig, judge_run, parse_answer, read_judgements
from agents.audit.__main__ import main as cli
from agents.report import build_report, render_html
from agents.report.synthetic import write_synthetic_run
from agents.store import RunStore
from tests.fake_llm_server import Step, anthropic_events, chat_body, responses_body

RESPONSES, CHAT, MESSAGES_PATH = "/v1/responses", "/v1/chat/completions", "/v1/messages"
GELU = "level1/88_MinGPTNewGelu"
LEAKY = "level1/20_LeakyReLU"
GOOD = json.dumps({"category": "genuine_optimisation", "reason": "fuses the tanh-GELU into one pass over memory"})


@pytest.fixture
def run(tmp_path) -> Path:
    d = tmp_path / "synth"
    write_synthetic_run(d)
    return d


def judge(run: Path, spec: str, models_toml: Path | None = None, min_speedup: float = 1.5, **kw):
    return judge_run(run, JudgeConfig(judge=spec, min_speedup=min_speedup, models_config=models_toml, **kw))


def user_text(body: dict) -> str:
    """The user turns of a Responses request (system prompt goes to 'instructions')."""
    return "\n".join(m["content"] for m in body["input"] if m["role"] == "user")


def test_prompt_carries_kernel_problem_and_evidence(llm_server, run, fast_models_toml):
    llm_server.script(RESPONSES, Step.json(responses_body(GOOD)), Step.json(responses_body(GOOD)))
    before = (run / "attempts.jsonl").read_bytes()
    result = judge(run, "gpt", fast_models_toml, min_speedup=1.2)

    assert sorted(e.problem_id for e in result.entries) == sorted([GELU, LEAKY])
    assert all(e.status == "judged" and e.category == "genuine_optimisation" for e in result.entries)
    bodies = [r.body for r in llm_server.requests_to(RESPONSES)]
    assert len(bodies) == 2
    gelu = next(b for b in bodies if GELU in user_text(b))
    text = user_text(gelu)
    attempt = next(a for a in RunStore(run) if a.problem_id == GELU)
    assert attempt.kernel_source and attempt.kernel_source.strip() in text  # the kernel
    assert P.load(GELU).source("small").strip() in text  # the problem, at the size it was measured (small)
    facts = json.loads(text.split("```json\n")[1].split("\n```")[0])  # the evidence, as the record has it
    assert facts["verified_speedup"] == pytest.approx(2.0) and facts["naive_speedup"] == pytest.approx(2.0)
    assert facts["verified_verdict"] == "correct" and facts["memory_ratio"] == pytest.approx(0.5)
    assert facts["timing"]["verified_kernel"]["median_ms"] == pytest.approx(0.5)
    for category in ("genuine_optimisation", "library_call_only", "exploits_problem_structure", "precision_trick",
                     "caching_or_timing_exploit", "unsure"):
        assert category in gelu["instructions"]
    # stored beside the verdict, keyed by attempt; attempts.jsonl untouched
    assert (run / "attempts.jsonl").read_bytes() == before
    stored = {e.attempt_key: e for e in read_judgements(run)}
    assert ("synth", "zero_shot", LEAKY, 0, 2, "fp32") in stored
    # gpt-5.5 at $5 / $0.5 cached / $30 per MTok (agents/prices.toml): 176 fresh + 1024 cached in, 900 out, per call
    assert result.summary.cost_usd == pytest.approx(2 * (176 * 5 + 1024 * 0.5 + 900 * 30) / 1e6)


def test_malformed_json_gets_one_retry_with_the_error(llm_server, run, fast_models_toml):
    llm_server.script(RESPONSES, Step.json(responses_body('{"category": "genuine_optimisation", "reason": ')),
                  Step.json(responses_body(f"Sure.\n```json\n{GOOD}\n```")))
    (e,) = judge(run, "gpt", fast_models_toml).entries
    assert (e.status, e.category) == ("judged", "genuine_optimisation")
    first, second = (r.body for r in llm_server.requests_to(RESPONSES))
    assert [m["role"] for m in second["input"]] == ["user", "assistant", "user"]
    assert second["input"][1]["content"] == '{"category": "genuine_optimisation", "reason": '
    assert "malformed JSON" in second["input"][2]["content"]
    assert len(e.exchanges) == 2


def test_unknown_category_twice_is_unsure_with_the_error(llm_server, run, fast_models_toml):
    bad = json.dumps({"category": "very_fast", "reason": "it is fast"})
    llm_server.script(RESPONSES, Step.json(responses_body(bad)), Step.json(responses_body(bad)))
    (e,) = judge(run, "gpt", fast_models_toml).entries
    assert (e.status, e.category) == ("schema_error", "unsure")
    assert "unknown category 'very_fast'" in e.reason
    assert "unknown category 'very_fast'" in user_text(llm_server.requests_to(RESPONSES)[1].body)
    assert len(llm_server.requests_to(RESPONSES)) == 2  # one retry, no more


def test_rate_limit_is_retried(llm_server, run, fast_models_toml):
    llm_server.script(RESPONSES, Step.error(429, "slow down", headers={"retry-after": "0"}, kind="rate_limit_error"),
                  Step.json(responses_body(GOOD)))
    (e,) = judge(run, "gpt", fast_models_toml).entries
    assert e.status == "judged" and len(llm_server.requests_to(RESPONSES)) == 2


def test_a_rejected_request_is_that_kernels_error(llm_server, run, fast_models_toml):
    llm_server.script(RESPONSES, Step.error(400, "model not found", kind="invalid_request_error"))
    (e,) = judge(run, "gpt", fast_models_toml).entries
    assert e.status == "error" and e.category is None and "model not found" in (e.note or "")


def test_second_run_is_served_from_the_cache(llm_server, run, fast_models_toml):
    llm_server.script(RESPONSES, Step.json(responses_body(GOOD)))
    first = judge(run, "gpt", fast_models_toml)
    assert first.summary.cost_usd > 0 and first.summary.cached_calls == 0
    second = judge(run, "gpt", fast_models_toml)
    assert len(llm_server.requests_to(RESPONSES)) == 1  # nothing new asked
    assert second.entries[0].category == "genuine_optimisation"
    assert (second.summary.cached_calls, second.summary.cost_usd) == (1, 0.0)
    assert (run / ".judge_cache").is_dir()
    assert len(read_judgements(run)) == 1  # the judge's lines replaced, not appended


def test_replay_serves_recorded_answers_without_a_key(llm_server, run, fast_models_toml, monkeypatch, tmp_path):
    llm_server.script(RESPONSES, Step.json(responses_body('{"category": "nope"}')),
                  Step.json(responses_body(json.dumps({"category": "precision_trick", "reason": "uses half"}))))
    judge(run, "gpt", fast_models_toml)
    recorded = tmp_path / "recorded.jsonl"
    recorded.write_text((run / JUDGE_FILE).read_text())
    monkeypatch.delenv("OPENAI_API_KEY")
    replayed = judge(run, f"replay:{recorded}").entries
    assert [(e.status, e.category, len(e.exchanges)) for e in replayed] == [("judged", "precision_trick", 2)]
    assert len(llm_server.requests_to(RESPONSES)) == 2  # replay asked nothing
    assert {e.judge for e in read_judgements(run)} == {"gpt", f"replay:{recorded}"}  # both judges kept
    # a prompt never recorded (another kernel here, judged at a lower threshold) is an error entry, not a crash
    more = judge(run, f"replay:{recorded}", min_speedup=1.2).entries
    assert {(e.problem_id, e.status) for e in more} == {(GELU, "judged"), (LEAKY, "error")}
    assert "no answer recorded" in next(e.note for e in more if e.problem_id == LEAKY)


def test_claude_and_openai_compatible(llm_server, run, fast_models_toml):
    llm_server.script(MESSAGES_PATH, Step.sse(anthropic_events(GOOD)))
    (e,) = judge(run, "claude", fast_models_toml).entries
    assert (e.status, e.judge_model) == ("judged", "claude-opus-5-5")
    body = llm_server.requests_to(MESSAGES_PATH)[0].body
    assert "exploits_problem_structure" in body["system"] and GELU in body["messages"][0]["content"]
    llm_server.script(CHAT, Step.json(chat_body(json.dumps({"category": "library_call_only", "reason": "cuBLAS"}))))
    (e,) = judge(run, f"openai-compatible:qwen3-coder@{llm_server.url}/v1", fast_models_toml).entries
    assert (e.category, e.cost_usd) == ("library_call_only", None)  # not in prices.toml: unpriced, not $0
    assert judge_run(run, JudgeConfig(judge=f"openai-compatible:qwen3-coder@{llm_server.url}/v1", min_speedup=1.5)
                     ).summary.unpriced_calls == 0  # the cache answered: nothing to price


def test_missing_key_is_one_line(run, monkeypatch, capsys):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert cli([str(run), "--judge", "claude"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ANTHROPIC_API_KEY is not set" in err and "replay:" in err
    assert not (run / JUDGE_FILE).exists()


def test_stripped_run_is_skipped_with_a_note(run, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # nothing to ask: no key needed
    lines = [json.loads(x) for x in (run / "attempts.jsonl").read_text().splitlines()]
    (run / "attempts.jsonl").write_text("".join(json.dumps({**a, "kernel_source": None}) + "\n" for a in lines))
    assert cli([str(run), "--judge", "gpt", "--min-speedup", "1.2"]) == 0
    out = capsys.readouterr().out
    assert "2 of 2 fast survivor(s) have no kernel source" in out
    assert [e.status for e in read_judgements(run)] == ["skipped", "skipped"]


def test_report_shows_the_judge_and_keeps_verdicts(llm_server, run, fast_models_toml):
    before = build_report(run, resamples=0)
    llm_server.script(RESPONSES, Step.json(responses_body(json.dumps(
        {"category": "caching_or_timing_exploit", "reason": "returns <b>cached</b> output"}))))
    judge(run, "gpt", fast_models_toml)
    after = build_report(run, resamples=0)
    assert [e.category for e in after.judge] == ["caching_or_timing_exploit"]
    assert after.headline == before.headline and after.audit == before.audit  # no verdict or figure moved
    html = render_html(after, plots={})
    assert 'id="judge-1"' in html and "caching_or_timing_exploit" in html
    assert "&lt;b&gt;cached&lt;/b&gt;" in html  # the model's text is escaped
    from rich.console import Console

    from agents.report.text import print_report

    console = Console(width=250, record=True)
    print_report(after, console)
    text = console.export_text()
    assert "LLM judge gpt" in text and "caching_or_timing_exploit" in text


def test_parse_answer_accepts_fenced_and_bare_json():
    assert parse_answer(f"```json\n{GOOD}\n```").category == "genuine_optimisation"
    assert parse_answer(f"My answer: {GOOD}").category == "genuine_optimisation"
