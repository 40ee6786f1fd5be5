import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear layer, divide by a constant, GELU."""

    def __init__(self, input_size, output_size, divisor):
        super().__init__()
        self.linear = nn.Linear(input_size, output_size)
        self.divisor = divisor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = x / self.divisor
        return F.gelu(x)


batch_size = 1024
input_size = 8192
output_size = 8192
divisor = 10.0


def get_inputs():
    x = torch.rand(batch_size, input_size)
    return [x]


def get_init_inputs():
    return [input_size, output_size, divisor]
