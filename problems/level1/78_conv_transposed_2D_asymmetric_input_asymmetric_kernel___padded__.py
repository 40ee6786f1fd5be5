import torch
import torch.nn as nn


class Model(nn.Module):
    """2-D transposed convolution with a (kh, kw) kernel and per-axis padding, no bias."""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: list[int],
        stride: list[int],
        padding: list[int],
    ):
        super().__init__()
        self.conv = nn.ConvTranspose2d(
            in_channels, out_channels, kernel_size, stride=stride, padding=padding, bias=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 8
in_channels = 32
out_channels = 32
kernel_size = [3, 7]
height = 512
width = 1024
stride = [1, 1]
padding = [1, 3]


def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding]
