#!/usr/bin/env python3
"""Small models whose batch leaves the first dimension or folds into another one, as real
architectures do, for the batch-layout interop test and the `.pt2` fixtures:

- `timm_attention`: timm's `Attention` (vit, deit, cait): `qkv.reshape(B, N, 3, H, D)
  .permute(2, 0, 3, 1, 4).unbind(0)` moves the batch to dimension 1 and back.
- `swin_windows`: Swin's window partition `view(B, H/w, w, W/w, w, C).permute(0, 1, 3, 2, 4,
  5).view(-1, w*w, C)` (the batch folded into the windows, B·nW), window attention with a
  relative-position bias, and the reverse.
- `time_major`: a CRNN head: `x.permute(1, 0, 2)` to (T, B, C), per-timestep Linear, GELU,
  LayerNorm and softmax over the features, a per-timestep bias, and back.
- `patch_fold`: MobileViT's unfold (B·C·nh rows, then B·P patches), attention over the
  patches, and the fold back before a 1×1 conv.
- `expanded_masks`: stored masks expanded or repeated over the batch and then folded with
  it: Swin's shifted-window mask `mask.expand(B, …).reshape(-1, L, L)` (additive and
  boolean) and WavLM's head bias `bias.repeat(B, 1, 1, 1).view(B·H, L, L)`.
- `levit_flatten`: LeViT's `Linear_BN`: `bn(x.flatten(0, 1)).reshape_as(x)` (BatchNorm1d over
  B·N tokens).

    python batch_layouts.py NAME OUT.pt2 [--static] [--seed N]
"""
import torch
from torch import nn

from common import cli

# Per-sample input shapes.
CHW = {
    "timm_attention": (16, 32),
    "swin_windows": (8, 8, 16),
    "time_major": (12, 8),
    "patch_fold": (8, 8, 8),
    "levit_flatten": (16, 32),
    "expanded_masks": (8, 8, 16),
}


class TimmAttention(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(self.norm(x)).reshape(B, N, 3, self.heads, C // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1)
        attn = attn.softmax(dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return x + self.proj(y)


def window_partition(x, w):
    B, H, W, C = x.shape
    x = x.view(B, H // w, w, W // w, w, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, w * w, C)


def window_reverse(windows, w, H, W):
    C = windows.shape[-1]
    x = windows.view(-1, H // w, W // w, w, w, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, H, W, C)


class SwinWindows(nn.Module):
    def __init__(self, dim=16, heads=2, window=4):
        super().__init__()
        self.heads, self.window = heads, window
        self.scale = (dim // heads) ** -0.5
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        n = window * window
        self.bias = nn.Parameter(torch.randn(1, heads, n, n) * 0.5)

    def forward(self, x):
        _, H, W, C = x.shape
        windows = window_partition(self.norm(x), self.window)
        B_, N, _ = windows.shape
        qkv = self.qkv(windows).reshape(B_, N, 3, self.heads, C // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        attn = (q * self.scale) @ k.transpose(-2, -1) + self.bias
        attn = attn.softmax(dim=-1)
        y = (attn @ v).transpose(1, 2).reshape(B_, N, C)
        return x + window_reverse(self.proj(y), self.window, H, W)


class TimeMajor(nn.Module):
    def __init__(self, steps=12, features=8, hidden=16):
        super().__init__()
        self.inner = nn.Linear(features, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.outer = nn.Linear(hidden, features)
        self.step_bias = nn.Parameter(torch.randn(steps, 1, features))

    def forward(self, x):
        t = x.permute(1, 0, 2)
        t = self.norm(nn.functional.gelu(self.inner(t)))
        t = self.outer(t).softmax(dim=-1) + self.step_bias
        return t.permute(1, 0, 2) * 4.0


class PatchFold(nn.Module):
    def __init__(self, channels=8, patch=2):
        super().__init__()
        self.patch = patch
        self.conv_in = nn.Conv2d(channels, channels, 3, padding=1)
        self.norm = nn.LayerNorm(channels)
        self.qkv = nn.Linear(channels, channels * 3)
        self.conv_out = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        x = self.conv_in(x)
        B, C, H, W = x.shape
        p = self.patch
        nh, nw = H // p, W // p
        u = x.reshape(B * C * nh, p, nw, p).transpose(1, 2)
        u = u.reshape(B, C, nh * nw, p * p).transpose(1, 3)
        u = u.reshape(B * p * p, nh * nw, C)
        q, k, v = self.qkv(self.norm(u)).chunk(3, dim=-1)
        attn = (q @ k.transpose(1, 2) * C ** -0.5).softmax(dim=-1)
        u = u + attn @ v
        f = u.contiguous().view(B, p * p, nh * nw, C).transpose(1, 3)
        f = f.reshape(B * C * nh, nw, p, p).transpose(1, 2)
        return self.conv_out(f.reshape(B, C, H, W))


class LevitFlatten(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.linear = nn.Linear(dim, dim, bias=False)
        self.bn = nn.BatchNorm1d(dim)
        with torch.no_grad():
            self.bn.running_mean.copy_(torch.randn(dim) * 0.1)
            self.bn.running_var.copy_(torch.rand(dim) + 0.5)
            self.bn.weight.copy_(torch.rand(dim) + 0.5)
            self.bn.bias.copy_(torch.randn(dim) * 0.1)

    def forward(self, x):
        y = self.linear(x)
        y = self.bn(y.flatten(0, 1)).reshape_as(y)
        return nn.functional.hardswish(y) + x


class ExpandedMasks(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("shift_mask", torch.randn(4, 16, 16))
        self.register_buffer("hidden", torch.rand(4, 16, 16) < 0.2)
        self.head_bias = nn.Parameter(torch.randn(2, 64, 64))
        self.proj = nn.Linear(16, 16)

    def forward(self, x):  # [B, 8, 8, 16]: four 4×4 windows of 16 channels
        b = x.shape[0]
        w = x.view(b, 2, 4, 2, 4, 16).permute(0, 1, 3, 2, 4, 5).reshape(-1, 16, 16)
        mask = self.shift_mask.unsqueeze(0).expand(b, -1, -1, -1).reshape(-1, 16, 16)
        hidden = self.hidden.unsqueeze(0).expand(b, -1, -1, -1).reshape(-1, 16, 16)
        scores = (w @ w.transpose(1, 2) + mask).masked_fill(hidden, -1e4)
        y = self.proj(torch.softmax(scores, -1) @ w)  # [B·4, 16, 16]
        h = y.reshape(b, 64, 2, 8).transpose(1, 2).reshape(b * 2, 64, 8)
        bias = self.head_bias.unsqueeze(0).repeat(b, 1, 1, 1).view(b * 2, 64, 64)
        h = torch.softmax(h @ h.transpose(1, 2) + bias, -1) @ h  # [B·2, 64, 8]
        return h.view(b, 2, 64, 8).transpose(1, 2).reshape(b, 8, 8, 16)


MODELS = {
    "timm_attention": TimmAttention,
    "swin_windows": SwinWindows,
    "time_major": TimeMajor,
    "patch_fold": PatchFold,
    "levit_flatten": LevitFlatten,
    "expanded_masks": ExpandedMasks,
}


def build(name, seed=0):
    torch.manual_seed(seed)
    return MODELS[name]().eval()


if __name__ == "__main__":
    import sys

    name = sys.argv.pop(1)
    cli(lambda seed=0: build(name, seed), CHW[name])
