import torch
import torch.nn as nn


class DoubleConv(nn.Module):
    """Two rounds of conv3x3 -> BatchNorm -> Softmax over the last (width) axis."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1),
            nn.BatchNorm2d(out_channels),
            nn.Softmax(dim=-1),
            nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1),
            nn.BatchNorm2d(out_channels),
            nn.Softmax(dim=-1),
        )

    def forward(self, x):
        return self.double_conv(x)


class Model(nn.Module):
    """Four-level U-Net (widths f, 2f, 4f, 8f, bottleneck 16f) with transposed-conv upsampling and skip concats."""

    def __init__(self, in_channels, out_channels, features):
        super().__init__()
        f = features
        # Registration order (encoders, bottleneck, then up/decoder pairs) fixes the default init.
        self.encoder1 = DoubleConv(in_channels, f)
        self.pool1 = nn.MaxPool2d(kernel_size=2, stride=2)
        self.encoder2 = DoubleConv(f, f * 2)
        self.pool2 = nn.MaxPool2d(kernel_size=2, stride=2)
        self.encoder3 = DoubleConv(f * 2, f * 4)
        self.pool3 = nn.MaxPool2d(kernel_size=2, stride=2)
        self.encoder4 = DoubleConv(f * 4, f * 8)
        self.pool4 = nn.MaxPool2d(kernel_size=2, stride=2)

        self.bottleneck = DoubleConv(f * 8, f * 16)

        self.upconv4 = nn.ConvTranspose2d(f * 16, f * 8, kernel_size=2, stride=2)
        self.decoder4 = DoubleConv(f * 16, f * 8)
        self.upconv3 = nn.ConvTranspose2d(f * 8, f * 4, kernel_size=2, stride=2)
        self.decoder3 = DoubleConv(f * 8, f * 4)
        self.upconv2 = nn.ConvTranspose2d(f * 4, f * 2, kernel_size=2, stride=2)
        self.decoder2 = DoubleConv(f * 4, f * 2)
        self.upconv1 = nn.ConvTranspose2d(f * 2, f, kernel_size=2, stride=2)
        self.decoder1 = DoubleConv(f * 2, f)

        self.final_conv = nn.Conv2d(f, out_channels, kernel_size=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        enc1 = self.encoder1(x)
        enc2 = self.encoder2(self.pool1(enc1))
        enc3 = self.encoder3(self.pool2(enc2))
        enc4 = self.encoder4(self.pool3(enc3))
        y = self.bottleneck(self.pool4(enc4))
        for up, dec, skip in ((self.upconv4, self.decoder4, enc4), (self.upconv3, self.decoder3, enc3),
                              (self.upconv2, self.decoder2, enc2), (self.upconv1, self.decoder1, enc1)):
            y = dec(torch.cat((up(y), skip), dim=1))
        return self.final_conv(y)


batch_size = 8
in_channels = 8
out_channels = 4
height = 64
width = 512
features = 64


def get_inputs():
    x = torch.rand(batch_size, in_channels, height, width)
    return [x]


def get_init_inputs():
    return [in_channels, out_channels, features]
