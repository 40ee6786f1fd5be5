"""The headline view (python -m agents.report RUN --headline): every figure recomputed by hand on a five-problem
run, the flagged problems apart, JSON and HTML. A stripped run and the committed corpus run:
tests/test_headline_corpus.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.report import COLUMNS, build_headline, build_report, render_html
from agents.report.__main__ import main as cli
from agents.report.headline import catalog_flags, problem_flags
from agents.report.synthetic import MB, _attempt, record
from agents.store import RunStore

HIDDEN_WRONG = {"base": 0.0, "x1": 0.0, "x3": 0.0, "x0.01": 0.0, "neg": 1.0}


def _rec(pid, flags, **kw):
    r = record(pid, **kw)
    r.problem_flags = flags
    return r


def write_run(run_dir: Path) -> None:
    """Five problems (ids the built-in catalog does not hold, so only the records' flags count):

    ======  ============  =================  ==================  ===========
    id      flags         naive              verified            peak memory
    ======  ============  =================  ==================  ===========
    901_A   -             correct 2.0x       correct 1.6x        1.5x
    902_B   degenerate    correct 10x        correct 8x          0.5x
    903_C   -             correct 1.25x      incorrect (hidden)  0.5x
    904_D   training_mode correct 0.5x       correct 0.4x        2.0x
    905_E   -             no code            no code             -
    ======  ============  =================  ==================  ===========
    """
    store = RunStore(run_dir)
    store.write_config({"models": ["m"], "strategies": ["zero_shot"]})
    recs = [
        _rec("level1/901_A", [], naive_k=0.5, naive_b=1.0, ver_k=0.5, ver_tf32=0.8, kernel_peak=150 * MB),
        _rec("level1/902_B", ["degenerate"], naive_k=0.1, naive_b=1.0, ver_k=0.1, ver_tf32=0.8),
        _rec("level1/903_C", [], verified=HIDDEN_WRONG, naive_k=0.8, naive_b=1.0, ver_k=0.8, ver_tf32=0.8),
        _rec("level2/904_D", ["training_mode"], naive_k=2.0, naive_b=1.0, ver_k=2.0, ver_tf32=0.8,
             kernel_peak=200 * MB),
    ]
    for r in recs:
        store.append(_attempt("m", r.problem_id, 1, r))
    store.append(_attempt("m", "level2/905_E", 1, None, response="Plan: fuse it. Shall I?"))


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("runs") / "five"
    write_run(d)
    return d


@pytest.fixture(scope="module")
def view(run):
    return build_headline(run, resamples=0)


def test_fast_p_geomeans_and_memory_over_all_problems(view):
    row = view.system("m").subset("all")
    assert (row.problems, row.kernels, row.excluded) == (5, 5, [])
    naive, ver = row.figures["naive"], row.figures["verified"]
    assert naive["correct"] == 4 and ver["correct"] == 3
    # fast_p: share of all N = 5 problems, correct and strictly faster than p (2.0x is not fast_2)
    assert [naive[k] for k in ("fast_0", "fast_1", "fast_1.5", "fast_2")] == pytest.approx([4 / 5, 3 / 5, 2 / 5, 1 / 5])
    assert [ver[k] for k in ("fast_0", "fast_1", "fast_1.5", "fast_2")] == pytest.approx([3 / 5, 2 / 5, 2 / 5, 1 / 5])
    # geomean over correct excludes incorrect problems; over all counts them (and the one without code) at 1.0x
    assert naive["geomean_correct"] == pytest.approx((2 * 10 * 1.25 * 0.5) ** (1 / 4))
    assert naive["geomean_all"] == pytest.approx((2 * 10 * 1.25 * 0.5 * 1.0) ** (1 / 5))
    assert ver["geomean_correct"] == pytest.approx((1.6 * 8 * 0.4) ** (1 / 3))
    assert ver["geomean_all"] == pytest.approx((1.6 * 8 * 0.4 * 1.0 * 1.0) ** (1 / 5))
    assert view.incorrect_as == 1.0
    # peak memory above the baseline's: 901_A and 904_D, of the correct kernels
    assert naive["higher_memory_share"] == pytest.approx(2 / 4)
    assert ver["higher_memory_share"] == pytest.approx(2 / 3)


def test_degenerate_and_flagged_problems_shown_apart(view):
    sys_ = view.system("m")
    nd, uf = sys_.subset("no_degenerate"), sys_.subset("unflagged")
    assert nd.excluded == ["level1/902_B"] and nd.problems == 4
    assert uf.excluded == ["level1/902_B", "level2/904_D"] and uf.problems == 3
    n, v = nd.figures["naive"], nd.figures["verified"]
    assert (n["correct"], v["correct"]) == (3, 2)
    assert n["fast_1"] == pytest.approx(2 / 4) and v["fast_1"] == pytest.approx(1 / 4)
    assert n["geomean_correct"] == pytest.approx((2 * 1.25 * 0.5) ** (1 / 3))
    assert n["geomean_all"] == pytest.approx((2 * 1.25 * 0.5) ** (1 / 4))
    assert v["geomean_correct"] == pytest.approx(0.8) and v["geomean_all"] == pytest.approx(0.64 ** (1 / 4))
    assert v["higher_memory_share"] == 1.0
    n, v = uf.figures["naive"], uf.figures["verified"]
    assert n["fast_1"] == pytest.approx(2 / 3) and v["fast_1"] == pytest.approx(1 / 3)
    assert n["geomean_correct"] == pytest.approx(2.5 ** 0.5) and v["geomean_all"] == pytest.approx(1.6 ** (1 / 3))
    assert [(f.problem_id, f.flags) for f in view.flagged] == [("level1/902_B", ["degenerate"]),
                                                               ("level2/904_D", ["training_mode"])]
    b = view.flagged[0].results[0]
    assert b.verdicts == {"naive": "correct", "verified": "correct"}
    assert b.speedups == pytest.approx({"naive": 10.0, "verified": 8.0})


def test_the_view_is_the_reports_summary(run):
    rep = build_report(run, resamples=0)
    for p in ("naive", "verified"):
        assert rep.headline_view.system("m").subset("all").summaries[p] == rep.row("m", p).summary


def test_flags_also_come_from_the_catalog():
    pid = "level2/83_Conv3d_GroupNorm_Min_Clamp_Dropout"
    flags = problem_flags([], [pid])[pid]
    assert "degenerate" in flags and "identically zero" in flags["degenerate"]
    assert catalog_flags("level1/901_A") == {}


def test_cli_prints_the_table_and_names_the_conventions(run, capsys):
    assert cli([str(run), "--headline", "--resamples", "0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Headline — run five: naive@")
    assert "m (each cell: naive / verified)" in out
    assert "| all problems " in out and "| without degenerate (-1) " in out and "| without any flagged (-2) " in out
    assert "geomean over all (incorrect = 1.00x)" in out and "counted at 1.00x (the PyTorch reference kept)" in out
    assert "incorrect ones excluded" in out
    assert "| level1/902_B | degenerate    | correct 10.00x | correct 8.00x |" in out
    assert "| naive " in out and "| noise " in out  # the waterfall


def test_cli_json_keys(run, capsys):
    assert cli([str(run), "--headline", "--json", "--resamples", "0"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {"run", "protocols", "turn_policy", "fast_p_on", "basis", "incorrect_as", "columns", "systems", "flagged",
            "notes"} <= set(data)
    assert data["protocols"] == ["naive", "verified"]
    s = data["systems"][0]
    assert (s["model"], s["strategy"], s["precision"]) == ("m", "zero_shot", "fp32")
    assert [x["subset"] for x in s["subsets"]] == ["all", "no_degenerate", "unflagged"]
    keys = {"correct", "fast_0", "fast_1", "fast_1.5", "fast_2", "geomean_correct", "geomean_all",
            "higher_memory_share"}
    assert set(s["subsets"][0]["figures"]["verified"]) == keys == {c["key"] for c in data["columns"]}
    assert s["waterfall"][0]["step"] == "naive" and s["waterfall"][-1]["step"] == "noise"
    assert cli([str(run), "--json", "--resamples", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["headline_view"]["systems"][0]["subsets"][1]["excluded"] == ["level1/902_B"]


def test_html_carries_the_view(run):
    html = render_html(build_report(run, resamples=0), plots={})
    assert 'id="headline-view"' in html and "without degenerate (-1)" in html
    assert "geomean over all (incorrect = 1.00x)" in html


def test_columns_declared_once():
    assert [c.key for c in COLUMNS] == ["correct", "fast_0", "fast_1", "fast_1.5", "fast_2", "geomean_correct",
                                        "geomean_all", "higher_memory_share"]
