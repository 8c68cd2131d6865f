"""`ckpt to-onnx` on attention models exported with `torch.export` (`.pt2`), against torch
eager: a small `nn.TransformerEncoder` (post-norm ReLU and pre-norm GELU variants) and
torchvision's vit_b_32, built by `models/transformer.py`.

torch.export decomposes `nn.MultiheadAttention`: the batch moves to the second dimension and
is folded into the heads (`(L, N·H, d)`) and the tokens (`(L·N, E)`). The ONNX file must
still keep the batch first with no shape arithmetic (no Shape/Gather/Unsqueeze/Expand/
ConstantOfShape nodes), pass `onnx.checker.check_model(full_check=True)` and match torch
eager in onnxruntime at batch 1, 3 and 8 from one file (max |diff| <= 1e-4 * max(1, max
|ref|)). A program exported at a fixed batch cannot say which size is the batch once it is
folded: the export refuses it naming the node and how to export instead.

The same encoders and vit_b_32 traced with `torch.jit.trace` under `torch.no_grad()` (as
users trace for inference; torch then records its fused `_transformer_encoder_layer_fwd` per
encoder layer and `_native_multi_head_attention` per vit_b_32 block) export under the same
checks. A trace that reads the fused kernel's attention weights (`need_weights=True`) is
refused naming the argument.
"""
import sys
import zipfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from _util import check_parity, ok, run_ckpt
from test_pt2 import dims

sys.path.insert(0, str(Path(__file__).resolve().parent / "models"))
import common  # noqa: E402
import transformer  # noqa: E402

SHAPE_OPS = {"Identity", "Shape", "Gather", "Unsqueeze", "Expand", "ConstantOfShape"}


def export(kind, seed, chw, tmp_path):
    model = transformer.build(kind, seed=seed)
    archive = tmp_path / f"{kind}.pt2"
    common.export_pt2(model, chw, True, archive)
    out = tmp_path / f"{kind}.onnx"
    proc = ok(run_ckpt("to-onnx", archive, "-o", out))
    assert "(declared dynamic)" in proc.stderr, proc.stderr
    proto = onnx.load(str(out), load_external_data=False)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 11)]
    ops = [n.op_type for n in proto.graph.node]
    assert not set(ops) & SHAPE_OPS, sorted(set(ops))
    assert dims(proto.graph.input[0]) == ["batch", *chw]
    assert dims(proto.graph.output[0])[0] == "batch"
    return model, out, ops


def test_transformer_encoder_post_norm_relu(tmp_path):
    model, out, ops = export("encoder", 21, transformer.SEQUENCE, tmp_path)
    assert ops.count("Softmax") == 2 and "Relu" in ops
    check_parity(model, out, transformer.SEQUENCE, torch.Generator().manual_seed(11))


def test_transformer_encoder_pre_norm_gelu(tmp_path):
    model, out, ops = export("encoder-prenorm", 22, transformer.SEQUENCE, tmp_path)
    assert ops.count("Softmax") == 2 and "Erf" in ops
    check_parity(model, out, transformer.SEQUENCE, torch.Generator().manual_seed(11))


def test_vit_b_32(tmp_path):
    model, out, ops = export("vit_b_32", 23, transformer.IMAGE, tmp_path)
    assert ops.count("Softmax") == 12
    check_parity(model, out, transformer.IMAGE, torch.Generator().manual_seed(11))


def test_a_folded_batch_at_a_traced_size_is_refused_naming_the_node(tmp_path):
    archive = tmp_path / "static.pt2"
    common.export_pt2(transformer.build("encoder", seed=24), transformer.SEQUENCE, False,
                      archive)
    out = tmp_path / "static.onnx"
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1
    assert "node `transpose`" in proc.stderr and "torch.ops.aten.transpose.int" in proc.stderr
    assert "dynamic_shapes" in proc.stderr, proc.stderr
    assert not out.exists()


def trace(kind, seed, chw, tmp_path):
    model = transformer.build(kind, seed=seed)
    traced = tmp_path / f"{kind}.pt"
    with torch.no_grad():  # eval mode without gradients: torch's fused kernels are traced
        torch.jit.save(torch.jit.trace(model, torch.randn(2, *chw)), str(traced))
    return model, traced


@pytest.mark.parametrize("kind,seed,act", [("encoder", 25, "Relu"),
                                           ("encoder-prenorm", 26, "Erf")])
def test_a_no_grad_trace_of_the_fused_encoder_layer(kind, seed, act, tmp_path):
    model, traced = trace(kind, seed, transformer.SEQUENCE, tmp_path)
    code = "\n".join(zipfile.ZipFile(traced).read(n).decode()
                     for n in zipfile.ZipFile(traced).namelist() if n.endswith(".py"))
    assert "torch._transformer_encoder_layer_fwd" in code  # the fused kernel was traced
    out = tmp_path / f"{kind}.onnx"
    ok(run_ckpt("to-onnx", traced, "-o", out))
    onnx.checker.check_model(str(out), full_check=True)
    proto = onnx.load(str(out), load_external_data=False)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 11)]
    ops = [n.op_type for n in proto.graph.node]
    assert not set(ops) & SHAPE_OPS, sorted(set(ops))
    assert ops.count("Softmax") == 2 and act in ops
    assert dims(proto.graph.input[0]) == ["batch", *transformer.SEQUENCE]
    check_parity(model, out, transformer.SEQUENCE, torch.Generator().manual_seed(11))


def test_a_no_grad_trace_of_vit_b_32(tmp_path):
    model, traced = trace("vit_b_32", 27, transformer.IMAGE, tmp_path)
    code = "\n".join(zipfile.ZipFile(traced).read(n).decode()
                     for n in zipfile.ZipFile(traced).namelist() if n.endswith(".py"))
    assert "torch._native_multi_head_attention" in code  # the fused kernel was traced
    out = tmp_path / "vit_b_32.onnx"
    ok(run_ckpt("to-onnx", traced, "-o", out))
    onnx.checker.check_model(str(out), full_check=True)
    proto = onnx.load(str(out), load_external_data=False)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 11)]
    ops = [n.op_type for n in proto.graph.node]
    assert not set(ops) & SHAPE_OPS, sorted(set(ops))
    assert ops.count("Softmax") == 12
    assert dims(proto.graph.input[0]) == ["batch", *transformer.IMAGE]
    check_parity(model, out, transformer.IMAGE, torch.Generator().manual_seed(11))


class SelfAttention(torch.nn.Module):
    """`nn.MultiheadAttention(x, x, x)` returning its attention weights too."""

    def __init__(self):
        super().__init__()
        self.attention = torch.nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x):
        y, weights = self.attention(x, x, x, need_weights=True)
        return y + weights.sum()


def test_a_trace_reading_the_fused_attention_weights_is_refused(tmp_path):
    traced = tmp_path / "mha.pt"
    with torch.no_grad():
        torch.jit.save(torch.jit.trace(SelfAttention().eval(), torch.randn(2, 5, 16)),
                       str(traced))
    code = "\n".join(zipfile.ZipFile(traced).read(n).decode()
                     for n in zipfile.ZipFile(traced).namelist() if n.endswith(".py"))
    assert "torch._native_multi_head_attention" in code  # the fused kernel was traced
    out = tmp_path / "mha.onnx"
    proc = run_ckpt("to-onnx", traced, "-o", out)
    assert proc.returncode == 1
    assert "need_weights=False" in proc.stderr, proc.stderr
    assert not out.exists()


def test_a_trace_with_gradients_converts_and_matches_torch(tmp_path):
    model = transformer.build("encoder", seed=28)
    traced = tmp_path / "grad.pt"
    # With gradients on, torch records attention decomposed: views to `bsz * num_heads`
    # rows computed from the input's size, which the import keeps as the batch times a
    # number (torch's own check_trace fails on it, so it is off here).
    torch.jit.save(torch.jit.trace(model, torch.randn(2, *transformer.SEQUENCE),
                                   check_trace=False), str(traced))
    out = tmp_path / "grad.onnx"
    ok(run_ckpt("to-onnx", traced, "-o", out))
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    gen = torch.Generator().manual_seed(3)
    for b in (1, 3, 5):
        x = torch.randn(b, *transformer.SEQUENCE, generator=gen)
        with torch.no_grad():
            ref = model(x).numpy()
        got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
        assert got.shape == ref.shape
        assert float(np.abs(got - ref).max()) <= 1e-4 * max(1.0, float(np.abs(ref).max()))
