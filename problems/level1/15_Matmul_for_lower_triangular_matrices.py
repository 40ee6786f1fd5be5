import torch
import torch.nn as nn


class Model(nn.Module):
    """Lower-triangular part of the product of two lower-triangular matrices."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.tril(torch.matmul(A, B))


M = 4096


def get_inputs():
    A = torch.tril(torch.rand(M, M))
    B = torch.tril(torch.rand(M, M))
    return [A, B]


def get_init_inputs():
    return []
