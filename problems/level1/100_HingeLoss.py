import torch
import torch.nn as nn


class Model(nn.Module):
    """Mean hinge loss max(0, 1 - predictions * targets) with +-1 targets broadcast over the last axis."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


batch_size = 32768
input_shape = [32768]
dim = 1


def get_inputs():
    predictions = torch.rand(batch_size, *input_shape)
    targets = torch.randint(0, 2, (batch_size,)).float() * 2 - 1
    return [predictions, targets]


def get_init_inputs():
    return []
