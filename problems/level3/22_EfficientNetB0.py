import torch
import torch.nn as nn
import torch.nn.functional as F


class MBConv(nn.Module):
    """1x1 expand (skipped when ratio is 1), depthwise kxk, 1x1 project; BN + ReLU6; residual when shapes allow."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, expand_ratio):
        super().__init__()
        self.use_residual = stride == 1 and in_channels == out_channels
        hidden = in_channels * expand_ratio
        if expand_ratio != 1:
            self.expand_conv = nn.Sequential(
                nn.Conv2d(in_channels, hidden, kernel_size=1, stride=1, padding=0, bias=False),
                nn.BatchNorm2d(hidden),
                nn.ReLU6(inplace=True),
            )
        self.depthwise_conv = nn.Sequential(
            nn.Conv2d(hidden, hidden, kernel_size=kernel_size, stride=stride,
                      padding=(kernel_size - 1) // 2, groups=hidden, bias=False),
            nn.BatchNorm2d(hidden),
            nn.ReLU6(inplace=True),
        )
        self.project_conv = nn.Sequential(
            nn.Conv2d(hidden, out_channels, kernel_size=1, stride=1, padding=0, bias=False),
            nn.BatchNorm2d(out_channels),
        )

    def forward(self, x):
        out = self.expand_conv(x) if hasattr(self, "expand_conv") else x
        out = self.project_conv(self.depthwise_conv(out))
        if self.use_residual:
            out += x
        return out


# (in, out, kernel, stride, expand ratio) for each MBConv block.
_BLOCKS = [
    (32, 16, 3, 1, 1),
    (16, 24, 3, 2, 6),
    (24, 24, 3, 1, 6),
    (24, 40, 5, 2, 6),
    (40, 40, 5, 1, 6),
    (40, 80, 3, 2, 6),
    (80, 80, 3, 1, 6),
    (80, 112, 5, 1, 6),
    (112, 112, 5, 1, 6),
    (112, 192, 5, 2, 6),
    (192, 192, 5, 1, 6),
    (192, 192, 5, 1, 6),
    (192, 320, 3, 1, 6),
]


class Model(nn.Module):
    """EfficientNet-B0-style classifier: conv stem, 13 MBConv blocks, 1x1 conv to 1280, global pool, linear."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, kernel_size=3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(32)
        self.blocks = nn.Sequential(*(MBConv(i, o, kernel_size=k, stride=s, expand_ratio=e) for i, o, k, s, e in _BLOCKS))
        self.conv2 = nn.Conv2d(320, 1280, kernel_size=1, stride=1, padding=0, bias=False)
        self.bn2 = nn.BatchNorm2d(1280)
        self.fc = nn.Linear(1280, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.blocks(x)
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.adaptive_avg_pool2d(x, (1, 1))
        return self.fc(x.view(x.size(0), -1))


batch_size = 10
num_classes = 1000


def get_inputs():
    x = torch.rand(batch_size, 3, 224, 224)
    return [x]


def get_init_inputs():
    return [num_classes]
