import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Linear layer, GELU, row softmax."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = F.gelu(x)
        return F.softmax(x, dim=1)


batch_size = 1024
in_features = 8192
out_features = 8192


def get_inputs():
    x = torch.rand(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features]
