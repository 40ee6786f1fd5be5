import torch
import torch.nn as nn


class Model(nn.Module):
    """2-D convolution, ReLU, then a learned per-channel bias added."""

    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = torch.relu(x)
        return x + self.bias


batch_size = 128
in_channels = 64
out_channels = 128
height = 128
width = 128
kernel_size = 3
bias_shape = [128, 1, 1]


def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
