import torch
import torch.nn as nn


def _dense_layer(in_features: int, growth_rate: int) -> nn.Sequential:
    """BN -> ReLU -> 3x3 conv producing growth_rate maps (dropout p=0 kept as an identity)."""
    return nn.Sequential(
        nn.BatchNorm2d(in_features),
        nn.ReLU(inplace=True),
        nn.Conv2d(in_features, growth_rate, kernel_size=3, padding=1, bias=False),
        nn.Dropout(0.0),
    )


class Model(nn.Module):
    """DenseNet dense block: every layer sees the concatenation of the input and all earlier outputs."""

    def __init__(self, num_layers: int, num_input_features: int, growth_rate: int):
        super().__init__()
        self.layers = nn.ModuleList(
            _dense_layer(num_input_features + i * growth_rate, growth_rate) for i in range(num_layers)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [x]
        for layer in self.layers:
            features.append(layer(x))
            x = torch.cat(features, 1)
        return x


batch_size = 10
num_layers = 6
num_input_features = 32
growth_rate = 32
height = 224
width = 224


def get_inputs():
    x = torch.rand(batch_size, num_input_features, height, width)
    return [x]


def get_init_inputs():
    return [num_layers, num_input_features, growth_rate]
