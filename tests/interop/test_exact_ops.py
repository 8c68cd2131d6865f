"""`ckpt to-onnx` on ops whose result needs no randomness and no complex tensor even
though their family does: dropouts that draw no mask (out of training, or with
probability 0 or 1), the `torch.fft` transforms whose result is real (`irfft*`, `hfft*`
with torch's `n`/`s`, `dim` and `norm`, `fftshift`/`ifftshift`), and adaptive max pooling
with its indices (torch's scan: ties, NaN, −inf-only windows, unbatched inputs),
fractional max pooling by samples held in a buffer (static programs; a dynamic batch is
refused by name),
`argsort` (NaN last ascending and first descending, ties in input order),
`nansum`/`nanmean`, `all`/`any`/`count_nonzero`, sums, products and extremes of masks and integers, `>=`/`<=`/`!=` with NaN, integer powers, products and sums of masks, `one_hot` of computed indices, `angle` and `isreal` of real inputs, and antialiased bilinear and bicubic
resampling (torch's filters as one MatMul per axis), `softplus` at any threshold, the
`unbiased=` overloads of `std`/`var`/`std_mean`/`var_mean`, and a static program whose output
is a constant torch computes without reading the input (`new_zeros`, `full_like`,
`ones_like(dtype=...)`, `fill`), and `prod` (ATC's operator list has no `ReduceProd`). Each
module is exported with a dynamic batch, converted, and judged as the OpInfo sweep judges
a sample (`_opinfo.check_file`: full ONNX check, opset 11, ATC-clean, onnxruntime equal to
torch eager) at two batch sizes, on inputs holding special values; a random dropout and an
FFT along the batch are refused by name.
"""
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F

import _opinfo
from _util import ok, run_ckpt

SPECIAL = (float("nan"), float("inf"), float("-inf"), -0.0, 0.0, -1.5)


def inputs(shape, seed):
    """Two inputs of `shape` (batch first) at batch sizes 2 and 5, special values planted."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for batch in (2, 5):
        x = torch.randn(batch, *shape, generator=gen)
        flat = x.view(-1)
        flat[: len(SPECIAL)] = torch.tensor(SPECIAL)
        out.append(x)
    return out


def convert(fn, xs, tmp_path):
    module = _opinfo.OpModule(fn).eval()
    program = torch.export.export(module, (xs[0],),
                                  dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(program, str(archive))
    return module, archive, out


DROPOUTS = {
    "dropout p=0": (lambda x: F.dropout(x, 0.0, True), (3, 4)),
    "dropout p=1": (lambda x: F.dropout(x, 1.0, True), (3, 4)),
    "dropout2d p=1": (lambda x: F.dropout2d(x, 1.0, True), (3, 4, 4)),
    "alpha_dropout p=1": (lambda x: F.alpha_dropout(x, 1.0, True), (3, 4)),
    "feature_alpha_dropout p=0": (lambda x: F.feature_alpha_dropout(x, 0.0, True),
                                  (3, 4, 4)),
    "feature_alpha_dropout p=1": (lambda x: F.feature_alpha_dropout(x, 1.0, True),
                                  (3, 4, 4)),
}


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_without_a_mask_matches_torch(name, tmp_path):
    fn, shape = DROPOUTS[name]
    xs = inputs(shape, 5)
    module, archive, out = convert(fn, xs, tmp_path)
    ok(run_ckpt("to-onnx", archive, "-o", out))
    why = _opinfo.check_file(out, module, xs)
    assert why is None, why
    # Zeros keep the input's sign, as torch's `input * 0` does.
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: xs[1].numpy()})[0]
    assert np.array_equal(np.signbit(got), np.signbit(module(xs[1]).numpy()))


def test_a_dropout_that_draws_a_mask_is_refused(tmp_path):
    xs = inputs((3, 4), 6)
    _, archive, out = convert(lambda x: F.dropout(x, 0.5, True), xs, tmp_path)
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "probability 0.5 is in training mode" in proc.stderr, proc.stderr
    assert not Path(out).exists()


def planted(shape, seed, values):
    """Inputs of `shape` at batch sizes 2 and 5, integers (so that ties occur) with `values`
    planted at the start of each."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for batch in (2, 5):
        x = torch.randint(-3, 4, (batch, *shape), generator=gen).float()
        x.view(-1)[: len(values)] = torch.tensor(values)
        out.append(x)
    return out


FFTS = {
    "irfft n=10 dim=1 ortho": (lambda x: torch.fft.irfft(x, n=10, dim=1, norm="ortho"),
                               (6, 7)),
    "irfft n=7": (lambda x: torch.fft.irfft(x, n=7), (6, 7)),
    "irfft forward": (lambda x: torch.fft.irfft(x, norm="forward"), (3, 5)),
    "hfft dim=-2": (lambda x: torch.fft.hfft(x, dim=-2), (6, 7)),
    "irfft2 s=(3, 10)": (lambda x: torch.fft.irfft2(x, s=(3, 10)), (6, 7)),
    "hfft2 ortho": (lambda x: torch.fft.hfft2(x, norm="ortho"), (6, 7)),
    "irfftn three axes": (lambda x: torch.fft.irfftn(x, dim=(1, 2, 3)), (3, 4, 5)),
    "hfftn s=(4, -1) forward": (lambda x: torch.fft.hfftn(x, s=(4, -1), norm="forward"),
                                (3, 4, 5)),
    "fftshift": (lambda x: torch.fft.fftshift(x, dim=(1, 2)), (5, 6)),
    "ifftshift": (lambda x: torch.fft.ifftshift(x, dim=-1), (5, 7)),
}


@pytest.mark.parametrize("name", FFTS)
def test_real_valued_ffts_match_torch(name, tmp_path):
    fn, shape = FFTS[name]
    # A NaN makes its whole transformed line NaN, as in torch; −0 is an ordinary zero.
    xs = [x * 0.5 for x in planted(shape, 7, (float("nan"), -0.0))]
    module, archive, out = convert(fn, xs, tmp_path)
    ok(run_ckpt("to-onnx", archive, "-o", out))
    why = _opinfo.check_file(out, module, xs)
    assert why is None, why


def test_an_fft_along_the_batch_is_refused(tmp_path):
    xs = inputs((3, 4), 8)
    _, archive, out = convert(lambda x: torch.fft.irfftn(x, dim=(0, 2)), xs, tmp_path)
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "fft_irfftn" in proc.stderr and "mixes samples" in proc.stderr, proc.stderr


POOLS = {
    "1d": (lambda x: F.adaptive_max_pool1d(x, 3, True), (2, 7)),
    "2d uneven": (lambda x: F.adaptive_max_pool2d(x, (3, 2), True), (2, 5, 7)),
    "2d upsampled": (lambda x: F.adaptive_max_pool2d(x, (6, 4), True), (2, 4, 3)),
    "2d unbatched": (lambda x: F.adaptive_max_pool2d(x, 3, True), (4, 5)),
    "3d": (lambda x: F.adaptive_max_pool3d(x, (2, 3, 2), True), (2, 4, 5, 3)),
}


@pytest.mark.parametrize("name", POOLS)
def test_adaptive_max_pool_indices_are_torchs(name, tmp_path):
    fn, shape = POOLS[name]
    inf = float("inf")
    # Ties (integers), a NaN, and a corner of −inf alone.
    xs = planted(shape, 9, (-inf, -inf, -inf, float("nan")))
    module, archive, out = convert(fn, xs, tmp_path)
    ok(run_ckpt("to-onnx", archive, "-o", out))
    why = _opinfo.check_file(out, module, xs)
    assert why is None, why


class FractionalPool(torch.nn.Module):
    """`F.fractional_max_pool*d` by samples held as a buffer (the windows are constants)."""

    def __init__(self, rank, kernel, out, planes, batch, expanded=False):
        super().__init__()
        gen = torch.Generator().manual_seed(16)
        self.register_buffer("samples", torch.rand(batch, planes, rank, generator=gen))
        self.rank, self.kernel, self.out, self.expanded = rank, kernel, out, expanded

    def forward(self, x):
        pool = F.fractional_max_pool2d if self.rank == 2 else F.fractional_max_pool3d
        # Expanded over a batch of any size: the same samples for every sample.
        samples = self.samples.expand(x.shape[0], -1, -1) if self.expanded else self.samples
        return pool(x, self.kernel, output_size=self.out, return_indices=True,
                    _random_samples=samples)


FRACTIONAL = {
    "2d": ((2, 3, (2, 3), 3, 2), (2, 3, 9, 8)),
    "2d unbatched": ((2, 2, 4, 3, 1), (3, 7, 9)),
    "3d": ((3, (2, 1, 2), (3, 4, 2), 2, 2), (2, 2, 6, 5, 5)),
}


@pytest.mark.parametrize("name", FRACTIONAL)
def test_fractional_max_pool_by_given_samples_matches_torch_in_a_static_program(name, tmp_path):
    (rank, kernel, out_size, planes, batch), shape = FRACTIONAL[name]
    module = FractionalPool(rank, kernel, out_size, planes, batch).eval()
    # Ties (integers), a NaN and ±inf among the values.
    gen = torch.Generator().manual_seed(17)
    x = torch.randint(-3, 4, shape, generator=gen).float()
    x.view(-1)[:3] = torch.tensor([float("inf"), float("-inf"), float("nan")])
    program = torch.export.export(module, (x,))
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(program, str(archive))
    ok(run_ckpt("to-onnx", archive, "-o", out, "--batch", "static"))
    why = _opinfo.check_file(out, module, [x])
    assert why is None, why


def test_fractional_max_pool_under_a_dynamic_batch_is_refused_by_name(tmp_path):
    module = FractionalPool(2, 2, (3, 3), 3, 1, expanded=True).eval()
    x = torch.randn(2, 3, 8, 8)
    program = torch.export.export(module, (x,),
                                  dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(program, str(archive))
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "fractional_max_pool2d" in proc.stderr and "--batch static" in proc.stderr


SPECIAL_VALUES = (float("nan"), float("inf"), float("-inf"), -0.0, 0.0, float("nan"))
OTHERS = {
    "argsort stable": (lambda x: torch.argsort(x, dim=-2, stable=True), (4, 6)),
    "argsort descending stable": (
        lambda x: torch.argsort(x, dim=1, descending=True, stable=True), (6, 3)),
    "nansum": (lambda x: torch.nansum(x, dim=-1), (3, 6)),
    "nanmean keepdim": (lambda x: torch.nanmean(x, dim=(1, 2), keepdim=True), (2, 3)),
    "angle": (torch.angle, (3, 4)),
    "isreal": (torch.isreal, (3, 4)),
    # ReduceProd is off the ATC list: a Split and a tree of Muls, NaN, ±inf and −0 through it.
    "prod dim 1": (lambda x: torch.prod(x, 1), (7, 3)),
    "prod dim -1 keepdim": (lambda x: x.prod(-1, keepdim=True), (3, 5)),
    "prod dim 2 of 4-d": (lambda x: x.prod(2), (2, 6, 3)),
    # all/any/count_nonzero of a mask or an integer tensor: only zero or not counts.
    "all of a mask": (lambda x: (x > 0).all(-1), (3, 6)),
    "any of a mask": (lambda x: (x < 0).any(1, keepdim=True), (3, 6)),
    "all of int64": (lambda x: torch.nan_to_num(x).long().all(-1), (3, 6)),
    "count_nonzero of int32": (lambda x: torch.count_nonzero(torch.nan_to_num(x).int(), -1),
                               (3, 6)),
    # Sums, products and extremes of masks and integers, in torch's element types (a
    # sequence's length from its attention mask: `mask.sum(-1)`, int64).
    "sum of a mask": (lambda x: (x > 0).sum(-1), (3, 6)),
    "sum of a mask over two dims, as float32": (
        lambda x: (x == x).sum((1, 2), dtype=torch.float32), (2, 3)),
    "sum of int32": (lambda x: torch.nan_to_num(x, 0.0, 9.0, -9.0).int().sum(1), (3, 6)),
    "prod of int64": (lambda x: torch.nan_to_num(x, 0.0, 2.0, -2.0).long().prod(-1), (3, 6)),
    "amax of int64": (lambda x: torch.nan_to_num(x, 0.0, 9.0, -9.0).long().amax(-1), (3, 6)),
    "amin of a mask, kept": (lambda x: (x >= 0).amin(1, keepdim=True), (3, 6)),
    # Opset 11 has no GreaterOrEqual/LessOrEqual; a comparison with NaN is false but `!=`.
    "ge of a number": (lambda x: x >= 0.5, (3, 6)),
    "le of two tensors": (lambda x: x <= x.flip(-1), (3, 6)),
    "ne of two tensors": (lambda x: x != x.flip(-1), (3, 6)),
    # Integer powers multiplied out in the integer type (wrapping as torch's), and the
    # product and sum of masks (their `and` and `or`).
    "int64 squared": (lambda x: torch.nan_to_num(x, 0.0, 3.0, -3.0).long() ** 2, (3, 6)),
    "int32 to the 5th, wrapping": (
        lambda x: (torch.nan_to_num(x, 0.0, 3.0, -3.0) * 40).int() ** 5, (3, 6)),
    "int64 to the 0th": (lambda x: torch.nan_to_num(x).long() ** 0, (3, 6)),
    "product of masks": (lambda x: (x > 0) * (x < 2), (3, 6)),
    "sum of masks": (lambda x: (x > 0) + (x < -1), (3, 6)),
    "one_hot of computed indices": (
        lambda x: F.one_hot(torch.nan_to_num(x).long().clamp(0, 3), 4), (3, 6)),
}
RESAMPLES = {
    "bilinear aa down": (lambda x: F.interpolate(x, size=(3, 5), mode="bilinear",
                                                 antialias=True), (3, 10, 12)),
    "bilinear aa factors, corners": (
        lambda x: F.interpolate(x, scale_factor=(1.7, 0.45), mode="bilinear",
                                antialias=True, align_corners=True), (2, 6, 9)),
    "bicubic aa": (lambda x: F.interpolate(x, size=(4, 7), mode="bicubic", antialias=True),
                   (2, 9, 5)),
}


@pytest.mark.parametrize("name", RESAMPLES)
def test_antialiased_resampling_matches_torch(name, tmp_path):
    fn, shape = RESAMPLES[name]
    xs = inputs(shape, 12)
    xs = [torch.nan_to_num(x, nan=0.5, posinf=2.0, neginf=-2.0) for x in xs]
    module, archive, out = convert(fn, xs, tmp_path)
    ok(run_ckpt("to-onnx", archive, "-o", out))
    why = _opinfo.check_file(out, module, xs)
    assert why is None, why


@pytest.mark.parametrize("name", OTHERS)
def test_ops_torch_decomposes_match_torch(name, tmp_path):
    fn, shape = OTHERS[name]
    # Ties (integers), NaN, ±inf and signed zeros; a row of NaN alone for nanmean.
    xs = planted(shape, 11, SPECIAL_VALUES)
    if name.startswith("nanmean"):
        for x in xs:
            x[0] = float("nan")
    module, archive, out = convert(fn, xs, tmp_path)
    ok(run_ckpt("to-onnx", archive, "-o", out))
    why = _opinfo.check_file(out, module, xs)
    assert why is None, why


SOFTPLUS = {
    "beta 3 threshold 0.2": (3.0, 0.2),
    "beta 0.5 threshold 2": (0.5, 2.0),
    "beta 1 threshold 1": (1.0, 1.0),
    "beta 2 threshold 20": (2.0, 20.0),
}


@pytest.mark.parametrize("name", SOFTPLUS)
def test_softplus_switches_to_x_above_the_threshold_as_torch_does(name, tmp_path):
    beta, threshold = SOFTPLUS[name]
    fn = lambda x: F.softplus(x, beta=beta, threshold=threshold)  # noqa: E731
    xs = inputs((4, 7), 13)
    for x in xs:
        # Values either side of the switch, and on it.
        x[0, 0, :3] = torch.tensor([threshold / beta, threshold / beta + 1e-3, 40.0])
    module, archive, out = convert(fn, xs, tmp_path)
    ok(run_ckpt("to-onnx", archive, "-o", out))
    why = _opinfo.check_file(out, module, xs)
    assert why is None, why


def convert_static(fn, x, tmp_path):
    module = _opinfo.OpModule(fn).eval()
    program = torch.export.export(module, (x,))
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(program, str(archive))
    ok(run_ckpt("to-onnx", archive, "-o", out, "--batch", "static"))
    return module, out


STATIC = {
    "new_zeros": (lambda x: x.new_zeros((2, 3)), (5,)),
    "new_full": (lambda x: x.new_full((1, 1, 4), -2.5), (3, 2)),
    "full_like 0-d": (lambda x: torch.full_like(x, 7.25), ()),
    "ones_like float32": (lambda x: torch.ones_like(x, dtype=torch.float32), (6,)),
    "zeros_like int64": (lambda x: torch.zeros_like(x, dtype=torch.int64), (2, 3)),
    "ones_like bool": (lambda x: torch.ones_like(x, dtype=torch.bool), (4,)),
    "fill True": (lambda x: torch.fill(x, True), (5,)),
    "std unbiased": (lambda x: torch.std(x, unbiased=True), (6,)),
    "var biased": (lambda x: torch.var(x, False), (2, 3)),
    "std_mean unbiased": (lambda x: torch.std_mean(x, True), (5,)),
    "var_mean biased": (lambda x: torch.var_mean(x, False), (3, 4)),
    "prod of every entry": (lambda x: torch.prod(x), (3, 4)),
    "prod along dimension 0": (lambda x: torch.prod(x, 0, keepdim=True), (5, 2)),
}


@pytest.mark.parametrize("name", STATIC)
def test_a_static_program_of_constants_and_whole_tensor_moments_matches_torch(name, tmp_path):
    fn, shape = STATIC[name]
    gen = torch.Generator().manual_seed(14)
    x = torch.randn(shape, generator=gen)
    module, out = convert_static(fn, x, tmp_path)
    # The input's values are never read for a constant: inf and NaN change nothing.
    special = torch.full(shape, float("nan")) if x.dim() == 0 else x.clone()
    if x.dim():
        special.view(-1)[:2] = torch.tensor([float("inf"), float("nan")])[: special.numel()]
    checked = [x] if name.startswith(("std", "var")) else [x, special]
    for y in checked:
        why = _opinfo.check_file(out, module, [y])
        assert why is None, why


def test_a_constant_output_of_a_dynamic_batch_program_is_refused_by_name(tmp_path):
    xs = inputs((3,), 15)
    module, archive, out = convert(lambda x: x.new_zeros((2, 3)), xs, tmp_path)
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "does not depend on the input" in proc.stderr and "--batch static" in proc.stderr
