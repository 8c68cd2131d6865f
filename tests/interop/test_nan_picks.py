"""NaN through the ops that pick one value of several, exported from `.pt2` with a dynamic
batch and judged in onnxruntime against torch eager (`_opinfo.check_file`: ATC-clean,
opset 11, torch's shapes, dtypes and values, NaN where torch has NaN, at two batch
sizes).

torch's `amax`/`amin`, `max.dim`/`min.dim` and max pooling give NaN when a NaN is among
the values they compare, `argmax`/`argmin` the index of the first NaN, and `topk` ranks
NaN above every number; onnxruntime's ReduceMax/ReduceMin/MaxPool/ArgMax/ArgMin/TopK skip
NaN or rank it anywhere, so a plain lowering gives a file that differs from torch. The
inputs are drawn, not tuned: normal values with NaN and infinities sprinkled in, so that
some rows hold several NaN, some an infinity beside a NaN, some none at all.
"""
import pytest
import torch
import torch.nn.functional as F

import _opinfo
from _util import ok, run_ckpt


def sprinkled(*shape, seed, nan=0.2, inf=0.1):
    """Normal values with NaN at rate `nan` and ±inf at rate `inf`, and one row of NaN
    alone."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    draw = torch.rand(*shape, generator=g)
    x[draw < inf] = float("inf")
    x[(draw >= inf) & (draw < 1.5 * inf)] = float("-inf")
    x[draw > 1 - nan] = float("nan")
    x[0] = float("nan")
    return x


def one_nan_a_row(*shape, seed):
    """Distinct normal values, one NaN in every other row (no ties torch may order as it
    likes)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    rows = x.reshape(-1, shape[-1])
    for r in range(0, rows.shape[0], 2):
        rows[r, int(torch.randint(shape[-1], (1,), generator=g))] = float("nan")
    return x


def nan_beside_infinity(*shape, seed, sign):
    """`one_nan_a_row`, with `sign`·inf in every row too, before or after its NaN: torch
    ranks NaN above +inf, so the two are no tie."""
    x = one_nan_a_row(*shape, seed=seed)
    rows = x.reshape(-1, shape[-1])
    for r in range(rows.shape[0]):
        nan = rows[r].isnan().nonzero()
        at = (int(nan[0]) + (1 if r % 4 else -1)) % shape[-1] if len(nan) else r % shape[-1]
        rows[r, at] = sign * float("inf")
    return x


CASES = {
    "amax": (lambda t: t.amax(-1), (6, 7)),
    "amin": (lambda t: t.amin(1, keepdim=True), (6, 7)),
    "amax_two_axes": (lambda t: t.amax((1, 3)), (3, 4, 2, 5)),
    "max_dim": (lambda t: tuple(t.max(-1)), (6, 7)),
    "min_dim_keep": (lambda t: tuple(t.min(1, keepdim=True)), (4, 5, 3)),
    "argmax": (lambda t: t.argmax(-1), (6, 7)),
    "argmin": (lambda t: t.argmin(-1), (6, 7)),
    "argmax_inner_axis": (lambda t: t.argmax(1), (4, 5, 3)),
    "argmin_keep": (lambda t: t.argmin(2, keepdim=True), (4, 5, 3)),
    "max_pool1d": (lambda t: F.max_pool1d(t, 3, 2, 1), (3, 2, 9)),
    "max_pool2d": (lambda t: F.max_pool2d(t, 2), (3, 2, 6, 6)),
    "max_pool2d_ceil": (lambda t: F.max_pool2d(t, 3, 2, 1, ceil_mode=True), (3, 2, 7, 7)),
    "max_pool3d": (lambda t: F.max_pool3d(t, 2), (2, 1, 4, 4, 4)),
    # With the indices, or dilated (ATC's MaxPool computes neither): torch's scan, whose
    # index is the first maximum's, or the last NaN's.
    "max_pool2d_indices": (lambda t: tuple(F.max_pool2d(t, 3, 2, 1, return_indices=True)),
                           (3, 2, 7, 7)),
    "max_pool1d_dilated_indices": (
        lambda t: tuple(F.max_pool1d(t, 3, 1, 1, dilation=2, return_indices=True)), (3, 2, 9)),
    "max_pool3d_ceil_indices": (
        lambda t: tuple(F.max_pool3d(t, 2, 2, 1, ceil_mode=True, return_indices=True)),
        (2, 1, 5, 4, 5)),
    "max_pool2d_dilated": (lambda t: F.max_pool2d(t, 2, 1, 1, dilation=(2, 3)), (3, 2, 7, 8)),
    "max_pool2d_unbatched_indices": (lambda t: tuple(F.max_pool2d(t, 2, return_indices=True)),
                                     (3, 6, 6)),
    "clamp_min": (lambda t: t.clamp_min(0.5), (6, 7)),
    "clamp_max": (lambda t: t.clamp_max(-0.5), (6, 7)),
    # Several NaN in a row are ties whose indices torch orders as its kernel happens to:
    # the values only.
    "topk_values": (lambda t: t.topk(3, -1).values, (6, 7)),
    "topk_smallest_values": (lambda t: t.topk(3, -1, largest=False).values, (6, 7)),
}
# With at most one NaN a row and no infinities torch's indices are determined too.
# (The input of the inner-axis case has its NaN along that axis.)
UNTIED = {
    "topk": (lambda t: tuple(t.topk(3, -1)), lambda: one_nan_a_row(6, 7, seed=1)),
    "topk_smallest": (lambda t: tuple(t.topk(6, -1, largest=False)),
                      lambda: one_nan_a_row(6, 7, seed=2)),
    "topk_nan_beside_inf": (lambda t: tuple(t.topk(3, -1)),
                            lambda: nan_beside_infinity(8, 5, seed=4, sign=1)),
    "topk_smallest_nan_beside_inf": (lambda t: tuple(t.topk(5, -1, largest=False)),
                                     lambda: nan_beside_infinity(8, 5, seed=5, sign=1)),
    "topk_smallest_nan_beside_minus_inf": (lambda t: tuple(t.topk(2, -1, largest=False)),
                                           lambda: nan_beside_infinity(8, 5, seed=6, sign=-1)),
    "topk_inner_axis": (lambda t: tuple(t.topk(2, 1)),
                        lambda: one_nan_a_row(4, 3, 5, seed=3).transpose(1, 2).contiguous()),
}


def converted(module, x, tmp_path):
    archive, out = tmp_path / "m.pt2", tmp_path / "m.onnx"
    assert _opinfo.export(module, x, archive), "the batch must stay dynamic"
    ok(run_ckpt("to-onnx", archive, "-o", out))
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_nan_and_infinities_come_out_as_torch_gives_them(name, tmp_path):
    fn, shape = CASES[name]
    x = sprinkled(*shape, seed=len(name))
    assert x.isnan().any() and x.isinf().any()
    module = _opinfo.OpModule(fn)
    why = _opinfo.check_file(converted(module, x, tmp_path), module, [x])
    assert why is None, why


@pytest.mark.parametrize("name", sorted(UNTIED))
def test_topk_indices_rank_nan_first_as_torch_does(name, tmp_path):
    fn, make = UNTIED[name]
    x = make()
    module = _opinfo.OpModule(fn)
    why = _opinfo.check_file(converted(module, x, tmp_path), module, [x])
    assert why is None, why
