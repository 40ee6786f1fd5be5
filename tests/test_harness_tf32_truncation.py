"""A truncating TF32 kernel (Triton's tl.dot on fp32: the 13 low mantissa bits dropped) is honest: the verified
protocol admits the error of TF32 with truncated operands, measured by the judge on the same inputs, and still
rejects a bf16 GEMM."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import harness
from harness import EvalSettings
from harness.judge.tf32_truncation import TruncatedTF32, truncate
from harness.scoring.protocols import get_protocol, score

FIXTURES = Path(harness.__file__).resolve().parent / "fixtures"
SETTINGS = EvalSettings(naive_timing_trials=5, verified_min_iters=3, verified_max_iters=5,
                        verified_seconds_per_subject=0.2, cpu_threads=1)


def test_truncation_drops_the_low_mantissa_bits_toward_zero():
    x = torch.tensor([1.0 + 2**-11, 1.0 + 2**-9, -(3.0 + 2**-12)], dtype=torch.float64)
    assert truncate(x).tolist() == [1.0, 1.0 + 2**-9, -3.0]
    assert truncate(x).dtype == torch.float64
    labels = torch.tensor([3, 1])
    assert truncate(labels) is labels


def test_the_mode_truncates_matmul_and_convolution_operands_only():
    a = torch.full((2, 2), 1.0 + 2**-12, dtype=torch.float64)
    with TruncatedTF32() as mode:
        assert torch.equal(a @ a, torch.full((2, 2), 2.0, dtype=torch.float64))
        assert torch.equal(torch.relu(a), a)  # not a TF32 operation: untouched
    assert mode.hits == 1
    conv = torch.nn.Conv1d(1, 1, 1, bias=False).double()
    with TruncatedTF32(truncate=False) as counting:
        conv(a[None, :1])
        torch.nn.functional.linear(a, a)
    assert counting.hits == 2


@pytest.fixture(scope="module")
def truncating_matmul():
    src = (FIXTURES / "legit" / "cpu" / "truncated_tf32_matmul.py").read_text()
    with harness.Evaluator("cpu", "small", settings=SETTINGS) as ev:
        yield ev.evaluate(src, "level1/1_Square_matrix_multiplication_")


def test_a_truncating_tf32_matmul_is_correct_under_verified(truncating_matmul):
    r = truncating_matmul
    assert r.results["verified"].verdict == "correct", r.results["verified"].reasons
    assert all(t.tf32_truncated_max_abs is not None for t in r.record.verified_trials)


def test_without_the_truncation_allowance_the_same_record_fails(truncating_matmul):
    """The allowance decides where trials are judged elementwise: under verified@3 (adversarial trials elementwise,
    as in the H200 hack suite) the one-signed adversarial draws fail without it. (verified@4 also judges adversarial
    trials against the output's scale; its base and scaled trials stay elementwise, where the allowance still
    covers a truncating kernel on inputs of near-equal values.)"""
    v3 = get_protocol("verified@3")
    assert score(truncating_matmul.record, v3).verdict == "correct"
    res = score(truncating_matmul.record, v3.model_copy(update={"tf32_truncation_factor": None}))
    assert res.verdict == "incorrect"
    assert set(res.failing_distributions) & {"near_constant", "shift", "heavy_tail"}


def test_a_bf16_gemm_is_still_rejected_with_the_allowance():
    src = (FIXTURES / "hacks" / "cpu" / "precision_downgrade_bf16_matmul.py").read_text()
    with harness.Evaluator("cpu", "small", settings=SETTINGS) as ev:
        r = ev.evaluate(src, "level1/1_Square_matrix_multiplication_")
    assert r.results["verified"].verdict == "incorrect"
    assert "base" in r.results["verified"].failing_distributions


def test_under_the_current_protocol_the_allowance_decides_on_near_equal_values():
    """Inputs whose values share their low mantissa bits (here every entry 1 + 8191 x 2^-23, all dropped by TF32)
    lose the same ~1e-3 in every product: a truncating kernel is off by ~2e-3 of the result on an ordinary trial,
    judged elementwise under every version. It passes within 1.5x of the truncated reference's own error."""
    from harness.measure.compare import error_stats
    from harness.measure.record import MeasurementRecord, TrialResult

    value = 1 + 8191 * 2**-23
    a = torch.full((64, 64), value)
    exact = a.double() @ a.double()
    kernel = truncate(a) @ truncate(a)  # fp32 accumulate, operands as a tensor core reads them
    st = error_stats(kernel, exact)
    assert st.min_tolerance > 1e-3
    with TruncatedTF32():
        emulated = error_stats(a.double() @ a.double(), exact).max_abs

    def verdict(protocol) -> str:
        rec = MeasurementRecord(candidate_hash="h", problem_id="level1/1_Square_matrix_multiplication_", size="full",
                                device="cuda")
        rec.naive_trials = [TrialResult(distribution="naive", seed=0, params="default", error=error_stats(exact, exact))]
        rec.verified_trials = [TrialResult(distribution="base", seed=0, params="default", error=st,
                                           tf32_baseline_max_abs=1e-9, tf32_truncated_max_abs=emulated)]
        return score(rec, protocol).verdict

    current = get_protocol("verified")
    assert verdict(current) == "correct"
    assert verdict(current.model_copy(update={"tf32_truncation_factor": None})) == "incorrect"
