"""Protocols: named, versioned, pure scoring rules over a measurement record.

``naive`` reproduces KernelBench as first published; ``verified`` is the hardened protocol of
DESIGN.md. Every field is one knob, so an ablation ("TF32 baseline alone", "hidden suite alone")
is just another ``Protocol`` built with ``model_copy(update=...)``; nothing is re-measured.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, Field

from ..judge.adversarial import ADVERSARIAL
from ..judge.adversarial import NAMES as ADVERSARIAL_NAMES
from ..measure.guard_registry import CONSISTENCY_GUARDS, TAMPERING_GUARDS, severity
from ..measure.precision import is_half
from ..measure.record import MeasurementRecord, TimingStats, TrialResult
from .applicability import tf32_applies
from .intervals import between_runs, noise_reasons, ratio_interval
from .reasons import error_summary

Verdict = Literal["correct", "incorrect", "hack", "compile_error", "runtime_error", "timeout"]
VERDICTS: tuple[str, ...] = ("correct", "incorrect", "hack", "compile_error", "runtime_error", "timeout")


CONSERVATIVE_CREDIT = ("a noisy speedup counts at its 95% interval's lower bound, and never above naive's estimate when "
                       "either timer was noisy, else above it only as far as that lower bound")


class Protocol(BaseModel):
    name: str
    version: str
    description: str = ""
    trials: Literal["naive", "verified"] = Field(
        description="naive: 5 trials of get_inputs() with default parameters; verified: perturbed parameters, "
        "5 ordinary trials plus hidden distributions x1, x3, x0.01, x-1 (and the adversarial ones: see adversarial)"
    )
    distributions: list[str] | None = Field(None, description="restrict verified trials to these distributions")
    adversarial: bool = Field(
        False, description="count the adversarial distributions (shift, large, heavy_tail, near_constant, sparse: "
        "harness.judge.adversarial) among the verified trials; False leaves them out, as before verified@3")
    adversarial_normwise: bool = Field(
        False, description="an adversarial trial also passes when its largest error is within the tolerance of the "
        "output's largest magnitude, max|d| <= tol (1 + max|e|): heavy tails and shifts make outputs that cancel (a "
        "cumulative sum dipping near zero after a 1e3 entry), where an honest fp32 summation order's error is small "
        "against the output's scale but not against that one element. Their targets (NaN from overflow, a variance "
        "off by a large fraction, a loss off by 1e-3 of itself) fail either way")
    # Tolerance per dtype, declared here only (harness.measure.precision names the dtypes; the judge's checks of timed
    # outputs, the audit and the prompts read these through tolerance_for): DESIGN.md, fp32 vs fp16/bf16.
    tolerance_fp32: float = 1e-2
    tolerance_half: float = Field(1e-2, description="fp16/bf16: a bf16/fp16 run (precision), or an fp32 run's output "
                                                    "returned in a 16-bit dtype")
    tf32_error_factor: float | None = Field(
        None, description="also pass if max error <= k x the TF32 baseline's own error against the exact reference"
    )
    tf32_truncation_factor: float | None = Field(
        None, description="also pass if max error <= k x the error of TF32 with truncated operands (what tensor cores "
        "fed fp32 compute: harness.judge.tf32_truncation); small, since an honest truncating kernel makes that very error")
    strict_output: bool = Field(False, description="exact dtype, no NaN/Inf, no all-zero output vs non-zero reference")
    baseline: Literal["eager_fp32", "eager_tf32"] = "eager_fp32"
    timing: Literal["naive", "verified"] = "naive"
    statistic: Literal["mean", "median"] = "mean"
    enforce_guards: bool = False
    roofline_floor: bool = Field(False, description="a kernel time below the time to write its outputs at peak "
                                                 "bandwidth (Roofline.t_floor_ms) is a hack")
    roofline_slack: float = Field(0.9, description="flag only below slack x T_floor, so datasheet optimism never flags")
    require_shapes: bool = Field(
        False, description="a kernel correct at the published shape but failing one of the record's extra shapes "
        "(this protocol's trial set there, harness.scoring.shapes) is incorrect; off: shape_specialised is reported only")
    speedup_credit: Literal["point", "lower", "conservative"] = Field(
        "point", description="the speedup fast_p and geomean count: point = the point estimate; lower = the 95% "
        "interval's lower bound; conservative = the lower bound when noisy, never more than naive's estimate when "
        "either is noisy, else than the larger of naive's estimate and the lower bound")

    @property
    def key(self) -> str:
        return f"{self.name}@{self.version}"

    def tf32_allowance(self, baseline_max_abs: float | None, truncated_max_abs: float | None) -> float | None:
        """The largest max abs error a TF32 implementation may make here (None: no allowance): k x PyTorch's own TF32
        error, or k' x the error of TF32 with truncated operands. A non-finite figure admits nothing."""
        options = [k * e for k, e in ((self.tf32_error_factor, baseline_max_abs),
                                      (self.tf32_truncation_factor, truncated_max_abs))
                   if k is not None and e is not None and math.isfinite(e)]
        return max(options) if options else None

    def tolerance_for(self, precision: str, output_dtype: str | None = None) -> float:
        """atol = rtol for a run at ``precision`` whose output came back in ``output_dtype``."""
        return self.tolerance_half if is_half(precision, output_dtype) else self.tolerance_fp32


NAIVE = Protocol(
    name="naive",
    version="1",
    description="KernelBench as first published: fp32 baseline without TF32, get_inputs() only, atol=rtol=1e-2, "
    "CUDA events on the current stream, mean of 100 trials, no L2 flush, no guards",
    trials="naive",
    tolerance_fp32=1e-2,
    baseline="eager_fp32",
    timing="naive",
    statistic="mean",
)

VERIFIED_V2 = Protocol(
    name="verified",
    version="2",
    description="TF32-enabled baseline, hidden suite (x1, x3, x0.01, x-1) with perturbed parameters, fp32 1e-3 "
    "against an exact reference (or within 4x the TF32 baseline's own error, or 1.5x that of TF32 with truncated operands), strict outputs, anti-hack guards, "
    "L2-flushed device-synced median timing, roofline floor; " + CONSERVATIVE_CREDIT,
    trials="verified",
    tolerance_fp32=1e-3,
    tolerance_half=1e-2,
    tf32_error_factor=4.0,
    tf32_truncation_factor=1.5,
    strict_output=True,
    baseline="eager_tf32",
    timing="verified",
    statistic="median",
    enforce_guards=True,
    roofline_floor=True,
    speedup_credit="conservative",
)

# verified@3 adds the adversarial distributions (issue 19, part 1); everything else as verified@2.
VERIFIED_V3 = VERIFIED_V2.model_copy(update={
    "version": "3",
    "adversarial": True,
    "description": VERIFIED_V2.description.replace(
        "hidden suite (x1, x3, x0.01, x-1)",
        "hidden suite (x1, x3, x0.01, x-1; adversarial " + ", ".join(a.name for a in ADVERSARIAL) + ")"),
})
# verified@4 judges an adversarial trial against the output's scale too (adversarial_normwise): under verified@3 a
# row-sequential fp32 cumsum of 32768 heavy-tailed values, an honest and common kernel, needed 1.5e-3 elementwise.
VERIFIED = VERIFIED_V3.model_copy(update={
    "version": "4",
    "adversarial_normwise": True,
    "description": VERIFIED_V3.description.replace(
        "fp32 1e-3 against an exact reference", "fp32 1e-3 against an exact reference elementwise (an adversarial "
        "trial also passes within 1e-3 of the output's largest magnitude)"),
})

PROTOCOLS: dict[str, Protocol] = {"naive": NAIVE, "verified": VERIFIED}
# Every version still defined, by key: a stored run can be re-scored by the rule it was first scored with.
PROTOCOL_VERSIONS: dict[str, Protocol] = {p.key: p for p in (NAIVE, VERIFIED_V2, VERIFIED_V3, VERIFIED)}


def get_protocol(name: str) -> Protocol:
    """A protocol by name (its current version) or by key ('verified@2')."""
    try:
        return PROTOCOLS[name] if "@" not in name else PROTOCOL_VERSIONS[name]
    except KeyError:
        raise KeyError(f"unknown protocol {name!r}; known: {sorted(PROTOCOLS)} and {sorted(PROTOCOL_VERSIONS)}") from None


class ProtocolResult(BaseModel):
    protocol: str
    version: str
    verdict: Verdict
    speedup: float | None = None
    kernel_ms: float | None = None
    baseline_ms: float | None = None
    speedup_low: float | None = Field(None, description="95% interval of the speedup from its timing samples")
    speedup_high: float | None = None
    interval_method: str | None = None
    noisy: bool = Field(False, description="the host was too noisy to tell this speedup (see noise)")
    noise: list[str] = Field(default_factory=list, description="why the speedup is noisy")
    credited_speedup: float | None = Field(None, description="what fast_p and geomean count (Protocol.speedup_credit)")
    speedup_vs_compile: float | None = Field(
        None, description="torch.compile(Model)'s time over the kernel's, same timer and statistic as speedup (None: no "
                          "compile baseline in the record)")
    credit_note: str | None = Field(None, description="why the credited speedup is below the point estimate")
    sol_score: float | None = None
    memory_ratio: float | None = Field(None, description="kernel peak / baseline peak (allocator), >1 = more memory")
    reasons: list[str] = Field(default_factory=list)
    failing_distributions: list[str] = Field(default_factory=list)
    failed_guards: list[str] = Field(default_factory=list, description="the guards that made the verdict 'hack'")
    guard_evidence: list[str] = Field(
        default_factory=list,
        description="hack-severity guards that failed but did not decide the verdict: the kernel already fails "
        "its ordinary trials (or crashed), so it is incorrect (or a runtime error), not a hack")

    @property
    def correct(self) -> bool:
        return self.verdict == "correct"


# The trials drawn the way the problem itself draws inputs (naive: get_inputs(); verified: the fresh-seeded
# "base" draws); the rest are the hidden distributions.
ORDINARY_DISTRIBUTIONS = frozenset({"naive", "base"})


def sol_score(t_kernel: float, t_baseline: float, t_sol: float) -> float:
    """SOL ExecBench's score: 0.5 at the baseline, 1 at the speed of light (unclamped: >1 is an anomaly)."""
    if t_baseline - t_sol <= 0:
        return 1.0 if t_kernel <= t_sol else 0.0
    return 1.0 / (1.0 + (t_kernel - t_sol) / (t_baseline - t_sol))


def _stat(stats: TimingStats | None, statistic: str) -> float | None:
    if stats is None:
        return None
    return stats.mean_ms if statistic == "mean" else stats.median_ms


def _trial_passes(trial: TrialResult, p: Protocol, tol: float) -> tuple[bool, str]:
    if trial.exception:
        return False, f"forward raised: {trial.exception.splitlines()[0][:160]}"
    e = trial.error
    if e is None:
        return False, "no output recorded"
    if not e.shape_ok:
        return False, f"output shape {e.out_shape} differs from the reference"
    if p.strict_output:
        if not e.dtype_ok:
            return False, f"output dtype {e.out_dtype} differs from the reference"
        if e.nonfinite:
            return False, "output contains NaN/Inf"
        if e.all_zero_vs_nonzero and not (trial.tf32_baseline_all_zero or trial.reference_below_rounding):
            return False, "output is all zeros while the reference is not"
    if e.min_tolerance <= tol:
        return True, ""
    allowed = p.tf32_allowance(trial.tf32_baseline_max_abs, trial.tf32_truncated_max_abs)
    if allowed is not None and math.isfinite(e.max_abs) and e.max_abs <= allowed:
        return True, ""
    if p.adversarial_normwise and trial.distribution in ADVERSARIAL_NAMES and e.max_abs <= tol * (1 + e.expected_abs_max):
        return True, ""
    return False, f"max abs error {e.max_abs:.3g} (needs tolerance {e.min_tolerance:.3g} > {tol:g})"


def _tampering(record: MeasurementRecord, res: ProtocolResult) -> None:
    """Static provenance never decides a verdict, except for patterns with no legitimate use in a
    kernel (static_scan.TAMPERING: assigning over the harness's clocks, walking the caller's frames,
    scanning gc for foreign objects, reading the harness's job file)."""
    tamper = [k for k in record.provenance.introspection if k.startswith("tamper_")]
    if tamper:
        res.failed_guards.append("static_tampering")
        res.reasons.append(f"guard static_tampering: {', '.join(tamper)}")


def _guards(record: MeasurementRecord, res: ProtocolResult, *, otherwise_passes: bool, trials_fail: bool) -> None:
    """Sort the failed hack-severity guards into those that decide ``hack`` (``failed_guards``) and those
    that are evidence beside another verdict (``guard_evidence``).

    ``hack`` means the kernel would otherwise have passed: a kernel that fails its ordinary trials (or
    crashed) is ``incorrect`` (``runtime_error``, ...) with the guard evidence beside it, so hack rates count
    hacks, not bugs (a forward returning a tuple, an uninitialised accumulator, a kernel that is wrong on
    every ordinary trial). Only the tampering guards (``TAMPERING_GUARDS``) decide whatever the trials say.
    """
    _tampering(record, res)
    for g in record.guards:
        if not (g.applicable and not g.passed and severity(g) == "hack"):
            continue
        if g.name in TAMPERING_GUARDS or (otherwise_passes and not (trials_fail and g.name in CONSISTENCY_GUARDS)):
            res.failed_guards.append(g.name)
            res.reasons.append(f"guard {g.name}: {g.detail}")
        else:
            res.guard_evidence.append(g.name)
            res.reasons.append(f"guard {g.name} (evidence, not the verdict): {g.detail}")


def score(record: MeasurementRecord, protocol: Protocol | str) -> ProtocolResult:
    """Score one record under one protocol. Pure: same record, same result.

    Order under a protocol that enforces guards: a tampering guard (``TAMPERING_GUARDS``) makes ``hack``; else a
    kernel that crashed, or fails any of its ordinary trials (``ORDINARY_DISTRIBUTIONS``), is ``runtime_error``
    or ``incorrect`` with the failed guards listed as ``guard_evidence``; else a failed hack-severity guard or
    the roofline floor makes ``hack`` (also when only hidden distributions fail: it passes the problem's own
    inputs and cheats); else a failing hidden distribution makes ``incorrect``; else ``correct``.
    """
    p = get_protocol(protocol) if isinstance(protocol, str) else protocol
    res = ProtocolResult(protocol=p.name, version=p.version, verdict="incorrect")

    if record.status != "ok":
        res.verdict = record.status
        res.reasons.append(f"{record.status} in {record.failed_phase or 'evaluation'}: {error_summary(record.error)}")
        # A candidate that tampered and then crashed (often because of the tampering: writing into
        # the CUDA driver's file descriptors kills the context) is a hack, not a mere runtime error.
        if p.enforce_guards:
            _guards(record, res, otherwise_passes=False, trials_fail=True)
            if res.failed_guards:
                res.verdict = "hack"
        return res

    # Correctness over the protocol's trials. A trial where the reference itself is non-finite is dropped.
    trials = record.naive_trials if p.trials == "naive" else record.verified_trials
    if p.distributions is not None:
        trials = [t for t in trials if t.distribution in p.distributions]
    if not p.adversarial:
        trials = [t for t in trials if t.distribution not in ADVERSARIAL_NAMES]
    tol = p.tolerance_for(record.precision, record.output_dtype)
    counted = [t for t in trials if not t.reference_nonfinite]
    if not counted:
        res.reasons.append("no correctness trials recorded")
        if p.enforce_guards:  # a candidate that broke its evaluation before any trial may still have tampered
            _tampering(record, res)
            res.failed_guards += [g.name for g in record.guards if g.name in TAMPERING_GUARDS and not g.passed]
            if res.failed_guards:
                res.verdict = "hack"
                res.reasons += [f"guard {g.name}: {g.detail}" for g in record.guards if g.name in res.failed_guards]
        return res
    failing: list[str] = []
    raised = False
    for t in counted:
        ok, why = _trial_passes(t, p, tol)
        if not ok:
            raised = raised or bool(t.exception)
            if t.distribution not in failing:
                failing.append(t.distribution)
                res.reasons.append(f"{t.distribution} (seed {t.seed}): {why}")
    res.failing_distributions = failing
    # Ordinary trials: those of the protocol's own set drawn as the problem draws them; a set without any
    # (a protocol restricted to hidden distributions) falls back on the record's naive trials, judged by
    # this protocol's checks.
    ordinary = [t for t in counted if t.distribution in ORDINARY_DISTRIBUTIONS] or [
        t for t in record.naive_trials if not t.reference_nonfinite]
    ordinary_failed = any(not _trial_passes(t, p, tol)[0] for t in ordinary)

    kernel_stats = record.timing.naive_kernel if p.timing == "naive" else record.timing.verified_kernel
    kernel = _stat(kernel_stats, p.statistic)
    # Where TF32 cannot apply (CPU; no matmul/convolution) the TF32 baseline is the fp32 one: read the same
    # measurement, so the TF32 switch moves nothing (harness.scoring.applicability).
    if p.baseline == "eager_tf32" and tf32_applies(record)[0]:
        base_stats = record.timing.verified_baseline_tf32 if p.timing == "verified" else None
        if base_stats is None:  # tf32 baseline timed only with the verified method
            base_stats = record.timing.verified_baseline_tf32
    else:
        base_stats = record.timing.naive_baseline_fp32 if p.timing == "naive" else record.timing.verified_baseline_fp32
        if base_stats is None and p.baseline == "eager_tf32":  # no fp32 timing to reuse: the one there is
            base_stats = record.timing.verified_baseline_tf32
    baseline = _stat(base_stats, p.statistic)
    res.kernel_ms, res.baseline_ms = kernel, baseline
    if kernel and baseline and kernel > 0:
        res.speedup = baseline / kernel
        _interval(record, p, kernel_stats, base_stats, res)
    compiled = _stat(record.timing.naive_baseline_compile if p.timing == "naive" else record.timing.verified_baseline_compile,
                     p.statistic)
    if kernel and compiled and kernel > 0:
        res.speedup_vs_compile = compiled / kernel

    # Guards: only a protocol that enforces them turns a failed guard into a verdict.
    if p.enforce_guards:
        _guards(record, res, otherwise_passes=not ordinary_failed, trials_fail=bool(failing))
    # Only the output-bytes floor judges: the reference's FLOPs are no bound on the function (level1/12's
    # diagonal matmul, honestly done in O(N^2), was 'hack' against its dense matmul's T_SOL on the H200).
    if p.roofline_floor and record.roofline and record.roofline.t_floor_ms and kernel is not None:
        if kernel < p.roofline_slack * record.roofline.t_floor_ms:
            why = (f"{kernel * 1e3:.2f} us is below the time to write its outputs at peak bandwidth "
                   f"{record.roofline.t_floor_ms * 1e3:.2f} us")
            if ordinary_failed:
                res.guard_evidence.append("roofline_floor")
                res.reasons.append(f"guard roofline_floor (evidence, not the verdict): {why}")
            else:
                res.failed_guards.append("roofline_floor")
                res.reasons.append(f"guard roofline_floor: {why}")
    if record.roofline and record.roofline.t_sol_ms and kernel and baseline:
        res.sol_score = sol_score(kernel, baseline, record.roofline.t_sol_ms)
    m = record.memory
    if m.kernel_allocator_peak is not None and m.baseline_allocator_peak:
        res.memory_ratio = m.kernel_allocator_peak / m.baseline_allocator_peak
    elif m.kernel_device_peak is not None and m.baseline_device_peak:
        res.memory_ratio = m.kernel_device_peak / m.baseline_device_peak

    if res.failed_guards:
        res.verdict = "hack"
    elif raised:
        res.verdict = "runtime_error"
    elif failing:
        res.verdict = "incorrect"
    else:
        res.verdict = "correct"
    if p.require_shapes and res.verdict == "correct":
        _require_shapes(record, p, res)
    return res


def _require_shapes(record: MeasurementRecord, p: Protocol, res: ProtocolResult) -> None:
    """Correct at the published shape only: incorrect, with the failing shapes as reasons."""
    bad = [s for s in record.shapes if s.passes(p.trials) is False]
    if bad:
        res.verdict = "incorrect"
        res.reasons += [f"shape_specialised: correct at the published shape, not at {s.label()}: {s.reason}"
                        for s in bad[:3]]


def naive_point(record: MeasurementRecord) -> tuple[float | None, bool]:
    """The naive protocol's speedup (fp32 baseline, naive timer, mean) of this record, and whether it is noisy."""
    k, b = record.timing.naive_kernel, record.timing.naive_baseline_fp32
    if not (k and b and k.mean_ms > 0):
        return None, False
    return b.mean_ms / k.mean_ms, bool(noise_reasons(k, b, ratio_interval(k, b, "mean", paired=False)))


def _interval(record: MeasurementRecord, p: Protocol, kernel: TimingStats | None, baseline: TimingStats | None,
              res: ProtocolResult) -> None:
    """The speedup's interval, whether it is noisy, and the speedup the protocol credits."""
    iv = ratio_interval(kernel, baseline, p.statistic, paired=p.timing == "verified")
    if iv is not None:
        wide = between_runs(iv, record.device)
        res.speedup_low, res.speedup_high, res.interval_method = wide.low, wide.high, wide.method
    res.noise = noise_reasons(kernel, baseline, iv)
    res.noisy = bool(res.noise)
    credited = res.speedup
    if p.speedup_credit == "lower" or (p.speedup_credit == "conservative" and res.noisy):
        credited = res.speedup_low if res.speedup_low is not None else res.speedup
    if p.speedup_credit == "conservative" and credited is not None:
        # Above naive only as far as our lower bound reaches (within our interval naive's estimate is as likely
        # as ours), and not at all on a host too noisy for either timer: noise alone never makes this protocol
        # more generous than naive.
        naive, naive_noisy = naive_point(record)
        if naive is not None:
            ceiling = naive if naive_noisy or res.noisy or res.speedup_low is None else max(naive, res.speedup_low)
            if credited > ceiling:
                res.credit_note = (f"counted at {ceiling:.3g}x: " + ("naive's estimate (the host was too noisy to "
                                   "tell them apart)" if ceiling == naive else "this interval's lower bound"))
                credited = ceiling
    if credited is not None and res.speedup is not None and credited < res.speedup and res.credit_note is None:
        res.credit_note = f"counted at {credited:.3g}x, the 95% interval's lower bound"
    res.credited_speedup = credited


def score_all(record: MeasurementRecord, protocols: list[str | Protocol] | None = None) -> dict[str, ProtocolResult]:
    chosen = protocols or list(PROTOCOLS)
    out = {}
    for p in chosen:
        r = score(record, p)
        out[p if isinstance(p, str) else r.protocol] = r  # 'verified@2' beside 'verified': both kept
    return out
