"""Runs stripped of kernel sources (benchmarks/strip_run.py) report as the original, and the committed corpus run
(benchmarks/results/corpus_run) holds no source and prints README's headline table."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from agents.report import build_headline, build_report, format_headline, render_html
from agents.report.__main__ import main as cli
from agents.report.synthetic import _attempt, record, write_synthetic_run
from agents.store import RunStore

ROOT = Path(__file__).resolve().parent.parent
CORPUS_RUN = ROOT / "benchmarks" / "results" / "corpus_run"
sys.path.insert(0, str(ROOT / "benchmarks"))

import strip_run  # noqa: E402


@pytest.fixture(scope="module")
def stripped(tmp_path_factory):
    d = tmp_path_factory.mktemp("strip")
    write_synthetic_run(d / "synth")
    n, hits = strip_run.strip_runs([d / "synth"], d / "stripped")
    assert (n, hits) == (12, [])
    return d / "synth", d / "stripped"


def test_stripped_run_holds_no_source_or_model_text(stripped):
    src, dst = stripped
    original = (src / "attempts.jsonl").read_text()
    assert "load_inline" in original and "__global__" in original and "class ModelNew" in original
    for f in ("attempts.jsonl", "config.json"):
        text = (dst / f).read_text()
        for marker in ("load_inline", "__global__", "class ModelNew", "Here is a kernel", "Shall I write it",
                       "expected ';'"):
            assert marker not in text, (f, marker)
    for a in RunStore(dst):
        assert a.kernel_source is None and a.response == "" and a.messages == [] and a.feedback is None
    assert json.loads((dst / "config.json").read_text())["stripped"]["by"] == "benchmarks/strip_run.py"


def test_stripped_run_reports_as_the_original(stripped, capsys):
    src, dst = stripped
    a, b = build_report(src, resamples=0), build_report(dst, resamples=0)
    assert [k.final.verdicts for k in a.kernels] == [k.final.verdicts for k in b.kernels]
    assert "no_code" in {v for k in b.kernels for v in k.final.verdicts.values()}  # the prose-only answer still is
    assert [s.figures for s in a.headline_view.systems[0].subsets] == [s.figures for s in b.headline_view.systems[0].subsets]
    assert format_headline(a.headline_view).replace("synth", "X", 1) == format_headline(b.headline_view).replace(
        "stripped", "X", 1)
    html = render_html(b, plots={})
    assert "kernel source not stored in this run" in html
    assert cli([str(dst), "--headline", "--resamples", "0"]) == 0
    assert "Headline — run stripped" in capsys.readouterr().out


def test_strip_refuses_a_copy_with_source_left(tmp_path):
    src = tmp_path / "src"
    store = RunStore(src)
    r = record("level1/901_A", naive_k=0.5, naive_b=1.0, ver_k=0.5, ver_tf32=1.0)
    r.guards[0].detail = "saw __global__ void k() in the output"  # a field the script does not know to drop
    store.append(_attempt("m", "level1/901_A", 1, r))
    n, hits = strip_run.strip_runs([src], tmp_path / "dst")
    assert n == 1 and hits and "__global__" in hits[0] and ".record.guards[0].detail" in hits[0]
    assert not (tmp_path / "dst").exists()


def test_merged_runs_report_the_later_measurement_and_name_every_problem(tmp_path):
    """Two sweeps merged into one committed run (the corpus run grows this way): a problem both measured reads as
    the later run has it, and the config names every source's problems and models."""
    first, second = tmp_path / "first", tmp_path / "second"
    RunStore(first).append(_attempt("m", "level1/901_A", 1, record("level1/901_A", naive_k=0.5, naive_b=1.0,
                                                                   ver_k=0.5, ver_tf32=1.0)))
    RunStore(first).append(_attempt("m", "level1/902_B", 1, record("level1/902_B", naive_k=0.5, naive_b=1.0,
                                                                   ver_k=0.5, ver_tf32=1.0)))
    RunStore(second).append(_attempt("m", "level1/902_B", 1, record("level1/902_B", naive_k=0.5, naive_b=1.0,
                                                                    ver_k=2.0, ver_tf32=1.0)))
    (first / "config.json").write_text(json.dumps({"problems": ["1/901", "1/902"], "models": ["m"]}))
    (second / "config.json").write_text(json.dumps({"problems": ["1/902", "1/903"], "models": ["m", "n"]}))
    n, hits = strip_run.strip_runs([first, second], tmp_path / "merged")
    assert (n, hits) == (3, [])
    config = json.loads((tmp_path / "merged" / "config.json").read_text())
    assert config["problems"] == ["1/901", "1/902", "1/903"] and config["models"] == ["m", "n"]
    assert config["stripped"]["runs"] == 2
    kernels = {k.problem_id: k for k in build_report(tmp_path / "merged", resamples=0).kernels}
    assert set(kernels) == {"level1/901_A", "level1/902_B"}
    assert kernels["level1/901_A"].final.verdicts["verified"] == "correct"
    assert kernels["level1/902_B"].final.speedups["verified"] < 1  # the second run's 2.0 ms kernel, not the first's 0.5


# ---- the committed corpus run ------------------------------------------------------------------------------------


def test_committed_corpus_run_holds_no_kernel_source():
    for f in ("attempts.jsonl", "config.json"):
        text = (CORPUS_RUN / f).read_text()
        for marker in strip_run.MARKERS:
            assert marker not in text, (f, marker)
    assert all(a.kernel_source is None and a.response == "" and a.kernel_hash for a in RunStore(CORPUS_RUN))


def test_committed_judge_answers_are_labelled_plumbing_and_hold_no_source():
    from agents.audit import read_judgements

    text = (CORPUS_RUN / "audit_judge.jsonl").read_text()
    for marker in strip_run.MARKERS:
        assert marker not in text, marker
    entries = read_judgements(CORPUS_RUN)  # benchmarks/audit_plumbing.py: the fake server's canned answer, replayed
    assert entries and {e.judge for e in entries} == {"replay:benchmarks/results/corpus_run_audit_plumbing"}
    assert all(e.status == "judged" and e.reason.startswith("FAKE canned answer") for e in entries)


def test_committed_corpus_run_prints_readmes_headline():
    view = build_headline(CORPUS_RUN, resamples=0)
    assert [s.subset for s in view.systems[0].subsets] == ["all", "no_degenerate", "unflagged"]
    out = format_headline(view)
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Headline"):readme.index("## Quickstart")]
    table = re.search(r"^\| problems .*?(?=\n\n)", section, re.S | re.M)
    assert table and table.group(0) in out, "README's headline table is not what the report prints for corpus_run"
    assert "python -m agents.report benchmarks/results/corpus_run --headline" in section
