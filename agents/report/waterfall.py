"""The waterfall: from the naive protocol to the verified one, one component at a time.

Each step is a ``Protocol`` derived from the previous one with ``model_copy(update=...)``, the
update taken field by field from ``VERIFIED`` so the last step *is* the verified protocol's scoring
rule. The attribution is order-dependent, so the report also scores each component alone on top
of naive and verified without each component.

Order: the timing method comes first, then KernelBench-Verified's decomposition (TF32 baseline,
then the hidden suite), then the hardening this project adds. Timing goes first because the
harness times the TF32 baseline only with the verified method: with the TF32 step first, that step
would divide a verified-method baseline by a naive-method kernel time and charge the difference
between the two timing methods to TF32 (on CPU records that swings a ReLU from 1.2x to 9.7x and
back). With timing first, every later step compares times taken by the same method.

Each step changes exactly one thing:

* ``timing`` changes only the timer. The baseline stays the fp32 eager model under PyTorch's default
  flags (matmul TF32 off, cuDNN TF32 on): naive's baseline is ``timing.naive_baseline_fp32`` and
  the step's is ``timing.verified_baseline_fp32``, and the harness times both with those same
  default flags. So the step moves a speedup by the two timers' readings of the kernel and of the
  baseline, and on a record where both baseline readings agree, by the kernel's alone.
* ``tf32_baseline`` changes only matmul TF32: ``verified_baseline_fp32`` (defaults) is replaced by
  ``verified_baseline_tf32`` (matmul and cuDNN TF32 on), same timer. cuDNN TF32 is already on
  under the defaults, so a convolution's baseline barely moves here; the step is what enabling
  TF32 does relative to naive. It moves a speedup by exactly
  ``verified_baseline_tf32 / verified_baseline_fp32``.

A component that cannot apply to a kernel changes nothing for it: on the CPU, or for a reference
without matmul/convolution, TF32 does not exist or touches nothing, and scoring reads the fp32
baseline's timing for the TF32 baseline too (``harness.scoring.applicability``) instead of comparing two
timings of one computation. ``APPLIES`` names those components; the report counts the kernels each
step left alone.

"fp32" in a baseline's name means "PyTorch's default flags", never "both TF32 flags off". Records
from a harness that timed ``verified_baseline_fp32`` with cuDNN TF32 off as well put a cuDNN
TF32 change into both steps on convolution problems (``timing`` up, ``tf32_baseline`` down); the
step labels describe records from the harness that uses the defaults.

* ``adversarial_inputs`` (right after the hidden scales) adds the trials of ``harness.judge.adversarial`` (shifted
  means, x100 magnitudes, heavy tails, near-constant rows, sparse inputs) to the verified trials; it changes only
  verdicts, and only of records that hold such trials (written since verified@3): on older records it changes
  nothing, and ``APPLIES`` says so.
* ``noise`` (last: it compares the verified timer's interval with naive's point estimate) changes only
  which speedup fast_p and geomean count (``harness.scoring.protocols.CONSERVATIVE_CREDIT``), never a verdict or a
  measured speedup.

Memory is not a step: neither protocol turns peak memory into a verdict, it is a reported column.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from pydantic import BaseModel, Field

from harness.judge.adversarial import ADVERSARIAL
from harness.measure.record import MeasurementRecord
from harness.scoring.applicability import tf32_applies
from harness.scoring.protocols import CONSERVATIVE_CREDIT, NAIVE, VERIFIED, Protocol

from .. import metrics as M


class WaterfallStep(BaseModel):
    step: str
    label: str
    protocol: str
    attempted: int
    correct: int
    geomean: M.Estimate
    fast_1: M.Estimate
    d_geomean: float | None = Field(None, description="ratio of geomean to the previous step's")
    d_fast_1: float | None = Field(None, description="fast_1 minus the previous step's (absolute)")
    verdicts_changed: int = 0
    became_incorrect: int = 0
    fast_lost: int = 0
    not_applicable: int = Field(0, description="kernels this step's component cannot change (TF32 on the CPU or "
                                               "without matmul/convolution): they keep the previous step's result")


class Component(BaseModel):
    step: str
    label: str
    fields: list[str]


COMPONENTS: list[Component] = [
    Component(step="timing", label="verified timer only (L2 flush, launch lead, interleaved, median); "
              "baseline flags unchanged: PyTorch defaults, matmul TF32 off, cuDNN TF32 on",
              fields=["timing", "statistic"]),
    Component(step="tf32_baseline", label="TF32 baseline: matmul TF32 on (cuDNN TF32 is already on in the "
              "default-flag baseline), same timer; where TF32 cannot apply (CPU, no matmul/convolution) the "
              "fp32 baseline's timing is reused", fields=["baseline"]),
    Component(step="hidden_inputs", label="hidden distributions x1, x3, x0.01, x-1 with perturbed parameters",
              fields=["trials", "distributions"]),
    Component(step="adversarial_inputs", label="adversarial distributions that change shape, not scale: "
              + ", ".join(a.name for a in ADVERSARIAL) + " (verified@3; judged against the output's scale too since verified@4)",
              fields=["adversarial", "adversarial_normwise"]),
    Component(step="tolerance", label="fp32 tolerance 1e-3 vs exact reference (or within k x TF32 error)",
              fields=["tolerance_fp32", "tolerance_half", "tf32_error_factor", "tf32_truncation_factor"]),
    Component(step="strict_output", label="strict outputs: exact dtype, no NaN/Inf, no all-zero output",
              fields=["strict_output"]),
    Component(step="guards", label="anti-hack guards and the output-bytes floor",
              fields=["enforce_guards", "roofline_floor", "roofline_slack"]),
    Component(step="noise", label=f"noise: {CONSERVATIVE_CREDIT}", fields=["speedup_credit"]),
]

# step -> whether its component can change anything for a record: (applies, why not). Steps not listed
# apply to every record.
def _has_adversarial_trials(record: MeasurementRecord) -> tuple[bool, str]:
    if any(t.distribution in {a.name for a in ADVERSARIAL} for t in record.verified_trials):
        return True, ""
    if record.skipped_distributions:
        return False, "no input's domain admits an adversarial distribution"
    return False, "recorded before verified@3: no adversarial trials"


APPLIES: dict[str, Callable[[MeasurementRecord], tuple[bool, str]]] = {
    "tf32_baseline": tf32_applies, "adversarial_inputs": _has_adversarial_trials}

META_FIELDS = {"name", "version", "description"}
WATERFALL_VERSION = "wf2"  # wf2: the adversarial_inputs step


def _update(c: Component, source: Protocol) -> dict:
    return {f: getattr(source, f) for f in c.fields}


def uncovered_fields(start: Protocol = NAIVE, end: Protocol = VERIFIED) -> list[str]:
    """Scoring fields that differ between the protocols but no component changes (should be empty)."""
    covered = {f for c in COMPONENTS for f in c.fields}
    return [f for f in type(start).model_fields if f not in META_FIELDS and f not in covered
            and getattr(start, f) != getattr(end, f)]


def steps(start: Protocol = NAIVE, end: Protocol = VERIFIED) -> list[tuple[str, str, Protocol]]:
    """[(step, label, protocol)]: 'naive', then each component added cumulatively."""
    out = [(start.name, "as published (KernelBench)", start)]
    cur = start
    names = [start.name]
    for c in COMPONENTS:
        names.append(c.step)
        cur = cur.model_copy(update={**_update(c, end), "name": "+".join(names), "version": WATERFALL_VERSION,
                                     "description": f"{start.name} plus " + ", ".join(names[1:])})
        out.append((c.step, c.label, cur))
    return out


def alone(start: Protocol = NAIVE, end: Protocol = VERIFIED) -> list[tuple[str, str, Protocol]]:
    """Each component alone on top of ``start``."""
    return [(c.step, c.label, start.model_copy(update={**_update(c, end), "name": f"{start.name}+{c.step}",
                                                       "version": WATERFALL_VERSION}))
            for c in COMPONENTS]


def without(start: Protocol = NAIVE, end: Protocol = VERIFIED) -> list[tuple[str, str, Protocol]]:
    """``end`` with each component reverted to ``start``'s setting."""
    return [(c.step, c.label, end.model_copy(update={**_update(c, start), "name": f"{end.name}-{c.step}",
                                                     "version": WATERFALL_VERSION}))
            for c in COMPONENTS]


def same_scoring(a: Protocol, b: Protocol) -> bool:
    return all(getattr(a, f) == getattr(b, f) for f in type(a).model_fields if f not in META_FIELDS)


def not_applicable(step: str, records: Iterable[MeasurementRecord | None]) -> int:
    """How many of ``records`` the component of ``step`` cannot change (they keep the previous step's result)."""
    applies = APPLIES.get(step)
    return 0 if applies is None else sum(1 for r in records if r is not None and not applies(r)[0])
