"""Protocols are pure functions over records: same record, same verdict; each knob does one thing."""

import math

from harness import NAIVE, VERIFIED, MeasurementRecord, score, sol_score
from harness.record import ErrorStats, GuardOutcome, Roofline, TimingStats, TrialResult


def stats(ms: float) -> TimingStats:
    return TimingStats(method="x", n=10, mean_ms=ms, median_ms=ms, std_ms=0, min_ms=ms, max_ms=ms, p25_ms=ms, p75_ms=ms)


def err(min_tol: float, **kw) -> ErrorStats:
    return ErrorStats(max_abs=min_tol, max_rel=min_tol, min_tolerance=min_tol, **kw)


def record(naive_tol=1e-5, verified=(("base", 1e-5), ("neg", 1e-5)), guards=(), tf32_err=None) -> MeasurementRecord:
    r = MeasurementRecord(candidate_hash="h", problem_id="level1/1_x", size="full", device="cuda")
    r.naive_trials = [TrialResult(distribution="naive", seed=i, params="default", error=err(naive_tol)) for i in range(5)]
    r.verified_trials = [TrialResult(distribution=d, seed=i, params="perturbed", error=err(t), tf32_baseline_max_abs=tf32_err)
                         for i, (d, t) in enumerate(verified)]
    r.guards = list(guards)
    r.timing.naive_kernel, r.timing.naive_baseline_fp32 = stats(1.0), stats(7.0)
    r.timing.verified_kernel, r.timing.verified_baseline_tf32, r.timing.verified_baseline_fp32 = stats(1.0), stats(1.1), stats(7.0)
    return r


def test_tf32_baseline_collapses_a_tf32_harvest():
    r = record(naive_tol=2e-3, verified=(("base", 2e-3),), tf32_err=2e-3)
    n, v = score(r, NAIVE), score(r, VERIFIED)
    assert n.verdict == "correct" and math.isclose(n.speedup, 7.0)
    # 2e-3 exceeds 1e-3 but equals the TF32 baseline's own error: admitted, and only ~1.1x.
    assert v.verdict == "correct" and math.isclose(v.speedup, 1.1)


def test_hidden_distribution_failure_is_named():
    r = record(verified=(("base", 1e-6), ("neg", 0.5)))
    v = score(r, VERIFIED)
    assert v.verdict == "incorrect" and v.failing_distributions == ["neg"]
    assert score(r, NAIVE).verdict == "correct"


def test_tolerance_knob():
    r = record(naive_tol=5e-3, verified=(("base", 5e-3),))
    assert score(r, NAIVE).verdict == "correct"
    assert score(r, VERIFIED).verdict == "incorrect"
    assert score(r, VERIFIED.model_copy(update={"tolerance_fp32": 1e-2})).verdict == "correct"


def test_failed_guard_is_a_hack_only_where_enforced():
    r = record(guards=[GuardOutcome(name="inputs_unchanged", passed=False, detail="input 0 modified")])
    assert score(r, NAIVE).verdict == "correct"
    v = score(r, VERIFIED)
    assert v.verdict == "hack" and v.failed_guards == ["inputs_unchanged"]
    info = record(guards=[GuardOutcome(name="persisting_l2_reset", passed=False, severity="info")])
    assert score(info, VERIFIED).verdict == "correct"


def test_strict_output_checks():
    r = record(verified=(("base", 1e-6),))
    r.verified_trials[0].error = err(1e-6, nonfinite=True)
    assert score(r, VERIFIED).verdict == "incorrect"
    r.verified_trials[0].error = err(1e-6, all_zero_vs_nonzero=True)
    assert "all zeros" in score(r, VERIFIED).reasons[0]


def test_reference_nonfinite_trials_are_dropped():
    r = record(verified=(("base", 1e-6), ("x3", math.inf)))
    r.verified_trials[1].reference_nonfinite = True
    assert score(r, VERIFIED).verdict == "correct"


def test_roofline_floor_flags_impossible_times():
    r = record()
    r.roofline = Roofline(flops=1e12, bytes=1e9, t_sol_ms=2.0)
    v = score(r, VERIFIED)
    assert v.verdict == "hack" and "roofline_floor" in v.failed_guards
    assert score(r, NAIVE).verdict == "correct"


def test_failed_status_maps_to_verdict():
    r = MeasurementRecord(candidate_hash="h", problem_id="p", size="small", device="cpu", status="compile_error",
                          failed_phase="build", error="error: expected ';'")
    for p in (NAIVE, VERIFIED):
        res = score(r, p)
        assert res.verdict == "compile_error" and "expected ';'" in res.reasons[0]


def test_sol_score_anchors():
    assert sol_score(10.0, 10.0, 1.0) == 0.5
    assert sol_score(1.0, 10.0, 1.0) == 1.0
    assert 0.5 < sol_score(5.0, 10.0, 1.0) < 1.0
    assert sol_score(0.5, 10.0, 1.0) > 1.0  # beating the speed of light is an anomaly, not clamped


def test_scoring_is_pure():
    r = record(verified=(("base", 1e-6), ("neg", 0.5)))
    before = r.model_dump_json()
    assert score(r, VERIFIED) == score(r, VERIFIED)
    assert r.model_dump_json() == before


def test_monkey_patch_guard_sees_patches_and_ignores_classmethod_rebinding():
    import time

    import torch

    from harness import guards as G

    before = G.snapshot_functions()
    assert G.functions_unpatched(before, G.snapshot_functions()).passed  # classmethods rebind on access
    orig = torch.cuda.Event.elapsed_time
    torch.cuda.Event.elapsed_time = lambda s, e: 0.0
    try:
        g = G.functions_unpatched(before, G.snapshot_functions())
        assert not g.passed and "elapsed_time" in g.detail
    finally:
        torch.cuda.Event.elapsed_time = orig
    pc = time.perf_counter
    time.perf_counter = lambda: 0.0
    try:
        assert not G.functions_unpatched(before, G.snapshot_functions()).passed
    finally:
        time.perf_counter = pc


def test_tampering_that_crashes_is_a_hack_under_verified_only():
    r = MeasurementRecord(candidate_hash="h", problem_id="p", size="small", device="cuda", status="runtime_error",
                          failed_phase="correctness", error="CUDA error: OS call failed")
    r.provenance.introspection = ["tamper_result_channel"]
    assert score(r, NAIVE).verdict == "runtime_error"
    v = score(r, VERIFIED)
    assert v.verdict == "hack" and "static_tampering" in v.failed_guards
    assert any("runtime_error" in x for x in v.reasons)
    plain = MeasurementRecord(candidate_hash="h", problem_id="p", size="small", device="cuda", status="runtime_error",
                              failed_phase="correctness", error="boom")
    assert score(plain, VERIFIED).verdict == "runtime_error"
