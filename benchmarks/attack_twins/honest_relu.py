# The honest twin of the ReLU attacks (harness/fixtures/hacks/cpu/*_relu.py): torch.relu, nothing else.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)
