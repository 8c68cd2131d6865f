#!/usr/bin/env python3
"""A patch-token model for the `.pt2` interop test: conv patches flattened to tokens and
transposed to [N, T, C], a Linear on every token (a MatMul in ONNX), the first token dropped
by a slice, tokens averaged, a Linear head.

    python tokens.py OUT.pt2 [--static] [--seed N]
"""
import torch
from torch import nn

from common import cli

CHW = (3, 32, 32)


class Tokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 16, 4, stride=4)
        self.mix = nn.Linear(16, 16)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        t = self.patch(x).flatten(2).transpose(1, 2)
        t = nn.functional.silu(self.mix(t))[:, 1:]
        return self.head(t.mean(1))


def build(seed=0):
    torch.manual_seed(seed)
    return Tokens().eval()


if __name__ == "__main__":
    cli(build, CHW)
