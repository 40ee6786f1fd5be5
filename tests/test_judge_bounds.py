"""Issue 29: the judge cannot be steered into failure. Everything a candidate process sends is bounded before the judge
acts on it; anything out of bounds is the candidate's verdict (a failed ``judge_protocol`` guard, or a trial judged on
what it declares), never a harness error, and the same judge serves the next candidate of the problem correctly."""

from __future__ import annotations

import math
import socket
import time

import pytest
import torch

import harness
from harness import EvalSettings
from harness.errors import HarnessError
from harness.wire import messages as M
from harness.wire.conn import Conn, WireError

SETTINGS = EvalSettings(naive_timing_trials=10, verified_min_iters=5, verified_max_iters=10,
                        verified_seconds_per_subject=0.3, cpu_threads=1)
RELU = "level1/19_ReLU"
HONEST = """
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def _returning(expr: str) -> str:
    return f"""
import torch, torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return {expr}
"""


# The candidate replaces the worker's judge link (it runs in the candidate's process) and sends the judge what the
# harness's own worker never would: in place of its tf32 baseline requests, ``payload`` up to ``repeat`` times.
def _baseline_flood(payload: dict, repeat: int) -> str:
    return f"""
import sys, torch, torch.nn as nn
link = getattr(sys.modules["__main__"], "JudgeLink", None)
if link is not None:
    real = link.request
    def request(self, kind, payload=None):
        if kind == "baseline" and payload.get("subject") == "tf32":
            for _ in range({repeat}):
                self.conn.send("baseline", {payload!r})
                kind, reply = self.conn.recv(timeout=3600)
            return reply
        return real(self, kind, payload)
    link.request = request
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""


def _judge_pid(ev) -> int:
    return ev._judges.running[RELU].child.proc.pid


def _breach(r) -> str:
    g = next((g for g in r.record.guards if g.name == "judge_protocol"), None)
    assert g is not None and not g.passed, [(g.name, g.detail[:200]) for g in r.record.guards if not g.passed]
    return g.detail


@pytest.fixture(scope="module")
def ev():
    with harness.Evaluator("cpu", "small", settings=SETTINGS) as e:
        yield e


def _honest_after(ev, pid: int) -> None:
    r = ev.evaluate(HONEST, RELU)
    assert (r.results["naive"].verdict, r.results["verified"].verdict) == ("correct", "correct"), \
        r.results["verified"].reasons
    assert _judge_pid(ev) == pid  # the same judge, alive, served it


def test_an_absurd_output_shape_or_dtype_is_judged_not_a_harness_error(ev):
    """A stride-0 output claiming 2^31 x 2^31 elements (2^64 bytes here) crashed the judge when it made a tensor of
    that shape to judge it on (HarnessError, retried on every --resume); so did a complex128 output of the right
    shape (more bytes than its slot: its values were then read from a meta tensor)."""
    ev.evaluate(HONEST, RELU)
    pid = _judge_pid(ev)
    giant = ev.evaluate(_returning("torch.as_strided(torch.zeros(1), (2**31, 2**31), (0, 0))"), RELU)
    assert giant.results["naive"].verdict != "correct" and giant.results["verified"].verdict != "correct"
    assert giant.record.naive_trials and all(t.error is not None and not t.error.shape_ok and
                                             t.error.out_shape == [2**31, 2**31] for t in giant.record.naive_trials)
    wide = ev.evaluate(_returning("torch.relu(x).to(torch.complex128)"), RELU)
    assert (wide.results["naive"].verdict, wide.results["verified"].verdict) == ("incorrect", "incorrect")
    assert all(t.error.shape_ok and t.error.out_dtype == "complex128" and math.isinf(t.error.max_abs)
               for t in wide.record.naive_trials)
    _honest_after(ev, pid)


@pytest.mark.parametrize("payload,repeat,why", [
    # one request: the 100000 calls once kept the judge busy past the parent's 120 s wait (no verdict)
    ({"subject": "tf32", "n": 100_000, "start": 0, "timed": True}, 1, "n: Input should be less than or equal to 16"),
    # requests each within bounds, more of them than the timer's rules ever ask for
    ({"subject": "tf32", "n": 16, "start": 0, "timed": True}, 10_000, "more than 26 timed calls of the tf32 baseline"),
], ids=["one_huge_request", "many_requests"])
def test_baseline_work_beyond_its_bounds_is_the_candidates_breach(ev, payload, repeat, why):
    ev.evaluate(HONEST, RELU)
    pid = _judge_pid(ev)
    t0 = time.monotonic()
    r = ev.evaluate(_baseline_flood(payload, repeat), RELU)
    assert why in _breach(r) and r.results["verified"].verdict == "hack"
    assert time.monotonic() - t0 < 60
    _honest_after(ev, pid)


def test_a_judge_kept_busy_past_its_deadline_is_cut_off_and_the_candidate_charged():
    """Warm-up (untimed) calls have no count of their own: the judge seconds all baseline work of an evaluation may
    take (EvalSettings.judge_baseline_seconds) stop them, mid-request, as the candidate's breach."""
    settings = SETTINGS.model_copy(update={"judge_baseline_seconds": 2.0})
    with harness.Evaluator("cpu", "small", settings=settings) as e:
        e.evaluate(HONEST, RELU)
        pid = _judge_pid(e)
        t0 = time.monotonic()
        r = e.evaluate(_baseline_flood({"subject": "fp32", "n": 16, "start": 0, "timed": False}, 10**8), RELU)
        assert "kept the judge busy past 2 s" in _breach(r) and r.results["verified"].verdict == "hack"
        assert time.monotonic() - t0 < 60
        _honest_after(e, pid)


def test_a_baseline_request_stops_when_the_candidate_process_is_gone():
    """The parent waits a bounded time for the judge's report once the candidate process has ended: a request the
    judge is still working on for a candidate that is gone ends at its next call, not after all of them."""
    from harness.judge.judge import Judge, Session
    from problems import load

    with harness.Evaluator("cpu", "small", settings=SETTINGS) as e:
        job = e._setup.base_job(load(RELU)).model_copy(update={"fresh_seeds": list(range(1, 40)), "perturb_seed": 7})
    judge = Judge(job)
    ours, theirs = socket.socketpair()
    session = Session(judge, Conn(ours))
    session.timing_sets = [judge.inputs(seed, 1.0) for seed in judge.timing_seeds]
    req = M.parse("baseline", {"subject": "fp32", "n": 8, "timed": True})
    session._baseline(req)
    assert len(Conn(theirs).recv(timeout=10)[1]["ms"]) == 8  # served while the candidate is there
    theirs.close()
    with pytest.raises(WireError, match="hung up"):
        session._baseline(req)


def test_a_message_nested_past_the_parsers_depth_is_a_protocol_breach(ev):
    """'[[[[...' past the JSON parser's depth raised RecursionError inside the judge: a harness error."""
    src = """
import sys, torch, torch.nn as nn
link = getattr(sys.modules["__main__"], "JudgeLink", None)
if link is not None:
    def request(self, kind, payload=None):
        self.conn.sock.sendall(b"[" * 200000 + b"\\n")
        return dict(self.conn.recv(timeout=60)[1] or {})
    link.request = request
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""
    ev.evaluate(HONEST, RELU)
    pid = _judge_pid(ev)
    try:
        r = ev.evaluate(src, RELU)
    except HarnessError as exc:  # what it was
        pytest.fail(f"a harness error: {exc}")
    assert "no message" in _breach(r) and r.results["verified"].verdict == "hack"
    _honest_after(ev, pid)


def test_every_number_and_string_a_candidate_sends_is_bounded_by_the_protocol():
    """What the worker sends fits; anything larger is refused before the judge (or the parent) acts on it."""
    assert M.parse("output", {"type": "tensor", "shape": [2**31, 2**31], "dtype": "float32"}).shape == [2**31] * 2
    refused = [
        ("output", {"type": "tensor", "shape": [2**64], "dtype": "float32"}),  # no int64 size
        ("output", {"type": "tensor", "shape": [1] * 65, "dtype": "float32"}),
        ("output", {"type": "tensor", "shape": [1], "dtype": "x" * 10_000}),
        ("output", {"type": "exception", "text": "x" * 100_000}),
        ("output", {"type": "other", "name": "x" * 100_000}),
        ("params", {"params": [["x" * 100_000, [1]]]}),
        ("params", {"params": [["w", [1] * 65]]}),
        ("params", {"params": [], "built_under": 2**70}),
        ("naive_trial", {"index": 2**70}),
        ("baseline", {"subject": "fp32", "n": 17}),
        ("baseline", {"subject": "fp32", "n": 1, "start": 2**70}),
        ("guard_output", {"guard": "same_pointer_new_contents", "expect_set": 1, "hold_us": math.inf}),
        ("called", {"set": 0, "ms": [0.1], "phases_ms": {"go_reply": math.nan, "timer": 0, "handover": 0, "sync": 0}}),
        ("called", {"set": 0, "ms": [0.1], "phases_ms": {"go_reply": 0, "timer": 0, "handover": 0, "sync": 0, "x": 1}}),
        ("called", {"set": 0, "ms": [0.1] * (M.MAX_BATCH + 1)}),  # a batch larger than any the judge lets go
        ("go", {"set": 0, "count": 0}),
        ("go", {"set": 0, "count": M.MAX_BATCH + 1}),
    ]
    for kind, payload in refused:
        with pytest.raises(M.ProtocolBreach):
            M.parse(kind, payload)
    assert M.report("timing_samples", {"naive_kernel": [0.1, 0.2]}) == {"naive_kernel": [0.1, 0.2]}
    for kind, payload in (("built", {"seconds": math.nan}), ("timing_samples", {"naive_kernel": [-1.0]}),
                          ("timing_samples", {"naive_kernel": [math.inf]}),
                          ("timing_samples", {"naive_kernel": [0.1] * 100_001}),
                          ("timing_samples", {f"k{i}": [] for i in range(17)})):
        with pytest.raises(M.ProtocolBreach):
            M.report(kind, payload)


def test_shared_buffer_refuses_a_giant_descriptor_before_allocating():
    from harness.wire.shm import SharedBuffer

    buf = SharedBuffer.create(1024)
    for desc in ({"offset": 0, "shape": [2**31, 2**31], "dtype": "float32"},  # RuntimeError from torch.empty before
                 {"offset": 0, "shape": [1] * 65, "dtype": "float32"},
                 {"offset": -8, "shape": [2], "dtype": "float32"}):
        with pytest.raises(WireError):
            buf.read(desc)
    assert torch.equal(buf.read({"offset": 0, "shape": [2], "dtype": "float32"}), torch.zeros(2))


SHRINK_INPUTS = """import os
import torch
import torch.nn as nn


def _shrink():
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:kv-shm"):
                os.ftruncate(int(fd), 0)
        except OSError:
            pass


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        _shrink()
        return y
"""


def test_a_candidate_cannot_shrink_the_judges_input_buffer_under_it(ev):
    """The candidate's descriptor of the judge's input buffer once truncated it: the judge's next write faulted
    (SIGBUS), the judge died, and the evaluation was a HarnessError (red team rt-sandbox). Now the candidate gets a
    verdict, and the same judge serves the next candidate."""
    ev.evaluate(HONEST, RELU)
    pid = _judge_pid(ev)
    r = ev.evaluate(SHRINK_INPUTS, RELU)
    assert r.results["naive"].verdict in harness.VERDICTS and r.results["verified"].verdict in harness.VERDICTS
    _honest_after(ev, pid)
