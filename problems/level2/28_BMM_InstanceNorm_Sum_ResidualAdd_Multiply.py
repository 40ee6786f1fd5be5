import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear layer, per-row instance normalization over features, add y, multiply by y."""

    def __init__(self, in_features, out_features):
        super().__init__()
        self.bmm = nn.Linear(in_features, out_features)
        self.instance_norm = nn.InstanceNorm2d(out_features, eps=1e-05, momentum=0.1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        # Viewed as [B, 1, 1, F], each row is one single-channel image: InstanceNorm2d normalizes
        # it over its F features (no affine, so num_features is not used).
        x = self.bmm(x)
        x = self.instance_norm(x.unsqueeze(1).unsqueeze(1)).squeeze(1).squeeze(1)
        x = x + y
        return x * y


batch_size = 1024
in_features = 8192
out_features = 8192


def get_inputs():
    x = torch.rand(batch_size, in_features)
    y = torch.rand(batch_size, out_features)
    return [x, y]


def get_init_inputs():
    return [in_features, out_features]
