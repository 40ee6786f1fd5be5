"""The headline view: one table per run, naive and verified side by side for each system.

A *system* is what the rest of the report calls one: (model, strategy, precision), never pooled. For each system
and protocol the view shows the figures ``COLUMNS`` declares, every one a projection of the protocol's
``agents.metrics.Summary`` (so the view, the JSON and the HTML read the same numbers as the report's other
tables), over three problem sets (``SUBSETS``):

* ``all``: every problem of the run (the fast_p N of the report's headline at level ``all``);
* ``no_degenerate``: without the problems flagged ``degenerate`` (an output that is constant or almost all
  zeros whatever the input: any kernel that returns it passes, and a speedup there measures nothing);
* ``unflagged``: without any flagged problem (degenerate, training_mode, low_magnitude, redundant_op, ...).

A problem's flags are the union of the records' ``problem_flags`` (what the problem's metadata said when it was
measured) and the built-in catalog's flags for the same problem id (``problems/level*/metadata.toml``), so a
run measured before a flag was added still reads without it. The flagged problems are listed apart, each with
its verdicts and speedups.

Conventions (named in the view's notes and in every rendering):

* fast_p: KernelBench's, the share of all N problems whose kernel is correct with speedup > p (best of k
  samples per problem; a problem without a kernel counts as not fast).
* geomean over correct: correct, timed problems only (incorrect excluded). geomean over all: every problem,
  one without a correct timed kernel counted at ``metrics.INCORRECT_SPEEDUP`` = 1.0x, as if the PyTorch
  reference were kept.
* peak mem > baseline: share of correct kernels (with a memory measurement) whose peak memory exceeds the
  eager baseline's (``ProtocolResult.memory_ratio`` > 1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from pydantic import BaseModel, Field

from harness.scoring.protocols import Protocol

from .. import metrics as M
from ..turns import TurnPolicy
from .scoring import Thread
from .waterfall import WaterfallStep

HEADLINE_P: tuple[float, ...] = (0.0, 1.0, 1.5, 2.0)
"""The fast_p thresholds the headline shows (a subset of ``metrics.FAST_P``)."""
DEGENERATE = "degenerate"


class Column(NamedTuple):
    key: str
    label: str
    kind: str  # "n" (a count), "pct" (a share), "x" (a speedup)
    get: Callable[[M.Summary], float | int | None]


def _fast(p: float) -> Column:
    k = M.p_key(p)
    return Column(k, k, "pct", lambda s: s.fast_p[k].value)


COLUMNS: tuple[Column, ...] = (
    Column("correct", "correct", "n", lambda s: s.correct),
    *(_fast(p) for p in HEADLINE_P),
    Column("geomean_correct", "geomean over correct", "x", lambda s: s.geomean_speedup.value),
    Column("geomean_all", f"geomean over all (incorrect = {M.INCORRECT_SPEEDUP:.2f}x)", "x",
           lambda s: s.geomean_speedup_all.value),
    Column("higher_memory_share", "peak mem > baseline", "pct", lambda s: s.higher_memory_share.value),
)
"""Every figure of the headline, declared once: text, HTML and JSON all read them from here."""


class Subset(NamedTuple):
    key: str
    label: str
    excludes: Callable[[set[str]], bool]  # the problem's flags -> left out of this subset


SUBSETS: tuple[Subset, ...] = (
    Subset("all", "all problems", lambda flags: False),
    Subset("no_degenerate", f"without {DEGENERATE}", lambda flags: DEGENERATE in flags),
    Subset("unflagged", "without any flagged", lambda flags: bool(flags)),
)

NOTES = (
    "fast_p: share of all N problems whose kernel is correct and faster than p x the eager PyTorch baseline "
    "(KernelBench's fast_p; best of k samples per problem; a problem without a kernel counts as not fast)",
    "geomean over correct: correct, timed kernels only (incorrect ones excluded); geomean over all: every "
    f"problem, one without a correct timed kernel counted at {M.INCORRECT_SPEEDUP:.2f}x (the PyTorch reference kept)",
    "peak mem > baseline: share of correct kernels, with a memory measurement, whose peak memory exceeds the "
    "eager baseline's (ProtocolResult.memory_ratio > 1)",
    f"flags: the records' problem_flags and the built-in catalog's; '{DEGENERATE}': the output is constant or almost "
    "all zeros whatever the input, so any kernel returning it passes (KernelBench-Verified leaves such problems out)",
)


def figures(s: M.Summary) -> dict[str, float | int | None]:
    return {c.key: c.get(s) for c in COLUMNS}


class HeadlineSubset(BaseModel):
    subset: str = Field(description="all | no_degenerate | unflagged (headline.SUBSETS)")
    label: str
    problems: int = Field(description="N: the fast_p denominator")
    kernels: int = Field(description="kernels counted (one per (problem, sample), at the turn policy's turn)")
    excluded: list[str] = Field(default_factory=list, description="problems left out of this subset")
    figures: dict[str, dict[str, float | int | None]] = Field(
        description="protocol name -> column key (headline.COLUMNS) -> value")
    summaries: dict[str, M.Summary] = Field(description="protocol name -> every figure with its 95% bootstrap interval")


class HeadlineSystem(BaseModel):
    model: str
    strategy: str
    precision: str = "fp32"
    subsets: list[HeadlineSubset]
    waterfall: list[WaterfallStep] = Field(default_factory=list,
                                           description="the system's waterfall at level all: which step moves what")

    def subset(self, key: str) -> HeadlineSubset:
        return next(s for s in self.subsets if s.subset == key)


class FlaggedResult(BaseModel):
    model: str
    strategy: str
    precision: str = "fp32"
    verdicts: dict[str, str] = Field(description="protocol name -> the problem's verdict (best of k samples)")
    speedups: dict[str, float | None] = Field(description="protocol name -> speedup counted (None unless correct)")


class FlaggedProblem(BaseModel):
    problem_id: str
    flags: list[str]
    reasons: dict[str, str] = Field(default_factory=dict, description="flag -> why, from the built-in catalog")
    results: list[FlaggedResult] = Field(default_factory=list)


class HeadlineView(BaseModel):
    run: str
    protocols: list[str] = Field(description="protocol names, in column order")
    protocol_keys: list[str] = Field(default_factory=list, description="name@version")
    turn_policy: str
    fast_p_on: str
    basis: str = Field(description="which speedup fast_p and geomean count")
    incorrect_as: float = Field(M.INCORRECT_SPEEDUP, description="the speedup geomean over all counts for a problem "
                                                                 "without a correct timed kernel")
    columns: list[dict[str, str]] = Field(default_factory=lambda: [{"key": c.key, "label": c.label, "kind": c.kind}
                                                                   for c in COLUMNS])
    systems: list[HeadlineSystem]
    flagged: list[FlaggedProblem] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=lambda: list(NOTES))

    def system(self, model: str, strategy: str | None = None, precision: str | None = None) -> HeadlineSystem:
        for s in self.systems:
            if s.model == model and strategy in (None, s.strategy) and precision in (None, s.precision):
                return s
        raise KeyError((model, strategy, precision))


# ---- flags -------------------------------------------------------------------------------------------------------


def catalog_flags(problem_id: str) -> dict[str, str]:
    """The built-in catalog's flags of ``problem_id`` (kind -> reason); none for a problem it does not hold."""
    from problems.catalog import ProblemNotFound, load

    try:
        meta = load(problem_id).meta
    except (ProblemNotFound, ValueError, OSError):
        return {}
    out: dict[str, str] = {}
    for f in meta.flags:
        out.setdefault(f.kind, f.reason)
    return out


def problem_flags(threads: Iterable[Thread], universe: Iterable[str] = ()) -> dict[str, dict[str, str]]:
    """problem id -> flag -> reason ('' where only a record names the flag): the records' and the catalog's."""
    flags: dict[str, dict[str, str]] = {}
    for t in threads:
        mine = flags.setdefault(t.problem_id, {})
        for s in t.turns:
            for kind in s.record.problem_flags if s.record is not None else ():
                mine.setdefault(kind, "")
    for pid in set(universe) | set(flags):
        mine = flags.setdefault(pid, {})
        for kind, why in catalog_flags(pid).items():
            mine[kind] = mine.get(kind) or why
    return flags


# ---- the builder -------------------------------------------------------------------------------------------------


def _outcomes(threads: Sequence[Thread], p: Protocol, policy: TurnPolicy) -> list[M.Outcome]:
    return [o for t in threads if (o := t.outcome(p, policy)) is not None]


def build_view(
    run: str,
    threads: Sequence[Thread],
    protocols: Sequence[Protocol],
    universe: Iterable[str],
    *,
    turn_policy: TurnPolicy,
    fast_p_on: str,
    basis: str,
    resamples: int = M.BOOTSTRAP_RESAMPLES,
    seed: int = M.BOOTSTRAP_SEED,
    known: dict[tuple[str, str, str, str], M.Summary] | None = None,
    waterfalls: dict[tuple[str, str, str], list[WaterfallStep]] | None = None,
) -> HeadlineView:
    """The headline of ``threads``: per system, protocol and subset, the ``COLUMNS`` figures.

    ``known``: summaries already computed over the whole ``universe`` ((model, strategy, precision, protocol name)
    -> Summary, the report's level-``all`` rows), reused for the subset ``all`` instead of recomputed.
    ``waterfalls``: (model, strategy, precision) -> the level-``all`` waterfall steps, carried into the view."""
    universe = set(universe)
    flags = problem_flags(threads, universe)
    systems = sorted({(t.model, t.strategy, t.precision) for t in threads})
    names = [p.name for p in protocols]
    out: list[HeadlineSystem] = []
    best: dict[tuple[str, str, str], dict[str, dict[str, M.Outcome]]] = {}
    for system in systems:
        mine = [t for t in threads if (t.model, t.strategy, t.precision) == system]
        kern = {p.name: _outcomes(mine, p, turn_policy) for p in protocols}
        best[system] = {n: M.best_of_k(k) for n, k in kern.items()}
        rows: list[HeadlineSubset] = []
        done: dict[frozenset[str], HeadlineSubset] = {}
        for sub in SUBSETS:
            excluded = frozenset(pid for pid in universe if sub.excludes(set(flags.get(pid, {}))))
            if excluded in done:  # the same problems as an earlier subset: the same figures
                rows.append(done[excluded].model_copy(update={"subset": sub.key, "label": sub.label}))
                continue
            summaries: dict[str, M.Summary] = {}
            for n, k in kern.items():
                cached = (known or {}).get((*system, n)) if not excluded else None
                summaries[n] = cached or M.summarize([o for o in k if o.problem_id not in excluded],
                                                     universe - excluded, resamples=resamples, seed=seed)
            first = summaries[names[0]]
            row = HeadlineSubset(subset=sub.key, label=sub.label, problems=first.attempted, kernels=first.kernels,
                                 excluded=sorted(excluded), summaries=summaries,
                                 figures={n: figures(s) for n, s in summaries.items()})
            done[excluded] = row
            rows.append(row)
        out.append(HeadlineSystem(model=system[0], strategy=system[1], precision=system[2], subsets=rows,
                                  waterfall=(waterfalls or {}).get(system, [])))

    flagged = []
    for pid in sorted(pid for pid in universe if flags.get(pid)):
        fp = FlaggedProblem(problem_id=pid, flags=sorted(flags[pid]),
                            reasons={k: v for k, v in sorted(flags[pid].items()) if v})
        for system in systems:
            verdicts, speedups = {}, {}
            for n in names:
                o = best[system][n].get(pid)
                verdicts[n] = o.verdict if o is not None else "missing"
                speedups[n] = o.speedup if o is not None and o.correct else None
            fp.results.append(FlaggedResult(model=system[0], strategy=system[1], precision=system[2],
                                            verdicts=verdicts, speedups=speedups))
        flagged.append(fp)
    return HeadlineView(run=run, protocols=names, protocol_keys=[p.key for p in protocols], turn_policy=turn_policy,
                        fast_p_on=fast_p_on, basis=basis, systems=out, flagged=flagged)


# ---- rendering helpers shared by text and HTML -------------------------------------------------------------------


def fmt(kind: str, v: Any) -> str:
    if v is None:
        return "-"
    if kind == "pct":
        return f"{100 * v:.0f}%"
    if kind == "x":
        return f"{v:.2f}x"
    return str(v)


def side_by_side(row: HeadlineSubset, col: Column, protocols: Sequence[str]) -> str:
    """One cell: the column's value under each protocol, in order, 'naive / verified'."""
    return " / ".join(fmt(col.kind, row.figures.get(p, {}).get(col.key)) for p in protocols)


def subset_label(row: HeadlineSubset) -> str:
    return row.label if not row.excluded else f"{row.label} (-{len(row.excluded)})"
