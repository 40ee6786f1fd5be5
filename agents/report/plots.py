"""PNG plots of a ``Report`` (matplotlib, Agg backend). Each function returns PNG bytes."""

from __future__ import annotations

import io
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

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


def fast_p_curve(rep: Report) -> bytes:
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    xs = list(range(len(M.FAST_P)))
    for r in rep.headline:
        if r.level != ALL:
            continue
        ys = [r.summary.fast_p[M.p_key(p)].value or 0.0 for p in M.FAST_P]
        ax.plot(xs, ys, label=f"{_system(r.model, r.strategy, rep, r.precision)} · {r.protocol}", **STYLE.get(r.protocol, {}))
    ax.set_xticks(xs, [f"{p:g}" for p in M.FAST_P])
    ax.set_xlabel("p (speedup threshold)")
    ax.set_ylabel("fast_p")
    ax.set_ylim(0, 1.02)
    ax.set_title("fast_p vs p")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)


def _pairs(rep: Report, a: str = "naive", b: str = "verified"):
    for k in rep.kernels:
        sa, sb = k.final.speedups.get(a), k.final.speedups.get(b)
        if sa and sb and sa > 0 and sb > 0:
            yield k, sa, sb


def speedup_scatter(rep: Report, a: str = "naive", b: str = "verified") -> bytes:
    fig, ax = plt.subplots(figsize=(5.2, 5.0))
    pts = list(_pairs(rep, a, b))
    for verdict in sorted({k.final.verdicts.get(b, "") for k, _, _ in pts}):
        sel = [(x, y) for k, x, y in pts if k.final.verdicts.get(b) == verdict]
        ax.scatter([x for x, _ in sel], [y for _, y in sel], s=28, alpha=0.8, label=f"{b}: {verdict}",
                   color=COLORS.get(verdict, "#888"))
    if pts:
        lo = min(min(x, y) for _, x, y in pts) / 1.5
        hi = max(max(x, y) for _, x, y in pts) * 1.5
        ax.plot([lo, hi], [lo, hi], color="#999", lw=0.8)
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
    ax.axhline(1, color="#ccc", lw=0.8)
    ax.axvline(1, color="#ccc", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"{a} speedup")
    ax.set_ylabel(f"{b} speedup")
    ax.set_title("per-kernel speedup (final turn)")
    ax.legend(fontsize=8)
    return _png(fig)


def speedup_hist(rep: Report) -> bytes:
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
    ax.axvline(1, color="#444", lw=0.8)
    ax.set_xlabel("speedup of correct kernels (log)")
    ax.set_ylabel("kernels")
    ax.set_title("speedup distribution")
    ax.legend(fontsize=8)
    return _png(fig)


def _sol_values(rep: Report, p: str) -> list[float]:
    return [min(1.0, k.final.sol_scores[p]) for k in rep.kernels
            if k.final.verdicts.get(p) == "correct" and k.final.sol_scores.get(p) is not None]


def sol_hist(rep: Report) -> bytes:
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
    ax.legend(fontsize=8)
    return _png(fig)


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
