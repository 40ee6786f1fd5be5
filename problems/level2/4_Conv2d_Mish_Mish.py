import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """2-D convolution followed by Mish applied twice."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = F.mish(x)
        return F.mish(x)


batch_size = 64
in_channels = 64
out_channels = 128
height = 256
width = 256
kernel_size = 3


def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
