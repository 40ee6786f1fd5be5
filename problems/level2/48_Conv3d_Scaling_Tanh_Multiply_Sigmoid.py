import torch
import torch.nn as nn


class Model(nn.Module):
    """3-D convolution, learned per-channel scale, tanh, learned per-channel multiplier, sigmoid."""

    def __init__(self, in_channels, out_channels, kernel_size, scaling_factor, bias_shape):
        super().__init__()
        # The learned per-channel scale has shape bias_shape; the scalar `scaling_factor` is not used.
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.scaling_factor = nn.Parameter(torch.randn(bias_shape))
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = x * self.scaling_factor
        x = torch.tanh(x)
        x = x * self.bias
        return torch.sigmoid(x)


batch_size = 128
in_channels = 3
out_channels = 16
depth = 16
height = 64
width = 64
kernel_size = 3
scaling_factor = 2
bias_shape = [16, 1, 1, 1]


def get_inputs():
    x = torch.rand(batch_size, in_channels, depth, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, scaling_factor, bias_shape]
