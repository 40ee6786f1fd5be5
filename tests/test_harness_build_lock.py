"""A build killed mid-way must not wedge later builds of the same source, and concurrent builds of one
source (two evaluators sharing a cache) compile it once."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

import harness
from harness import EvalSettings

ROOT = Path(__file__).resolve().parent.parent
SOURCE = (ROOT / "harness" / "examples" / "relu_cpp.py").read_text()


@pytest.fixture(scope="module")
def concurrent_builds(tmp_path_factory):
    """Two evaluators sharing a cache build SOURCE at once, over the ``lock`` file torch's cpp_extension leaves when
    its build process is killed: (their results, whether that lock was left, the cache). The cache then holds the
    finished build, which the next test evaluates (one real compile for the module)."""
    cache = tmp_path_factory.mktemp("cache")
    # A niced compile on a loaded 2-core host once ran past 400 s; a long limit costs nothing when it is quick.
    settings = EvalSettings(build_timeout_s=1800)
    a = harness.Evaluator("cpu", "small", settings=settings, cache_dir=cache)
    b = harness.Evaluator("cpu", "small", settings=settings, cache_dir=cache)
    # Without the cleanup, load_inline waits on that lock until the build's time limit.
    ext = a.extensions_dir(SOURCE)
    (ext / "kv_example_relu_cpp").mkdir(parents=True)
    (ext / "kv_example_relu_cpp" / "lock").write_text("")
    results = {}

    def build(name, ev):
        results[name] = ev.build(SOURCE)

    threads = [threading.Thread(target=build, args=(n, ev)) for n, ev in (("a", a), ("b", b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    a.close()
    b.close()
    return results, (ext / "kv_example_relu_cpp" / "lock").exists(), cache


@pytest.mark.slow
def test_stale_torch_lock_is_cleared_and_concurrent_builds_compile_once(concurrent_builds):
    results, lock_left, _ = concurrent_builds
    assert all(r.ok and not r.timed_out for r in results.values()), results
    # One of them compiled; the other waited for it and found the finished build.
    assert sorted(r.cached for r in results.values()) == [False, True], results
    assert not lock_left


@pytest.mark.slow
def test_stale_torch_lock_left_by_a_killed_candidate_does_not_stall_the_next_evaluation(concurrent_builds):
    settings = EvalSettings(build_timeout_s=400, eval_timeout_s=60, naive_timing_trials=5, verified_min_iters=3,
                            verified_max_iters=6, verified_seconds_per_subject=0.2)
    with harness.Evaluator("cpu", "small", settings=settings, cache_dir=concurrent_builds[2]) as ev:
        assert ev.build(SOURCE).ok  # built by the fixture: nothing compiles here
        # A candidate process killed inside load_inline (which takes torch's lock even on a cache hit).
        (ev.extensions_dir(SOURCE) / "kv_example_relu_cpp" / "lock").write_text("")
        r = ev.evaluate(SOURCE, "level1/19_ReLU")
    assert r.record.status == "ok", r.record.error
    failed = [(g.name, g.detail) for g in r.record.guards if not g.passed and g.applicable]
    assert r.results["verified"].verdict == "correct", failed


# Runs the build step (its text names load_inline, so the Evaluator gives it one) and compiles nothing there.
BUILD_STEP_ONLY = "import torch\n\n\nclass ModelNew(torch.nn.Module):  # would call load_inline\n    pass\n"


def test_build_many_keeps_the_order_of_its_sources(tmp_path):
    python_only = [f"import torch\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n# {i}\n" for i in range(3)]
    with harness.Evaluator("cpu", "small", cache_dir=tmp_path) as ev:
        assert ev.build_many([]) == []
        results = ev.build_many([BUILD_STEP_ONLY, *python_only])
    assert [r.ok for r in results] == [True] * 4
    assert results[0].seconds > 0 and all(r.seconds == 0 for r in results[1:])  # only the first has a build step


# A "candidate" whose build step reports the CPU priority it runs at (the word load_inline makes the
# Evaluator run its build step at all).
NICENESS_PROBE = """# would call load_inline
import os
try:
    group = open("/proc/self/autogroup").read().split()[-1]
except OSError:
    group = "none"
raise RuntimeError(f"build niceness={os.nice(0)} autogroup={group}")
"""


@pytest.mark.parametrize("setting", [None, 0, 5])
def test_builds_run_below_the_evaluators_priority(tmp_path, setting):
    """Compilers on every core must not starve the candidate being started and timed: builds are
    niced (10 by default); the setting can change or drop it."""
    import os

    settings = EvalSettings() if setting is None else EvalSettings(build_niceness=setting)
    with harness.Evaluator("cpu", "small", settings=settings, cache_dir=tmp_path) as ev:
        built = ev.build(NICENESS_PROBE)
    expected = min(19, os.nice(0) + (10 if setting is None else setting))
    assert not built.ok and f"build niceness={expected} " in built.error
    # Its session is its own autogroup where the kernel has them: niced too, or the nice value is moot.
    assert f"autogroup={expected}" in built.error or "autogroup=none" in built.error
