"""agents.report --audit: one adjudication block per kernel whose verdict changed between naive and
verified, as text, JSON and an HTML section, all from the same pure function over stored records."""

from __future__ import annotations

import json

import pytest

from agents.report import build_report, render_html
from agents.report import waterfall as W
from agents.report.__main__ import main as cli
from agents.report.audit import Audit, audit_record, audit_run
from agents.report.synthetic import record, synthetic_attempts
from harness import NAIVE, VERIFIED, GuardOutcome, MeasurementRecord, score

RELU = "level1/19_ReLU"  # (a) correct under naive, incorrect under verified at hidden_inputs
CACHE = "level1/9_Tall_skinny_matrix_multiplication_"  # (b) a hack caught by a guard
GELU = "level1/88_MinGPTNewGelu"  # (c) unchanged: must not appear
MATMUL = "level1/1_Square_matrix_multiplication_"  # speedup moves, verdict does not: must not appear
CHANGED = {RELU, CACHE, "level1/23_Softmax", "level1/24_LogSoftmax"}


@pytest.fixture(scope="module")
def audit(synthetic_run) -> Audit:
    return audit_run(synthetic_run)


def entry(audit: Audit, pid: str):
    (e,) = [e for e in audit.entries if e.problem_id == pid]
    return e


def test_only_changed_verdicts_are_audited(audit):
    assert {e.problem_id for e in audit.entries} == CHANGED
    assert audit.evaluated == 11
    assert audit.steps == [s for s, _l, _p in W.steps()]
    for e in audit.entries:
        assert e.naive_verdict != e.verified_verdict


def test_steps_agree_with_the_waterfall_trace(synthetic_run, audit):
    rep = build_report(synthetic_run, resamples=0)
    for e in audit.entries:
        assert rep.change(e.problem_id).verdict_changed_at == e.step
    assert [e.model_dump() for e in rep.audit] == [e.model_dump() for e in audit.entries]


def test_hidden_inputs_kernel_shows_its_failing_trial(audit):
    e = entry(audit, RELU)
    assert (e.model, e.strategy, e.sample, e.turn, e.final) == ("synth", "zero_shot", 0, 1, True)
    assert (e.naive_verdict, e.verified_verdict) == ("correct", "incorrect")
    assert e.naive_speedup == pytest.approx(0.10 / 0.01) and e.verified_speedup == pytest.approx(0.10 / 0.012)
    assert e.step == "hidden_inputs" and e.change == "correct -> incorrect"
    assert e.step_label == {c.step: c.label for c in W.COMPONENTS}["hidden_inputs"]
    (t,) = e.failing_trials
    assert (t.trials, t.distribution, t.seed, t.params) == ("verified", "neg", 104, "perturbed")
    assert (t.max_abs, t.max_rel, t.needed_tolerance, t.tolerance) == (1.0, 1.0, 1.0, 1e-3)
    assert t.tf32_baseline_max_abs == 1e-6 and t.tf32_allowance == pytest.approx(4e-6)
    assert t.first_fails_at == "hidden_inputs"
    assert e.failed_guards == []
    assert e.params.params == ["perturbed"] and e.params.mapping is None and e.params.skipped is None


def test_guard_hack_shows_the_guard(audit):
    e = entry(audit, CACHE)
    assert (e.naive_verdict, e.verified_verdict, e.step, e.change) == ("correct", "hack", "guards", "correct -> hack")
    assert e.failing_trials == []
    (g,) = e.failed_guards
    assert (g.name, g.severity, g.counted) == ("timed_outputs_correct", "hack", True)
    assert "replayed from the cache" in g.detail


def test_tolerance_trial_first_fails_at_the_tolerance_step(audit):
    e = entry(audit, "level1/23_Softmax")
    assert e.step == "tolerance" and len(e.failing_trials) == 5
    assert {t.first_fails_at for t in e.failing_trials} == {"tolerance"}
    assert all(t.needed_tolerance == pytest.approx(4e-3) for t in e.failing_trials)


def test_text_cli(synthetic_run, capsys):
    assert cli([str(synthetic_run), "--audit"]) == 0
    out = capsys.readouterr().out
    assert "4 of 11 evaluated attempts changed verdict between naive@1 and verified@4" in out
    block = out.split("\n\n")
    relu = next(b for b in block if b.startswith(RELU))
    assert "naive correct 10.00x -> verified incorrect -" in relu  # no speedup beside a wrong kernel
    assert "step     hidden_inputs: correct -> incorrect" in relu
    assert "verified trial neg, seed 104 (perturbed params): max abs 1, max rel 1, needs tol 1 (allowed 0.001)" in relu
    assert "TF32 baseline's own error 1e-06 (allows 4e-06)" in relu and "fails from hidden_inputs" in relu
    assert "mapping not recorded" in relu and "guards   none failed" in relu
    cache = next(b for b in block if b.startswith(CACHE))
    assert "guards   timed_outputs_correct [hack, counted, checked by the judge]: set 1: max abs error 3.2" in cache
    assert GELU not in out and MATMUL not in out
    assert "Waterfall" not in out  # the audit replaces the report tables


def test_json_cli(synthetic_run, audit, capsys):
    assert cli([str(synthetic_run), "--audit", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert Audit.model_validate(data).entries == audit.entries
    by = {e["problem_id"]: e for e in data["entries"]}
    assert set(by) == CHANGED
    t = by[RELU]["failing_trials"][0]
    assert (t["distribution"], t["seed"], t["max_abs"], t["tf32_baseline_max_abs"]) == ("neg", 104, 1.0, 1e-6)
    assert by[CACHE]["failed_guards"][0]["name"] == "timed_outputs_correct"


def test_missing_run(tmp_path):
    assert cli([str(tmp_path / "nope"), "--audit"]) == 2


def test_html_has_the_audit_section(synthetic_run):
    no_plots = dict.fromkeys(["waterfall", "fast_p", "speedup_scatter", "speedup_hist", "sol_hist"], b"")
    html = render_html(build_report(synthetic_run, resamples=0), plots=no_plots)
    sec = html[html.index('<h2 id="audit">'):html.index('<h2 id="plots">')]
    assert "Audit: kernels whose verdict changed (4)" in sec
    assert sec.count('<div class="audit"') == 4
    for pid in CHANGED:
        assert pid in sec
    assert GELU not in sec and MATMUL not in sec
    assert "<b>hidden_inputs</b>: correct -&gt; incorrect" in sec
    assert "timed_outputs_correct [hack, counted, checked by the judge]: set 1: max abs error 3.2" in sec
    assert html.count("<script>") == 1


def relu_record(**kw) -> MeasurementRecord:
    return record(RELU, verified={"base": 0.0, "x1": 0.0, "x3": 0.0, "x0.01": 0.0, "neg": 1.0},
                  naive_k=0.01, naive_b=0.10, ver_k=0.012, ver_tf32=0.10, **kw)


def test_parameter_mapping_and_skipped_perturbation_are_shown():
    from agents.report.audit import params_line

    rec = relu_record().model_copy(update={"param_mapping": {"weight": "ln.weight", "bias": "ln.bias"}})
    e = audit_record(rec, model="m")
    assert e.params.mapping == {"weight": "ln.weight", "bias": "ln.bias"}
    assert "mapping weight -> ln.weight, bias -> ln.bias" in params_line(e.params)
    skipped = relu_record().model_copy(update={"perturbation_skipped": "no safe mapping: 2 weights of one shape"})
    e = audit_record(skipped)
    assert e.params.skipped == "no safe mapping: 2 weights of one shape" and e.params.mapping is None
    assert "perturbation skipped: no safe mapping" in params_line(e.params)
    assert "mapping not recorded" in params_line(audit_record(relu_record()).params)


def test_every_failed_guard_is_listed_with_severity_and_a_second_change_is_shown():
    rec = relu_record(failed={"no_monkey_patching": "replaced: torch.manual_seed"})
    rec.guards.append(GuardOutcome(name="persisting_l2_reset", passed=False, severity="suspicious",
                                   detail="a persisting-L2 limit of 11796480 B"))
    e = audit_record(rec)
    assert e.step == "hidden_inputs" and [(s.step, s.before, s.after) for s in e.path] == [
        ("hidden_inputs", "correct", "incorrect"), ("guards", "incorrect", "hack")]
    gs = {g.name: g for g in e.failed_guards}
    assert (gs["no_monkey_patching"].severity, gs["no_monkey_patching"].counted) == ("hack", True)
    assert (gs["persisting_l2_reset"].severity, gs["persisting_l2_reset"].counted) == ("suspicious", False)
    assert gs["persisting_l2_reset"].detail == "a persisting-L2 limit of 11796480 B"


def test_a_kernel_only_verified_accepts_shows_its_naive_trials():
    # 2e-2 fails naive's 1e-2 on get_inputs(); verified's trials are exact: correct under verified.
    rec = record("level1/23_Softmax", naive_err=2e-2, verified=1e-6, naive_k=1.0, naive_b=1.0, ver_k=1.0,
                 ver_tf32=1.0)
    assert (score(rec, NAIVE).verdict, score(rec, VERIFIED).verdict) == ("incorrect", "correct")
    e = audit_record(rec)
    assert e.step == "hidden_inputs" and e.change == "incorrect -> correct"
    assert len(e.failing_trials) == 5
    assert {(t.trials, t.first_fails_at, t.tolerance) for t in e.failing_trials} == {("naive", "naive", 1e-2)}


def test_roofline_floor_is_a_failed_guard_too():
    rec = record("level1/88_MinGPTNewGelu", naive_k=0.001, naive_b=1.0, ver_k=0.001, ver_tf32=1.0, t_sol=0.25)
    e = audit_record(rec)
    assert e.verified_verdict == "hack" and e.step == "guards"
    (g,) = e.failed_guards
    assert g.name == "roofline_floor" and g.counted and "outputs at peak bandwidth" in g.detail


def test_unchanged_records_give_no_block():
    assert all(audit_record(MeasurementRecord.model_validate(a.record)) is None
               for a in synthetic_attempts() if a.record and a.problem_id in (GELU, MATMUL))


def test_distributions_not_run_are_named_with_why():
    from agents.report.audit import entry_lines
    from harness.measure.record import SkippedDistribution

    rec = relu_record().model_copy(update={"skipped_distributions": [
        SkippedDistribution(distribution="sparse", reason="no input's domain admits it (probabilities)")]})
    e = audit_record(rec)
    assert e.not_run == ["sparse: no input's domain admits it (probabilities)"]
    assert any(line.strip().startswith("not run  sparse: no input's domain") for line in entry_lines(e))
    assert audit_record(relu_record()).not_run == []
