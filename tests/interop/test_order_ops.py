"""`ckpt to-onnx` on the ops by order along an axis: `median`/`nanmedian` (the lower of
the two middles, and the index of the value: the first NaN's where a NaN makes `median`
NaN), `quantile`/`nanquantile` with every `interpolation=`, and `msort`; and the running
and integrating ops along an axis: `logcumsumexp` (torch's log-add-exp step, infinities
and NaN included), `trapezoid`/`trapz` and `cumulative_trapezoid` at a constant spacing,
`diff` with `n = 0`, `gradient` at scalar spacings and at constant sample points (edge
orders 1 and 2). Each module is
exported with a dynamic batch (the op along a per-sample axis) or static (over the whole
tensor, or along its first dimension), converted, and judged as the OpInfo sweep judges a
sample (`_opinfo.check_file`: full ONNX check, opset 11, ATC-clean, onnxruntime equal to
torch eager), on rows holding NaN, ±inf, signed zeros and rows of NaN alone; the same ops
along the batch or over a whole batched tensor are refused by name.
"""
import pytest
import torch

import _opinfo
from _util import ok, run_ckpt

NAN, INF = float("nan"), float("inf")


def rows(shape, seed, nan_rows=True):
    """Inputs of `shape` (batch first) at batch sizes 2 and 5, distinct values (so that a
    median has one index), with special rows along the last axis: a NaN, +inf and −inf,
    −0.0 and two NaN, and (`nan_rows`) NaN alone."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    n = shape[-1]
    for batch in (2, 5):
        x = torch.randn(batch, *shape, generator=gen)
        flat = x.reshape(-1, n)
        flat[0, 1] = NAN
        flat[1, 0], flat[1, n - 1] = INF, -INF
        flat[2, 2], flat[2, 0], flat[2, n - 2] = -0.0, NAN, NAN
        if nan_rows:
            flat[3] = NAN
        out.append(flat.reshape(batch, *shape))
    return out


def convert(fn, xs, tmp_path, static=False):
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    module = _opinfo.saved_program(fn, xs[0], archive, dynamic=not static)
    batch = ("--batch", "static") if static else ()
    ok(run_ckpt("to-onnx", archive, "-o", out, *batch))
    return module, out


MODES = ("linear", "lower", "higher", "midpoint", "nearest")
PER_SAMPLE = {
    "median dim -1 with index": (lambda x: tuple(torch.median(x, -1)), (4, 7), False),
    "median dim 2 keepdim, even count": (
        lambda x: tuple(torch.median(x, 2, keepdim=True)), (4, 6), False),
    # A row of NaN alone: torch's index there is its nth_element's, so values only.
    "nanmedian dim -1": (lambda x: torch.nanmedian(x, -1).values, (4, 7), True),
    "nanmedian dim -1 with index": (lambda x: tuple(torch.nanmedian(x, -1)), (4, 7), False),
    "nanmedian dim 1 of 4-d": (lambda x: torch.nanmedian(x, 1).values, (5, 3, 4), False),
    **{f"quantile {q} {mode}": (
        lambda x, q=q, mode=mode: torch.quantile(x, q, dim=-1, interpolation=mode),
        (4, 7), True) for q in (0.0, 0.3, 0.5, 1.0) for mode in MODES},
    **{f"nanquantile {q} {mode}": (
        lambda x, q=q, mode=mode: torch.nanquantile(x, q, dim=-1, interpolation=mode),
        (4, 7), True) for q in (0.0, 0.35, 0.5, 1.0) for mode in MODES},
    "quantile dim 1 keepdim": (
        lambda x: torch.quantile(x, 0.25, dim=1, keepdim=True), (4, 6), True),
    "logcumsumexp dim -1": (lambda x: torch.logcumsumexp(x, -1), (4, 7), True),
    "logcumsumexp dim 1 of 4-d": (lambda x: torch.logcumsumexp(x * 40, 1), (5, 3, 4), False),
    "trapezoid": (torch.trapezoid, (4, 7), True),
    "trapz dx 2.5 dim 1": (lambda x: torch.trapz(x, dx=2.5, dim=1), (4, 6), True),
    "cumulative_trapezoid dx 3": (
        lambda x: torch.cumulative_trapezoid(x, dx=3, dim=-1), (4, 7), True),
    "diff n 0": (lambda x: torch.diff(x, n=0, dim=1), (4, 7), True),
}


@pytest.mark.parametrize("name", PER_SAMPLE)
def test_order_statistics_along_a_sample_axis_match_torch(name, tmp_path):
    fn, shape, nan_rows = PER_SAMPLE[name]
    xs = rows(shape, 21, nan_rows)
    module, out = convert(fn, xs, tmp_path)
    why = _opinfo.check_file(out, module, xs)
    assert why is None, why


STATIC = {
    "median of every entry": (torch.median, (5, 7)),
    "nanmedian of every entry": (torch.nanmedian, (5, 7)),
    "quantile of every entry": (lambda x: torch.quantile(x, 0.6), (6,)),
    "nanquantile of every entry, keepdim": (
        lambda x: torch.nanquantile(x, 0.6, keepdim=True, interpolation="midpoint"), (3, 4)),
    "quantile of a 0-d tensor along 0": (
        lambda x: torch.quantile(x, 0.5, dim=0, keepdim=True), ()),
    "median along dimension 0 with index": (lambda x: tuple(torch.median(x, 0)), (7, 3)),
    "msort": (torch.msort, (6, 4)),
    "msort 1-d": (torch.msort, (9,)),
    "logcumsumexp 1-d": (lambda x: torch.logcumsumexp(x, 0), (8,)),
    "logcumsumexp 0-d": (lambda x: torch.logcumsumexp(x, 0), ()),
    "trapezoid 1-d": (lambda x: torch.trapezoid(x, dx=2), (6,)),
    "cumulative_trapezoid 1-d": (torch.cumulative_trapezoid, (6,)),
    "gradient of every dimension": (torch.gradient, (5, 4)),
    "gradient edge order 2, spacings": (
        lambda x: torch.gradient(x, spacing=[2.0, 1.5, 0.5], edge_order=2), (3, 4, 5)),
    # torch.export fixes every size for gradient (its checks read them): static only.
    "gradient along 1 and 2, edge order 2": (
        lambda x: torch.gradient(x, spacing=[2.0, 0.5], dim=(1, 2), edge_order=2), (2, 3, 5)),
    "gradient of 2 entries": (lambda x: torch.gradient(x, spacing=3.0, dim=1), (4, 2)),
    # At constant sample points: uneven spacings weigh each difference.
    "gradient at sample points": (
        lambda x: torch.gradient(x, spacing=[torch.tensor([0.0, 1.0, 3.5, 4.0])], dim=1),
        (3, 4)),
    "gradient at sample points, edge order 2": (
        lambda x: torch.gradient(x, spacing=(torch.tensor([0.0, 0.5, 2.0]),
                                             torch.tensor([1.0, 2.0, 4.0, 4.5, 7.0])),
                                 dim=(0, 2), edge_order=2), (3, 2, 5)),
    "gradient at sample points of every dimension": (
        lambda x: torch.gradient(x, spacing=(torch.tensor([-1.0, 2.0]),
                                             torch.tensor([0.0, 0.25, 1.0]))), (2, 3)),
}


@pytest.mark.parametrize("name", STATIC)
def test_order_statistics_of_a_static_tensor_match_torch(name, tmp_path):
    fn, shape = STATIC[name]
    gen = torch.Generator().manual_seed(22)
    x = torch.randn(shape, generator=gen)
    module, out = convert(fn, [x], tmp_path, static=True)
    checked = [x]
    if x.dim():
        for planted in ((NAN,), (INF, -INF, -0.0), (NAN, NAN, INF)):
            y = x.clone()
            y.view(-1)[: len(planted)] = torch.tensor(planted)
            checked.append(y)
    for y in checked:
        why = _opinfo.check_file(out, module, [y])
        assert why is None, why


MIXING = {
    "median over a batched tensor": (torch.median, "reduces every dimension"),
    "quantile along the batch": (lambda x: torch.quantile(x, 0.5, dim=0), "the batch"),
    "msort along the batch": (torch.msort, "the batch"),
    "logcumsumexp along the batch": (lambda x: torch.logcumsumexp(x, 0), "the batch"),
}


@pytest.mark.parametrize("name", MIXING)
def test_order_statistics_that_mix_samples_are_refused_by_name(name, tmp_path):
    fn, reason = MIXING[name]
    xs = rows((4, 5), 23)
    module = _opinfo.OpModule(fn).eval()
    # torch's quantile bounds the count of values it sorts by 2^24.
    batch = torch.export.Dim("batch", max=1 << 24)
    program = torch.export.export(module, (xs[0],), dynamic_shapes={"x": {0: batch}})
    archive = tmp_path / "op.pt2"
    torch.export.save(program, str(archive))
    proc = run_ckpt("to-onnx", archive, "-o", tmp_path / "op.onnx")
    assert proc.returncode == 1, proc.stderr
    assert reason in proc.stderr, proc.stderr
