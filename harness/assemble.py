"""The measurement record assembled from what the judge found (trials, its guards, the parameter mapping, the
kernel and baseline times it credits) and what the candidate process reported (phases, timing samples, in-process
guard evidence): pure functions, no process of their own."""

from __future__ import annotations

from pydantic import ValidationError

from .errors import HarnessError
from .measure.guard_registry import outcome
from .measure.record import GuardOutcome, MeasurementRecord, SkippedDistribution, Timing, TrialResult
from .measure.stats import summarize


def assemble(record: MeasurementRecord, messages: list[dict], res, verdicts: dict) -> None:
    """The record from the judge's findings (trials, its guards, the mapping) and the candidate process's
    messages (phases, timing samples, in-process guard evidence)."""
    record.naive_trials = [TrialResult.model_validate(x) for x in verdicts.get("naive_trials", [])]
    record.verified_trials = [TrialResult.model_validate(x) for x in verdicts.get("verified_trials", [])]
    record.skipped_distributions = [SkippedDistribution(distribution=d, reason=r)
                                    for d, r in verdicts.get("skipped_distributions", [])]
    record.guards.extend(GuardOutcome.model_validate(x) for x in verdicts.get("guards", []))
    mapping = verdicts.get("mapping") or {}
    record.param_mapping = mapping.get("pairs") if mapping else None
    record.perturbation_skipped = mapping.get("skipped") if mapping else None
    if mapping.get("pairs"):
        loaded = mapping.get("loaded") or []
        record.provenance.notes.append(
            "random parameters drawn by the verified construction seed on both sides; perturbed constants loaded "
            "into the candidate's " + (", ".join(loaded[:6]) if loaded else "(none)"))
    if mapping.get("reference_only"):
        record.provenance.notes.append("perturbed in the reference only (no candidate tensor the mapping pairs with "
                                       "them by name, last name component, declaration order or unique shape): "
                                       + ", ".join(mapping["reference_only"][:6]))
    if verdicts.get("reference_precision"):
        record.provenance.notes.append(f"exact reference computed in {verdicts['reference_precision']}")
    if verdicts.get("handover") == "device":
        record.provenance.notes.append("inputs and outputs handed over in shared device memory")
    elif verdicts.get("handover") == "host-fallback":
        record.provenance.notes.append("inputs and outputs handed over in host memory (the driver refused a "
                                       "shared device buffer)")
    record.output_dtype = verdicts.get("output_dtype")
    phase = "load"
    done = candidate_ran = False
    for m in messages:
        kind, payload = m["kind"], m["payload"]
        if kind == "phase":
            phase = payload
            done = done or payload == "done"
        elif kind == "candidate_code_starts":
            candidate_ran = True
        elif kind == "harness_error":
            if not candidate_ran:
                raise HarnessError(str(payload))
            # After candidate code ran in that process, the message may be the candidate's own doing.
            record.status, record.failed_phase = "runtime_error", phase
            record.error = f"the candidate process reported a failure during {phase}: {str(payload)[:1000]}"
            return
        elif kind == "judge_link_broken":
            if any(g.name == "judge_protocol" for g in record.guards):
                return  # judged on what reached the judge before the candidate broke the protocol
            record.status, record.failed_phase = "runtime_error", phase
            record.error = f"the candidate process lost its link to the judge during {phase}: {payload}"
            return
        elif kind == "error":
            record.status, record.failed_phase, record.error = payload.status, payload.phase, payload.error
            return
        elif kind == "output_dtype" and record.output_dtype is None:
            record.output_dtype = payload
        elif kind == "note" and sum(n.startswith("candidate process: ") for n in record.provenance.notes) < 4:
            record.provenance.notes.append(f"candidate process: {payload}")  # its own words: a few at most
        elif kind == "custom_code_called":
            record.provenance.custom_kernel_called = payload
        elif kind == "timing":
            try:
                record.timing = Timing.model_validate({**payload, **{k: getattr(record.timing, k) for k in SAMPLED}})
            except ValidationError as exc:
                record.guards.append(outcome("judge_protocol", False, detail=f"malformed 'timing' report: {exc}"[:500]))
        elif kind == "timing_samples":
            for k in SAMPLED:
                if payload.get(k):
                    set_samples(record.timing, k, payload[k])
        elif kind == "memory":
            record.memory = payload
        elif kind in ("guards", "guard"):
            # extend, not replace: findings sent earlier (harness_introspection) must survive
            record.guards.extend(payload if kind == "guards" else [payload])
    if verdicts.get("kernel_ms") and record.timing.verified_kernel is not None:
        record.timing.verified_kernel = summarize(verdicts["kernel_ms"], "verified")
    # The naive loop's mean as the judge's clock bounds it, never the candidate process's own copy.
    if verdicts.get("naive_kernel_ms") and record.timing.naive_kernel is not None:
        record.timing.naive_kernel = summarize(verdicts["naive_kernel_ms"], "naive")
    # The baselines as the judge timed them, never a copy the candidate's process passed on.
    timed = record.timing.verified_kernel is not None
    for field_name, ms in (verdicts.get("baseline_ms") or {}).items():
        if field_name in SAMPLED and ms and timed:
            set_samples(record.timing, field_name, ms)
    comp = verdicts.get("compile") or {}
    record.timing.compile_seconds, record.timing.compile_error = comp.get("seconds"), comp.get("error")
    side = record.guard("no_unsynchronised_side_streams")
    if side is not None and not side.passed and record.timing.verified_kernel and record.timing.synced_kernel_ms:
        # the honest number for this kernel is the synced one
        synced = record.timing.synced_kernel_ms
        record.timing.verified_kernel = record.timing.verified_kernel.model_copy(
            update={"median_ms": synced, "mean_ms": synced, "samples": None})  # samples no longer match it
    if done:
        return
    if res.memory_exceeded:
        record.status, record.failed_phase = "runtime_error", phase
        record.error = (f"the candidate's processes used {res.memory_exceeded / 2**30:.1f} GiB of host memory, over "
                        f"the limit (EvalSettings.memory_limit_bytes); stopped during {phase}")
    elif res.timed_out:
        record.status, record.failed_phase = "timeout", phase
        record.error = f"no result within {res.seconds:.0f} s (stopped during {phase})"
    elif not candidate_ran:
        how = f"killed by {res.signal_name}" if res.signal_name else f"exited with code {res.returncode}"
        raise HarnessError(f"the candidate process {how} before any candidate code ran\n{res.stderr_tail[-2000:]}")
    else:
        record.status, record.failed_phase = "runtime_error", phase
        how = f"killed by {res.signal_name}" if res.signal_name else f"exited with code {res.returncode}"
        record.error = f"candidate process {how} during {phase}\n{res.stderr_tail[-3000:]}"
        if phase == "load":
            record.status = "compile_error"


SAMPLED = ("naive_kernel", "naive_baseline_fp32", "verified_kernel", "verified_baseline_tf32", "verified_baseline_fp32",
            "naive_baseline_compile", "verified_baseline_compile")


def set_samples(timing: Timing, field_name: str, samples: list[float]) -> None:
    """A timing field (one of ``SAMPLED``) summarized from its raw samples, by the method its name says."""
    setattr(timing, field_name, summarize(samples, "naive" if field_name.startswith("naive") else "verified"))


def phase_durations(messages: list[dict], started: float, ended: float) -> dict[str, float]:
    """Seconds per worker phase, from when each phase message reached the parent; 'startup' is process
    start and imports up to the first message."""
    marks = [(m["payload"], m["received_at"]) for m in messages if m["kind"] == "phase"]
    if not marks:
        return {"startup": ended - started}
    out = {"startup": marks[0][1] - started}
    for (name, t0), (_, t1) in zip(marks, [*marks[1:], ("end", ended)], strict=True):
        if name != "done":
            out[name] = out.get(name, 0.0) + (t1 - t0)
    return out
