import torch
import torch.nn as nn


class Model(nn.Module):
    """2-D convolution, minimum over channels (kept dim), tanh applied twice."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = torch.min(x, dim=1, keepdim=True)[0]
        x = torch.tanh(x)
        return torch.tanh(x)


batch_size = 128
in_channels = 16
out_channels = 64
height = 256
width = 256
kernel_size = 3


def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
