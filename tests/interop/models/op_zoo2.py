#!/usr/bin/env python3
"""Op zoo, part two: small float32 models for `test_ops_breadth.py` that run the 1-D and
3-D convolutions, pools and resizes, the 2-D pools' `ceil_mode`/`count_include_pad=False`,
bicubic upsampling, the compound element-wise ops and attention through
`F.scaled_dot_product_attention`, each exported with torch.export and traced with
torch.jit.trace (under `torch.no_grad()`).

`Signals` (input `[4, 32]`): conv1d + BatchNorm1d, max_pool1d, avg_pool1d (ceil mode, padding
not counted), adaptive_avg_pool1d (to 1 and to a divisor), conv_transpose1d, nearest and
linear 1-D upsampling (corners aligned and not).

`Volumes` (input `[2, 8, 8, 8]`): conv3d, max_pool3d, avg_pool3d (ceil mode),
adaptive_avg_pool3d (to 1 and to a divisor), conv_transpose3d, nearest and trilinear 3-D
upsampling.

`Arithmetic` (input `[3, 12, 12]`): avg_pool2d with ceil_mode (padding counted and not),
bicubic upsampling (corners aligned and not), remainder by a scalar and by a tensor (the
sign follows the divisor), addcmul, addcdiv, floor, ceil, round and stack.

`Attention` (input `[3, 8, 8]`): the feature map as 64 tokens, q/k/v projections split into
2 heads, `F.scaled_dot_product_attention` (plain and causal), heads merged back.
"""
import torch
import torch.nn.functional as F
from torch import nn

CHW = {
    "signals": (4, 32),
    "volumes": (2, 8, 8, 8),
    "arithmetic": (3, 12, 12),
    "attention": (3, 8, 8),
}


class Signals(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 6, 3, padding=1)
        self.bn = nn.BatchNorm1d(6)
        self.up = nn.ConvTranspose1d(6, 4, 2, stride=2)

    def forward(self, x):
        y = F.relu(self.bn(self.conv(x)))                                     # [6, 32]
        y = F.max_pool1d(y, 2)                                                # [6, 16]
        y = F.avg_pool1d(y, 3, 2, 1, ceil_mode=True, count_include_pad=False)  # [6, 9]
        g = F.adaptive_avg_pool1d(y, 1)                                       # [6, 1]
        y = F.adaptive_avg_pool1d(y, 3) + g                                   # [6, 3]
        y = self.up(y)                                                        # [4, 6]
        a = F.interpolate(y, scale_factor=2, mode="nearest")                 # [4, 12]
        b = F.interpolate(y, size=12, mode="linear", align_corners=False)
        c = F.interpolate(y, size=12, mode="linear", align_corners=True)
        return torch.cat((a, b, c), 1)


class Volumes(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(2, 4, 3, padding=1)
        self.up = nn.ConvTranspose3d(4, 3, 2, stride=2)

    def forward(self, x):
        y = torch.tanh(self.conv(x))                                        # [4, 8, 8, 8]
        y = F.max_pool3d(y, 2)                                              # [4, 4, 4, 4]
        p = F.avg_pool3d(y, 3, 2, ceil_mode=True)                           # [4, 2, 2, 2]
        y = F.adaptive_avg_pool3d(y, 2) + p + F.adaptive_avg_pool3d(y, 1)   # [4, 2, 2, 2]
        y = self.up(y)                                                      # [3, 4, 4, 4]
        a = F.interpolate(y, scale_factor=2, mode="nearest")
        b = F.interpolate(y, scale_factor=2, mode="trilinear", align_corners=False)
        c = F.interpolate(y, size=(8, 8, 8), mode="trilinear", align_corners=True)
        return a + b - c


class Arithmetic(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)                                                     # [3, 12, 12]
        p = F.avg_pool2d(y, 3, 2, 1, ceil_mode=True, count_include_pad=False)   # [3, 7, 7]
        q = F.avg_pool2d(y, 2, 3, 1, ceil_mode=True)                            # [3, 5, 5]
        u = F.interpolate(q, size=(7, 7), mode="bicubic", align_corners=False)
        v = F.interpolate(p, scale_factor=2, mode="bicubic", align_corners=True)
        pooled = (p + u).flatten(1)
        # Exact inputs for the rounding ops (x · 3 is exact in both runtimes).
        z = x * 3.0
        r = torch.remainder(z, 0.7) + torch.remainder(z, y.abs() + 0.5)
        r = r + torch.remainder(-z, -1.3)
        m = torch.addcmul(y, z, y, value=0.5) + torch.addcdiv(z, y, y * y + 1.0, value=-2.0)
        m = m + torch.addcmul(y, y, z)
        f = torch.floor(z) + torch.ceil(z) * 2.0 + torch.round(z) * 4.0
        s = torch.stack((y, f, m + r), 2).flatten(1)                        # [3·3·12·12]
        return torch.cat((pooled, v.flatten(1), s), 1)


class Attention(nn.Module):
    heads = 2

    def __init__(self):
        super().__init__()
        self.embed = nn.Conv2d(3, 8, 1)
        self.q = nn.Linear(8, 8)
        self.k = nn.Linear(8, 8)
        self.v = nn.Linear(8, 8)
        self.proj = nn.Linear(8, 8)

    def split(self, t):
        n, tokens, width = t.shape
        return t.reshape(n, tokens, self.heads, width // self.heads).transpose(1, 2)

    def forward(self, x):
        t = self.embed(x).flatten(2).transpose(1, 2)                        # [64, 8]
        q, k, v = self.split(self.q(t)), self.split(self.k(t)), self.split(self.v(t))
        a = F.scaled_dot_product_attention(q, k, v)                         # [2, 64, 4]
        c = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        n, heads, tokens, width = a.shape
        merged = (a + c).transpose(1, 2).reshape(n, tokens, heads * width)
        return self.proj(merged) + t


MODELS = {"signals": Signals, "volumes": Volumes, "arithmetic": Arithmetic,
          "attention": Attention}


def build(name, seed=0):
    torch.manual_seed(seed)
    model = MODELS[name]()
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm1d):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=gen) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=gen) + 0.5)
                m.weight.copy_(torch.rand(n, generator=gen) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(n, generator=gen) * 0.05)
    return model.eval()
