import torch
import torch.nn as nn


class Model(nn.Module):
    """EfficientNet MBConv block: 1x1 expand, depthwise kxk, 1x1 project (BN + ReLU6), residual when shapes allow."""

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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.expand_conv(x) if hasattr(self, "expand_conv") else x
        out = self.project_conv(self.depthwise_conv(out))
        if self.use_residual:
            out += x
        return out


batch_size = 10
in_channels = 112
out_channels = 192
kernel_size = 5
stride = 2
expand_ratio = 6


def get_inputs():
    x = torch.rand(batch_size, in_channels, 224, 224)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size, stride, expand_ratio]
