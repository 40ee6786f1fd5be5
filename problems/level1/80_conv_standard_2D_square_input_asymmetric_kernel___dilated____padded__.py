import torch
import torch.nn as nn


class Model(nn.Module):
    """2-D convolution with a (kh, kw) kernel and per-axis padding and dilation, no bias."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: list[int],
        stride: int,
        padding: list[int],
        dilation: list[int],
    ):
        super().__init__()
        self.conv = nn.Conv2d(
            in_channels,
            out_channels,
            kernel_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
            bias=False,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 8
in_channels = 32
out_channels = 64
kernel_size = [5, 9]
width = 512
height = 512
stride = 1
padding = [2, 4]
dilation = [2, 3]


def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, dilation]
