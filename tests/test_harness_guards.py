"""no_monkey_patching tells torch re-binding its own functions from a candidate replacing them (issue 18, item 2)."""

import functools
import os
import subprocess
import sys
import tempfile
import textwrap
import types

import pytest
import torch

from harness.candidate import guards as G

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def restore_sync():
    orig = torch.cuda.synchronize
    yield orig
    torch.cuda.synchronize = orig


def test_importing_dynamo_rebinds_manual_seed_and_is_not_a_patch():
    """The real case from the H200 replay: ``import torch._dynamo`` wraps torch.manual_seed in
    torch._disable_dynamo. A fresh process, so torch._dynamo is surely not imported before the snapshot."""
    code = textwrap.dedent("""
        import sys, torch
        from harness.candidate import guards as G
        assert "torch._dynamo" not in sys.modules
        before = G.snapshot_functions()
        import torch._dynamo
        after = G.snapshot_functions()
        assert after["torch.manual_seed"] is not before["torch.manual_seed"], "torch no longer rebinds manual_seed"
        g = G.functions_unpatched(before, after)
        print(g.passed, g.detail)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": ROOT}, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("True"), out.stdout
    assert "re-bound by torch itself: torch.manual_seed" in out.stdout


def test_torch_wrapper_around_the_same_function_passes(restore_sync):
    before = G.snapshot_functions()
    torch.cuda.synchronize = torch._disable_dynamo(restore_sync)  # a wrapper whose code lives in torch's package
    g = G.functions_unpatched(before, G.snapshot_functions())
    assert g.passed and "torch.cuda.synchronize" in g.detail


def test_torch_recreating_the_same_function_passes(restore_sync):
    f = restore_sync  # a new function object from the same code (module reload, lazy re-definition)
    torch.cuda.synchronize = types.FunctionType(f.__code__, f.__globals__, f.__name__, f.__defaults__, f.__closure__)
    before = {"torch.cuda.synchronize": restore_sync}
    assert G.functions_unpatched(before, G.snapshot_functions()).passed


def _candidate_function(tmp_dir: str):
    path = os.path.join(tmp_dir, "candidate_kernel.py")
    with open(path, "w") as f:
        f.write("def synchronize(device=None):\n    return None\n")
    ns: dict = {}
    exec(compile(open(path).read(), path, "exec"), ns)
    return ns["synchronize"]


@pytest.mark.parametrize("how", ["file", "string", "lambda_in_torch_wrapper", "wraps_dressed", "partial"])
def test_candidate_replacement_fails(restore_sync, how):
    before = G.snapshot_functions()
    with tempfile.TemporaryDirectory() as d:
        cand = _candidate_function(d)
        if how == "file":
            new = cand
        elif how == "string":
            ns: dict = {}
            exec("def synchronize(device=None):\n    pass\n", ns)
            new = ns["synchronize"]
        elif how == "lambda_in_torch_wrapper":  # torch's wrapper, candidate's code inside
            new = torch._disable_dynamo(cand)
        elif how == "wraps_dressed":  # looks like the original (__wrapped__, __qualname__, __module__)
            new = functools.wraps(restore_sync)(cand)
        else:
            new = functools.partial(lambda device=None: None)
        torch.cuda.synchronize = new
        g = G.functions_unpatched(before, G.snapshot_functions())
    assert not g.passed and "torch.cuda.synchronize" in g.detail


def test_swapping_in_another_torch_function_fails(restore_sync):
    """Code from torch, but not the same function: a timer relying on synchronize would no longer sync."""
    before = G.snapshot_functions()
    torch.cuda.synchronize = torch.cuda.current_stream
    g = G.functions_unpatched(before, G.snapshot_functions())
    assert not g.passed and "torch.cuda.synchronize" in g.detail
    cs = torch.cuda.current_stream  # dressed as synchronize (a copy, not to alter torch's own function)
    copy = types.FunctionType(cs.__code__, cs.__globals__, cs.__name__, cs.__defaults__, cs.__closure__)
    torch.cuda.synchronize = functools.wraps(restore_sync)(copy)
    assert not G.functions_unpatched(before, G.snapshot_functions()).passed
    torch.cuda.synchronize = torch._disable_dynamo(torch.cuda.current_stream)
    assert not G.functions_unpatched(before, G.snapshot_functions()).passed


def test_swapping_stdlib_clocks_fails():
    import time

    before = G.snapshot_functions()
    pc = time.perf_counter
    time.perf_counter = time.process_time
    try:
        g = G.functions_unpatched(before, G.snapshot_functions())
    finally:
        time.perf_counter = pc
    assert not g.passed and "time.perf_counter" in g.detail


def test_fingerprint_samples_a_non_contiguous_output_in_place():
    # Called on every timed output: a channels-last or broadcast output must not be copied whole (the copy's
    # time on the H200 made the timing witness flag an honest channels-last convolution, level1/77).
    import torch

    from harness.candidate.guards import fingerprint

    x = torch.randn(4, 8, 16, 16)
    cl = x.contiguous(memory_format=torch.channels_last)
    assert float(fingerprint(cl)) == float(fingerprint(x))
    huge = torch.ones(2, 1).expand(2, 5 * 10**11)  # 4 TB if materialised; no 1-D view of it exists
    k = len(range(0, 10**12, 10**12 // 4096))  # elements sampled, each 1 with weights 1..k
    assert float(fingerprint(huge)) == k * (k + 1) / 2
