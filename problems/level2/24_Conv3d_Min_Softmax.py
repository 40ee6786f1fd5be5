import torch
import torch.nn as nn


class Model(nn.Module):
    """3-D convolution, minimum along one dim (depth), softmax over channels."""

    def __init__(self, in_channels, out_channels, kernel_size, dim):
        super().__init__()
        self.conv = nn.Conv3d(in_channels, out_channels, kernel_size)
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv(x)
        x = torch.min(x, dim=self.dim)[0]
        return torch.softmax(x, dim=1)


batch_size = 128
in_channels = 3
out_channels = 24
D = 24
H = 32
W = 32
kernel_size = 3
dim = 2


def get_inputs():
    x = torch.rand(batch_size, in_channels, D, H, W)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, dim]
