"""torch's OpInfo database through `.pt2` -> `ckpt to-onnx`: a fast subset of what
scripts/opinfo-sweep runs over the whole database (docs/opinfo.md), judged the same way
(`_opinfo.py`): per op and sample ok / refused / wrong, and never a wrong file.

The subset is the ops that move, insert, remove or merge the first axis (the batch) or
work along it: `unsqueeze(0)` once gave a file whose output put the batch first where
torch puts it second. Each of them is checked on at most `MOST` of its samples, and `x.unsqueeze(0)`, `x.permute(1, 0, 2)` and friends are checked to declare their
batch `dim_param` on the dimension where torch's output has it. A few samples whose op
takes other tensors, held as constants of the program (`_opinfo.CONSTANT_ARGUMENTS`), must
convert, and the `empty` family is judged by its shapes and dtypes.
"""
from pathlib import Path

import onnx
import pytest
import torch

import _opinfo
from _util import ckpt_bin, ok, run_ckpt

# Ops that insert, remove or move axis 0, merge it, index it, or reduce along it, and a
# few element-wise ones for contrast.
SUBSET = (
    "unsqueeze", "squeeze", "squeeze.multiple", "flatten", "permute", "transpose", "t",
    "select", "narrow", "expand", "reshape", "sum", "mean", "unbind", "split", "unflatten",
    "softmax", "flip", "nn.functional.relu",
)
# Samples per op here (the sweep runs `_opinfo.MAX_SAMPLES`), evenly spaced.
MOST = 5
# Ops lowered by ported torch decompositions (element-wise rules with NaN/inf/-0 edges,
# layouts, reductions, splits, values the same for every sample), each with a sample of
# the database it must convert, or a tuple of them (`docs/opinfo.md` has them all).
DECOMPOSED = {
    "trunc": 0, "nan_to_num": 0, "logit": 1, "nn.functional.logsigmoid": 0,
    "logsumexp": 1, "all": 10, "rot90": 4, "tensor_split": 5, "linalg.vector_norm": 90,
    "torch.ops.aten._safe_softmax.default": 0,
    "var_mean": 2, "zeros_like": 1,
    # torch's references: diag_embed's pad, permutation and diagonal mask; channel_shuffle's
    # split and swap; aliases (`divide` under masked.normalize); adaptive pooling of
    # unbatched inputs and over uneven windows; an exact int64 sum of a constant mask.
    "diag_embed": 1, "nn.functional.channel_shuffle": 1, "masked.normalize": 15,
    "nn.functional.adaptive_avg_pool1d": 1, "nn.functional.adaptive_avg_pool3d": 1,
    "nn.functional.adaptive_max_pool1d": 3, "nn.functional.adaptive_max_pool2d": (6, 18),
    "masked.mean": 26,
    # A running product entry by entry.
    "cumprod": 1,
    # Padding in every mode over any axes (circular after a crop, reflect over three axes,
    # a replicate pad that crops a whole axis).
    "nn.functional.pad.circular": 7, "nn.functional.pad.reflect": 9,
    "nn.functional.pad.replicate_negative": 2,
    # Max pooling whose indices are read (ATC's MaxPool has none): torch's window scan, on
    # a batch and on an unbatched input.
    "nn.functional.max_pool2d": 720, "nn.functional.max_pool3d": 432,
    # Average pooling by divisor_override: window sums (a depthwise Conv of ones) divided.
    "nn.functional.avg_pool2d": 2, "nn.functional.avg_pool3d": 1,
    # Scale factors whose output sizes torch floors: sources at 1 / factor.
    "nn.functional.interpolate.bicubic": 12, "nn.functional.upsample_nearest": 6,
    # nearest-exact (ATC's Resize never reads nearest_mode): a MatMul picking the samples.
    "nn.functional.interpolate.nearest-exact": 20,
    # Deterministic dropouts in training mode (p = 0: the input; p = 1: the input times 0).
    "nn.functional.dropout": 4, "nn.functional.feature_alpha_dropout.with_train": 3,
    # Real-valued FFTs as MatMuls by cos/sin matrices, and shifts as rolls.
    "fft.irfft": 0, "fft.hfftn": 0, "fft.fftshift": 2,
    # Adaptive max pooling with its indices (torch's scan), argsort by pairwise ranks.
    "nn.functional.adaptive_max_pool3d": 17, "argsort": 36,
    # nansum/nanmean, and antialiased bilinear resampling as a MatMul per axis.
    "nansum": 13, "_upsample_bilinear2d_aa": 2,
    # Small matrices unrolled: LU with partial pivoting (det, inverse, a negative power),
    # Cholesky (upper), a Vandermonde matrix's cumulative products.
    "linalg.det": 7, "linalg.inv": 4, "linalg.matrix_power": 15, "cholesky": 8,
    "linalg.vander": 6,
    # LAPACK's factors and their `info`: LU of a wide matrix (pivots, P, L, U), Cholesky
    # and inverse with info, Householder QR with LAPACK's signs.
    "lu": 26, "linalg.lu": 10, "linalg.lu_factor_ex": 5, "linalg.cholesky_ex": 8,
    "linalg.inv_ex": 4, "linalg.qr": 18, "geqrf": 22,
    # Jacobi's symmetric eigenvalues and one-sided Jacobi's singular values, and what torch
    # derives from them (rank, pseudo-inverse, condition number, ord 2 and nuclear norms).
    "linalg.eigvalsh": 4, "linalg.svdvals": 18, "linalg.matrix_rank": 12,
    "linalg.matrix_rank.hermitian": 4, "linalg.pinv": 12, "linalg.pinv.hermitian": 4,
    "pinverse": 4, "linalg.cond": 1, "linalg.matrix_norm": 56, "norm.nuc": 1,
    # A product without ReduceProd (off the ATC list): halvings, two Slices and a Mul each.
    "prod": 19, "masked.prod": 55,
    # torch's special-function kernels as programs: Bessel J/Y and K, Airy, erfcx.
    "special.bessel_j0": 0, "special.modified_bessel_k1": 0, "special.airy_ai": 0,
    "special.erfcx": 0,
    # Ops picking values along an axis, as torch's named results: sort (TopK in torch's
    # order, indices by pairwise ranks), kthvalue, topk and max(dim) of a 0-d tensor,
    # cummax by torch's scan, aminmax, frexp without a bit cast, searchsorted as torch's
    # binary search unrolled, a cartesian product, native_layer_norm's mean and rstd over
    # two trailing dimensions.
    "sort": 14, "kthvalue": 7, "topk": 7, "max.reduction_with_dim": 2, "cummax": 1,
    "aminmax": 3, "frexp": 0, "searchsorted": 256, "cartesian_prod": 0,
    "native_layer_norm": 7,
}
# Ops refused for a reason in opset 11 or ATC that torch's own data gives (a tag, a
# namespace, a dtype), each with a sample and words its refusal must hold.
REFUSED = {
    "fft.rfft": (1, "opset 11 has no Fourier transform"),
    "randn_like": (1, "nondeterministic_seeded"),
    "cfloat": (2, "opset 11 has no complex element type"),
    "linalg.eigh": (4, "LAPACK chooses each vector's sign"),
    "prod": (34, "empty tensor, which ATC does not compile"),
    # Refused one by one: the index torch's unstable sort picks, a NaN's sign bit, a row
    # count torch.export records as data-dependent.
    "mode": (0, "std::sort"),
    "signbit": (0, "no opset-11 operator reads the bits"),
    "combinations": (0, "data-dependent size"),
}

# Samples of the constant-argument population (`_opinfo.CONSTANT_ARGUMENTS`: the op's other
# tensors are buffers, constants of the program) that must convert, by their index among the
# op's samples: an index table, a mask, a second operand broadcast over the batch, a 0-d
# condition, and batch norm's running statistics and affine parameters.
CONSTANT = {
    "index_select": 2, "masked_fill": 2, "add": 4, "mul": 7, "where": 5,
    "nn.functional.batch_norm": 6,
    # torch's rules of two tensors (ported decompositions), the constant broadcast against
    # the batch: [5, 10, 5] beside [10, 5], [10, 5] beside a 0-d one.
    "hypot": 4, "logaddexp": 4, "copysign": 3, "fmax": 6, "clamp_min": 4, "isclose": 4,
    "pow": 4, "xlogy": 6, "heaviside": 2,
    # Losses (ported rules, then torch's reduction), in static programs: a weight, a
    # pos_weight, the Stirling term, a log target, three tensors.
    "nn.functional.binary_cross_entropy": 8,
    "nn.functional.binary_cross_entropy_with_logits": 22,
    "nn.functional.poisson_nll_loss": 36, "nn.functional.kl_div": 8,
    "nn.functional.margin_ranking_loss": 12, "nn.functional.huber_loss": 3,
    # Compound ops written as the ops torch computes them by: a weight and a second input
    # of bilinear, cross products, blocks, a softmax's output, a dropout mask, sample
    # points (along a per-sample dimension of a dynamic batch), test elements.
    "nn.functional.bilinear": 2, "cross": 1, "linalg.cross": 0, "block_diag": 0,
    "_softmax_backward_data": 2, "native_dropout_backward": 1, "trapz": 4,
    "cumulative_trapezoid": 5, "isin": 0, "view_as": 1,
    # Cut positions held in a tensor: the pieces' sizes torch.export leaves as symbols.
    "tensor_split": 2,
    # Losses and distances torch keeps whole, in static programs: probability targets
    # with a weight, class indices with ignore_index over a spatial input, a class weight,
    # target lists ending at -1, three tensors with swap, distances of two constants
    # folded, a negative norm order, operands broadcast, every entry's 4-norm, a linear
    # layer's cross entropy.
    "nn.functional.cross_entropy": 15, "nn.functional.nll_loss": 38,
    "nn.functional.multi_margin_loss": 6, "nn.functional.multilabel_margin_loss": 3,
    "nn.functional.cosine_embedding_loss": 1, "nn.functional.triplet_margin_loss": 3,
    "nn.functional.triplet_margin_with_distance_loss": 3,
    "nn.functional.pairwise_distance": 5, "nn.functional.cosine_similarity": 6,
    "dist": 25, "nn.functional.linear_cross_entropy": 89,
    # Unpooling by constant indices that do not repeat a position, in static programs.
    "nn.functional.max_unpool1d": 18, "nn.functional.max_unpool2d.grad": 4,
    "nn.functional.max_unpool3d.grad": 3,
    # Searches in constant boundaries (a dynamic batch), and of constant values in the input
    # row by row through a constant sorter.
    "bucketize": 9, "searchsorted": 170,
    # Quantiles at a constant q, stacked in front of a dynamic batch, or of a static tensor.
    "quantile": 56, "nanquantile": 45,
    # scatter's deprecated reduce (multiply) by a constant index, static.
    "scatter": 20,
    # Segments by constant lengths or offsets (a mean from `initial`), and a histogram by
    # constant edges, in static programs.
    "_segment_reduce.lengths": 22, "_segment_reduce.offsets": 0, "histogram": 121,
    # gradient at constant sample points (edge order 2), static.
    "gradient": 7,
    # Solves by constant matrices (a stack of them beside the static right-hand sides), and
    # stacks of activation reflectors applied to a constant and multiplied out, in static
    # programs.
    "cholesky_solve": 9, "lu_solve": 6, "triangular_solve": 6, "ormqr": 126,
    "linalg.householder_product": 3,
    # A triangular solve by an activation factor (unrolled) of a constant right-hand side.
    "linalg.solve_triangular": 54,
    # Fractional max pooling by given samples (a buffer), static, with its indices.
    "nn.functional.fractional_max_pool2d": 36,
    # Grid sampling at a constant grid (taps computed at export), static: a volume too.
    "nn.functional.grid_sample": 22, "grid_sampler_3d": 18,
    # A computed table looked up by constant ids, and bags of its rows cut by constant
    # offsets (a padding id counted from the end), static.
    "nn.functional.embedding": 3, "nn.functional.embedding_bag": 18,
}

_OPS = None


def op_named(name):
    global _OPS
    if _OPS is None:
        _OPS = {_opinfo.op_key(op): op for op in _opinfo.load_op_db()}
    return _OPS[name]


@pytest.mark.parametrize("name", SUBSET)
def test_no_opinfo_sample_gives_a_wrong_file(name):
    results, _ = _opinfo.run_op(Path(ckpt_bin()), op_named(name), most=MOST)
    assert results, f"{name}: no sample in the population"
    wrong = [f"#{r.sample} {r.shape} ({r.args}): {r.detail}" for r in results
             if r.verdict == "wrong"]
    assert not wrong, "\n".join(wrong)
    # A refusal is one line naming the reason.
    for r in results:
        if r.verdict == "refused":
            assert r.detail and "\n" not in r.detail


@pytest.mark.parametrize("name", DECOMPOSED)
def test_decomposed_ops_convert_exactly(name):
    wanted = DECOMPOSED[name]
    wanted = set(wanted) if isinstance(wanted, tuple) else {wanted}
    results, _ = _opinfo.run_op(Path(ckpt_bin()), op_named(name), only=wanted)
    assert [r.verdict for r in results] == ["ok"] * len(wanted), [
        f"#{r.sample} {r.shape} ({r.args}): {r.verdict} {r.detail}" for r in results]


@pytest.mark.parametrize("name", CONSTANT)
def test_constant_tensor_arguments_convert_exactly(name):
    results, _ = _opinfo.run_op(Path(ckpt_bin()), op_named(name), only={CONSTANT[name]},
                                population=_opinfo.CONSTANT_ARGUMENTS)
    assert [r.verdict for r in results] == ["ok"], [
        f"#{r.sample} {r.shape} ({r.args}): {r.verdict} {r.detail}" for r in results]


@pytest.mark.parametrize("name", ["new_empty_strided", "empty_like", "new_empty"])
def test_the_empty_family_is_judged_by_shapes_and_dtypes_alone(name):
    # Their values are whatever memory holds: compared, a 0-d sample would flake as wrong.
    assert _opinfo.unspecified_values(name)
    results, _ = _opinfo.run_op(Path(ckpt_bin()), op_named(name))
    assert "ok" in {r.verdict for r in results}, [(r.sample, r.detail) for r in results]
    wrong = [f"#{r.sample} {r.shape} ({r.args}): {r.detail}" for r in results
             if r.verdict == "wrong"]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("name", REFUSED)
def test_refusals_name_their_opset_11_or_atc_reason(name):
    index, words = REFUSED[name]
    results, _ = _opinfo.run_op(Path(ckpt_bin()), op_named(name), only={index})
    assert [r.verdict for r in results] == ["refused"], [r.detail for r in results]
    assert words in results[0].detail, results[0].detail


def test_the_mixing_classifier_tells_a_reduction_over_the_batch_from_one_beside_it():
    x = torch.randn(4, 3)
    assert _opinfo.mixes_batch(lambda t: t.sum(0), x) is True
    assert _opinfo.mixes_batch(lambda t: t.sum(1), x) is False
    assert _opinfo.mixes_batch(lambda t: t.unsqueeze(0), x) is False
    assert _opinfo.mixes_batch(lambda t: t.cumsum(0), x) is True
    assert _opinfo.mixes_batch(lambda t: t.new_zeros(2, 5), x) is False
    assert _opinfo.mixes_batch(lambda t: t.flatten(), x) is False
    assert _opinfo.mixes_batch(lambda t: t.t().flatten(), x) is False
    assert _opinfo.mixes_batch(lambda t: t.unsqueeze(-1).expand(4, 3, 2).transpose(0, 2), x) is False


def test_an_op_that_treats_rows_by_their_place_mixes_the_batch():
    x = torch.randn(4, 4)
    assert _opinfo.mixes_batch(lambda t: t.flip(0), x) is True
    assert _opinfo.mixes_batch(lambda t: t.diagonal(), x) is True
    assert _opinfo.mixes_batch(lambda t: t.tril(), x) is True
    assert _opinfo.mixes_batch(lambda t: t.triu(1), x) is True
    assert _opinfo.mixes_batch(lambda t: t.tril(), torch.randn(4, 3, 3)) is False
    assert _opinfo.mixes_batch(lambda t: t.roll(2, 0), x) is True
    assert _opinfo.mixes_batch(lambda t: torch.fft.fftshift(t, 0), torch.randn(5, 3)) is True
    assert _opinfo.mixes_batch(lambda t: t.roll(1, 1), x) is False


def test_a_single_row_is_judged_with_a_second_one_and_an_empty_input_not_at_all():
    one = torch.randn(1, 2, 3)
    assert _opinfo.mixes_batch(lambda t: t.sum(), one) is True
    training = lambda t: torch.nn.functional.batch_norm(t, None, None, training=True)  # noqa: E731
    assert _opinfo.mixes_batch(training, one) is True
    assert _opinfo.mixes_batch(lambda t: t.softmax(-1), one) is False
    assert _opinfo.mixes_batch(lambda t: t.view(6), one) is None  # takes one row only
    assert _opinfo.mixes_batch(lambda t: t.flip(0), torch.randn(5, 0, 4)) is None
    assert _opinfo.mixes_batch(lambda t: t * 2, torch.tensor(1.0)) is None


class Layouts(torch.nn.Module):
    def forward(self, x):
        return (x.unsqueeze(0), x.permute(1, 0, 2), x.transpose(0, 2), x.unsqueeze(-1),
                x[None, :, None], x)


def test_outputs_keep_torchs_layout_with_the_batch_where_torch_has_it(tmp_path):
    x = torch.randn(3, 4, 5)
    program = torch.export.export(Layouts(), (x,),
                                  dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    archive, out = tmp_path / "layouts.pt2", tmp_path / "layouts.onnx"
    torch.export.save(program, str(archive))
    proc = ok(run_ckpt("to-onnx", archive, "-o", out))
    assert "`output_0` [1, batch, 4, 5]" in proc.stderr, proc.stderr
    model = onnx.load(str(out))
    dims = [[d.dim_param or d.dim_value for d in o.type.tensor_type.shape.dim]
            for o in model.graph.output]
    assert dims == [[1, "batch", 4, 5], [4, "batch", 5], [5, 4, "batch"],
                    ["batch", 4, 5, 1], [1, "batch", 1, 4, 5], ["batch", 4, 5]]
    why = _opinfo.check_file(out, Layouts(), [x, torch.randn(7, 4, 5)])
    assert why is None, why
