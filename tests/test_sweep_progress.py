"""Issue 20, item 6: the sweep's live line at 80 columns keeps bar, count, elapsed time, ETA and cost (the status
text gives way), and the run ends with a line saying where the results are and how to open the report."""

from __future__ import annotations

import io
import re
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


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _task(pid: str):
    return types.SimpleNamespace(model="m", strategy="s", problem=types.SimpleNamespace(id=pid), sample=0)


def test_eta_is_each_levels_pace_so_far_and_skips_take_no_time():
    clock = Clock()
    p = SweepProgress(13, enabled=False, stream=io.StringIO(), levels={"level1": 10, "level3": 3}, clock=clock)
    assert p.eta() == "ETA -"
    for _ in range(2):  # a resumed run's conversations done before: no time, no pace
        p.on_sample(_task("level1/1_a"), "skipped")
    assert p.eta() == "ETA -"
    for _ in range(4):  # level 1 at 20 s a conversation
        clock.now += 20
        p.on_sample(_task("level1/19_b"), "max_turns")
    # 4 level-1 left at 20 s, 3 level-3 not begun: at the pace of all (20 s)
    assert p.eta() == "ETA 0:02:20"
    clock.now += 200  # one level-3 architecture takes 200 s
    p.on_sample(_task("level3/5_c"), "correct")
    assert p.eta() == f"ETA 0:{(4 * 20 + 2 * 200) // 60:02d}:{(4 * 20 + 2 * 200) % 60:02d}"
    assert p.levels_text() == "level1 6/10, level3 1/3"
    assert "level1 6/10" in p.status()
    for _ in range(6):
        p.on_sample(_task("level1/1_a"), "correct")
    p.on_sample(_task("level3/5_c"), "correct")
    p.on_sample(_task("level3/5_c"), "correct")
    assert p.eta() == "ETA 0:00:00"


def test_each_plain_line_carries_the_eta():
    out, clock = io.StringIO(), Clock()
    p = SweepProgress(3, enabled=False, stream=out, levels={"level1": 3}, clock=clock)
    clock.now += 30
    p.on_sample(_task("level1/1_a"), "correct")
    assert out.getvalue().startswith("[1/3 ETA 0:01:00] m s level1/1_a")


def test_closing_line_says_where_the_results_are_and_how_to_open_them():
    out = io.StringIO()
    print_summary(RunSummary(run_dir="runs/demo"), ["naive", "verified"], stream=out)
    text = out.getvalue()
    closing = text[text.index("results: "):].split()
    assert closing[:2] == ["results:", "runs/demo/"]
    assert " ".join(closing[closing.index("report:"):][:5]) == "report: python -m agents.report runs/demo"
    assert "--html" in closing


def test_closing_lines_fit_80_columns_with_the_report_command_whole(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = io.StringIO()
    run_dir = "runs/20261203-101500-claude-opus-4-5+gpt-5"
    print_summary(RunSummary(run_dir=run_dir), ["naive", "verified"], stream=out)
    lines = out.getvalue().splitlines()
    assert max(map(len, lines)) <= 80
    assert any(f"python -m agents.report {run_dir}" in ln for ln in lines)


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
