#!/usr/bin/env python3
"""A RootNet/PoseNet-style model (3DMPPE, Moon et al.) for the `.pt2` and TorchScript
interop tests, with two inputs: the image `x` (N, 3, H, W) and RootNet's `k_value` (N, 1).

A torchvision ResNet-50 backbone (no avgpool/fc, BatchNorm statistics randomised), three
ConvTranspose2d(k=4, s=2, p=1, bias=False) + BatchNorm + ReLU layers, a 1×1 conv to J·D
joint heatmaps and PoseNet's integral soft-argmax: view to (N, J, D·H·W), softmax, view
back to (N, J, D, H, W), marginal sums, times `torch.arange` coordinates, summed to
(N, J, 3). RootNet's depth branch: the mean of the backbone features over the spatial
dimensions, a 1×1 conv to gamma, times `k_value`. The output is (N, 3·J + 1): the joint
coordinates flattened, then the root depth.

`build(tiny=True)` swaps the backbone for two strided conv-BN-ReLU blocks (and 16×16
inputs), for the committed narrow fixtures.
"""
import torch
import torchvision
from torch import nn

from common import randomise_bn

CHW = (3, 128, 128)
TINY_CHW = (3, 16, 16)
K_SHAPE = (1,)
JOINTS = 4
DEPTH = 8


def tiny_backbone():
    """Two stride-2 conv-BN-ReLU blocks then a stride-2 conv: 16×16 → 2×2, 16 channels."""
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
        nn.Conv2d(8, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
        nn.Conv2d(16, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True))


class RootNet(nn.Module):
    def __init__(self, tiny=False):
        super().__init__()
        if tiny:
            self.backbone, channels, deconv = tiny_backbone(), 16, 8
        else:
            resnet = torchvision.models.resnet50(weights=None)
            self.backbone, channels, deconv = nn.Sequential(*list(resnet.children())[:-2]), 2048, 64
        features = channels
        layers = []
        for _ in range(3):
            layers += [nn.ConvTranspose2d(channels, deconv, 4, 2, 1, bias=False),
                       nn.BatchNorm2d(deconv), nn.ReLU(inplace=True)]
            channels = deconv
        self.deconv = nn.Sequential(*layers)
        self.heatmap = nn.Conv2d(deconv, JOINTS * DEPTH, 1)
        self.depth = nn.Conv2d(features, 1, 1)

    def soft_argmax(self, heat):
        n, _, h, w = heat.shape
        heat = heat.view(-1, JOINTS, DEPTH * h * w)
        heat = torch.softmax(heat, dim=2)
        heat = heat.view(-1, JOINTS, DEPTH, h, w)
        hx = heat.sum(dim=(2, 3))
        hy = heat.sum(dim=(2, 4))
        hz = heat.sum(dim=(3, 4))
        x = (hx * torch.arange(w, dtype=torch.float32)).sum(dim=2, keepdim=True)
        y = (hy * torch.arange(h, dtype=torch.float32)).sum(dim=2, keepdim=True)
        z = (hz * torch.arange(DEPTH, dtype=torch.float32)).sum(dim=2, keepdim=True)
        return torch.cat((x, y, z), dim=2)

    def forward(self, x, k_value):
        feat = self.backbone(x)
        coords = self.soft_argmax(self.heatmap(self.deconv(feat)))
        gamma = self.depth(feat.mean((2, 3), keepdim=True)).view(-1, 1)
        depth = gamma * k_value.view(-1, 1)
        return torch.cat((coords.flatten(1), depth), dim=1)


def build(seed=0, tiny=False):
    torch.manual_seed(seed)
    model = RootNet(tiny)
    randomise_bn(model, seed)
    with torch.no_grad():  # sharp heatmaps, so that the soft-argmax depends on the image
        model.heatmap.weight.mul_(4.0)
    return model.eval()


def example(batch, gen, chw=CHW):
    """The two inputs at `batch`: an image and a positive `k_value`."""
    return (torch.randn(batch, *chw, generator=gen),
            torch.rand(batch, 1, generator=gen) + 0.5)


def check_export(model, onnx_path, batches, gen):
    """The checks both interop fronts run on an exported RootNet: `onnx.checker` (full), the
    inputs named after `forward`'s parameters and both carrying the `batch` dim_param, no
    shape-computing or unfolded ops, and onnxruntime against torch eager at each batch from
    this one file, within max |diff| <= 1e-4 * max(1, max |ref|)."""
    import numpy as np
    import onnx
    import onnxruntime as ort

    proto = onnx.load(str(onnx_path))
    onnx.checker.check_model(proto, full_check=True)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 11)]
    assert [i.name for i in proto.graph.input] == ["x", "k_value"]
    dims = [[d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
            for i in proto.graph.input]
    assert dims == [["batch", *CHW], ["batch", *K_SHAPE]], dims
    ops = {n.op_type for n in proto.graph.node}
    banned = {"Identity", "Shape", "Gather", "Unsqueeze", "BatchNormalization", "Range",
              "ConstantOfShape"}
    assert not ops & banned, ops
    assert {"ConvTranspose", "Softmax", "ReduceSum"} <= ops, ops
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    for b in batches:
        x, k = example(b, gen)
        with torch.no_grad():
            ref = model(x, k).numpy()
        (got,) = session.run(None, {"x": x.numpy(), "k_value": k.numpy()})
        assert got.shape == ref.shape == (b, 3 * JOINTS + 1)
        diff = float(np.abs(got - ref).max())
        tol = 1e-4 * max(1.0, float(np.abs(ref).max()))
        print(f"{onnx_path.stem} batch {b}: max |diff| {diff:.3e} (tolerance {tol:.3e})")
        assert diff <= tol, f"batch {b}: max |diff| {diff:.3e} > {tol:.3e}"
