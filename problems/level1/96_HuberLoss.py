import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Smooth L1 (Huber, beta 1) loss between predictions and targets, averaged (scalar)."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.smooth_l1_loss(predictions, targets)


batch_size = 32768
input_shape = [32768]
dim = 1


def get_inputs():
    predictions = torch.rand(batch_size, *input_shape)
    targets = torch.rand(batch_size, *input_shape)
    return [predictions, targets]


def get_init_inputs():
    return []
