"""The ``waits_for_caller_stream`` guard (the candidate-side rewrite in harness.candidate.worker._rewritten_inputs; the
judge compares what comes back with input set 1's answer), exercised on the CPU.

On a GPU, work a candidate starts on its own stream without waiting for the caller's stream runs during
the device-side hold, before the input rewrite queued behind it. Here the fake device below runs such
"early" work at the moment the hold is queued, which is what the GPU would do; ordered work runs when
called. Both sides: ordered work passes, early work is caught."""

from __future__ import annotations

import torch

from harness.candidate.worker import EARLY_START_HOLD_US, _rewritten_inputs
from harness.judge.judge import Expected, verified_pass
from harness.measure.compare import error_stats
from harness.measure.device import DeviceOps


class FakeStreamDevice(DeviceOps):
    def __init__(self) -> None:
        super().__init__("cpu")
        self.is_cuda = self.can_hold = True  # the guard only applies where the device can hold
        self.on_hold: list = []
        self.holds: list[float] = []

    def sync(self) -> None:
        pass

    def hold(self, us: float) -> None:
        self.holds.append(us)
        for work in self.on_hold:
            work()


class Ordered(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


class EarlyStart(torch.nn.Module):
    """Its product is computed when the device starts holding: from the inputs as they were then."""

    def __init__(self, device: FakeStreamDevice, inputs) -> None:
        super().__init__()
        self.early = None
        device.on_hold.append(lambda: setattr(self, "early", inputs[0] @ inputs[1]))

    def forward(self, a, b):
        out = self.early if self.early is not None else a @ b  # no hold queued: nothing ran early
        self.early = None
        return out


def sets(n: int = 2) -> list[list[torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    return [[torch.rand(16, 16, generator=g), torch.rand(16, 16, generator=g)] for _ in range(n)]


class StubJudge:
    """Stands in for the judge's side: takes the guard's output and judges it as the judge does, against
    set 1's answer."""

    def __init__(self, expected: torch.Tensor) -> None:
        self.expected, self.requests, self.passed = Expected(expected.double()), [], None

    def request(self, kind, payload=None):
        self.requests.append((kind, payload))
        return {"check": True}

    def send_output(self, out, offset, capacity, exc=None):
        self.passed = exc is None and verified_pass(error_stats(out, self.expected.out), self.expected)


class Ctx:
    def __init__(self, model, ops, inputs) -> None:
        self.model_new, self.ops, self.timing_inputs = model, ops, inputs
        self.judge = StubJudge(inputs[1][0] @ inputs[1][1]) if len(inputs) > 1 else None
        self.guards, self.out_offset, self.out_capacity = [], 0, 0


def early_start(model, inputs, ops) -> Ctx:
    ctx = Ctx(model, ops, inputs)
    _rewritten_inputs(ctx, "waits_for_caller_stream", EARLY_START_HOLD_US)
    return ctx


def test_work_ordered_after_the_callers_stream_passes_and_inputs_are_restored():
    ops, inputs = FakeStreamDevice(), sets()
    before = [x.clone() for x in inputs[0]]
    ctx = early_start(Ordered(), inputs, ops)
    assert ctx.judge.requests == [("guard_output", {"guard": "waits_for_caller_stream", "expect_set": 1,
                                                    "hold_us": EARLY_START_HOLD_US})]
    assert ctx.judge.passed and not ctx.guards
    assert ops.holds == [EARLY_START_HOLD_US]
    assert all(torch.equal(x, b) for x, b in zip(inputs[0], before, strict=True))


def test_work_started_before_the_callers_stream_is_caught():
    ops, inputs = FakeStreamDevice(), sets()
    ctx = early_start(EarlyStart(ops, inputs[0]), inputs, ops)
    assert ctx.judge.passed is False


def test_not_applicable_with_one_input_set():
    ctx = early_start(Ordered(), sets(1), FakeStreamDevice())
    assert [(g.name, g.applicable) for g in ctx.guards] == [("waits_for_caller_stream", False)]
