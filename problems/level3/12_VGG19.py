import torch
import torch.nn as nn

# Output widths of the 3x3 convolutions, one list per block; each block ends in a 2x2 max-pool.
_BLOCKS = [[64, 64], [128, 128], [256, 256, 256, 256], [512, 512, 512, 512], [512, 512, 512, 512]]


def _conv_stack(blocks):
    layers = []
    channels = 3
    for widths in blocks:
        for width in widths:
            layers += [nn.Conv2d(channels, width, kernel_size=3, padding=1), nn.ReLU(inplace=True)]
            channels = width
        layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
    return nn.Sequential(*layers)


class Model(nn.Module):
    """VGG-19 for 3x224x224 images: 16 conv3x3+ReLU layers in five pooled blocks, then a three-layer classifier."""

    def __init__(self, num_classes=1000):
        super().__init__()
        self.features = _conv_stack(_BLOCKS)
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=0.0),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=0.0),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.flatten(self.features(x), 1)
        return self.classifier(x)


batch_size = 10
num_classes = 1000


def get_inputs():
    x = torch.rand(batch_size, 3, 224, 224)
    return [x]


def get_init_inputs():
    return [num_classes]
