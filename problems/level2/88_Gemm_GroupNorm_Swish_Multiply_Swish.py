import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, GroupNorm over features, Swish, learned per-feature multiplier, Swish."""

    def __init__(self, in_features, out_features, num_groups, multiply_weight_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.group_norm = nn.GroupNorm(num_groups, out_features)
        self.multiply_weight = nn.Parameter(torch.randn(multiply_weight_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.gemm(x)
        x = self.group_norm(x)
        x = x * torch.sigmoid(x)
        x = x * self.multiply_weight
        return x * torch.sigmoid(x)


batch_size = 1024
in_features = 8192
out_features = 8192
num_groups = 256
multiply_weight_shape = [8192]


def get_inputs():
    x = torch.rand(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, num_groups, multiply_weight_shape]
