"""The measurement record: everything measured about one (candidate, problem, size, device).

A record is written once by the harness; protocols (``harness.scoring.protocols``) are pure functions
over it, so re-scoring never re-runs a kernel.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from .precision import Precision

RECORD_VERSION = 1


class _Stored(BaseModel):
    """Base of every stored model: JSON has no inf/NaN, and pydantic's default writes them as ``null``, which a
    required float then refuses on loading (one NaN output made a whole run unreadable). Written as the strings
    ``"Infinity"``, ``"-Infinity"``, ``"NaN"`` instead (valid JSON, read back as the same floats)."""

    model_config = ConfigDict(ser_json_inf_nan="strings")


def _null_error_is_inf(v: Any) -> Any:
    return math.inf if v is None else v


def _null_is_nan(v: Any) -> Any:
    return math.nan if v is None else v


# An error statistic stored as ``null`` (records written before the string encoding) was inf or NaN: read as
# inf, which fails every tolerance exactly as the original did.
ErrorFloat = Annotated[float, BeforeValidator(_null_error_is_inf)]
# Any other measured float stored as ``null`` is read as NaN (unknown).
MeasuredFloat = Annotated[float, BeforeValidator(_null_is_nan)]

Phase = Literal["build", "load", "init", "correctness", "guards", "timing", "memory", "done"]
Status = Literal["ok", "compile_error", "runtime_error", "timeout"]


class ErrorStats(_Stored):
    """Candidate output compared with an expected output."""

    max_abs: ErrorFloat = Field(description="max |out - expected| (inf if NaN/Inf present)")
    max_rel: ErrorFloat = Field(description="max |out - expected| / (|expected| + 1e-12)")
    mean_abs: ErrorFloat = 0.0
    # Smallest tolerance t in {1e-2, 1e-3, 1e-4} with allclose(out, expected, atol=t, rtol=t); None = none passed.
    passes_at: dict[str, bool] = Field(default_factory=dict, description="'1e-2' -> allclose passed")
    # Smallest t such that allclose(atol=rtol=t) holds (computed exactly): |d| <= t(1+|e|) for all elements.
    min_tolerance: ErrorFloat = Field(description="max_i |d_i| / (1 + |e_i|): allclose passes iff tol >= this")
    nonfinite: bool = Field(False, description="NaN or Inf in the candidate output")
    all_zero_vs_nonzero: bool = Field(False, description="output all zeros while expected is not")
    shape_ok: bool = True
    dtype_ok: bool = True
    out_shape: list[int] = Field(default_factory=list)
    out_dtype: str = ""
    expected_abs_max: ErrorFloat = 0.0


class TrialResult(_Stored):
    """One correctness trial: one input set drawn from one distribution."""

    distribution: str = Field(description="'naive' | 'base' | 'x1' | 'x3' | 'x0.01' | 'neg' | an adversarial "
                              "distribution (harness.judge.adversarial: 'shift', 'large', 'heavy_tail', 'near_constant', "
                              "'sparse')")
    seed: int
    params: Literal["default", "perturbed", "reseeded"]  # reseeded: built under the verified seed, nothing loaded
    error: ErrorStats | None = None
    # Error of the TF32-enabled baseline against the exact reference on the same inputs (verified only).
    tf32_baseline_max_abs: float | None = None
    tf32_baseline_min_tolerance: float | None = None
    tf32_truncated_max_abs: float | None = Field(
        None, description="error of the exact reference with every matmul/convolution operand truncated to TF32 "
        "(what a truncating tensor-core kernel, e.g. Triton's tl.dot on fp32, computes; harness.judge.tf32_truncation); "
        "None where no matmul or convolution ran")
    tf32_baseline_all_zero: bool = Field(
        False, description="that baseline's output was all zeros while the exact one is not (the exact values round "
                           "to zero in the output dtype): an all-zero output is then no finding")
    reference_below_rounding: bool = Field(
        False, description="the exact output's every value is within a few roundings of the output dtype at the "
                           "problem's output scale (harness.measure.compare.below_rounding): an all-zero output is then "
                           "no finding")
    reference_nonfinite: bool = Field(False, description="the reference gave NaN/Inf here: trial dropped")
    exception: str | None = None


class SkippedDistribution(_Stored):
    """An adversarial distribution not run for this problem: no input's domain admits it."""

    distribution: str
    reason: str


class GuardOutcome(_Stored):
    name: str
    passed: bool
    detail: str = ""
    severity: Literal["hack", "suspicious", "info"] = "hack"
    applicable: bool = True


class Provenance(_Stored):
    """What the candidate actually is, reported apart from pass/fail."""

    backend: Literal["cuda", "triton", "cpp", "python", "unknown"] = "unknown"
    defines_custom_kernel: bool = False
    custom_kernel_called: bool | None = Field(None, description="runtime: a function of a built extension or a Triton kernel ran")
    torch_compute_ops: list[str] = Field(default_factory=list, description="torch/F compute calls found in the source")
    try_except_fallback: bool = False
    precision_downcast: list[str] = Field(default_factory=list)
    enables_tf32: bool = False
    uses_streams: bool = False
    uses_threads: bool = False
    introspection: list[str] = Field(default_factory=list, description="gc/inspect/ctypes/file reads etc.")
    notes: list[str] = Field(default_factory=list)


class TimingStats(_Stored):
    method: str
    n: int
    mean_ms: MeasuredFloat
    median_ms: MeasuredFloat
    std_ms: MeasuredFloat
    min_ms: MeasuredFloat
    max_ms: MeasuredFloat
    p25_ms: MeasuredFloat
    p75_ms: MeasuredFloat
    # Raw per-call times in the order measured (a speedup's interval is drawn from them; for the verified timer
    # sample i of each subject comes from the same interleaved round). None in records written before they were kept.
    samples: list[float] | None = None


class Timing(_Stored):
    """Candidate and baselines, measured in one process, interleaved where the method says so."""

    naive_kernel: TimingStats | None = None
    naive_baseline_fp32: TimingStats | None = Field(None, description="eager, PyTorch default flags (TF32 matmul off)")
    verified_kernel: TimingStats | None = None
    verified_baseline_tf32: TimingStats | None = Field(None, description="eager, TF32 on for matmul and cuDNN")
    verified_baseline_fp32: TimingStats | None = None
    naive_baseline_compile: TimingStats | None = Field(None, description="torch.compile(Model), default mode, PyTorch "
                                                                          "default flags, naive method")
    verified_baseline_compile: TimingStats | None = Field(None, description="the same, verified method, interleaved")
    compile_seconds: float | None = Field(None, description="compiling and warming up torch.compile(Model) (excluded "
                                                            "from every timing; once per problem)")
    compile_error: str | None = Field(None, description="why there is no torch.compile baseline, when asked for one")
    event_only_kernel_ms: float | None = Field(None, description="events on the current stream, no device sync")
    synced_kernel_ms: float | None = Field(None, description="device-wide sync before the end event")
    l2_flush_bytes: int = 0
    launch_lead_us: MeasuredFloat = Field(0.0, description="device-side hold queued before each verified start event")


class Memory(_Stored):
    baseline_allocator_peak: int | None = None
    kernel_allocator_peak: int | None = None
    baseline_device_peak: int | None = Field(None, description="device-level used-memory delta (cudaMemGetInfo) or RSS on CPU")
    kernel_device_peak: int | None = None
    unit: str = "bytes"


class Roofline(_Stored):
    flops: MeasuredFloat
    bytes: MeasuredFloat
    matmul_flops: float | None = Field(
        None, description="FLOPs of the reference's matmul-like ops (mm, convolution, attention), the only ops TF32 "
                          "touches; None: not counted (records written before the field)")
    output_bytes: float | None = Field(None, description="bytes of the reference's outputs (None: records before the field)")
    peak_flops: float | None = None
    peak_bandwidth: float | None = None
    t_sol_ms: float | None = Field(None, description="speed of light of the reference's algorithm (SOL score)")
    t_floor_ms: float | None = Field(
        None, description="output bytes / peak bandwidth: no implementation is faster (the roofline_floor guard). "
                          "None: unknown device, or a record before the field (the guard then does not judge)")
    device_name: str = ""
    precision: str = "fp32"
    peaks_source: str = Field("", description="where the peak rates come from: '' a GPU's datasheet table, or a CPU "
                                              "host's measurement (harness.host_peaks) and the floor's margin")


class Environment(_Stored):
    device: str
    device_name: str = ""
    driver: str | None = None
    torch: str = ""
    cuda: str | None = None
    python: str = ""
    hostname: str = ""
    clocks: dict[str, str] = Field(default_factory=dict)
    cpu_threads: int | None = None


class ShapeCheck(_Stored):
    """The candidate's correctness at one extra shape (``harness.scoring.shapes``): correctness trials only, no timing.
    A pass is None when the shape was not checked (``reason`` says why)."""

    name: str = Field(description="'shape1', 'shape2', ... in the order of harness.scoring.shapes.SHAPE_STEPS")
    overrides: dict[str, Any] = Field(default_factory=dict, description="the size constants at this shape")
    naive_pass: bool | None = Field(None, description="the naive protocol's trials all pass at this shape")
    verified_pass: bool | None = Field(None, description="the verified protocol's trials all pass (its correctness "
                                                         "checks; guards and timing are judged at the published shape)")
    reason: str = Field("", description="why it failed, or why it was skipped")

    def passes(self, trials: str) -> bool | None:
        """The pass under a protocol whose trial set is ``trials`` ('naive' or 'verified')."""
        return self.naive_pass if trials == "naive" else self.verified_pass

    def label(self) -> str:
        return f"{self.name} (" + ", ".join(f"{k}={v}" for k, v in self.overrides.items()) + ")"


class MeasurementRecord(_Stored):
    """Everything measured about one candidate on one problem, size and device."""

    version: int = RECORD_VERSION
    candidate_hash: str
    problem_id: str
    size: str
    device: str
    precision: Precision = Field("fp32", description="the dtype inputs, parameters, reference and output were in "
                                                     "(harness.measure.precision; records written before precision modes: fp32)")
    status: Status = "ok"
    failed_phase: Phase | None = None
    error: str | None = Field(None, description="trimmed message for compile/runtime errors and timeouts")
    build_seconds: float | None = None
    build_cached: bool = False
    eval_seconds: float | None = None
    worker_prespawned: bool = Field(False, description="the candidate ran in a process started ahead of time")
    gpu_index: int | None = Field(None, description="the physical GPU (CUDA_VISIBLE_DEVICES) a pool worker pinned it to")
    phase_seconds: dict[str, float] = Field(
        default_factory=dict, description="reference, startup, load (incl. import/build hit), init, correctness, timing; "
                                          "the judge's side: judge_expected (references), judge_handover (inputs out), "
                                          "judge_waiting (for the candidate's output), judge_compare (reading and "
                                          "comparing it), judge_timing_setup, judge_baselines")
    param_mapping: dict[str, str] | None = Field(
        None, description="candidate tensor -> reference parameter that received the same perturbed values")
    perturbation_skipped: str | None = Field(None, description="records before issue 30: why no parameter was perturbed "
                                                               "(the reference is now perturbed whatever the candidate declares)")
    naive_trials: list[TrialResult] = Field(default_factory=list)
    verified_trials: list[TrialResult] = Field(default_factory=list)
    skipped_distributions: list[SkippedDistribution] = Field(
        default_factory=list, description="adversarial distributions not run, each with why (records written before "
                                          "verified@3: empty, and no adversarial trial either)")
    guards: list[GuardOutcome] = Field(default_factory=list)
    provenance: Provenance = Field(default_factory=Provenance)
    timing: Timing = Field(default_factory=Timing)
    memory: Memory = Field(default_factory=Memory)
    roofline: Roofline | None = None
    environment: Environment | None = None
    output_dtype: str | None = None
    problem_flags: list[str] = Field(default_factory=list)
    remeasured: str | None = Field(
        None, description="this is the candidate's second measurement (EvalSettings.witness_remeasure): why, with the "
                          "first measurement's timing_witness detail. The judge's clock weighed both measurements' "
                          "series together for this record's witness and credit")
    shapes: list[ShapeCheck] = Field(default_factory=list, description="extra shapes checked (EvalSettings.extra_shapes)")
    shapes_note: str | None = Field(None, description="why fewer extra shapes were checked than asked for, or none")
    shape_specialised: bool | None = Field(
        None, description="correct at the published shape under a protocol but failing an extra shape under that "
                          "protocol's trials; None: no extra shape checked")
    stdout_tail: str = ""
    created_at: str = ""

    def guard(self, name: str) -> GuardOutcome | None:
        return next((g for g in self.guards if g.name == name), None)
