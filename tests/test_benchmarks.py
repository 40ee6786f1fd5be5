"""The benchmark scripts run on GPU time that is scarce: their CLIs and pure parts are checked here."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
SCRIPTS = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py") if not p.name.startswith("_"))  # _x.py: shared helpers


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_parses_its_arguments(script):
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--help"], capture_output=True,
                       text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "usage:" in r.stdout


@pytest.mark.parametrize("session", ["h200_session.sh", "h200x2_session.sh"])
def test_session_script_calls_only_existing_scripts(session):
    text = (ROOT / "benchmarks" / session).read_text()
    called = set(re.findall(r"(?:benchmarks/|\$here/)(\w+\.py)", text))
    assert called and called <= set(SCRIPTS), called - set(SCRIPTS)


def test_cuda_candidate_set_is_thirty_distinct_cuda_builds():
    import throughput

    cands = throughput.cuda_candidates()
    assert len(cands) == 30 and len({s for s, _ in cands}) == 30
    assert all("load_inline" in s and "cuda_sources" in s for s, _ in cands)
    picked = throughput.sample(cands, 3)
    assert len(picked) == 3 and picked[0] == cands[0]


def _k(name, ts, dur, stream=7):
    return {"cat": "kernel", "name": name, "ts": ts, "dur": dur, "args": {"stream": stream}}


def test_profiler_trace_is_cut_into_iterations_without_the_flush():
    import timer_agreement as ta

    marker, flush = "void at::native::bitwise_not_kernel", "void at::native::FillFunctor<int>"
    events = [
        _k(flush, 0, 40), _k(marker, 50, 2),
        _k("gemm_a", 100, 30, stream=7), _k("gemm_b", 110, 50, stream=9),  # two streams, overlapping
        _k(flush, 300, 40), _k(marker, 350, 2),
        _k("gemm_a", 400, 30),
        _k(flush, 500, 40), _k(marker, 550, 2),
    ]
    spans, busy, streams = ta.segments(list(reversed(events)))  # order of the trace does not matter
    assert spans == [0.06, 0.03]  # 100 -> 160 us, then 400 -> 430 us
    assert busy == [0.08, 0.03]
    assert streams == 2


def test_clock_ramp_buckets_are_relative_to_the_last_one():
    import clock_ramp

    samples = [(t, 2.0 if t < 20 else 1.0) for t in range(0, 1000, 2)]
    rows = clock_ramp.bucketed(samples, 1000.0)
    assert [(r["from_ms"], r["to_ms"]) for r in rows][:3] == [(0, 5), (5, 10), (10, 20)]
    assert rows[-1]["to_ms"] == 1000 and rows[-1]["vs_steady"] == 1.0
    assert rows[0]["vs_steady"] == 2.0 and rows[3]["vs_steady"] == 1.0
    assert sum(r["calls"] for r in rows) == len(samples)


def test_compile_summary_counts_units_compiled_and_reused():
    import throughput

    log = [{"unit": "main.cpp", "hit": False, "seconds": 30.0, "rc": 0},
           {"unit": "main.cpp", "hit": True, "seconds": 0.1, "rc": 0},
           {"unit": "cuda.cu", "hit": False, "seconds": 60.0, "rc": 0},
           {"unit": "cuda.cu", "hit": False, "seconds": 5.0, "rc": 1}]
    s = throughput.compile_summary(log)
    assert s["main.cpp"] == {"compiled": 1, "reused": 1, "failed": 0, "compile_s_median": 30.0, "compile_s_sum": 30.0}
    assert s["cuda.cu"]["compiled"] == 1 and s["cuda.cu"]["failed"] == 1


def test_build_caches_table_reads_the_launcher_log_rows():
    import build_caches

    rows = [{"step": "kernel change", "build_s": 75.9, "error": ["/usr/bin/ld: cannot find -lcudart"],
             "units": [{"unit": "main.cpp", "hit": True, "seconds": 0.01, "rc": 0},
                       {"unit": "cuda.cu", "hit": False, "seconds": 75.5, "rc": 0}]},
            {"step": "Python change", "build_s": 0.5, "error": [], "units": []}]
    text = build_caches.table(rows, "relu.py")
    assert "| kernel change | 75.9 | reused | compiled 75.5 s | failed: no CUDA libraries (CPU-only torch) |" in text
    assert "| Python change | 0.5 | not run | not run | ok |" in text
    cpp, cuda, funcs = build_caches.kernel_source(ROOT / "harness/examples/cuda/relu.py")
    assert funcs == ["relu_forward"] and "__global__" in cuda and "relu_forward" in cpp


def test_build_priority_table_shows_each_trial():
    import build_priority

    rows = [{"niceness": 10, "builds": 2, "builds_ok": 2, "build_wall_s": 51.0, "evaluations": 6,
             "startup_s_median": 1.25, "eval_s_median": 7.5, "overhead_s_median": 2.0, "verdicts": ["correct"]},
            {"niceness": 0, "builds": 2, "builds_ok": 2, "build_wall_s": 50.0, "evaluations": 0,
             "startup_s_median": None, "eval_s_median": None, "overhead_s_median": None, "verdicts": []}]
    text = build_priority.table(rows)
    assert "| 10 | 2 (2) | 51.0 | 6 | 1.25 | 7.50 | 2.00 | correct |" in text
    assert "| 0 | 2 (2) | 50.0 | 0 | - | - | - |  |" in text


def test_write_results_leaves_the_table_and_its_data(tmp_path, capsys):
    from _results import write_results

    write_results(tmp_path / "new", "bench", "| a |\n", {"rows": [1, 2]})
    assert (tmp_path / "new" / "bench.md").read_text() == "| a |\n"
    assert json.loads((tmp_path / "new" / "bench.json").read_text()) == {"rows": [1, 2]}
    assert "| a |" in capsys.readouterr().out


def test_reproducibility_table_keeps_each_launch_lead_apart():
    import reproducibility

    k = reproducibility.KERNELS[0]
    rows = [{"kernel": k[0], "status": "ok", "launch_lead_us": lead, "verified_verdict": "correct",
             "verified_speedup": sp, "verified_kernel_ms": km, "verified_baseline_ms": 1.0, "idle_start_kernel_ms": idle}
            for lead, sp, km, idle in [(0.0, 1.0, 0.05, 0.05), (0.0, 1.2, 0.06, 0.06),
                                       (200.0, 1.0, 0.04, 0.05), (200.0, 1.01, 0.04, 0.08)]]
    lines = reproducibility.table(rows, 2, [k], [0.0, 200.0]).splitlines()[2:]
    assert len(lines) == 2
    assert "| 0 |" in lines[0] and "| 1.200 |" in lines[0]
    assert "| 200 |" in lines[1] and "| 1.010 |" in lines[1] and "| 0.0650, 1.600 |" in lines[1]


def test_reproducibility_table_keeps_evaluations_with_judges_prepared_beside_apart():
    import reproducibility

    k = reproducibility.KERNELS[0]
    rows = [{"kernel": k[0], "status": "ok", "launch_lead_us": 200.0, "prepare_beside": on, "verified_verdict": "correct",
             "verified_speedup": sp, "verified_kernel_ms": 0.04, "verified_baseline_ms": 1.0}
            for on, sp in [(False, 1.0), (False, 1.01), (True, 1.0), (True, 1.3)]]
    lines = reproducibility.table(rows, 2, [k], [200.0], (False, True)).splitlines()[2:]
    assert len(lines) == 2
    assert "| no |" in lines[0] and "| 1.010 |" in lines[0]
    assert "| yes |" in lines[1] and "| 1.300 |" in lines[1]


def test_session_kernel_filter_picks_the_long_kernels_and_one_short_one():
    import reproducibility

    text = (ROOT / "benchmarks" / "h200_session.sh").read_text()
    wanted = text.split('REPRO_KERNELS:-')[1].split('}')[0].lower().split(",")
    picked = [k for k in reproducibility.KERNELS if any(w in k[0].lower() for w in wanted)]
    assert len(picked) == 7 and sum("ReLU, CUDA grid" in k[0] for k in picked) == 1


def test_leaderboard_corpus_is_laid_out_for_replay(tmp_path):
    from corpora import Source, leaderboard

    src = tmp_path / "lb"
    (src / "docs" / "assets" / "problems").mkdir(parents=True)
    (src / "docs" / "assets" / "solutions").mkdir()
    (src / "docs" / "assets" / "problems" / "l1_p19.py").write_text("# relu problem\n")
    for f in ("aa", "bb", "cc"):
        (src / "docs" / "assets" / "solutions" / f"{f}.py").write_text(f"# kernel {f}\n")
    (src / "docs" / "assets" / "data.json").write_text(json.dumps({
        "Level 1: 19_ReLU": [{"display_name": "gpt-4o", "torch_speedup": 1.5, "file": "aa"},
                             {"display_name": "gpt-4o", "torch_speedup": "n/a", "file": "bb"},
                             {"display_name": "claude 3.5/sonnet", "torch_speedup": 0.5, "file": "cc"}],
        "not a problem key": []}))
    out = tmp_path / "out"
    summary = leaderboard(Source(src), out)
    assert summary == {"kernels": 3, "problems": 1, "models": ["claude-3.5-sonnet", "gpt-4o"]}
    assert (out / "problems" / "level1" / "19_ReLU.py").read_text() == "# relu problem\n"
    assert (out / "replay" / "gpt-4o" / "level_1_problem_19_sample_1_kernel.py").read_text() == "# kernel bb\n"
    from agents.models.replay import replay_inventory

    assert replay_inventory(out / "replay" / "gpt-4o") == [(1, 19, 0), (1, 19, 1)]
    reported = json.loads((out / "reported.json").read_text())
    assert [r["speedup"] for r in reported] == [1.5, None, 0.5]


def test_full_size_sweep_reads_verdicts_and_survives_a_torn_line(tmp_path):
    from full_size_sweep import read_run

    (tmp_path / "attempts.jsonl").write_text(
        json.dumps({"results": {"naive": {"verdict": "correct"}, "verified": {"verdict": "hack"}},
                    "record": {"eval_seconds": 9.0, "phase_seconds": {"correctness": 5.0, "judge_compare": 3.5}}}) + "\n"
        + json.dumps({"results": {"naive": {"verdict": "correct"}, "verified": {"verdict": "correct"}}}) + "\n"
        + '{"results": {"naive"')
    (tmp_path / "errors.jsonl").write_text('{"error": "judge failed"}\n')
    run = read_run(tmp_path)
    assert run["attempts"] == 2 and run["harness_errors"] == 1
    assert run["verdicts"] == {"naive": {"correct": 2}, "verified": {"hack": 1, "correct": 1}}
    assert run["seconds"] == {"correctness": 5.0, "judge_compare": 3.5, "eval": 9.0}


def test_full_size_sweep_picks_a_sample_spread_over_the_levels_and_the_next_offset_adds_new_problems():
    from full_size_sweep import pick

    problems = [(lv, n) for lv, count in ((1, 100), (2, 100), (3, 50)) for n in range(1, count + 1)]
    first, second = pick(problems, stride=5, offset=0), pick(problems, stride=5, offset=1)
    assert len(first) == 50 and {lv for lv, _ in first} == {1, 2, 3}
    assert sum(1 for lv, _ in first if lv == 3) == 10  # in proportion to the level's share
    assert not set(first) & set(second)
    assert pick(problems, limit=3) == [(1, 1), (1, 2), (1, 3)]
    # kernels to re-run after a fix join the sample in level order; a problem nothing recorded does not
    assert pick(problems, limit=3, also=[(2, 7), (1, 2), (4, 1)]) == [(1, 1), (1, 2), (1, 3), (2, 7)]
    # problems already in the fidelity tables are left out before the stride: the next session adds new ones only
    assert pick(problems, stride=100, evaluated={(1, 1), (1, 2)}) == [(1, 3), (2, 3), (3, 3)]


def test_full_size_sweep_skips_a_problem_only_when_every_kernel_of_it_was_evaluated(tmp_path):
    from full_size_sweep import evaluated_problems

    table = tmp_path / "fidelity.json"
    table.write_text(json.dumps({"rows": [{"key": "gpt-4o level1/19 s0"}, {"key": "claude level1/19 s0"},
                                          {"key": "gpt-4o level1/20 s0"}]}))
    inventory = {"gpt-4o": [(1, 19, 0), (1, 20, 0), (2, 5, 0)], "claude": [(1, 19, 0), (1, 20, 0)]}
    assert evaluated_problems(table, inventory) == {(1, 19)}  # 1/20: claude's kernel is new; 2/5: nothing yet


def test_cudal1_corpus_shares_the_problems_folder_and_leaves_out_what_differs(tmp_path):
    from corpora import Source, cudal1

    src = tmp_path / "l1"
    (src / "optimized_cuda_code").mkdir(parents=True)
    entries = [
        {"level_id": 1, "task_id": 19, "ref_code": "# relu\n", "custom_code": "# fast relu\n", "score_default": 2.0,
         "score_torch_compile_default": 1.5},
        {"level_id": 1, "task_id": 20, "ref_code": "# leaky, their version\n", "custom_code": "# k\n", "score_default": 1.1},
        {"level_id": 1, "task_id": 21, "ref_code": "# sigmoid\n", "custom_code": "None", "score_default": None},
        {"level_id": 1, "task_id": 22, "ref_code": "# tanh\n", "custom_code": None, "score_default": None},
    ]
    (src / "optimized_cuda_code" / "h100.json").write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    out = tmp_path / "out"
    (out / "problems" / "level1").mkdir(parents=True)
    (out / "problems" / "level1" / "19_ReLU.py").write_text("# relu\n")  # laid out by `leaderboard` before
    (out / "problems" / "level1" / "20_LeakyReLU.py").write_text("# leaky, another version\n")
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"problems": [{"level": 1, "id": n, "name": f"{n}_{name}"} for n, name in
                                                 ((19, "ReLU"), (20, "LeakyReLU"), (21, "Sigmoid"), (22, "Tanh"))]}))
    assert cudal1(Source(src), out, manifest=manifest) == {"kernels": 1, "skipped": 1, "model": "cuda-l1-h100"}
    assert (out / "replay" / "cuda-l1-h100" / "level_1_problem_19_sample_0_kernel.py").read_text() == "# fast relu\n"
    assert not (out / "replay" / "cuda-l1-h100" / "level_1_problem_20_sample_0_kernel.py").exists()
    (r,) = json.loads((out / "reported.json").read_text())
    assert (r["problem"], r["speedup"], r["speedup_vs_compile"], r["gpu"]) == ("level1/19_ReLU", 2.0, 1.5, "H100")
    assert json.loads((out / "skipped.json").read_text())[0]["number"] == 20


def test_fidelity_ranks_and_classifies(tmp_path):
    from fidelity import render, spearman

    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([1, 2], [1, 2]) is None and spearman([1, 1, 1], [1, 2, 3]) is None
    row = {"model": "m", "level": 1, "number": 4, "sample": 0, "problem": "level1/4_x", "gpu": "L40S",
           "naive_speedup": 1.2, "verified_speedup": None, "step": "tolerance", "reasons": ["x3: max abs error"]}
    rows = [dict(row, key="m level1/4 s0", naive_recorded="correct", verified_recorded="incorrect", reported=1.0),
            dict(row, key="m level1/5 s0", number=5, naive_recorded="correct", verified_recorded="correct", reported=2.0),
            dict(row, key="m level1/6 s0", number=6, naive_recorded="correct", verified_recorded="hack", reported=3.0)]
    text, data = render(rows, {"m level1/4 s0": {"class": "true bug", "why": "fp32 sum"}}, "test")
    assert data["classes"] == {"true bug": 1, "unclassified": 1}
    assert "| m level1/4 s0 | incorrect -> None | tolerance | true bug | fp32 sum |" in text
    assert data["spearman"]["L40S"]["n"] == 3


def test_fidelity_tables_grow_across_runs_and_a_kernel_keeps_its_newest_row():
    from fidelity import merge_previous

    new = [{"key": "gpt-o1 level1/19 s0", "naive_recorded": "correct"}]
    old = {"rows": [{"key": "gpt-o1 level1/19 s0", "naive_recorded": "incorrect"},
                    {"key": "gpt-o1 level1/1 s0", "naive_recorded": "correct"}]}
    merged = merge_previous(new, [old])
    assert [r["key"] for r in merged] == ["gpt-o1 level1/19 s0", "gpt-o1 level1/1 s0"]
    assert merged[0]["naive_recorded"] == "correct"


def test_recheck_kernels_prints_both_protocols_verdicts_per_kernel(tmp_path):
    import recheck_kernels

    honest = tmp_path / "honest.py"
    honest.write_text("import torch, torch.nn as nn\nclass ModelNew(nn.Module):\n"
                      "    def forward(self, x):\n        return torch.relu(x)\n")
    broken = tmp_path / "broken.py"
    broken.write_text("import torch, torch.nn as nn\nclass ModelNew(nn.Module):\n"
                      "    def forward(self, x):\n        return x\n")
    assert recheck_kernels.main([f"{honest}=level1/19_ReLU", f"{broken}=level1/19_ReLU",
                                 "--out", str(tmp_path), "--name", "r"]) == 0
    rows = json.loads((tmp_path / "r.json").read_text())
    assert [(r["kernel"], r["naive"], r["verified"]) for r in rows] == [
        ("honest.py", "correct", "correct"), ("broken.py", "correct", "hack")]  # the input returned: the naive 374x ReLU
    assert "| broken.py | level1/19_ReLU | correct | hack |" in (tmp_path / "r.md").read_text()


def test_fidelity_naive_vs_authors_lists_every_disagreement_by_class():
    from fidelity import render

    base = {"model": "m", "level": 1, "sample": 0, "gpu": "H100", "naive_speedup": None, "verified_recorded": "incorrect",
            "verified_speedup": None, "step": None, "reasons": ["base: max abs error 3"]}
    rows = [dict(base, key="m level1/1 s0", number=1, problem="level1/1_a", naive_recorded="incorrect", reported=2.0),
            dict(base, key="m level1/2 s0", number=2, problem="level1/2_b", naive_recorded="compile_error",
                 reported=1.5),
            dict(base, key="m level1/3 s0", number=3, problem="level1/3_c", naive_recorded="runtime_error",
                 reported=1.1),
            # the authors report nothing for it (no figure): not a disagreement with them
            dict(base, key="m level1/4 s0", number=4, problem="level1/4_d", naive_recorded="no_code", reported=None),
            # naive agrees with the authors
            dict(base, key="m level1/5 s0", number=5, problem="level1/5_e", naive_recorded="correct", reported=1.2)]
    naive = {"m level1/1 s0": {"class": "authors' protocol", "why": "eval-mode BatchNorm", "kernelbench": "incorrect"},
             "m level1/2 s0": {"class": "environment drift", "why": "input.type()", "kernelbench": "compile_error"},
             "m level1/9 s0": {"class": "true bug", "why": "re-run since: correct"}}
    text, data = render(rows, {}, "test", naive)
    nva = data["naive_vs_authors"]
    assert nva["keys"] == ["m level1/1 s0", "m level1/2 s0", "m level1/3 s0"]
    assert nva["classes"] == {"authors' protocol": 1, "environment drift": 1, "unclassified": 1}
    assert (nva["kernelbench_known"], nva["kernelbench_same"], nva["departs"]) == (2, 2, [])
    assert nva["stale"] == ["m level1/9 s0"]
    assert "| m level1/1 s0 | incorrect | 2.00x H100 | authors' protocol | incorrect | eval-mode BatchNorm |" in text
    # an unclassified kernel shows the record's own reasons
    assert "| m level1/3 s0 | runtime_error | 1.10x H100 | unclassified | - | base: max abs error 3 |" in text
    # a kernel KernelBench's own check would pass is named as a departure of naive
    naive["m level1/3 s0"] = {"class": "harness error", "why": "file import", "kernelbench": "correct"}
    text, data = render(rows, {}, "test", naive)
    assert data["naive_vs_authors"]["departs"] == ["m level1/3 s0"]
    assert "it departs on m level1/3 s0" in text
    # without the option the section is absent, as before
    text, data = render(rows, {}, "test")
    assert "naive_vs_authors" not in data and "Naive vs the authors" not in text


def test_fidelity_rebuilds_from_committed_tables_and_refuses_unknown_classes(tmp_path):
    row = {"key": "m level1/1 s0", "model": "m", "problem": "level1/1_a", "level": 1, "number": 1, "sample": 0,
           "reported": 2.0, "gpu": "H100", "naive_recorded": "incorrect", "naive_speedup": None,
           "verified_recorded": "incorrect", "verified_speedup": None, "step": None, "reasons": []}
    prev = tmp_path / "prev.json"
    prev.write_text(json.dumps({"settings": "H200 full", "rows": [row]}))
    good = tmp_path / "naive.json"
    good.write_text(json.dumps({"m level1/1 s0": {"class": "true bug", "why": "w", "kernelbench": "incorrect"}}))
    script = str(ROOT / "benchmarks" / "fidelity.py")
    r = subprocess.run([sys.executable, script, "--previous", str(prev), "--naive-classification", str(good),
                        "--out", str(tmp_path / "out"), "--name", "f"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads((tmp_path / "out" / "f.json").read_text())
    assert data["settings"] == "H200 full" and data["naive_vs_authors"]["classes"] == {"true bug": 1}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"m level1/1 s0": {"class": "bad luck", "why": "w"}}))
    r = subprocess.run([sys.executable, script, "--previous", str(prev), "--naive-classification", str(bad),
                        "--out", str(tmp_path / "out2")], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode != 0 and "bad luck" in r.stderr
    r = subprocess.run([sys.executable, script, "--out", str(tmp_path / "out3")], capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 2 and "--previous" in r.stderr


def test_kernelbench_check_runs_the_published_protocol_in_process():
    from kernelbench_check import check

    problem = ("import torch, torch.nn as nn\n"
               "class Model(nn.Module):\n"
               "    def __init__(self, c):\n        super().__init__(); self.bn = nn.BatchNorm1d(c)\n"
               "    def forward(self, x):\n        return self.bn(x)\n"
               "def get_inputs():\n    return [torch.randn(64, 8) * 3 + 1]\n"
               "def get_init_inputs():\n    return [8]\n")
    running_stats = ("import torch, torch.nn as nn, torch.nn.functional as F\n"
                     "class ModelNew(nn.Module):\n"
                     "    def __init__(self, c):\n        super().__init__(); self.bn = nn.BatchNorm1d(c)\n"
                     "    def forward(self, x):\n        b = self.bn\n"
                     "        return F.batch_norm(x, b.running_mean, b.running_var, b.weight, b.bias, False, 0.1, 1e-5)\n")
    # KernelBench never calls .eval(): BatchNorm with running statistics is wrong there, right under CUDA-L1's check
    res = check(running_stats, problem, "cpu", ("train", "eval"))
    assert (res["train"]["verdict"], res["eval"]["verdict"]) == ("incorrect", "correct")
    # sources are exec'd from strings: torch.jit.script finds no source, as in KernelBench (a file import would)
    scripted = ("import torch, torch.nn as nn\n"
                "def _f(x):\n    return x\n"
                "try:\n    torch.jit.script(_f); SCRIPTED = True\nexcept Exception:\n    SCRIPTED = False\n"
                "class ModelNew(nn.Module):\n"
                "    def __init__(self, c):\n        super().__init__(); self.bn = nn.BatchNorm1d(c)\n"
                "    def forward(self, x):\n        return x if SCRIPTED else self.bn(x)\n")
    assert check(scripted, problem, "cpu", ("train",))["train"]["verdict"] == "correct"
    res = check("class ModelNew(:\n", problem, "cpu", ("train",))
    assert res["train"]["verdict"] == "compile_error" and "SyntaxError" in res["train"]["detail"]
    raising = running_stats.replace("return F.batch_norm", "raise ValueError('boom'); return F.batch_norm")
    res = check(raising, problem, "cpu", ("train",))
    assert res["train"]["verdict"] == "runtime_error" and "boom" in res["train"]["detail"]


def test_gpu_memory_peaks_sum_each_sample_s_processes_apart_from_the_device_s_reading():
    from gpu_memory_peaks import peaks

    samples = "11, 100\n12, 50\ndevice, 170\n\n11, 120\ndevice, 130\n\n11, 10\n12, 300\ndevice, 320\n"
    per, together = peaks(samples)
    assert per == {"11": 120, "12": 300, "device": 320}
    assert together == 310  # the third sample's two processes; never the first's 150 plus a later one


def test_full_size_sweep_reads_the_gpus_busy_share_and_each_phases_share():
    from full_size_sweep import busy_share, parse_gpu_sample, phase_shares

    assert parse_gpu_sample("79000, 87\n1000, 13\n") == (80000, 50.0)  # memory summed, utilisation averaged
    assert parse_gpu_sample("") is None and parse_gpu_sample("[N/A], [N/A]") is None
    assert busy_share([100.0, 50.0, 0.0]) == 50.0 and busy_share([]) is None
    shares = phase_shares({"correctness": 30.0, "timing": 50.0, "judge_expected": 20.0, "eval": 100.0,
                           "build": 400.0})
    assert shares == "timing 50%, correctness 30%; judge: expected 20%"  # build runs beside evaluation: left out
    assert phase_shares({"eval": 0.0}) == "-"
