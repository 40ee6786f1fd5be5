"""A judge computes its first candidate's reference outputs before it reports ready (Judge.precompute), so a pool that
prepares judges beside another candidate's evaluation takes those float64 references off the critical path; and the
first candidate served takes the seeds those references were computed for, every later one seeds of its own."""

from __future__ import annotations

import torch

import harness
import harness.judges
from harness.judge.judge import Judge
from harness.wire.job import EvalSettings
from problems import load

RELU = "level1/19_ReLU"
LAYERNORM = "level1/40_LayerNorm"  # parameters: the verified references use the perturbed model
SETTINGS = EvalSettings(naive_timing_trials=10, verified_min_iters=5, verified_max_iters=10,
                        verified_seconds_per_subject=0.3, cpu_threads=1)
HONEST = """
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def _job(problem: str, settings: EvalSettings):
    with harness.Evaluator("cpu", "small", settings=settings) as e:
        return e._setup.base_job(load(problem)).model_copy(update={"fresh_seeds": list(range(11, 60)),
                                                                    "perturb_seed": 7})


def _same(a, b) -> bool:
    return torch.equal(a.out, b.out) and a.nonfinite == b.nonfinite and a.tf32_max_abs == b.tf32_max_abs


def test_references_computed_ahead_are_those_the_session_would_compute():
    job = _job(LAYERNORM, SETTINGS)
    ahead, lazy = Judge(job), Judge(job)
    kept = ahead.precompute(120.0)
    assert kept == len(ahead.naive_plan) + len(ahead.verified_plan) + 1  # and the first timing set's
    for i, s in enumerate(lazy.naive_plan):
        assert _same(ahead.expected(("naive", i), s.seed, s.scale, "default", naive=True),
                     lazy.expected(("naive", i), s.seed, s.scale, "default", naive=True)), i
    for i, s in enumerate(lazy.verified_plan):
        key = ("verified", i, "perturbed")
        assert key in ahead._cache
        assert _same(ahead.expected(key, s.seed, s.scale, "perturbed", naive=False, distribution=s.distribution),
                     lazy.expected(key, s.seed, s.scale, "perturbed", naive=False, distribution=s.distribution)), i
    seed = lazy.timing_seeds[0]
    key = ("timing", 0, "perturbed", 0)
    assert _same(ahead._cache[key], lazy.expected(key, seed, 1.0, "perturbed", naive=False, forward=seed))
    assert ahead.output_scale == lazy.output_scale  # the first naive trial's, as in a session


def test_references_ahead_stop_where_the_cache_would_not_keep_them():
    judge = Judge(_job(RELU, SETTINGS.model_copy(update={"expected_bytes_budget": 1})))
    assert judge.precompute(120.0) == 0 and not judge._cache  # nothing computed for nothing kept: one at most
    assert Judge(_job(RELU, SETTINGS)).precompute(0.0) == 0  # no time: none


def test_the_first_candidate_takes_the_judges_seeds_and_the_next_its_own(monkeypatch):
    drawn: list[list[int]] = []
    real = harness.judges.JudgePool.fresh_seeds

    def spy(self):
        seeds = real(self)
        drawn.append(seeds["fresh_seeds"])
        return seeds

    monkeypatch.setattr(harness.judges.JudgePool, "fresh_seeds", spy)
    with harness.Evaluator("cpu", "small", settings=SETTINGS) as e:
        first = e.evaluate(HONEST, RELU)
        assert len(drawn) == 1  # the judge's job; its first candidate is told no other
        second = e.evaluate(HONEST, RELU)
        assert len(drawn) == 2
    assert first.results["verified"].verdict == second.results["verified"].verdict == "correct"
    seeds1 = {t.seed for t in first.record.verified_trials}
    seeds2 = {t.seed for t in second.record.verified_trials}
    assert seeds1 <= set(drawn[0]) and seeds2 <= set(drawn[1]) and not seeds1 & seeds2


def test_no_references_ahead_for_inputs_past_the_byte_limit():
    """Ahead, a reference runs beside another candidate's evaluation: a problem with large inputs waits for its own."""
    judge = Judge(_job(RELU, SETTINGS.model_copy(update={"references_ahead_bytes": 1024})))
    assert judge.precompute(120.0) == 0 and not judge._cache
