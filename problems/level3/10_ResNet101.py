import torch
import torch.nn as nn


class Bottleneck(nn.Module):
    """1x1 reduce, 3x3, 1x1 expand (x4), each with BN, plus an identity or projection shortcut."""

    expansion = 4

    def __init__(self, in_channels, out_channels, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, kernel_size=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.conv3 = nn.Conv2d(out_channels, out_channels * self.expansion, kernel_size=1, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        out += shortcut
        return self.relu(out)


class Model(nn.Module):
    """ResNet with bottleneck blocks (ResNet-101 for layers=[3, 4, 23, 3])."""

    def __init__(self, layers, num_classes=1000):
        super().__init__()
        self.in_channels = 64
        self.conv1 = nn.Conv2d(3, self.in_channels, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.in_channels)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

        self.layer1 = self._make_layer(Bottleneck, 64, layers[0])
        self.layer2 = self._make_layer(Bottleneck, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(Bottleneck, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(Bottleneck, 512, layers[3], stride=2)

        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * Bottleneck.expansion, num_classes)

    def _make_layer(self, block, out_channels, blocks, stride=1):
        width = out_channels * block.expansion
        projection = None
        if stride != 1 or self.in_channels != width:
            # Built before the blocks, so its weights are drawn first.
            projection = nn.Sequential(
                nn.Conv2d(self.in_channels, width, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(width),
            )
        stage = [block(self.in_channels, out_channels, stride, projection)]
        self.in_channels = width
        stage += [block(self.in_channels, out_channels) for _ in range(1, blocks)]
        return nn.Sequential(*stage)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for stage in (self.layer1, self.layer2, self.layer3, self.layer4):
            x = stage(x)
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


batch_size = 10
height = 224
width = 224
layers = [3, 4, 23, 3]
num_classes = 1000


def get_inputs():
    x = torch.rand(batch_size, 3, height, width)
    return [x]


def get_init_inputs():
    return [layers, num_classes]
