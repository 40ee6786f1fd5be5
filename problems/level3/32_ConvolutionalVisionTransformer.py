import torch
import torch.nn as nn


class Model(nn.Module):
    """Convolutional ViT: patch conv, whole map flattened to one embedding, cls token, encoder layers, head."""

    def __init__(self, num_classes, embed_dim=512, num_heads=8, num_layers=6, mlp_ratio=4.0, patch_size=4,
                 in_channels=3, image_size=32):
        super().__init__()
        self.patch_size = patch_size
        self.image_size = image_size
        self.embed_dim = embed_dim
        self.conv1 = nn.Conv2d(in_channels, embed_dim, kernel_size=patch_size, stride=patch_size)
        num_patches = (image_size // patch_size) ** 2
        self.linear_proj = nn.Linear(embed_dim * num_patches, embed_dim)
        self.transformer_layers = nn.ModuleList(
            nn.TransformerEncoderLayer(d_model=embed_dim, nhead=num_heads, dim_feedforward=int(embed_dim * mlp_ratio),
                                       dropout=0.0, batch_first=True)
            for _ in range(num_layers)
        )
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.fc_out = nn.Linear(embed_dim, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.size(0)
        x = self.linear_proj(self.conv1(x).flatten(start_dim=1))  # (n, embed_dim)
        x = torch.cat((self.cls_token.expand(n, -1, -1), x.unsqueeze(1)), dim=1)  # two tokens per sample
        for layer in self.transformer_layers:
            x = layer(x)
        return self.fc_out(x[:, 0])


batch_size = 10
image_size = 32
embed_dim = 128
in_channels = 3
num_heads = 4
num_classes = 1000


def get_inputs():
    x = torch.rand(batch_size, in_channels, image_size, image_size)
    return [x]


def get_init_inputs():
    return [num_classes, embed_dim, num_heads]
