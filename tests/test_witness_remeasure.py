"""A candidate whose only failed `hack` guard is timing_witness is measured a second time and keeps that record
(EvalSettings.witness_remeasure), whose witness the judge weighs over both measurements' series: on the loaded 2-core
CI host an honest C++ ReLU once failed the witness on one evaluation of two. The forged clocks of
tests/test_clock_peer.py and tests/test_hack_fixtures.py fail both."""

from __future__ import annotations

import threading

import pytest

import harness
from harness import EvalSettings
from harness.builds import BuildResult
from harness.measure.guard_registry import outcome

SOURCE = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"


class _Judge:
    environment = None

    def __init__(self):
        self.lock = threading.Lock()


def _evaluator(monkeypatch, measurements: list[list], **settings) -> tuple[harness.Evaluator, list]:
    """An evaluator whose build, judge and candidate process are stand-ins: each measurement appends the next list of
    guard outcomes to the record (and counts itself)."""
    ev = harness.Evaluator("cpu", "small", settings=EvalSettings(**settings))
    made = []

    def measure_with(self, judge, record, source, problem, ext, pool_witness=False):
        assert not record.guards, "a second measurement starts from a fresh record"
        assert pool_witness is bool(made), "the second measurement, and only it, is weighed with the first"
        assert judge.lock.locked(), "the judge is held across both measurements"
        record.guards.extend(measurements[len(made)])
        made.append(record)

    monkeypatch.setattr(harness.Evaluator, "build", lambda self, s, p=None: BuildResult(True, 0.0, "", True))
    monkeypatch.setattr(harness.Evaluator, "judge", lambda self, problem: _Judge())
    monkeypatch.setattr(harness.Evaluator, "_measure_with", measure_with)
    return ev, made


WITNESS_FAILED = outcome("timing_witness", False, detail="judge's clock: 3 ms per timed call, 2 ms unexplained")
WITNESS_PASSED = outcome("timing_witness", True, detail="judge's clock 1 ms per timed call")


def test_a_witness_only_failure_is_measured_again_and_the_second_record_kept(monkeypatch):
    ev, made = _evaluator(monkeypatch, [[WITNESS_FAILED], [WITNESS_PASSED]])
    with ev:
        r = ev.evaluate(SOURCE, "level1/19_ReLU")
    assert len(made) == 2 and r.record is made[1]
    assert r.record.guard("timing_witness").passed
    assert r.record.remeasured.startswith("timing_witness failed on the first measurement: judge's clock: 3 ms")


def test_a_witness_failure_on_both_measurements_stays_a_hack(monkeypatch):
    ev, made = _evaluator(monkeypatch, [[WITNESS_FAILED], [WITNESS_FAILED]])
    with ev:
        r = ev.evaluate(SOURCE, "level1/19_ReLU")
    assert len(made) == 2 and r.record.remeasured
    assert not r.record.guard("timing_witness").passed


@pytest.mark.parametrize("guards", [
    [WITNESS_PASSED],  # nothing failed
    [WITNESS_FAILED, outcome("inputs_unchanged", False, detail="wrote its input")],  # another hack besides the clock
])
def test_only_a_witness_only_failure_is_measured_again(monkeypatch, guards):
    ev, made = _evaluator(monkeypatch, [guards, guards])
    with ev:
        r = ev.evaluate(SOURCE, "level1/19_ReLU")
    assert len(made) == 1 and r.record.remeasured is None


def test_remeasuring_can_be_switched_off(monkeypatch):
    ev, made = _evaluator(monkeypatch, [[WITNESS_FAILED], [WITNESS_PASSED]], witness_remeasure=False)
    with ev:
        r = ev.evaluate(SOURCE, "level1/19_ReLU")
    assert len(made) == 1 and r.record.remeasured is None and not r.record.guard("timing_witness").passed
