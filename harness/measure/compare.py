"""Comparing a candidate output with an expected output: every statistic a protocol may need."""

from __future__ import annotations

import math

import torch

from .record import ErrorStats

TOLERANCES = (1e-2, 1e-3, 1e-4)
CHUNK = 1 << 26  # elements compared at a time


def _chunk_stats(out_c: torch.Tensor, exp_c: torch.Tensor, out: torch.Tensor, expected: torch.Tensor, acc: dict) -> None:
    # On the output's device when it is a GPU: the judge keeps large expected outputs in host memory.
    dev = out_c.device if out_c.device.type == "cuda" else expected.device
    o = out_c.to(device=dev, dtype=torch.float64)
    e = exp_c.to(device=dev, dtype=torch.float64)
    # Non-finite reference values must be matched, never wildcarded (as torch.allclose treats equal
    # infs). An exact float64 reference may also hold values the output dtype cannot (cumprod of
    # 3*U[0,1) overflows fp32): rounded to the output dtype they are +-inf. Such positions count when
    # the candidate has exactly that value there, and are left out of the error; anything else
    # non-finite in the candidate fails as before.
    if out.is_floating_point() and expected.is_floating_point():
        e_out = e.to(out.dtype).to(torch.float64) if out.dtype != expected.dtype else e
        special = ~torch.isfinite(e_out)
        if bool(special.any()):
            same = (o[special] == e_out[special]) | (torch.isnan(o[special]) & torch.isnan(e_out[special]))
            if bool(same.all()):
                o = torch.where(special, torch.zeros_like(o), o)
                e = torch.where(special, torch.zeros_like(e), e)
            else:
                o = torch.where(special, torch.full_like(o, math.nan), o)
    if not bool(torch.isfinite(o).all()):
        acc["nonfinite"] = True
    e_abs = e.abs()
    acc["exp_max"] = max(acc["exp_max"], float(e_abs.max()) if e.numel() else 0.0)
    acc["any_nonzero"] = acc["any_nonzero"] or bool(o.ne(0).any())
    if acc["nonfinite"]:
        return
    d = (o - e).abs()
    acc["max_abs"] = max(acc["max_abs"], float(d.max()))
    acc["max_rel"] = max(acc["max_rel"], float((d / (e_abs + 1e-12)).max()))
    acc["min_tol"] = max(acc["min_tol"], float((d / (1.0 + e_abs)).max()))
    acc["sum_abs"] += float(d.sum())


def unread_stats(shape: list[int], dtype: str, expected: torch.Tensor, dtype_ok: bool) -> ErrorStats:
    """An output judged on what it declares alone, its bytes never read: a shape other than the reference's, a dtype
    that cannot cross, or more bytes than its slot holds. Nothing is allocated for the shape it claims (2^31 x 2^31
    with stride 0 is a valid tensor in the candidate's process and 2^64 bytes here)."""
    return ErrorStats(max_abs=math.inf, max_rel=math.inf, min_tolerance=math.inf,
                      shape_ok=list(shape) == list(expected.shape), dtype_ok=dtype_ok, out_shape=list(shape),
                      out_dtype=dtype)


def error_stats(out: object, expected: torch.Tensor) -> ErrorStats:
    if not isinstance(out, torch.Tensor):
        return ErrorStats(max_abs=math.inf, max_rel=math.inf, min_tolerance=math.inf, shape_ok=False,
                          out_dtype=type(out).__name__)
    shape_ok = tuple(out.shape) == tuple(expected.shape)
    base = dict(out_shape=list(out.shape), out_dtype=str(out.dtype).removeprefix("torch."),
                dtype_ok=out.dtype == expected.dtype or (expected.dtype == torch.float64 and out.dtype == torch.float32))
    if not shape_ok:
        return ErrorStats(max_abs=math.inf, max_rel=math.inf, min_tolerance=math.inf, shape_ok=False, **base)
    if out.numel() == 0:
        return ErrorStats(max_abs=0.0, max_rel=0.0, min_tolerance=0.0, **base)
    # In chunks: at full size one float64 temporary of a 1.6G-element output is 12.8 GB, and the judge
    # shares the device with the candidate.
    o_all = out.detach().reshape(-1)
    e_all = expected.detach().reshape(-1)
    acc = {"nonfinite": False, "exp_max": 0.0, "any_nonzero": False, "max_abs": 0.0, "max_rel": 0.0, "min_tol": 0.0,
           "sum_abs": 0.0}
    step = CHUNK
    for i in range(0, o_all.numel(), step):
        _chunk_stats(o_all[i:i + step], e_all[i:i + step], out, expected, acc)
    nonfinite = acc["nonfinite"]
    exp_max = acc["exp_max"]
    # A reference whose every value is subnormal in the output dtype (softplus(x - 100) ~ 4e-44 in fp32) is zero
    # wherever arithmetic flushes denormals (CUDA's -ftz, fast math): a zero output there is not skipped work.
    floor = torch.finfo(out.dtype).tiny if out.is_floating_point() else 0.0
    all_zero = exp_max > floor and not acc["any_nonzero"]
    if nonfinite:
        # NaN compares unequal to everything: no tolerance admits it (as torch.allclose without equal_nan).
        max_abs = max_rel = min_tol = mean_abs = math.inf
    else:
        max_abs, max_rel, min_tol = acc["max_abs"], acc["max_rel"], acc["min_tol"]
        mean_abs = acc["sum_abs"] / o_all.numel()
    return ErrorStats(
        max_abs=max_abs, max_rel=max_rel, mean_abs=mean_abs, min_tolerance=min_tol,
        passes_at={f"{t:g}": min_tol <= t for t in TOLERANCES},
        nonfinite=nonfinite, all_zero_vs_nonzero=all_zero, expected_abs_max=exp_max, **base,
    )


# How many roundings of the output dtype, at the problem's output scale, a value may lie within and still round to
# zero in an honest kernel: a tanh-form GELU of inputs near -5 is exactly 0 in fp32 (tanh rounds to -1) where the exact
# GELU is 6e-7, 1.3 fp32 roundings of the problem's usual output of ~4.5 (claude-3.5-sonnet level1/26, H200).
ROUNDING_ZERO_ULPS = 8


def abs_max(t: torch.Tensor) -> float:
    """The largest magnitude of ``t``, a chunk at a time (no full-size temporary on a device the judge shares)."""
    flat, out = t.detach().reshape(-1), 0.0
    for i in range(0, flat.numel(), CHUNK):
        out = max(out, float(flat[i:i + CHUNK].abs().max()))
    return out


def below_rounding(abs_max: float, output_scale: float | None, dtype: torch.dtype) -> bool:
    """Whether an exact output whose largest magnitude is ``abs_max`` lies within ``ROUNDING_ZERO_ULPS`` roundings of
    ``dtype`` at ``output_scale`` (the largest magnitude of the problem's output on its own inputs): an all-zero
    answer there is what a different correct formula gives, not skipped work. ``output_scale`` None: not known."""
    if output_scale is None or not dtype.is_floating_point or output_scale <= 0:
        return False
    return abs_max <= ROUNDING_ZERO_ULPS * torch.finfo(dtype).eps * output_scale


def close_in_chunks(a: torch.Tensor, b: torch.Tensor, *, rtol: float, atol: float) -> bool:
    """``torch.allclose`` in float64 with NaN equal to NaN, a chunk at a time (whole-tensor float64 copies of a
    full-size output are tens of GB on a device the judge shares)."""
    if a.shape != b.shape:
        return False
    fa, fb = a.detach().reshape(-1), b.detach().reshape(-1)
    for i in range(0, fa.numel(), CHUNK):
        if not torch.allclose(fa[i:i + CHUNK].double(), fb[i:i + CHUNK].double(), rtol=rtol, atol=atol, equal_nan=True):
            return False
    return True
