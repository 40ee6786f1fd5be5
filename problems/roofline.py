"""Roofline counts of a problem's reference: FLOPs and the minimum bytes any implementation moves.

FLOPs: matmul-like ops (mm, bmm, addmm, convolutions, attention) by ``FlopCounterMode``'s formulas;
elementwise ops count one FLOP per output element and reductions one per input element, so a
problem made only of pointwise work still has a compute count. Bytes: inputs + outputs + parameters
and buffers, each once. Everything runs on the meta device: nothing is allocated, full sizes are free.
Results are cached on disk per (problem source, size).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pydantic import BaseModel

from .catalog import Problem, Size
from .module import exec_source

_CACHE = Path(os.environ.get("KV_CACHE_DIR", Path.home() / ".cache" / "kernelverify")) / "roofline"
_REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "prod", "norm", "linalg_vector_norm", "var", "std",
               "var_mean", "std_mean", "logsumexp", "cumsum", "cumprod", "argmax", "argmin", "_softmax",
               "_log_softmax", "softmax", "log_softmax", "any", "all"}


class RooflineCounts(BaseModel):
    flops: float
    bytes: float
    matmul_flops: float
    elementwise_flops: float
    input_bytes: int
    output_bytes: int
    parameter_bytes: int


def _nbytes(t) -> int:
    import torch

    return t.numel() * t.element_size() if isinstance(t, torch.Tensor) else 0


def count(problem: Problem, size: Size = "full") -> RooflineCounts:
    source = problem.source(size)
    key = hashlib.sha256(source.encode()).hexdigest()[:24]
    path = _CACHE / f"{key}.json"
    if path.exists():
        return RooflineCounts.model_validate_json(path.read_text())
    counts = _count_source(source, problem.id)
    try:
        _CACHE.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(counts.model_dump_json())
        os.replace(tmp, path)
    except OSError:
        pass
    return counts


def _count_source(source: str, name: str) -> RooflineCounts:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import FlopCounterMode

    mod = exec_source(source, name)
    with torch.device("meta"):
        torch.manual_seed(0)
        model = mod.Model(*mod.get_init_inputs())
        inputs = list(mod.get_inputs())
    param_bytes = sum(_nbytes(p) for p in model.parameters()) + sum(_nbytes(b) for b in model.buffers())
    input_bytes = sum(_nbytes(x) for x in inputs)

    class Elementwise(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.flops = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            base = func._schema.name.split("::")[-1]
            if torch.Tag.pointwise in func.tags:
                outs = out if isinstance(out, (tuple, list)) else [out]
                self.flops += sum(o.numel() for o in outs if isinstance(o, torch.Tensor))
            elif base in _REDUCTIONS:
                self.flops += sum(a.numel() for a in args if isinstance(a, torch.Tensor))
            return out

    counter = FlopCounterMode(display=False)
    ew = Elementwise()
    with torch.no_grad(), counter, ew:
        out = model(*inputs)
    outs = out if isinstance(out, (tuple, list)) else [out]
    output_bytes = sum(_nbytes(o) for o in outs)
    mm = float(counter.get_total_flops())
    return RooflineCounts(
        flops=mm + float(ew.flops), bytes=float(input_bytes + output_bytes + param_bytes), matmul_flops=mm,
        elementwise_flops=float(ew.flops), input_bytes=input_bytes, output_bytes=output_bytes,
        parameter_bytes=param_bytes,
    )
