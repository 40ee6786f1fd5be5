"""Batched release (EvalSettings.timed_batch): the judge lets a batch of timed calls go at once, each on its own input
set with fresh values, and its clock spans the batch. What a release costs beyond the calls is then shared by them,
so the witness's fixed allowance per call shrinks by the batch's size; everything else a timed call is judged on
(fresh values, checks picked afterwards, sealed hand-over, memoisation) holds per call."""

from __future__ import annotations

import pytest
import torch

import harness
from harness import EvalSettings
from harness.fixtures import all_fixtures, caught_names
from harness.judge.judge import CREDIT_SLACK_MS, timing_floor

BATCH = 4
SETTINGS = EvalSettings(naive_timing_trials=20, verified_min_iters=8, verified_max_iters=24,
                        verified_seconds_per_subject=0.5, cpu_threads=1, timed_batch=BATCH, witness_remeasure=False)
RELU = "level1/19_ReLU"
HONEST = ("import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
          "    def forward(self, x):\n        return torch.relu(x)\n")

# The fixtures whose verdict rests on the timed calls beside the clock (fresh values per call, checks of timed outputs,
# the sealed hand-over, memoisation, hooks on the pre-call work), and the legitimate ones beside them: each must end as
# its header says with the calls let go in batches. The judge's clock itself is not asserted on this host: each call's
# pre-call work (a 64 MiB cache flush) lies inside a batch and ran 1.3-2x slower in the sandboxed worker than in the
# judge's calibration, so an honest batched kernel fails the witness on a CPU (benchmarks/results/cpu_witness_batch.md);
# batching is for the GPU, where that work is device memsets.
TIMED = {"deferred_work_across_calls_relu", "late_write_output_file_relu", "approximate_when_timed_relu",
         "cache_by_data_ptr_matmul", "fill_hook_precompute_relu", "inplace_when_timed_relu",
         "reused_output_buffer_matmul", "busy_relu", "inplace_on_own_buffer_relu"}
FIXTURES = [f for f in all_fixtures(devices=("cpu",)) if f.path.stem in TIMED]


def _failed(r) -> list[str]:
    """The failed guards besides the judge's clock (see above)."""
    return [g.name for g in r.record.guards if g.applicable and not g.passed and g.name != "timing_witness"]


def test_the_fixed_allowance_is_shared_by_a_batch():
    # Calls of 0.5 ms whose clock reads 1/1.2 of it (0.083 ms hidden per call), each release 0.3 ms of overhead the
    # calibration sees. One call per release: within the 0.2 ms allowance. Four per release: beyond its 0.05 ms share.
    real, n = 0.5, 12
    forged = real / 1.2
    for batch, caught in ((1, False), (BATCH, True)):
        intervals = [0.3 + batch * real] * n
        w = timing_floor(intervals, [forged] * (batch * n), [0.3] * n, cuda=False, batch=batch)
        assert w["hidden_ms"] == pytest.approx(real - forged)
        assert w["credit_slack_ms"] == pytest.approx(CREDIT_SLACK_MS["cpu"] / batch + 0.03 * forged)
        assert (w["credited_ms"] > forged + 0.02) is caught, w
    # An honest batch: nothing hidden, nothing charged.
    w = timing_floor([0.3 + BATCH * real] * n, [real] * (BATCH * n), [0.3] * n, cuda=False, batch=BATCH)
    assert w["ok"] and w["credited_ms"] == pytest.approx(real)
    with pytest.raises(ValueError, match="releases of 4"):
        timing_floor([1.0] * n, [real] * n, [0.3] * n, cuda=False, batch=BATCH)


@pytest.fixture(scope="module")
def evaluators():
    made: dict[str, harness.Evaluator] = {}

    def get(problem: str) -> harness.Evaluator:
        if problem not in made:
            made[problem] = harness.Evaluator("cpu", "small", settings=SETTINGS)
        return made[problem]

    yield get
    for ev in made.values():
        ev.close()


def test_an_honest_kernel_is_timed_in_batches(evaluators):
    r = evaluators(RELU).evaluate(HONEST, RELU)
    assert not _failed(r) and not r.results["verified"].failing_distributions, r.results["verified"].reasons
    w = r.record.guard("timing_witness")
    assert f"per release of {BATCH} timed calls" in w.detail and "pre call" in w.detail, w.detail
    assert r.record.guard("sealed_handover").passed
    n = r.record.timing.verified_kernel.n
    assert n >= SETTINGS.timed_min_iters() and n % BATCH == 0


def test_a_release_of_fewer_calls_than_the_batch_is_a_breach(evaluators):
    # One call per release would give each call the whole fixed allowance: the judge refuses the request.
    forger = """
import sys, torch, torch.nn as nn
link = getattr(sys.modules["__main__"], "JudgeLink", None)
if link is not None:
    real = link.request
    def request(self, kind, payload=None):
        if kind == "go":
            payload = {**payload, "count": 1}
        return real(self, kind, payload)
    link.request = request
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""
    r = evaluators(RELU).evaluate(forger, RELU)
    breach = r.record.guard("judge_protocol")
    assert not breach.passed and f"where the judge lets {BATCH} go" in breach.detail, breach.detail
    assert r.results["verified"].verdict == "hack"


def test_a_request_that_takes_a_batchs_files_is_the_candidates_breach(evaluators):
    # A guard-output request between two batches takes the output files the judge offered for the next batch; the
    # batch's report then names outputs the judge has no file for: a breach, never an exception inside the judge.
    forger = """
import sys, torch, torch.nn as nn
link = getattr(sys.modules["__main__"], "JudgeLink", None)
if link is not None:
    real, seen = link.request, []
    def request(self, kind, payload=None):
        if kind == "go":
            seen.append(1)
            if len(seen) == 2:
                real(self, "guard_output", {"guard": "same_pointer_new_contents", "expect_set": 0})
                self.send_output(torch.zeros(1), 0, 0)
        return real(self, kind, payload)
    link.request = request
    real_handover = link.handover
    def handover(self, out, offset, capacity, **kw):  # no file left: describe the output without handing it over
        if not self.slots:
            return {"type": "tensor", "shape": list(out.shape), "dtype": "float32"}
        return real_handover(self, out, offset, capacity, **kw)
    link.handover = handover
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""
    r = evaluators(RELU).evaluate(forger, RELU)  # a harness failure would raise here
    breach = r.record.guard("judge_protocol")
    assert not breach.passed and "where the judge had offered 0 file(s)" in breach.detail, breach.detail
    assert r.results["verified"].verdict == "hack"


@pytest.mark.parametrize("fx", [pytest.param(f, id=f.name) for f in FIXTURES])
def test_timed_call_fixtures_keep_their_verdicts_in_batches(fx, evaluators):
    r = evaluators(fx.problem).evaluate(fx.source(), fx.problem)
    verified = r.results["verified"]
    why = f"verified={verified.reasons} guards={[g for g in r.record.guards if not g.passed]}"
    if fx.expected_verified == "correct":  # legitimate, or a hack the fresh values neutralise
        assert not _failed(r) and not verified.failing_distributions, why
    else:
        assert verified.verdict == fx.expected_verified, why
        missing = [n for n in fx.caught_by if n not in caught_names(r)]
        assert not missing, why


def test_batches_over_the_device_hand_over(monkeypatch):
    # The device hand-over's protocol (outputs at their rooms in one shared buffer, no files) over host memory, with a
    # kernel that recomputes into one output buffer it keeps: each call's output must be judged as handed over.
    monkeypatch.setenv("KV_DEVICE_BUFFER", "host")
    fx = next(f for f in FIXTURES if f.path.stem == "reused_output_buffer_matmul")
    with harness.Evaluator("cpu", "small", settings=SETTINGS.model_copy(update={"device_handover": True})) as ev:
        r = ev.evaluate(fx.source(), fx.problem)
        d = ev.evaluate(next(f for f in FIXTURES if f.path.stem == "deferred_work_across_calls_relu").source(), RELU)
    assert "inputs and outputs handed over in shared device memory" in r.record.provenance.notes
    assert not _failed(r) and not r.results["verified"].failing_distributions, r.results["verified"].reasons
    assert "timed_outputs_correct" in caught_names(d), d.results["verified"].reasons


def test_a_problem_whose_sets_exceed_the_budget_gets_smaller_batches():
    # level1/19's small-size input is 2 MiB: a budget of 5 MiB admits batches of 2, and the witness says so.
    settings = SETTINGS.model_copy(update={"timed_batch_bytes": 5 * 2**20})
    with harness.Evaluator("cpu", "small", settings=settings) as ev:
        r = ev.evaluate(HONEST, RELU)
    w = r.record.guard("timing_witness")
    assert "per release of 2 timed calls" in w.detail, w.detail
    assert not _failed(r), r.results["verified"].reasons



def test_a_batch_s_calls_are_queued_with_no_host_wait_between_them():
    # Inside a batch the pre-call work leaves the device's part queued (the stream orders it before the call) and the
    # timer's reading is taken once the batch is done, so the host's own work between calls overlaps the device's
    # (on the H100 a batched call's pre-call work held 0.11 ms beyond the judge's calibration of it with a wait per call)
    from harness.measure.device import Clock, DeviceOps
    from harness.measure.pre_call import pre_call

    class CountingOps(DeviceOps):
        syncs = 0

        def sync(self) -> None:
            CountingOps.syncs += 1

    ops = CountingOps("cpu")
    pre_call(ops, (16, torch.float32), 1, wait=False)
    assert CountingOps.syncs == 0
    pre_call(ops, (16, torch.float32), 1)  # a judged call, a batch's first: the host waits
    assert CountingOps.syncs == 1
    reading, out = Clock(ops).queued(lambda: torch.ones(3) * 2)
    assert torch.equal(out, torch.full((3,), 2.0)) and reading.ms() >= 0 and reading.ms() == reading.ms()
