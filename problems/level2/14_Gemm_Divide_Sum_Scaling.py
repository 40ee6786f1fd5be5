import torch
import torch.nn as nn


class Model(nn.Module):
    """Matrix multiply by a learned weight, divide by 2, row sum (kept dim), scale."""

    def __init__(self, input_size, hidden_size, scaling_factor):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size, input_size) * 0.02)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.matmul(x, self.weight.T)
        x = x / 2
        x = torch.sum(x, dim=1, keepdim=True)
        return x * self.scaling_factor


batch_size = 1024
input_size = 8192
hidden_size = 8192
scaling_factor = 1.5


def get_inputs():
    x = torch.rand(batch_size, input_size)
    return [x]


def get_init_inputs():
    return [input_size, hidden_size, scaling_factor]
