"""PNG plots of a ``Report`` (matplotlib, Agg backend). Each function returns PNG bytes."""

from __future__ import annotations

import io
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from .. import metrics as M  # noqa: E402
from .build import ALL, Report  # noqa: E402

STYLE = {"naive": dict(ls="--", marker="o"), "verified": dict(ls="-", marker="s")}
COLORS = {"correct": "#2a9d8f", "incorrect": "#e76f51", "hack": "#9b2226", "runtime_error": "#f4a261"}


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _system(model: str, strategy: str, rep: Report, precision: str = "fp32") -> str:
    name = model if len(rep.strategies) == 1 else f"{model}/{strategy}"
    return name if rep.precisions == ["fp32"] else f"{name} · {precision}"


# Naive drawn thin, dashed and on top of a wide pale verified line: where the two agree (often at high p), the
# naive line stays visible instead of hiding under the verified one.
LINE = {"naive": dict(lw=1.4, zorder=3, alpha=1.0), "verified": dict(lw=3.2, zorder=2, alpha=0.55)}


def fast_p_figure(rep: Report):
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    xs = list(range(len(M.FAST_P)))
    for r in rep.headline:
        if r.level != ALL:
            continue
        ys = [r.summary.fast_p[M.p_key(p)].value or 0.0 for p in M.FAST_P]
        name = r.protocol.split("@")[0]
        ax.plot(xs, ys, label=f"{_system(r.model, r.strategy, rep, r.precision)} · {r.protocol}",
                **STYLE.get(name, {}), **LINE.get(name, {}))
    ax.set_xticks(xs, [f"{p:g}" for p in M.FAST_P])
    ax.set_xlabel("p (speedup threshold)")
    ax.set_ylabel("fast_p")
    ax.set_ylim(0, 1.02)
    ax.set_title("fast_p vs p")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def fast_p_curve(rep: Report) -> bytes:
    return _png(fast_p_figure(rep))


def scatter_points(rep: Report, a: str = "naive", b: str = "verified"):
    """(kernel, speedup under a, speedup under b or None) for every kernel correct under ``a``: a kernel wrong under a
    protocol has no speedup under it (as in the tables), so a kernel wrong under ``a`` is left out and one wrong under
    ``b`` only gets None (drawn on the bottom edge, marked by its verdict)."""
    for k in rep.kernels:
        sa, sb = k.final.speedups.get(a), k.final.speedups.get(b)
        if k.final.verdicts.get(a) != "correct" or not sa or sa <= 0:
            continue
        yield k, sa, sb if k.final.verdicts.get(b) == "correct" and sb and sb > 0 else None


def speedup_scatter_figure(rep: Report, a: str = "naive", b: str = "verified"):
    fig, ax = plt.subplots(figsize=(5.2, 5.0))
    pts = list(scatter_points(rep, a, b))
    values = [v for _, x, y in pts for v in (x, y) if v is not None]
    lo = min(values) / 1.5 if values else 0.1
    hi = max(values) * 1.5 if values else 10.0
    both = [(x, y) for _, x, y in pts if y is not None]
    if both:
        ax.scatter([x for x, _ in both], [y for _, y in both], s=28, alpha=0.8, label="correct under both",
                   color=COLORS["correct"])
    for verdict in sorted({k.final.verdicts.get(b) or "-" for k, _, y in pts if y is None}):
        xs = [x for k, x, y in pts if y is None and (k.final.verdicts.get(b) or "-") == verdict]
        ax.scatter(xs, [lo * 1.05] * len(xs), s=34, marker="v", alpha=0.9, clip_on=False,
                   label=f"{b}: {verdict} (no {b} speedup)", color=COLORS.get(verdict, "#888"))
    ax.plot([lo, hi], [lo, hi], color="#999", lw=0.8)
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.axhline(1, color="#ccc", lw=0.8)
    ax.axvline(1, color="#ccc", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"{a} speedup (kernels correct under {a})")
    ax.set_ylabel(f"{b} speedup")
    ax.set_title("per-kernel speedup (final turn)")
    if pts:
        ax.legend(fontsize=8)
    return fig


def speedup_scatter(rep: Report, a: str = "naive", b: str = "verified") -> bytes:
    return _png(speedup_scatter_figure(rep, a, b))


def speedup_hist_figure(rep: Report):
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    protos = [p.split("@")[0] for p in rep.protocols]
    vals = {p: [k.final.speedups[p] for k in rep.kernels
                if k.final.verdicts.get(p) == "correct" and k.final.speedups.get(p)] for p in protos}
    allv = [v for vs in vals.values() for v in vs]
    if allv:
        lo, hi = math.log10(min(allv)) - 0.1, math.log10(max(allv)) + 0.1
        bins = [10 ** (lo + (hi - lo) * i / 20) for i in range(21)]
        for p in protos:
            ax.hist(vals[p], bins=bins, alpha=0.55, label=f"{p} (n={len(vals[p])})")
        ax.set_xscale("log")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # kernels are counted: no 0.5 of a kernel
    ax.axvline(1, color="#444", lw=0.8)
    ax.set_xlabel("speedup of correct kernels (log)")
    ax.set_ylabel("kernels")
    ax.set_title("speedup distribution")
    ax.legend(fontsize=8)
    return fig


def speedup_hist(rep: Report) -> bytes:
    return _png(speedup_hist_figure(rep))


def _sol_values(rep: Report, p: str) -> list[float]:
    return [min(1.0, k.final.sol_scores[p]) for k in rep.kernels
            if k.final.verdicts.get(p) == "correct" and k.final.sol_scores.get(p) is not None]


def sol_hist(rep: Report) -> bytes:
    return _png(sol_hist_figure(rep))


def sol_hist_figure(rep: Report):
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    protos = [p.split("@")[0] for p in rep.protocols]
    bins = [i / 20 for i in range(21)]
    for p in protos:
        vals = _sol_values(rep, p)
        ax.hist(vals, bins=bins, alpha=0.55, label=f"{p} (n={len(vals)})")
    ax.axvline(0.5, color="#444", lw=0.8)
    ax.set_xlabel("SOL score (0.5 = baseline, 1 = speed of light)")
    ax.set_ylabel("kernels")
    ax.set_title("SOL-score distribution")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=8)
    return fig


def waterfall_chart(rep: Report) -> bytes:
    wfs = [w for w in rep.waterfalls if w.level == ALL]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for w in wfs:
        xs = list(range(len(w.steps)))
        name = _system(w.model, w.strategy, rep, w.precision)
        axes[0].plot(xs, [s.geomean.value or float("nan") for s in w.steps], marker="o", label=name)
        axes[1].plot(xs, [s.fast_1.value or 0.0 for s in w.steps], marker="o", label=name)
        for ax in axes:
            ax.set_xticks(xs, [s.step for s in w.steps], rotation=30, ha="right", fontsize=8)
    axes[0].axhline(1, color="#999", lw=0.8)
    axes[0].set_ylabel("geomean speedup (correct)")
    axes[1].set_ylabel("fast_1")
    axes[0].set_title("naive -> verified, one component at a time")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return _png(fig)


PLOTS = {
    "fast_p": fast_p_curve,
    "speedup_scatter": speedup_scatter,
    "speedup_hist": speedup_hist,
    "sol_hist": sol_hist,
    "waterfall": waterfall_chart,
}


def skipped_plots(rep: Report) -> dict[str, str]:
    """Plots that would be empty, and why: they are not drawn (an empty chart reads as a result)."""
    out = {}
    if not any(_sol_values(rep, p.split("@")[0]) for p in rep.protocols):
        out["sol_hist"] = ("no correct kernel has an SOL score: there is no speed-of-light bound on a GPU without "
                           "datasheet peaks, nor in CPU records made before the host was measured "
                           "(harness/roofline_bound.py)")
    return out


def render_all(rep: Report) -> dict[str, bytes]:
    """Every plot that has something to show (``skipped_plots`` says why the others are missing)."""
    skip = skipped_plots(rep)
    return {name: fn(rep) for name, fn in PLOTS.items() if name not in skip}


def save_plots(rep: Report, out_dir: str | Path) -> list[Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, png in render_all(rep).items():
        p = out / f"{name}.png"
        p.write_bytes(png)
        paths.append(p)
    return paths
