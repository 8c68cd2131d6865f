"""`ckpt to-onnx` on recurrent models (`nn.LSTM`, `nn.GRU`, `nn.RNN`) built by `models/rnn.py`,
exported with `torch.export` (dynamic batch) and traced with `torch.jit.trace` under
`torch.no_grad()`, against torch eager.

Each layer becomes one ONNX `LSTM`/`GRU` node (both directions in one; a tanh `nn.RNN` a
`GRU` whose update gate is held shut and reset gate open) with its weights re-laid into
ONNX's gate order, the zero initial state left out and the batch kept first
around it with Transposes and Reshapes of constant shape. A ReLU `nn.RNN` has no ATC
recurrent op: it is unrolled along its (fixed) sequence, one `Relu` per step, layer and
direction. Every file must pass
`onnx.checker.check_model(full_check=True)`, hold only ATC-clean ops (no Shape, Gather,
ConstantOfShape, Expand, Identity, Loop, If) at opset 11 with the batch a named
`dim_param`, and match torch eager in onnxruntime at batch 1, 3 and 8 from one file within
max |diff| <= 1e-4 * max(1, max |ref|).

A trace of a time-major layer (`batch_first=False` fed `x.permute(1, 0, 2)`) moves the
batch to the second dimension, which the TorchScript import cannot follow: it is refused.
So is a non-zero initial state, naming the recurrent node.
"""
import sys
from pathlib import Path

import onnx
import pytest
import torch

from _util import check_parity, ok, run_ckpt
from test_pt2 import dims

sys.path.insert(0, str(Path(__file__).resolve().parent / "models"))
import common  # noqa: E402
import rnn  # noqa: E402

FORBIDDEN = {"Shape", "Gather", "ConstantOfShape", "Expand", "Identity", "Loop", "If",
             "NonZero"}
# kind → (seed, ONNX recurrent op, how many of them: one per layer)
CASES = {
    "crnn": (31, "LSTM", 2),
    "gru": (32, "GRU", 2),
    "lstm-time-major": (33, "LSTM", 1),
    "lstm-last-state": (34, "LSTM", 2),
    # nn.RNN (tanh) has no ATC op of its own: a GRU with its gates held.
    "rnn-tanh": (36, "GRU", 2),
    "rnn-tanh-last-state": (37, "GRU", 1),
    # A ReLU nn.RNN is unrolled: 2 layers × 2 directions × 10 steps, and 1 × 1 × 10.
    "rnn-relu": (38, "Relu", 40),
    "rnn-relu-last-state": (39, "Relu", 10),
}


def check_onnx(out, shape, op, count):
    onnx.checker.check_model(str(out), full_check=True)
    proto = onnx.load(str(out), load_external_data=False)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 11)]
    ops = [n.op_type for n in proto.graph.node]
    assert not set(ops) & FORBIDDEN, sorted(set(ops))
    assert ops.count(op) == count, ops
    for node in proto.graph.node:
        if node.op_type in ("LSTM", "GRU"):
            # X, W, R (and B); never an initial state, which is zero.
            assert len(node.input) <= 4, node.input
    assert dims(proto.graph.input[0]) == ["batch", *shape]
    assert dims(proto.graph.output[0])[0] == "batch"


@pytest.mark.parametrize("kind", list(CASES))
def test_exported_program_matches_torch(kind, tmp_path):
    seed, op, count = CASES[kind]
    model, shape = rnn.build(kind, seed=seed), rnn.SHAPES[kind]
    archive = tmp_path / f"{kind}.pt2"
    common.export_pt2(model, shape, True, archive)
    out = tmp_path / f"{kind}.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", out))
    check_onnx(out, shape, op, count)
    check_parity(model, out, shape, torch.Generator().manual_seed(seed))


def trace(model, shape, path):
    with torch.no_grad():
        torch.jit.save(torch.jit.trace(model, torch.randn(2, *shape)), str(path))


@pytest.mark.parametrize("kind", ["crnn", "gru", "rnn-tanh", "rnn-relu"])
def test_no_grad_trace_matches_torch(kind, tmp_path):
    seed, op, count = CASES[kind]
    model, shape = rnn.build(kind, seed=seed), rnn.SHAPES[kind]
    traced = tmp_path / f"{kind}.pt"
    trace(model, shape, traced)
    out = tmp_path / f"{kind}.onnx"
    ok(run_ckpt("to-onnx", traced, "-o", out))
    check_onnx(out, shape, op, count)
    check_parity(model, out, shape, torch.Generator().manual_seed(seed))


def test_a_time_major_trace_is_refused_naming_batch_first(tmp_path):
    traced = tmp_path / "time-major.pt"
    trace(rnn.build("lstm-time-major", seed=35), rnn.SHAPES["lstm-time-major"], traced)
    out = tmp_path / "time-major.onnx"
    proc = run_ckpt("to-onnx", traced, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "permut" in proc.stderr or "batch_first" in proc.stderr, proc.stderr
    assert not out.exists()


class GivenState(torch.nn.Module):
    """A GRU started from a constant non-zero state (folded at a traced batch)."""

    def __init__(self):
        super().__init__()
        self.rnn = torch.nn.GRU(6, 4, batch_first=True)

    def forward(self, x):
        y, _ = self.rnn(x, torch.full((1, x.shape[0], 4), 0.5))
        return y


def test_a_non_zero_initial_state_is_refused(tmp_path):
    archive = tmp_path / "state.pt2"
    common.export_pt2(GivenState().eval(), (9, 6), False, archive)
    out = tmp_path / "state.onnx"
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "gru.input" in proc.stderr and "is not zero" in proc.stderr, proc.stderr
    assert not out.exists()
