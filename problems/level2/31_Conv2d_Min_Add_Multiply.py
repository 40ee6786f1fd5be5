import torch
import torch.nn as nn


class Model(nn.Module):
    """2-D convolution, elementwise minimum with a constant, bias add, scale."""

    def __init__(self, in_channels, out_channels, kernel_size, constant_value, bias_shape, scaling_factor):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.constant_value = constant_value
        self.bias = nn.Parameter(torch.randn(bias_shape))
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = torch.min(x, torch.tensor(self.constant_value, device=x.device))
        x = x + self.bias
        return x * self.scaling_factor


batch_size = 128
in_channels = 64
out_channels = 128
height = 128
width = 128
kernel_size = 3
constant_value = 0.5
bias_shape = [128, 1, 1]
scaling_factor = 2.0


def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, constant_value, bias_shape, scaling_factor]
