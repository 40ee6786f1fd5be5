"""The audit: every kernel whose verdict changed between naive and verified, as a block a person can
adjudicate in a minute (``python -m agents.report RUN --audit [--json]``, and the HTML report's
"Audit" section).

Per kernel (every evaluated turn, not only the final one):

* problem, model/strategy, sample, turn, naive verdict + speedup -> verified verdict + speedup;
* the responsible step: the first step of ``waterfall.steps()`` where the verdict changes (and any
  later change along the waterfall);
* the failing trials: distribution, seed, parameters, max abs / rel error, the tolerance the trial
  needed against the one allowed, the TF32 baseline's own error on that trial (and the k x TF32
  allowance), and the first waterfall step at which the trial fails;
* the parameter mapping used for the perturbed parameters (the record's ``param_mapping`` and
  ``perturbation_skipped``; records made before the harness stored them show the trials' ``params``
  and the provenance notes);
* every failed guard with its severity and detail, and whether the verified verdict counts it.
* the extra shapes, when the run checked them (``--shapes N``): shape-specialised or not, and each shape.

Everything is a pure function of stored records: nothing is re-measured, and each trial is judged
by ``harness.scoring.protocols.score`` itself (on a one-trial copy of the record), never by a second copy of
the tolerance rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from harness.judge.adversarial import NAMES as ADVERSARIAL_NAMES
from harness.measure.guard_registry import BY_NAME, severity
from harness.measure.record import MeasurementRecord, TrialResult
from harness.scoring.protocols import NAIVE, VERIFIED, Protocol, ProtocolResult, score
from harness.scoring.shapes import lines as shape_lines

from . import waterfall as W
from .scoring import Thread, load_threads

TEXT_TRIALS = 6  # trials shown per kernel in the text form (the JSON has all)


class TrialEvidence(BaseModel):
    trials: Literal["naive", "verified"] = Field(description="the trial set: naive's get_inputs() or verified's")
    distribution: str
    seed: int
    params: str = Field(description="'default', 'perturbed' or 'reseeded' (built under the verified seed, nothing loaded) parameters in this trial")
    max_abs: float | None = None
    max_rel: float | None = None
    needed_tolerance: float | None = Field(None, description="smallest atol=rtol with which allclose passes")
    tolerance: float = Field(description="the tolerance the protocol allows for this output dtype")
    tf32_baseline_max_abs: float | None = Field(None, description="the TF32 baseline's own max abs error here")
    tf32_allowance: float | None = Field(None, description="k x the TF32 baseline's error (passes below it)")
    first_fails_at: str | None = Field(None, description="first waterfall step at which this trial fails")
    why: str = ""
    exception: str | None = None
    nonfinite: bool = False
    all_zero_vs_nonzero: bool = False
    shape_ok: bool = True
    dtype_ok: bool = True
    out_dtype: str = ""


class GuardEvidence(BaseModel):
    name: str
    severity: str
    detail: str = ""
    applicable: bool = True
    counted: bool = Field(False, description="the verified verdict counts this failure")
    catches: str = Field("", description="what the guard exposes (harness.measure.guard_registry)")
    checked_by: str = Field("", description="judge, parent or candidate_process: who computed the outcome")


class ParamEvidence(BaseModel):
    params: list[str] = Field(default_factory=list, description="parameter kinds seen in the verified trials")
    mapping: dict[str, str] | None = Field(None, description="candidate tensor -> reference parameter")
    skipped: str | None = Field(None, description="why perturbation was skipped for this kernel")
    notes: list[str] = Field(default_factory=list, description="the record's provenance notes")


class VerdictStep(BaseModel):
    step: str
    label: str
    before: str
    after: str


class AuditEntry(BaseModel):
    model: str = ""
    strategy: str = ""
    precision: str = "fp32"
    problem_id: str
    level: int | None = None
    sample: int = 0
    turn: int = 1
    final: bool = True
    candidate_hash: str = ""
    status: str = "ok"
    error: str | None = None
    naive_verdict: str
    naive_speedup: float | None = None
    verified_verdict: str
    verified_speedup: float | None = None
    step: str = Field(description="the first waterfall step where the verdict changes")
    step_label: str = ""
    change: str = Field(description="'correct -> incorrect' at that step")
    path: list[VerdictStep] = Field(default_factory=list, description="every verdict change along the waterfall")
    reasons: list[str] = Field(default_factory=list, description="the verified protocol's reasons")
    failing_trials: list[TrialEvidence] = Field(default_factory=list)
    params: ParamEvidence = Field(default_factory=ParamEvidence)
    failed_guards: list[GuardEvidence] = Field(default_factory=list)
    shape_specialised: bool | None = Field(None, description="correct at the published shape only (None: no extra "
                                                             "shape checked)")
    shapes: list[str] = Field(default_factory=list, description="the extra shapes (harness.scoring.shapes.lines)")
    not_run: list[str] = Field(default_factory=list, description="adversarial distributions not run, with why "
                                                                  "(record.skipped_distributions)")


class Audit(BaseModel):
    run: str = ""
    protocols: list[str]
    steps: list[str]
    evaluated: int = Field(0, description="attempts with a measurement record")
    entries: list[AuditEntry]

    def by_step(self) -> dict[str, int]:
        out = dict.fromkeys(self.steps[1:], 0)
        for e in self.entries:
            out[e.step] = out.get(e.step, 0) + 1
        return {k: v for k, v in out.items() if v}


# ---- the pure part ----------------------------------------------------------------------------------


def _trial_verdict(record: MeasurementRecord, trial: TrialResult, p: Protocol) -> tuple[bool, str]:
    """(fails, why) for one trial under ``p``'s correctness rules, judged by ``score`` itself on a copy
    of the record that holds only this trial (no guards, no roofline: correctness alone)."""
    if trial.reference_nonfinite or (p.distributions is not None and trial.distribution not in p.distributions):
        return False, ""
    if not p.adversarial and trial.distribution in ADVERSARIAL_NAMES:
        return False, ""  # a step before adversarial_inputs does not count it: the trial cannot fail there
    probe = record.model_copy(update={"status": "ok", "naive_trials": [trial], "verified_trials": [trial],
                                      "guards": [], "roofline": None})
    q = p.model_copy(update={"enforce_guards": False, "roofline_floor": False, "distributions": None})
    r = score(probe, q)
    if r.verdict == "correct":
        return False, ""
    why = r.reasons[0] if r.reasons else r.verdict
    prefix = f"{trial.distribution} (seed {trial.seed}): "
    return True, why.removeprefix(prefix)


def _trial_evidence(record: MeasurementRecord, trial: TrialResult, kind: Literal["naive", "verified"],
                    end: Protocol, chain: Sequence[tuple[str, str, Protocol]]) -> TrialEvidence | None:
    fails, why = _trial_verdict(record, trial, end)
    if not fails:
        return None
    first = next((step for step, _l, p in chain if p.trials == kind and _trial_verdict(record, trial, p)[0]), None)
    e = trial.error
    tf = trial.tf32_baseline_max_abs
    return TrialEvidence(
        trials=kind, distribution=trial.distribution, seed=trial.seed, params=trial.params,
        max_abs=e.max_abs if e else None, max_rel=e.max_rel if e else None,
        needed_tolerance=e.min_tolerance if e else None,
        tolerance=end.tolerance_for(record.precision, record.output_dtype),
        tf32_baseline_max_abs=tf,
        tf32_allowance=end.tf32_allowance(tf, trial.tf32_truncated_max_abs),
        first_fails_at=first, why=why, exception=trial.exception.splitlines()[0][:300] if trial.exception else None,
        nonfinite=bool(e and e.nonfinite), all_zero_vs_nonzero=bool(e and e.all_zero_vs_nonzero and not trial.tf32_baseline_all_zero),
        shape_ok=e.shape_ok if e else True, dtype_ok=e.dtype_ok if e else True, out_dtype=e.out_dtype if e else "")


def param_evidence(record: MeasurementRecord) -> ParamEvidence:
    return ParamEvidence(params=sorted({t.params for t in record.verified_trials}), mapping=record.param_mapping,
                         skipped=record.perturbation_skipped, notes=list(record.provenance.notes))


def _guard_evidence(record: MeasurementRecord, ver: ProtocolResult) -> list[GuardEvidence]:
    out = [GuardEvidence(name=g.name, severity=severity(g), detail=g.detail, applicable=g.applicable,
                         counted=g.name in ver.failed_guards, **_declared(g.name))
           for g in record.guards if not g.passed]
    seen = {g.name for g in out}
    for name in ver.failed_guards:  # the protocol's own: static_tampering, roofline_floor
        if name not in seen:
            detail = next((r.removeprefix(f"guard {name}: ") for r in ver.reasons if r.startswith(f"guard {name}:")), "")
            out.append(GuardEvidence(name=name, severity="hack", detail=detail, counted=True, **_declared(name)))
    return out


def _declared(name: str) -> dict[str, str]:
    spec = BY_NAME.get(name)
    return {"catches": spec.catches, "checked_by": spec.where} if spec else {}


def audit_record(record: MeasurementRecord, *, result: Callable[[Protocol], ProtocolResult] | None = None,
                 start: Protocol = NAIVE, end: Protocol = VERIFIED, **ident: Any) -> AuditEntry | None:
    """The adjudication block of one record, or None when its verdict is the same under both protocols.

    ``result`` scores under a protocol (default ``score(record, p)``; pass a cache);
    ``ident`` fills the entry's identity (model, strategy, problem_id, level, sample, turn, final)."""
    res = result or (lambda p: score(record, p))
    naive, ver = res(start), res(end)
    if naive.verdict == ver.verdict:
        return None
    chain = W.steps(start, end)
    path: list[VerdictStep] = []
    prev = naive.verdict
    for step, label, p in chain[1:]:
        v = res(p).verdict
        if v != prev:
            path.append(VerdictStep(step=step, label=label, before=prev, after=v))
            prev = v
    first = path[0] if path else VerdictStep(step=chain[-1][0], label=chain[-1][1], before=naive.verdict,
                                             after=ver.verdict)
    failing: list[TrialEvidence] = []
    for kind, trials, proto in (("naive", record.naive_trials, start), ("verified", record.verified_trials, end)):
        if (naive if kind == "naive" else ver).verdict == "correct":
            continue
        failing += [t for t in (_trial_evidence(record, tr, kind, proto, chain) for tr in trials) if t is not None]
    order = {step: i for i, (step, _l, _p) in enumerate(chain)}
    # verified trials first, then by the step they first fail at, the worst error first
    failing.sort(key=lambda t: (t.trials != "verified", order.get(t.first_fails_at or "", len(order)),
                                -(t.needed_tolerance if t.needed_tolerance is not None else math.inf)))
    ident.setdefault("problem_id", record.problem_id)
    ident.setdefault("precision", record.precision)
    return AuditEntry(
        **ident, candidate_hash=record.candidate_hash, status=record.status, error=record.error,
        naive_verdict=naive.verdict, naive_speedup=naive.speedup,
        verified_verdict=ver.verdict, verified_speedup=ver.speedup,
        step=first.step, step_label=first.label, change=f"{first.before} -> {first.after}", path=path,
        reasons=list(ver.reasons), failing_trials=failing, params=param_evidence(record),
        failed_guards=_guard_evidence(record, ver), shape_specialised=record.shape_specialised,
        shapes=shape_lines(record),
        not_run=[f"{s.distribution}: {s.reason}" for s in record.skipped_distributions])


def audit_threads(threads: Iterable[Thread], start: Protocol = NAIVE, end: Protocol = VERIFIED) -> list[AuditEntry]:
    """Every evaluated turn of every thread whose verdict differs between ``start`` and ``end``."""
    out = []
    for t in threads:
        for s in t.turns:
            if s.record is None:
                continue
            e = audit_record(s.record, result=s.result, start=start, end=end,
                             model=t.model, strategy=t.strategy, problem_id=t.problem_id, level=t.level,
                             sample=t.sample, turn=s.turn, final=s is t.turns[-1], precision=t.precision)
            if e is not None:
                out.append(e)
    return out


def build_audit(threads: Sequence[Thread], run: str = "", start: Protocol = NAIVE, end: Protocol = VERIFIED) -> Audit:
    return Audit(run=run, protocols=[start.key, end.key], steps=[s for s, _l, _p in W.steps(start, end)],
                 evaluated=sum(s.record is not None for t in threads for s in t.turns),
                 entries=audit_threads(threads, start, end))


def audit_run(run_dir: str | Path) -> Audit:
    """The audit of a run directory (raises FileNotFoundError when it is not one)."""
    from ..store import ATTEMPTS

    run_dir = Path(run_dir)
    if not (run_dir / ATTEMPTS).is_file():
        raise FileNotFoundError(f"{run_dir} has no {ATTEMPTS}: not a run directory")
    return build_audit(load_threads(run_dir), run=run_dir.name)


# ---- text -------------------------------------------------------------------------------------------


def g(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}"


def xs(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def vxs(verdict: str, v: float | None) -> str:
    """Only a correct kernel shows a speedup beside its verdict."""
    return xs(v) if verdict == "correct" else "-"


def trial_line(t: TrialEvidence) -> str:
    # 'naive trial, seed 42' (not 'naive naive seed 42'): the distribution only when it is not the trial set's name
    head = f"{t.trials} trial{'' if t.distribution == t.trials else ' ' + t.distribution}, seed {t.seed} ({t.params} params)"
    if t.exception:
        body = f"raised {t.exception}"
    else:
        body = f"max abs {g(t.max_abs)}, max rel {g(t.max_rel)}, needs tol {g(t.needed_tolerance)} (allowed {t.tolerance:g})"
        if t.tf32_baseline_max_abs is not None:
            body += f"; TF32 baseline's own error {g(t.tf32_baseline_max_abs)}"
            if t.tf32_allowance is not None:
                body += f" (allows {g(t.tf32_allowance)})"
        flags = [f for f, on in (("NaN/Inf", t.nonfinite), ("all-zero output", t.all_zero_vs_nonzero),
                                 ("wrong shape", not t.shape_ok), (f"dtype {t.out_dtype}", not t.dtype_ok)) if on]
        if flags:
            body += "; " + ", ".join(flags)
    return f"{head}: {body}" + (f"; fails from {t.first_fails_at}" if t.first_fails_at else "")


def params_line(p: ParamEvidence) -> str:
    parts = [f"verified trials used {'/'.join(p.params) or 'no'} parameters"]
    if p.skipped:
        parts.append(f"perturbation skipped: {p.skipped}")
    if p.mapping is not None:
        parts.append("mapping " + (", ".join(f"{k} -> {v}" for k, v in p.mapping.items()) or "empty"))
    if p.mapping is None and p.skipped is None:
        parts.append("mapping not recorded (a record made before the harness stored it)")
    if p.notes:
        parts.append("notes: " + "; ".join(p.notes))
    return "; ".join(parts)


def guard_line(gd: GuardEvidence) -> str:
    tags = [gd.severity] + ([] if gd.applicable else ["not applicable"]) + (["counted"] if gd.counted else [])
    tags += [f"checked by the {gd.checked_by.replace('_', ' ')}"] if gd.checked_by else []
    line = f"{gd.name} [{', '.join(tags)}]" + (f": {gd.detail}" if gd.detail else "")
    return line + (f" (catches: {gd.catches})" if gd.catches else "")


def entry_lines(e: AuditEntry, max_trials: int | None = TEXT_TRIALS) -> list[str]:
    who = (f"{e.model} ({e.strategy})" if e.strategy else e.model) + ("" if e.precision == "fp32" else f" · {e.precision}")
    out = [f"{e.problem_id} · {who} · sample {e.sample} · turn {e.turn}{'' if e.final else ' (not final)'}"
           + (f" · candidate {e.candidate_hash[:12]}" if e.candidate_hash else "")]
    out.append(f"  verdict  naive {e.naive_verdict} {vxs(e.naive_verdict, e.naive_speedup)} -> verified "
               f"{e.verified_verdict} {vxs(e.verified_verdict, e.verified_speedup)}")
    out.append(f"  step     {e.step}: {e.change} ({e.step_label})")
    for s in e.path[1:]:
        out.append(f"  then     {s.step}: {s.before} -> {s.after}")
    if e.status != "ok":
        out.append(f"  status   {e.status}: {(e.error or '').splitlines()[0][:200] if e.error else ''}")
    shown = e.failing_trials if max_trials is None else e.failing_trials[:max_trials]
    if not shown:
        out.append("  trials   none failing")
    for i, t in enumerate(shown):
        out.append(f"  {'trials' if i == 0 else '':<8} {trial_line(t)}")
    if len(shown) < len(e.failing_trials):
        out.append(f"           … {len(e.failing_trials) - len(shown)} more failing trial(s) (--json has all)")
    out.append(f"  params   {params_line(e.params)}")
    if not e.failed_guards:
        out.append("  guards   none failed")
    for i, gd in enumerate(e.failed_guards):
        out.append(f"  {'guards' if i == 0 else '':<8} {guard_line(gd)}")
    for i, line in enumerate(e.shapes):
        out.append(f"  {'shapes' if i == 0 else '':<8} {line}")
    for i, line in enumerate(e.not_run):  # a distribution that could not have caught it
        out.append(f"  {'not run' if i == 0 else '':<8} {line}")
    # reasons the trial and guard lines above do not already say (a crash, no trials recorded, ...)
    said = tuple(f"{t.distribution} (seed {t.seed}):" for t in e.failing_trials) + ("guard ",)
    for i, r in enumerate([r for r in e.reasons if not r.startswith(said)][:4]):
        out.append(f"  {'reasons' if i == 0 else '':<8} {r}")
    return out


def format_audit(a: Audit, max_trials: int | None = TEXT_TRIALS) -> str:
    head = (f"Audit — run {a.run}: {len(a.entries)} of {a.evaluated} evaluated attempts changed verdict "
            f"between {' and '.join(a.protocols)}")
    by = a.by_step()
    if by:
        head += " (responsible step: " + ", ".join(f"{k} {v}" for k, v in by.items()) + ")"
    blocks = [head]
    for e in a.entries:
        blocks.append("\n".join(entry_lines(e, max_trials)))
    return "\n\n".join(blocks) + "\n"
