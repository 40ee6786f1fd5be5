"""CUDA-L1 level1/33 (docs/measurements.md, naive vs the authors): a candidate that scripts a helper with
``torch.jit.script``. TorchScript reads the helper's source from its file, which the harness gives (candidates are
imported from a file, harness/candidate/load.py) and KernelBench's exec of a string does not. So the kernel's helper,
whose float arguments are unannotated (TorchScript types them Tensor), is scripted here and fails when called with a
float: the candidate's own bug, which KernelBench never reaches (scripting raises, the kernel falls back to eager).
The legitimate twin, an annotated helper, is harness/fixtures/legit/cpu/torchscript_helper_batchnorm.py (correct
under both protocols in tests/test_hack_fixtures.py)."""

from __future__ import annotations

import types

import pytest

import harness
from harness import EvalSettings
from harness.candidate.load import import_candidate
from harness.fixtures import ROOT as FIXTURES
from harness.scoring.reasons import error_summary

PROBLEM = "level1/33_BatchNorm"
LEGIT = FIXTURES / "legit" / "cpu" / "torchscript_helper_batchnorm.py"

# CUDA-L1's pattern, triggered on the CPU: scripted on the first call, momentum and eps left unannotated
UNANNOTATED = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, num_features: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(num_features=num_features)
        self._scripted = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._scripted is None:
            try:
                def _bn(x, running_mean, running_var, weight, bias, momentum, eps):
                    return F.batch_norm(x, running_mean, running_var, weight, bias, True, momentum, eps)
                self._scripted = torch.jit.script(_bn)
            except Exception:
                self._scripted = False  # no source to read: eager from here on
        if self._scripted:
            return self._scripted(x, self.bn.running_mean, self.bn.running_var, self.bn.weight, self.bn.bias,
                                  self.bn.momentum, self.bn.eps)
        return F.batch_norm(x, self.bn.running_mean, self.bn.running_var, self.bn.weight, self.bn.bias, True,
                            self.bn.momentum, self.bn.eps)
'''


def test_scripting_needs_the_file_the_loader_gives(tmp_path):
    source = LEGIT.read_text()
    mod = import_candidate(source, tmp_path)  # the harness's loader: the decorator reads the helper from the file
    assert isinstance(mod._batch_norm, __import__("torch").jit.ScriptFunction)
    namespace = types.ModuleType("candidate").__dict__
    with pytest.raises(OSError, match="source"):  # KernelBench's loader: exec of a string, no file to read
        exec(compile(source, "<string>", "exec"), namespace)


def test_unannotated_helper_is_the_candidates_runtime_error_and_the_reason_says_why():
    settings = EvalSettings(naive_timing_trials=5, verified_min_iters=3, verified_max_iters=5,
                            verified_seconds_per_subject=0.2, cpu_threads=1)
    with harness.Evaluator("cpu", "small", settings=settings) as ev:
        r = ev.evaluate(UNANNOTATED, PROBLEM)
    assert r.record.status == "runtime_error"
    for p in ("naive", "verified"):
        assert r.results[p].verdict == "runtime_error"
        reason = r.results[p].reasons[0]
        assert "Expected a value of type 'Tensor (inferred)' for argument 'momentum'" in reason, reason


def test_error_summary_gives_a_multiline_exceptions_first_line():
    tb = ('Traceback (most recent call last):\n  File "/x/harness/candidate/worker.py", line 3, in f\n    g()\n'
          '  File "/tmp/w/candidate_0123456789ab.py", line 21, in forward\n    return self._scripted(x)\n'
          "           ^^^^^^^^^^^^^^\n"
          "RuntimeError: _bn() Expected a value of type 'Tensor (inferred)' for argument 'momentum'.\n"
          "Position: 5\nDeclaration: _bn(Tensor x, Tensor momentum) -> Tensor\n"
          "Cast error details: Unable to cast 0.1 to Tensor\n")
    s = error_summary(tb)
    assert s.startswith("RuntimeError: _bn() Expected a value of type 'Tensor (inferred)' for argument 'momentum'.")
    assert "at candidate line 21: return self._scripted(x)" in s and "Cast error" not in s
    # one line, a chained exception, a class without the usual ending: as before (the last exception's line)
    one = 'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\nKeyError: \'w\'\n'
    assert error_summary(one) == "KeyError: 'w'"
    chained = (one + "\nDuring handling of the above exception, another exception occurred:\n\n"
               'Traceback (most recent call last):\n  File "a.py", line 3, in <module>\nValueError: bad\n')
    assert error_summary(chained) == "ValueError: bad"
    odd = 'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\nmymod.Boom: it broke\n'
    assert error_summary(odd) == "mymod.Boom: it broke"
