import torch
import torch.nn as nn


class Model(nn.Module):
    """Self-attention over the pixels of a feature map: MultiheadAttention, residual add, LayerNorm."""

    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed_dim, num_heads)
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, c, h, w = x.shape
        tokens = x.view(b, c, h * w).permute(2, 0, 1)  # (H*W, B, C), sequence first
        attended, _ = self.attn(tokens, tokens, tokens)
        out = self.norm(attended + tokens)
        return out.permute(1, 2, 0).view(b, c, h, w)


embed_dim = 128
num_heads = 4
batch_size = 2
num_channels = 128
image_height = 128
image_width = 128


def get_inputs():
    x = torch.rand(batch_size, num_channels, image_height, image_width)
    return [x]


def get_init_inputs():
    return [embed_dim, num_heads]
