import torch
import torch.nn as nn


class Model(nn.Module):
    """Deep, narrow feed-forward stack: Linear+ReLU per hidden width, then a final Linear."""

    def __init__(self, input_size, hidden_layer_sizes, output_size):
        super().__init__()
        widths = [input_size, *hidden_layer_sizes]
        stack = []
        for fan_in, fan_out in zip(widths[:-1], widths[1:], strict=True):
            stack += [nn.Linear(fan_in, fan_out), nn.ReLU()]
        stack.append(nn.Linear(widths[-1], output_size))
        self.network = nn.Sequential(*stack)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.network(x)


batch_size = 1024
input_size = 8192
hidden_layer_sizes = [1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024]
output_size = 8192


def get_inputs():
    x = torch.rand(batch_size, input_size)
    return [x]


def get_init_inputs():
    return [input_size, hidden_layer_sizes, output_size]
