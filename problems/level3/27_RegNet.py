import torch
import torch.nn as nn


class Model(nn.Module):
    """Simple RegNet-like network: per stage two conv3x3+BN+ReLU and a 2x2 max-pool; spatial mean; linear head."""

    def __init__(self, input_channels, stages, block_widths, output_classes):
        super().__init__()
        self.stages = stages
        self.block_widths = block_widths
        blocks = []
        channels = input_channels
        for i in range(stages):
            blocks.append(self._make_stage(channels, block_widths[i]))
            channels = block_widths[i]
        self.feature_extractor = nn.Sequential(*blocks)
        self.fc = nn.Linear(block_widths[-1], output_classes)

    @staticmethod
    def _make_stage(in_channels, out_channels):
        return nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.feature_extractor(x)
        x = torch.mean(x, dim=[2, 3])
        return self.fc(x)


batch_size = 8
input_channels = 3
image_height = 224
image_width = 224
stages = 3
block_widths = [64, 128, 256]
output_classes = 10


def get_inputs():
    x = torch.rand(batch_size, input_channels, image_height, image_width)
    return [x]


def get_init_inputs():
    return [input_channels, stages, block_widths, output_classes]
