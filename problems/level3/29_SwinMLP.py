import torch
import torch.nn as nn
import torch.nn.functional as F


def to_2tuple(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def window_partition(x, ws):
    """(B, H, W, C) -> (B * H/ws * W/ws, ws, ws, C)."""
    b, h, w, c = x.shape
    x = x.view(b, h // ws, ws, w // ws, ws, c)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws, ws, c)


def window_reverse(windows, ws, h, w):
    """Inverse of window_partition: (B * nW, ws, ws, C) -> (B, H, W, C)."""
    b = int(windows.shape[0] / (h * w / ws / ws))
    x = windows.view(b, h // ws, w // ws, ws, ws, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(b, h, w, -1)


class Mlp(nn.Module):
    """Linear -> GELU -> Linear, with (p=0) dropout after each."""

    def __init__(self, in_features, hidden_features=None, out_features=None, act_layer=nn.GELU, drop=0.0):
        super().__init__()
        out_features = out_features or in_features
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        x = self.drop(self.act(self.fc1(x)))
        return self.drop(self.fc2(x))


class SwinMLPBlock(nn.Module):
    """Swin block whose token mixer is a per-head MLP across window positions (grouped Conv1d).

    Shifted blocks zero-pad the map (instead of rolling it) so that windows straddle the old borders.
    """

    def __init__(self, dim, input_resolution, num_heads, window_size=7, shift_size=0, mlp_ratio=4.0,
                 drop=0.0, act_layer=nn.GELU, norm_layer=nn.LayerNorm):
        super().__init__()
        self.dim = dim
        self.input_resolution = input_resolution
        self.num_heads = num_heads
        self.window_size = window_size
        self.shift_size = shift_size
        self.mlp_ratio = mlp_ratio
        if min(input_resolution) <= window_size:
            # One window covers the whole map: no shifting.
            self.shift_size = 0
            self.window_size = min(input_resolution)
        assert 0 <= self.shift_size < self.window_size, "shift_size must lie in [0, window_size)"
        ws, ss = self.window_size, self.shift_size
        self.padding = [ws - ss, ss, ws - ss, ss]  # left, right, top, bottom

        self.norm1 = norm_layer(dim)
        tokens = num_heads * ws * ws
        self.spatial_mlp = nn.Conv1d(tokens, tokens, kernel_size=1, groups=num_heads)
        self.drop_path = nn.Identity()
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(in_features=dim, hidden_features=int(dim * mlp_ratio), act_layer=act_layer, drop=drop)

    def forward(self, x):
        h, w = self.input_resolution
        b, length, c = x.shape
        assert length == h * w, "token count does not match the input resolution"
        ws, nh = self.window_size, self.num_heads

        shortcut = x
        x = self.norm1(x).view(b, h, w, c)
        if self.shift_size > 0:
            p_l, p_r, p_t, p_b = self.padding
            x = F.pad(x, [0, 0, p_l, p_r, p_t, p_b], "constant", 0)
        _, hp, wp, _ = x.shape

        # Per window, mix the ws*ws positions separately for each head's channel slice.
        win = window_partition(x, ws).view(-1, ws * ws, c)
        win = win.view(-1, ws * ws, nh, c // nh).transpose(1, 2).reshape(-1, nh * ws * ws, c // nh)
        win = self.spatial_mlp(win)
        win = win.view(-1, nh, ws * ws, c // nh).transpose(1, 2).reshape(-1, ws * ws, c)
        x = window_reverse(win.reshape(-1, ws, ws, c), ws, hp, wp)

        if self.shift_size > 0:
            p_l, p_r, p_t, p_b = self.padding
            x = x[:, p_t:-p_b, p_l:-p_r, :].contiguous()
        x = shortcut + self.drop_path(x.view(b, h * w, c))
        return x + self.drop_path(self.mlp(self.norm2(x)))


class PatchMerging(nn.Module):
    """Concatenate each 2x2 neighbourhood (4C), LayerNorm, then project to 2C."""

    def __init__(self, input_resolution, dim, norm_layer=nn.LayerNorm):
        super().__init__()
        self.input_resolution = input_resolution
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(4 * dim)

    def forward(self, x):
        h, w = self.input_resolution
        b, length, c = x.shape
        assert length == h * w, "token count does not match the input resolution"
        assert h % 2 == 0 and w % 2 == 0, f"resolution ({h}*{w}) must be even"
        x = x.view(b, h, w, c)
        x = torch.cat([x[:, 0::2, 0::2, :], x[:, 1::2, 0::2, :], x[:, 0::2, 1::2, :], x[:, 1::2, 1::2, :]], -1)
        x = x.view(b, -1, 4 * c)
        return self.reduction(self.norm(x))


class BasicLayer(nn.Module):
    """One stage: alternating unshifted/shifted blocks, then optional patch merging."""

    def __init__(self, dim, input_resolution, depth, num_heads, window_size, mlp_ratio=4.0, drop=0.0,
                 norm_layer=nn.LayerNorm, downsample=None):
        super().__init__()
        self.dim = dim
        self.input_resolution = input_resolution
        self.depth = depth
        self.blocks = nn.ModuleList(
            SwinMLPBlock(dim=dim, input_resolution=input_resolution, num_heads=num_heads,
                         window_size=window_size, shift_size=0 if i % 2 == 0 else window_size // 2,
                         mlp_ratio=mlp_ratio, drop=drop, norm_layer=norm_layer)
            for i in range(depth)
        )
        self.downsample = None if downsample is None else downsample(input_resolution, dim=dim, norm_layer=norm_layer)

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x if self.downsample is None else self.downsample(x)


class PatchEmbed(nn.Module):
    """Non-overlapping patch projection with a strided conv, optionally followed by a norm."""

    def __init__(self, img_size=224, patch_size=4, in_chans=3, embed_dim=96, norm_layer=None):
        super().__init__()
        img_size = to_2tuple(img_size)
        patch_size = to_2tuple(patch_size)
        self.img_size = img_size
        self.patch_size = patch_size
        self.patches_resolution = [img_size[0] // patch_size[0], img_size[1] // patch_size[1]]
        self.num_patches = self.patches_resolution[0] * self.patches_resolution[1]
        self.in_chans = in_chans
        self.embed_dim = embed_dim
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.norm = norm_layer(embed_dim) if norm_layer is not None else None

    def forward(self, x):
        _, _, h, w = x.shape
        assert (h, w) == self.img_size, f"input is {h}*{w}, model expects {self.img_size[0]}*{self.img_size[1]}"
        x = self.proj(x).flatten(2).transpose(1, 2)
        return x if self.norm is None else self.norm(x)


class Model(nn.Module):
    """Swin-MLP image classifier (Swin-T layout, spatial MLP token mixing) for 224x224 inputs."""

    def __init__(self, img_size=224, patch_size=4, in_chans=3, num_classes=1000, embed_dim=96,
                 depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24), window_size=7, mlp_ratio=4.0,
                 drop_rate=0.0, drop_path_rate=0.1, norm_layer=nn.LayerNorm, patch_norm=True,
                 use_checkpoint=False, **kwargs):
        # drop_path_rate and use_checkpoint are accepted for signature compatibility; stochastic
        # depth is an identity here and checkpointing is never used.
        super().__init__()
        self.num_classes = num_classes
        self.num_layers = len(depths)
        self.embed_dim = embed_dim
        self.patch_norm = patch_norm
        self.num_features = int(embed_dim * 2 ** (self.num_layers - 1))
        self.mlp_ratio = mlp_ratio

        self.patch_embed = PatchEmbed(img_size=img_size, patch_size=patch_size, in_chans=in_chans,
                                      embed_dim=embed_dim, norm_layer=norm_layer if patch_norm else None)
        res = self.patch_embed.patches_resolution
        self.patches_resolution = res
        self.pos_drop = nn.Dropout(p=drop_rate)

        self.layers = nn.ModuleList()
        for i in range(self.num_layers):
            self.layers.append(BasicLayer(
                dim=int(embed_dim * 2 ** i),
                input_resolution=(res[0] // 2 ** i, res[1] // 2 ** i),
                depth=depths[i],
                num_heads=num_heads[i],
                window_size=window_size,
                mlp_ratio=mlp_ratio,
                drop=drop_rate,
                norm_layer=norm_layer,
                downsample=PatchMerging if i < self.num_layers - 1 else None,
            ))

        self.norm = norm_layer(self.num_features)
        self.avgpool = nn.AdaptiveAvgPool1d(1)
        self.head = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()

    def forward_features(self, x):
        x = self.pos_drop(self.patch_embed(x))
        for layer in self.layers:
            x = layer(x)
        x = self.norm(x)
        return torch.flatten(self.avgpool(x.transpose(1, 2)), 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.forward_features(x))


batch_size = 10
image_size = 224


def get_inputs():
    x = torch.rand(batch_size, 3, image_size, image_size)
    return [x]


def get_init_inputs():
    return []
