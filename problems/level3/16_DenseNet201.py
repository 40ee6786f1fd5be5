import torch
import torch.nn as nn
import torch.nn.functional as F

# Number of dense layers in each of the four blocks.
_BLOCK_LAYERS = [6, 12, 48, 32]


class DenseBlock(nn.Module):
    """Stack of BN-ReLU-conv3x3 layers; each layer's input is the concatenation of all earlier maps."""

    def __init__(self, num_layers: int, num_input_features: int, growth_rate: int):
        super().__init__()
        self.layers = nn.ModuleList(
            self._make_layer(num_input_features + i * growth_rate, growth_rate) for i in range(num_layers)
        )

    @staticmethod
    def _make_layer(in_features: int, growth_rate: int) -> nn.Sequential:
        return nn.Sequential(
            nn.BatchNorm2d(in_features),
            nn.ReLU(inplace=True),
            nn.Conv2d(in_features, growth_rate, kernel_size=3, padding=1, bias=False),
            nn.Dropout(0.0),
        )

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            features.append(layer(x))
            x = torch.cat(features, 1)
        return x


class TransitionLayer(nn.Module):
    """BN, ReLU, 1x1 conv to fewer maps, then 2x2 average pooling."""

    def __init__(self, num_input_features: int, num_output_features: int):
        super().__init__()
        self.transition = nn.Sequential(
            nn.BatchNorm2d(num_input_features),
            nn.ReLU(inplace=True),
            nn.Conv2d(num_input_features, num_output_features, kernel_size=1, bias=False),
            nn.AvgPool2d(kernel_size=2, stride=2),
        )

    def forward(self, x):
        return self.transition(x)


class Model(nn.Module):
    """DenseNet-201 classifier: conv stem, four dense blocks joined by halving transitions, BN-ReLU, pool, linear."""

    def __init__(self, growth_rate: int = 32, num_classes: int = 1000):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
        )
        self.dense_blocks = nn.ModuleList()
        self.transition_layers = nn.ModuleList()
        channels = 64
        last = len(_BLOCK_LAYERS) - 1
        # Blocks and transitions are created interleaved (block, transition, block, ...).
        for i, num_layers in enumerate(_BLOCK_LAYERS):
            self.dense_blocks.append(DenseBlock(num_layers, channels, growth_rate))
            channels += num_layers * growth_rate
            if i != last:
                self.transition_layers.append(TransitionLayer(channels, channels // 2))
                channels //= 2
        self.final_bn = nn.BatchNorm2d(channels)
        self.classifier = nn.Linear(channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        for i, block in enumerate(self.dense_blocks):
            x = block(x)
            if i < len(self.transition_layers):
                x = self.transition_layers[i](x)
        x = F.relu(self.final_bn(x), inplace=True)
        x = F.adaptive_avg_pool2d(x, (1, 1)).view(x.size(0), -1)
        return self.classifier(x)


batch_size = 10
num_classes = 10
height = 224
width = 224


def get_inputs():
    x = torch.rand(batch_size, 3, height, width)
    return [x]


def get_init_inputs():
    return [32, num_classes]
