"""What the judge holds on the device at full size, so that a problem with 6 GiB tensors fits an 80 GB card: its own
copies of the timing sets (the baselines are timed on them) all kept while small, one at a time past
``timing_copies_bytes``, and either way the values the candidate's timed calls get in the shared buffer, renewals
included; the TF32 run's output parked in host memory while the float64 reference runs, where the device lacks room."""

from __future__ import annotations

import socket

import pytest
import torch

import harness
from harness import EvalSettings
from harness.judge.baseline_sets import BaselineSets
from harness.wire.conn import Conn
from harness.wire.shm import unpack_args

SETTINGS = EvalSettings(naive_timing_trials=10, verified_min_iters=5, verified_max_iters=10,
                        verified_seconds_per_subject=0.3, cpu_threads=1)
RELU = "level1/19_ReLU"


def test_past_the_budget_one_set_is_held_and_another_drawn_again_when_used():
    draws: list[int] = []

    def draw(idx):
        draws.append(idx)
        return [torch.full((4,), float(idx))]

    sets = BaselineSets(draw, 3, keep_all=False)
    assert sets[1][0][0] == 1 and sets[1][0][0] == 1 and draws == [1]  # held while in use
    assert sets[2][0][0] == 2 and draws == [1, 2] and len(sets._kept) == 1  # the one in use only
    sets.keep(0, [torch.zeros(4)])  # a renewal of a set not held: drawn from its new seed when used
    assert list(sets._kept) == [2]
    sets.keep(2, [torch.full((4,), 9.0)])  # a renewal of the held one replaces it
    assert sets[2][0][0] == 9 and draws == [1, 2]
    kept = BaselineSets(draw, 3, keep_all=True)
    for i in range(3):
        kept.keep(i, [torch.full((4,), 10.0 + i)])
    assert [kept[i][0][0].item() for i in range(3)] == [10, 11, 12] and draws == [1, 2]
    kept.clear()
    assert not kept and len(kept) == 0


def _session(copies_bytes: int):
    from harness.judge.judge import Judge, Session
    from problems import load

    settings = SETTINGS.model_copy(update={"timing_copies_bytes": copies_bytes})
    with harness.Evaluator("cpu", "small", settings=settings) as e:
        job = e._setup.base_job(load(RELU)).model_copy(update={"fresh_seeds": list(range(1, 40)), "perturb_seed": 7})
    ours, theirs = socket.socketpair()
    session = Session(Judge(job), Conn(ours))
    return session, Conn(theirs)


@pytest.mark.parametrize("copies_bytes", [0, 2**40], ids=["one_at_a_time", "all_kept"])
def test_the_baselines_time_the_values_the_kernel_gets_in_the_buffer(copies_bytes):
    session, theirs = _session(copies_bytes)
    session._timing_inputs()
    assert theirs.recv(timeout=10)[0] == "timing_inputs"
    sets = session.timing_sets
    assert sets.keep_all == (copies_bytes > 0) and len(sets) == len(session.set_descs) >= 3

    def in_buffer(idx):
        return unpack_args(session.buf, session.set_descs[idx], "cpu")[0]

    for _ in range(2):  # as drawn, then after each set's renewal with fresh values
        for idx in range(len(sets)):
            assert torch.equal(sets[idx][0], in_buffer(idx))
            if not sets.keep_all:
                assert len(sets._kept) == 1
        for idx in range(len(sets)):
            before = in_buffer(idx).clone()
            session._renew(idx)
            assert not torch.equal(in_buffer(idx), before)  # fresh values
    req = harness.wire.messages.parse("baseline", {"subject": "fp32", "n": 6, "timed": True})
    session._baseline(req)
    assert len(theirs.recv(timeout=10)[1]["ms"]) == 6
    if not sets.keep_all:
        assert len(sets._kept) == 1


def test_the_tf32_output_is_parked_on_the_host_only_where_the_float64_reference_lacks_room():
    from harness.judge.judge import parks_on_host

    class Cuda(torch.Tensor):  # a CUDA tensor's answers without a GPU: only the decision is tested here
        is_cuda = True

    gib = 2**30
    out = torch.empty(0).as_subclass(Cuda)
    out.numel = lambda: 6 * gib // 4  # level1/26's output: 6 GiB in fp32, 12 GiB as float64
    assert parks_on_host(out, 20 * gib)  # an H100 with the judge's buffer and the candidate on it
    assert not parks_on_host(out, 60 * gib)  # an H200
    assert not parks_on_host(torch.empty(6), 0)  # already in host memory (a CPU run)
    assert not parks_on_host(out, None)  # no device to ask
    assert not parks_on_host((out, out), 0)  # not one tensor: left where it is
