"""agents.report on a synthetic run: figures recomputed independently from the raw records, the
waterfall naming the responsible component, ablations, CLI."""

from __future__ import annotations

import json
import math

import pytest

from agents.report import build_report, render_html, save_plots
from agents.report import waterfall as W
from agents.report.__main__ import main as cli
from agents.report.synthetic import EXPECTED, synthetic_attempts
from agents.store import RunStore
from harness import NAIVE, VERIFIED, MeasurementRecord, score


def by_hand(run_dir, protocol):
    """fast_1, correct count and geomean from raw records: final turn, one sample, N = problems seen."""
    last = {}
    for a in RunStore(run_dir):
        if a.problem_id not in last or a.turn > last[a.problem_id].turn:
            last[a.problem_id] = a
    n = len(last)
    speedups, fast1 = [], 0
    for a in last.values():
        if a.record is None:
            continue
        r = score(MeasurementRecord.model_validate(a.record), protocol)
        if r.verdict == "correct":
            speedups.append(r.speedup)
            fast1 += r.speedup > 1
    g = math.exp(sum(math.log(s) for s in speedups) / len(speedups))
    return n, len(speedups), fast1 / n, g


@pytest.mark.parametrize("proto", [NAIVE, VERIFIED])
def test_headline_matches_raw_records(synthetic_run, synthetic_report, proto):
    n, correct, fast1, g = by_hand(synthetic_run, proto)
    row = synthetic_report.row("synth", proto.name)
    assert row.summary.attempted == n == 11
    assert row.summary.correct == correct
    assert row.summary.fast_p["fast_1"].value == pytest.approx(fast1)
    assert row.summary.geomean_speedup.value == pytest.approx(g)
    assert row.summary.geomean_speedup.n == correct
    lo, hi = row.summary.geomean_speedup.lo, row.summary.geomean_speedup.hi
    assert lo <= g <= hi


def test_headline_constants_of_the_synthetic_run(synthetic_report):
    naive, ver = synthetic_report.row("synth", "naive").summary, synthetic_report.row("synth", "verified").summary
    assert (naive.correct, ver.correct) == (10, 6)
    assert naive.fast_p["fast_1"].value == pytest.approx(9 / 11)
    assert ver.fast_p["fast_1"].value == pytest.approx(2 / 11)
    # verified correct: matmul 0.4, gelu 2, scalar 0.8, leaky 1.25, tanh 1.0, gemm 0.9
    assert ver.geomean_speedup.value == pytest.approx((0.4 * 2 * 0.8 * 1.25 * 1.0 * 0.9) ** (1 / 6))
    # memory: gemm (1.5x peak) is the only correct kernel with higher memory under verified
    assert ver.higher_memory_share.value == pytest.approx(1 / 6)
    assert naive.accepted_hacks == 1 and ver.accepted_hacks == 0
    assert ver.hack_rate_by_guard["timed_outputs_correct"][1] == 1
    lv2 = synthetic_report.row("synth", "verified", level="2").summary
    assert lv2.attempted == 1 and lv2.fast_p["fast_1"].value == 0.0
    assert synthetic_report.universe == {"1": 10, "2": 1, "all": 11}


def test_waterfall_ends_at_verified_and_covers_every_field():
    chain = W.steps()
    assert chain[0][2] == NAIVE
    assert W.same_scoring(chain[-1][2], VERIFIED)
    assert W.uncovered_fields() == []
    for (_, _, a), (_, _, b) in zip(chain, chain[1:], strict=False):
        assert not W.same_scoring(a, b), "every step must change something"


def test_waterfall_steps_move_the_figures(synthetic_report):
    wf = synthetic_report.waterfall("synth")
    steps = {s.step: s for s in wf.steps}
    assert [s.step for s in wf.steps] == ["naive", *[c.step for c in W.COMPONENTS]]
    row = synthetic_report.row
    assert steps["naive"].geomean.value == pytest.approx(row("synth", "naive").summary.geomean_speedup.value)
    assert wf.steps[-1].geomean.value == pytest.approx(row("synth", "verified").summary.geomean_speedup.value)
    assert steps["timing"].fast_lost == 1 and steps["timing"].verdicts_changed == 0  # the warm-L2 scalar mul
    assert steps["tf32_baseline"].fast_lost == 2  # matmul and gemm
    assert steps["tf32_baseline"].verdicts_changed == 0
    for s in ("hidden_inputs", "tolerance", "strict_output", "guards"):
        assert steps[s].became_incorrect == 1, s
    prod = 1.0
    for s in wf.steps[1:]:
        prod *= s.d_geomean
    assert prod * wf.steps[0].geomean.value == pytest.approx(wf.steps[-1].geomean.value)


@pytest.mark.parametrize("pid", [p for p, (_, step) in EXPECTED.items() if step])
def test_waterfall_names_the_responsible_component(synthetic_report, pid):
    k = synthetic_report.change(pid)
    expected = EXPECTED[pid][1]
    named = k.verdict_changed_at or k.fast_1_changed_at
    assert named == expected, k.explanation
    assert expected in k.explanation


def test_identity_relu_fails_on_the_negative_distribution(synthetic_report):
    k = synthetic_report.change("level1/19_ReLU")
    assert k.verdict_changed_at == "hidden_inputs" and k.verdict_change == "correct -> incorrect"
    step = next(s for s in k.steps if s.step == "hidden_inputs")
    assert step.failing_distributions == ["neg"]
    assert any(r.startswith("neg") for r in k.verdict_reasons)


def test_tf32_matmul_speedup_collapses_at_the_tf32_step(synthetic_report):
    k = synthetic_report.change("level1/1_Square_matrix_multiplication_")
    assert k.verdict_changed_at is None
    assert k.largest_speedup_move_at == "tf32_baseline"
    assert k.largest_speedup_factor == pytest.approx(0.4 / 3.0)
    assert k.fast_1_changed_at == "tf32_baseline"


def test_unchanged_kernels_say_so(synthetic_report):
    assert synthetic_report.change("level1/88_MinGPTNewGelu").explanation == "unchanged"


def test_by_turn_ablation(synthetic_report):
    rows = {(r.protocol, r.turn): r for r in synthetic_report.by_turn}
    # LeakyReLU: compile error at turn 1, correct at turn 2
    assert rows[("naive", 1)].correct == rows[("naive", 2)].correct - 1
    assert rows[("verified", 2)].fast_p["fast_1"] == pytest.approx(2 / 11)
    assert rows[("verified", 1)].fast_p["fast_1"] == pytest.approx(1 / 11)
    assert rows[("naive", 2)].attempted == 11


def test_best_turn_policy_prefers_a_correct_earlier_turn(tmp_path):
    atts = synthetic_attempts()
    # Add a turn 2 to the GELU thread that fails to compile: final policy loses the problem, best keeps it.
    gelu = next(a for a in atts if a.problem_id == "level1/88_MinGPTNewGelu")
    broken = next(a for a in atts if a.problem_id == "level1/20_LeakyReLU" and a.turn == 1)
    extra = gelu.model_copy(update={"turn": 2, "record": {**broken.record, "problem_id": gelu.problem_id}})
    store = RunStore(tmp_path / "r")
    for a in [*atts, extra]:
        store.append(a)
    final = build_report(store.dir, resamples=0)
    best = build_report(store.dir, resamples=0, turn_policy="best")
    assert final.row("synth", "verified").summary.correct == 5
    assert best.row("synth", "verified").summary.correct == 6


def test_strategies_and_samples_are_grouped(tmp_path):
    store = RunStore(tmp_path / "r")
    for a in synthetic_attempts():
        store.append(a)
        store.append(a.model_copy(update={"strategy": "few_shot"}))
    # a second model that only attempted one problem is charged the full N
    relu = next(a for a in synthetic_attempts() if a.problem_id == "level1/88_MinGPTNewGelu")
    store.append(relu.model_copy(update={"model": "other"}))
    rep = build_report(store.dir, resamples=0)
    assert rep.strategies == ["few_shot", "zero_shot"]
    assert rep.row("synth", "verified", strategy="few_shot").summary.correct == 6
    other = rep.row("other", "verified").summary
    assert other.attempted == 11 and other.correct == 1
    assert other.fast_p["fast_1"].value == pytest.approx(1 / 11)


def test_samples_are_best_of_k(tmp_path):
    store = RunStore(tmp_path / "r")
    atts = synthetic_attempts()
    for a in atts:
        store.append(a)
    # sample 1 of the softmax problem: same record as the honest GELU (correct, 2x)
    gelu = next(a for a in atts if a.problem_id == "level1/88_MinGPTNewGelu")
    store.append(gelu.model_copy(update={"problem_id": "level1/23_Softmax", "number": 23, "sample": 1}))
    rep = build_report(store.dir, resamples=0)
    assert rep.row("synth", "verified").summary.correct == 7
    assert rep.row("synth", "verified").summary.attempted == 11


def test_json_cli_and_compare(synthetic_run, tmp_path, capsys):
    assert cli([str(synthetic_run), "--json", "--resamples", "50", "--compare", str(synthetic_run),
                "--plots", str(tmp_path / "p")]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["run"] == "synth"
    assert {r["protocol"] for r in data["headline"]} == {"naive", "verified"}
    assert data["compare"] and all(r["a"] == r["b"] for r in data["compare"])
    # counts stay counts (a float field printed "11.0 correct" in the side-by-side table)
    assert all(isinstance(r["a"]["correct"], int) and isinstance(r["a"]["attempted"], int) for r in data["compare"])
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == sorted(
        ["fast_p.png", "speedup_scatter.png", "speedup_hist.png", "sol_hist.png", "waterfall.png"])


def test_text_cli(synthetic_run, capsys):
    assert cli([str(synthetic_run), "--resamples", "20"]) == 0
    out = capsys.readouterr().out
    assert "Waterfall" in out and "hidden_inputs" in out and "level1/19_ReLU" in out


def test_missing_run_is_an_error(tmp_path, capsys):
    assert cli([str(tmp_path / "nope")]) == 2
    assert not (tmp_path / "nope").exists()


def test_plots_are_png(synthetic_report, tmp_path):
    for p in save_plots(synthetic_report, tmp_path):
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_html_escapes_everything_from_the_run(synthetic_report):
    html = render_html(synthetic_report)
    assert "&lt;script&gt;alert(&#34;escaped?&#34;)&lt;/script&gt;" in html
    assert '<script>alert("escaped?")' not in html
    assert html.count("<script>") == 1  # only the report's own filter script
    assert html.count("data:image/png;base64,") == 5
    for pid in EXPECTED:
        assert pid in html


def test_report_round_trips_through_json(synthetic_report):
    again = type(synthetic_report).model_validate_json(synthetic_report.model_dump_json())
    assert again.row("synth", "verified").summary == synthetic_report.row("synth", "verified").summary


def test_stored_results_are_ignored_records_are_rescored(tmp_path):
    store = RunStore(tmp_path / "r")
    for a in synthetic_attempts():
        lie = {"verdict": "correct", "speedup": 1000.0}
        store.append(a.model_copy(update={"results": {"naive": lie, "verified": lie}}))
    rep = build_report(store.dir, resamples=0)
    assert rep.row("synth", "verified").summary.correct == 6
    assert rep.protocols == [NAIVE.key, VERIFIED.key]


def test_every_turn_is_traced_and_the_final_one_is_the_default(synthetic_report):
    first = synthetic_report.change("level1/20_LeakyReLU", turn=1)
    assert not first.final and first.steps[0].verdict == "compile_error"
    assert synthetic_report.change("level1/20_LeakyReLU").turn == 2
    assert len(synthetic_report.kernel_changes) == 12
