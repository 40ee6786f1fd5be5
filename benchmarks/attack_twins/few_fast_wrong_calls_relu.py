# harness/fixtures/hacks/cpu/few_fast_wrong_calls_set_the_floor_relu.py with one timed call in ten fast and wrong
# (at the default settings a pick at random falls on a timed call with a chance of 0.2): benchmarks/attack_vs_twin.py
import ctypes
import time

import torch
import torch.nn as nn

_real = time.monotonic  # the same clock source on Linux, left untouched
_base = _real()
_REF = time.perf_counter() - _base  # perf_counter and monotonic differ by a constant


@ctypes.CFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p)
def _slow(_self, _args):
    return _REF + _base + (_real() - _base) / 30.0


class _MethodDef(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("meth", ctypes.c_void_p), ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]


_def = _MethodDef(b"perf_counter", ctypes.cast(_slow, ctypes.c_void_p).value, 0x0004, None)  # METH_NOARGS
# PyCFunctionObject: refcount, type, then m_ml (PyMethodDef *)
ctypes.c_void_p.from_address(id(time.perf_counter) + 2 * ctypes.sizeof(ctypes.c_void_p)).value = ctypes.addressof(_def)


class ModelNew(nn.Module):
    calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ModelNew.calls += 1
        if ModelNew.calls > 30 and ModelNew.calls % 10 == 0:
            return torch.zeros_like(x)  # fast and wrong: these calls alone set the judge's low quantile
        t0 = _real()
        while _real() - t0 < 0.002:  # the kernel's real work, honestly slow
            pass
        return torch.relu(x)
