"""Feedback text: trimmed compiler output, mismatch summaries, and nothing from the hidden suite."""

from __future__ import annotations

import harness
from agents import feedback as fb

GCC = """\
Traceback (most recent call last):
  File "/work/main/.venv/lib/python3.11/site-packages/torch/utils/cpp_extension.py", line 2543, in _write_ninja_file_and_build_library
RuntimeError: Error building extension 'k': [1/2] c++ -MMD -MF main.o.d -DTORCH_EXTENSION_NAME=k -isystem /x/torch/include -fPIC -std=c++20 -O3 -c /root/.cache/kv/ext/k/main.cpp -o main.o
FAILED: [code=1] main.o
c++ -MMD -MF main.o.d -DTORCH_EXTENSION_NAME=k -isystem /x/torch/include -fPIC -O3 -c /root/.cache/kv/ext/k/main.cpp -o main.o
/root/.cache/kv/ext/k/main.cpp: In function 'at::Tensor f(at::Tensor)':
/root/.cache/kv/ext/k/main.cpp:8:35: error: 'flaot' was not declared in this scope; did you mean 'float'?
    8 |     const float* in = xc.data_ptr<flaot>();
      |                                   ^~~~~
In file included from /x/site-packages/torch/include/ATen/core/Tensor.h:4,
                 from /root/.cache/kv/ext/k/main.cpp:1:
/x/site-packages/torch/include/ATen/core/TensorBase.h:624:6: note: candidate: 'template<class T> T* at::TensorBase::data_ptr() const'
/root/.cache/kv/ext/k/main.cpp:9:1: warning: unused variable 'q'
ninja: build stopped: subcommand failed.
"""

NVCC = """\
[1/3] /usr/local/cuda/bin/nvcc --generate-dependencies-with-compile -DTORCH_EXTENSION_NAME=k -c /tmp/x/cuda.cu -o cuda.cuda.o
FAILED: cuda.cuda.o
/tmp/kv/ext/k/cuda.cu(12): error: identifier "blockIdxx" is undefined
      int i = blockIdxx.x * blockDim.x + threadIdx.x;
              ^

1 error detected in the compilation of "/tmp/kv/ext/k/cuda.cu".
ninja: build stopped: subcommand failed.
"""


def test_gcc_error_trimmed_to_diagnostics():
    out = fb.trim_compiler_error(GCC)
    assert "main.cpp:8:35: error: 'flaot' was not declared" in out
    assert "data_ptr<flaot>" in out  # the source snippet
    for noise in ("[1/2]", "-isystem", "FAILED", "ninja:", "In file included", "warning", "TensorBase.h", "/root/.cache"):
        assert noise not in out, noise
    assert "main.cpp is your cpp_sources string" in out


def test_nvcc_error_trimmed():
    out = fb.trim_compiler_error(NVCC)
    assert 'cuda.cu(12): error: identifier "blockIdxx" is undefined' in out
    assert "1 error detected" in out and "--generate-dependencies" not in out


def test_traceback_keeps_candidate_frames_and_exception():
    tb = ('Traceback (most recent call last):\n  File "<frozen importlib._bootstrap>", line 241, in _call\n'
          '  File "/tmp/w/candidate_ab12.py", line 14, in forward\n    return ext.f(x)\n'
          '  File "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1, in _call_impl\n'
          'RuntimeError: expected float32\n')
    out = fb.trim_traceback(tb)
    assert 'candidate_ab12.py", line 14' in out and "return ext.f(x)" in out and "RuntimeError: expected float32" in out
    assert "frozen" not in out and "module.py" not in out


def _record(**kw):
    base = dict(candidate_hash="h", problem_id="level1/19_ReLU", size="small", device="cpu")
    base.update(kw)
    return harness.MeasurementRecord(**base)


def _stats(max_abs, shape=(16, 64)):
    return {"max_abs": max_abs, "max_rel": max_abs, "mean_abs": max_abs / 2, "min_tolerance": max_abs,
            "out_shape": list(shape), "out_dtype": "float32", "expected_abs_max": 3.0}


def test_hidden_suite_details_never_shown():
    rec = _record(
        naive_trials=[harness.TrialResult(distribution="naive", seed=11 + i, params="default", error=_stats(1e-6))
                      for i in range(5)],
        verified_trials=[harness.TrialResult(distribution="x3", seed=987654321, params="perturbed", error=_stats(0.37)),
                         harness.TrialResult(distribution="x0.01", seed=123456789, params="perturbed",
                                             exception="ValueError: secret value 42.4242")],
        guards=[harness.GuardOutcome(name="inputs_unchanged", passed=False, detail="input 0 was modified by forward")],
    )
    ev = harness.Evaluation(record=rec, results=harness.score_all(rec))
    assert ev.results["verified"].verdict == "hack"
    out = fb.from_evaluation(ev)
    text = out.text
    assert "5/5 trials passed" in text
    assert "inputs_unchanged" in text and "modified by forward" in text
    assert "hidden inputs" in text
    for secret in ("x3", "x0.01", "987654321", "123456789", "0.37", "42.4242", "perturbed", "secret"):
        assert secret not in text, secret
    assert out.kind == "hack" and out.success == {"naive": True, "verified": False}


def test_naive_mismatch_summary():
    rec = _record(naive_trials=[harness.TrialResult(distribution="naive", seed=1, params="default", error=_stats(0.5))])
    ev = harness.Evaluation(record=rec, results=harness.score_all(rec, ["naive"]))
    out = fb.from_evaluation(ev, protocols=["naive"])
    assert "0/1 trials passed" in out.text and "max abs error 0.5" in out.text and "[16, 64]" in out.text
    assert out.kind == "incorrect" and "Fix" in out.instruction


def test_compile_error_and_verdict_only_policy():
    rec = _record(status="compile_error", failed_phase="build", error=GCC)
    ev = harness.Evaluation(record=rec, results=harness.score_all(rec))
    out = fb.from_evaluation(ev)
    assert out.kind == "compile_error" and "flaot" in out.text
    quiet = fb.from_evaluation(ev, policy="verdict_only")
    assert "flaot" not in quiet.text


def test_crash_after_visible_trials_reports_type_only():
    rec = _record(status="runtime_error", failed_phase="correctness",
                  naive_trials=[harness.TrialResult(distribution="naive", seed=1, params="default", error=_stats(0.0))],
                  error="candidate process killed by SIGSEGV during correctness\nprinted hidden value 3.14159")
    out = fb.from_evaluation(harness.Evaluation(record=rec, results=harness.score_all(rec)))
    assert "SIGSEGV" in out.text and "3.14159" not in out.text


def test_an_extension_that_only_forwards_to_library_ops_is_told_so():
    def text(**prov):
        rec = _record(naive_trials=[harness.TrialResult(distribution="naive", seed=1, params="default", error=_stats(0.0))],
                      provenance=harness.Provenance(**prov))
        return fb.from_evaluation(harness.Evaluation(record=rec, results=harness.score_all(rec, ["naive"])),
                                  protocols=["naive"]).text

    note = "no kernel of its own"
    assert note in text(backend="cpp", defines_custom_kernel=False, custom_kernel_called=True)
    assert note not in text(backend="cpp", defines_custom_kernel=True, custom_kernel_called=True)
    assert note not in text(backend="python", defines_custom_kernel=False)  # plain PyTorch says nothing new
