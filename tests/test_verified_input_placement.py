"""The verified trials place each call's inputs while the previous call's are still held, so no call's inputs can sit
where the previous call's did. A kernel with state keyed on its first input's address (a CUDA graph that captured the
copy from it: cuda-l1-h100 level2/5 on the H200) then fails an ordinary trial, and is incorrect, not a hack caught only
by the timed calls. Which address a tensor gets is the allocator's business (glibc already moves CPU tensors; CUDA's
caching allocator hands the same block back); what the harness guarantees is that the previous inputs are alive, and
that is what this candidate checks: it answers right only while the tensor of its previous call still exists."""

from __future__ import annotations

import pytest

import harness
from harness import EvalSettings

PREVIOUS_INPUT_MUST_BE_ALIVE = '''
import weakref
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._previous = None

    def forward(self, x):
        if self._previous is not None and self._previous() is None:
            return torch.full_like(x, 7.0)  # the previous call's block was free to reuse
        self._previous = weakref.ref(x)
        return torch.relu(x)
'''


@pytest.fixture(scope="module")
def evaluator():
    ev = harness.Evaluator("cpu", "small", settings=EvalSettings(
        naive_timing_trials=5, verified_min_iters=5, verified_max_iters=10, verified_seconds_per_subject=0.2,
        cpu_threads=1))
    yield ev
    ev.close()


def test_every_verified_trial_is_placed_while_the_previous_inputs_are_held(evaluator):
    r = evaluator.evaluate(PREVIOUS_INPUT_MUST_BE_ALIVE, "level1/19_ReLU")
    trials = r.record.verified_trials
    assert len(trials) > 5
    wrong = [(t.distribution, t.error.max_abs if t.error else t.exception) for t in trials
             if t.exception or t.error is None or t.error.max_abs > 1e-6]
    assert not wrong, wrong
    # KernelBench's trials (naive) are left as the allocator places them: the first instance's second call finds
    # its previous input gone.
    assert r.results["naive"].verdict == "incorrect"
