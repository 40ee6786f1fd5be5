"""Issue 20, item 7: no SOL histogram drawn empty (CPU runs have no speed-of-light bound), and no speedup shown
beside a verdict that is not 'correct' ('incorrect 2647x' read as a result)."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from agents.report import build_report, render_html
from agents.report.__main__ import main as cli
from agents.report.plots import render_all, skipped_plots
from agents.report.synthetic import record, write_synthetic_run
from agents.report.text import changes_table
from agents.store import Attempt, RunStore
from harness import score


@pytest.fixture
def cpu_run(tmp_path):
    """Two correct CPU kernels: no roofline peaks on a CPU, so no SOL score."""
    store = RunStore(tmp_path / "cpu")
    store.write_config({"models": ["m"], "strategies": ["s"]})
    for pid, k in (("level1/19_ReLU", 0.5), ("level1/20_LeakyReLU", 2.0)):
        rec = record(pid, naive_k=k, naive_b=1.0, ver_k=k, ver_tf32=1.0, ver_b32=1.0)
        rec.device = "cpu"
        store.append(Attempt(model="m", strategy="s", problem_id=pid, level=1, number=int(pid.split("/")[1][:2].strip("_")),
                             kernel_source="x", record=rec.model_dump(mode="json"),
                             results={p: score(rec, p).model_dump(mode="json") for p in ("naive", "verified")}))
    return store.dir


def test_sol_histogram_is_skipped_with_a_reason_on_cpu(cpu_run, tmp_path, capsys):
    rep = build_report(cpu_run, resamples=0)
    assert "sol_hist" not in render_all(rep)
    assert "speed-of-light bound" in skipped_plots(rep)["sol_hist"]
    assert cli([str(cpu_run), "--plots", str(tmp_path / "p"), "--html", str(tmp_path / "r.html")]) == 0
    assert not (tmp_path / "p" / "sol_hist.png").exists() and (tmp_path / "p" / "fast_p.png").exists()
    assert "plot sol_hist not drawn: no correct kernel has an SOL score" in capsys.readouterr().err
    assert "sol_hist not drawn" in (tmp_path / "r.html").read_text()


def test_gpu_run_with_sol_scores_still_draws_it(tmp_path):
    write_synthetic_run(tmp_path / "synth")
    rep = build_report(tmp_path / "synth", resamples=0)
    assert "sol_hist" in render_all(rep) and not skipped_plots(rep)


def test_no_speedup_beside_a_verdict_that_is_not_correct(tmp_path):
    write_synthetic_run(tmp_path / "synth")  # its ReLU: correct 10x naive, incorrect (negative inputs) verified
    rep = build_report(tmp_path / "synth", resamples=0)
    relu = rep.change("level1/19_ReLU", "synth")
    assert relu.steps[-1].verdict == "incorrect" and relu.steps[-1].speedup  # measured, but not shown
    buf = io.StringIO()
    Console(file=buf, width=400).print(changes_table(rep))
    text = buf.getvalue()
    assert "correct 10.00x" in text
    assert not re.search(r"(incorrect|hack|runtime_error|timeout|compile_error) +\d[\d.]*x", text), text
    html = render_html(rep, plots={})
    assert not re.search(r"v-(incorrect|hack)\">(incorrect|hack)</span> \d[\d.]*x", html)
    assert "v-incorrect\">incorrect</span> -" in html
