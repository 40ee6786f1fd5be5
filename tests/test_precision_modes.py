"""Precision modes (issue 19, part 2): --precision fp32|bf16|fp16 through the harness, the sweep, the prompts and
the report. The harness cases run real judges and candidate processes on the CPU at size small."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import harness.judge.judge as J
import problems as P
from agents.report import build_report
from agents.report.audit import audit_record
from agents.report.synthetic import synthetic_attempts
from agents.report.text import compare_table, format_headline, headline_tables, kernel_table, waterfall_tables
from agents.store import RunStore
from harness import EvalSettings, evaluate
from harness.measure.precision import DTYPE_NAMES
from harness.measure.record import ErrorStats
from harness.scoring.applicability import tf32_applies
from harness.scoring.protocols import NAIVE, VERIFIED, score

ROOT = Path(__file__).resolve().parent.parent
FAST = dict(naive_timing_trials=10, verified_min_iters=3, verified_max_iters=8, verified_seconds_per_subject=0.2,
            cpu_threads=1)


def _reference_as_candidate(pid: str, edit=lambda s: s) -> str:
    return edit(P.load(pid).source("small").replace("class Model(", "class ModelNew("))


# -- one declaration of the tolerance per dtype ----------------------------------------------------------------

def test_tolerance_per_dtype_comes_from_the_protocol_declaration(monkeypatch):
    assert set(DTYPE_NAMES) == {"fp32", "bf16", "fp16"}
    assert VERIFIED.tolerance_for("fp32") == 1e-3 and VERIFIED.tolerance_for("bf16") == VERIFIED.tolerance_for("fp16") == 1e-2
    assert all(NAIVE.tolerance_for(p) == 1e-2 for p in DTYPE_NAMES)
    assert VERIFIED.tolerance_for("fp32", "bfloat16") == 1e-2  # an fp32 run's 16-bit output: as before precision modes
    assert not hasattr(J, "VERIFIED_TOL")  # the judge keeps no copy of its own
    st = ErrorStats(max_abs=5e-3, max_rel=5e-3, min_tolerance=5e-3, out_dtype="bfloat16")
    exp = J.Expected(None)
    assert J.verified_pass(st, exp, "bf16") and not J.verified_pass(st.model_copy(update={"out_dtype": "float32"}), exp)
    # The judge's decision moves with the declaration: no second number anywhere.
    monkeypatch.setattr(J, "VERIFIED", VERIFIED.model_copy(update={"tolerance_half": 1e-3}))
    assert not J.verified_pass(st, exp, "bf16")


def test_scoring_and_audit_read_the_run_precision():
    rec = synthetic_attempts()[0]
    from harness.measure.record import MeasurementRecord

    r = MeasurementRecord.model_validate(rec.record)
    for t in r.verified_trials:  # every verified trial 5e-3 off: fails fp32's 1e-3, passes bf16's 1e-2
        t.error = t.error.model_copy(update={"min_tolerance": 5e-3, "max_abs": 5e-3})
        t.tf32_baseline_max_abs = None
    assert score(r, VERIFIED).verdict == "incorrect"
    low = r.model_copy(update={"precision": "bf16"})
    assert score(low, VERIFIED).verdict == "correct"
    assert MeasurementRecord.model_validate({k: v for k, v in rec.record.items() if k != "precision"}).precision == "fp32"
    entry = audit_record(r)
    assert entry is not None and entry.failing_trials
    assert all(t.tolerance == VERIFIED.tolerance_for("fp32") for t in entry.failing_trials if t.trials == "verified")


# -- the harness ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_reference_as_candidate_is_correct_in_low_precision(precision):
    """Gemm, scale and LeakyReLU with parameters (perturbed in the reference and the kernel alike): the problem's own
    Model, cast by the worker, against the judge's exact reference from the same rounded inputs and parameters."""
    pid = "level2/12_Gemm_Multiply_LeakyReLU"
    ev = evaluate(_reference_as_candidate(pid), pid, settings=EvalSettings(precision=precision, **FAST))
    rec = ev.record
    assert rec.status == "ok", rec.error
    assert rec.precision == precision and rec.output_dtype == DTYPE_NAMES[precision]
    assert {k: r.verdict for k, r in ev.results.items()} == {"naive": "correct", "verified": "correct"}, ev.results
    assert rec.param_mapping, "parameters were perturbed"
    assert any(t.distribution == "large" for t in rec.verified_trials)  # adversarial trials run in the dtype too
    assert all(t.error.out_dtype == DTYPE_NAMES[precision] and t.error.dtype_ok for t in rec.verified_trials
               if not t.reference_nonfinite)
    applies, why = tf32_applies(rec)
    assert not applies and precision in why
    assert "exact reference computed in float64" in rec.provenance.notes


def test_a_kernel_returning_fp32_in_a_bf16_run_fails_the_dtype_check():
    pid = "level1/19_ReLU"
    src = _reference_as_candidate(pid, lambda s: s.replace("return torch.relu(x)", "return torch.relu(x).float()"))
    ev = evaluate(src, pid, settings=EvalSettings(precision="bf16", **FAST))
    assert ev.record.output_dtype == "float32"
    assert ev.results["verified"].verdict == "incorrect"
    assert any("output dtype float32 differs" in r for r in ev.results["verified"].reasons)
    assert all(not t.error.dtype_ok for t in ev.record.verified_trials)


def test_fp32_is_unchanged_by_default():
    assert EvalSettings().precision == "fp32"
    pid = "level1/19_ReLU"
    ev = evaluate(_reference_as_candidate(pid), pid, settings=EvalSettings(**FAST))
    assert ev.record.precision == "fp32" and ev.record.output_dtype == "float32"
    assert ev.results["verified"].verdict == "correct"


# -- the demo sweep in bf16 -----------------------------------------------------------------------------------

def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def test_demo_sweep_in_bf16(tmp_path):
    """The demo kernels upcast bf16 inputs to float32 for their float32 extensions and cast the result back: every
    final turn is correct under both protocols, and the deliberate faults of the first turns stay what they are in
    fp32 (ReLU's copy and softmax's zeros pass naive and fail verified). Two problems, four builds: every other demo
    kernel's bf16 cast is checked in-process by tests/test_agents_demo_build.py, without building it again, and
    LeakyReLU's compile error (no precision in it) by tests/test_loop_driver.py."""
    run_dir = tmp_path / "bf16"
    fast = [x for k, v in FAST.items() for x in ("--eval-set", f"{k}={v}")]
    r = subprocess.run([sys.executable, "-m", "agents.sweep", "--models", "demo", "--precision", "bf16", "--problems",
                        "1/19,1/23", "--device", "cpu", "--size", "small", "--turns", "2",
                        "--build-workers", "1", "--no-progress", "--run-dir", str(run_dir), *fast],
                       cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr + r.stdout
    assert "bf16" in r.stdout  # the closing table names the precision
    assert json.loads((run_dir / "config.json").read_text())["precision"] == "bf16"
    attempts = {(a.problem_id, a.turn): a for a in RunStore(run_dir)}
    verdicts = {k: {p: v["verdict"] for p, v in a.results.items()} for k, a in attempts.items()}
    both = lambda naive, verified: {"naive": naive, "verified": verified}  # noqa: E731
    assert verdicts == {
        ("level1/19_ReLU", 1): both("correct", "incorrect"),  # a copy: right on torch.rand, wrong on negatives
        ("level1/19_ReLU", 2): both("correct", "correct"),
        ("level1/23_Softmax", 1): both("correct", "incorrect"),  # all zeros: within naive's loose tolerance only
        ("level1/23_Softmax", 2): both("correct", "correct"),
    }, verdicts
    for a in attempts.values():
        assert a.precision == "bf16" and a.record["precision"] == "bf16"
        assert "torch.bfloat16 tensor" in a.messages[1]["content"]  # the prompt says so
        if a.record["status"] == "ok":
            assert a.record["output_dtype"] == "bfloat16"

    rep = build_report(run_dir, resamples=0)
    assert rep.precisions == ["bf16"] and {h.precision for h in rep.headline} == {"bf16"}
    from rich.console import Console

    console = Console(width=250, record=True)
    for t in [*headline_tables(rep), *waterfall_tables(rep), kernel_table(rep)]:
        console.print(t)
    text = console.export_text()
    assert text.count("demo · bf16") >= 2 and "precision bf16" in text
    wf = rep.waterfall("demo")
    assert next(s for s in wf.steps if s.step == "tf32_baseline").not_applicable == 2  # every final turn: bf16
    # the headline view of the demo run (python -m agents.report RUN --headline): every final turn correct
    head = format_headline(rep.headline_view)
    assert "demo · bf16 (each cell: naive / verified)" in head
    row = next(line for line in head.splitlines() if line.startswith("| all problems "))
    assert [c.strip() for c in row.split("|")][1:5] == ["all problems", "2", "2", "2 / 2"]  # problems, N, kernels, correct
    assert "geomean over all (incorrect = 1.00x)" in head


def test_a_float32_only_kernel_is_a_runtime_error_in_bf16():
    """The demo's scalar multiply without its casts: a C++ kernel written for float32 only (TORCH_CHECK kFloat)."""
    src = (ROOT / "agents" / "demo_kernels" / "cpu" / "l1_5_scalar_mul.py").read_text()
    cast = "scale_ext.scale_forward(A.float(), float(s)).to(A.dtype)"
    assert cast in src
    src = src.replace(cast, "scale_ext.scale_forward(A, float(s))")
    ev = evaluate(src, "level1/5_Matrix_scalar_multiplication", settings=EvalSettings(precision="bf16", **FAST))
    assert {r.verdict for r in ev.results.values()} == {"runtime_error"}
    assert "expected float32" in ev.record.error


# -- fp32 and bf16 side by side -------------------------------------------------------------------------------

def _write(run_dir: Path, precision: str) -> None:
    store = RunStore(run_dir)
    store.write_config({"models": ["synth"], "strategies": ["zero_shot"], "precision": precision})
    for a in synthetic_attempts():
        if a.record is not None:
            a.record = {**a.record, "precision": precision}
        store.append(a.model_copy(update={"precision": precision}))


def test_fp32_and_bf16_runs_side_by_side(tmp_path):
    _write(tmp_path / "fp32", "fp32")
    _write(tmp_path / "bf16", "bf16")
    rep = build_report(tmp_path / "bf16", resamples=0, compare=tmp_path / "fp32")
    rows = [r for r in rep.compare if r.level == "all"]
    assert rows and all((r.precision_a, r.precision_b) == ("bf16", "fp32") and r.a and r.b for r in rows)
    from rich.console import Console

    console = Console(width=250, record=True)
    console.print(compare_table(rep))
    text = console.export_text()
    assert "precision A" in text and "bf16" in text and "fp32" in text

    # Both precisions in one store (attempts appended from two runs): two systems, never pooled, each named.
    mixed = RunStore(tmp_path / "mixed")
    mixed.write_config({"models": ["synth"]})
    for d in ("fp32", "bf16"):
        for a in RunStore(tmp_path / d):
            mixed.append(a)
    both = build_report(tmp_path / "mixed", resamples=0)
    assert both.precisions == ["bf16", "fp32"]
    alls = [(h.precision, h.protocol) for h in both.headline if h.level == "all"]
    assert sorted(alls) == [("bf16", "naive"), ("bf16", "verified"), ("fp32", "naive"), ("fp32", "verified")]
    console = Console(width=250, record=True)
    for t in headline_tables(both):
        console.print(t)
    text = console.export_text()
    assert "synth · bf16" in text and "synth · fp32" in text
    single = build_report(tmp_path / "fp32", resamples=0)
    console = Console(width=250, record=True)
    for t in headline_tables(single):
        console.print(t)
    assert "· fp32" not in console.export_text() and "precision" not in console.export_text()  # reads as before
