#!/usr/bin/env python3
"""torchvision classifiers (random init, BN made non-trivial) for the `.pt2` interop test.

    python torchvision_classifiers.py OUT.pt2 ARCH [--static] [--seed N]
"""
import torch
import torchvision

from common import cli, randomise_bn

CHW = (3, 224, 224)
ARCHS = ("resnet18", "resnet50", "mobilenet_v2")


def build(arch, seed=0):
    torch.manual_seed(seed)
    model = getattr(torchvision.models, arch)(weights=None)
    randomise_bn(model, seed)
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        if arch.startswith("resnet"):
            # Damp each residual branch's last BN so the logits stay O(1).
            last = ".bn2" if arch == "resnet18" else ".bn3"
            for name, m in model.named_modules():
                if name.startswith("layer") and name.endswith(last):
                    m.weight.mul_(0.2)
        else:
            # A random-init MobileNetV2 collapses to an input-independent output: calibrate
            # its BN statistics on random images, then scale the head to unit-size logits.
            for m in model.modules():
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.reset_running_stats()
                    m.momentum = None
            model.train()(torch.randn(8, *CHW, generator=gen))
            out = model.eval()(torch.randn(4, *CHW, generator=gen))
            model.classifier[1].weight.div_(out.std())
            model.classifier[1].bias.div_(out.std())
    return model.eval()


if __name__ == "__main__":
    cli(build, CHW)
