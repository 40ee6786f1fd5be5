"""The local evaluation pool: reference outputs computed ahead of the candidates that need them."""

from pathlib import Path

from agents.executor import LocalExecutor
from harness import EvalSettings

ROOT = Path(__file__).resolve().parent.parent
QUICK = EvalSettings(naive_timing_trials=5, verified_min_iters=3, verified_max_iters=6, verified_seconds_per_subject=0.2)
HONEST_RELU = (ROOT / "harness" / "fixtures" / "legit" / "cpu" / "inplace_on_own_buffer_relu.py").read_text()


HONEST_SIGMOID = ("import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                  "    def forward(self, x):\n        return torch.sigmoid(x)\n")


def test_reference_is_prepared_before_the_first_candidate_of_a_problem(tmp_path):
    """While one problem's candidate is measured, the preparer starts the judge of the next problem waiting, so that
    problem's first candidate finds it started. (The very first candidate of a run can reach its judge before the
    preparer thread does when its build takes no time: that evaluation then starts the judge itself, and the preparer
    leaves it; a CI run under load once saw that order.)"""
    with LocalExecutor("cpu", "small", settings=QUICK, cache_dir=tmp_path) as ex:
        futures = [ex.submit(HONEST_RELU, "level1/19_ReLU"), ex.submit(HONEST_SIGMOID, "level1/21_Sigmoid")]
        results = [f.result(timeout=300) for f in futures]
        again = ex.submit(HONEST_RELU + "\n# resubmitted\n", "level1/19_ReLU").result(timeout=300)
        stats, spans = ex.stats(), ex.timeline()
    assert [r.results["verified"].verdict for r in results] == ["correct"] * 2
    assert stats.per_worker == [3]  # preparing is not counted as an evaluation
    evaluated = [s for s in spans if s["kind"] == "evaluate"]
    prepared = {s["problem"]: s for s in spans if s["kind"] == "prepare"}
    assert stats.prepared == len(prepared) >= 1
    # the problem measured second was prepared while the first was measured, and its candidate waited at most for
    # the rest of that start (it started none of its own)
    later = evaluated[1]["problem"]
    assert prepared[later]["start_s"] <= evaluated[1]["start_s"]
    by_problem = {r.record.problem_id: r for r in results}
    span = prepared[later]["end_s"] - prepared[later]["start_s"]
    assert by_problem[later].record.phase_seconds["reference"] <= span + 0.5
    assert again.record.phase_seconds["reference"] < 0.05  # a later candidate finds its judge running


def test_evaluations_are_spread_over_the_workers(tmp_path):
    sources = [HONEST_RELU + f"\n# copy {i}\n" for i in range(4)]
    with LocalExecutor("cpu", "small", gpus=2, settings=QUICK, cache_dir=tmp_path) as ex:
        results = [f.result(timeout=600) for f in [ex.submit(s, "level1/19_ReLU") for s in sources]]
        stats = ex.stats()
    # Every candidate measured (the verdicts: on a loaded 2-core host two evaluations at once can push the judge's
    # clock past its allowance, a known limit of the timing witness on a CPU; the spread is what this tests).
    assert [r.record.status for r in results] == ["ok"] * 4
    assert [r.results["naive"].verdict for r in results] == ["correct"] * 4
    assert sum(stats.per_worker) == 4 and all(n >= 1 for n in stats.per_worker), stats.per_worker


def test_a_problem_whose_reference_fails_still_gets_a_verdict_per_candidate(tmp_path):
    with LocalExecutor("cpu", "small", settings=QUICK, cache_dir=tmp_path) as ex:
        fut = ex.submit(HONEST_RELU, "level1/no_such_problem")
        try:
            fut.result(timeout=300)
        except Exception as exc:  # noqa: BLE001 - the error belongs to this future, not to the pool
            assert "no_such_problem" in str(exc)
        else:
            raise AssertionError("an unknown problem must fail its future")
        stats = ex.stats()
    assert stats.prepared == 0


def test_build_pool_sizes_itself_by_the_cpus_the_process_may_use():
    # A pool pinned to some of the host's cores (taskset, a cgroup cpuset) must not start a compiler per
    # host core: on a 32-core host pinned to 16, 32 nvcc processes would share 16 cores.
    import subprocess
    import sys

    code = ("import os; os.sched_setaffinity(0, {0}); import harness; from agents.executor import LocalExecutor;"
            "ex = LocalExecutor('cpu', 'small'); print(harness.usable_cpus(), ex._build_pool._max_workers, os.cpu_count());"
            "ex.close()")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    usable, pool, host = map(int, out.stdout.split())
    assert usable == pool == 1
    assert host >= 1


def _torch_kernel(op: str) -> str:
    return f"import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.{op}(x)\n"


def test_judges_are_prepared_beside_evaluations_and_none_is_ended_before_its_candidates_use_it(tmp_path, monkeypatch):
    # Three problems submitted at once to one worker keeping two judges: preparing all three ahead (each start
    # ending the oldest) threw away the work of every judge ended before its candidate came; preparing in the
    # worker's own thread left the device idle while a judge started.
    ops = {"level1/19_ReLU": "relu", "level1/21_Sigmoid": "sigmoid", "level1/22_Tanh": "tanh"}
    settings = QUICK.model_copy(update={"max_judges": 2})
    holds_log = tmp_path / "gate-holds.log"
    monkeypatch.setenv("KV_DEVICE_GATE_LOG", str(holds_log))
    with LocalExecutor("cpu", "small", settings=settings, cache_dir=tmp_path / "cache") as ex:
        futures = {p: ex.submit(_torch_kernel(op), p) for p, op in ops.items()}
        results = {p: f.result(timeout=600) for p, f in futures.items()}
        spans = ex.timeline()
    prepared = [s["problem"] for s in spans if s["kind"] == "prepare"]
    evaluated = [s["problem"] for s in spans if s["kind"] == "evaluate"]
    assert sorted(evaluated) == sorted(ops) and prepared, spans
    assert all(r.record.status == "ok" for r in results.values())
    assert len(prepared) == len(set(prepared))  # none prepared twice
    assert all(0 <= s["start_s"] <= s["end_s"] for s in spans)
    evals = [s for s in spans if s["kind"] == "evaluate"]
    assert all(a["end_s"] <= b["start_s"] for a, b in zip(evals, evals[1:], strict=False))  # one at a time
    assert any(p["start_s"] < e["end_s"] and e["start_s"] < p["end_s"]  # a judge started while one ran
               for p in spans if p["kind"] == "prepare" for e in evals), spans
    # The device's turns (harness.judge.gate): each candidate's timing and each judge's start held it, never two at once.
    lines = [line.split() for line in holds_log.read_text().splitlines()]
    holds = sorted((float(a), float(b), what) for _pid, what, a, b in lines)
    assert [w for _a, _b, w in holds].count("timing") == len(ops)
    assert all(x[1] <= y[0] for x, y in zip(holds, holds[1:], strict=False)), holds
    # One judge process per problem: each built its model under the gate once, so no judge was started twice
    # (one prepared ahead and ended before its candidate came would have been started again by the evaluation).
    assert len({pid for pid, what, _a, _b in lines if what == "prepare"}) == len(ops), (lines, spans)
