"""The ``waits_for_caller_stream`` guard (harness.worker._early_start), exercised on the CPU.

On a GPU, work a candidate starts on its own stream without waiting for the caller's stream runs during
the device-side hold, before the input rewrite queued behind it. Here the fake device below runs such
"early" work at the moment the hold is queued, which is what the GPU would do; ordered work runs when
called. Both sides: ordered work passes, early work is caught."""

from __future__ import annotations

import torch

from harness.device import DeviceOps
from harness.worker import EARLY_START_HOLD_US, _early_start


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


def test_work_ordered_after_the_callers_stream_passes_and_inputs_are_restored():
    ops, inputs = FakeStreamDevice(), sets()
    before = [x.clone() for x in inputs[0]]
    g = _early_start(Ordered(), Ordered(), inputs, ops)
    assert g.name == "waits_for_caller_stream" and g.applicable and g.passed, g.detail
    assert ops.holds == [EARLY_START_HOLD_US]
    assert all(torch.equal(x, b) for x, b in zip(inputs[0], before, strict=True))


def test_work_started_before_the_callers_stream_is_caught():
    ops, inputs = FakeStreamDevice(), sets()
    g = _early_start(EarlyStart(ops, inputs[0]), Ordered(), inputs, ops)
    assert g.applicable and not g.passed
    assert "does not wait for the caller's" in g.detail


def test_not_applicable_on_a_cpu_or_with_one_input_set():
    assert not _early_start(Ordered(), Ordered(), sets(), DeviceOps("cpu")).applicable
    assert not _early_start(Ordered(), Ordered(), sets(1), FakeStreamDevice()).applicable
