"""The local evaluation pool: reference outputs computed ahead of the candidates that need them."""

from pathlib import Path

from agents.executor import LocalExecutor
from harness import EvalSettings

ROOT = Path(__file__).resolve().parent.parent
QUICK = EvalSettings(naive_timing_trials=5, verified_min_iters=3, verified_max_iters=6, verified_seconds_per_subject=0.2)
HONEST_RELU = (ROOT / "harness" / "fixtures" / "legit" / "cpu" / "inplace_on_own_buffer_relu.py").read_text()


def test_reference_is_prepared_before_the_first_candidate_of_a_problem(tmp_path):
    with LocalExecutor("cpu", "small", settings=QUICK, cache_dir=tmp_path) as ex:
        first = ex.submit(HONEST_RELU, "level1/19_ReLU").result(timeout=300)
        second = ex.submit(HONEST_RELU + "\n# resubmitted\n", "level1/19_ReLU").result(timeout=300)
        stats = ex.stats()
    assert first.results["verified"].verdict == "correct"
    assert stats.prepared == 1  # one problem, prepared once
    assert stats.per_worker == [2]  # preparing is not counted as an evaluation
    # The worker computed the reference before it took the candidate: the evaluation found it ready.
    assert first.record.phase_seconds["reference"] < 0.05
    assert second.record.phase_seconds["reference"] < 0.05


def test_evaluations_are_spread_over_the_workers(tmp_path):
    sources = [HONEST_RELU + f"\n# copy {i}\n" for i in range(4)]
    with LocalExecutor("cpu", "small", gpus=2, settings=QUICK, cache_dir=tmp_path) as ex:
        results = [f.result(timeout=600) for f in [ex.submit(s, "level1/19_ReLU") for s in sources]]
        stats = ex.stats()
    assert [r.results["verified"].verdict for r in results] == ["correct"] * 4
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
