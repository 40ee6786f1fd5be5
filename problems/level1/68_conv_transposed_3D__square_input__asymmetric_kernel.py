import torch
import torch.nn as nn


class Model(nn.Module):
    """3-D transposed convolution with a (kd, kw, kh) kernel over a cubic input, no bias."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: list[int]):
        super().__init__()
        self.conv = nn.ConvTranspose3d(
            in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, bias=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 16
in_channels = 32
out_channels = 64
kernel_depth = 3
kernel_width = 5
kernel_height = 5
depth = 64
width = 64
height = 64


def get_inputs():
    x = torch.rand(batch_size, in_channels, depth, width, height)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, [kernel_depth, kernel_width, kernel_height]]
