"""Precision modes (issue 19, part 2): the floating dtype a problem is evaluated in, declared once.

``fp32`` is the problem as written (nothing is cast). ``bf16``/``fp16``: the judge casts every floating input
and the reference Model to that dtype, times the baseline in it, computes the exact expected output in float64
from the same rounded inputs and parameters, and expects the candidate's output in that dtype; the worker casts
ModelNew to it. Tolerances per dtype are the protocol's (``Protocol.tolerance_for``), not repeated here.
Torch-free, so configs and prompts can name precisions without importing torch.
"""

from __future__ import annotations

from typing import Literal

Precision = Literal["fp32", "bf16", "fp16"]
DEFAULT_PRECISION: Precision = "fp32"
# precision -> torch dtype name
DTYPE_NAMES: dict[str, str] = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
HALF_DTYPES = ("float16", "bfloat16")


def check(precision: str) -> str:
    if precision not in DTYPE_NAMES:
        raise ValueError(f"unknown precision {precision!r}; known: {', '.join(DTYPE_NAMES)}")
    return precision


def dtype_name(precision: str) -> str:
    return DTYPE_NAMES[check(precision)]


def casts(precision: str) -> bool:
    """Whether inputs, parameters and models are cast (fp32 leaves the problem exactly as written)."""
    return check(precision) != DEFAULT_PRECISION


def torch_dtype(precision: str):
    """The torch dtype to cast to, or None for fp32 (nothing is cast)."""
    if not casts(precision):
        return None
    import torch

    return getattr(torch, DTYPE_NAMES[precision])


def is_half(precision: str, output_dtype: str | None = None) -> bool:
    """Whether the half-precision tolerance applies: a bf16/fp16 run, or (fp32, as before precision modes) an
    output that came back in a 16-bit dtype."""
    return casts(precision) or (output_dtype or "float32") in HALF_DTYPES


def tf32_not_applicable(precision: str) -> str:
    """Why TF32 cannot apply at this precision ('' when it can): it only changes fp32 matmul and convolution."""
    return "" if not casts(precision) else f"TF32 does not apply at {precision} (it only changes fp32 matmul/convolution)"
