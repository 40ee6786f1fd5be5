import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, dropout, row softmax."""

    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.matmul = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.matmul(x)
        x = self.dropout(x)
        return torch.softmax(x, dim=1)


batch_size = 128
in_features = 16384
out_features = 16384
dropout_p = 0.2


def get_inputs():
    x = torch.rand(batch_size, in_features)
    return [x]


def get_init_inputs():
    return [in_features, out_features, dropout_p]
