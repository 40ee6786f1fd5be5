import torch
import torch.nn as nn


class Model(nn.Module):
    """Grouped 3-D transposed convolution with per-axis kernel, stride, padding and output padding, no bias."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: list[int],
        stride: list[int],
        padding: list[int],
        output_padding: list[int],
        groups: int,
    ):
        super().__init__()
        self.conv = nn.ConvTranspose3d(
            in_channels,
            out_channels,
            kernel_size,
            stride=stride,
            padding=padding,
            output_padding=output_padding,
            groups=groups,
            bias=False,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 8
in_channels = 32
out_channels = 32
kernel_size = [3, 5, 7]
depth = 12
height = 24
width = 48
stride = [2, 2, 2]
padding = [1, 2, 3]
output_padding = [1, 1, 1]
groups = 4


def get_inputs():
    x = torch.rand(batch_size, in_channels, depth, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding, groups]
