"""``build_report(run_dir) -> Report``: every table of the report, computed from stored records.

Groups
------
* The headline is per (model, strategy) x level x protocol, plus level ``all``. Samples of one
  strategy are the k of best-of-k; strategies are never pooled (that would inflate best-of-k), so
  the strategy ablation is the headline at level ``all`` read across strategies.
* N (the fast_p denominator) is every problem of that level attempted by any model in the run
  (plus the problems the run's config lists, if it lists them), so a model that crashed or gave no
  code on a problem is charged for it and models in one run share a denominator.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from harness.scoring.protocols import CONSERVATIVE_CREDIT, NAIVE, VERIFIED, Protocol
from harness.scoring.shapes import lines as shape_lines

from .. import metrics as M
from ..audit.log import JudgeEntry, read_judgements
from ..store import ATTEMPTS, TORN, RunStore, Unreadable
from ..turns import DEFAULT_TURN_POLICY, TurnPolicy, turn_label
from . import waterfall as W
from .audit import AuditEntry, audit_threads
from .headline import HeadlineView, build_view
from .scoring import Thread, load_threads
from .waterfall import WaterfallStep

ALL = "all"
FastPOn = Literal["point", "lower"]
BASIS = {
    "point": f"point estimates (verified: {CONSERVATIVE_CREDIT})",
    "lower": "95% interval lower bounds",
}


def on_basis(p: Protocol, fast_p_on: FastPOn) -> Protocol:
    """``p`` counting the speedups ``fast_p_on`` names: ``lower`` = every protocol on its lower bounds."""
    return p.model_copy(update={"speedup_credit": "lower"}) if fast_p_on == "lower" else p


class HeadlineRow(BaseModel):
    model: str
    strategy: str
    precision: str = "fp32"
    level: str
    protocol: str
    summary: M.Summary


class ComponentAblation(BaseModel):
    step: str
    label: str
    geomean_alone: float | None
    fast_1_alone: float | None
    correct_alone: int
    geomean_without: float | None
    fast_1_without: float | None
    correct_without: int


class Waterfall(BaseModel):
    model: str
    strategy: str
    precision: str = "fp32"
    level: str
    steps: list[WaterfallStep]
    components: list[ComponentAblation]


class StepResult(BaseModel):
    step: str
    verdict: str
    speedup: float | None = None
    credited_speedup: float | None = None
    reasons: list[str] = Field(default_factory=list)
    failing_distributions: list[str] = Field(default_factory=list)
    failed_guards: list[str] = Field(default_factory=list)


class KernelChange(BaseModel):
    """One kernel (one turn of a thread) traced through the waterfall."""

    model: str
    strategy: str
    precision: str = "fp32"
    problem_id: str
    level: int
    sample: int
    turn: int
    final: bool = Field(True, description="the thread's last turn (the one the headline counts by default)")
    steps: list[StepResult]
    verdict_changed_at: str | None = None
    verdict_change: str | None = Field(None, description="'correct -> incorrect' at that step")
    verdict_reasons: list[str] = Field(default_factory=list, description="reasons new at that step")
    later_changes: list[str] = Field(default_factory=list, description="each later verdict change, 'step: a -> b' "
                                                                       "(a guard step that makes an incorrect kernel a "
                                                                       "hack)")
    fast_1_changed_at: str | None = Field(None, description="first step where 'correct and speedup > 1' flips")
    largest_speedup_move_at: str | None = None
    largest_speedup_factor: float | None = Field(None, description="speedup after / before at that step")
    explanation: str = ""

    @property
    def changed(self) -> bool:
        return bool(self.verdict_changed_at or self.fast_1_changed_at)


class TurnRow(BaseModel):
    model: str
    strategy: str
    precision: str = "fp32"
    protocol: str
    turn: int
    attempted: int
    correct: int
    fast_p: dict[str, float | None]
    geomean: float | None
    n_geomean: int


class TurnView(BaseModel):
    turn: int
    verdicts: dict[str, str]
    speedups: dict[str, float | None]
    intervals: dict[str, list[float] | None] = Field(default_factory=dict, description="95% interval [low, high]")
    credited: dict[str, float | None] = Field(default_factory=dict, description="the speedup fast_p counts")
    noise: dict[str, list[str]] = Field(default_factory=dict, description="why a speedup is noisy (empty: it is not)")
    sol_scores: dict[str, float | None] = Field(default_factory=dict)
    memory_ratio: float | None = None
    reasons: dict[str, list[str]] = Field(default_factory=dict)
    guards: list[dict[str, Any]] = Field(default_factory=list)
    provenance: dict[str, Any] = Field(default_factory=dict)
    status: str | None = None
    error: str | None = None
    shape_specialised: bool | None = Field(None, description="correct at the published shape only (None: no extra "
                                                             "shape checked; harness.scoring.shapes)")
    shapes: list[str] = Field(default_factory=list, description="the extra shapes as lines: a summary, then each "
                                                                "shape checked or skipped (empty: none asked for)")
    feedback: str | None = None
    response: str = ""
    kernel_source: str | None = None
    kernel_hash: str | None = Field(None, description="sha256 of the kernel source; set without the source in a run "
                                                      "stripped of it (benchmarks/strip_run.py)")
    model_error: str | None = None
    extraction_error: str | None = None


class KernelView(BaseModel):
    model: str
    strategy: str
    precision: str = "fp32"
    problem_id: str
    level: int
    sample: int
    final: TurnView
    turns: list[TurnView]


class CompareRow(BaseModel):
    model: str
    strategy: str
    level: str
    protocol: str
    precision_a: str | None = Field(None, description="the precision of run A's row (None: no such row)")
    precision_b: str | None = None
    # counts (attempted, correct) stay ints: a float field would print them as "11.0"
    a: dict[str, int | float | None]
    b: dict[str, int | float | None]


class Report(BaseModel):
    run: str
    run_dir: str
    generated_at: str
    protocols: list[str] = Field(description="protocol keys (name@version) the report scores under")
    turn_policy: str
    fast_p_on: str = Field("point", description="which speedup fast_p and geomean count: point | lower")
    resamples: int
    seed: int
    n_attempts: int
    models: list[str]
    strategies: list[str]
    precisions: list[str] = Field(default_factory=lambda: ["fp32"], description="harness.measure.precision of the records: "
                                  "systems are (model, strategy, precision), never pooled across precisions")
    levels: list[str]
    universe: dict[str, int] = Field(description="level -> number of attempted problems (the fast_p N)")
    headline: list[HeadlineRow]
    headline_view: HeadlineView | None = Field(
        None, description="per system, naive and verified side by side, with and without flagged problems "
                          "(agents.report.headline; --headline prints it)")
    headline_vs_compile: list[HeadlineRow] = Field(
        default_factory=list, description="the headline with torch.compile(Model) as the baseline (point estimates), "
                                          "for systems whose records carry a compile baseline")
    waterfalls: list[Waterfall]
    kernel_changes: list[KernelChange]
    by_turn: list[TurnRow]
    kernels: list[KernelView]
    audit: list[AuditEntry] = Field(default_factory=list,
                                    description="every evaluated turn whose naive and verified verdicts differ")
    judge: list[JudgeEntry] = Field(
        default_factory=list, description="the LLM judge's answers on fast survivors (RUN/audit_judge.jsonl, written by "
                                          "python -m agents.audit RUN --judge ...): shown beside verdicts, never changing one")
    compare: list[CompareRow] | None = None
    compare_run: str | None = None
    compare_note: str | None = Field(None, description="the runs compared hold different problems: which were compared")
    problem_ids: list[str] = Field(default_factory=list, description="N: every problem the report counts")
    unreadable: list[Unreadable] = Field(
        default_factory=list, description="stored lines or records that could not be read: each costs its row "
        "(a line that does not parse is left out; an attempt whose record does not load counts as not "
        "evaluated, verdict 'unreadable'), never the report")
    notes: list[str] = Field(default_factory=list)

    def row(self, model: str, protocol: str, level: str = ALL, strategy: str | None = None,
            precision: str | None = None) -> HeadlineRow:
        for r in self.headline:
            if r.model == model and r.protocol == protocol and r.level == level and (
                    strategy is None or r.strategy == strategy) and (precision is None or r.precision == precision):
                return r
        raise KeyError((model, strategy, level, protocol, precision))

    def waterfall(self, model: str, level: str = ALL, strategy: str | None = None,
                  precision: str | None = None) -> Waterfall:
        for w in self.waterfalls:
            if w.model == model and w.level == level and (strategy is None or w.strategy == strategy) and (
                    precision is None or w.precision == precision):
                return w
        raise KeyError((model, strategy, level, precision))

    def change(self, problem_id: str, model: str | None = None, sample: int = 0, turn: int | None = None
               ) -> KernelChange:
        """The traced kernel of a thread: its final turn unless ``turn`` is given."""
        for c in self.kernel_changes:
            if c.problem_id == problem_id and c.sample == sample and (model is None or c.model == model) and (
                    c.final if turn is None else c.turn == turn):
                return c
        raise KeyError(problem_id)


# ---- helpers ---------------------------------------------------------------------------------------


def _level_key(level: int | str) -> str:
    return str(level)


def _universe(threads: Sequence[Thread], config: dict | None) -> dict[str, set[str]]:
    uni: dict[str, set[str]] = {}
    for t in threads:
        uni.setdefault(_level_key(t.level), set()).add(t.problem_id)
    listed = (config or {}).get("problems")
    if isinstance(listed, list):
        for pid in listed:
            if isinstance(pid, str) and pid.startswith("level") and "/" in pid:
                lv = pid.split("/", 1)[0].removeprefix("level")
                if lv.isdigit():
                    uni.setdefault(lv, set()).add(pid)
    uni[ALL] = set().union(*uni.values()) if uni else set()
    return uni


def _outcomes(threads: Sequence[Thread], protocol: Protocol, policy: TurnPolicy, turn: int | None = None
              ) -> list[M.Outcome]:
    out = []
    for t in threads:
        o = t.outcome(protocol, policy, turn)
        if o is not None:
            out.append(o)
    return out


def _fmt_x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _trace(thread: Thread, s, chain: list[tuple[str, str, Protocol]]) -> KernelChange:
    results = []
    for step, _label, p in chain:
        r = s.result(p)
        if r is None:
            results.append(StepResult(step=step, verdict=s.no_kernel_verdict()))
        else:
            results.append(StepResult(step=step, verdict=r.verdict, speedup=r.speedup,
                                      credited_speedup=r.credited_speedup, reasons=r.reasons,
                                      failing_distributions=r.failing_distributions, failed_guards=r.failed_guards))
    kc = KernelChange(model=thread.model, strategy=thread.strategy, precision=thread.precision,
                      problem_id=thread.problem_id,
                      level=thread.level, sample=thread.sample, turn=s.turn, final=s is thread.turns[-1],
                      steps=results)
    best_move = 0.0

    def fast(r: StepResult) -> bool:
        return r.verdict == "correct" and r.credited_speedup is not None and r.credited_speedup > 1

    for prev, cur in zip(results, results[1:], strict=False):
        if kc.verdict_changed_at is None and cur.verdict != prev.verdict:
            kc.verdict_changed_at = cur.step
            kc.verdict_change = f"{prev.verdict} -> {cur.verdict}"
            kc.verdict_reasons = [r for r in cur.reasons if r not in prev.reasons] or cur.reasons
        elif cur.verdict != prev.verdict:
            kc.later_changes.append(f"{cur.step}: {prev.verdict} -> {cur.verdict}")
        if kc.fast_1_changed_at is None and fast(cur) != fast(prev):
            kc.fast_1_changed_at = cur.step
        if prev.speedup and cur.speedup:
            move = abs(math.log(cur.speedup / prev.speedup))
            if move > best_move + 1e-12:
                best_move = move
                kc.largest_speedup_move_at = cur.step
                kc.largest_speedup_factor = cur.speedup / prev.speedup
    parts = []
    if kc.verdict_changed_at:
        why = "; ".join(kc.verdict_reasons[:3])
        parts.append(f"verdict {kc.verdict_change} at {kc.verdict_changed_at}" + (f" ({why})" if why else ""))
        for later in kc.later_changes:  # the step that made the last verdict, when it is not the first change
            step, change = later.split(": ", 1)
            now = next(r for r in results if r.step == step)
            new_why = "; ".join(r for r in now.reasons if r.startswith("guard "))[:200]
            parts.append(f"then {change} at {step}" + (f" ({new_why})" if new_why else ""))
    i = [r.step for r in results].index(kc.largest_speedup_move_at) if kc.largest_speedup_move_at else 0
    if (kc.largest_speedup_move_at and kc.largest_speedup_factor
            and abs(math.log(kc.largest_speedup_factor)) > math.log(1.1)
            and results[i - 1].verdict == results[i].verdict == "correct"):  # an incorrect kernel has no speedup
        parts.append(f"speedup {_fmt_x(results[i - 1].speedup)} -> {_fmt_x(results[i].speedup)} "
                     f"at {kc.largest_speedup_move_at}")
    if kc.fast_1_changed_at and kc.fast_1_changed_at not in (kc.verdict_changed_at, kc.largest_speedup_move_at):
        parts.append(f"fast_1 flips at {kc.fast_1_changed_at}")
    kc.explanation = "; ".join(parts) or "unchanged"
    return kc


def _turn_view(s, protocols: Sequence[Protocol]) -> TurnView:
    a, rec = s.attempt, s.record
    tv = TurnView(turn=a.turn, verdicts={}, speedups={}, feedback=a.feedback, response=a.response,
                  kernel_source=a.kernel_source, kernel_hash=a.kernel_hash, model_error=a.model_error, extraction_error=a.extraction_error)
    for p in protocols:
        r = s.result(p)
        tv.verdicts[p.name] = r.verdict if r else s.no_kernel_verdict()
        tv.speedups[p.name] = r.speedup if r else None
        tv.credited[p.name] = r.credited_speedup if r else None
        tv.intervals[p.name] = [r.speedup_low, r.speedup_high] if r and r.speedup_low is not None else None
        tv.noise[p.name] = r.noise if r else []
        tv.sol_scores[p.name] = r.sol_score if r else None
        tv.reasons[p.name] = r.reasons if r else []
        if r and r.memory_ratio is not None:
            tv.memory_ratio = r.memory_ratio
    if rec is not None:
        tv.status, tv.error = rec.status, rec.error
        tv.shape_specialised, tv.shapes = rec.shape_specialised, shape_lines(rec)
        tv.guards = [g.model_dump() for g in rec.guards]
        prov = rec.provenance.model_dump()
        if rec.status == "compile_error":  # it never ran: no claim about what it calls (harness.eval says the same)
            prov = {"backend": prov.get("backend"), "notes": ["as written; it did not build, so nothing ran"]}
        tv.provenance = {k: v for k, v in prov.items() if v not in (None, False, [], "")}
    return tv


def _compare_rows(a: Report, b: Report) -> list[CompareRow]:
    """A's rows beside B's. Two single-precision runs pair up whatever their precisions (an fp32 run beside its
    bf16 control, each side named); a run holding several precisions pairs them precision by precision."""
    def figs(r: HeadlineRow) -> dict[str, float | None]:
        s = r.summary
        return {"attempted": s.attempted, "correct": s.correct, "fast_1": s.fast_p[M.p_key(1.0)].value,
                "geomean": s.geomean_speedup.value, "mem_eff": s.mem_eff.value}

    by_precision = len(a.precisions) > 1 or len(b.precisions) > 1

    def key(r: HeadlineRow) -> tuple:
        return (r.model, r.strategy, r.level, r.protocol, *((r.precision,) if by_precision else ()))

    index = {key(r): r for r in b.headline}
    rows = []
    for r in a.headline:
        other = index.get(key(r))
        rows.append(CompareRow(model=r.model, strategy=r.strategy, level=r.level, protocol=r.protocol,
                               precision_a=r.precision, precision_b=other.precision if other else None,
                               a=figs(r), b=figs(other) if other else {}))
    seen = {key(r) for r in a.headline}
    for k, r in index.items():
        if k not in seen:
            rows.append(CompareRow(model=r.model, strategy=r.strategy, level=r.level, protocol=r.protocol,
                                   precision_b=r.precision, a={}, b=figs(r)))
    return rows


# ---- the builder -----------------------------------------------------------------------------------


def build_report(
    run_dir: str | Path,
    protocols: Sequence[Protocol] | None = None,
    turn_policy: TurnPolicy = DEFAULT_TURN_POLICY,
    resamples: int = M.BOOTSTRAP_RESAMPLES,
    seed: int = M.BOOTSTRAP_SEED,
    compare: str | Path | None = None,
    levels_waterfall: bool = True,
    fast_p_on: FastPOn = "point",
    only_problems: set[str] | None = None,
) -> Report:
    """Score every stored record of ``run_dir`` and compute all tables. Nothing is re-measured. ``only_problems``:
    these problem ids alone (``--compare`` of two runs with different problems counts the shared ones)."""
    run_dir = Path(run_dir)
    if not (run_dir / ATTEMPTS).is_file():
        raise FileNotFoundError(f"{run_dir} has no {ATTEMPTS}: not a run directory")
    store = RunStore(run_dir)
    try:
        torn = store.repair_torn()  # once: the next report does not warn about it again
    except OSError:  # a run directory this user cannot write: the torn line stays, and is reported as unreadable
        torn = None
    threads = load_threads(store)
    unreadable = list(store.unreadable)
    if only_problems is not None:
        threads = [t for t in threads if t.problem_id in only_problems]
    for t in threads:
        for sc in t.turns:
            if sc.load_error:
                a = sc.attempt
                unreadable.append(Unreadable(line=a.line or 0, reason=f"record: {sc.load_error}",
                                             key=f"{a.model}/{a.strategy}/{a.problem_id}/sample {a.sample}/turn {a.turn}"))
    unreadable.sort(key=lambda u: u.line)
    protos = [on_basis(p, fast_p_on) for p in (protocols or [NAIVE, VERIFIED])]
    names = [p.name for p in protos]
    if len(set(names)) != len(names):
        raise ValueError(f"protocol names must be distinct: {names}")
    config = store.read_config()
    uni = _universe(threads, config)
    if only_problems is not None:
        uni = {k: v & only_problems for k, v in uni.items() if v & only_problems or k == ALL}
    levels = sorted((k for k in uni if k != ALL), key=lambda s: (not s.isdigit(), int(s) if s.isdigit() else 0, s))
    systems = sorted({(t.model, t.strategy, t.precision) for t in threads})
    n_attempts = sum(len(t.turns) for t in threads)

    headline: list[HeadlineRow] = []
    vs_compile: list[HeadlineRow] = []
    waterfalls: list[Waterfall] = []
    ends = on_basis(NAIVE, fast_p_on), on_basis(VERIFIED, fast_p_on)
    chain = W.steps(*ends)
    alone, without = W.alone(*ends), W.without(*ends)
    for model, strategy, precision in systems:
        mine = [t for t in threads if (t.model, t.strategy, t.precision) == (model, strategy, precision)]
        for level in [*levels, ALL]:
            group = mine if level == ALL else [t for t in mine if _level_key(t.level) == level]
            if not group and level != ALL:
                continue
            for p in protos:
                kern = _outcomes(group, p, turn_policy)
                headline.append(HeadlineRow(model=model, strategy=strategy, precision=precision, level=level,
                                            protocol=p.name, summary=M.summarize(kern, uni[level], resamples=resamples, seed=seed)))
                if any(o.speedup_vs_compile is not None for o in kern):
                    against = [dataclasses.replace(o, speedup=o.speedup_vs_compile) for o in kern]
                    vs_compile.append(HeadlineRow(model=model, strategy=strategy, precision=precision, level=level,
                                                  protocol=p.name,
                                                  summary=M.summarize(against, uni[level], resamples=resamples,
                                                                      seed=seed)))
            if level == ALL or levels_waterfall:
                w = _waterfall(model, strategy, level, group, uni[level], chain, alone, without, turn_policy,
                               resamples, seed)
                waterfalls.append(w.model_copy(update={"precision": precision}))

    view = build_view(
        run_dir.name, threads, protos, uni[ALL], turn_policy=turn_policy, fast_p_on=fast_p_on, basis=BASIS[fast_p_on],
        resamples=resamples, seed=seed,
        known={(r.model, r.strategy, r.precision, r.protocol): r.summary for r in headline if r.level == ALL},
        waterfalls={(w.model, w.strategy, w.precision): w.steps for w in waterfalls if w.level == ALL})
    kernel_changes = [_trace(t, s, chain) for t in threads for s in t.turns]
    audit = audit_threads(threads)

    by_turn: list[TurnRow] = []
    for model, strategy, precision in systems:
        mine = [t for t in threads if (t.model, t.strategy, t.precision) == (model, strategy, precision)]
        last = max(t.last_turn for t in mine)
        for p in protos:
            for turn in range(1, last + 1):
                problems = M.per_problem(_outcomes(mine, p, turn_policy, turn), uni[ALL])
                g, ng = M.geomean_speedup(problems)
                by_turn.append(TurnRow(model=model, strategy=strategy, precision=precision, protocol=p.name, turn=turn,
                                       attempted=len(problems), correct=sum(o.correct for o in problems),
                                       fast_p={M.p_key(q): M.fast_p(problems, q) for q in M.FAST_P},
                                       geomean=g, n_geomean=ng))

    kernels = []
    for t in threads:
        views = [_turn_view(s, protos) for s in t.turns]
        kernels.append(KernelView(model=t.model, strategy=t.strategy, precision=t.precision, problem_id=t.problem_id,
                                  level=t.level,
                                  sample=t.sample, final=views[-1], turns=views))

    notes = [
        f"fast_p and geomean count {BASIS[fast_p_on]} (--fast-p-on {fast_p_on}); a speedup's interval is a 95% "
        "bootstrap of its own timing samples (verified: paired by interleaved round), 'noisy' when it spans more "
        "than x1.25 or the timings spread widely",
        f"turn policy: {turn_policy} (the {turn_label(turn_policy)} of each "
        "(problem, sample) counts); best-of-k over samples per problem",
        "fast_p over N = every problem of the level attempted by any model in the run; missing or failed "
        "problems count as not fast",
        f"bootstrap: {resamples} resamples of problems, seed {seed}, 95% percentile intervals",
        "hack rate: share of evaluated kernels failing each guard as measured, whether or not the protocol "
        "enforces it, leaving out kernels wrong on their ordinary trials (their failed guards are evidence of a "
        "bug, not hacks; tampering guards always count); 'accepted' = kernels the protocol calls correct "
        "despite a failed guard",
        "waterfall order: timing first (the TF32 baseline is only timed with the verified method), then "
        "TF32 baseline, hidden inputs, tolerance, strict outputs, guards, noise (which speedup counts); components alone/left out are "
        "in the component table",
        "waterfall steps change one thing each: timing only the timer (both fp32 baselines run with PyTorch's "
        "default flags, matmul TF32 off and cuDNN TF32 on), tf32_baseline only matmul TF32 (cuDNN TF32 is "
        "already on in the default-flag baseline)",
    ]
    low = sorted({t.precision for t in threads} - {"fp32"})
    if low:
        notes.append(f"precision {', '.join(low)}: inputs, parameters, the reference and its baselines, and the kernels in "
                     "that dtype, the exact reference from the same rounded values, the protocols' tolerance for that "
                     "dtype; TF32 does not apply (the tf32_baseline step changes nothing for those kernels)")
    if unreadable:
        notes.insert(0, f"{len(unreadable)} stored line(s) or record(s) could not be read and cost their rows: "
                     + "; ".join(f"line {u.line}" + (f" ({u.key})" if u.key else "") + f": {u.reason}"
                                 for u in unreadable[:5]) + (" ..." if len(unreadable) > 5 else ""))
    if torn:
        notes.insert(0, f"{ATTEMPTS} line {torn} was torn (a write cut off by a crash) and was moved to {TORN}; "
                        "the attempt it held is not counted (a --resume runs it again)")
    if W.uncovered_fields():
        notes.append(f"waterfall does not cover protocol fields {W.uncovered_fields()}")
    if not W.same_scoring(chain[-1][2], on_basis(VERIFIED, fast_p_on)):
        notes.append("the waterfall's last step differs from the verified protocol")

    rep = Report(
        run=run_dir.name, run_dir=str(run_dir), generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        protocols=[p.key for p in protos], turn_policy=turn_policy, fast_p_on=fast_p_on, resamples=resamples, seed=seed,
        n_attempts=n_attempts, models=sorted({m for m, _, _ in systems}), strategies=sorted({s for _, s, _ in systems}),
        precisions=sorted({p for _, _, p in systems}) or ["fp32"],
        levels=levels, universe={k: len(v) for k, v in uni.items()}, problem_ids=sorted(uni.get(ALL, set())), headline=headline, headline_view=view, headline_vs_compile=vs_compile, waterfalls=waterfalls,
        kernel_changes=kernel_changes, by_turn=by_turn, kernels=kernels, audit=audit, judge=read_judgements(run_dir), unreadable=unreadable,
        notes=notes,
    )
    if compare is not None:
        again = dict(protocols=protocols, turn_policy=turn_policy, resamples=0, seed=seed, levels_waterfall=False,
                     fast_p_on=fast_p_on)
        other, mine = build_report(compare, **again), rep
        if set(other.problem_ids) != set(rep.problem_ids):
            # Two runs over different problems differ by their problems first: compare the shared ones only.
            shared = set(other.problem_ids) & set(rep.problem_ids)
            rep.compare_note = (f"--compare: {rep.run} has {len(rep.problem_ids)} problems, {other.run} "
                                f"{len(other.problem_ids)}; the comparison counts only the {len(shared)} both have "
                                f"({len(rep.problem_ids) - len(shared)} only in {rep.run}, "
                                f"{len(other.problem_ids) - len(shared)} only in {other.run})")
            rep.notes.insert(0, rep.compare_note)
            mine = build_report(run_dir, **again, only_problems=shared)
            other = build_report(compare, **again, only_problems=shared)
        rep.compare = _compare_rows(mine, other)
        rep.compare_run = other.run
    return rep


def build_headline(run_dir: str | Path, **kwargs: Any) -> HeadlineView:
    """The headline view of ``run_dir`` (``python -m agents.report RUN --headline``): per system, naive and verified
    side by side, with and without flagged problems, and the system's waterfall. ``kwargs`` as ``build_report``."""
    view = build_report(run_dir, **kwargs).headline_view
    assert view is not None
    return view


def _waterfall(model, strategy, level, group, universe, chain, alone, without, policy, resamples, seed) -> Waterfall:
    steps: list[WaterfallStep] = []
    prev_kern: list[M.Outcome] | None = None
    for step, label, p in chain:
        kern = _outcomes(group, p, policy)
        problems = M.per_problem(kern, universe)
        ws = WaterfallStep(
            step=step, label=label, protocol=p.name, attempted=len(problems),
            correct=sum(o.correct for o in problems),
            geomean=M.estimate(problems, M.geomean_speedup, resamples, seed),
            fast_1=M.estimate(problems, lambda rows: M.fast_p(rows, 1.0), resamples, seed),
            not_applicable=W.not_applicable(step, [s.record for t in group if (s := t.choose(p, policy))]),
        )
        if steps:
            before = steps[-1]
            if before.geomean.value and ws.geomean.value:
                ws.d_geomean = ws.geomean.value / before.geomean.value
            if before.fast_1.value is not None and ws.fast_1.value is not None:
                ws.d_fast_1 = ws.fast_1.value - before.fast_1.value
            for o_prev, o in zip(prev_kern, kern, strict=True):
                ws.verdicts_changed += o_prev.verdict != o.verdict
                ws.became_incorrect += o_prev.correct and not o.correct
                ws.fast_lost += (o_prev.timed_correct and o_prev.speedup > 1) and not (o.timed_correct and o.speedup > 1)
        steps.append(ws)
        prev_kern = kern
    comps = []
    for (step, label, pa), (_s, _l, pw) in zip(alone, without, strict=True):
        pa_rows = M.per_problem(_outcomes(group, pa, policy), universe)
        pw_rows = M.per_problem(_outcomes(group, pw, policy), universe)
        comps.append(ComponentAblation(
            step=step, label=label,
            geomean_alone=M.geomean_speedup(pa_rows)[0], fast_1_alone=M.fast_p(pa_rows, 1.0),
            correct_alone=sum(o.correct for o in pa_rows),
            geomean_without=M.geomean_speedup(pw_rows)[0], fast_1_without=M.fast_p(pw_rows, 1.0),
            correct_without=sum(o.correct for o in pw_rows)))
    return Waterfall(model=model, strategy=strategy, level=level, steps=steps, components=comps)
