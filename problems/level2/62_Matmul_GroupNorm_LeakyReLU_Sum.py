import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, GroupNorm over features, LeakyReLU, then x + x."""

    def __init__(self, input_size, hidden_size, num_groups):
        super().__init__()
        self.fc = nn.Linear(input_size, hidden_size)
        self.gn = nn.GroupNorm(num_groups=num_groups, num_channels=hidden_size, eps=1e-05)
        self.leaky_relu = nn.LeakyReLU(negative_slope=0.01)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.fc(x)
        x = self.gn(x)
        x = self.leaky_relu(x)
        return x + x


batch_size = 1024
input_size = 8192
hidden_size = 8192
num_groups = 512


def get_inputs():
    x = torch.rand(batch_size, input_size)
    return [x]


def get_init_inputs():
    return [input_size, hidden_size, num_groups]
