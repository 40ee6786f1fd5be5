import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """2-D convolution, x * tanh(softplus(x)), BatchNorm."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bn = nn.BatchNorm2d(out_channels, eps=1e-05, momentum=0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = torch.multiply(torch.tanh(F.softplus(x)), x)
        return self.bn(x)


batch_size = 64
in_channels = 64
out_channels = 128
height = 128
width = 128
kernel_size = 3


def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
