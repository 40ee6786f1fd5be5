"""Comparing a candidate output with an expected output: every statistic a protocol may need."""

from __future__ import annotations

import math

import torch

from .record import ErrorStats

TOLERANCES = (1e-2, 1e-3, 1e-4)


def error_stats(out: object, expected: torch.Tensor) -> ErrorStats:
    if not isinstance(out, torch.Tensor):
        return ErrorStats(max_abs=math.inf, max_rel=math.inf, min_tolerance=math.inf, shape_ok=False,
                          out_dtype=type(out).__name__)
    shape_ok = tuple(out.shape) == tuple(expected.shape)
    base = dict(out_shape=list(out.shape), out_dtype=str(out.dtype).removeprefix("torch."),
                dtype_ok=out.dtype == expected.dtype or (expected.dtype == torch.float64 and out.dtype == torch.float32))
    if not shape_ok:
        return ErrorStats(max_abs=math.inf, max_rel=math.inf, min_tolerance=math.inf, shape_ok=False, **base)
    o = out.detach().to(device=expected.device, dtype=torch.float64)
    e = expected.detach().to(torch.float64)
    nonfinite = not bool(torch.isfinite(o).all())
    e_abs = e.abs()
    exp_max = float(e_abs.max()) if e.numel() else 0.0
    all_zero = bool(e.numel()) and exp_max > 0 and not bool(o.ne(0).any())
    if o.numel() == 0:
        return ErrorStats(max_abs=0.0, max_rel=0.0, min_tolerance=0.0, **base)
    d = (o - e).abs()
    if nonfinite:
        # NaN compares unequal to everything: no tolerance admits it (as torch.allclose without equal_nan).
        max_abs = max_rel = min_tol = math.inf
        mean_abs = math.inf
    else:
        max_abs = float(d.max())
        max_rel = float((d / (e_abs + 1e-12)).max())
        min_tol = float((d / (1.0 + e_abs)).max())
        mean_abs = float(d.mean())
    return ErrorStats(
        max_abs=max_abs, max_rel=max_rel, mean_abs=mean_abs, min_tolerance=min_tol,
        passes_at={f"{t:g}": min_tol <= t for t in TOLERANCES},
        nonfinite=nonfinite, all_zero_vs_nonzero=all_zero, expected_abs_max=exp_max, **base,
    )
