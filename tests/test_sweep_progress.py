"""Issue 20, item 6: the sweep's live line at 80 columns keeps bar, count, elapsed time, ETA and cost (the status
text gives way), and the run ends with a line saying where the results are and how to open the report."""

from __future__ import annotations

import io
import re
import time
import types

from agents.progress import RunSummary, SweepProgress, print_summary


class Spend:
    total_usd = 0.1234


class Executor:
    def stats(self):
        return types.SimpleNamespace(building=2, queued_builds=3, evaluating=1, queued_evals=4)


def test_live_line_at_80_columns_keeps_bar_count_time_eta_and_cost(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = io.StringIO()
    p = SweepProgress(13, enabled=True, protocol="verified", executor=Executor(), spend=Spend(), stream=out)
    with p:
        for verdict in ("correct", "incorrect", "compile_error", "runtime_error", "hack", "timeout"):
            p.tally[verdict] += 3
        p.turns, p.done = 17, 5
    line = out.getvalue().rstrip("\n").splitlines()[-1]
    assert len(line) <= 80
    assert "━" in line  # the bar
    assert "5/13" in line and re.search(r"\d:\d\d:\d\d", line) and "ETA" in line and "$0.12" in line
    assert line.endswith("…")  # the verdict tally is what gets shortened


def test_eta_is_the_pace_so_far():
    p = SweepProgress(13, enabled=False, stream=io.StringIO())
    assert p.eta() == "ETA -"
    p._started = time.monotonic() - 100
    p.done = 5
    assert p.eta() == "ETA 0:02:40"  # 20 s a conversation, 8 left
    p.done = 13
    assert p.eta() == "ETA 0:00:00"


def test_closing_line_says_where_the_results_are_and_how_to_open_them():
    out = io.StringIO()
    print_summary(RunSummary(run_dir="runs/demo"), ["naive", "verified"], stream=out)
    last = out.getvalue().strip().splitlines()[-1]
    assert "results: runs/demo/" in last and "python -m agents.report runs/demo" in last and "--html" in last


def test_the_per_conversation_line_shows_no_speedup_beside_a_wrong_verdict():
    out = io.StringIO()
    p = SweepProgress(2, enabled=False, stream=out)
    task = types.SimpleNamespace(model="demo", strategy="one_shot", problem=types.SimpleNamespace(id="level1/9_x"),
                                 sample=0)
    last = types.SimpleNamespace(turn=3, feedback_kind="", results={
        "naive": {"verdict": "incorrect", "speedup": 1299.8}, "verified": {"verdict": "correct", "speedup": 2.5}})
    p.on_sample(task, "max_turns", last)
    line = out.getvalue()
    assert "naive incorrect," in line and "1299" not in line and "verified correct 2.50x" in line
