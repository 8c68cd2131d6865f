#!/usr/bin/env python3
"""Ops on parameters alone, which the ONNX export folds into initializers, for the `.pt2`
and TorchScript interop tests (test_fold.py):

- StdConv: weight standardisation as timm's StdConv2d does it
  (`F.batch_norm(w.reshape(1, out, -1), None, None, training=True, momentum=0., eps=eps)`)
  and as `(w - w.mean(dims)) / (w.std(dims) + eps)`;
- layer scale `x * gamma.reshape(1, -1, 1, 1)`;
- a Swin-style relative position bias
  `table[index.view(-1)].view(N, N, -1).permute(2, 0, 1).contiguous().unsqueeze(0)` (an
  int64 index buffer) added to the scores of a small attention over a fixed token count;
- a `softplus(param)` scale and arithmetic between two parameters.

    python param_ops.py OUT.pt2 [--static] [--seed N]
"""
import torch
import torch.nn.functional as F
from torch import nn

from common import cli

CHW = (3, 16, 16)
WINDOW = 4  # tokens per side: the 16x16 input becomes 4x4 patches, N = 16 tokens
HEADS = 2


class StdConv(nn.Conv2d):
    """timm's StdConv2d: the weight standardised per output channel by batch_norm."""

    def forward(self, x):
        w = F.batch_norm(
            self.weight.reshape(1, self.out_channels, -1), None, None,
            training=True, momentum=0.0, eps=1e-6,
        ).reshape_as(self.weight)
        return F.conv2d(x, w, self.bias, self.stride, self.padding)


class MeanStdConv(nn.Conv2d):
    """Weight standardisation written out: mean and std over each output channel."""

    def forward(self, x):
        w = self.weight
        w = (w - w.mean(dim=(1, 2, 3), keepdim=True)) / (w.std(dim=(1, 2, 3), keepdim=True) + 1e-5)
        return F.conv2d(x, w * self.gain.reshape(-1, 1, 1, 1), self.bias, padding=1)


def relative_position_index(window):
    coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij"))
    flat = torch.flatten(coords, 1)
    rel = (flat[:, :, None] - flat[:, None, :]).permute(1, 2, 0).contiguous()
    rel[:, :, 0] += window - 1
    rel[:, :, 1] += window - 1
    rel[:, :, 0] *= 2 * window - 1
    return rel.sum(-1)


class RelativeAttention(nn.Module):
    """Multi-head self-attention over a fixed number of tokens with a learned bias per
    relative position, looked up through an int64 index buffer (Swin); the heads are split
    with the batch kept first."""

    def __init__(self, dim, heads, window):
        super().__init__()
        self.heads, self.n = heads, window * window
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)
        self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads))
        self.register_buffer("index", relative_position_index(window))
        self.temperature = nn.Parameter(torch.randn(heads))

    def forward(self, t):
        b, n, c = t.shape
        heads = lambda z: z.reshape(b, n, self.heads, c // self.heads).transpose(1, 2)
        q, k, v = (heads(z) for z in self.qkv(t).chunk(3, dim=-1))
        bias = self.table[self.index.view(-1)].view(self.n, self.n, -1)
        bias = bias.permute(2, 0, 1).contiguous().unsqueeze(0)
        scale = F.softplus(self.temperature).reshape(1, -1, 1, 1)
        scores = (q @ k.transpose(-2, -1)) * scale + bias
        out = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj(out)


class ParamOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = StdConv(3, 8, 3, padding=1)
        self.conv = MeanStdConv(8, 8, 3, padding=1)
        self.conv.gain = nn.Parameter(torch.rand(8) + 0.5)
        self.gamma = nn.Parameter(torch.rand(8) + 0.5)
        self.scale = nn.Parameter(torch.rand(8) + 0.5)
        self.patch = nn.Conv2d(8, 16, 4, stride=4)
        self.attention = RelativeAttention(16, HEADS, WINDOW)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        x = F.relu(self.stem(x))
        x = x + self.conv(x) * (self.gamma * self.scale).reshape(1, -1, 1, 1)
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = t + self.attention(t)
        return self.head(t.mean(dim=1))


def build(seed=0):
    torch.manual_seed(seed)
    return ParamOps().eval()


if __name__ == "__main__":
    cli(build, CHW)
