"""A candidate that compiles its extension in ModelNew's constructor (most of CUDA-L1's kernels that do not
compile at import) is compiled by the build step, not inside its evaluation on the GPU worker's time; what
such a constructor does wrong is still the evaluation's to report."""

from __future__ import annotations

from pathlib import Path

import pytest

import harness
from harness import EvalSettings

RELU = "level1/19_ReLU"
IN_CONSTRUCTOR = r'''
import torch, torch.nn as nn
from torch.utils.cpp_extension import load_inline

SRC = """
#include <torch/extension.h>
torch::Tensor relu_fwd(torch::Tensor x) { return torch::clamp_min(x, 0); }
"""


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.ext = load_inline(name="kv_test_ctor_relu", cpp_sources=SRC, functions=["relu_fwd"], extra_cflags=["-O3"])

    def forward(self, x):
        return self.ext.relu_fwd(x)
'''


def _built_libraries(ev: harness.Evaluator, source: str) -> list[Path]:
    return list(ev.extensions_dir(source).rglob("*.so"))


@pytest.mark.slow
def test_an_extension_compiled_in_the_constructor_is_built_before_the_evaluation(tmp_path):
    # The constructor's compile must end before 0.8 of the build timeout: a niced compile without a PCH on a loaded
    # 2-core host once took longer than 0.8 x 400 s. A long limit costs nothing when the host is quick.
    settings = EvalSettings(build_timeout_s=1800, naive_timing_trials=5, verified_min_iters=3, verified_max_iters=5,
                            verified_seconds_per_subject=0.2, cpu_threads=1)
    with harness.Evaluator("cpu", "small", settings=settings, cache_dir=tmp_path) as ev:
        assert ev.build(IN_CONSTRUCTOR).ok
        assert _built_libraries(ev, IN_CONSTRUCTOR) == []  # without the problem, only the import runs
    with harness.Evaluator("cpu", "small", settings=settings, cache_dir=tmp_path / "with_problem") as ev:
        built = ev.build(IN_CONSTRUCTOR, RELU)
        assert built.ok, built.error
        assert [p.name for p in _built_libraries(ev, IN_CONSTRUCTOR)] == ["kv_test_ctor_relu.so"]
        r = ev.evaluate(IN_CONSTRUCTOR, RELU, build=built)
        assert (r.results["naive"].verdict, r.results["verified"].verdict) == ("correct", "correct")


def test_a_constructor_that_raises_exits_or_hangs_is_the_evaluations_to_report(tmp_path):
    raises = IN_CONSTRUCTOR.replace("        self.ext = load_inline(", "        raise RuntimeError('no GPU here')\n"
                                                                     "        self.ext = load_inline(")
    hangs = IN_CONSTRUCTOR.replace("        self.ext = load_inline(", "        while True: pass\n"
                                                                    "        self.ext = load_inline(")
    exits = IN_CONSTRUCTOR.replace("        self.ext = load_inline(", "        import os; os._exit(7)\n"
                                                                    "        self.ext = load_inline(")
    # A generous build limit for the sources that end (a loaded host may take more than 10 s to start a build's
    # interpreter and import torch); it costs nothing, since they end as soon as they can.
    settings = EvalSettings(build_timeout_s=300, eval_timeout_s=5, cpu_threads=1)
    with harness.Evaluator("cpu", "small", settings=settings, cache_dir=tmp_path) as ev:
        built = ev.build(raises, RELU)
        assert built.ok and not built.timed_out
        r = ev.evaluate(raises, RELU, build=built)
        assert (r.record.status, r.record.failed_phase) == ("runtime_error", "init")
        assert "no GPU here" in r.record.error
        built = ev.build(exits, RELU)  # the process ended after its import: the evaluation's to report
        assert built.ok, built.error
        r = ev.evaluate(exits, RELU, build=built)
        assert (r.record.status, r.record.failed_phase) == ("runtime_error", "init"), (r.record.status, r.record.error)
        # A hanging constructor is stopped at 0.8 of the build timeout, as a build that compiled nothing. The build
        # must have reached the constructor by then: on a loaded host, starting it alone can outlast 0.8 x 10 s, so a
        # build that timed out is tried again with a longer limit (a watchdog that never fires times out every time).
        for build_timeout_s in (10, 40, 160):
            ev.settings = settings.model_copy(update={"build_timeout_s": build_timeout_s})
            built = ev.build(hangs, RELU)
            if not built.timed_out:
                break
        assert built.ok and not built.timed_out, built.error
        ev.settings = settings.model_copy(update={"build_timeout_s": 10})  # the run's limit: eval_timeout_s + this
        assert ev.evaluate(hangs, RELU, build=built).record.status == "timeout"
