import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, GroupNorm over features, row minimum (kept dim), broadcast add of a learned bias."""

    def __init__(self, in_features, out_features, num_groups, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.group_norm = nn.GroupNorm(num_groups, out_features)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # [B, 1] + [1, F, 1, 1] broadcasts to an output of shape [1, F, B, 1].
        x = self.gemm(x)
        x = self.group_norm(x)
        x = torch.min(x, dim=1, keepdim=True)[0]
        return x + self.bias


batch_size = 1024
in_features = 8192
out_features = 8192
num_groups = 512
bias_shape = [1, 8192, 1, 1]


def get_inputs():
    x = torch.rand(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, num_groups, bias_shape]
