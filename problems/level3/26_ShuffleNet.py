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


class ShuffleNetUnit(nn.Module):
    """Grouped 1x1 (BN, ReLU), depthwise 3x3 (BN), shuffle, grouped 1x1 (BN, ReLU), plus shortcut."""

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

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.shuffle(self.bn2(self.conv2(out)))
        out = F.relu(self.bn3(self.conv3(out)))
        out += self.shortcut(x)
        return out


class Model(nn.Module):
    """ShuffleNet classifier: conv stem + max-pool, three stages of shuffle units, 1x1 conv to 1024, pool, linear."""

    def __init__(self, num_classes=1000, groups=3, stages_repeats=(3, 7, 3), stages_out_channels=(24, 240, 480, 960)):
        super().__init__()
        stem = stages_out_channels[0]
        self.conv1 = nn.Conv2d(3, stem, kernel_size=3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(stem)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.stage2 = self._make_stage(stages_out_channels[0], stages_out_channels[1], stages_repeats[0], groups)
        self.stage3 = self._make_stage(stages_out_channels[1], stages_out_channels[2], stages_repeats[1], groups)
        self.stage4 = self._make_stage(stages_out_channels[2], stages_out_channels[3], stages_repeats[2], groups)
        self.conv5 = nn.Conv2d(stages_out_channels[3], 1024, kernel_size=1, stride=1, padding=0, bias=False)
        self.bn5 = nn.BatchNorm2d(1024)
        self.fc = nn.Linear(1024, num_classes)

    @staticmethod
    def _make_stage(in_channels, out_channels, repeats, groups):
        units = [ShuffleNetUnit(in_channels, out_channels, groups)]
        units += [ShuffleNetUnit(out_channels, out_channels, groups) for _ in range(1, repeats)]
        return nn.Sequential(*units)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.stage4(self.stage3(self.stage2(x)))
        x = F.relu(self.bn5(self.conv5(x)))
        x = F.adaptive_avg_pool2d(x, (1, 1))
        return self.fc(x.view(x.size(0), -1))


batch_size = 10
input_channels = 3
height = 224
width = 224
num_classes = 1000


def get_inputs():
    x = torch.rand(batch_size, input_channels, height, width)
    return [x]


def get_init_inputs():
    return [num_classes]
