"""`ckpt to-onnx` on the op zoo, part two (`models/op_zoo2.py`): 1-D and 3-D convolutions,
pools and resizes, ceil-mode and padding-excluding average pools, bicubic upsampling,
remainder/addcmul/addcdiv/floor/ceil/round/stack and `F.scaled_dot_product_attention`,
each model both exported with torch.export (a declared dynamic batch) and traced with
torch.jit.trace under `torch.no_grad()`.

Every ONNX file must pass `onnx.checker.check_model(full_check=True)`, have opset 11, the
named batch `dim_param` on its input and outputs, none of the ops ATC refuses, and match
torch eager in onnxruntime at batch 1, 3 and 8 from one file, each output depending on
the input (`_util.check_parity`).
"""
import sys
import warnings
from pathlib import Path

import onnx
import pytest
import torch

from _util import check_parity, ok, run_ckpt

sys.path.insert(0, str(Path(__file__).resolve().parent / "models"))
import common  # noqa: E402
import op_zoo2  # noqa: E402

BANNED = {"Identity", "Shape", "ConstantOfShape", "Expand", "NonZero", "Loop", "If",
          "Gather", "Unsqueeze"}
# The ONNX ops each model must contain: proof that the new lowerings ran (1-D, 3-D and
# bicubic resizes are MatMuls by interpolation matrices).
EXPECTED = {
    "signals": {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "ConvTranspose",
                "MatMul"},
    "volumes": {"Conv", "MaxPool", "AveragePool", "GlobalAveragePool", "ConvTranspose",
                "MatMul", "Transpose"},
    "arithmetic": {"AveragePool", "MatMul", "Floor", "Ceil", "Round", "Concat"},
    "attention": {"Softmax", "MatMul"},
}


def dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def export(name, model, chw, route, path):
    if route == "pt2":
        common.export_pt2(model, chw, True, path)
        return
    example = torch.randn(2, *chw, generator=torch.Generator().manual_seed(0))
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        traced = torch.jit.trace(model, example)
    torch.jit.save(traced, str(path))


@pytest.mark.parametrize("route", ["pt2", "script"])
@pytest.mark.parametrize("name", sorted(op_zoo2.MODELS))
def test_op_zoo2_matches_torch(name, route, tmp_path):
    model = op_zoo2.build(name, seed=31)
    chw = op_zoo2.CHW[name]
    archive = tmp_path / f"{name}.{'pt2' if route == 'pt2' else 'pt'}"
    export(name, model, chw, route, archive)
    out = tmp_path / f"{name}.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", out))

    proto = onnx.load(str(out))
    onnx.checker.check_model(proto, full_check=True)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 11)]
    ops = {n.op_type for n in proto.graph.node}
    assert not ops & BANNED, sorted(ops & BANNED)
    assert EXPECTED[name] <= ops, sorted(EXPECTED[name] - ops)
    assert dims(proto.graph.input[0]) == ["batch", *chw]
    assert all(dims(o)[0] == "batch" for o in proto.graph.output)
    check_parity(model, out, chw, torch.Generator().manual_seed(32))
