import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, learned per-feature scale, BatchNorm1d."""

    def __init__(self, in_features, out_features, scale_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.scale = nn.Parameter(torch.randn(scale_shape))
        self.bn = nn.BatchNorm1d(out_features, eps=1e-05, momentum=0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.gemm(x)
        x = x * self.scale
        return self.bn(x)


batch_size = 16384
in_features = 4096
out_features = 4096
scale_shape = [4096]


def get_inputs():
    x = torch.rand(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, scale_shape]
