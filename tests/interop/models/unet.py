#!/usr/bin/env python3
"""A small UNet for the `.pt2` interop test: conv-BN-ReLU blocks, max-pool down, and three
ways up (ConvTranspose2d, nearest upsampling, bilinear with and without align_corners),
skip connections by `cat`, a sigmoid mask out.

    python unet.py OUT.pt2 [--static] [--seed N]
"""
import torch
import torch.nn.functional as F
from torch import nn

from common import cli, randomise_bn

CHW = (3, 64, 64)


def block(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout),
                         nn.ReLU(inplace=True), nn.Conv2d(cout, cout, 3, padding=1),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class UNet(nn.Module):
    def __init__(self, width=8):
        super().__init__()
        w = width
        self.enc1, self.enc2, self.enc3 = block(3, w), block(w, 2 * w), block(2 * w, 4 * w)
        self.up3 = nn.ConvTranspose2d(4 * w, 2 * w, 2, stride=2)
        self.dec2 = block(2 * w + 2 * w + 4 * w, 2 * w)  # up3(e3), e2, bilinear(e3)
        self.dec1 = block(2 * w + w + 2 * w, w)          # nearest(d2), e1, aligned(d2)
        self.out = nn.Conv2d(w, 1, 1)

    def forward(self, x):
        e1 = self.enc1(x)
        e2 = self.enc2(F.max_pool2d(e1, 2))
        e3 = self.enc3(F.max_pool2d(e2, 2))
        smooth = F.interpolate(e3, scale_factor=2, mode="bilinear", align_corners=False)
        d2 = self.dec2(torch.cat([self.up3(e3), e2, smooth], 1))
        near = F.interpolate(d2, scale_factor=2, mode="nearest")
        aligned = F.interpolate(d2, size=e1.shape[-2:], mode="bilinear", align_corners=True)
        d1 = self.dec1(torch.cat([near, e1, aligned], 1))
        return torch.sigmoid(self.out(d1))


def build(seed=0):
    torch.manual_seed(seed)
    model = UNet()
    randomise_bn(model, seed)
    return model.eval()


if __name__ == "__main__":
    cli(build, CHW)
