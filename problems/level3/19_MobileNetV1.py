import torch
import torch.nn as nn


def _conv_bn(inp, oup, stride):
    """Full 3x3 convolution + BN + ReLU."""
    return nn.Sequential(
        nn.Conv2d(inp, oup, 3, stride, 1, bias=False),
        nn.BatchNorm2d(oup),
        nn.ReLU(inplace=True),
    )


def _conv_dw(inp, oup, stride):
    """Depthwise-separable unit: depthwise 3x3 + BN + ReLU, then pointwise 1x1 + BN + ReLU."""
    return nn.Sequential(
        nn.Conv2d(inp, inp, 3, stride, 1, groups=inp, bias=False),
        nn.BatchNorm2d(inp),
        nn.ReLU(inplace=True),
        nn.Conv2d(inp, oup, 1, 1, 0, bias=False),
        nn.BatchNorm2d(oup),
        nn.ReLU(inplace=True),
    )


# (output width before the alpha multiplier, stride) of the 13 depthwise-separable units.
_DW_UNITS = [
    (64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2),
    (512, 1), (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1),
]


class Model(nn.Module):
    """MobileNetV1: strided conv stem, 13 depthwise-separable units, 7x7 average pool, linear head."""

    def __init__(self, num_classes=1000, input_channels=3, alpha=1.0):
        super().__init__()
        width = int(32 * alpha)
        units = [_conv_bn(input_channels, width, 2)]
        for base, stride in _DW_UNITS:
            units.append(_conv_dw(width, int(base * alpha), stride))
            width = int(base * alpha)
        units.append(nn.AvgPool2d(7))
        self.model = nn.Sequential(*units)
        self.fc = nn.Linear(int(1024 * alpha), num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.model(x)
        return self.fc(x.view(x.size(0), -1))


batch_size = 10
input_channels = 3
height = 224
width = 224
num_classes = 1000
alpha = 1.0


def get_inputs():
    x = torch.rand(batch_size, input_channels, height, width)
    return [x]


def get_init_inputs():
    return [num_classes, input_channels, alpha]
