"""The waterfall's timing and TF32 steps each change one thing (issue 18, item 6): ``timing`` only the
timer (both fp32 baselines run with PyTorch's default flags: matmul TF32 off, cuDNN TF32 on),
``tf32_baseline`` only matmul TF32."""

from __future__ import annotations

import pytest

from agents.report import build_report
from agents.report import waterfall as W
from agents.report.synthetic import record, stats
from agents.store import Attempt, RunStore
from harness import NAIVE, VERIFIED, score
from harness.measure.record import Roofline
from harness.scoring.applicability import tf32_applies

CONV = "level1/50_conv_standard_2D__square_input__square_kernel"
MATMUL = "level1/1_Square_matrix_multiplication_"


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


# -- issue 20, item 2: a component that cannot apply to a kernel changes nothing ---------------------------

RELU = "level1/19_ReLU"


def noisy_baselines(pid: str, device: str, matmul_flops: float | None, k: float = 0.5):
    """Two timings of one baseline that disagree, as on a loaded host: fp32 2.0 ms, TF32 'baseline' 0.8 ms."""
    rec = record(pid, naive_k=k, naive_b=2.0, ver_k=k, ver_tf32=0.8, ver_b32=2.0)
    rec.device = device
    rec.roofline = Roofline(flops=1e6, bytes=1e6, matmul_flops=matmul_flops)
    return rec


@pytest.mark.parametrize(("pid", "device", "matmul_flops"), [
    (MATMUL, "cpu", 1e9),      # TF32 does not exist on the CPU, matmul or not
    (RELU, "cpu", 0.0),
    (RELU, "cuda", 0.0),       # a GPU, but nothing TF32 touches
])
def test_tf32_step_changes_nothing_where_tf32_cannot_apply(pid, device, matmul_flops):
    rec = noisy_baselines(pid, device, matmul_flops)
    assert not tf32_applies(rec)[0]
    sp = speedups(rec)
    assert sp["tf32_baseline"] == sp["timing"] == pytest.approx(2.0 / 0.5)
    assert score(rec, VERIFIED).speedup == pytest.approx(sp["timing"])  # verified reads the same measurement
    assert score(rec, VERIFIED).baseline_ms == rec.timing.verified_baseline_fp32.median_ms


@pytest.mark.parametrize("matmul_flops", [1e9, None])  # None: a record that does not say (counts as applicable)
def test_tf32_step_still_moves_a_matmul_on_cuda(matmul_flops):
    rec = noisy_baselines(MATMUL, "cuda", matmul_flops)
    assert tf32_applies(rec)[0]
    sp = speedups(rec)
    assert sp["timing"] / sp["tf32_baseline"] == pytest.approx(2.0 / 0.8)


def test_cpu_waterfall_tf32_step_moves_neither_geomean_nor_fast_p(tmp_path):
    """The issue's symptom: on the CPU the tf32_baseline step moved the geomean x1.19 and fast_1 +31 points.
    Here the TF32 'baseline' timings are 2.5x faster than the fp32 ones (noise), which would have turned every
    kernel from fast to slow at that step; it must read 'unchanged' and say why."""
    store = RunStore(tmp_path / "run")
    store.write_config({"models": ["m"], "strategies": ["s"]})
    for i, pid in enumerate((RELU, "level1/20_LeakyReLU", MATMUL)):
        rec = noisy_baselines(pid, "cpu", 1e9 if pid == MATMUL else 0.0, k=1.0 + 0.1 * i)
        store.append(Attempt(model="m", model_id="m", strategy="s", backend="cpu", problem_id=pid, level=1,
                             number=int(pid.split("/")[1].split("_")[0]), sample=0, turn=1, response="",
                             kernel_source="x", record=rec.model_dump(mode="json"), device="cpu", size="small"))
    rep = build_report(tmp_path / "run", resamples=0)
    steps = {s.step: s for s in rep.waterfall("m").steps}
    tf32 = steps["tf32_baseline"]
    assert tf32.d_geomean == pytest.approx(1.0) and tf32.d_fast_1 == 0.0
    assert tf32.fast_1.value == steps["timing"].fast_1.value == 1.0
    assert tf32.fast_lost == 0 and tf32.not_applicable == 3
    assert steps["timing"].not_applicable == 0
    head = {r.protocol: r.summary for r in rep.headline if r.level == "all"}
    assert head["verified"].geomean_speedup.value == pytest.approx(steps["timing"].geomean.value)
    assert "does not apply to 3 kernel(s)" in "\n".join(_render_text(rep))


def _render_text(rep) -> list[str]:
    import io

    from rich.console import Console

    from agents.report.text import waterfall_tables

    buf = io.StringIO()
    console = Console(file=buf, width=3000)
    for t in waterfall_tables(rep):
        console.print(t)
    return buf.getvalue().splitlines()
