import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, BatchNorm1d, learned scalar scale, row softmax."""

    def __init__(self, in_features, out_features, bn_eps, bn_momentum, scale_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.bn = nn.BatchNorm1d(out_features, eps=bn_eps, momentum=bn_momentum)
        self.scale = nn.Parameter(torch.randn(scale_shape))
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.gemm(x)
        x = self.bn(x)
        x = self.scale * x
        return self.softmax(x)


batch_size = 1024
in_features = 8192
out_features = 8192
bn_eps = 1e-05
bn_momentum = 0.1
scale_shape = [1]


def get_inputs():
    x = torch.rand(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, bn_eps, bn_momentum, scale_shape]
