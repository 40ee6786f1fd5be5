"""The judge's pause of the candidate's process tree (harness.judge.pause): a frozen tree does not run, a tree that
will not freeze is named, and an honest evaluation is paused and passes."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
import textwrap
import threading
import time
from types import SimpleNamespace

import pytest

import harness
from harness.judge import pause as judge_pause
from harness.judge.pause import DEADLINE_S, Pause
from harness.runner import _open_freezer
from harness.sandbox import cgroup as sandbox_cgroup
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


# A candidate that reports, through its verdict, whether a process of its own ever saw the judge write input values:
# a forked helper polls every input set forward has met and flags a set whose first value is new while its last
# is not (a write in progress). Once flagged, forward's answers are off by one: verified `incorrect`.
WATCHER = textwrap.dedent("""
    import ctypes, mmap, os, signal, time
    import torch
    import torch.nn as nn

    _flag = mmap.mmap(-1, 8)

    def _watch(sets):
        ctypes.CDLL(None).prctl(1, signal.SIGKILL)
        os.closerange(3, 4096)
        seen = [(float(p.view(-1)[0]), float(t.view(-1)[-1])) for p, t in sets]
        midway = set()  # sets caught in the middle of a write
        while True:
            for i, (p, t) in enumerate(sets):
                first, last = float(p.view(-1)[0]), float(t.view(-1)[-1])
                if first != seen[i][0] and last == seen[i][1]:
                    midway.add(i)
                if first != seen[i][0] and last != seen[i][1]:
                    seen[i] = (first, last)
                    # the worker's own in-place guard copies another set's values: not the judge's write
                    if i in midway and not any(torch.equal(p, q) for j, (q, _) in enumerate(sets) if j != i):
                        _flag[0] = 1
                    midway.discard(i)
            time.sleep(0.0001)  # a write takes ~1 ms: polled often enough, without taking a core from the worker

    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            self.sets, self.keys, self.pid = [], set(), 0

        def forward(self, predictions, targets):
            key = (predictions.data_ptr(), targets.data_ptr())
            if key not in self.keys and len(self.sets) < 8:
                self.keys.add(key)
                self.sets.append((predictions, targets))
                if self.pid:
                    os.kill(self.pid, signal.SIGKILL)
                    os.waitpid(self.pid, 0)
                self.pid = os.fork()
                if self.pid == 0:
                    try:
                        _watch(self.sets)
                    finally:
                        os._exit(0)
            loss = torch.mean((predictions - targets) ** 2)
            return loss + 1.0 if _flag[0] else loss
""")
LIGHT = dict(verified_min_iters=20, verified_max_iters=40, verified_seconds_per_subject=0.3, naive_timing_trials=5)


@pytest.mark.skipif(os.geteuid() != 0, reason="making a cgroup needs root (CI runs as root)")
def test_no_process_of_the_candidate_sees_input_values_land(monkeypatch):
    """Paused: the watcher never sees a write in progress, so its answers stay right. Without the freezer (the
    evaluator's descriptors withheld) the same watcher sees the judge's writes and says so: the probe works."""
    paused = harness.evaluate(WATCHER, "level1/94_MSELoss", device="cpu", size="small",
                              settings=harness.EvalSettings(**LIGHT))
    assert paused.results["verified"].verdict == "correct", paused.results["verified"].reasons
    monkeypatch.setattr("harness.runner._open_freezer", lambda child: None)
    unpaused = harness.evaluate(WATCHER, "level1/94_MSELoss", device="cpu", size="small",
                                settings=harness.EvalSettings(**LIGHT))
    g = next(g for g in unpaused.record.guards if g.name == "paused_while_judging")
    assert not g.applicable
    assert unpaused.results["verified"].verdict == "incorrect"


@pytest.mark.skipif(os.geteuid() != 0, reason="making a cgroup needs root (CI runs as root)")
def test_a_tree_left_frozen_is_still_ended(tmp_path):
    """A judge that dies mid-pause leaves the candidate's tree frozen: ending the candidate must not hang on it."""
    from harness.sandbox.launch import Child
    cg = Cgroup.create(f"test-pause-end-{os.getpid()}", 2**30, 64)
    assert cg is not None and cg.freeze_files() is not None
    counter = tmp_path / "counter"
    counter.write_bytes(bytes(8))
    proc = subprocess.Popen([sys.executable, "-c", SPINNER, str(counter)], start_new_session=True)
    for f in cg.procs_files():
        with open(f, "w") as fh:
            fh.write(str(proc.pid))
    kind, fds = _open_freezer(SimpleNamespace(cgroup=cg))
    pause = Pause(kind, fds)
    pause._set(True)  # frozen, and never thawed by the judge
    deadline = time.monotonic() + 5
    while not pause._frozen() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pause._frozen()
    pause.close()
    ender = threading.Thread(target=Child(proc, tmp_path / "out", tmp_path / "err", time.perf_counter(), cg).end,
                             daemon=True)
    ender.start()
    ender.join(timeout=10)
    if ender.is_alive():  # hung on the frozen task: thaw it so the test run can go on, then fail
        cg.thaw()
        ender.join(timeout=10)
        pytest.fail("ending a frozen candidate hung until it was thawed")
    assert proc.returncode is not None
    assert not any(d.exists() for d in cg.dirs.values())


def test_the_judge_and_the_evaluator_write_the_same_freezer_values():
    """The judge freezes and the evaluator thaws through the same kernel files; each declares the writes on its side
    of the trust boundary, so a change to one that misses the other would leave a tree frozen or never paused."""
    assert judge_pause.FREEZER_WRITES == sandbox_cgroup.FREEZER_WRITES
