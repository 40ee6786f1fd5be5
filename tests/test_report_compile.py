"""The report against torch.compile: the same kernels and verdicts, the compile baseline's time over the
kernel's, fast_1 and geomean computed as for the eager headline (figures recomputed by hand)."""

from __future__ import annotations

import math

from agents.report.build import build_report
from agents.report.html import render_html
from agents.report.synthetic import _attempt, record, stats
from agents.report.text import compile_table
from agents.store import RunStore


def _with_compile(pid: str, *, k: float, eager: float, compiled: float):
    rec = record(pid, naive_k=k, naive_b=eager, ver_k=k, ver_tf32=eager, ver_b32=eager)
    rec.timing.naive_baseline_compile = stats(compiled, "naive")
    rec.timing.verified_baseline_compile = stats(compiled, "verified")
    rec.timing.compile_seconds = 12.0
    return rec


def test_fast_p_and_geomean_against_torch_compile(tmp_path):
    store = RunStore(tmp_path / "run")
    store.write_config({"models": ["m"], "strategies": ["zero_shot"]})
    # GELU: 2x eager, but torch.compile fuses it too (0.6x vs compile); Tanh: 4x eager, 2x compile.
    store.append(_attempt("m", "level1/88_MinGPTNewGelu", 1, _with_compile("level1/88_MinGPTNewGelu", k=0.5, eager=1.0,
                                                                          compiled=0.3)))
    store.append(_attempt("m", "level1/22_Tanh", 1, _with_compile("level1/22_Tanh", k=0.25, eager=1.0, compiled=0.5)))
    rep = build_report(tmp_path / "run", resamples=0)
    rows = {(r.level, r.protocol): r.summary for r in rep.headline_vs_compile}
    for proto in ("naive", "verified"):
        s = rows[("all", proto)]
        assert s.fast_p["fast_1"].value == 0.5  # Tanh beats torch.compile, GELU does not
        assert math.isclose(s.geomean_speedup.value, math.sqrt(0.6 * 2.0), rel_tol=1e-6)
        eager = next(r.summary for r in rep.headline if r.level == "all" and r.protocol == proto)
        assert eager.fast_p["fast_1"].value == 1.0  # both beat eager: the compile view is the stricter one
    assert "Against torch.compile" in render_html(rep, plots={})
    assert compile_table(rep).row_count == len({(r.model, r.strategy, r.level) for r in rep.headline_vs_compile})


def test_no_compile_view_without_a_compile_baseline(tmp_path):
    store = RunStore(tmp_path / "run")
    store.write_config({"models": ["m"], "strategies": ["zero_shot"]})
    store.append(_attempt("m", "level1/22_Tanh", 1, record("level1/22_Tanh", naive_k=0.25, naive_b=1.0, ver_k=0.25,
                                                           ver_tf32=1.0)))
    rep = build_report(tmp_path / "run", resamples=0)
    assert rep.headline_vs_compile == []
    assert "Against torch.compile" not in render_html(rep, plots={})
