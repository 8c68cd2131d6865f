#!/usr/bin/env python3
"""A token-mixer model for the `.pt2` and TorchScript interop tests: conv patches as tokens,
a pre-norm MLP block (LayerNorm, Linear, exact GELU, Linear, residual), tokens re-weighted
by a softmax over the tokens (not the last axis), then class probabilities (a softmax over
the last axis) from all tokens.

    python mixer.py OUT.pt2 [--static] [--seed N]
"""
import torch
from torch import nn

from common import cli

CHW = (3, 32, 32)


class Mixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 16, 4, stride=4)
        self.norm = nn.LayerNorm(16)
        self.fc1 = nn.Linear(16, 32)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(32, 16)
        self.score = nn.Linear(16, 1)
        self.head = nn.Linear(16 * 64, 5)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = t + self.fc2(self.act(self.fc1(self.norm(t))))
        t = t * torch.softmax(self.score(t), dim=1) * 64.0
        return torch.softmax(self.head(t.flatten(1)), dim=-1)


def build(seed=0):
    torch.manual_seed(seed)
    model = Mixer()
    with torch.no_grad():  # LayerNorm's affine parameters start at 1 and 0
        model.norm.weight.copy_(torch.rand(16) + 0.5)
        model.norm.bias.copy_(torch.randn(16) * 0.1)
    return model.eval()


if __name__ == "__main__":
    cli(build, CHW)
