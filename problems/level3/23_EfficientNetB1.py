import torch
import torch.nn as nn
import torch.nn.functional as F


def _mbconv(in_channels, out_channels, stride, expand_ratio):
    """1x1 expand + BN + ReLU6, depthwise 3x3 + BN + ReLU6, 1x1 project + BN (no residual)."""
    hidden = round(in_channels * expand_ratio)
    return nn.Sequential(
        nn.Conv2d(in_channels, hidden, kernel_size=1, stride=1, padding=0, bias=False),
        nn.BatchNorm2d(hidden),
        nn.ReLU6(inplace=True),
        nn.Conv2d(hidden, hidden, kernel_size=3, stride=stride, padding=1, groups=hidden, bias=False),
        nn.BatchNorm2d(hidden),
        nn.ReLU6(inplace=True),
        nn.Conv2d(hidden, out_channels, kernel_size=1, stride=1, padding=0, bias=False),
        nn.BatchNorm2d(out_channels),
    )


class Model(nn.Module):
    """EfficientNet-B1-style classifier: conv stem, seven MBConv stages, 1x1 conv to 1280, global pool, linear."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, kernel_size=3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.mbconv1 = _mbconv(32, 16, 1, 1)
        self.mbconv2 = _mbconv(16, 24, 2, 6)
        self.mbconv3 = _mbconv(24, 40, 2, 6)
        self.mbconv4 = _mbconv(40, 80, 2, 6)
        self.mbconv5 = _mbconv(80, 112, 1, 6)
        self.mbconv6 = _mbconv(112, 192, 2, 6)
        self.mbconv7 = _mbconv(192, 320, 1, 6)
        self.conv2 = nn.Conv2d(320, 1280, kernel_size=1, stride=1, padding=0, bias=False)
        self.bn2 = nn.BatchNorm2d(1280)
        self.fc = nn.Linear(1280, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        for stage in (self.mbconv1, self.mbconv2, self.mbconv3, self.mbconv4,
                      self.mbconv5, self.mbconv6, self.mbconv7):
            x = stage(x)
        x = F.relu(self.bn2(self.conv2(x)))
        x = torch.flatten(F.adaptive_avg_pool2d(x, (1, 1)), 1)
        return self.fc(x)


batch_size = 10
input_shape = [3, 240, 240]
num_classes = 1000


def get_inputs():
    x = torch.rand(batch_size, *input_shape)
    return [x]


def get_init_inputs():
    return [num_classes]
