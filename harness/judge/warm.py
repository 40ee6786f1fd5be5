"""A spare judge's warm-up: what every judge pays before its problem matters, paid while it waits for one.

A judge prepared in a fresh process spent most of its torch.compile baseline (~8 s of ~9 on the H200, gated) on
torch.compile's own start-up: Dynamo and Inductor imported, Inductor's compile workers started, the GPU driver's
set-up for Triton. A process that has compiled anything before skips that (benchmarks/compile_warmup.py). So a spare
judge compiles a small function of its own first, before it holds the device gate: the compile runs ungated (host
work) and only the device work (making the context, the compiled function's run) holds the gate, so no candidate's
timed interval sees it."""

from __future__ import annotations

import time

import torch

from .gate import DeviceGate


def _warm_function(x: torch.Tensor) -> torch.Tensor:
    # A matrix product (the library-call path), pointwise maths and a reduction (a Triton kernel each).
    return torch.relu(x @ x).sin().sum(dim=-1)


def _gated_inductor(gate: DeviceGate):
    """Inductor as a torch.compile backend whose compiled function runs on the device only while holding the gate."""
    from torch._inductor.compile_fx import compile_fx

    def backend(graph, example_inputs):
        compiled = compile_fx(graph, example_inputs)

        def run(*args):
            with gate.hold("prepare"):
                out = compiled(*args)
                if torch.cuda.is_available() and torch.cuda.is_initialized():
                    torch.cuda.synchronize()
            return out

        if getattr(compiled, "_boxed_call", False):  # called with one list of arguments: keep that convention
            run._boxed_call = True  # type: ignore[attr-defined]
        return run

    return backend


def warm_up(device: str, compile_baseline: bool, gate: DeviceGate | None = None) -> dict:
    """Make the device's context and, when the judge will compile its baseline, warm torch.compile up. Returns what
    it took and why compiling failed (a judge whose warm-up failed still works: it pays the start-up later)."""
    t0 = time.perf_counter()
    out: dict = {"compile_error": None}
    gate = gate or DeviceGate()
    with torch.no_grad():
        with gate.hold("prepare"):  # making a context is device work too (memory, the driver's set-up)
            x = torch.randn(16, 16, device=device)
            if device.startswith("cuda"):
                torch.cuda.synchronize()
        out["device_s"] = time.perf_counter() - t0
        if compile_baseline:
            try:
                torch.compile(_warm_function, backend=_gated_inductor(gate))(x)
            except Exception as exc:  # noqa: BLE001 - a warm-up, not a measurement: the baseline's own compile reports
                out["compile_error"] = f"{type(exc).__name__}: {str(exc).strip()[:300]}"
    out["seconds"] = time.perf_counter() - t0
    return out
