"""torch.compile(Model) as a second baseline: compiled once per problem by the judge (its compile time on no
candidate's clock), timed with both methods, and carried by every protocol result as speedup_vs_compile; a
problem it cannot compile gets a reason, not a crash."""

from __future__ import annotations

import pytest

import harness
from harness import EvalSettings
from problems.catalog import load

SETTINGS = EvalSettings(naive_timing_trials=10, verified_min_iters=5, verified_max_iters=10,
                        verified_seconds_per_subject=0.3, cpu_threads=1, compile_baseline=True)


def _reference_as_candidate(pid: str) -> str:
    return load(pid).reference_as_candidate()


def test_a_problem_with_and_one_without_parameters_get_a_compile_baseline(tmp_path):
    # Two problems, not one per level: the judge compiles every level's Model the same way, and each problem costs
    # an Inductor compile (C++ on a CPU) of its own.
    with harness.Evaluator("cpu", "small", settings=SETTINGS, cache_dir=tmp_path) as ev:
        for pid in ("level1/19_ReLU", "level3/1_MLP"):
            r = ev.evaluate(_reference_as_candidate(pid), pid)
            t = r.record.timing
            assert r.record.status == "ok", r.record.error
            assert t.compile_error is None and t.compile_seconds and t.compile_seconds > 0, (pid, t.compile_error)
            assert t.verified_baseline_compile and t.verified_baseline_compile.n >= SETTINGS.verified_min_iters
            assert t.naive_baseline_compile and t.naive_baseline_compile.n == SETTINGS.naive_timing_trials
            for proto in ("naive", "verified"):
                res = r.results[proto]
                assert res.verdict == "correct" and res.speedup_vs_compile and res.speedup_vs_compile > 0, (pid, proto)
            # Compiled once per problem: a second candidate of the same problem reuses it.
            again = ev.evaluate(_reference_as_candidate(pid), pid)
            assert again.record.timing.compile_seconds == t.compile_seconds
    # Inductor's caches live in the evaluator's cache folder, so a later sweep on it compiles from them
    assert any(f.is_file() for f in (tmp_path / "inductor").rglob("*"))


def test_a_problem_torch_compile_cannot_compile_gets_a_reason(tmp_path):
    (tmp_path / "inductor").write_text("")  # a file where Inductor's cache folder goes: it cannot write its kernels
    with harness.Evaluator("cpu", "small", settings=SETTINGS, cache_dir=tmp_path) as ev:
        r = ev.evaluate(_reference_as_candidate("level1/19_ReLU"), "level1/19_ReLU")
    t = r.record.timing
    assert r.record.status == "ok" and r.results["verified"].verdict == "correct"
    assert t.compile_error and "torch.compile failed" in t.compile_error
    assert t.verified_baseline_compile is None and r.results["verified"].speedup_vs_compile is None
    assert r.results["verified"].speedup  # the eager baselines are untouched


@pytest.mark.parametrize("setting,device,expected", [(None, "cpu", False), (False, "cpu", False)])
def test_compile_baseline_is_off_on_a_cpu_unless_asked(tmp_path, setting, device, expected):
    s = SETTINGS.model_copy(update={"compile_baseline": setting})
    with harness.Evaluator(device, "small", settings=s, cache_dir=tmp_path) as ev:
        r = ev.evaluate(_reference_as_candidate("level1/19_ReLU"), "level1/19_ReLU")
    assert (r.record.timing.verified_baseline_compile is not None) is expected
    assert r.record.timing.compile_error is None
