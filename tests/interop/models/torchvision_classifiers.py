#!/usr/bin/env python3
"""torchvision classifiers (random init, BN made non-trivial) for the `.pt2` and TorchScript
interop tests: the smallest variant of every CNN family `to-onnx` builds from a state dict.

    python torchvision_classifiers.py OUT.pt2 ARCH [--static] [--seed N]
"""
import functools

import torch
import torchvision

from common import calibrate, cli, randomise_bn

CHW = (3, 224, 224)
# The smallest variant of each CNN family (vit is tested with the attention ops).
ARCHS = (
    "resnet18", "resnet50", "resnext50_32x4d", "vgg11_bn", "alexnet", "squeezenet1_0",
    "squeezenet1_1", "mobilenet_v2", "mobilenet_v3_small", "shufflenet_v2_x0_5",
    "densenet121", "mnasnet0_5", "efficientnet_b0", "regnet_x_400mf", "regnet_y_400mf",
    "googlenet", "googlenet_transform_input", "convnext_tiny",
)
# DenseNet's pre-activation BatchNorms follow a Concat, not a Conv: they stay
# BatchNormalization (ATC takes it), as in the state-dict export.
KEEPS_BN = ("densenet121",)
# VGG and AlexNet pool adaptively to 7×7 / 6×6: at 224 those windows are uniform. The
# others end in a global pool, so a smaller image keeps the interop tier fast.
SMALL = (3, 64, 64)


def chw(arch):
    """The per-sample input the tests use for `arch`."""
    return CHW if arch in ("vgg11_bn", "alexnet") else SMALL


def construct(arch):
    if arch.startswith("googlenet"):
        return torchvision.models.googlenet(
            weights=None, aux_logits=False, init_weights=True,
            transform_input=arch == "googlenet_transform_input")
    return getattr(torchvision.models, arch)(weights=None)


@functools.lru_cache(maxsize=None)
def build(arch, seed=0):
    """Cached: the `.pt2` and TorchScript tests check the same model (eval mode only)."""
    torch.manual_seed(seed)
    model = construct(arch)
    if arch.startswith("resnet"):
        randomise_bn(model, seed)
        with torch.no_grad():
            # Damp each residual branch's last BN so the logits stay O(1).
            last = ".bn2" if arch == "resnet18" else ".bn3"
            for name, m in model.named_modules():
                if name.startswith("layer") and name.endswith(last):
                    m.weight.mul_(0.2)
        return model.eval()
    # Random-init networks otherwise often collapse to an input-independent output.
    return calibrate(model, chw(arch), seed)


if __name__ == "__main__":
    import sys

    cli(build, chw(sys.argv[2]) if len(sys.argv) > 2 else CHW)
