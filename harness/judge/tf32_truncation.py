"""The error of a TF32 implementation that truncates, for the verified protocol's TF32 allowance.

Tensor cores fed fp32 operands read only their top 19 bits: the 13 low mantissa bits are dropped (truncated toward
zero), which is what a Triton ``tl.dot`` of fp32 tiles does by default. PyTorch's cuBLAS path rounds to nearest
instead. Truncation is biased: on inputs of one sign (``torch.rand``, a shifted or near-constant distribution) the
errors of a K-long dot product add up coherently, to ~2^-10 of the result instead of PyTorch's ~2^-11 / sqrt(K), so
an honest truncating kernel can exceed 4x PyTorch's own TF32 error by far. The judge measures that error directly:
it runs the float64 reference with every operand of every matmul and convolution truncated to TF32 first
(``TruncatedTF32``), and the protocol admits up to a small factor of it (``Protocol.tf32_allowance``).

A bf16 GEMM stays outside: its 8-bit mantissa costs ~4x the truncation's error on the same inputs.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.overrides import TorchFunctionMode

F = torch.nn.functional
# The operations TF32 changes (matmul and convolution) and which of their arguments are the multiplied operands.
_OPERANDS: dict[Any, tuple[int, ...]] = {
    torch.matmul: (0, 1), torch.Tensor.matmul: (0, 1), torch.Tensor.__matmul__: (0, 1),
    torch.Tensor.__rmatmul__: (0, 1), torch.mm: (0, 1), torch.Tensor.mm: (0, 1), torch.bmm: (0, 1),
    torch.Tensor.bmm: (0, 1), torch.addmm: (1, 2), torch.Tensor.addmm: (1, 2), torch.baddbmm: (1, 2),
    torch.Tensor.baddbmm: (1, 2), torch.addbmm: (1, 2), torch.tensordot: (0, 1),
    F.linear: (0, 1), F.bilinear: (0, 1, 2),
    F.conv1d: (0, 1), F.conv2d: (0, 1), F.conv3d: (0, 1),
    F.conv_transpose1d: (0, 1), F.conv_transpose2d: (0, 1), F.conv_transpose3d: (0, 1),
    F.scaled_dot_product_attention: (0, 1, 2),
}
_KEEP_BITS = -(1 << 13)  # clears fp32's 13 low mantissa bits: the 10 TF32 keeps remain


def truncate(t: torch.Tensor) -> torch.Tensor:
    """``t`` as a tensor core reads it: rounded to fp32, then its mantissa truncated to TF32's 10 bits; returned in
    ``t``'s dtype (float64 in the reference)."""
    if not (isinstance(t, torch.Tensor) and t.dtype in (torch.float32, torch.float64)):
        return t
    y = t.float() if t.dtype == torch.float64 else t.clone()  # one fp32 copy, masked in place
    y.view(torch.int32).bitwise_and_(_KEEP_BITS)
    return y.to(t.dtype)


class TruncatedTF32(TorchFunctionMode):
    """Inside it, the operands of every matmul and convolution are truncated to TF32 (``truncate=True``), or only
    counted (``hits``: how many such calls had floating operands, so the judge knows whether TF32 applies)."""

    def __init__(self, truncate: bool = True) -> None:
        super().__init__()
        self.truncate, self.hits = truncate, 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        which = _OPERANDS.get(func)
        if which is None and func is torch.einsum:
            which = tuple(range(1, len(args)))
        if which is not None and any(isinstance(args[i], torch.Tensor) and args[i].is_floating_point()
                                     for i in which if i < len(args)):
            self.hits += 1
            if self.truncate:
                args = tuple(truncate(a) if i in which else a for i, a in enumerate(args))
        return func(*args, **kwargs)
