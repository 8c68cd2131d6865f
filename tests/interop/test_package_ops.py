"""`ckpt to-onnx` on the ops the package corpus's models need (`models/package_ops.py`):
kornia's `atan2` (from ONNX `Atan` with C's quadrant rules: signed zeros, zero and infinite
operands), `isfinite` (NaN and infinities), in-place `clamp_` and `lerp` (both branches of
torch's kernel), VNet's `repeat` of an activation, DeBERTa's constant keys and indices
tiled over the batch (`repeat`/`expand` to `2·N` rows) and `gather` from the scores, MONAI's
zero-width replicate pad of a 3-D map, UPerNet's adaptive average pooling with uneven
windows, UNETR's einsum of two activations and SwinUNETR's mask filled in place. Each is
exported with torch.export and a dynamic batch; the ONNX file must pass
`onnx.checker.check_model(full_check=True)`, be opset 11 with only ops ATC parses there,
and match torch eager in onnxruntime at batch 1, 3 and 5, NaN where torch has NaN.
"""
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from _coverage import atc_ops
from _util import ok, run_ckpt

sys.path.insert(0, str(Path(__file__).resolve().parent / "models"))
import package_ops  # noqa: E402

D = package_ops.D
BANNED = {"Shape", "Expand", "ConstantOfShape", "NonZero", "Identity", "Loop", "If"}
# The first columns of the atan2 operands pair every sign of zero, both infinities and
# finite values of both signs with each other; the rest are random.
EDGE_Y = [0.0, -0.0, 0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), float("inf"),
          float("-inf"), 0.0, -0.0, 2.0, -2.0, 0.5, 3.0]
EDGE_X = [0.0, 0.0, -0.0, -0.0, 0.0, -0.0, float("inf"), float("inf"), float("-inf"),
          float("-inf"), -1.0, -1.0, float("-inf"), float("inf"), -3.0, float("-inf")]


def randn(b, gen):
    return torch.randn(b, D, generator=gen)


def edges(column):
    def make(b, gen):
        x = torch.randn(b, D, generator=gen)
        x[0] = torch.tensor(column)
        return x
    return make


def specials(b, gen):
    x = torch.randn(b, D, generator=gen)
    x[:, :3] = torch.tensor([float("nan"), float("inf"), float("-inf")])
    return x


# name: (model, input makers, an ONNX op that shows the lowering ran)
MODELS = {
    "atan2": (package_ops.Atan2, [edges(EDGE_Y), edges(EDGE_X)], "Atan"),
    "isfinite": (package_ops.IsFinite, [specials], "Less"),
    "clamp_": (package_ops.ClampInPlace, [randn], "Clip"),
    "lerp": (package_ops.Lerp, [randn], "Sub"),
    "repeat": (package_ops.Repeat, [randn], "Tile"),
    "tiled_over_batch": (package_ops.TiledOverBatch, [randn], "GatherElements"),
    "zero_pad_3d": (package_ops.ZeroPad3d, [randn], "Mul"),
    "uneven_pool": (package_ops.UnevenPool, [randn], "ReduceMean"),
    "einsum_activations": (package_ops.EinsumActivations, [randn], "MatMul"),
    "fill_mask": (package_ops.FillMask, [randn], "Add"),
}


def outputs(result):
    return [result] if isinstance(result, torch.Tensor) else list(result)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_package_op_exports_atc_clean_and_matches_torch(name, tmp_path):
    build, makers, expected = MODELS[name]
    torch.manual_seed(0)
    model = build().eval()
    gen = torch.Generator().manual_seed(0)
    example = tuple(m(2, gen) for m in makers)
    batch = torch.export.Dim("batch")
    program = torch.export.export(model, example,
                                  dynamic_shapes=tuple({0: batch} for _ in makers))
    archive, out = tmp_path / f"{name}.pt2", tmp_path / f"{name}.onnx"
    torch.export.save(program, str(archive))
    ok(run_ckpt("to-onnx", archive, "-o", out))
    proto = onnx.load(str(out))
    onnx.checker.check_model(proto, full_check=True)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 11)]
    ops = {n.op_type for n in proto.graph.node}
    assert not ops & BANNED, sorted(ops & BANNED)
    assert ops <= atc_ops(), sorted(ops - atc_ops())
    assert expected in ops, sorted(ops)
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    gen = torch.Generator().manual_seed(5)
    for b in (1, 3, 5):
        inputs = [m(b, gen) for m in makers]
        with torch.no_grad():
            refs = [r.numpy() for r in outputs(model(*inputs))]
        got = session.run(None, dict(zip(names, (i.numpy() for i in inputs))))
        assert len(got) == len(refs)
        for g, r in zip(got, refs):
            assert g.shape == r.shape, (g.shape, r.shape)
            assert np.array_equal(np.isnan(g), np.isnan(r)), f"{name} batch {b}: NaN differs"
            assert np.array_equal(np.signbit(g[r == 0]), np.signbit(r[r == 0])), \
                f"{name} batch {b}: the sign of a zero differs"
            finite = ~np.isnan(r)
            diff = float(np.abs(g[finite] - r[finite]).max(initial=0))
            tol = 1e-4 * max(1.0, float(np.abs(r[finite]).max(initial=0)))
            print(f"{name} batch {b}: max |diff| {diff:.3e} (tolerance {tol:.3e})")
            assert diff <= tol, f"{name} batch {b}: max |diff| {diff:.3e} > {tol:.3e}"
