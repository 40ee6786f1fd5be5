import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """KL divergence KL(targets || predictions) of row distributions, averaged over the batch."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.kl_div(torch.log(predictions), targets, reduction="batchmean")


batch_size = 16384
input_shape = [16384]
dim = 1


def get_inputs():
    predictions = torch.rand(batch_size, *input_shape).softmax(dim=-1)
    targets = torch.rand(batch_size, *input_shape).softmax(dim=-1)
    return [predictions, targets]


def get_init_inputs():
    return []
