import torch
import torch.nn as nn


def _mbconv(in_channels, out_channels, stride, expand_ratio):
    """Expand/depthwise block whose squeeze-excite chain is applied in sequence (not as a gate).

    After the AdaptiveAvgPool2d the activations are 1x1 spatially, so the 1x1 convs, the Sigmoid
    and the projection all run on pooled vectors.
    """
    expanded = in_channels * expand_ratio
    layers = []
    if expand_ratio != 1:
        layers += [
            nn.Conv2d(in_channels, expanded, kernel_size=1, stride=1, padding=0, bias=False),
            nn.BatchNorm2d(expanded),
            nn.ReLU(inplace=True),
        ]
    layers += [
        nn.Conv2d(expanded, expanded, kernel_size=3, stride=stride, padding=1, groups=expanded, bias=False),
        nn.BatchNorm2d(expanded),
        nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d((1, 1)),
        nn.Conv2d(expanded, expanded // 4, kernel_size=1, stride=1, padding=0, bias=False),
        nn.ReLU(inplace=True),
        nn.Conv2d(expanded // 4, expanded, kernel_size=1, stride=1, padding=0, bias=False),
        nn.Sigmoid(),
        nn.Conv2d(expanded, out_channels, kernel_size=1, stride=1, padding=0, bias=False),
        nn.BatchNorm2d(out_channels),
    ]
    return nn.Sequential(*layers)


class Model(nn.Module):
    """EfficientNet-B2-like classifier: conv stem, five MBConv-like blocks, 1x1 conv to 1408, pool, linear."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, kernel_size=3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.relu = nn.ReLU(inplace=True)
        self.mbconv1 = _mbconv(32, 96, 1, 3)
        self.mbconv2 = _mbconv(96, 144, 2, 6)
        self.mbconv3 = _mbconv(144, 192, 2, 6)
        self.mbconv4 = _mbconv(192, 288, 2, 6)
        self.mbconv5 = _mbconv(288, 384, 1, 6)
        self.conv_final = nn.Conv2d(384, 1408, kernel_size=1, stride=1, padding=0, bias=False)
        self.bn_final = nn.BatchNorm2d(1408)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(1408, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.relu(self.bn1(self.conv1(x)))
        for stage in (self.mbconv1, self.mbconv2, self.mbconv3, self.mbconv4, self.mbconv5):
            x = stage(x)
        x = self.relu(self.bn_final(self.conv_final(x)))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


batch_size = 2
num_classes = 1000


def get_inputs():
    x = torch.rand(batch_size, 3, 224, 224)
    return [x]


def get_init_inputs():
    return [num_classes]
