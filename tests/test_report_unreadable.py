"""Issue 18 item 5: one NaN output must not kill the report; a record that does not load costs its row only."""

from __future__ import annotations

import json
import math

import pytest
import torch

from agents.report import build_report
from agents.report.__main__ import main as cli
from agents.report.synthetic import write_synthetic_run
from agents.store import Attempt, RunStore
from harness import NAIVE, VERIFIED, MeasurementRecord, score
from harness.measure.compare import error_stats
from harness.measure.record import TrialResult


def nan_record(problem_id: str = "level1/19_ReLU") -> MeasurementRecord:
    """What the harness stores for a kernel whose output holds NaN (level3/3 of the replay)."""
    expected = torch.ones(4)
    e = error_stats(torch.tensor([1.0, math.nan, 1.0, 1.0]), expected)
    assert math.isinf(e.max_abs) and e.nonfinite
    r = MeasurementRecord(candidate_hash="nan", problem_id=problem_id, size="small", device="cpu")
    r.naive_trials = [TrialResult(distribution="naive", seed=i, params="default", error=e) for i in range(5)]
    r.verified_trials = [TrialResult(distribution="base", seed=i, params="perturbed", error=e,
                                     tf32_baseline_max_abs=math.nan) for i in range(5)]
    return r


def attempt_for(record: dict | None, problem_id: str, number: int) -> Attempt:
    return Attempt(model="synth", problem_id=problem_id, level=1, number=number, kernel_source="x = 1",
                   record=record)


def test_nan_record_round_trips_through_the_store(tmp_path):
    store = RunStore(tmp_path / "run")
    store.append(attempt_for(nan_record().model_dump(mode="json"), "level1/19_ReLU", 19))
    text = store.path.read_text()
    assert '"max_abs":null' not in text
    assert '"max_abs":"Infinity"' in text and '"tf32_baseline_max_abs":"NaN"' in text
    json.loads(text)  # still strict JSON
    (a,) = list(store)
    rec = MeasurementRecord.model_validate(a.record)
    assert math.isinf(rec.naive_trials[0].error.max_abs) and math.isnan(rec.verified_trials[0].tf32_baseline_max_abs)
    assert score(rec, NAIVE).verdict == "incorrect" and score(rec, VERIFIED).verdict == "incorrect"
    assert rec.model_dump_json() == MeasurementRecord.model_validate_json(rec.model_dump_json()).model_dump_json()


def test_old_null_error_stats_load_as_nonfinite():
    data = json.loads(nan_record().model_dump_json())
    for t in data["naive_trials"] + data["verified_trials"]:  # as written before: inf -> null
        for k in ("max_abs", "max_rel", "mean_abs", "min_tolerance"):
            t["error"][k] = None
    rec = MeasurementRecord.model_validate(data)
    assert rec.naive_trials[0].error.max_abs == math.inf
    assert score(rec, VERIFIED).verdict == "incorrect"


@pytest.fixture
def damaged_run(tmp_path):
    d = tmp_path / "damaged"
    write_synthetic_run(d)
    store = RunStore(d)
    n_good = len(list(store))
    # 1. a record with null error statistics, as every NaN output was stored before the fix
    old = json.loads(nan_record("level1/900_NaN").model_dump_json())
    for t in old["naive_trials"] + old["verified_trials"]:
        for k in ("max_abs", "max_rel", "mean_abs", "min_tolerance"):
            t["error"][k] = None
    store.append(attempt_for(old, "level1/900_NaN", 900))
    # 2. a record that no reading can repair (a status the harness never writes)
    bad = json.loads(nan_record("level1/901_Bad").model_dump_json())
    bad["status"] = "exploded"
    store.append(attempt_for(bad, "level1/901_Bad", 901))
    # 3. a garbage line
    with open(store.path, "a") as f:
        f.write("this is not { json\n")
    return d, n_good


def test_report_survives_null_stats_and_garbage(damaged_run):
    d, n_good = damaged_run
    rep = build_report(d, resamples=0)
    assert rep.n_attempts == n_good + 2  # the garbage line is the only row left out
    k = next(k for k in rep.kernels if k.problem_id == "level1/900_NaN")
    assert k.final.verdicts == {"naive": "incorrect", "verified": "incorrect"}
    bad = next(k for k in rep.kernels if k.problem_id == "level1/901_Bad")
    assert bad.final.verdicts == {"naive": "unreadable", "verified": "unreadable"}
    lines = [u.line for u in rep.unreadable]
    assert lines == [n_good + 2, n_good + 3]
    assert rep.unreadable[0].key and "level1/901_Bad" in rep.unreadable[0].key and "status" in rep.unreadable[0].reason
    assert rep.unreadable[1].key is None and "json" in rep.unreadable[1].reason.lower()
    assert any("could not be read" in n for n in rep.notes)
    row = rep.row("synth", "verified")
    assert row.summary.attempted == 13  # 11 synthetic problems + the two new ones


def test_report_cli_names_unreadable_rows(damaged_run, capsys, tmp_path):
    d, n_good = damaged_run
    assert cli([str(d), "--resamples", "0"]) == 0
    out = capsys.readouterr().out
    assert "2 unreadable" in out and f"line {n_good + 3}" in out
    assert cli([str(d), "--json", "--resamples", "0"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["unreadable"]) == 2
    html = tmp_path / "r.html"
    assert cli([str(d), "--resamples", "0", "--html", str(html)]) == 0
    assert "could not be read" in html.read_text()


def test_eval_cli_json_is_strict_and_round_trips_a_nan_record():
    from harness.eval import render_json
    from harness.runner import Evaluation
    from harness.scoring.protocols import score_all

    rec = nan_record()
    text = render_json(Evaluation(record=rec, results=score_all(rec)))

    def no_constants(name):
        raise AssertionError(f"bare {name} in the JSON")

    data = json.loads(text, parse_constant=no_constants)
    back = MeasurementRecord.model_validate(data["record"])
    assert math.isinf(back.naive_trials[0].error.max_abs)
    assert data["protocols"]["verified"]["verdict"] == "incorrect"


def test_a_torn_last_line_is_moved_out_once_not_warned_about_forever(tmp_path, capsys):
    """Issue 33: a crash mid-write left a torn last line that every report warned about again."""
    d = tmp_path / "run"
    write_synthetic_run(d)
    good = (d / "attempts.jsonl").read_bytes()
    n_lines = good.count(b"\n")
    torn = good.splitlines()[0][:57]  # the start of a record, cut off: no newline
    with open(d / "attempts.jsonl", "ab") as f:
        f.write(torn)
    rep = build_report(d, resamples=0)
    assert rep.notes[0].startswith(f"attempts.jsonl line {n_lines + 1} was torn") and "attempts.torn" in rep.notes[0]
    assert rep.unreadable == []
    assert (d / "attempts.jsonl").read_bytes() == good
    assert (d / "attempts.torn").read_bytes() == torn + b"\n"  # kept, as it was
    again = build_report(d, resamples=0)
    assert not any("torn" in n for n in again.notes) and again.n_attempts == rep.n_attempts


def test_an_append_after_a_torn_line_moves_it_out(tmp_path):
    store = RunStore(tmp_path / "run")
    a = attempt_for(None, "level1/19_ReLU", 19)
    store.append(a)
    with open(store.path, "ab") as f:
        f.write(b'{"model": "x", "probl')
    store.append(a.model_copy(update={"turn": 2}))
    assert [x.turn for x in store] == [1, 2] and store.unreadable == []
    assert (tmp_path / "run" / "attempts.torn").read_bytes() == b'{"model": "x", "probl\n'
    # a whole record missing only its newline is kept, not moved
    with open(store.path, "ab") as f:
        f.write(a.model_copy(update={"turn": 3}).model_dump_json().encode())
    assert store.repair_torn() is None
    assert [x.turn for x in store] == [1, 2, 3]
