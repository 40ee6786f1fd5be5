"""Runtime guards: named checks, each with a recorded outcome. Pure helpers over tensors and snapshots."""

from __future__ import annotations

import threading
import time
from typing import Any

import torch

from .record import GuardOutcome


def output_is_plain_tensor(out: Any) -> GuardOutcome:
    ok = type(out) is torch.Tensor
    return GuardOutcome(name="output_plain_tensor", passed=ok,
                        detail="" if ok else f"forward returned {type(out).__module__}.{type(out).__qualname__}, not torch.Tensor")


def _storage_span(t: torch.Tensor) -> tuple[int, int]:
    s = t.untyped_storage()
    return s.data_ptr(), s.data_ptr() + s.nbytes()


def output_not_aliasing_inputs(out: Any, inputs: list[Any]) -> GuardOutcome:
    if not isinstance(out, torch.Tensor):
        return GuardOutcome(name="output_not_aliasing_input", passed=True, applicable=False)
    o0, o1 = _storage_span(out)
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor) and x.device == out.device:
            a0, a1 = _storage_span(x)
            if o0 < a1 and a0 < o1 and out.numel() > 0:
                return GuardOutcome(name="output_not_aliasing_input", passed=False,
                                    detail=f"output shares storage with input {i}")
    return GuardOutcome(name="output_not_aliasing_input", passed=True)


def inputs_unchanged(inputs: list[Any], pristine: list[Any]) -> GuardOutcome:
    for i, (x, p) in enumerate(zip(inputs, pristine, strict=True)):
        if isinstance(x, torch.Tensor) and not torch.equal(x, p):
            return GuardOutcome(name="inputs_unchanged", passed=False, detail=f"input {i} was modified by forward")
    return GuardOutcome(name="inputs_unchanged", passed=True)


def thread_count(before: int, after: int) -> GuardOutcome:
    ok = after <= before
    names = [t.name for t in threading.enumerate()]
    return GuardOutcome(name="no_extra_threads", passed=ok,
                        detail="" if ok else f"{after - before} thread(s) still alive after the timed calls: {names[-3:]}")


def _callables_of(obj: Any) -> dict[str, int]:
    """id of each callable attribute, looked up statically: ``getattr`` on a class builds a fresh bound
    method for every classmethod access (``Event.from_ipc_handle``), which would look like a patch."""
    import inspect

    out = {}
    for name in dir(obj):
        try:
            v = inspect.getattr_static(obj, name)
        except Exception:  # noqa: BLE001
            continue
        if callable(v) or isinstance(v, (classmethod, staticmethod)):
            out[name] = id(v)
    return out


def snapshot_functions() -> dict[str, int]:
    """ids of every function a timer or a comparison relies on, taken before the candidate is imported."""
    import torch.nn.functional as F

    snap: dict[str, int] = {}
    for prefix, obj in (("time", time), ("torch", torch), ("F", F), ("Tensor", torch.Tensor)):
        for k, v in _callables_of(obj).items():
            snap[f"{prefix}.{k}"] = v
    for k, v in _callables_of(torch.cuda).items():
        snap[f"torch.cuda.{k}"] = v
    for k, v in _callables_of(torch.cuda.Event).items():
        snap[f"torch.cuda.Event.{k}"] = v
    from . import compare, device, timing

    for mod in (timing, device, compare):
        for k, v in _callables_of(mod).items():
            snap[f"{mod.__name__}.{k}"] = v
    return snap


def functions_unpatched(before: dict[str, int], after: dict[str, int]) -> GuardOutcome:
    changed = sorted(k for k, v in before.items() if after.get(k, v) != v)
    # Lazily created attributes (torch's lazy submodules) appear, never change identity; only compare known.
    changed = [c for c in changed if not c.startswith("torch._") and "__" not in c.split(".")[-1]]
    return GuardOutcome(name="no_monkey_patching", passed=not changed,
                        detail="" if not changed else f"replaced: {', '.join(changed[:6])}")


def fingerprint(t: torch.Tensor) -> torch.Tensor:
    """A cheap stream-ordered summary of a tensor's contents (sampled, weighted)."""
    flat = t.detach().reshape(-1)
    n = flat.numel()
    if n == 0:
        return torch.zeros((), device=t.device, dtype=torch.float64)
    step = max(1, n // 4096)
    sample = flat[::step].to(torch.float64)
    w = torch.arange(1, sample.numel() + 1, device=t.device, dtype=torch.float64)
    return torch.nan_to_num(sample * w, nan=1.2345e6, posinf=7.7e7, neginf=-7.7e7).sum()
