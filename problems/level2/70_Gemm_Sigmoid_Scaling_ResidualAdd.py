import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, then sigmoid of it scaled and added back to it."""

    def __init__(self, input_size, hidden_size, scaling_factor):
        super().__init__()
        self.gemm = nn.Linear(input_size, hidden_size)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.gemm(x)
        original_x = x
        x = torch.sigmoid(x)
        x = x * self.scaling_factor
        return x + original_x


batch_size = 1024
input_size = 8192
hidden_size = 8192
scaling_factor = 2.0


def get_inputs():
    x = torch.rand(batch_size, input_size)
    return [x]


def get_init_inputs():
    return [input_size, hidden_size, scaling_factor]
