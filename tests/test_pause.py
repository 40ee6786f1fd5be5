"""The judge's pause of the candidate's process tree (harness.judge.pause): a frozen tree does not run, a tree that
will not freeze is named, and an honest evaluation is paused and passes."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
import textwrap
import time
from types import SimpleNamespace

import pytest

import harness
from harness.judge.pause import DEADLINE_S, Pause
from harness.runner import _open_freezer
from harness.sandbox.cgroup import Cgroup

SPINNER = textwrap.dedent("""
    import mmap, sys
    f = open(sys.argv[1], "r+b")
    m = mmap.mmap(f.fileno(), 8)
    i = 0
    while True:
        i += 1
        m[:8] = i.to_bytes(8, "little")
""")


def _count(m: mmap.mmap) -> int:
    return int.from_bytes(m[:8], "little")


@pytest.mark.skipif(os.geteuid() != 0, reason="making a cgroup needs root (CI runs as root)")
def test_frozen_tree_does_not_run_until_thawed(tmp_path):
    cg = Cgroup.create(f"test-pause-{os.getpid()}", 2**30, 64)
    assert cg is not None and cg.freeze_files() is not None, "this host has no cgroup freezer for the judge"
    counter = tmp_path / "counter"
    counter.write_bytes(bytes(8))
    child = subprocess.Popen([sys.executable, "-c", SPINNER, str(counter)])
    try:
        for f in cg.procs_files():
            with open(f, "w") as fh:
                fh.write(str(child.pid))
        with open(counter, "r+b") as fh:
            m = mmap.mmap(fh.fileno(), 8)
            deadline = time.monotonic() + 10
            while _count(m) == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert _count(m) > 0, "the spinner never ran"
            kind, fds = _open_freezer(SimpleNamespace(cgroup=cg))
            pause = Pause(kind, fds)
            with pause.hold("renewing inputs") as frozen:
                assert frozen
                before = _count(m)
                time.sleep(0.1)
                assert _count(m) == before  # not one more iteration while frozen
            time.sleep(0.1)
            assert _count(m) > before  # thawed: it runs again
            assert pause.pauses == 1 and not pause.failures
            pause.close()
            m.close()
    finally:
        child.kill()
        cg.kill_all()
        child.wait()
        cg.remove()


def test_a_tree_that_does_not_freeze_is_named_and_thawed(tmp_path):
    control, events = tmp_path / "cgroup.freeze", tmp_path / "cgroup.events"
    control.write_text("0")
    events.write_text("populated 1\nfrozen 0\n")  # the kernel never reports it frozen
    pause = Pause("v2", [os.open(control, os.O_RDWR), os.open(events, os.O_RDONLY)])
    t0 = time.perf_counter()
    with pause.hold("timing the tf32 baseline") as frozen:
        assert not frozen
        assert control.read_text() == "1"
    assert time.perf_counter() - t0 >= DEADLINE_S
    assert control.read_text() == "0"  # thawed even so: the judge's work went on
    assert pause.failures == ["timing the tf32 baseline"]
    pause.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="making a cgroup needs root (CI runs as root)")
def test_an_honest_evaluation_is_paused_and_passes():
    source = textwrap.dedent("""
        import torch
        import torch.nn as nn

        class ModelNew(nn.Module):
            def forward(self, x):
                return torch.relu(x)
    """)
    r = harness.evaluate(source, "level1/19_ReLU", device="cpu", size="small",
                         settings=harness.EvalSettings(verified_min_iters=5, verified_max_iters=10,
                                                       verified_seconds_per_subject=0.2, naive_timing_trials=5))
    g = next(g for g in r.record.guards if g.name == "paused_while_judging")
    assert g.applicable and g.passed, g.detail
    assert r.results["verified"].verdict == "correct"
