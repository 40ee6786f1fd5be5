import torch
import torch.nn as nn


class Model(nn.Module):
    """2-D transposed convolution, global avg pool, bias add, logsumexp over channels, sum, scale by 10."""

    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_transpose(x)
        x = torch.mean(x, dim=(2, 3), keepdim=True)
        x = x + self.bias
        x = torch.logsumexp(x, dim=1, keepdim=True)
        x = torch.sum(x, dim=(2, 3))
        return x * 10.0


batch_size = 16
in_channels = 64
out_channels = 128
height = 512
width = 512
kernel_size = 3
bias_shape = [128, 1, 1]


def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, bias_shape]
