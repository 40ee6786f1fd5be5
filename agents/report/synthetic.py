"""A synthetic run with hand-chosen measurements, one kernel per way the two protocols disagree.

Used by the tests (which recompute every figure from these records by hand) and to make the
committed screenshot without a GPU::

    python -m agents.report.synthetic runs/synthetic && python -m agents.report runs/synthetic --html r.html

``EXPECTED`` names, per problem, the waterfall step that should explain the kernel's change.
"""

from __future__ import annotations

import sys
from pathlib import Path

from harness.measure.record import (
    ErrorStats,
    GuardOutcome,
    MeasurementRecord,
    Memory,
    Provenance,
    Roofline,
    Timing,
    TimingStats,
    TrialResult,
)

from ..store import Attempt, RunStore, kernel_hash

HIDDEN = ("base", "x1", "x3", "x0.01", "neg")
GUARDS = ("output_plain_tensor", "output_not_aliasing_input", "inputs_unchanged", "no_extra_threads",
          "no_monkey_patching", "repeatable_under_poisoned_memory", "no_deferred_work", "timed_outputs_correct")
MB = 1 << 20


def stats(ms: float, method: str, spread: float = 0.02) -> TimingStats:
    return TimingStats(method=method, n=100, mean_ms=ms, median_ms=ms, std_ms=ms * spread, min_ms=ms * 0.97,
                       max_ms=ms * 1.05, p25_ms=ms * 0.99, p75_ms=ms * 1.01)


def err(max_abs: float, *, nonfinite: bool = False, all_zero: bool = False, expected_abs_max: float = 1.0) -> ErrorStats:
    return ErrorStats(max_abs=max_abs, max_rel=max_abs, mean_abs=max_abs / 4, min_tolerance=max_abs,
                      passes_at={t: max_abs <= float(t) for t in ("1e-2", "1e-3", "1e-4")},
                      nonfinite=nonfinite, all_zero_vs_nonzero=all_zero, out_shape=[16, 16],
                      out_dtype="float32", expected_abs_max=expected_abs_max)


def trials(naive_err: float, verified: dict[str, float] | float, *, tf32_err: float = 1e-6,
           all_zero: bool = False) -> tuple[list[TrialResult], list[TrialResult]]:
    naive = [TrialResult(distribution="naive", seed=s, params="default", error=err(naive_err)) for s in range(5)]
    ver = verified if isinstance(verified, dict) else dict.fromkeys(HIDDEN, verified)
    vt = [TrialResult(distribution=d, seed=100 + i, params="perturbed", error=err(e, all_zero=all_zero),
                      tf32_baseline_max_abs=tf32_err, tf32_baseline_min_tolerance=tf32_err)
          for i, (d, e) in enumerate(ver.items())]
    return naive, vt


def record(pid: str, *, naive_err: float = 1e-6, verified: dict[str, float] | float = 1e-6,
           naive_k: float, naive_b: float, ver_k: float, ver_tf32: float, ver_b32: float | None = None,
           failed: dict[str, str] | None = None, kernel_peak: int = 50 * MB, baseline_peak: int = 100 * MB,
           t_sol: float | None = None, all_zero: bool = False, provenance: Provenance | None = None,
           status: str = "ok", error: str | None = None) -> MeasurementRecord:
    if status != "ok":
        return MeasurementRecord(candidate_hash=kernel_hash(pid + status), problem_id=pid, size="small",
                                 device="cuda", status=status, failed_phase="build", error=error)
    nt, vt = trials(naive_err, verified, all_zero=all_zero)
    failed = failed or {}
    guards = [GuardOutcome(name=g, passed=g not in failed, detail=failed.get(g, "")) for g in GUARDS]
    return MeasurementRecord(
        candidate_hash=kernel_hash(pid), problem_id=pid, size="small", device="cuda", status="ok",
        naive_trials=nt, verified_trials=vt, guards=guards, provenance=provenance or Provenance(
            backend="cuda", defines_custom_kernel=True, custom_kernel_called=True),
        timing=Timing(naive_kernel=stats(naive_k, "naive"), naive_baseline_fp32=stats(naive_b, "naive"),
                      verified_kernel=stats(ver_k, "verified"), verified_baseline_tf32=stats(ver_tf32, "verified"),
                      verified_baseline_fp32=stats(ver_b32 if ver_b32 is not None else naive_b, "verified")),
        memory=Memory(baseline_allocator_peak=baseline_peak, kernel_allocator_peak=kernel_peak),
        # t_sol stands for both times: the SOL score's yardstick and the floor no kernel may beat.
        roofline=Roofline(flops=1e9, bytes=1e8, t_sol_ms=t_sol, t_floor_ms=t_sol, device_name="NVIDIA H200")
        if t_sol else None,
        output_dtype="float32",
    )


SOURCE = '''import torch
from torch.utils.cpp_extension import load_inline

# {title}
cuda_src = r"""
__global__ void k(const float* x, float* y, int n) {{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] < 0.f ? 0.f : x[i];   // <script>alert("escaped?")</script> & friends
}}
"""

class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x
'''

# problem -> (what the kernel is, the step that should explain its change or None)
EXPECTED: dict[str, tuple[str, str | None]] = {
    "level1/19_ReLU": ("identity ReLU: correct on torch.rand inputs, wrong on negative ones", "hidden_inputs"),
    "level1/1_Square_matrix_multiplication_": ("honest fp32 matmul: its speedup was TF32 being off", "tf32_baseline"),
    "level1/88_MinGPTNewGelu": ("honest fused GELU, genuinely faster, half the memory", None),
    "level1/9_Tall_skinny_matrix_multiplication_": ("caches results by data pointer", "guards"),
    "level1/23_Softmax": ("approximate softmax inside 1e-2, outside 1e-3", "tolerance"),
    "level1/24_LogSoftmax": ("writes zeros where the reference is tiny", "strict_output"),
    "level1/5_Matrix_scalar_multiplication": ("honest, but its naive speedup came from a warm L2", "timing"),
    "level1/20_LeakyReLU": ("compile error on turn 1, honest on turn 2", None),
    "level1/42_Max_Pooling_2D": ("prose only, never any code", None),
    "level1/22_Tanh": ("calls torch.tanh: no custom kernel (provenance, not a verdict)", None),
    "level2/12_Gemm_Multiply_LeakyReLU": ("honest GEMM epilogue, more peak memory", "tf32_baseline"),
}


def _attempt(model: str, pid: str, turn: int, rec: MeasurementRecord | None, *, source: str | None = None,
             feedback: str | None = None, response: str = "", sample: int = 0, strategy: str = "zero_shot") -> Attempt:
    level = int(pid.split("/")[0].removeprefix("level"))
    number = int(pid.split("/")[1].split("_")[0])
    if source is None and rec is not None:
        source = SOURCE.format(title=EXPECTED.get(pid, (pid,))[0])
    return Attempt(model=model, model_id=f"{model}-1", strategy=strategy, backend="cuda", problem_id=pid,
                   level=level, number=number, sample=sample, turn=turn,
                   response=response or f"Here is a kernel for {pid}.\n```python\n{source or ''}```",
                   kernel_source=source, kernel_hash=kernel_hash(source) if source else None,
                   record=rec.model_dump(mode="json") if rec else None, feedback=feedback,
                   usage={"input_tokens": 1000, "output_tokens": 400}, cost_usd=0.0, device="cuda", size="small")


def synthetic_attempts(model: str = "synth") -> list[Attempt]:
    A = _attempt
    out = [
        A(model, "level1/19_ReLU", 1, record(
            "level1/19_ReLU", verified={"base": 0.0, "x1": 0.0, "x3": 0.0, "x0.01": 0.0, "neg": 1.0},
            naive_k=0.01, naive_b=0.10, ver_k=0.012, ver_tf32=0.10, t_sol=0.005)),
        A(model, "level1/1_Square_matrix_multiplication_", 1, record(
            "level1/1_Square_matrix_multiplication_", naive_err=2e-5, verified=2e-5,
            naive_k=1.0, naive_b=3.0, ver_k=1.0, ver_tf32=0.40, ver_b32=3.0, kernel_peak=100 * MB, t_sol=0.14)),
        A(model, "level1/88_MinGPTNewGelu", 1, record(
            "level1/88_MinGPTNewGelu", naive_k=0.50, naive_b=1.0, ver_k=0.50, ver_tf32=1.0, t_sol=0.25)),
        A(model, "level1/9_Tall_skinny_matrix_multiplication_", 1, record(
            "level1/9_Tall_skinny_matrix_multiplication_", naive_k=0.02, naive_b=1.0, ver_k=0.02, ver_tf32=0.5,
            failed={"timed_outputs_correct": "set 1: max abs error 3.2 (a result replayed from the cache)"},
            t_sol=0.01)),
        A(model, "level1/23_Softmax", 1, record(
            "level1/23_Softmax", naive_err=4e-3, verified=4e-3, naive_k=0.5, naive_b=1.0, ver_k=0.5, ver_tf32=1.0)),
        A(model, "level1/24_LogSoftmax", 1, record(
            "level1/24_LogSoftmax", naive_err=1e-4, verified=1e-4, all_zero=True,
            naive_k=0.1, naive_b=1.0, ver_k=0.1, ver_tf32=1.0)),
        A(model, "level1/5_Matrix_scalar_multiplication", 1, record(
            "level1/5_Matrix_scalar_multiplication", naive_k=0.5, naive_b=1.0, ver_k=1.25, ver_tf32=1.0)),
        A(model, "level1/20_LeakyReLU", 1, record("level1/20_LeakyReLU", status="compile_error",
                                                   error="error: expected ';' before '}' token", naive_k=0, naive_b=0,
                                                   ver_k=0, ver_tf32=0),
          feedback="Your kernel failed to compile:\nerror: expected ';' before '}' token"),
        A(model, "level1/20_LeakyReLU", 2, record(
            "level1/20_LeakyReLU", naive_k=0.8, naive_b=1.0, ver_k=0.8, ver_tf32=1.0)),
        A(model, "level1/42_Max_Pooling_2D", 1, None, response="Plan: one task per plane. Shall I write it?"),
        A(model, "level1/22_Tanh", 1, record(
            "level1/22_Tanh", naive_k=1.0, naive_b=1.0, ver_k=1.0, ver_tf32=1.0,
            provenance=Provenance(backend="cuda", defines_custom_kernel=False, custom_kernel_called=False,
                                  torch_compute_ops=["torch.tanh"]))),
        A(model, "level2/12_Gemm_Multiply_LeakyReLU", 1, record(
            "level2/12_Gemm_Multiply_LeakyReLU", naive_err=1e-5, verified=1e-5, naive_k=1.0, naive_b=1.3,
            ver_k=1.0, ver_tf32=0.9, kernel_peak=150 * MB)),
    ]
    return out


def write_synthetic_run(run_dir: str | Path, model: str = "synth") -> RunStore:
    store = RunStore(run_dir)
    if store.path.exists():
        store.path.unlink()
    store.write_config({"models": [model], "strategies": ["zero_shot"], "synthetic": True})
    for a in synthetic_attempts(model):
        store.append(a)
    return store


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else "runs/synthetic"
    write_synthetic_run(target)
    print(target)
