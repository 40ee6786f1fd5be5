"""The report shows extra shapes (``--shapes N``) where records carry them: the per-kernel table's column, the
HTML kernel view and the audit block; a run without them shows no such column."""

from __future__ import annotations

import json

from agents.report import build_report, render_html
from agents.report.__main__ import main as cli
from agents.report.synthetic import _attempt, record
from agents.report.text import kernel_table
from agents.store import RunStore
from harness.measure.record import ShapeCheck

RELU, GELU = "level1/19_ReLU", "level1/88_MinGPTNewGelu"


def _run(tmp_path, with_shapes: bool):
    # ReLU: correct under naive, incorrect under verified (negated inputs), so the audit shows it; with shapes it
    # also fails naive's trials at shape1: specialised. GELU: correct under both, passes its shape.
    relu = record(RELU, verified={"base": 0.0, "neg": 1.0}, naive_k=0.01, naive_b=0.1, ver_k=0.01, ver_tf32=0.1)
    gelu = record(GELU, naive_k=0.5, naive_b=1.0, ver_k=0.5, ver_tf32=1.0)
    if with_shapes:
        relu.shapes = [ShapeCheck(name="shape1", overrides={"batch_size": 63, "dim": 8191}, naive_pass=False,
                                  verified_pass=False, reason="naive trials: naive (seed 1): max abs error 0.6"),
                       ShapeCheck(name="shape2", overrides={"batch_size": 31, "dim": 4095},
                                  reason="skipped: the reference does not run at this shape: boom")]
        relu.shape_specialised = True
        gelu.shapes = [ShapeCheck(name="shape1", overrides={"batch_size": 63}, naive_pass=True, verified_pass=True)]
        gelu.shape_specialised = False
    store = RunStore(tmp_path / "run")
    store.write_config({"models": ["synth"], "strategies": ["zero_shot"]})
    for pid, rec in ((RELU, relu), (GELU, gelu)):
        store.append(_attempt("synth", pid, 1, rec))
    return tmp_path / "run"


def _table_text(rep) -> str:
    from rich.console import Console

    c = Console(width=400, record=True)
    c.print(kernel_table(rep))
    return c.export_text()


def test_kernel_table_and_html_show_shape_specialised(tmp_path):
    rep = build_report(_run(tmp_path, True), resamples=0)
    views = {k.problem_id: k.final for k in rep.kernels}
    assert views[RELU].shape_specialised is True and views[GELU].shape_specialised is False
    assert views[RELU].shapes[0] == "shape-specialised: correct at the published shape only"
    assert views[RELU].shapes[1].startswith("shape1 (batch_size=63, dim=8191): naive FAIL, verified FAIL - naive")
    assert views[RELU].shapes[2].startswith("shape2 (batch_size=31, dim=4095): skipped - skipped: the reference")
    text = _table_text(rep)
    assert "extra shapes" in text
    rows = {pid: next(line for line in text.splitlines() if pid in line) for pid in (RELU, GELU)}
    assert "shape_specialised" in rows[RELU] and "not specialised" in rows[GELU]
    html = render_html(rep, plots={})
    assert 'shape-specialised</span></summary>' in html and "shape1 (batch_size=63, dim=8191): naive FAIL" in html


def test_audit_block_shows_the_shapes(tmp_path, capsys):
    run = _run(tmp_path, True)
    assert cli([str(run), "--audit"]) == 0
    block = next(b for b in capsys.readouterr().out.split("\n\n") if b.startswith(RELU))
    assert "  shapes   shape-specialised: correct at the published shape only" in block
    assert "           shape1 (batch_size=63, dim=8191): naive FAIL, verified FAIL" in block
    assert cli([str(run), "--audit", "--json"]) == 0
    entry = json.loads(capsys.readouterr().out)["entries"][0]
    assert entry["problem_id"] == RELU and entry["shape_specialised"] is True and len(entry["shapes"]) == 3


def test_a_run_without_shapes_shows_none(tmp_path, capsys):
    run = _run(tmp_path, False)
    rep = build_report(run, resamples=0)
    assert all(k.final.shape_specialised is None and not k.final.shapes for k in rep.kernels)
    assert "extra shapes" not in _table_text(rep)
    assert "shape-specialised" not in render_html(rep, plots={})
    assert cli([str(run), "--audit"]) == 0
    assert "shapes " not in capsys.readouterr().out
