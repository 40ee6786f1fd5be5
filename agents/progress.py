"""Live progress of a sweep (rich, on a TTY; one plain line per finished conversation otherwise) and the
end-of-run summary: per model and strategy, problems attempted, correct under each protocol, fast_1 and
geometric-mean speedup over correct problems. Each conversation counts the turn ``agents.turns`` picks
(the report counts the same one), then the best of k samples per problem (KernelBench-Verified)."""

from __future__ import annotations

import math
import sys
import time
from collections import Counter
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, Field

from .store import Attempt
from .turns import DEFAULT_TURN_POLICY, TurnPolicy, choose_turn, rank, turn_label

TALLY_ORDER = ("correct", "incorrect", "hack", "compile_error", "runtime_error", "timeout", "no_code")


class ProtocolSummary(BaseModel):
    correct: int = Field(0, description="problems with at least one correct attempt")
    fast_1: float = Field(0.0, description="share of attempted problems correct and faster than the baseline")
    geomean_speedup: float | None = Field(None, description="over correct problems, best sample per problem")
    geomean_n: int = 0


class SummaryRow(BaseModel):
    model: str
    strategy: str
    precision: str = Field("fp32", description="harness.measure.precision: runs at two precisions are never pooled")
    problems: int = Field(0, description="problems with at least one recorded attempt")
    samples: int = 0
    attempts: int = 0
    cost_usd: float = 0.0
    protocols: dict[str, ProtocolSummary] = Field(default_factory=dict)


class RunSummary(BaseModel):
    run_dir: str
    wall_s: float = 0.0
    attempts: int = 0
    new_attempts: int = 0
    errors: int = 0
    outcomes: dict[str, int] = Field(default_factory=dict)
    cost_usd: float = 0.0
    stopped_by_budget: bool = False
    rows: list[SummaryRow] = Field(default_factory=list)
    invocations: int = Field(1, description="sweep invocations that added to this run (--resume adds one); "
                                            "outcomes are the last one's ('skipped' = done before)")
    total_wall_s: float | None = Field(None, description="wall time of all those invocations; wall_s is the last "
                                                         "one's own (None: a summary written before, wall_s is it)")
    idle: bool = Field(False, description="this invocation found nothing left to run (a finished run resumed): the "
                                          "figures are the run's as written before, wall_s this invocation's")
    turn_policy: str = Field(DEFAULT_TURN_POLICY, description="which turn of each conversation the rows count "
                                                              "(agents.turns)")


def _geomean(xs: list[float]) -> float | None:
    xs = [x for x in xs if x and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def counted_speedup(r: dict) -> float | None:
    """The speedup fast_p and geomean count, as the report does: the protocol's credited speedup (results stored
    before it existed: the point estimate)."""
    return r.get("credited_speedup") if "credited_speedup" in r else r.get("speedup")


def _rank(a: Attempt, protocol: str):
    r = a.results.get(protocol) or {}
    return rank(r.get("verdict") == "correct", counted_speedup(r))


def summarize(attempts: Iterable[Attempt], protocols: list[str],
              turn_policy: TurnPolicy = DEFAULT_TURN_POLICY) -> list[SummaryRow]:
    groups: dict[tuple[str, str, str], list[Attempt]] = {}
    for a in attempts:
        groups.setdefault((a.model, a.strategy, a.precision), []).append(a)
    rows = []
    for (model, strategy, precision), items in sorted(groups.items()):
        row = SummaryRow(model=model, strategy=strategy, precision=precision, attempts=len(items),
                         problems=len({a.problem_id for a in items}),
                         samples=len({(a.problem_id, a.sample) for a in items}),
                         cost_usd=sum(a.cost_usd or 0.0 for a in items))
        # conversation -> turn -> attempt (a turn written twice keeps the later line, as the report does)
        threads: dict[tuple[str, int], dict[int, Attempt]] = {}
        for a in items:
            threads.setdefault((a.problem_id, a.sample), {})[a.turn] = a
        for p in protocols:
            best: dict[str, float] = {}
            for (pid, _sample), by_turn in threads.items():
                a = choose_turn([by_turn[t] for t in sorted(by_turn)], turn_policy, lambda a, p=p: _rank(a, p))
                r = a.results.get(p) if a else None
                if r and r.get("verdict") == "correct":
                    sp = counted_speedup(r) or 0.0
                    best[pid] = max(best.get(pid, 0.0), sp)
            fast = sum(1 for v in best.values() if v > 1.0)
            speedups = [v for v in best.values() if v > 0]
            row.protocols[p] = ProtocolSummary(correct=len(best), fast_1=fast / row.problems if row.problems else 0.0,
                                               geomean_speedup=_geomean(speedups), geomean_n=len(speedups))
        rows.append(row)
    return rows


def _tally_text(tally: Counter) -> str:
    keys = [k for k in TALLY_ORDER if tally.get(k)] + sorted(k for k in tally if k not in TALLY_ORDER)
    return ", ".join(f"{tally[k]} {k}" for k in keys) or "-"


def level_of(problem_id: str) -> str:
    """A problem's level ('level1', ...) from its id; 'other' for a problem outside the levels."""
    head = problem_id.split("/", 1)[0]
    return head if head.startswith("level") and "/" in problem_id else "other"


class SweepProgress:
    """Counts conversations, turns and verdicts; shows them live (rich) or as plain lines, with the time left at the
    pace so far, level by level (a level-3 architecture takes longer than a level-1 operator)."""

    def __init__(self, total: int, *, enabled: bool | None = None, protocol: str = "verified",
                 executor: Any = None, spend: Any = None, stream: Any = None,
                 levels: dict[str, int] | None = None, clock: Any = time.monotonic) -> None:
        self.total = total
        self.levels = Counter(levels or {})  # conversations planned per level
        self.level_done: Counter = Counter()
        # Wall time between one finished conversation and the next, given to the level of the one that finished: the
        # sweep's pace per level with any concurrency. Conversations a resumed run skips take none and count in none.
        self.level_seconds: Counter = Counter()
        self.level_paced: Counter = Counter()
        self._clock = clock
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if enabled is None else enabled
        self.protocol = protocol
        self.executor = executor
        self.spend = spend
        self.done = 0
        self.turns = 0
        self.tally: Counter = Counter()
        self.outcomes: Counter = Counter()
        self._progress = None
        self._task = None
        self._started = self._last = clock()

    def __enter__(self) -> SweepProgress:
        if self.live and self.total:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
            from rich.table import Column

            # Bar, count, elapsed time, ETA and cost keep their width at 80 columns; only the status text
            # (turns, verdicts, queues) gives way, cut with an ellipsis.
            self._progress = Progress(
                BarColumn(bar_width=16), MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.fields[eta]}"),
                TextColumn("{task.fields[cost]}"),
                TextColumn("{task.fields[status]}", table_column=Column(no_wrap=True, overflow="ellipsis", ratio=1)),
                console=Console(file=self.stream), transient=False, expand=True,
            )
            self._progress.start()
            self._task = self._progress.add_task("sweep", total=self.total, **self._fields())
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self.refresh()
            self._progress.stop()

    def status(self) -> str:
        parts = [f"turns {self.turns}", f"{self.protocol}: {_tally_text(self.tally)}"]
        if len(self.levels) > 1:
            parts.append(self.levels_text())
        if self.executor is not None:
            s = self.executor.stats()
            parts.append(f"build {s.building}+{s.queued_builds} eval {s.evaluating}+{s.queued_evals}")
        return " | ".join(parts)

    def cost(self) -> str:
        return f"${self.spend.total_usd:.2f}" if self.spend is not None else ""

    def eta(self) -> str:
        """Time left at the pace so far: each level's conversations left at that level's pace (a level not begun yet at
        the pace of all); '-' before the first conversation this run ran ends."""
        left = self.total - self.done
        if left <= 0:
            return "ETA 0:00:00"
        paced = sum(self.level_paced.values())
        if not paced:
            return "ETA -"
        overall = sum(self.level_seconds.values()) / paced
        per_level = {lv: self.level_seconds[lv] / self.level_paced[lv] if self.level_paced[lv] else overall
                     for lv in self.levels}
        planned_left = {lv: max(0, n - self.level_done[lv]) for lv, n in self.levels.items()}
        unplanned = max(0, left - sum(planned_left.values()))
        secs = int(sum(planned_left[lv] * per_level[lv] for lv in planned_left) + unplanned * overall)
        return f"ETA {secs // 3600}:{secs // 60 % 60:02d}:{secs % 60:02d}"

    def levels_text(self) -> str:
        """Conversations finished of those planned, per level ('level1 20/100, level2 0/100')."""
        return ", ".join(f"{lv} {self.level_done[lv]}/{n}" for lv, n in sorted(self.levels.items()))

    def _fields(self) -> dict[str, str]:
        return {"status": self.status(), "cost": self.cost(), "eta": self.eta()}

    def refresh(self) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=self.done, **self._fields())

    def on_attempt(self, attempt: Attempt) -> None:
        self.turns += 1
        verdict = attempt.verdict(self.protocol)
        if verdict is None:
            verdict = attempt.feedback_kind or "no_code"
            verdict = "no_code" if verdict in ("no_code", "refused", "model_error", "truncated") else verdict
        self.tally[verdict] += 1
        self.refresh()

    def on_sample(self, task: Any, outcome: str, last: Attempt | None = None) -> None:
        self.outcomes[outcome] += 1
        self.done += 1
        level = level_of(task.problem.id)
        self.level_done[level] += 1
        now = self._clock()
        if outcome != "skipped":  # done in an earlier invocation: no time of this one
            self.level_seconds[level] += now - self._last
            self.level_paced[level] += 1
            self._last = now
        if self._progress is not None:
            self.refresh()
        elif outcome != "skipped":
            detail = ""
            if last is not None:
                # A speedup only beside a correct verdict: "incorrect 1299.80x" reads as a result.
                verdicts = ", ".join(f"{p} {r.get('verdict')}" + (f" {r['speedup']:.2f}x" if r.get("speedup")
                                                                   and r.get("verdict") == "correct" else "")
                                     for p, r in last.results.items())
                detail = f" after {last.turn} turn(s)" + (f" ({verdicts})" if verdicts else f" ({last.feedback_kind})")
            print(f"[{self.done}/{self.total} {self.eta()}] {task.model} {task.strategy} {task.problem.id} sample {task.sample}: "
                  f"{outcome}{detail}", file=self.stream, flush=True)


def print_summary(summary: RunSummary, protocols: list[str], stream: Any = None) -> None:
    from rich.console import Console
    from rich.table import Table

    from .tables import print_fitted

    console = Console(file=stream or sys.stdout)  # the terminal's width
    table = Table(title=f"run {summary.run_dir} ({turn_label(summary.turn_policy)} of each conversation, "
                        "best of k samples; as agents.report)")
    # The precision is a column whenever a row is not fp32 (fp32-only tables read as before).
    named = any(r.precision != "fp32" for r in summary.rows)
    for col in ("model", "strategy", *(("precision",) if named else ()), "problems", "attempts"):
        table.add_column(col, justify="left" if col in ("model", "strategy", "precision") else "right")
    for p in protocols:
        table.add_column(f"{p} correct", justify="right")
        table.add_column(f"{p} fast_1", justify="right")
        table.add_column(f"{p} geomean", justify="right")
    table.add_column("cost", justify="right")
    for r in summary.rows:
        cells = [r.model, r.strategy, *((r.precision,) if named else ()), str(r.problems), str(r.attempts)]
        for p in protocols:
            s = r.protocols.get(p, ProtocolSummary())
            cells += [f"{s.correct}/{r.problems}", f"{s.fast_1:.2f}",
                      f"{s.geomean_speedup:.2f}x (n={s.geomean_n})" if s.geomean_speedup else "-"]
        cells.append(f"${r.cost_usd:.2f}")
        table.add_row(*cells)
    print_fitted(console, table, keys=2)
    wall = f"wall {summary.wall_s:.0f} s"
    if summary.invocations > 1 and summary.total_wall_s is not None:
        wall += f" this session ({summary.total_wall_s:.0f} s over {summary.invocations} sessions)"
    extra = [f"{summary.attempts} attempts ({summary.new_attempts} new)", wall, f"spend ${summary.cost_usd:.2f}"]
    if summary.errors:
        extra.append(f"{summary.errors} model/harness errors (see errors.jsonl; --resume retries them)")
    if summary.stopped_by_budget:
        extra.append("stopped by --budget-usd")
    console.print("; ".join(extra))
    for part in closing_line(summary.run_dir).split("; "):  # where the results are; the command on a line of its own
        console.print(part)


def closing_line(run_dir: str) -> str:
    """Where the results are and how to open them."""
    return (f"results: {run_dir}/ (attempts.jsonl, summary.json); report: python -m agents.report {run_dir} "
            f"(add --html {run_dir}/report.html for a page to open in a browser)")
