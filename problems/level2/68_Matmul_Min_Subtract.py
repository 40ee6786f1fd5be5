import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, elementwise minimum with a learned scalar, then subtract that scalar."""

    def __init__(self, in_features, out_features, constant):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.constant = nn.Parameter(torch.tensor(constant))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = torch.min(x, self.constant)
        return x - self.constant


batch_size = 128
in_features = 16384
out_features = 16384
constant = 2.0


def get_inputs():
    x = torch.rand(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, constant]
