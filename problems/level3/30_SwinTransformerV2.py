import math

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


class WindowAttention(nn.Module):
    """Windowed multi-head attention, Swin V2 style.

    Scores are cosine similarities times a learned, clamped per-head scale; the relative position
    bias comes from a small MLP over log-spaced relative coordinates, squashed to (0, 16).
    """

    def __init__(self, dim, window_size, num_heads, qkv_bias=True, attn_drop=0.0, proj_drop=0.0,
                 pretrained_window_size=(0, 0)):
        super().__init__()
        self.dim = dim
        self.window_size = window_size
        self.pretrained_window_size = pretrained_window_size
        self.num_heads = num_heads
        wh, ww = window_size

        self.logit_scale = nn.Parameter(torch.log(10 * torch.ones((num_heads, 1, 1))), requires_grad=True)
        self.cpb_mlp = nn.Sequential(
            nn.Linear(2, 512, bias=True),
            nn.ReLU(inplace=True),
            nn.Linear(512, num_heads, bias=False),
        )

        # Table of relative offsets (dy, dx), scaled to [-8, 8] and then log-spaced.
        dy = torch.arange(-(wh - 1), wh, dtype=torch.float32)
        dx = torch.arange(-(ww - 1), ww, dtype=torch.float32)
        table = torch.stack(torch.meshgrid([dy, dx], indexing="ij")).permute(1, 2, 0).contiguous().unsqueeze(0)
        if pretrained_window_size[0] > 0:
            table[:, :, :, 0] /= pretrained_window_size[0] - 1
            table[:, :, :, 1] /= pretrained_window_size[1] - 1
        else:
            table[:, :, :, 0] /= wh - 1
            table[:, :, :, 1] /= ww - 1
        table *= 8
        table = torch.sign(table) * torch.log2(torch.abs(table) + 1.0) / math.log2(8)
        self.register_buffer("relative_coords_table", table)

        # For every (query, key) pair in a window, the flat index of its offset in the table.
        coords = torch.stack(torch.meshgrid([torch.arange(wh), torch.arange(ww)], indexing="ij"))
        flat = torch.flatten(coords, 1)
        rel = (flat[:, :, None] - flat[:, None, :]).permute(1, 2, 0).contiguous()
        rel[:, :, 0] += wh - 1
        rel[:, :, 1] += ww - 1
        rel[:, :, 0] *= 2 * ww - 1
        self.register_buffer("relative_position_index", rel.sum(-1))

        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        if qkv_bias:
            self.q_bias = nn.Parameter(torch.zeros(dim))
            self.v_bias = nn.Parameter(torch.zeros(dim))
        else:
            self.q_bias = None
            self.v_bias = None
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x, mask=None):
        b_, n, c = x.shape
        bias = None
        if self.q_bias is not None:
            # Keys get no bias.
            bias = torch.cat((self.q_bias, torch.zeros_like(self.v_bias, requires_grad=False), self.v_bias))
        qkv = F.linear(input=x, weight=self.qkv.weight, bias=bias)
        qkv = qkv.reshape(b_, n, 3, self.num_heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]

        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        scale_cap = torch.log(torch.tensor(1.0 / 0.01, device=x.device))
        attn = attn * torch.clamp(self.logit_scale.to(x.device), max=scale_cap).exp()

        wh, ww = self.window_size
        table = self.cpb_mlp(self.relative_coords_table).view(-1, self.num_heads)
        pos_bias = table[self.relative_position_index.view(-1)].view(wh * ww, wh * ww, -1)
        pos_bias = 16 * torch.sigmoid(pos_bias.permute(2, 0, 1).contiguous())
        attn = attn + pos_bias.unsqueeze(0)

        if mask is not None:
            nw = mask.shape[0]
            attn = attn.view(b_ // nw, nw, self.num_heads, n, n) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.num_heads, n, n)
        attn = self.attn_drop(self.softmax(attn))

        x = (attn @ v).transpose(1, 2).reshape(b_, n, c)
        return self.proj_drop(self.proj(x))


class SwinTransformerBlock(nn.Module):
    """Swin V2 block: (shifted) window attention and MLP, each post-normalised inside its residual branch."""

    def __init__(self, dim, input_resolution, num_heads, window_size=7, shift_size=0, mlp_ratio=4.0,
                 qkv_bias=True, drop=0.0, attn_drop=0.0, act_layer=nn.GELU, norm_layer=nn.LayerNorm,
                 pretrained_window_size=0):
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

        self.norm1 = norm_layer(dim)
        self.attn = WindowAttention(dim, window_size=to_2tuple(self.window_size), num_heads=num_heads,
                                    qkv_bias=qkv_bias, attn_drop=attn_drop, proj_drop=drop,
                                    pretrained_window_size=to_2tuple(pretrained_window_size))
        self.drop_path = nn.Identity()
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(in_features=dim, hidden_features=int(dim * mlp_ratio), act_layer=act_layer, drop=drop)

        attn_mask = None
        if self.shift_size > 0:
            # Label the regions that the cyclic shift brings together; pairs from different regions get -100.
            h, w = input_resolution
            ws, ss = self.window_size, self.shift_size
            img_mask = torch.zeros((1, h, w, 1))
            spans = (slice(0, -ws), slice(-ws, -ss), slice(-ss, None))
            label = 0
            for hs in spans:
                for wsl in spans:
                    img_mask[:, hs, wsl, :] = label
                    label += 1
            win = window_partition(img_mask, ws).view(-1, ws * ws)
            attn_mask = win.unsqueeze(1) - win.unsqueeze(2)
            attn_mask = attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(attn_mask == 0, 0.0)
        self.register_buffer("attn_mask", attn_mask)

    def forward(self, x):
        h, w = self.input_resolution
        b, length, c = x.shape
        assert length == h * w, "token count does not match the input resolution"
        ws, ss = self.window_size, self.shift_size

        shortcut = x
        x = x.view(b, h, w, c)
        if ss > 0:
            x = torch.roll(x, shifts=(-ss, -ss), dims=(1, 2))
        win = window_partition(x, ws).view(-1, ws * ws, c)
        win = self.attn(win, mask=self.attn_mask)
        x = window_reverse(win.view(-1, ws, ws, c), ws, h, w)
        if ss > 0:
            x = torch.roll(x, shifts=(ss, ss), dims=(1, 2))
        x = shortcut + self.drop_path(self.norm1(x.view(b, h * w, c)))
        return x + self.drop_path(self.norm2(self.mlp(x)))


class PatchMerging(nn.Module):
    """Concatenate each 2x2 neighbourhood (4C), project to 2C, then LayerNorm."""

    def __init__(self, input_resolution, dim, norm_layer=nn.LayerNorm):
        super().__init__()
        self.input_resolution = input_resolution
        self.dim = dim
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = norm_layer(2 * dim)

    def forward(self, x):
        h, w = self.input_resolution
        b, length, c = x.shape
        assert length == h * w, "token count does not match the input resolution"
        assert h % 2 == 0 and w % 2 == 0, f"resolution ({h}*{w}) must be even"
        x = x.view(b, h, w, c)
        x = torch.cat([x[:, 0::2, 0::2, :], x[:, 1::2, 0::2, :], x[:, 0::2, 1::2, :], x[:, 1::2, 1::2, :]], -1)
        x = x.view(b, -1, 4 * c)
        return self.norm(self.reduction(x))


class BasicLayer(nn.Module):
    """One stage: alternating unshifted/shifted blocks, then optional patch merging."""

    def __init__(self, dim, input_resolution, depth, num_heads, window_size, mlp_ratio=4.0, qkv_bias=True,
                 drop=0.0, attn_drop=0.0, norm_layer=nn.LayerNorm, downsample=None, pretrained_window_size=0):
        super().__init__()
        self.dim = dim
        self.input_resolution = input_resolution
        self.depth = depth
        self.blocks = nn.ModuleList(
            SwinTransformerBlock(dim=dim, input_resolution=input_resolution, num_heads=num_heads,
                                 window_size=window_size, shift_size=0 if i % 2 == 0 else window_size // 2,
                                 mlp_ratio=mlp_ratio, qkv_bias=qkv_bias, drop=drop, attn_drop=attn_drop,
                                 norm_layer=norm_layer, pretrained_window_size=pretrained_window_size)
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
    """Swin Transformer V2 image classifier (Swin-T layout) for 224x224 inputs."""

    def __init__(self, img_size=224, patch_size=4, in_chans=3, num_classes=1000, embed_dim=96,
                 depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24), window_size=7, mlp_ratio=4.0, qkv_bias=True,
                 drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.1, norm_layer=nn.LayerNorm,
                 patch_norm=True, use_checkpoint=False, pretrained_window_sizes=(0, 0, 0, 0), **kwargs):
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
                qkv_bias=qkv_bias,
                drop=drop_rate,
                attn_drop=attn_drop_rate,
                norm_layer=norm_layer,
                downsample=PatchMerging if i < self.num_layers - 1 else None,
                pretrained_window_size=pretrained_window_sizes[i],
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
