import torch
import torch.nn as nn


class Model(nn.Module):
    """1-D max pooling with stride, padding and dilation."""

    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int, return_indices: bool):
        super().__init__()
        self.pool = nn.MaxPool1d(
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            dilation=dilation,
            return_indices=return_indices,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 64
features = 192
sequence_length = 65536
kernel_size = 8
stride = 1
padding = 4
dilation = 3
return_indices = False


def get_inputs():
    x = torch.rand(batch_size, features, sequence_length)
    return [x]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation, return_indices]
