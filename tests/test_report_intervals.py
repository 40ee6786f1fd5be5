"""agents.report shows each kernel's speedup interval and noise, counts fast_p on point estimates or lower
bounds (--fast-p-on), and every table says which (issue 20, item 1)."""

from __future__ import annotations

import json
import random

import pytest
from rich.console import Console

from agents.report import build_report, render_html
from agents.report.__main__ import main as cli
from agents.report.synthetic import _attempt
from agents.report.text import print_report
from agents.store import RunStore
from tests.test_speedup_intervals import rec_with, timing

QUIET, LOADED = "level1/19_ReLU", "level1/23_Softmax"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs") / "noisy"
    store = RunStore(d)
    store.write_config({"models": ["m"], "strategies": ["zero_shot"]})
    store.append(_attempt("m", QUIET, 1, rec_with(timing(random.Random(1), 0.05, 0.10, loaded=False), QUIET)))
    store.append(_attempt("m", LOADED, 1, rec_with(timing(random.Random(3), 0.05, 0.10, loaded=True), LOADED)))
    return d


def test_each_kernel_carries_its_interval_and_noise(run):
    rep = build_report(run, resamples=0)
    k = {v.problem_id: v.final for v in rep.kernels}
    for p in ("naive", "verified"):
        lo, hi = k[QUIET].intervals[p]
        assert lo < k[QUIET].speedups[p] < hi and k[QUIET].noise[p] == []
        assert k[LOADED].noise[p]
    assert k[LOADED].credited["verified"] < k[LOADED].speedups["verified"]


def test_fast_p_on_lower_counts_lower_bounds_and_every_table_says_so(run):
    point, lower = build_report(run, resamples=0), build_report(run, resamples=0, fast_p_on="lower")
    assert point.fast_p_on == "point" and lower.fast_p_on == "lower"
    g = {r.fast_p_on: r.row("m", "naive").summary.geomean_speedup.value for r in (point, lower)}
    assert g["lower"] < g["point"]
    for rep, words in ((point, "point estimates"), (lower, "lower bounds")):
        con = Console(width=400, record=True)
        print_report(rep, con)
        text = con.export_text()
        flat = " ".join(text.split())  # titles wrap at the table's width
        # headline, fast_p, waterfall, per-kernel and by-turn tables each name the basis
        for title in ("Headline", "fast_p (share", "Waterfall —", "Speedups per kernel", "By turn"):
            assert words in flat[flat.index(title):][:400], title
        assert any(words in n for n in rep.notes)
        html = render_html(rep)
        assert html.count(words) >= 4


def test_cli_flag_and_json(run, capsys):
    assert cli([str(run), "--json", "--resamples", "0", "--fast-p-on", "lower"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fast_p_on"] == "lower"
    final = {k["problem_id"]: k["final"] for k in out["kernels"]}
    assert final[LOADED]["noise"]["verified"] and final[QUIET]["intervals"]["verified"][0] > 1.5
