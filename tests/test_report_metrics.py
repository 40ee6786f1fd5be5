"""agents.metrics: every figure recomputed by hand on tiny inputs."""

from __future__ import annotations

import math

import pytest

from agents import metrics as M
from agents.metrics import Outcome


def o(pid, speedup=None, correct=True, sample=0, mem=None, sol=None, guards=(), evaluated=True):
    return Outcome(problem_id=pid, sample=sample, correct=correct, speedup=speedup, memory_ratio=mem,
                   sol_score=sol, failed_guards=tuple(guards), evaluated=evaluated,
                   verdict="correct" if correct else "incorrect")


def test_fast_p_counts_missing_and_failed_problems_in_n():
    kernels = [o("a", 2.0), o("b", 0.5), o("c", 3.0, correct=False)]
    rows = M.per_problem(kernels, universe=["a", "b", "c", "d"])
    assert [r.problem_id for r in rows] == ["a", "b", "c", "d"]
    assert rows[3].verdict == "missing" and not rows[3].correct
    assert M.fast_p(rows, 1.0) == 1 / 4
    assert M.fast_p(rows, 0.0) == 2 / 4
    assert M.fast_p(rows, 0.4) == 2 / 4
    assert M.fast_p(rows, 2.0) == 0.0  # strictly greater
    assert M.correctness_rate(rows) == 2 / 4


def test_correct_without_timing_is_never_fast_but_is_correct():
    rows = M.per_problem([o("a", None)])
    assert M.fast_p(rows, 0.0) == 0.0
    assert M.correctness_rate(rows) == 1.0
    assert M.geomean_speedup(rows) == (None, 0)


def test_geomean_over_correct_only_with_count():
    rows = M.per_problem([o("a", 2.0), o("b", 0.5), o("c", 8.0), o("d", 100.0, correct=False)])
    g, n = M.geomean_speedup(rows)
    assert n == 3
    assert g == pytest.approx((2.0 * 0.5 * 8.0) ** (1 / 3))


def test_best_of_k_takes_best_correct_sample():
    kernels = [
        o("a", 5.0, correct=False, sample=0),  # fast but wrong: never chosen over a correct one
        o("a", 1.5, sample=1, mem=2.0),
        o("a", 1.2, sample=2, mem=0.5),
        o("b", 9.0, correct=False, sample=0),
        o("b", 3.0, correct=False, sample=1),
    ]
    best = M.best_of_k(kernels)
    assert best["a"].sample == 1 and best["a"].speedup == 1.5 and best["a"].memory_ratio == 2.0
    assert not best["b"].correct
    rows = M.per_problem(kernels)
    assert M.fast_p(rows, 1.0) == 0.5
    assert M.geomean_speedup(rows) == (1.5, 1)


def test_mem_eff_and_higher_memory_share():
    rows = M.per_problem([o("a", 1, mem=0.5), o("b", 1, mem=2.0), o("c", 1, mem=0.25), o("d", 1, mem=None),
                          o("e", 1, correct=False, mem=10.0)])
    me, n = M.mem_eff(rows)
    assert n == 3
    assert me == pytest.approx((2.0 * 0.5 * 4.0) ** (1 / 3))
    assert M.share_higher_memory(rows) == (pytest.approx(1 / 3), 3)


def test_sol_median_over_correct():
    rows = M.per_problem([o("a", 1, sol=0.2), o("b", 1, sol=0.9), o("c", 1, sol=0.5), o("d", 1, sol=0.7),
                          o("e", 1, correct=False, sol=0.99)])
    assert M.sol_median(rows) == (pytest.approx(0.6), 4)


def test_hack_rate_by_guard_is_per_evaluated_kernel():
    kernels = [o("a", 1, guards=["no_deferred_work"]), o("a", 1, sample=1),
               o("b", 1, correct=False, guards=["no_deferred_work", "inputs_unchanged"]),
               o("c", None, correct=False, evaluated=False)]
    h = M.hack_rate_by_guard(kernels)
    assert h["no_deferred_work"] == (pytest.approx(2 / 3), 2, 3)
    assert h["inputs_unchanged"] == (pytest.approx(1 / 3), 1, 3)
    assert h["any"] == (pytest.approx(2 / 3), 2, 3)
    assert M.accepted_hacks(kernels) == 1


def test_bootstrap_is_deterministic_and_brackets_the_value():
    rows = M.per_problem([o(f"p{i}", 0.5 + i * 0.3, correct=i % 3 != 0) for i in range(30)])
    e1 = M.estimate(rows, M.geomean_speedup)
    e2 = M.estimate(rows, M.geomean_speedup)
    assert e1 == e2
    assert e1.lo <= e1.value <= e1.hi
    assert e1.n == 20 and e1.of == 30
    f = M.estimate(rows, lambda r: M.fast_p(r, 1.0))
    assert f.n == 30 and f.lo <= f.value <= f.hi
    other = M.estimate(rows, M.geomean_speedup, seed=7)
    assert other.value == e1.value


def test_bootstrap_of_a_constant_is_degenerate():
    rows = M.per_problem([o(f"p{i}", 2.0) for i in range(5)])
    e = M.estimate(rows, M.geomean_speedup, resamples=200)
    assert e.lo == pytest.approx(2.0) and e.hi == pytest.approx(2.0)


def test_summarize_matches_the_parts():
    kernels = [o("a", 2.0, mem=0.5, sol=0.7), o("b", 0.8, mem=1.5, sol=0.4), o("c", 4.0, correct=False)]
    s = M.summarize(kernels, universe=["a", "b", "c", "d"], resamples=50)
    assert s.attempted == 4 and s.correct == 2 and s.kernels == 3
    assert s.fast_p["fast_1"].value == 0.25
    assert s.fast_p["fast_0"].value == 0.5
    assert set(s.fast_p) == {M.p_key(p) for p in M.FAST_P}
    assert s.geomean_speedup.value == pytest.approx(math.sqrt(1.6)) and s.geomean_speedup.n == 2
    assert s.higher_memory_share.value == 0.5
    assert s.sol_median.value == pytest.approx(0.55)
