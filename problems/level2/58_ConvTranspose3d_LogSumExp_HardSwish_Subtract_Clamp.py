import torch
import torch.nn as nn


class Model(nn.Module):
    """Strided 3-D transposed conv, logsumexp over channels, x * sigmoid(x + 3) / 6, subtract a bias, clamp."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, bias_shape):
        super().__init__()
        self.conv_transpose = nn.ConvTranspose3d(
            in_channels, out_channels, kernel_size, stride=stride, padding=padding
        )
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_transpose(x)
        x = torch.logsumexp(x, dim=1, keepdim=True)
        x = x * torch.sigmoid(x + 3) / 6
        x = x - self.bias
        return torch.clamp(x, min=-1, max=1)


batch_size = 128
in_channels = 3
out_channels = 16
depth = 16
height = 32
width = 32
kernel_size = 3
stride = 2
padding = 1
bias_shape = [1, 1, 1, 1]


def get_inputs():
    x = torch.rand(batch_size, in_channels, depth, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, bias_shape]
