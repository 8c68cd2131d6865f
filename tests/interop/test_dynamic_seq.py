"""`ckpt to-onnx` on a small decoder (`models/decoder.py`: GPT-2's `Conv1D` merging the
batch and the length, RoPE rows, a causal mask, a relative position bias) exported with
torch.export, a dynamic batch and a dynamic sequence length `Dim("seq", max=...)`: the
file names the length with a `dim_param`, prints an atc command with `--dynamic_dims`
profiles over `-1` dims, is opset 11 with only ops ATC parses (none of
Shape/Expand/ConstantOfShape/NonZero/Identity/Loop/If, and no Gather that reads a
computed tensor: `ckpt atc-check` runs on it), and matches torch eager in onnxruntime at
several (batch, length) pairs, the smallest and the declared maximum included, from one
file. Without a declared maximum the export is refused in one line naming it.

The same decoder traced with `torch.jit.trace` at one length exports with the length named
in `--input-shape` (`seq<=32`), matching torch at the same pairs; a trace that took the
length as a Python int (so recorded the example's) is refused, not exported at one length.
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
import decoder  # noqa: E402

BANNED = {"Shape", "Expand", "ConstantOfShape", "NonZero", "Identity", "Loop", "If"}
MAX = 32
PAIRS = ((1, 2), (3, 7), (2, 13), (4, 20), (2, MAX))
# An additive causal mask plus a relative position bias (tables growing along two axes),
# and a boolean causal mask into SDPA.
VARIANTS = {"additive_bias": dict(mask="additive", bias=True), "sdpa": dict(mask="sdpa")}


def export(model, path, max_len=MAX):
    ids = torch.randint(0, decoder.VOCAB, (2, 9), generator=torch.Generator().manual_seed(0))
    shapes = ({0: torch.export.Dim("batch"), 1: torch.export.Dim("seq", min=2, max=max_len)},)
    torch.export.save(torch.export.export(model, (ids,), dynamic_shapes=shapes), str(path))


def matches_torch_at_every_pair(model, onnx_path, label):
    """onnxruntime on the file against torch eager at every (batch, length) of PAIRS."""
    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    gen = torch.Generator().manual_seed(5)
    for b, s in PAIRS:
        ids = torch.randint(0, decoder.VOCAB, (b, s), generator=gen)
        with torch.no_grad():
            ref = model(ids).numpy()
        got = session.run(None, {session.get_inputs()[0].name: ids.numpy()})[0]
        assert got.shape == ref.shape, (got.shape, ref.shape)
        diff = float(np.abs(got - ref).max())
        tol = 1e-4 * max(1.0, float(np.abs(ref).max()))
        print(f"{label} batch {b} length {s}: max |diff| {diff:.3e} (tolerance {tol:.3e})")
        assert diff <= tol, f"batch {b} length {s}: max |diff| {diff:.3e} > {tol:.3e}"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_decoder_with_a_dynamic_length_matches_torch_at_every_batch_and_length(variant,
                                                                                 tmp_path):
    torch.manual_seed(0)
    model = decoder.Decoder(**VARIANTS[variant]).eval()
    archive, out = tmp_path / "decoder.pt2", tmp_path / "decoder.onnx"
    export(model, archive)
    proc = ok(run_ckpt("to-onnx", archive, "-o", out))
    assert '--input_shape="input:-1,-1"' in proc.stdout, proc.stdout
    assert "--dynamic_dims=" in proc.stdout, proc.stdout
    proto = onnx.load(str(out))
    onnx.checker.check_model(proto, full_check=True)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 11)]
    ops = {n.op_type for n in proto.graph.node}
    assert not ops & BANNED, sorted(ops & BANNED)
    assert ops <= atc_ops(), sorted(ops - atc_ops())
    dims = [d.dim_param for d in proto.graph.input[0].type.tensor_type.shape.dim]
    assert dims[0] == "batch" and dims[1], dims
    out_dims = [d.dim_param for d in proto.graph.output[0].type.tensor_type.shape.dim]
    assert out_dims[:2] == dims, out_dims
    matches_torch_at_every_pair(model, out, variant)


def test_a_causal_mask_without_a_declared_maximum_length_is_refused_in_one_line(tmp_path):
    torch.manual_seed(0)
    model = decoder.Decoder(mask="additive").eval()
    model.positions = torch.nn.Embedding(4096, decoder.D)  # no bound from the table either
    archive, out = tmp_path / "decoder.pt2", tmp_path / "decoder.onnx"
    export(model, archive, max_len=None)
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ckpt: error: "), proc.stderr
    assert "needs a declared maximum" in lines[0] and "Dim(..., max=...)" in lines[0], lines[0]
    assert not out.exists()


def trace(model, path):
    ids = torch.randint(0, decoder.VOCAB, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        torch.jit.save(torch.jit.trace(model, (ids,), check_trace=False), str(path))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_traced_decoder_with_a_named_length_matches_torch_at_every_batch_and_length(
        variant, tmp_path):
    torch.manual_seed(0)
    model = decoder.Decoder(**VARIANTS[variant]).eval()
    traced, out = tmp_path / "decoder.pt", tmp_path / "decoder.onnx"
    trace(model, traced)
    proc = ok(run_ckpt("to-onnx", traced, "-o", out, "--input-shape", f"seq<={MAX}"))
    assert '--input_shape="input:-1,-1"' in proc.stdout, proc.stdout
    assert "--dynamic_dims=" in proc.stdout, proc.stdout
    proto = onnx.load(str(out))
    onnx.checker.check_model(proto, full_check=True)
    ops = {n.op_type for n in proto.graph.node}
    assert not ops & BANNED and ops <= atc_ops(), sorted(ops)
    dims = [d.dim_param for d in proto.graph.input[0].type.tensor_type.shape.dim]
    assert dims == ["batch", "seq"], dims
    matches_torch_at_every_pair(model, out, f"traced {variant}")


class BakedLength(torch.nn.Module):
    """Takes the length as a Python int, so the trace records the example's 9."""

    def __init__(self):
        super().__init__()
        self.tokens = torch.nn.Embedding(decoder.VOCAB, decoder.D)
        self.positions = torch.nn.Embedding(decoder.MAX_POSITIONS, decoder.D)

    def forward(self, ids):
        length = int(ids.shape[1])
        return self.tokens(ids) + self.positions(torch.arange(length))[None]


def test_a_trace_that_baked_the_length_in_is_refused_rather_than_exported_at_one_length(
        tmp_path):
    traced, out = tmp_path / "baked.pt", tmp_path / "baked.onnx"
    trace(BakedLength().eval(), traced)
    proc = run_ckpt("to-onnx", traced, "-o", out, "--input-shape", f"seq<={MAX}")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    first = proc.stderr.strip().splitlines()[0]
    # The error names the size converted at and the op that fails there (a trace error
    # goes on with the call it is in, as every trace error does).
    assert first.startswith("ckpt: error: ") and "converted with seq=7" in first, proc.stderr
    assert "do not broadcast" in first, proc.stderr
    assert not out.exists()
    # The same trace at its recorded length exports.
    ok(run_ckpt("to-onnx", traced, "-o", out))
