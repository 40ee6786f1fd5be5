import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, sigmoid, row sum (kept dim)."""

    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.linear = nn.Linear(input_size, hidden_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = torch.sigmoid(x)
        return torch.sum(x, dim=1, keepdim=True)


batch_size = 128
input_size = 32768
hidden_size = 32768


def get_inputs():
    x = torch.rand(batch_size, input_size)
    return [x]


def get_init_inputs():
    return [input_size, hidden_size]
