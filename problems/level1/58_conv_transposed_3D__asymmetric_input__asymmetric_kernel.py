import torch
import torch.nn as nn


class Model(nn.Module):
    """3-D transposed convolution with a (kd, kh, kw) kernel over a non-cubic input, no bias."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: list[int]):
        super().__init__()
        self.conv = nn.ConvTranspose3d(
            in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, bias=False
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 16
in_channels = 32
out_channels = 16
kernel_size = [3, 5, 7]
depth_in = 16
height_in = 32
width_in = 64


def get_inputs():
    x = torch.rand(batch_size, in_channels, depth_in, height_in, width_in)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
