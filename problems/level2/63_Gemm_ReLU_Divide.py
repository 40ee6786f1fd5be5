import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, ReLU, divide by a constant."""

    def __init__(self, in_features, out_features, divisor):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.divisor = divisor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = torch.relu(x)
        return x / self.divisor


batch_size = 1024
in_features = 8192
out_features = 8192
divisor = 2.0


def get_inputs():
    x = torch.rand(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, divisor]
