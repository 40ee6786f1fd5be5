"""Human-readable tables of a ``Report`` (rich)."""

from __future__ import annotations

from typing import NamedTuple

from rich.console import Console
from rich.table import Table

from harness.scoring.reasons import clip

from .. import metrics as M
from ..turns import turn_label
from . import headline as H
from .build import ALL, Report


def x(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{v:.{digits}f}x"


def vx(verdict: str | None, speedup: float | None) -> str:
    """A speedup as shown beside its verdict: only a correct kernel has one (an incorrect kernel's time says
    nothing about a speedup; 'incorrect 2647x' read as a result)."""
    return x(speedup) if verdict == "correct" else "-"


def pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def est(e: M.Estimate, kind: str = "x") -> str:
    if e.value is None:
        return "-"
    f = pct if kind == "pct" else (lambda v: x(v))
    s = f(e.value)
    if e.lo is not None and e.hi is not None:
        s += f" [{f(e.lo)}-{f(e.hi)}]"
    return s


def basis(rep: Report) -> str:
    """Which speedup the table's fast_p and geomean count (every such table says)."""
    return "speedups on point estimates" if rep.fast_p_on == "point" else "speedups on 95% interval lower bounds"


def interval(lo_hi: list[float] | None) -> str:
    return "" if not lo_hi else f" [{lo_hi[0]:.2f}-{lo_hi[1]:.2f}]"


def model_strategy(rep: Report, model: str, strategy: str) -> str:
    return model if len(rep.strategies) == 1 else f"{model} / {strategy}"


def system_name(model: str, strategy: str, precision: str, strategies: list[str], precisions: list[str]) -> str:
    """A system's name in every table: the model, its strategy when the run has several, and its precision
    whenever the run is not fp32 only (an fp32 row and a bf16 row must never read alike)."""
    name = model if len(strategies) == 1 else f"{model} / {strategy}"
    return name if precisions == ["fp32"] else f"{name} · {precision}"


def system(rep: Report, model: str, strategy: str, precision: str = "fp32") -> str:
    return system_name(model, strategy, precision, rep.strategies, rep.precisions)


def precision_note(rep: Report) -> str:
    """For titles: '; precision bf16' (nothing for an fp32-only report)."""
    return "" if rep.precisions == ["fp32"] else f"; precision {', '.join(rep.precisions)}"


def guards_cell(s: M.Summary, limit: int = 4) -> str:
    items = [(g, v) for g, v in s.hack_rate_by_guard.items() if g != "any"]
    items.sort(key=lambda kv: -kv[1][1])
    parts = [f"{g} {pct(v[0])}" for g, v in items[:limit]]
    if len(items) > limit:
        parts.append(f"+{len(items) - limit}")
    return ", ".join(parts) or "none"


def _by_system(headline) -> dict[tuple[str, str, str, str], dict[str, M.Summary]]:
    """Headline rows as (model, strategy, precision, level) -> protocol name (no version) -> summary."""
    rows: dict[tuple[str, str, str, str], dict[str, M.Summary]] = {}
    for r in headline:
        rows.setdefault((r.model, r.strategy, r.precision, r.level), {})[r.protocol.split("@")[0]] = r.summary
    return rows


def _fast_1_and_geomean(by: dict[str, M.Summary], protos: list[str]) -> list[str]:
    return [*[est(by[p].fast_p[M.p_key(1.0)], "pct") if p in by else "-" for p in protos],
            *[f"{est(by[p].geomean_speedup)} (n={by[p].geomean_speedup.n})" if p in by else "-" for p in protos]]


def headline_tables(rep: Report) -> list[Table]:
    protos = [p.split("@")[0] for p in rep.protocols]
    rows = _by_system(rep.headline)

    t = Table(title=f"Headline — run {rep.run} ({' vs '.join(protos)}; {turn_label(rep.turn_policy)} of each "
                    f"(problem, sample), best of k samples; 95% bootstrap CI; {basis(rep)}{precision_note(rep)})",
              show_lines=False)
    for c in ("system", "level", "N"):
        t.add_column(c)
    for p in protos:
        t.add_column(f"correct\n{p}", justify="right")
    for p in protos:
        t.add_column(f"fast_1\n{p}", justify="right")
    for p in protos:
        t.add_column(f"geomean (n)\n{p}", justify="right")
    for (model, strategy, precision, level), by in rows.items():
        first = next(iter(by.values()))
        t.add_row(system(rep, model, strategy, precision), level, str(first.attempted),
                  *[f"{by[p].correct} ({pct(by[p].correct_rate.value)})" if p in by else "-" for p in protos],
                  *_fast_1_and_geomean(by, protos))

    fp = Table(title=f"fast_p (share of all N problems correct with speedup > p; {basis(rep)}{precision_note(rep)})")
    for c in ("system", "level", "protocol"):
        fp.add_column(c)
    for p in M.FAST_P:
        fp.add_column(f"p={p:g}", justify="right")
    mem = Table(title=f"Memory, SOL score, guards{precision_note(rep).replace(';', ' —', 1)}")
    for c in ("system", "level", "protocol", "Mem Eff (n)", "higher peak mem", "median SOL (n)",
              "hack rate by guard", "any guard", "accepted hacks"):
        mem.add_column(c, justify="right" if c not in ("system", "level", "protocol", "hack rate by guard") else "left")
    for (model, strategy, precision, level), by in rows.items():
        for p, s in by.items():
            fp.add_row(system(rep, model, strategy, precision), level, p, *[pct(s.fast_p[M.p_key(q)].value) for q in M.FAST_P])
            anyg = s.hack_rate_by_guard.get("any")
            mem.add_row(system(rep, model, strategy, precision), level, p,
                        f"{x(s.mem_eff.value)} (n={s.mem_eff.n})",
                        f"{pct(s.higher_memory_share.value)} of {s.higher_memory_share.n}",
                        f"{'-' if s.sol_median.value is None else f'{s.sol_median.value:.2f}'} (n={s.sol_median.n})",
                        guards_cell(s), f"{anyg[1]}/{anyg[2]}" if anyg else "-", str(s.accepted_hacks))
    return [t, fp, mem, *([compile_table(rep)] if rep.headline_vs_compile else [])]


def compile_table(rep: Report) -> Table:
    """fast_1 and geomean with torch.compile(Model) as the baseline instead of eager PyTorch."""
    protos = [p.split("@")[0] for p in rep.protocols]
    rows = _by_system(rep.headline_vs_compile)
    t = Table(title="Against torch.compile (default mode) as the baseline: same kernels, verdicts and timers, point "
                    f"estimates; 95% bootstrap CI{precision_note(rep)})")
    for c in ("system", "level", "N"):
        t.add_column(c)
    for p in protos:
        t.add_column(f"fast_1 vs compile\n{p}", justify="right")
    for p in protos:
        t.add_column(f"geomean vs compile (n)\n{p}", justify="right")
    for (model, strategy, precision, level), by in rows.items():
        first = next(iter(by.values()))
        t.add_row(system(rep, model, strategy, precision), level, str(first.attempted),
                  *_fast_1_and_geomean(by, protos))
    return t


def waterfall_tables(rep: Report, level: str = ALL) -> list[Table]:
    out = []
    for w in rep.waterfalls:
        if w.level != level:
            continue
        t = Table(title=f"Waterfall — {system(rep, w.model, w.strategy, w.precision)}, level {w.level} "
                        f"(each step adds one component to the previous; {basis(rep)})")
        for c in ("step", "adds", "correct", "geomean", "x prev", "fast_1", "Δ fast_1", "verdicts changed",
                  "fast lost"):
            t.add_column(c, justify="left" if c in ("step", "adds") else "right")
        for s in w.steps:
            adds = s.label + (f" (does not apply to {s.not_applicable} kernel(s): unchanged)" if s.not_applicable else "")
            t.add_row(s.step, adds, f"{s.correct}/{s.attempted}", est(s.geomean), x(s.d_geomean),
                      est(s.fast_1, "pct"),
                      "-" if s.d_fast_1 is None else f"{100 * s.d_fast_1:+.0f} pts",
                      str(s.verdicts_changed), str(s.fast_lost))
        out.append(t)
        c = Table(title="Each component alone (on naive) and left out (of verified)")
        for col in ("component", "geomean alone", "fast_1 alone", "correct alone", "geomean without",
                    "fast_1 without", "correct without"):
            c.add_column(col, justify="left" if col == "component" else "right")
        for a in w.components:
            c.add_row(a.step, x(a.geomean_alone), pct(a.fast_1_alone), str(a.correct_alone), x(a.geomean_without),
                      pct(a.fast_1_without), str(a.correct_without))
        out.append(c)
    return out


def changes_table(rep: Report) -> Table:
    t = Table(title="Kernels whose result moved between naive and verified (every turn)")
    for c in ("system", "problem", "s", "turn", "naive", "verified", "responsible steps", "why"):
        t.add_column(c)
    for k in rep.kernel_changes:
        if k.explanation == "unchanged":
            continue
        first, last = k.steps[0], k.steps[-1]
        step = k.verdict_changed_at or k.fast_1_changed_at or k.largest_speedup_move_at or "-"
        if k.verdict_changed_at and k.later_changes:  # every step that changed the verdict, to the last one
            step = ", ".join([step, *(c.split(":", 1)[0] for c in k.later_changes)])
        t.add_row(system(rep, k.model, k.strategy, k.precision), k.problem_id, str(k.sample),
                  f"{k.turn}{'' if k.final else ' (not final)'}", f"{first.verdict} {vx(first.verdict, first.speedup)}", f"{last.verdict} {vx(last.verdict, last.speedup)}", step,
                  clip(k.explanation, 240))
    return t


def judge_tables(rep: Report) -> list[Table]:
    """One table per LLM judge (python -m agents.audit RUN --judge ...): its category per fast survivor, never a verdict."""
    from ..audit.judge import cost_line, summarize

    out = []
    for judge in sorted({e.judge for e in rep.judge}):
        s = summarize(rep.judge, judge)
        models = f" ({', '.join(s.judge_models)})" if s.judge_models else ""
        counts = ", ".join(f"{k} {v}" for k, v in sorted(s.by_category.items())) or "no category"
        t = Table(title=f"LLM judge {judge}{models} on fast survivors (verified correct, speedup >= "
                        f"{s.min_speedup if s.min_speedup is not None else '-'}x; verdicts unchanged): {counts}; "
                        f"{cost_line(s)}")
        for c in ("system", "problem", "s", "turn", "verified", "judge says", "reason / note"):
            t.add_column(c)
        for e in rep.judge:
            if e.judge != judge:
                continue
            says = e.category or e.status
            if e.status == "schema_error":
                says += " (schema error)"
            t.add_row(system(rep, e.model, e.strategy, e.precision), e.problem_id, str(e.sample), str(e.turn),
                      x(e.verified_speedup), says, (e.reason if e.status in ("judged", "schema_error") else
                                                    f"{e.status}: {e.note}")[:240])
        out.append(t)
    return out


def turn_table(rep: Report) -> Table:
    t = Table(title=f"By turn (each (problem, sample) as of turn t; {basis(rep)}{precision_note(rep)})")
    for c in ("system", "protocol", "turn", "correct", "fast_0", "fast_1", "fast_2", "geomean (n)"):
        t.add_column(c, justify="left" if c in ("system", "protocol") else "right")
    for r in rep.by_turn:
        t.add_row(system(rep, r.model, r.strategy, r.precision), r.protocol, str(r.turn), f"{r.correct}/{r.attempted}",
                  pct(r.fast_p["fast_0"]), pct(r.fast_p["fast_1"]), pct(r.fast_p["fast_2"]),
                  f"{x(r.geomean)} (n={r.n_geomean})")
    return t


def strategy_table(rep: Report) -> Table:
    t = Table(title=f"By prompt strategy (level all; {basis(rep)}{precision_note(rep)})")
    for c in ("model", "strategy", "protocol", "correct", "fast_1", "geomean (n)"):
        t.add_column(c)
    for r in rep.headline:
        if r.level == ALL:
            s = r.summary
            t.add_row(r.model if rep.precisions == ["fp32"] else f"{r.model} · {r.precision}", r.strategy, r.protocol, f"{s.correct}/{s.attempted}", pct(s.fast_p["fast_1"].value),
                      f"{x(s.geomean_speedup.value)} (n={s.geomean_speedup.n})")
    return t


def compare_table(rep: Report) -> Table:
    named = any(p not in (None, "fp32") for r in rep.compare or [] for p in (r.precision_a, r.precision_b))
    shared = f"; only the problems both runs have, {rep.compare_note.split('only the ', 1)[1]}" if rep.compare_note else ""
    t = Table(title=f"Compare: {rep.run} (A) vs {rep.compare_run} (B; {basis(rep)}{shared})")
    for c in ("system", *(("precision A", "precision B") if named else ()), "level", "protocol", "correct A",
              "correct B", "fast_1 A", "fast_1 B", "geomean A", "geomean B"):
        t.add_column(c)
    for r in rep.compare or []:
        t.add_row(model_strategy(rep, r.model, r.strategy), *((r.precision_a or "-", r.precision_b or "-") if named else ()),
                  r.level, r.protocol,
                  str(r.a.get("correct", "-")), str(r.b.get("correct", "-")),
                  pct(r.a.get("fast_1")), pct(r.b.get("fast_1")), x(r.a.get("geomean")), x(r.b.get("geomean")))
    return t


def view_system(view: H.HeadlineView, s: H.HeadlineSystem | H.FlaggedResult) -> str:
    """A system's name in the headline view, by the rule of ``system``."""
    strategies = sorted({x.strategy for x in view.systems})
    precisions = sorted({x.precision for x in view.systems}) or ["fp32"]
    return system_name(s.model, s.strategy, s.precision, strategies, precisions)


def _verdict_cell(verdict: str | None, speedup: float | None) -> str:
    return f"{verdict} {x(speedup)}" if verdict == "correct" and speedup is not None else (verdict or "-")


def markdown_table(headers: list[str], rows: list[list[str]], left: int = 1) -> str:
    """A Markdown table, columns padded to their widest cell; the first ``left`` columns left-aligned, the rest
    right-aligned (the headline pastes into a README as it prints)."""
    headers, rows = [h.replace("|", "\\|") for h in headers], [[c.replace("|", "\\|") for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) if i < left else c.rjust(w)
                                 for i, (c, w) in enumerate(zip(cells, widths, strict=True))) + " |"

    rule = "|" + "|".join("-" * (w + 1) + (":" if i >= left else "-") for i, w in enumerate(widths)) + "|"
    return "\n".join([line(headers), rule, *(line(r) for r in rows)])


class Grid(NamedTuple):
    heading: str
    headers: list[str]
    rows: list[list[str]]
    left: int = 1  # the first ``left`` columns are text (left-aligned), the rest figures


def headline_grids(view: H.HeadlineView) -> list[Grid]:
    """The headline view as tables of strings (text prints them as Markdown, HTML as tables): per system the
    figures of ``headline.COLUMNS`` under each subset, each cell 'naive / verified'; the flagged problems apart;
    each system's waterfall (level all)."""
    cells = " / ".join(view.protocols)
    out: list[Grid] = []
    for s in view.systems:
        rows = [[H.subset_label(row), str(row.problems), str(row.kernels),
                 *[H.side_by_side(row, col, view.protocols) for col in H.COLUMNS]] for row in s.subsets]
        out.append(Grid(f"{view_system(view, s)} (each cell: {cells})",
                        ["problems", "N", "kernels", *[c.label for c in H.COLUMNS]], rows))
    if view.flagged:
        several = len(view.systems) > 1
        rows = [[f.problem_id, ", ".join(f.flags), *((view_system(view, r),) if several else ()),
                 *[_verdict_cell(r.verdicts.get(p), r.speedups.get(p)) for p in view.protocols]]
                for f in view.flagged for r in f.results]
        headers = ["problem", "flags", *(("system",) if several else ()), *view.protocols]
        out.append(Grid("Flagged problems (left out of the 'without' rows above)", headers, rows, left=len(headers)))
    for s in view.systems:
        if not s.waterfall:
            continue
        rows = [[w.step, f"{w.correct}/{w.attempted}", x(w.geomean.value), x(w.d_geomean), pct(w.fast_1.value),
                 "-" if w.d_fast_1 is None else f"{100 * w.d_fast_1:+.0f} pts", str(w.verdicts_changed),
                 str(w.fast_lost)] for w in s.waterfall]
        out.append(Grid(f"Waterfall — {view_system(view, s)}, all problems: from {view.protocols[0]} to "
                        f"{view.protocols[-1]}, one component at a time",
                        ["step", "correct", "geomean over correct", "x prev", "fast_1", "Δ fast_1", "verdicts changed",
                         "fast lost"], rows))
    return out


def headline_title(view: H.HeadlineView) -> str:
    basis = "point estimates" if view.fast_p_on == "point" else "95% interval lower bounds"
    return (f"Headline — run {view.run}: {' vs '.join(view.protocol_keys or view.protocols)}; "
            f"{turn_label(view.turn_policy)} of each (problem, sample), best of k samples; speedups on {basis}")


def headline_notes(view: H.HeadlineView) -> list[str]:
    return [*view.notes, f"speedups counted: {view.basis}"]


def format_headline(view: H.HeadlineView) -> str:
    parts = [headline_title(view)]
    for g in headline_grids(view):
        parts += ["", g.heading, "", markdown_table(g.headers, g.rows, g.left)]
    parts += ["", *(f"note: {n}" for n in headline_notes(view))]
    return "\n".join(parts) + "\n"


def print_headline(view: H.HeadlineView, stream=None) -> None:
    import sys

    (stream or sys.stdout).write(format_headline(view))


SHAPES_CELL = {True: "shape_specialised", False: "not specialised", None: "not checked"}


def kernel_table(rep: Report) -> Table:
    """Per kernel (final turn): each protocol's speedup with its 95% interval, the speedup counted, noise."""
    protos = [p.split("@")[0] for p in rep.protocols]
    t = Table(title=f"Speedups per kernel, final turn (95% interval from the kernel's own timing samples; "
                    f"'counted' is what fast_p and geomean use, {basis(rep)}{precision_note(rep)})")
    for c in ("system", "problem", "s"):
        t.add_column(c)
    for p in protos:
        t.add_column(f"{p}\nspeedup [95%]", justify="right")
        t.add_column(f"{p}\ncounted", justify="right")
    t.add_column("noisy (why)")
    shaped = any(k.final.shapes for k in rep.kernels)  # a run with --shapes N
    if shaped:
        t.add_column("extra shapes")
    for k in rep.kernels:
        f = k.final
        cells = []
        for p in protos:
            sp, v = f.speedups.get(p), f.verdicts.get(p)
            cells += [f"{v} {x(sp)}{interval(f.intervals.get(p))}" if sp is not None and v == "correct"
                      else (v or "-"), vx(v, f.credited.get(p))]
        why = "; ".join(f"{p}: {f.noise[p][0]}" for p in protos if f.noise.get(p))
        extra = [SHAPES_CELL[f.shape_specialised] if f.shapes else "-"] if shaped else []
        t.add_row(system(rep, k.model, k.strategy, k.precision), k.problem_id, str(k.sample), *cells, clip(why, 160) or "no",
                  *extra)
    return t


KEYS = {"Headline": 2, "fast_p": 3, "Memory": 3, "Against": 2, "Waterfall": 1, "Each component": 1, "Kernels whose": 3,
        "Speedups per kernel": 3, "By turn": 3, "By prompt": 3, "Compare": 3}  # the columns that name a row


def keys_of(table: Table) -> int:
    title = str(table.title or "")
    return next((n for head, n in KEYS.items() if title.startswith(head)), 1)


def noisy_warning(rep: Report) -> str | None:
    """One line for the top of the report when most final-turn speedups are flagged noisy: the figures below then say
    more about the host's load than about the kernels."""
    flagged = timed = 0
    for k in rep.kernels:
        for p, v in k.final.verdicts.items():
            if v == "correct" and k.final.speedups.get(p) is not None:
                timed += 1
                flagged += bool(k.final.noise.get(p))
    if timed and flagged * 2 > timed:
        return (f"warning: {flagged} of {timed} speedups are flagged noisy (wide 95% intervals or spread timings): "
                "the host was likely busy; read the speedups below as rough, or re-run on a quiet machine")
    return None


def print_report(rep: Report, console: Console | None = None) -> None:
    from ..tables import print_fitted

    c = console or Console()  # the terminal's width (COLUMNS, else 80 when not a terminal)
    if warn := noisy_warning(rep):
        c.print(f"[bold yellow]{warn}[/bold yellow]")
    c.print(f"[bold]Run {rep.run}[/bold]: {rep.n_attempts} attempts, models {', '.join(rep.models)}, "
            f"strategies {', '.join(rep.strategies)}{precision_note(rep).replace(';', ',')}, levels {', '.join(rep.levels)}, "
            f"N = {rep.universe.get(ALL, 0)} problems; protocols {', '.join(rep.protocols)}")
    if rep.unreadable:
        c.print(f"[bold red]{len(rep.unreadable)} unreadable stored line(s)/record(s), their rows lost:[/bold red] "
                + "; ".join(f"line {u.line}" + (f" ({u.key})" if u.key else "") for u in rep.unreadable[:10])
                + (" ..." if len(rep.unreadable) > 10 else ""))
    tables = [*headline_tables(rep), *waterfall_tables(rep), kernel_table(rep), changes_table(rep), *judge_tables(rep)]
    if len(rep.strategies) > 1:
        tables.append(strategy_table(rep))
    tables.append(turn_table(rep))
    if rep.compare is not None:
        tables.append(compare_table(rep))
    for t in tables:
        print_fitted(c, t, keys_of(t))
    for n in rep.notes:
        c.print(f"[dim]note: {n}[/dim]")
