import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, Swish, bias add, GroupNorm over features."""

    def __init__(self, in_features, out_features, num_groups, bias_shape):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.group_norm = nn.GroupNorm(num_groups, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.matmul(x)
        x = torch.sigmoid(x) * x
        x = x + self.bias
        return self.group_norm(x)


batch_size = 32768
in_features = 1024
out_features = 4096
num_groups = 64
bias_shape = [4096]


def get_inputs():
    x = torch.rand(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, num_groups, bias_shape]
