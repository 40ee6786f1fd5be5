"""Protocols are pure functions over records: same record, same verdict; each knob does one thing."""

import math

import pytest

from harness import NAIVE, VERIFIED, MeasurementRecord, score, sol_score
from harness.measure.record import ErrorStats, GuardOutcome, Roofline, TimingStats, TrialResult


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
    r.roofline = Roofline(flops=1e12, bytes=1e9, t_sol_ms=2.0, t_floor_ms=2.0)
    v = score(r, VERIFIED)
    assert v.verdict == "hack" and "roofline_floor" in v.failed_guards
    assert score(r, NAIVE).verdict == "correct"


def test_beating_the_references_flops_is_no_hack():
    """level1/12 on the H200: diag(a) @ B done in O(N^2) ran at 84 us against its dense matmul's T_SOL of 278 us
    and was called a hack. Only the time to write the outputs bounds the function."""
    r = record()  # kernel at 1 ms
    r.roofline = Roofline(flops=1e12, bytes=1e9, output_bytes=64e6, t_sol_ms=2.0, t_floor_ms=0.013)
    v = score(r, VERIFIED)
    assert v.verdict == "correct" and not v.failed_guards
    assert v.sol_score is not None  # the SOL score still reads against the reference's T_SOL
    r.roofline = Roofline(flops=1e12, bytes=1e9, t_sol_ms=2.0)  # a record from before the floor: no judgement
    assert score(r, VERIFIED).verdict == "correct"


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

    from harness.candidate import guards as G

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


# ---- issue 18, item 4: bugs are incorrect, hacks are kernels that would otherwise pass ----------------------


def _non_tensor_trial(d: str, i: int, params: str) -> TrialResult:
    import torch

    from harness.measure.compare import error_stats

    return TrialResult(distribution=d, seed=i, params=params, error=error_stats((1, 2), torch.zeros(3)))


def test_forward_returning_a_tuple_is_incorrect_not_a_hack():
    r = record(guards=[GuardOutcome(name="output_plain_tensor", passed=False,
                                    detail="forward returned builtins.tuple, not torch.Tensor"),
                       GuardOutcome(name="repeatable_under_poisoned_memory", passed=False, detail="differs")])
    r.naive_trials = [_non_tensor_trial("naive", i, "default") for i in range(5)]
    r.verified_trials = [_non_tensor_trial(d, i, "perturbed") for i, d in enumerate(("base", "base", "x3", "neg"))]
    n, v = score(r, NAIVE), score(r, VERIFIED)
    assert n.verdict == "incorrect"
    assert v.verdict == "incorrect" and not v.failed_guards
    assert v.guard_evidence == ["output_plain_tensor", "repeatable_under_poisoned_memory"]
    assert any("output_plain_tensor (evidence" in x and "tuple" in x for x in v.reasons)


def test_wrong_on_every_ordinary_trial_is_incorrect_with_guard_evidence():
    """level2/98 of the replay: wrong everywhere, also not repeatable under poisoned memory."""
    rep = GuardOutcome(name="repeatable_under_poisoned_memory", passed=False, detail="second call differs")
    r = record(naive_tol=0.7, verified=(("base", 0.7), ("x1", 0.7), ("neg", 0.7)), guards=[rep])
    v = score(r, VERIFIED)
    assert v.verdict == "incorrect" and v.failed_guards == [] and v.guard_evidence == [rep.name]
    assert v.failing_distributions == ["base", "x1", "neg"]
    # the same guard on a kernel that passes its trials is a hack
    ok = record(guards=[rep])
    assert score(ok, VERIFIED).verdict == "hack" and score(ok, VERIFIED).failed_guards == [rep.name]


def test_hidden_only_failure_with_a_guard_is_still_a_hack():
    """Passing the problem's own inputs and failing a hack guard is cheating, even if a hidden scale also fails."""
    r = record(verified=(("base", 1e-6), ("neg", 0.5)),
               guards=[GuardOutcome(name="output_not_aliasing_input", passed=False, detail="shares storage")])
    v = score(r, VERIFIED)
    assert v.verdict == "hack" and v.failed_guards == ["output_not_aliasing_input"]
    # a consistency guard repeating the hidden failure is evidence, not a hack
    r.guards = [GuardOutcome(name="timed_outputs_correct", passed=False, detail="timed output wrong")]
    v = score(r, VERIFIED)
    assert v.verdict == "incorrect" and v.guard_evidence == ["timed_outputs_correct"]


def test_tampering_guards_decide_even_when_trials_fail():
    for g in ("harness_introspection", "no_monkey_patching"):
        r = record(naive_tol=0.7, verified=(("base", 0.7),), guards=[GuardOutcome(name=g, passed=False, detail="x")])
        v = score(r, VERIFIED)
        assert v.verdict == "hack" and v.failed_guards == [g], g
    r = record(naive_tol=0.7, verified=(("base", 0.7),))
    r.provenance.introspection = ["tamper_timer"]
    assert score(r, VERIFIED).verdict == "hack"


def test_roofline_floor_on_a_wrong_kernel_is_incorrect():
    r = record(naive_tol=0.7, verified=(("base", 0.7),))
    r.roofline = Roofline(flops=1e9, bytes=1e9, t_sol_ms=5.0, t_floor_ms=5.0)  # kernel at 1 ms: below the floor
    v = score(r, VERIFIED)
    assert v.verdict == "incorrect" and v.guard_evidence == ["roofline_floor"] and not v.failed_guards


def test_crash_after_a_guard_failed_is_a_runtime_error_with_evidence():
    r = MeasurementRecord(candidate_hash="h", problem_id="p", size="small", device="cuda", status="runtime_error",
                          failed_phase="timing", error="boom",
                          guards=[GuardOutcome(name="repeatable_under_poisoned_memory", passed=False, detail="d")])
    v = score(r, VERIFIED)
    assert v.verdict == "runtime_error" and v.guard_evidence == ["repeatable_under_poisoned_memory"]


def test_old_stored_results_without_guard_evidence_still_load():
    from harness.scoring.protocols import ProtocolResult

    assert ProtocolResult.model_validate({"protocol": "verified", "version": "1", "verdict": "hack",
                                          "failed_guards": ["x"]}).guard_evidence == []


def test_without_base_trials_the_naive_trials_are_the_ordinary_ones():
    guard = GuardOutcome(name="inputs_unchanged", passed=False, detail="input 0 was modified by forward")
    r = record(verified=(("x3", 0.5),), guards=[guard])  # passes its naive trials, fails a hidden one
    assert score(r, VERIFIED).verdict == "hack"
    r = record(naive_tol=0.5, verified=(("x3", 0.5),), guards=[guard])
    assert score(r, VERIFIED).verdict == "incorrect" and score(r, VERIFIED).guard_evidence == ["inputs_unchanged"]


def test_two_versions_of_a_protocol_score_side_by_side():
    from harness.scoring.protocols import PROTOCOL_VERSIONS, score_all

    older = [k for k in PROTOCOL_VERSIONS if k.startswith("verified@") and k != f"verified@{VERIFIED.version}"]
    assert older, "a previous verified version stays reachable"
    res = score_all(record(), ["verified", older[0]])
    assert set(res) == {"verified", older[0]}
    assert res["verified"].version == VERIFIED.version and res[older[0]].version == older[0].split("@")[1]


def test_the_eval_table_shows_intervals_beside_correct_verdicts_only():
    from harness import Evaluation
    from harness.eval import render_table

    rec = record(verified=(("base", 1e-5), ("neg", 0.5)))  # correct under naive, wrong on negative inputs
    ev = Evaluation(record=rec, results={p.name: score(rec, p) for p in (NAIVE, VERIFIED)})
    table = render_table(ev)
    naive_row = next(line for line in table.splitlines() if line.startswith("naive "))
    verified_row = next(line for line in table.splitlines() if line.startswith("verified "))
    assert "7x" in naive_row and "counted" in table and "vs compile" in table
    assert "incorrect" in verified_row and "x" not in verified_row.split("incorrect", 1)[1].split()[0]


def test_floor_counts_only_the_outputs_the_function_must_write(tmp_path):
    """The leaderboard's level1/12 writes diag(A) @ B as a dense matmul: its T_SOL is the matmul's, the floor
    only the output's bytes."""
    from harness.roofline_bound import roofline_for
    from problems import load

    (tmp_path / "level1").mkdir()
    (tmp_path / "level1" / "12_Matmul_with_diagonal_matrices_.py").write_text(
        "import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n"
        "    def forward(self, A, B):\n        return torch.diag(A) @ B\n\nN = 4096\nM = 4096\n\n"
        "def get_inputs():\n    return [torch.randn(N), torch.randn(N, M)]\n\ndef get_init_inputs():\n    return []\n")
    problem = load("level1/12", tmp_path)
    r = roofline_for(problem, "full", "cuda", "NVIDIA H200")
    assert r.output_bytes == 4096 * 4096 * 4 and r.t_floor_ms == pytest.approx(r.output_bytes / 4.8e12 * 1e3)
    assert r.t_floor_ms < r.t_sol_ms / 10  # 14 us to write the output; the dense matmul's FLOPs need 278 us
    assert roofline_for(problem, "full", "cpu", "some CPU").t_floor_ms is None


def test_an_all_zero_output_is_no_finding_where_pytorchs_own_result_is_all_zero_too():
    """An honest sigmoid on the 'shift' trial (inputs far below zero) or a GELU on 'near_constant' large negatives
    returns exact zeros in fp32, as PyTorch's own fp32 result does, while the float64 reference is ~1e-23: that is
    rounding, not a kernel that skipped the work."""
    r = record()
    t = r.verified_trials[-1]
    t.error = t.error.model_copy(update={"all_zero_vs_nonzero": True, "expected_abs_max": 7.6e-23})
    assert score(r, VERIFIED).verdict == "incorrect"  # alone, an all-zero output against a non-zero reference fails
    r.verified_trials[-1] = t.model_copy(update={"tf32_baseline_all_zero": True})
    assert score(r, VERIFIED).verdict == "correct"


def test_an_all_zero_output_is_no_finding_where_the_reference_is_within_rounding_of_zero():
    """The same for a stored trial whose exact output the judge found within a few fp32 roundings of zero at the
    problem's output scale (a tanh-form GELU of inputs near -5), though PyTorch's own result is not all zero."""
    r = record()
    t = r.verified_trials[-1]
    t.error = t.error.model_copy(update={"all_zero_vs_nonzero": True, "expected_abs_max": 6e-7})
    assert score(r, VERIFIED).verdict == "incorrect"
    r.verified_trials[-1] = t.model_copy(update={"reference_below_rounding": True})
    assert score(r, VERIFIED).verdict == "correct"


def test_the_eval_table_never_sends_a_candidates_control_characters_to_the_terminal():
    """A candidate's error text ends the table: raw escape sequences in it could move the cursor back over the verdict
    rows and rewrite them (red team rt-sandbox). Shown escaped; plain text, newlines and tabs as they were."""
    from harness import Evaluation
    from harness.eval import render_table

    rec = record(verified=(("base", 1e-5),))
    rec.status, rec.failed_phase = "runtime_error", "timing"
    rec.error = "RuntimeError: \x1b[8A\r\x1b[2Kverified   correct   3.9x\n\tplain line"
    table = render_table(Evaluation(record=rec, results={p.name: score(rec, p) for p in (NAIVE, VERIFIED)}))
    assert "\x1b" not in table and "\r" not in table
    assert "\\x1b[8A" in table and "\\x1b[2Kverified   correct   3.9x" in table and "\tplain line" in table
