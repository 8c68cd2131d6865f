"""`ckpt to-onnx` folds what a model computes from its parameters and buffers alone.

The model (models/param_ops.py) standardises conv weights (timm's StdConv2d through
`batch_norm(training=True)`, and by mean and std), scales by `gamma * scale` reshaped,
looks a relative position bias up through an int64 index buffer (Swin) and scales
attention scores by `softplus(param)`. It is exported with `torch.export` (dynamic batch)
and traced with `torch.jit.trace` under `no_grad`. Each ONNX file must pass
`onnx.checker.check_model(full_check=True)`, hold no op ATC refuses, match torch eager in
onnxruntime at batch 1, 3 and 8 from one file, and compute nothing from initializers alone:
every node reads a value that depends on the input, the folded tensors are initializers, and
the raw parameters they were computed from (and the index buffer) are not written.
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
import param_ops  # noqa: E402

CHW = param_ops.CHW
TRACE_BATCH = 2
# Nodes ATC refuses, or that would compute what the export must fold (only parameters pass
# through a softplus or a training-mode BatchNorm here).
BANNED = {"Identity", "Shape", "ConstantOfShape", "Expand", "NonZero", "Loop", "If", "Gather",
          "Unsqueeze", "BatchNormalization", "Softplus"}
# Folded: the standardised stem weight, the bias gathered per head.
FOLDED_SHAPES = [[8, 3, 3, 3], [1, param_ops.HEADS, 16, 16]]


def export(kind, model, tmp_path):
    if kind == "pt2":
        archive = tmp_path / "param_ops.pt2"
        common.export_pt2(model, CHW, True, archive)
    else:
        archive = tmp_path / "param_ops.pt"
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            traced = torch.jit.trace(model, torch.randn(TRACE_BATCH, *CHW))
        torch.jit.save(traced, str(archive))
    out = tmp_path / "param_ops.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", out))
    return out


def constant_only_nodes(graph):
    """The nodes whose every input is an initializer (or computed from initializers
    alone): a subgraph the export should have folded."""
    live = {i.name for i in graph.input}
    folded = []
    for node in graph.node:  # ONNX nodes are in topological order
        if any(i in live for i in node.input):
            live.update(node.output)
        else:
            folded.append(f"{node.op_type}({', '.join(node.input)})")
    return folded


@pytest.mark.parametrize("kind", ["pt2", "trace"])
def test_parameter_only_subgraphs_are_folded_into_initializers(kind, tmp_path):
    model = param_ops.build(seed=3)
    out = export(kind, model, tmp_path)
    proto = onnx.load(str(out))
    onnx.checker.check_model(proto, full_check=True)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 11)]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    ops = [n.op_type for n in proto.graph.node]
    assert not set(ops) & BANNED, ops
    assert constant_only_nodes(proto.graph) == []
    initializers = {i.name: list(i.dims) for i in proto.graph.initializer}
    for shape in FOLDED_SHAPES:
        assert shape in initializers.values(), (shape, initializers)
    # Only the folded results are written, not what they were computed from.
    for raw in ("stem.weight", "conv.weight", "gamma", "scale", "attention.table",
                "attention.index", "attention.temperature"):
        assert raw not in initializers, (raw, initializers)
    assert all(i.data_type == onnx.TensorProto.FLOAT for i in proto.graph.initializer
               if list(i.dims) in FOLDED_SHAPES)
    check_parity(model, out, CHW, torch.Generator().manual_seed(7))
