"""Issue 30: an output handed over cannot change once reported (a sealed file per call), and a verified trial's
inputs lie where a timed call's do."""

from __future__ import annotations

import mmap
import os
import time

import pytest
import torch

import harness
from harness import EvalSettings
from harness.candidate.worker import _in_place
from harness.wire.conn import WireError
from harness.wire.sealed import OutputSlot, write_sealed
from harness.wire.shm import SharedBuffer, pack_args


@pytest.mark.parametrize("t", [
    torch.arange(24, dtype=torch.float32).reshape(2, 3, 4),
    torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last),
    torch.tensor([1 + 2j, 3 - 1j], dtype=torch.complex64),
    torch.tensor([True, False, True]),
    torch.randn(7).to(torch.bfloat16),
], ids=["fp32", "channels_last", "complex", "bool", "bf16"])
def test_an_output_crosses_whole_and_is_sealed_against_every_later_write(t):
    slot = OutputSlot(t.numel() * 8, allocate=t.numel() * t.element_size())
    assert not slot.sealed()
    desc = write_sealed(slot.fd, t)
    assert slot.sealed()
    assert torch.equal(slot.read(desc), t)
    with pytest.raises(OSError):  # no descriptor can write it any more
        os.pwrite(slot.fd, b"\0" * 4, 0)
    with pytest.raises(OSError):  # nor a new writable mapping
        mmap.mmap(slot.fd, slot.size)
    slot.close()


def test_a_writable_mapping_kept_elsewhere_leaves_the_file_unsealed():
    slot = OutputSlot(4096)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # another process of the candidate's, holding the file mapped to write into it later
        held = mmap.mmap(slot.fd, 4096)
        os.write(w, b"x")
        time.sleep(5)
        held.close()
        os._exit(0)
    try:
        assert os.read(r, 1) == b"x"
        write_sealed(slot.fd, torch.ones(8))
        assert not slot.sealed()  # the kernel refused the seal: the judge sees it as the report arrives
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        slot.close()


def test_the_judge_never_writes_or_grows_an_output_file():
    slot = OutputSlot(64)
    with pytest.raises(WireError):
        slot.write(torch.ones(4), 0)
    with pytest.raises(WireError):
        slot.ensure(128)
    write_sealed(slot.fd, torch.ones(4))
    with pytest.raises(WireError):  # a descriptor beyond the file
        slot.read({"offset": 0, "shape": [100], "dtype": "float32"})
    slot.close()


def test_a_verified_trials_inputs_are_views_in_the_buffer_like_a_timing_sets():
    judge = SharedBuffer.create(4096)
    descs = pack_args(judge, [torch.arange(8.0), 3], grow=True, offset=256)
    cand = SharedBuffer(judge.fd, judge.size)
    x, v = _in_place(cand, descs, "cpu")
    assert v == 3 and torch.equal(x, torch.arange(8.0))
    pack_args(judge, [torch.zeros(8), 3], grow=False, offset=256)
    assert torch.equal(x, torch.zeros(8))  # in place: what the judge writes there is what the call reads


WHERE = """
import torch, torch.nn as nn

def _where(p):
    with open("/proc/self/maps") as fh:
        for line in fh:
            if "kv-shm" in line:
                lo, hi = (int(v, 16) for v in line.split()[0].split("-"))
                if lo <= p < hi:
                    return p - lo
    return -1

class ModelNew(nn.Module):
    def forward(self, x):
        print(f"AT {_where(x.data_ptr())}", flush=True)
        return torch.relu(x)
"""


def test_an_honest_kernel_hands_every_output_over_sealed_and_sees_one_placement():
    settings = EvalSettings(naive_timing_trials=5, verified_min_iters=5, verified_max_iters=8,
                            verified_seconds_per_subject=0.2, cpu_threads=1)
    with harness.Evaluator("cpu", "small", settings=settings) as ev:
        r = ev.evaluate(WHERE, "level1/19_ReLU")
    assert (r.results["naive"].verdict, r.results["verified"].verdict) == ("correct", "correct"), \
        r.results["verified"].reasons
    sealed = next(g for g in r.record.guards if g.name == "sealed_handover")
    assert sealed.passed and sealed.applicable and "sealed" in sealed.detail
    at = [int(x.split()[1]) for x in r.record.stdout_tail.splitlines() if x.startswith("AT ")]
    naive, verified = len(r.record.naive_trials), len(r.record.verified_trials)
    trial_places = at[naive:naive + verified + 1]  # the verified trials and the repeat of the first one
    later = at[naive + verified + 1:]  # the naive loop, the timed calls and the guards' calls, on the timing sets
    assert all(p < 0 for p in at[:naive])  # KernelBench's trials: private copies
    assert all(p >= 0 for p in trial_places + later)
    assert set(trial_places) <= set(later)  # no address a verified trial used is one no timed call uses
    assert len(set(trial_places)) > 1  # and trials in a row do not share one


def test_a_seal_the_kernel_refuses_for_a_moment_is_tried_again(monkeypatch):
    """EBUSY from F_ADD_SEALS (a page reference the kernel cannot account for yet): tried again a few times; a writable
    mapping that stays refuses it every time, and the file stays unsealed for the judge to see."""
    import errno
    import fcntl

    from harness.wire import sealed

    real = fcntl.fcntl

    slot = sealed.OutputSlot(4096)
    mm = mmap.mmap(slot.fd, 4096)  # writable and shared: the kernel refuses the write seal while it exists
    assert not sealed._seal_write(slot.fd, retries=1) and not slot.sealed()
    mm.close()
    refusals = []

    def busy_twice(fd, cmd, arg=0):
        if cmd == fcntl.F_ADD_SEALS and len(refusals) < 2:
            refusals.append(cmd)
            raise OSError(errno.EBUSY, "busy")
        return real(fd, cmd, arg)

    monkeypatch.setattr(sealed.fcntl, "fcntl", busy_twice)
    assert sealed._seal_write(slot.fd) and len(refusals) == 2
    monkeypatch.undo()
    assert slot.sealed()
