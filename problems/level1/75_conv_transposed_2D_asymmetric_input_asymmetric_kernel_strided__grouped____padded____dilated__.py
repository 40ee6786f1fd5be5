import torch
import torch.nn as nn


class Model(nn.Module):
    """Grouped 2-D transposed convolution with per-axis kernel, stride, padding and dilation, no bias."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: list[int],
        stride: list[int],
        padding: list[int],
        dilation: list[int],
        groups: int,
    ):
        super().__init__()
        self.conv = nn.ConvTranspose2d(
            in_channels,
            out_channels,
            kernel_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=groups,
            bias=False,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 16
in_channels = 32
out_channels = 64
kernel_size = [3, 5]
height = 128
width = 256
stride = [2, 3]
padding = [1, 2]
dilation = [2, 1]
groups = 4


def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, dilation, groups]
