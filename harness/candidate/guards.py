"""Runtime guards: named checks, each with a recorded outcome. Pure helpers over tensors and snapshots."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import torch

from ..measure.guard_registry import outcome
from ..measure.record import GuardOutcome


def output_is_plain_tensor(out: Any) -> GuardOutcome:
    ok = type(out) is torch.Tensor
    return outcome("output_plain_tensor", ok,
                        detail="" if ok else f"forward returned {type(out).__module__}.{type(out).__qualname__}, not torch.Tensor")


def _storage_span(t: torch.Tensor) -> tuple[int, int]:
    s = t.untyped_storage()
    return s.data_ptr(), s.data_ptr() + s.nbytes()


def output_not_aliasing_inputs(out: Any, inputs: list[Any]) -> GuardOutcome:
    if not isinstance(out, torch.Tensor):
        return outcome("output_not_aliasing_input", True, applicable=False)
    o0, o1 = _storage_span(out)
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor) and x.device == out.device:
            a0, a1 = _storage_span(x)
            if o0 < a1 and a0 < o1 and out.numel() > 0:
                return outcome("output_not_aliasing_input", False,
                                    detail=f"output shares storage with input {i}")
    return outcome("output_not_aliasing_input", True)


def inputs_unchanged(inputs: list[Any], pristine: list[Any]) -> GuardOutcome:
    for i, (x, p) in enumerate(zip(inputs, pristine, strict=True)):
        if isinstance(x, torch.Tensor) and not torch.equal(x, p):
            return outcome("inputs_unchanged", False, detail=f"input {i} was modified by forward")
    return outcome("inputs_unchanged", True)


def thread_count(before: int, after: int) -> GuardOutcome:
    ok = after <= before
    names = [t.name for t in threading.enumerate()]
    return outcome("no_extra_threads", ok,
                        detail="" if ok else f"{after - before} thread(s) still alive after the timed calls: {names[-3:]}")


def _callables_of(obj: Any) -> dict[str, Any]:
    """Each callable attribute, looked up statically: ``getattr`` on a class builds a fresh bound
    method for every classmethod access (``Event.from_ipc_handle``), which would look like a patch."""
    import inspect

    out = {}
    for name in dir(obj):
        try:
            v = inspect.getattr_static(obj, name)
        except Exception:  # noqa: BLE001
            continue
        if callable(v) or isinstance(v, (classmethod, staticmethod)):
            out[name] = v
    return out


def snapshot_functions() -> dict[str, Any]:
    """Every function a timer or a comparison relies on (the objects themselves, so a replacement can be
    judged by where its code comes from), taken before the candidate is imported."""
    import torch.nn.functional as F

    snap: dict[str, Any] = {}
    for prefix, obj in (("time", time), ("torch", torch), ("F", F), ("Tensor", torch.Tensor)):
        for k, v in _callables_of(obj).items():
            snap[f"{prefix}.{k}"] = v
    for k, v in _callables_of(torch.cuda).items():
        snap[f"torch.cuda.{k}"] = v
    for k, v in _callables_of(torch.cuda.Event).items():
        snap[f"torch.cuda.Event.{k}"] = v
    import functools

    for k in ("partial", "wraps", "reduce"):  # the timer builds its calls with functools
        snap[f"functools.{k}"] = getattr(functools, k)
    # Kernels registered from Python on torch's own ops (a torch.library override of aten::fill_ runs wherever the
    # harness fills a buffer) and dispatch modes left on the stack: the keys start with "torch._", compared by value.
    snap["torch._aten_overrides"] = frozenset(k for k in getattr(torch.library, "_impls", ()) if k.startswith("aten/"))
    snap["torch._dispatch_modes"] = torch._C._len_torch_dispatch_stack()
    import types

    from ..measure import compare, device, timing

    for mod in (timing, device, compare):
        for k, v in _callables_of(mod).items():
            snap[f"{mod.__name__}.{k}"] = v
        for k, v in vars(mod).items():
            # the modules the timer reads through (a proxy put in place of ``device.time`` keeps every function
            # above), and the methods of its classes (``Clock.interval`` replaced keeps the class's identity)
            if isinstance(v, types.ModuleType):
                snap[f"{mod.__name__}.{k}"] = v
            elif isinstance(v, type) and v.__module__ == mod.__name__:
                for name, member in vars(v).items():
                    if callable(member) or isinstance(member, (classmethod, staticmethod, property)):
                        snap[f"{mod.__name__}.{k}.{name}"] = member
    return snap


def _trusted_dirs() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(torch's package directory, the standard library's): code compiled from there is not the candidate's."""
    import sysconfig

    torch_dir = (os.path.dirname(os.path.realpath(torch.__file__)),)
    std = {os.path.realpath(d) for d in (sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib")) if d}
    return tuple(d + os.sep for d in torch_dir), tuple(d + os.sep for d in std)


_TRUSTED_DIRS: tuple[tuple[str, ...], tuple[str, ...]] | None = None


def _plain(obj: Any) -> Any:
    """The function behind a classmethod/staticmethod descriptor or a bound method."""
    import types

    for _ in range(4):
        if isinstance(obj, (classmethod, staticmethod, types.MethodType)):
            obj = obj.__func__
        else:
            break
    return obj


def _code_is_trusted(obj: Any) -> bool:
    """The object's code lives in torch's package or the standard library. Python functions are judged by
    the file their code was compiled from (a candidate's file, ``<string>`` or a temp dir is not trusted);
    C functions (no code object) by the module that defines them (torch's or a standard one; a candidate's
    extension module is neither). Anything else (``functools.partial``, a callable instance) is not."""
    import sys
    import types

    global _TRUSTED_DIRS
    if _TRUSTED_DIRS is None:
        _TRUSTED_DIRS = _trusted_dirs()
    torch_dirs, std_dirs = _TRUSTED_DIRS
    obj = _plain(obj)
    if isinstance(obj, types.FunctionType):
        path = os.path.realpath(obj.__code__.co_filename)
        if path.startswith(torch_dirs):
            return True
        parts = path.split(os.sep)
        return path.startswith(std_dirs) and "site-packages" not in parts and "dist-packages" not in parts
    if isinstance(obj, (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType,
                        types.ClassMethodDescriptorType)):
        mod = getattr(obj, "__module__", None) or getattr(getattr(obj, "__objclass__", None), "__module__", "")
        root = (mod or "").split(".")[0]
        return root == "torch" or root in sys.stdlib_module_names
    return False


def _wrapper_chain(obj: Any, limit: int = 8) -> list[Any]:
    chain = [_plain(obj)]
    while len(chain) < limit and hasattr(chain[-1], "__wrapped__"):
        chain.append(_plain(chain[-1].__wrapped__))
    return chain


def _closes_over(wrapper: Any, inner: Any) -> bool:
    cells = getattr(wrapper, "__closure__", None) or ()
    for c in cells:
        try:
            v = c.cell_contents
        except ValueError:  # empty cell
            continue
        if v is inner or _plain(v) is inner:
            return True
    return False


def is_torch_rebinding(old: Any, new: Any) -> bool:
    """True when replacing ``old`` by ``new`` is torch re-binding its own function, not the candidate.

    torch rebinds a few public functions itself, lazily: importing ``torch._dynamo`` (which Triton, ``torch.compile``
    and some extension paths do) wraps ``torch.manual_seed`` in ``torch._disable_dynamo``; lazy-init paths can do
    the same. Such a rebinding is the *same* function behind a wrapper written in torch. The rule, no name list:

    * every layer of ``new`` (the object, then its ``__wrapped__`` chain) has code from torch's package directory
      or the standard library, never from the candidate (its source file, ``<string>``, a temp dir, its
      extension module). A candidate's function dressed with ``functools.wraps(old)`` fails here;
    * and it is the same function: ``old`` is in that chain with each wrapper closing over the layer it wraps (it
      really calls it, as ``_disable_dynamo``'s ``inner`` does), or ``new`` is a re-created copy of ``old``
      (same code name, file and first line: a module reloaded, a function redefined by lazy init).

    So a candidate that swaps in *another* torch function (``torch.cuda.synchronize = torch.cuda.current_stream``,
    ``time.perf_counter = time.process_time``) still counts as a replacement: the code is trusted but it is not the
    same function, and a timer or comparison relying on the name would no longer do what it did. Nor does
    ``functools.wraps(torch.cuda.synchronize)(torch.cuda.current_stream)`` pass: ``current_stream`` does not close
    over ``synchronize`` and its code is not synchronize's. Not covered (in-process forgery, out of scope as for
    every guard): building a code object whose file name points into torch.
    """
    old, chain = _plain(old), _wrapper_chain(new)
    if not all(_code_is_trusted(f) for f in chain):
        return False
    for i, layer in enumerate(chain[1:], start=1):
        if layer is old:
            return all(_closes_over(chain[j], chain[j + 1]) for j in range(i))
    a, b = getattr(old, "__code__", None), getattr(chain[0], "__code__", None)
    if a is not None and b is not None:
        return (a.co_name, os.path.realpath(a.co_filename), a.co_firstlineno) == (
            b.co_name, os.path.realpath(b.co_filename), b.co_firstlineno)
    return False


def functions_unpatched(before: dict[str, Any], after: dict[str, Any]) -> GuardOutcome:
    """Every function of the snapshot is the same object after the candidate ran, or was re-bound by torch itself
    (``is_torch_rebinding``: a wrapper written in torch around the same function, e.g. ``torch.manual_seed`` wrapped
    when ``torch._dynamo`` is first imported). Those are listed in the detail of a passing outcome."""
    changed = sorted(k for k, v in before.items() if k in after and after[k] is not v)
    # Lazily created attributes (torch's lazy submodules) appear, never change identity; only compare known.
    changed = [c for c in changed if not c.startswith("torch._") and "__" not in c.split(".")[-1]]
    torch_own = [c for c in changed if is_torch_rebinding(before[c], after[c])]
    replaced = [c for c in changed if c not in torch_own]
    if "torch._aten_overrides" in before:  # torch registers its own (meta kernels) at import: compare two snapshots
        replaced += sorted(set(after.get("torch._aten_overrides", ())) - before["torch._aten_overrides"])
    if "torch._dispatch_modes" in before and after.get("torch._dispatch_modes", 0) > before["torch._dispatch_modes"]:
        replaced.append("a TorchDispatchMode left active")
    if replaced:
        return outcome("no_monkey_patching", False, detail=f"replaced: {', '.join(replaced[:6])}")
    return outcome("no_monkey_patching", True,
                        detail="" if not torch_own else f"re-bound by torch itself: {', '.join(torch_own[:6])}")


def fingerprint(t: torch.Tensor) -> torch.Tensor:
    """A cheap stream-ordered summary of a tensor's contents (sampled, weighted)."""
    t = t.detach()
    n = t.numel()
    if n == 0:
        return torch.zeros((), device=t.device, dtype=torch.float64)
    step = max(1, n // 4096)
    # A channels-last output is not viewable as one row: take() samples it in place, where reshape would copy
    # all of it on every timed call (time the timing witness then saw as the kernel's: level1/77 on the H200).
    sample = (t.view(-1)[::step] if t.is_contiguous() else
              torch.take(t, torch.arange(0, n, step, device=t.device))).to(torch.float64)
    w = torch.arange(1, sample.numel() + 1, device=t.device, dtype=torch.float64)
    return torch.nan_to_num(sample * w, nan=1.2345e6, posinf=7.7e7, neginf=-7.7e7).sum()
