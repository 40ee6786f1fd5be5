"""The multi-turn driver over a real LocalExecutor with Python-only candidates (no C++ builds)."""

from __future__ import annotations

import json

import pytest
from test_loop_fakes import RELU_OK, RELU_SYNTAX_ERROR, RELU_WRONG, ScriptedClient, fenced

from agents.config import SweepConfig
from agents.store import RunStore
from agents.sweep import run_sweep

FAST = dict(naive_timing_trials=20, verified_min_iters=5, verified_max_iters=20, verified_seconds_per_subject=0.5,
            cpu_threads=1)


def config(tmp_path, **kw):
    base = dict(models=["scripted"], problems=["level1/19_ReLU"], device="cpu", size="small", turns=3,
                run_dir=tmp_path / "run", eval_settings=FAST, progress=False, build_workers=1)
    base.update(kw)
    return SweepConfig(**base)


def test_compile_error_then_fixed_on_turn_two(tmp_path):
    client = ScriptedClient([fenced(RELU_SYNTAX_ERROR), fenced(RELU_OK)])
    summary = run_sweep(config(tmp_path), clients={"scripted": client})
    attempts = sorted(RunStore(tmp_path / "run").attempts(), key=lambda a: a.turn)
    assert [a.turn for a in attempts] == [1, 2]
    first, second = attempts
    assert first.results["naive"]["verdict"] == "compile_error" and first.feedback_kind == "compile_error"
    assert "SyntaxError" in first.feedback and "unmatched ')'" in first.feedback
    assert first.record["error"] and not first.final
    assert second.results["verified"]["verdict"] == "correct" and second.final
    # The model saw the error: turn 2's prompt is turn 1's prompt + answer + that feedback.
    sent = client.requests[1].messages
    assert [m.role for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[-1].content == first.feedback and sent[2].content == first.response
    assert second.messages[-1]["content"] == first.feedback
    assert summary.rows[0].protocols["verified"].correct == 1
    # Config saved, resolved.
    saved = json.loads((tmp_path / "run" / "config.json").read_text())
    assert saved["models"] == ["scripted"] and saved["backend"] == "cpu" and saved["size"] == "small"
    assert (tmp_path / "run" / "summary.json").exists()


def test_stop_on_none_runs_all_turns_and_extraction_feedback(tmp_path):
    client = ScriptedClient(["I would rather describe it in words.", fenced(RELU_WRONG)])
    run_sweep(config(tmp_path, turns=2, stop_on="none"), clients={"scripted": client})
    attempts = sorted(RunStore(tmp_path / "run").attempts(), key=lambda a: a.turn)
    assert [a.feedback_kind for a in attempts] == ["no_code", "incorrect"]
    assert attempts[0].extraction_error and attempts[0].record is None
    assert "max abs error" in attempts[1].feedback and attempts[1].final


def test_budget_stops_new_model_calls(tmp_path):
    client = ScriptedClient([fenced(RELU_WRONG)], cost=0.02)
    summary = run_sweep(config(tmp_path, budget_usd=0.01), clients={"scripted": client})
    assert len(client.requests) == 1 and summary.attempts == 1 and summary.stopped_by_budget


def test_resume_continues_conversation(tmp_path):
    # First run is cut short by the budget after turn 1; resuming with a bigger budget continues at turn 2
    # with the conversation rebuilt from the store.
    client = ScriptedClient([fenced(RELU_SYNTAX_ERROR), fenced(RELU_OK)])
    run_sweep(config(tmp_path, budget_usd=0.005), clients={"scripted": client})
    assert len(RunStore(tmp_path / "run").attempts()) == 1
    client2 = ScriptedClient([fenced(RELU_SYNTAX_ERROR), fenced(RELU_OK)])
    resumed = SweepConfig(models=["scripted"], run_dir=tmp_path / "run", resume=True, budget_usd=1.0)
    run_sweep(resumed, clients={"scripted": client2})
    attempts = sorted(RunStore(tmp_path / "run").attempts(), key=lambda a: a.turn)
    assert [a.turn for a in attempts] == [1, 2]
    assert [r.context.turn for r in client2.requests] == [2]
    assert client2.requests[0].messages[-1].content == attempts[0].feedback
    assert attempts[1].final
    # A third resume has nothing left to do.
    client3 = ScriptedClient([fenced(RELU_OK)])
    run_sweep(resumed, clients={"scripted": client3})
    assert client3.requests == [] and len(RunStore(tmp_path / "run").attempts()) == 2


def test_existing_run_dir_needs_resume(tmp_path):
    from agents.sweep import SweepError

    client = ScriptedClient([fenced(RELU_OK)], cost=1.0)
    run_sweep(config(tmp_path, budget_usd=0.0), clients={"scripted": client})
    with pytest.raises(SweepError):
        run_sweep(config(tmp_path), clients={"scripted": client})


def test_resume_of_a_finished_run_keeps_its_summary(tmp_path):
    """Issue 20, item 7: --resume on a finished run rewrote summary.json as 'skipped 1, wall 0.07 s'."""
    client = ScriptedClient([fenced(RELU_OK)])
    first = run_sweep(config(tmp_path), clients={"scripted": client})
    path = tmp_path / "run" / "summary.json"
    written = path.read_text()
    resumed = SweepConfig(models=["scripted"], run_dir=tmp_path / "run", resume=True)
    again = run_sweep(resumed, clients={"scripted": ScriptedClient([fenced(RELU_OK)])})
    assert path.read_text() == written
    # Issue 33: what comes back says nothing was left to do, with this invocation's own time and no new attempt
    # (the CLI prints one line, not the earlier session's figures as its own).
    assert again.idle and again.new_attempts == 0 and again.attempts == first.attempts
    assert again.invocations == 1 and again.total_wall_s is None


def test_resume_that_adds_work_counts_its_own_wall_time_and_the_sum_apart(tmp_path):
    client = ScriptedClient([fenced(RELU_SYNTAX_ERROR), fenced(RELU_OK)])
    first = run_sweep(config(tmp_path, budget_usd=0.005), clients={"scripted": client})
    resumed = SweepConfig(models=["scripted"], run_dir=tmp_path / "run", resume=True, budget_usd=1.0)
    second = run_sweep(resumed, clients={"scripted": ScriptedClient([fenced(RELU_SYNTAX_ERROR), fenced(RELU_OK)])})
    assert second.new_attempts == 1 and second.invocations == 2 and not second.idle
    # Issue 33: wall_s is this session's own (a resumed copy of a run did not start when the original did); the
    # sessions' sum is apart
    assert second.total_wall_s == pytest.approx(first.wall_s + second.wall_s)
    saved = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert saved["invocations"] == 2 and saved["wall_s"] == pytest.approx(second.wall_s)
    assert saved["total_wall_s"] == pytest.approx(second.total_wall_s)
