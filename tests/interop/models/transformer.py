#!/usr/bin/env python3
"""Attention models for the `.pt2` interop tests: a small `nn.TransformerEncoder` (two
layers, d_model 64, 4 heads, feed-forward 128, batch_first, final LayerNorm; post-norm ReLU
or pre-norm exact GELU) on `(N, 10, 64)` inputs, and torchvision's ViT (random init, the
zero-initialised head re-drawn so the output depends on the input).

torch.export writes `nn.MultiheadAttention` decomposed whether or not gradients are on:
the batch is moved to the second dimension, folded into the heads and the tokens, and
brought back; `scaled_dot_product_attention` does the attention.

    python transformer.py OUT.pt2 [encoder|encoder-prenorm|vit_b_32|vit_b_16] [--static] [--seed N]
"""
import torch
import torchvision
from torch import nn

from common import cli

SEQUENCE = (10, 64)
IMAGE = (3, 224, 224)


class Encoder(nn.Module):
    def __init__(self, norm_first, activation):
        super().__init__()
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.1, activation=activation,
                                           batch_first=True, norm_first=norm_first)
        self.encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(64),
                                             enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


def build(kind="encoder", seed=0):
    torch.manual_seed(seed)
    if kind.startswith("vit"):
        model = getattr(torchvision.models, kind)(weights=None)
        with torch.no_grad():  # torchvision zero-initialises the head
            model.heads.head.weight.normal_(0, 0.02)
            model.heads.head.bias.normal_(0, 0.02)
        return model.eval()
    model = Encoder(kind == "encoder-prenorm", "gelu" if kind == "encoder-prenorm" else "relu")
    with torch.no_grad():  # LayerNorm's affine parameters start at 1 and 0
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.copy_(torch.rand(64) + 0.5)
                m.bias.copy_(torch.randn(64) * 0.1)
    return model.eval()


if __name__ == "__main__":
    import sys

    kind = next((a for a in sys.argv[2:] if not a.startswith("-")), "encoder")
    cli(build, IMAGE if kind.startswith("vit") else SEQUENCE)
