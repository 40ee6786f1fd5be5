import torch
import torch.nn as nn


def _make_divisible(v, divisor, min_value=None):
    """Round a channel count to a multiple of divisor, never dropping more than 10%."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def _inverted_residual(inp, oup, stride, expand_ratio):
    """Optional 1x1 expansion (BN, ReLU6), depthwise 3x3 (BN, ReLU6), linear 1x1 projection (BN).

    Note: no residual addition is applied anywhere in this network, even where shapes match.
    """
    hidden = int(inp * expand_ratio)
    layers = []
    if expand_ratio != 1:
        layers += [nn.Conv2d(inp, hidden, 1, 1, 0, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(inplace=True)]
    layers += [
        nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
        nn.BatchNorm2d(hidden),
        nn.ReLU6(inplace=True),
        nn.Conv2d(hidden, oup, 1, 1, 0, bias=False),
        nn.BatchNorm2d(oup),
    ]
    return nn.Sequential(*layers)


# (expansion t, output channels c, repeats n, first stride s) per stage.
_STAGES = [
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
]


class Model(nn.Module):
    """MobileNetV2-style classifier built from inverted-bottleneck blocks, with explicit weight init."""

    def __init__(self, num_classes=1000):
        super().__init__()
        channels = 32
        last_channel = 1280
        layers = [nn.Conv2d(3, channels, 3, 2, 1, bias=False), nn.BatchNorm2d(channels), nn.ReLU6(inplace=True)]
        for t, c, n, s in _STAGES:
            out = _make_divisible(c, 8)
            for i in range(n):
                layers.append(_inverted_residual(channels, out, s if i == 0 else 1, expand_ratio=t))
                channels = out
        layers += [
            nn.Conv2d(channels, last_channel, 1, 1, 0, bias=False),
            nn.BatchNorm2d(last_channel),
            nn.ReLU6(inplace=True),
            nn.AdaptiveAvgPool2d((1, 1)),
        ]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Dropout(0.0), nn.Linear(last_channel, num_classes))

        # Re-initialise after construction, visiting modules in registration order.
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        return self.classifier(x.view(x.size(0), -1))


batch_size = 10
num_classes = 1000


def get_inputs():
    x = torch.rand(batch_size, 3, 224, 224)
    return [x]


def get_init_inputs():
    return [num_classes]
