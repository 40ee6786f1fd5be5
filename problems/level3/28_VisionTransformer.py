import torch
import torch.nn as nn


class Model(nn.Module):
    """Vision Transformer: flattened patches -> linear embedding, cls token + positions, encoder stack, MLP head.

    The encoder layers use the default sequence-first layout, so the (batch, tokens, dim) tensor fed to
    them is read as (sequence=batch, batch=tokens, dim); the computation is defined that way.
    """

    def __init__(self, image_size, patch_size, num_classes, dim, depth, heads, mlp_dim, channels=3,
                 dropout=0.1, emb_dropout=0.1):
        super().__init__()
        assert image_size % patch_size == 0, "image size must be a multiple of the patch size"
        num_patches = (image_size // patch_size) ** 2
        patch_dim = channels * patch_size ** 2

        self.patch_size = patch_size
        self.pos_embedding = nn.Parameter(torch.randn(1, num_patches + 1, dim))
        self.patch_to_embedding = nn.Linear(patch_dim, dim)
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
        self.dropout = nn.Dropout(emb_dropout)
        self.transformer = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(d_model=dim, nhead=heads, dim_feedforward=mlp_dim, dropout=dropout),
            num_layers=depth,
        )
        self.to_cls_token = nn.Identity()
        self.mlp_head = nn.Sequential(
            nn.Linear(dim, mlp_dim),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(mlp_dim, num_classes),
        )

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        p = self.patch_size
        n, c = img.shape[0], img.shape[1]
        # (n, c, H/p, W/p, p, p) reshaped as-is into n rows of p*p*c values.
        patches = img.unfold(2, p, p).unfold(3, p, p).reshape(n, -1, p * p * c)
        x = self.patch_to_embedding(patches)
        x = torch.cat((self.cls_token.expand(n, -1, -1), x), dim=1)
        x += self.pos_embedding
        x = self.transformer(self.dropout(x))
        return self.mlp_head(self.to_cls_token(x[:, 0]))


image_size = 224
patch_size = 16
num_classes = 10
dim = 512
depth = 6
heads = 8
mlp_dim = 2048
channels = 3
dropout = 0.0
emb_dropout = 0.0


def get_inputs():
    img = torch.rand(2, channels, image_size, image_size)
    return [img]


def get_init_inputs():
    return [image_size, patch_size, num_classes, dim, depth, heads, mlp_dim, channels, dropout, emb_dropout]
