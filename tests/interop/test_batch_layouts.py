"""`ckpt to-onnx` on models whose batch leaves the first dimension or folds into another one
(`models/batch_layouts.py`: timm attention, Swin windows, a time-major CRNN head, MobileViT's
patch fold, LeViT's flatten), exported by `torch.export` with a declared dynamic batch.

Each ONNX file must pass `onnx.checker.check_model(full_check=True)`, hold no node that
computes a shape (Shape, Gather, ConstantOfShape, Expand, Identity), write every Reshape
target as a constant with at most one `-1`, and match torch eager in onnxruntime at batch
1, 3 and 8 from one file (max |diff| <= 1e-4 * max(1, max |ref|)).

Ops that mix samples (a softmax or sum along the batch dimension, wherever it is) are
refused naming the node and saying why.
"""
import sys
import warnings
from pathlib import Path

import onnx
import onnx.numpy_helper
import pytest
import torch

from _util import check_parity, ok, run_ckpt

sys.path.insert(0, str(Path(__file__).resolve().parent / "models"))
import batch_layouts  # noqa: E402
import common  # noqa: E402

BANNED = {"Shape", "Gather", "ConstantOfShape", "Expand", "Identity", "NonZero", "Loop", "If"}


def check_static_shapes(path):
    proto = onnx.load(str(path))
    onnx.checker.check_model(proto, full_check=True)
    ops = [n.op_type for n in proto.graph.node]
    assert not set(ops) & BANNED, ops
    constants = {i.name: onnx.numpy_helper.to_array(i) for i in proto.graph.initializer}
    for n in proto.graph.node:
        if n.op_type == "Reshape":
            target = constants[n.input[1]]
            assert (target < 0).sum() + (target == 0).sum() == 1, (n.name, target)
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch"
    return ops


@pytest.mark.parametrize("name", list(batch_layouts.MODELS))
def test_exported_layouts_match_torch(name, tmp_path):
    model = batch_layouts.build(name, seed=3)
    chw = batch_layouts.CHW[name]
    archive = tmp_path / f"{name}.pt2"
    common.export_pt2(model, chw, True, archive)
    out = tmp_path / f"{name}.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", out))
    ops = check_static_shapes(out)
    assert "Transpose" in ops or "Reshape" in ops, ops
    check_parity(model, out, chw, torch.Generator().manual_seed(5))


@pytest.mark.parametrize("name", list(batch_layouts.MODELS))
def test_traced_layouts(name, tmp_path):
    """TorchScript traces of the same models: the TorchScript importer's shape inference
    (crates/import/src/script/shape.rs) still keeps the batch first, so a trace whose batch moves
    is refused with a clear error, never a wrong graph; one whose batch stays first
    exports and matches torch."""
    model = batch_layouts.build(name, seed=4)
    chw = batch_layouts.CHW[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        traced = torch.jit.trace(model, torch.randn(2, *chw))
    archive = tmp_path / f"{name}.pt"
    torch.jit.save(traced, str(archive))
    out = tmp_path / f"{name}.onnx"
    proc = run_ckpt("to-onnx", archive, "-o", out)
    if proc.returncode != 0:
        print(f"LOUD: the trace of {name} is refused (TorchScript batch layouts are not "
              f"followed yet): {proc.stderr.strip().splitlines()[0]}")
        assert proc.returncode == 1 and not out.exists(), proc.stderr
        assert "panick" not in proc.stderr
        return
    check_static_shapes(out)
    check_parity(model, out, chw, torch.Generator().manual_seed(6))


class SoftmaxAcrossTimeMajorBatch(torch.nn.Module):
    def forward(self, x):
        return x.permute(1, 0, 2).softmax(dim=1).permute(1, 0, 2)


class SumAcrossWindows(torch.nn.Module):
    def forward(self, x):
        w = x.reshape(-1, 4, 8)
        return w.sum(dim=0, keepdim=True) + w


@pytest.mark.parametrize("model,node,op", [
    (SoftmaxAcrossTimeMajorBatch(), "node `softmax`", "Softmax along dimension 1"),
    (SumAcrossWindows(), "node `sum_1`", "along dimension 0, the batch"),
], ids=["softmax-time-major", "sum-windows"])
def test_ops_across_the_batch_are_refused(model, node, op, tmp_path):
    archive = tmp_path / "m.pt2"
    common.export_pt2(model, (8, 8), True, archive)
    out = tmp_path / "m.onnx"
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1
    assert node in proc.stderr and op in proc.stderr, proc.stderr
    assert "mixes samples" in proc.stderr, proc.stderr
    assert not out.exists()
