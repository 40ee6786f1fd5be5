import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, sigmoid, second linear layer, row logsumexp."""

    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.linear1 = nn.Linear(input_size, hidden_size)
        self.linear2 = nn.Linear(hidden_size, output_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear1(x)
        x = torch.sigmoid(x)
        x = self.linear2(x)
        return torch.logsumexp(x, dim=1)


batch_size = 16384
input_size = 2048
hidden_size = 4096
output_size = 1024


def get_inputs():
    x = torch.rand(batch_size, input_size)
    return [x]


def get_init_inputs():
    return [input_size, hidden_size, output_size]
