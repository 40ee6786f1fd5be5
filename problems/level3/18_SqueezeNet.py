import torch
import torch.nn as nn


class FireModule(nn.Module):
    """1x1 squeeze+ReLU feeding parallel 1x1 and 3x3 expand+ReLU branches, concatenated on channels."""

    def __init__(self, in_channels, squeeze_channels, expand1x1_channels, expand3x3_channels):
        super().__init__()
        self.squeeze = nn.Conv2d(in_channels, squeeze_channels, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_channels, expand1x1_channels, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_channels, expand3x3_channels, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x):
        s = self.squeeze_activation(self.squeeze(x))
        wide = self.expand1x1_activation(self.expand1x1(s))
        spatial = self.expand3x3_activation(self.expand3x3(s))
        return torch.cat([wide, spatial], 1)


class Model(nn.Module):
    """SqueezeNet v1.0: 7x7 stem, eight fire modules between ceil-mode max-pools, conv classifier, global pool."""

    def __init__(self, num_classes=1000):
        super().__init__()

        def pool():
            return nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True)

        self.features = nn.Sequential(
            nn.Conv2d(3, 96, kernel_size=7, stride=2),
            nn.ReLU(inplace=True),
            pool(),
            FireModule(96, 16, 64, 64),
            FireModule(128, 16, 64, 64),
            FireModule(128, 32, 128, 128),
            pool(),
            FireModule(256, 32, 128, 128),
            FireModule(256, 48, 192, 192),
            FireModule(384, 48, 192, 192),
            FireModule(384, 64, 256, 256),
            pool(),
            FireModule(512, 64, 256, 256),
        )
        self.classifier = nn.Sequential(
            nn.Dropout(p=0.0),
            nn.Conv2d(512, num_classes, kernel_size=1),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((1, 1)),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.classifier(self.features(x))
        return torch.flatten(x, 1)


batch_size = 64
input_channels = 3
height = 512
width = 512
num_classes = 1000


def get_inputs():
    x = torch.rand(batch_size, input_channels, height, width)
    return [x]


def get_init_inputs():
    return [num_classes]
