"""Issue 30: the judge's clock can calibrate through a peer placed as the candidate is (harness.candidate.clock_peer,
EvalSettings.witness_calibration='peer'): a sandboxed process of the harness's own that makes a timed call without
the kernel, so a second process and a second device context are in the calibration. These tests run it on a CPU."""

from __future__ import annotations

import os
import socket
import subprocess
import threading
from pathlib import Path

import harness
from harness import EvalSettings
from harness.candidate.clock_peer import serve
from harness.judge.peer_link import PeerLink
from harness.wire.conn import Conn
from tests.conftest import descendants

ROOT = Path(__file__).resolve().parents[1]
HONEST = (ROOT / "agents" / "demo_kernels" / "cpu" / "l1_19_relu_t2.py").read_text()
# A ReLU behind 10 ms of host work with the evaluator's clock forged to read a tenth of the real time (as in
# benchmarks/witness_resolution): far beyond the peer's noise on a loaded 2-core host (its calibration read up to
# ~3 ms per call there while the rest of the suite ran), so it is caught every time.
FORGED = '''
import sys, time, types, torch, torch.nn as nn

def _forged(self, fn, *, sync_before_end, lead_us=0.0):
    ms, out = _real(self, fn, sync_before_end=sync_before_end, lead_us=lead_us)
    return ms / 10, out

_clock = sys.modules["harness.measure.device"].Clock
_real = types.FunctionType(_clock.interval.__code__, _clock.interval.__globals__)
_real.__kwdefaults__ = _clock.interval.__kwdefaults__
_clock.interval.__code__ = _forged.__code__
_clock.interval.__globals__.update(_real=_real)

class ModelNew(nn.Module):
    def forward(self, x):
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 10e-3:
            pass
        return torch.relu(x)
'''
SETTINGS = EvalSettings(naive_timing_trials=20, verified_min_iters=10, verified_max_iters=30,
                        verified_seconds_per_subject=0.5, cpu_threads=1, witness_calibration="peer")


def _peer_pair() -> tuple[PeerLink, threading.Thread]:
    judge_end, peer_end = socket.socketpair()
    th = threading.Thread(target=serve, args=(Conn(peer_end),), daemon=True)
    th.start()
    link = PeerLink(judge_end.detach(), {"device": "cpu", "lead_us": 0.0, "device_handover": False, "pin": False})
    return link, th


def test_a_peer_sample_is_one_kernel_less_timed_call_and_the_peer_ends_with_its_judge():
    link, th = _peer_pair()
    samples = [link.sample({"numel": 4096, "dtype": "float32"}) for _ in range(5)]
    assert link.failure is None and all(s is not None and 0 < s < 1000 for s in samples)
    # a float64 expected value: the peer hands over float32, as a candidate must
    assert link.sample({"numel": 16, "dtype": "float64"}) is not None
    link.close()
    th.join(timeout=10)
    assert not th.is_alive()


def test_a_batched_peer_sample_makes_the_batch_s_calls_with_the_pre_call_work_between(monkeypatch):
    # A release of B timed calls is calibrated by B kernel-less calls, each after the first behind the pre-call work the
    # worker does between a batch's calls (on a GPU that work, not the release, is most of what a batched call holds)
    import harness.candidate.worker as worker

    seeds: list[int] = []
    real = worker._pre_call
    monkeypatch.setattr(worker, "_pre_call", lambda ops, like, seed, **kw: (seeds.append(seed), real(ops, like, seed, **kw)))
    link, th = _peer_pair()
    like = {"numel": 4096, "dtype": "float32"}
    assert link.sample(like) is not None and seeds == [0]
    seeds.clear()
    assert link.sample(like, 4) is not None and seeds == [0, 1, 2, 3]  # one before 'go', three inside the interval
    link.close()
    th.join(timeout=10)


def test_a_peer_that_is_gone_leaves_no_sample_and_says_why():
    judge_end, peer_end = socket.socketpair()
    peer_end.close()
    link = PeerLink(judge_end.detach(), {"device": "cpu", "lead_us": 0.0, "device_handover": False}, ready_timeout_s=5)
    assert link.sample({"numel": 4, "dtype": "float32"}) is None and link.failure
    assert link.sample({"numel": 4, "dtype": "float32"}) is None  # and stays gone: the judge calibrates itself


def _peers_running() -> int:
    """This test process's clock peers (its descendants only: another test worker's come and go meanwhile)."""
    out = subprocess.run(["pgrep", "-f", "harness.candidate.clock_peer"], capture_output=True, text=True).stdout
    return len({int(pid) for pid in out.split()} & set(descendants(os.getpid())))


def test_peer_calibrated_witness_credits_an_honest_kernel_and_catches_a_forged_clock():
    before = _peers_running()
    with harness.Evaluator("cpu", "small", settings=SETTINGS) as ev:
        honest = ev.evaluate(HONEST, "level1/19_ReLU")
        forged = ev.evaluate(FORGED, "level1/19_ReLU")
        assert _peers_running() > before  # beside the problem's judge (its sandbox's processes match too)
    g = honest.record.guard("timing_witness")
    assert g.passed and "calibrated by peer" in g.detail, g.detail
    # where the calls' time went, for a reader chasing unexplained time: the candidate process's own split
    assert "the candidate process's own split" in g.detail and "timer" in g.detail, g.detail
    assert honest.results["verified"].verdict == "correct"
    g = forged.record.guard("timing_witness")
    assert not g.passed and "calibrated by peer" in g.detail, g.detail
    assert forged.results["verified"].verdict == "hack"
    assert forged.record.remeasured.startswith("timing_witness failed on the first measurement"), "measured twice"
    assert "with the first measurement's" in g.detail, g.detail  # the second weighed with the first
    assert _peers_running() == before  # ended with the evaluator


# FORGED for a batched release, whose calls read the clock through Clock.queued: that reading forged the same way, and
# 30 ms hidden in 29 of 30 parts (a 10 ms one passed once under the suite's load: the peer's calibration of a release of
# 2 calls read 20 ms there, where the candidate's own wake-up took 16 ms)
FORGED_QUEUED = FORGED.replace("< 10e-3", "< 30e-3").replace("class ModelNew", '''
class _Scaled:
    def __init__(self, reading):
        self.reading = reading

    def ms(self):
        return self.reading.ms() / 30

def _forged_queued(self, fn, *, lead_us=0.0):
    reading, out = _real_queued(self, fn, lead_us=lead_us)
    return _Scaled(reading), out

_real_queued = types.FunctionType(_clock.queued.__code__, _clock.queued.__globals__)
_real_queued.__kwdefaults__ = _clock.queued.__kwdefaults__
_clock.queued.__code__ = _forged_queued.__code__
_clock.queued.__globals__.update(_real_queued=_real_queued, _Scaled=_Scaled)

class ModelNew''')


def test_a_batched_release_is_calibrated_by_the_peer_and_a_forged_clock_still_caught():
    # The peer calibrates a release of the problem's batch (B kernel-less calls), not a single call: the judge's clock
    # then weighs a batch against a batch. The forgery hides 29 ms of every 30 ms call, far beyond either's noise here.
    settings = SETTINGS.model_copy(update={"timed_batch": 2})
    with harness.Evaluator("cpu", "small", settings=settings) as ev:
        forged = ev.evaluate(FORGED_QUEUED, "level1/19_ReLU")
    g = forged.record.guard("timing_witness")
    assert "calibrated by peer" in g.detail and "per release of 2 timed calls" in g.detail, g.detail
    assert not g.passed and forged.results["verified"].verdict == "hack", g.detail
