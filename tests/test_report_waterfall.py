"""The waterfall's timing and TF32 steps each change one thing (issue 18, item 6): ``timing`` only the
timer (both fp32 baselines run with PyTorch's default flags: matmul TF32 off, cuDNN TF32 on),
``tf32_baseline`` only matmul TF32."""

from __future__ import annotations

import pytest

from agents.report import waterfall as W
from agents.report.synthetic import record, stats
from harness import NAIVE, VERIFIED, score

CONV = "level1/50_conv_standard_2D__square_input__square_kernel"


def speedups(rec) -> dict[str, float]:
    return {step: score(rec, p).speedup for step, _label, p in W.steps()}


def conv_record(*, naive_k: float, ver_k: float, b_fp32: float, b_tf32: float):
    """A convolution-like record: the naive baseline and the verified fp32 baseline both ran with the
    defaults (cuDNN TF32 on), so both timers read the same baseline time."""
    rec = record(CONV, naive_err=1e-4, verified=1e-4, naive_k=naive_k, naive_b=b_fp32, ver_k=ver_k,
                 ver_tf32=b_tf32, ver_b32=b_fp32)
    # The naive timer reports a mean and the verified one a median: give the kernel a different median
    # under the naive timer so the test shows which statistic each step reads.
    rec.timing.naive_kernel = stats(naive_k, "naive").model_copy(update={"median_ms": naive_k * 0.5})
    return rec


@pytest.mark.parametrize(("naive_k", "ver_k", "b_fp32", "b_tf32"), [
    (1.0, 1.25, 4.0, 3.96),   # cuDNN conv: matmul TF32 barely moves its baseline
    (0.8, 0.7, 2.2, 2.2),     # no matmul at all: the TF32 step changes nothing
    (1.0, 1.0, 3.0, 0.4),     # a matmul inside: the TF32 step is where its speedup goes
])
def test_timing_step_is_the_timer_and_tf32_step_is_the_baseline_ratio(naive_k, ver_k, b_fp32, b_tf32):
    rec = conv_record(naive_k=naive_k, ver_k=ver_k, b_fp32=b_fp32, b_tf32=b_tf32)
    assert rec.timing.naive_baseline_fp32.mean_ms == rec.timing.verified_baseline_fp32.median_ms
    sp = speedups(rec)
    assert sp["naive"] == pytest.approx(b_fp32 / naive_k) == pytest.approx(score(rec, NAIVE).speedup)
    # timing: the baseline time is the same under both timers, so only the kernel's timer difference
    # (naive mean vs verified median) moves the speedup.
    assert sp["timing"] / sp["naive"] == pytest.approx(naive_k / ver_k)
    # tf32_baseline: the same timer, the fp32 (default-flag) baseline replaced by the TF32 one.
    assert sp["timing"] / sp["tf32_baseline"] == pytest.approx(b_fp32 / b_tf32)
    # nothing after the TF32 step touches timing; the last step is verified.
    for step in ("hidden_inputs", "tolerance", "strict_output", "guards"):
        assert sp[step] == pytest.approx(sp["tf32_baseline"])
    assert sp["guards"] == pytest.approx(score(rec, VERIFIED).speedup)


def test_conv_record_does_not_swing_across_the_two_steps():
    """The symptom of issue 18 item 6: on convolutions 'timing' read 2.2-2.3x and 'tf32_baseline' 0.43x
    because the verified fp32 baseline ran with cuDNN TF32 off. With default-flag baselines on both
    sides and equal kernel times, neither step moves a convolution by more than matmul TF32 does."""
    rec = conv_record(naive_k=1.0, ver_k=1.0, b_fp32=4.0, b_tf32=3.96)
    sp = speedups(rec)
    assert sp["timing"] / sp["naive"] == pytest.approx(1.0)
    assert sp["tf32_baseline"] / sp["timing"] == pytest.approx(0.99)


def test_labels_say_what_each_step_changes():
    comps = {c.step: c for c in W.COMPONENTS}
    timing, tf32 = comps["timing"].label, comps["tf32_baseline"].label
    assert "timer" in timing and "matmul TF32 off, cuDNN TF32 on" in timing
    assert "matmul TF32 on" in tf32 and "cuDNN TF32 is already on" in tf32
    assert "cuDNN TF32 on)" not in tf32  # it does not switch cuDNN TF32
    # and each changes exactly the fields its label names
    assert comps["timing"].fields == ["timing", "statistic"]
    assert comps["tf32_baseline"].fields == ["baseline"]
    chain = {s: p for s, _l, p in W.steps()}
    assert chain["timing"].baseline == "eager_fp32" and chain["timing"].timing == "verified"
    assert chain["tf32_baseline"].baseline == "eager_tf32" and chain["tf32_baseline"].timing == "verified"
