"""Issue 33: plots, audit and the "moved" table say what the tables say. The scatter plot puts no kernel at a speedup
under a protocol that calls it wrong; the naive fast_p line is drawn over the verified one; histograms count whole
kernels; the audit names the step its trial lines name; the moved table names every step that changed a verdict."""

from __future__ import annotations

import pytest

from agents.report import build_report
from agents.report.audit import audit_record, format_audit
from agents.report.build import _trace
from agents.report.plots import fast_p_figure, scatter_points, speedup_hist_figure, speedup_scatter_figure
from agents.report.scoring import load_threads
from agents.report.synthetic import _attempt, record, write_synthetic_run
from agents.report.waterfall import steps
from agents.store import RunStore
from harness import NAIVE, VERIFIED


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("runs") / "synth"
    store = write_synthetic_run(d)
    # Wrong under naive already (its naive error 0.5 > 1e-2), with a huge measured "speedup" no plot may show.
    store.append(_attempt("synth", "level1/30_Softsign", 1, record(
        "level1/30_Softsign", naive_err=0.5, verified=0.5, naive_k=0.01, naive_b=1.6, ver_k=0.01, ver_tf32=1.6)))
    return d


@pytest.fixture(scope="module")
def rep(run):
    return build_report(run, resamples=0)


def test_scatter_places_no_wrong_kernel_at_a_speedup(rep):
    pts = list(scatter_points(rep))
    for k, x, y in pts:
        assert k.final.verdicts["naive"] == "correct" and x == k.final.speedups["naive"]
        assert (y is not None) == (k.final.verdicts["verified"] == "correct")
    assert "level1/30_Softsign" not in {k.problem_id for k, _, _ in pts}
    drawn = [tuple(off) for coll in speedup_scatter_figure(rep).axes[0].collections for off in coll.get_offsets()]
    assert not any(abs(x - 160) < 1e-6 for x, _ in drawn)  # Softsign's naive 1.6 / 0.01
    assert len(drawn) == len(pts)


def test_naive_fast_p_line_is_drawn_over_the_verified_one(rep):
    lines = {ln.get_label().split(" · ")[-1].split("@")[0]: ln for ln in fast_p_figure(rep).axes[0].get_lines()}
    naive, verified = lines["naive"], lines["verified"]
    assert naive.get_zorder() > verified.get_zorder()
    assert naive.get_linewidth() < verified.get_linewidth()  # the wide line under, the thin one visible on it


def test_histogram_ticks_count_whole_kernels(rep):
    ax = speedup_hist_figure(rep).axes[0]
    ticks = [t for t in ax.get_yticks() if ax.get_ylim()[0] <= t <= ax.get_ylim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks


def adversarial_only_failure():
    """Correct on the ordinary and hidden trials, wrong on one adversarial distribution (shift)."""
    errs = {"base": 0.0, "x1": 0.0, "x3": 0.0, "x0.01": 0.0, "neg": 0.0, "shift": 1.0}
    return record("level1/19_ReLU", verified=errs, naive_k=0.1, naive_b=1.0, ver_k=0.1, ver_tf32=1.0)


def test_audit_step_and_trial_lines_name_the_same_step():
    rec = adversarial_only_failure()
    e = audit_record(rec)
    assert e is not None and e.step == "adversarial_inputs", e and e.step
    assert [t.first_fails_at for t in e.failing_trials] == ["adversarial_inputs"]
    text = format_audit_entry(e)
    assert "fails from hidden_inputs" not in text and "fails from adversarial_inputs" in text
    assert "naive naive" not in text and "verified trial shift, seed" in text


def format_audit_entry(e) -> str:
    from agents.report.audit import Audit

    return format_audit(Audit(run="r", protocols=[NAIVE.key, VERIFIED.key], steps=[s for s, _l, _p in steps(NAIVE, VERIFIED)],
                              attempts=1, entries=[e]))


def test_moved_table_names_the_guard_step_that_made_a_kernel_a_hack(tmp_path):
    errs = {"base": 0.0, "x1": 0.0, "x3": 0.0, "x0.01": 0.0, "neg": 1.0}
    rec = record("level1/19_ReLU", verified=errs, naive_k=0.1, naive_b=1.0, ver_k=0.1, ver_tf32=1.0,
                 failed={"inputs_unchanged": "input 0 was written"})
    store = RunStore(tmp_path / "r")
    store.append(_attempt("m", "level1/19_ReLU", 1, rec))
    thread = load_threads(store)[0]
    kc = _trace(thread, thread.turns[0], steps(NAIVE, VERIFIED))
    assert kc.steps[-1].verdict == "hack", kc.steps[-1]
    assert kc.verdict_changed_at == "hidden_inputs" and kc.later_changes == ["guards: incorrect -> hack"]
    assert "then incorrect -> hack at guards" in kc.explanation and "inputs_unchanged" in kc.explanation
    from agents.report.text import changes_table

    rep = build_report(tmp_path / "r", resamples=0)
    table = changes_table(rep)
    col = next(c for c in table.columns if c.header == "responsible steps")
    assert list(col._cells) == ["hidden_inputs, guards"]


def test_report_makes_no_run_time_claim_about_a_kernel_that_did_not_build(tmp_path):
    from harness.scoring.static_scan import scan

    rec = record("level1/19_ReLU", status="compile_error", error="SyntaxError", naive_k=0, naive_b=0, ver_k=0,
                 ver_tf32=0)
    rec = rec.model_copy(update={"provenance": scan("import torch\nclass ModelNew(torch.nn.Module):\n    def f(self)\n")})
    assert any("only calls PyTorch" in n for n in rec.provenance.notes)
    store = RunStore(tmp_path / "r")
    store.append(_attempt("m", "level1/19_ReLU", 1, rec))
    view = build_report(tmp_path / "r", resamples=0).kernels[0].final
    assert view.verdicts["naive"] == "compile_error"
    assert "only calls PyTorch" not in str(view.provenance) and "did not build" in str(view.provenance)
