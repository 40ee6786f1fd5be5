import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, Swish, scale."""

    def __init__(self, in_features, out_features, scaling_factor):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.matmul(x)
        x = x * torch.sigmoid(x)
        return x * self.scaling_factor


batch_size = 128
in_features = 32768
out_features = 32768
scaling_factor = 2.0


def get_inputs():
    x = torch.rand(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, scaling_factor]
