"""Pure metric functions over per-kernel outcomes (DESIGN.md "Metrics").

Nothing here imports torch, the harness or the run store: the inputs are plain ``Outcome`` values
(one per scored kernel) and every function is deterministic (bootstrap uses a fixed seed).

Vocabulary
----------
* A *kernel* is one (problem, sample) at the turn chosen by the caller (the report uses the final
  turn by default; see ``agents.report``).
* A *problem* row is the best of its k samples (KernelBench-Verified's rule): correct if any sample
  is correct, speedup = the best correct sample's speedup; memory and SOL score come from that
  same sample. ``per_problem`` builds these rows over a *universe* of problems, so a problem that
  was attempted but has no kernel (model error, no code, crash) is a row that is simply not correct.
* fast_p = (1/N) #{problems: correct and speedup > p}, N = all problems in the universe. A correct
  kernel without a timing (speedup None) is not fast for any p, not even p = 0.
* Geomean speedup comes in two conventions: ``geomean_speedup`` over correct, timed problems only (incorrect
  ones excluded), and ``geomean_speedup_all`` over every problem, one without a correct timed kernel counted
  at ``INCORRECT_SPEEDUP`` = 1.0 (the PyTorch reference kept).
* Figures come as ``Estimate``: the value, a percentile bootstrap interval from resampling problems
  with replacement, and ``n``, the count the figure is taken over (problems for fast_p and the
  correctness rate, correct problems with a speedup for the geomean, and so on).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from pydantic import BaseModel, Field

FAST_P: tuple[float, ...] = (0.0, 0.5, 0.8, 1.0, 1.5, 2.0, 5.0)
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20250101
INCORRECT_SPEEDUP = 1.0
"""The speedup ``geomean_speedup_all`` counts for a problem without a correct, timed kernel: the user keeps the
PyTorch reference (a fallback), so the problem neither helps nor hurts the mean."""


@dataclass(frozen=True)
class Outcome:
    """One kernel scored under one protocol (or, after ``per_problem``, one problem's best sample)."""

    problem_id: str
    sample: int = 0
    correct: bool = False
    speedup: float | None = None
    """The speedup fast_p and geomean count: the protocol's credited speedup (``Protocol.speedup_credit``)."""
    memory_ratio: float | None = None
    """kernel peak / baseline peak; > 1 means the kernel used more memory."""
    speedup_vs_compile: float | None = None
    """torch.compile(Model)'s time over the kernel's (point estimate; None: no compile baseline measured)."""
    sol_score: float | None = None
    verdict: str = "incorrect"
    evaluated: bool = True
    """A measurement exists (the kernel built and ran far enough to be scored)."""
    failed_guards: tuple[str, ...] = field(default_factory=tuple)
    """Guards the kernel failed (measured), whether or not the protocol enforces them."""

    @property
    def timed_correct(self) -> bool:
        return self.correct and self.speedup is not None and self.speedup > 0


def missing(problem_id: str) -> Outcome:
    """The row for a problem that was attempted but produced nothing scorable."""
    return Outcome(problem_id=problem_id, correct=False, verdict="missing", evaluated=False)


def _better(a: Outcome, b: Outcome) -> bool:
    """Is ``a`` a better representative of its problem than ``b``?"""
    ka = (a.timed_correct, a.correct, a.speedup or 0.0, -a.sample)
    kb = (b.timed_correct, b.correct, b.speedup or 0.0, -b.sample)
    return ka > kb


def best_of_k(kernels: Iterable[Outcome]) -> dict[str, Outcome]:
    """Best sample per problem: a correct sample beats an incorrect one, then the higher speedup
    (ties go to the lower sample index, so the choice is deterministic)."""
    best: dict[str, Outcome] = {}
    for k in kernels:
        cur = best.get(k.problem_id)
        if cur is None or _better(k, cur):
            best[k.problem_id] = k
    return best


def per_problem(kernels: Iterable[Outcome], universe: Iterable[str] | None = None) -> list[Outcome]:
    """One row per problem of ``universe`` (default: the problems the kernels cover), sorted by id."""
    best = best_of_k(kernels)
    ids = set(best) if universe is None else set(universe) | set(best)
    return [best.get(pid, missing(pid)) for pid in sorted(ids)]


# ---- point figures over problem rows ---------------------------------------------------------------


def geomean(values: Sequence[float]) -> float | None:
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not vals:
        return None
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def median(values: Sequence[float]) -> float | None:
    vals = sorted(v for v in values if v is not None and math.isfinite(v))
    if not vals:
        return None
    m = len(vals) // 2
    return vals[m] if len(vals) % 2 else (vals[m - 1] + vals[m]) / 2


def fast_p(problems: Sequence[Outcome], p: float) -> float | None:
    if not problems:
        return None
    return sum(1 for o in problems if o.timed_correct and o.speedup > p) / len(problems)


def correctness_rate(problems: Sequence[Outcome]) -> float | None:
    if not problems:
        return None
    return sum(1 for o in problems if o.correct) / len(problems)


def geomean_speedup(problems: Sequence[Outcome]) -> tuple[float | None, int]:
    """Geometric-mean speedup over correct problems that have a timing, and how many that is."""
    vals = [o.speedup for o in problems if o.timed_correct]
    return geomean(vals), len(vals)


def geomean_speedup_all(problems: Sequence[Outcome], incorrect_as: float = INCORRECT_SPEEDUP
                        ) -> tuple[float | None, int]:
    """Geometric-mean speedup over every problem: a correct, timed problem at its speedup, any other (incorrect,
    missing, or correct without a timing) at ``incorrect_as`` (default 1.0: the PyTorch reference kept)."""
    vals = [o.speedup if o.timed_correct else incorrect_as for o in problems]
    return geomean(vals), len(vals)


def mem_eff(problems: Sequence[Outcome]) -> tuple[float | None, int]:
    """Mem Eff = geomean(m_baseline / m_kernel) over correct problems with a memory measurement."""
    vals = [1.0 / o.memory_ratio for o in problems if o.correct and o.memory_ratio and o.memory_ratio > 0]
    return geomean(vals), len(vals)


def share_higher_memory(problems: Sequence[Outcome], threshold: float = 1.0) -> tuple[float | None, int]:
    """Share of correct problems (with a memory measurement) whose kernel peak exceeds the baseline's."""
    rows = [o for o in problems if o.correct and o.memory_ratio is not None]
    if not rows:
        return None, 0
    return sum(1 for o in rows if o.memory_ratio > threshold) / len(rows), len(rows)


def sol_scores(problems: Sequence[Outcome]) -> list[float]:
    return [o.sol_score for o in problems if o.correct and o.sol_score is not None and math.isfinite(o.sol_score)]


def sol_median(problems: Sequence[Outcome]) -> tuple[float | None, int]:
    vals = sol_scores(problems)
    return median(vals), len(vals)


def hack_rate_by_guard(kernels: Sequence[Outcome]) -> dict[str, tuple[float, int, int]]:
    """Per guard: (share, failures, n) over the kernels that were evaluated (not per problem: a hack
    in any sample is a hack). Includes ``any`` for kernels failing at least one guard."""
    evaluated = [k for k in kernels if k.evaluated]
    n = len(evaluated)
    counts: dict[str, int] = {}
    for k in evaluated:
        for g in set(k.failed_guards):
            counts[g] = counts.get(g, 0) + 1
    out = {g: (c / n, c, n) for g, c in sorted(counts.items())}
    if n:
        anyc = sum(1 for k in evaluated if k.failed_guards)
        out["any"] = (anyc / n, anyc, n)
    return out


def accepted_hacks(kernels: Sequence[Outcome]) -> int:
    """Kernels a protocol calls correct although they failed a guard."""
    return sum(1 for k in kernels if k.correct and k.failed_guards)


# ---- bootstrap -------------------------------------------------------------------------------------


class Estimate(BaseModel):
    """A figure, its bootstrap interval, and the count it is taken over."""

    value: float | None = None
    lo: float | None = None
    hi: float | None = None
    n: int = Field(0, description="how many items the figure is taken over")
    of: int = Field(0, description="how many problems the group has (the resampling unit)")

    def fmt(self, pct: bool = False, digits: int = 2, ci: bool = True) -> str:
        if self.value is None:
            return "-"
        f = (lambda v: f"{100 * v:.0f}%") if pct else (lambda v: f"{v:.{digits}f}")
        s = f(self.value)
        if ci and self.lo is not None and self.hi is not None:
            s += f" [{f(self.lo)}, {f(self.hi)}]"
        return s


@lru_cache(maxsize=64)
def _draws(n: int, resamples: int, seed: int) -> tuple[tuple[int, ...], ...]:
    rng = random.Random(seed)
    return tuple(tuple(rng.randrange(n) for _ in range(n)) for _ in range(resamples))


def bootstrap_ci(
    problems: Sequence[Outcome],
    stat: Callable[[Sequence[Outcome]], float | None],
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
    alpha: float = 0.05,
) -> tuple[float | None, float | None]:
    """Percentile interval of ``stat`` over ``resamples`` resamples of the problem rows (with replacement).
    Resamples where the statistic is undefined (e.g. no correct problem) are skipped."""
    n = len(problems)
    if n == 0 or resamples <= 0:
        return None, None
    vals = []
    for idx in _draws(n, resamples, seed):
        v = stat([problems[i] for i in idx])
        if v is not None:
            vals.append(v)
    if not vals:
        return None, None
    vals.sort()
    lo_i = max(0, min(len(vals) - 1, int(math.floor(alpha / 2 * len(vals)))))
    hi_i = max(0, min(len(vals) - 1, int(math.ceil((1 - alpha / 2) * len(vals))) - 1))
    return vals[lo_i], vals[hi_i]


def estimate(
    problems: Sequence[Outcome],
    stat: Callable[[Sequence[Outcome]], tuple[float | None, int] | float | None],
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Estimate:
    """Evaluate ``stat`` (returning a value, or (value, n)) with a bootstrap interval."""

    def value_of(rows: Sequence[Outcome]) -> float | None:
        r = stat(rows)
        return r[0] if isinstance(r, tuple) else r

    r = stat(problems)
    value, n = r if isinstance(r, tuple) else (r, len(problems))
    lo, hi = bootstrap_ci(problems, value_of, resamples, seed) if value is not None else (None, None)
    return Estimate(value=value, lo=lo, hi=hi, n=n, of=len(problems))


def p_key(p: float) -> str:
    return f"fast_{p:g}"


class Summary(BaseModel):
    """Every headline figure of one group of problems under one protocol."""

    attempted: int
    correct: int
    correct_rate: Estimate
    fast_p: dict[str, Estimate]
    geomean_speedup: Estimate
    geomean_speedup_all: Estimate = Field(default_factory=Estimate, description=(
        f"over every problem, one without a correct timed kernel counted at {INCORRECT_SPEEDUP:g}x (geomean_speedup_all)"))
    mem_eff: Estimate
    higher_memory_share: Estimate
    sol_median: Estimate
    hack_rate_by_guard: dict[str, tuple[float, int, int]] = Field(default_factory=dict)
    accepted_hacks: int = 0
    kernels: int = 0


def summarize(
    kernels: Sequence[Outcome],
    universe: Iterable[str] | None = None,
    ps: Sequence[float] = FAST_P,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Summary:
    """All figures for one group: best-of-k per problem over ``universe``, bootstrap over problems."""
    problems = per_problem(kernels, universe)
    return Summary(
        attempted=len(problems),
        correct=sum(1 for o in problems if o.correct),
        correct_rate=estimate(problems, correctness_rate, resamples, seed),
        fast_p={p_key(p): estimate(problems, lambda rows, p=p: fast_p(rows, p), resamples, seed) for p in ps},
        geomean_speedup=estimate(problems, geomean_speedup, resamples, seed),
        geomean_speedup_all=estimate(problems, geomean_speedup_all, resamples, seed),
        mem_eff=estimate(problems, mem_eff, resamples, seed),
        higher_memory_share=estimate(problems, share_higher_memory, resamples, seed),
        sol_median=estimate(problems, sol_median, resamples, seed),
        hack_rate_by_guard=hack_rate_by_guard(kernels),
        accepted_hacks=accepted_hacks(kernels),
        kernels=len(kernels),
    )


def fast_p_curve(problems: Sequence[Outcome], ps: Sequence[float]) -> list[float | None]:
    return [fast_p(problems, p) for p in ps]
