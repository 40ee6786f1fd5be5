import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """3-D convolution, hardswish, GroupNorm (4 groups), spatial mean per channel."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size, bias=True)
        self.group_norm = nn.GroupNorm(4, out_channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = F.hardswish(x)
        x = self.group_norm(x)
        return torch.mean(x, dim=[2, 3, 4])


batch_size = 1024
in_channels = 3
out_channels = 16
depth = 16
height = 32
width = 32
kernel_size = 4


def get_inputs():
    x = torch.rand(batch_size, in_channels, depth, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
