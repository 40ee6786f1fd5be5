"""Issue 33: the report as a newcomer meets it. It fits an 80-column terminal without cutting a word (a table too
wide is split by columns), says at its top when most speedups are noisy, refuses bad input with one line before
writing anything, restricts --compare to the problems both runs have, and exports its per-attempt table."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from agents.report import build_report
from agents.report.__main__ import main as cli
from agents.report.text import noisy_warning, print_report
from agents.store import RunStore


def render(rep, width: int) -> str:
    out = io.StringIO()
    print_report(rep, Console(file=out, width=width, force_terminal=False, color_system=None))
    return out.getvalue()


def words(text: str) -> set[str]:
    text = re.sub(r"\(\d+/\d+\)", "", text)  # a split table's part numbers
    return set(re.findall(r"[^\s│┃┏┓┗┛┡┩┠┨━─┳┻╇╋┼└┘┌┐├┤┬┴]+", text))


def test_report_fits_80_columns_and_cuts_no_word(synthetic_report):
    narrow, wide = render(synthetic_report, 80), render(synthetic_report, 1000)
    assert max(map(len, narrow.splitlines())) <= 80
    # Every word of the narrow report is a word of the wide one (rich's own cuts, 'verifi…', are not).
    assert words(narrow) - words(wide) == set(), sorted(words(narrow) - words(wide))[:10]
    for needed in ("hidden_inputs", "level1/9_Tall_skinny_matrix_multiplication_", "geomean", "verified"):
        assert needed in narrow


def test_a_table_too_wide_is_split_repeating_its_naming_columns():
    from rich.table import Table

    from agents.tables import fit

    t = Table(title="wide")
    for c in ("system", "level", *(f"figure {i}" for i in range(12))):
        t.add_column(c)
    t.add_row("gpt-5", "1", *(f"{i}.00x [{i}.0-{i}.1]" for i in range(12)))
    parts = fit(t, 80, keys=2)
    assert len(parts) > 1
    seen = []
    for p in parts:
        heads = [c.header for c in p.columns]
        assert heads[:2] == ["system", "level"]
        seen += heads[2:]
        out = io.StringIO()
        Console(file=out, width=80).print(p)
        assert max(map(len, out.getvalue().splitlines())) <= 80 and "…" not in out.getvalue()
    assert seen == [f"figure {i}" for i in range(12)]  # every column once, in order
    assert fit(t, 1000, keys=2) == [t]


def test_a_warning_heads_the_report_when_most_speedups_are_noisy(synthetic_report):
    assert noisy_warning(synthetic_report) is None  # the synthetic run's timings are tight
    kernels = []
    for k in synthetic_report.kernels:
        noise = {p: ["interval spans x1.9"] for p, v in k.final.verdicts.items() if v == "correct"}
        final = k.final.model_copy(update={"noise": noise})
        kernels.append(k.model_copy(update={"final": final}))
    noisy = synthetic_report.model_copy(update={"kernels": kernels})
    warn = noisy_warning(noisy)
    assert warn and warn.startswith("warning:") and "noisy" in warn
    first = render(noisy, 200).splitlines()[0]
    assert first.startswith("warning:")
    from agents.report.html import render_html

    assert warn in render_html(noisy, plots={}) and warn not in render_html(synthetic_report, plots={})


def test_sweep_summary_fits_80_columns():
    from agents.progress import ProtocolSummary, RunSummary, SummaryRow, print_summary

    row = SummaryRow(model="openai-compatible:qwen3-coder@localhost", strategy="hardware_aware", problems=250,
                     attempts=750, cost_usd=12.5,
                     protocols={p: ProtocolSummary(correct=120, fast_1=0.31, geomean_speedup=1.234, geomean_n=120)
                                for p in ("naive", "verified")})
    out = io.StringIO()
    print_summary(RunSummary(run_dir="runs/20260101-000000-qwen3-coder", rows=[row]), ["naive", "verified"],
                  stream=out)
    text = out.getvalue()
    assert max(map(len, text.splitlines())) <= 80, text
    assert "1.23x (n=120)" in text and "$12.50" in text and "…" not in text


@pytest.mark.parametrize("args, words_", [
    (["{tmp}/nope"], ["no such run directory"]),
    (["{tmp}/file"], ["is a file, not a run directory"]),
    (["{tmp}/empty"], ["has no attempts.jsonl"]),
    (["{run}", "--compare", "{tmp}/nope"], ["--compare", "no such run directory"]),
    (["{run}", "--plots", "{tmp}/file"], ["--plots", "is a file"]),
    (["{run}", "--html", "{tmp}/missing/r.html"], ["--html", "no such directory"]),
    (["{run}", "--export", "{tmp}/t.xlsx"], ["--export", ".csv, .md or .parquet"]),
    (["{run}", "--resamples", "-1"], ["--resamples"]),
])
def test_bad_input_is_one_line_before_anything_is_written(synthetic_run, tmp_path, capsys, args, words_):
    (tmp_path / "file").write_text("x")
    (tmp_path / "empty").mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    assert cli([a.format(tmp=tmp_path, run=synthetic_run) for a in args]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and captured.out == "", captured
    assert all(w in err[0] for w in words_), err
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert sorted(p.name for p in (tmp_path / "empty").iterdir()) == []


def test_compare_of_runs_over_different_problems_counts_the_shared_ones(synthetic_run, tmp_path):
    small = tmp_path / "small"
    keep = {"level1/19_ReLU", "level1/1_Square_matrix_multiplication_", "level1/23_Softmax"}
    store = RunStore(small)
    for a in RunStore(synthetic_run):
        if a.problem_id in keep:
            store.append(a)
    rep = build_report(synthetic_run, resamples=0, compare=small)
    assert rep.compare_note and "only the 3 both have" in rep.compare_note and rep.notes[0] == rep.compare_note
    alone = build_report(small, resamples=0)
    for r in rep.compare:
        assert r.a == r.b, r  # the same kernels on the same problems: A restricted to B's problems equals B
        mine = next(h for h in alone.headline if (h.model, h.level, h.protocol) == (r.model, r.level, r.protocol))
        assert r.a["attempted"] == mine.summary.attempted
    same = build_report(synthetic_run, resamples=0, compare=synthetic_run)
    assert same.compare_note is None


@pytest.mark.parametrize("suffix", [".csv", ".md", ".parquet"])
def test_export_writes_the_tables_own_figures(synthetic_run, synthetic_report, tmp_path, capsys, suffix):
    import pandas as pd

    path = tmp_path / f"attempts{suffix}"
    assert cli([str(synthetic_run), "--resamples", "0", "--headline", "--export", str(path)]) == 0
    assert f"export: {path}" in capsys.readouterr().err
    n_turns = sum(len(k.turns) for k in synthetic_report.kernels)
    if suffix == ".md":
        lines = path.read_text().splitlines()
        assert len(lines) == 2 + n_turns and lines[0].startswith("| model | strategy |")
        return
    frame = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    assert len(frame) == n_turns
    relu = frame[(frame.problem_id == "level1/19_ReLU") & frame.final].iloc[0]
    k = next(k for k in synthetic_report.kernels if k.problem_id == "level1/19_ReLU")
    assert relu.naive_verdict == k.final.verdicts["naive"] and relu.verified_verdict == k.final.verdicts["verified"]
    assert relu.naive_speedup == pytest.approx(k.final.speedups["naive"])
    wrong = frame[frame.verified_verdict != "correct"]
    assert wrong.verified_speedup.isna().all()  # no speedup beside a wrong verdict, as in the tables
