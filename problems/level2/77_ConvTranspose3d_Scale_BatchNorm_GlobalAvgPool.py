import torch
import torch.nn as nn


class Model(nn.Module):
    """3-D transposed convolution, scale, BatchNorm, global average pool."""

    def __init__(self, in_channels, out_channels, kernel_size, scale_factor):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(in_channels, out_channels, kernel_size)
        self.scale_factor = scale_factor
        self.batch_norm = nn.BatchNorm3d(out_channels, eps=1e-05, momentum=0.1)
        self.global_avg_pool = nn.AdaptiveAvgPool3d((1, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_transpose(x)
        x = x * self.scale_factor
        x = self.batch_norm(x)
        return self.global_avg_pool(x)


batch_size = 16
in_channels = 64
out_channels = 128
depth = 16
height = 32
width = 32
kernel_size = 5
scale_factor = 2.0


def get_inputs():
    x = torch.rand(batch_size, in_channels, depth, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, scale_factor]
