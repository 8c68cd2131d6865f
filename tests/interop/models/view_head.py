#!/usr/bin/env python3
"""A classifier whose head reshapes with `x.view(x.size(0), -1)`. Exported without a
dynamic batch, torch traces the example's batch size into the view's size list; the
exporter must rewrite it to follow the batch.

    python view_head.py OUT.pt2 [--static] [--seed N]
"""
import torch
from torch import nn

from common import cli, randomise_bn

CHW = (3, 32, 32)


class ViewHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.Hardswish(),
            nn.Conv2d(8, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.SiLU(),
            nn.AvgPool2d(2))
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = self.features(x)
        return self.fc(x.view(x.size(0), -1))


def build(seed=0):
    torch.manual_seed(seed)
    model = ViewHead()
    randomise_bn(model, seed)
    return model.eval()


if __name__ == "__main__":
    cli(build, CHW)
