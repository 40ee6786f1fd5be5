import torch
import torch.nn as nn
import torch.nn.functional as F


class ChannelShuffle(nn.Module):
    """Interleave channels across groups: (g, c/g) -> (c/g, g)."""

    def __init__(self, groups):
        super().__init__()
        self.groups = groups

    def forward(self, x):
        n, c, h, w = x.size()
        x = x.view(n, self.groups, c // self.groups, h, w).transpose(1, 2).contiguous()
        return x.view(n, -1, h, w)


class Model(nn.Module):
    """ShuffleNet unit: grouped 1x1 (BN, ReLU), depthwise 3x3 (BN), shuffle, grouped 1x1 (BN, ReLU), plus shortcut."""

    def __init__(self, in_channels, out_channels, groups=3):
        super().__init__()
        assert out_channels % 4 == 0
        mid = out_channels // 4
        self.conv1 = nn.Conv2d(in_channels, mid, kernel_size=1, stride=1, padding=0, groups=groups, bias=False)
        self.bn1 = nn.BatchNorm2d(mid)
        self.conv2 = nn.Conv2d(mid, mid, kernel_size=3, stride=1, padding=1, groups=mid, bias=False)
        self.bn2 = nn.BatchNorm2d(mid)
        self.conv3 = nn.Conv2d(mid, out_channels, kernel_size=1, stride=1, padding=0, groups=groups, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels)
        self.shuffle = ChannelShuffle(groups)
        if in_channels == out_channels:
            self.shortcut = nn.Sequential()
        else:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=1, padding=0, bias=False),
                nn.BatchNorm2d(out_channels),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.shuffle(self.bn2(self.conv2(out)))
        out = F.relu(self.bn3(self.conv3(out)))
        out += self.shortcut(x)
        return out


batch_size = 10
input_channels = 240
out_channels = 480
groups = 3
height = 224
width = 224
num_classes = 1000


def get_inputs():
    x = torch.rand(batch_size, input_channels, height, width)
    return [x]


def get_init_inputs():
    return [input_channels, out_channels, groups]
