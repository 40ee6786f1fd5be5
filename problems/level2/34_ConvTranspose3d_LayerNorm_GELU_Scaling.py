import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Strided 3-D transposed convolution, LayerNorm over the last dim, GELU, scale."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, bias, eps, scaling_factor):
        super().__init__()
        # LayerNorm(out_channels) normalizes the last dim, i.e. the output width (2 * W).
        self.conv_transpose = nn.ConvTranspose3d(
            in_channels, out_channels, kernel_size, stride=stride, padding=padding, bias=bias
        )
        self.layer_norm = nn.LayerNorm(out_channels, eps=eps)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_transpose(x)
        x = self.layer_norm(x)
        x = F.gelu(x)
        return x * self.scaling_factor


batch_size = 32
in_channels = 32
out_channels = 64
D = 16
H = 32
W = 32
kernel_size = 4
stride = 2
padding = 1
bias = True
eps = 1e-05
scaling_factor = 1.0


def get_inputs():
    x = torch.rand(batch_size, in_channels, D, H, W)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, padding, bias, eps, scaling_factor]
