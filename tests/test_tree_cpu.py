"""The judge reads the CPU time of the candidate's whole tree (harness.judge.tree_cpu) and charges what ran beside the
worker during a timed call (harness.judge.judge.timing_floor's parallel part): a helper process on a second core
(open_attacks/cpu/prerelease_helper_*) shortens the wall time of a call without doing less work."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from harness.judge.judge import PARALLEL_SLACK_MS, PARALLEL_SLACK_REL, timing_floor
from harness.judge.tree_cpu import TreeCpu
from harness.runner import _open_cpu_usage
from harness.sandbox.cgroup import Cgroup

SPIN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.15:\n    pass\n"  # 150 ms of CPU, whatever the load


@pytest.mark.skipif(os.geteuid() != 0, reason="making a cgroup needs root (CI runs as root)")
def test_the_judge_reads_the_cpu_time_of_every_process_of_the_tree():
    cg = Cgroup.create(f"test-tree-cpu-{os.getpid()}", 2**30, 64)
    assert cg is not None and cg.cpu_usage_file() is not None, "this host's cgroups count no CPU time for the judge"
    kind, fd = _open_cpu_usage(SimpleNamespace(cgroup=cg))
    cpu = TreeCpu(kind, fd)
    try:
        before = cpu.ms()
        assert before is not None
        # a process started outside and moved in, then one of its forks: both are counted
        child = subprocess.Popen([sys.executable, "-c", "import os, sys; sys.stdin.read(1); pid = os.fork()\n" + SPIN
                                  + "if pid: os.waitpid(pid, 0)\n"], stdin=subprocess.PIPE)
        for f in cg.procs_files():
            with open(f, "w") as fh:
                fh.write(str(child.pid))
        t0 = time.perf_counter()
        child.communicate(b"x", timeout=30)
        wall = time.perf_counter() - t0
        used = cpu.ms() - before
        assert used >= 300, f"two processes of the tree spun 150 ms of CPU each and were counted {used:.0f} ms"
        assert wall > 0
    finally:
        cpu.close()
        cg.kill_all()
        cg.remove()


def test_cpu_time_beyond_the_calls_wall_time_is_charged_to_the_call():
    intervals = [2.0] * 9
    reported = [1.0] * 9
    calibration = [0.9] * 20  # the judge's own overhead: nothing hidden beyond it
    honest = timing_floor(intervals, reported, calibration, cuda=False, tree_cpu_ms=[1.9] * 9)
    preempted = timing_floor(intervals, reported, calibration, cuda=False, tree_cpu_ms=[0.4] * 9)
    assert honest["credited_ms"] == preempted["credited_ms"] == 1.0  # less CPU than wall time is never charged
    assert honest["parallel_median_ms"] == 0.0
    # a helper that worked 0.8 ms beside each call: the report alone would credit it 1.0 ms
    helped = timing_floor(intervals, reported, calibration, cuda=False, tree_cpu_ms=[2.0 + 0.8] * 9)
    expect = 0.8 - PARALLEL_SLACK_MS - PARALLEL_SLACK_REL * 2.0
    assert helped["parallel_median_ms"] == pytest.approx(expect)
    assert helped["credited_ms"] == pytest.approx(1.0 + expect)
    # a run that allows two threads may use two CPUs' time per call
    assert timing_floor(intervals, reported, calibration, cuda=False, tree_cpu_ms=[3.9] * 9,
                        threads=2)["credited_ms"] == 1.0
    # without the tree's CPU time (a GPU run, an evaluator without the cgroup file) the floor is what it was
    assert "parallel_median_ms" not in timing_floor(intervals, reported, calibration, cuda=False)
