import torch
import torch.nn as nn


class Model(nn.Module):
    """Contracts the last axis of a 4-D tensor with a matrix (einsum bijl,lk->bijk)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bijl,lk->bijk", A, B)


b = 8
i = 256
j = 512
l = 256  # noqa: E741 (name kept from the reference)
k = 768


def get_inputs():
    A = torch.rand(b, i, j, l)
    B = torch.rand(l, k)
    return [A, B]


def get_init_inputs():
    return []
