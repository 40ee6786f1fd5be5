import torch
import torch.nn as nn


class Model(nn.Module):
    """Strided 3-D transposed convolution, softmax over channels, sigmoid."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_padding):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(
            in_channels,
            out_channels,
            kernel_size,
            stride=stride,
            padding=padding,
            output_padding=output_padding,
            bias=True,
        )
        self.softmax = nn.Softmax(dim=1)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_transpose(x)
        x = self.softmax(x)
        return self.sigmoid(x)


batch_size = 16
in_channels = 32
out_channels = 64
D = 16
H = 32
W = 32
kernel_size = 3
stride = 2
padding = 1
output_padding = 1


def get_inputs():
    x = torch.rand(batch_size, in_channels, D, H, W)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, output_padding]
