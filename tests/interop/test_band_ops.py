"""Ops that zero, replace or gate part of their input, lowered (not evaluated: the input is
the model's), on inputs with NaN, infinities and values on each band's edge, with a dynamic
batch, judged in onnxruntime against torch eager (`_opinfo.check_file`: ATC-clean, opset
11, torch's shapes, dtypes and values, NaN where torch has NaN, at two batch sizes).

torch's kernels decide the edges: hardshrink keeps NaN and zeroes `[-λ, λ]`, softshrink
moves toward zero by λ and keeps NaN, threshold keeps NaN and replaces `x <= threshold`,
tril/triu zero NaN and infinities outside the triangle, glu gates the first half by the
second's sigmoid, round with decimals scales, rounds half to even and scales back; the layout ops (pixel
shuffles, matrix transposes, view copies) carry every value, NaN and infinities included.
"""
import pytest
import torch
import torch.nn.functional as F

import _opinfo
from _util import ok, run_ckpt

EDGES = [float("nan"), float("inf"), float("-inf"), 0.5, -0.5, 1.0, -1.0, 0.0, -0.0, 2.0]


def edged(*shape, seed):
    """Normal values with `EDGES` spread over them."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    flat = x.reshape(-1)
    at = torch.randperm(flat.numel(), generator=g)[:len(EDGES)]
    flat[at] = torch.tensor(EDGES)
    return x


CASES = {
    "hardshrink": lambda t: F.hardshrink(t),
    "hardshrink_one": lambda t: F.hardshrink(t, 1.0),
    "softshrink": lambda t: F.softshrink(t),
    "softshrink_one": lambda t: F.softshrink(t, 1.0),
    "threshold": lambda t: F.threshold(t, 0.5, -3.0),
    "tril": lambda t: t.tril(),
    "triu_above": lambda t: t.triu(1),
    "tril_below": lambda t: t.tril(-1),
    "glu": lambda t: F.glu(t, -1),
    "glu_inner": lambda t: F.glu(t, 1),
    "round_decimals": lambda t: torch.round(t * 100, decimals=2),
    "round_decimals_negative": lambda t: torch.round(t * 1000, decimals=-2),
    "atleast_3d": lambda t: torch.atleast_3d(t[:, 0]),
    "pixel_shuffle": lambda t: F.pixel_shuffle(t.reshape(-1, 4, 2, 3), 2),
    "pixel_unshuffle": lambda t: F.pixel_unshuffle(t.reshape(-1, 1, 4, 6), 2),
    "pixel_shuffle_lead": lambda t: F.pixel_shuffle(t.reshape(-1, 2, 4, 3, 1), 2),
    "mT": lambda t: t.mT,
    "transpose_copy": lambda t: torch.transpose_copy(t, 1, 2),
    "unbind_copy": lambda t: torch.unbind_copy(t, 2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_band_edges_come_out_as_torch_gives_them(name, tmp_path):
    x = edged(3, 4, 6, seed=len(name))
    module = _opinfo.OpModule(CASES[name])
    archive, out = tmp_path / "m.pt2", tmp_path / "m.onnx"
    assert _opinfo.export(module, x, archive), "the batch must stay dynamic"
    ok(run_ckpt("to-onnx", archive, "-o", out))
    why = _opinfo.check_file(out, module, [x])
    assert why is None, why
