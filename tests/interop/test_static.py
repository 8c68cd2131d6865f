"""`ckpt to-onnx --batch static` on programs exported at fixed sizes (no `dynamic_shapes`),
judged as every export is (`_opinfo.check_file`: full ONNX check, opset 11, ATC-clean,
torch eager's shapes, dtypes and values in onnxruntime): ops along the first axis (a
select of row 0, a sum, a softmax, a cat, an unbind, a repeat with leading repeats), 0-d
inputs and constants (reductions, picks, softmaxes, running sums and products, squeezes,
transposes and unfolds along their dimension 0, as torch wraps it) and 1-D inputs (`linspace`/`logspace` from a 0-d input, `meshgrid` of 0-d and
1-D ones); every dimension
of the file is fixed; constants of the input's whole rank, with more rows than it or with
more dimensions broadcast as torch broadcasts them. A program that declares a dynamic dimension is refused in static
mode with one line naming it, and the same fixed-size programs are still refused under the
default dynamic batch, where they mix samples.
"""
import onnx
import pytest
import torch

import _opinfo
from _util import ok, run_ckpt


CASES = {
    "select_row_0": (lambda x: x[0] * 2, (1, 3, 4)),
    "sum_axis_0": (lambda x: x.sum(0), (3, 4)),
    "sum_all_1d": (lambda x: x.sum(), (5,)),
    "mean_all": (lambda x: x.mean(), (2, 3)),
    "softmax_axis_0": (lambda x: x.softmax(0), (3, 4)),
    "cat_axis_0": (lambda x: torch.cat([x, x * 2], 0), (3, 4)),
    "unbind_axis_0": (lambda x: x.unbind(0)[1] * 2, (3, 4)),
    "scalar_input": (lambda x: x * 3 + 1, ()),
    "vector_input": (lambda x: torch.relu(x) - 0.5, (7,)),
    "amax_axis_0": (lambda x: x.amax(0), (4, 5)),
    "var_axis_0": (lambda x: x.var(0), (5, 4)),
    "flip_axis_0": (lambda x: x.flip(0), (3, 4)),
    "expand_axis_0": (lambda x: x.expand(3, 4) + 1, (1, 4)),
    "strided_axis_0": (lambda x: x[::2] + 1, (5, 4)),
    "repeat_axis_0_and_leading": (lambda x: x.repeat(2, 3, 1), (3, 4)),
    "tile_leading": (lambda x: x.tile((2, 1, 2)) - 1, (3, 4)),
    "linspace_from_input": (lambda x: torch.linspace(x, 4, 50), ()),
    "linspace_one_point": (lambda x: torch.linspace(x, 1, 1), ()),
    "linspace_both_ends": (lambda x: torch.linspace(x, x * 3 + 1, 7), ()),
    "logspace_to_input": (lambda x: torch.logspace(-2.0, x, 5, 3.0), ()),
    "logspace_from_input": (lambda x: torch.logspace(x, 2, 4), ()),
    "meshgrid_of_one_xy": (lambda x: torch.meshgrid(x, indexing="xy"), (3,)),
    "meshgrid_of_a_0d_input": (lambda x: torch.meshgrid(x, indexing="ij"), ()),
    "meshgrid_of_three_xy": (lambda x: torch.meshgrid(x, x[:2] * 2, x + 1, indexing="xy"), (3,)),
    "meshgrid_of_two_ij": (lambda x: torch.meshgrid(x, x[:2] * 2, indexing="ij"), (3,)),
    "gram_across_rows": (lambda x: (x @ (x * 2).transpose(0, 1)).softmax(-1) @ x, (3, 4)),
    # torch wraps dimension 0 (and -1) of a 0-d tensor and computes on its one-entry view.
    "logsumexp_of_a_0d_input": (lambda x: torch.logsumexp(x, 0, keepdim=True), ()),
    "mean_of_a_0d_input_along_last": (lambda x: x.mean(-1), ()),
    "vector_norm_of_a_0d_input": (lambda x: torch.linalg.vector_norm(x, 6), ()),
    "argmax_of_a_0d_input": (lambda x: torch.argmax(x, 0, keepdim=True), ()),
    "median_of_a_0d_input": (lambda x: torch.median(x, 0), ()),
    "softmax_of_a_0d_input": (lambda x: x.softmax(0), ()),
    "softmax_of_an_infinite_0d_input": (lambda x: (x / 0).softmax(-1), ()),
    "log_softmax_of_a_0d_input_along_last": (lambda x: x.log_softmax(-1), ()),
    "softmin_of_a_0d_input": (lambda x: torch.nn.functional.softmin(x, 0), ()),
    "masked_softmax_of_a_0d_input": (lambda x: torch.masked.softmax(x, 0), ()),
    "masked_mean_of_a_0d_input_along_last": (lambda x: torch.masked.mean(x, -1), ()),
    "cumsum_of_a_0d_input": (lambda x: x.cumsum(0), ()),
    "cumprod_of_a_0d_input_along_last": (lambda x: x.cumprod(-1), ()),
    "squeeze_of_a_0d_input": (lambda x: x.squeeze(0) * 2, ()),
    "squeeze_dims_of_a_0d_input": (lambda x: x.squeeze((-1,)) * 2, ()),
    "squeeze_copy_of_a_0d_input": (lambda x: torch.squeeze_copy(x, 0), ()),
    "transpose_of_a_0d_input": (lambda x: x.transpose(0, -1) * 2, ()),
    "transpose_copy_of_a_0d_input": (lambda x: torch.transpose_copy(x, 0, 0), ()),
    "unfold_of_a_0d_input": (lambda x: x.unfold(0, 1, 1), ()),
    "unfold_copy_of_a_0d_input_along_last": (lambda x: torch.unfold_copy(x, -1, 1, 2), ()),
    "flip_of_a_0d_input": (lambda x: x.flip(0) * 2, ()),
    "movedim_of_a_0d_input": (lambda x: x.movedim(-1, 0) * 2, ()),
    "gather_of_a_0d_input": (lambda x: x.gather(0, torch.tensor(0)) * 2, ()),
    # The same along a 0-d constant, which the export evaluates.
    "flip_of_a_0d_constant": (lambda x: x + torch.tensor(1.5).flip(-1), ()),
    "movedim_of_a_0d_constant": (lambda x: x + torch.tensor(1.5).movedim(0, 0), ()),
    "gather_of_a_0d_constant": (lambda x: x + torch.tensor(1.5).gather(0, torch.tensor(0)), ()),
    "softmax_of_a_0d_constant": (lambda x: x + torch.tensor(1.5).softmax(0), ()),
    "cumsum_of_a_0d_constant": (lambda x: x + torch.tensor(1.5).cumsum(-1), ()),
    "unfold_of_a_0d_constant": (lambda x: x + torch.tensor(1.5).unfold(0, 1, 1), (2,)),
    "sum_of_a_0d_constant_along_last": (lambda x: x + torch.tensor(1.5).sum(-1), ()),
    "argmax_of_every_entry": (lambda x: torch.argmax(x), (3, 4)),
    "all_of_every_entry": (lambda x: (x > -3).all(), (3, 4)),
    "any_of_a_0d_input": (lambda x: (x > 0).any(), ()),
    "argmin_of_every_entry_kept": (lambda x: torch.argmin(x, keepdim=True), (3, 4)),
    "safe_softmax_of_one_row": (lambda x: torch.ops.aten._safe_softmax(x, 1), (1, 5, 5)),
    "group_norm_of_channels_alone": (
        lambda x: torch.nn.functional.group_norm(x, 2) * 3, (3, 4)),
    # Running products and sums, products and windows along axes of any length (scans,
    # halvings, strided Slices); rolls and repeats of the flattened tensor; torch's rules
    # for 0-d inputs and for sizes with fewer dimensions than the tensor.
    "cumprod_along_300_entries": (lambda x: (1 + 0.01 * x).cumprod(1), (2, 300)),
    "logcumsumexp_along_300_entries": (lambda x: x.logcumsumexp(1), (2, 300)),
    "prod_along_2001_entries": (lambda x: (1 + 0.001 * x).prod(1), (2, 2001)),
    "unfold_into_91_windows": (lambda x: x.unfold(0, 3, 11), (1000,)),
    "roll_of_the_flattened_tensor": (lambda x: x.roll(5), (3, 4)),
    "roll_of_a_0d_input": (lambda x: x.roll(2) * 2, ()),
    "t_of_a_0d_input": (lambda x: x.t() * 2, ()),
    "sum_to_size_over_leading_axes": (lambda x: x.sum_to_size(1, 4), (3, 2, 4)),
    "repeat_interleave_of_the_flattened_tensor": (lambda x: x.repeat_interleave(2), (2, 3)),
    "vander_of_a_0d_input": (lambda x: torch.linalg.vander(x, N=3), ()),
    # Constant index tensors on adjacent dimensions, the first among them (OpInfo's own).
    "index_by_three_constant_tensors": (lambda x: x[[0, 2, 3], [1, 3, 3], [0, 0, 2]], (5, 5, 5)),
    "index_by_two_then_a_slice": (lambda x: x[[0, 3], [1, 2], :], (5, 5, 5)),
    # A constant folded from constants alone, read as an activation by an op the export
    # does not evaluate (the gradient of max pooling, OpInfo's own sample).
    "max_pool_backward_of_a_constant_gradient": (
        lambda x: torch.ops.aten.max_pool2d_with_indices_backward(
            torch.ones(1, 2, 1, 3), x, [3, 3], [2, 2], [0, 0], [1, 1], True,
            torch.ops.aten.max_pool2d_with_indices(x, [3, 3], [2, 2], [0, 0], [1, 1], True)[1]),
        (1, 2, 3, 6)),
}


def exported(fn, shape, tmp_path):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    archive = tmp_path / "m.pt2"
    return _opinfo.saved_program(fn, x, archive, dynamic=False), x, archive


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_static_program_converts_with_every_size_fixed(name, tmp_path):
    fn, shape = CASES[name]
    module, x, archive = exported(fn, shape, tmp_path)
    out = tmp_path / "m.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", out, "--batch", "static"))
    why = _opinfo.check_file(out, module.forward, [x])
    assert why is None, why
    model = onnx.load(str(out))
    for io in [*model.graph.input, *model.graph.output]:
        dims = io.type.tensor_type.shape.dim
        assert all(d.HasField("dim_value") and d.dim_value > 0 for d in dims), io
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == list(shape)


def test_the_same_programs_still_mix_samples_under_a_dynamic_batch(tmp_path):
    _, _, archive = exported(CASES["sum_axis_0"][0], (3, 4), tmp_path)
    proc = run_ckpt("to-onnx", archive, "-o", tmp_path / "m.onnx")
    assert proc.returncode == 1
    assert "mixes samples" in proc.stderr or "the batch" in proc.stderr, proc.stderr


# Ops along dimension 0 of a tensor that holds the batch alone ([N]: no per-sample entry),
# which a 0-d shortcut once read as one value and wrote as the identity.
ALONG_A_BATCH_VECTOR = {
    "logcumsumexp": lambda x: torch.logcumsumexp(x.sum(1), 0),
    "cummax": lambda x: torch.cummax(x.sum(1), 0).values,
    "logsumexp": lambda x: torch.logsumexp(x.sum(1), 0),
    "median": lambda x: torch.median(x.sum(1), 0).values,
    "msort": lambda x: torch.msort(x.sum(1)),
}


@pytest.mark.parametrize("name", sorted(ALONG_A_BATCH_VECTOR))
def test_an_op_along_a_vector_of_the_batch_is_refused(name, tmp_path):
    archive, out = tmp_path / "m.pt2", tmp_path / "m.onnx"
    _opinfo.saved_program(ALONG_A_BATCH_VECTOR[name], torch.randn(4, 3), archive)
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1 and not out.exists(), proc.stderr
    assert "mixes samples" in proc.stderr, proc.stderr


MIXING_PRODUCTS = {
    # timm csatv2's single-head attention over [B, N] rows: q @ k.transpose(-1, -2) is [B, B].
    "pairs each sample of one operand with every sample of the other":
        lambda x: (x @ (x * 2).transpose(0, 1)).softmax(-1) @ x,
    "sums over the batch": lambda x: x.transpose(0, 1) @ (x + 1),
}


@pytest.mark.parametrize("how", sorted(MIXING_PRODUCTS))
def test_a_matrix_product_across_samples_is_refused_saying_how(how, tmp_path):
    archive = tmp_path / "m.pt2"
    _opinfo.saved_program(MIXING_PRODUCTS[how], torch.randn(3, 4), archive)
    proc = run_ckpt("to-onnx", archive, "-o", tmp_path / "m.onnx")
    assert proc.returncode == 1
    assert f"{how}: it mixes samples" in proc.stderr, proc.stderr


_G = torch.Generator().manual_seed(1)
# Buffers of a static program's whole rank, of one row, of more rows than the input has,
# and of more dimensions: ONNX broadcasts them as torch does, as no axis is the batch.
MASK = torch.rand(3, 4, generator=_G) > 0.5
FULL = torch.randn(3, 4, generator=_G)
ROW = torch.randn(1, 4, generator=_G)
DEEPER = torch.randn(2, 3, 4, generator=_G)
WITH_CONSTANTS = {
    "where_with_a_full_mask": (lambda x: torch.where(MASK, x, 0), (3, 4)),
    "where_picking_a_full_buffer": (lambda x: torch.where(x > 0, FULL, x), (3, 4)),
    "add_of_a_full_buffer": (lambda x: x + FULL, (3, 4)),
    "mul_by_a_full_buffer": (lambda x: FULL * x, (3, 4)),
    "add_of_a_one_row_buffer": (lambda x: x + ROW, (3, 4)),
    "where_with_a_one_row_buffer": (lambda x: torch.where(x > ROW, x, ROW), (3, 4)),
    "mul_by_more_rows": (lambda x: x * FULL, (1, 4)),
    "where_with_more_rows": (lambda x: torch.where(MASK, x, 0), (1, 4)),
    "masked_fill_with_a_full_mask": (lambda x: x.masked_fill(MASK, 2.0), (3, 4)),
    "masked_fill_with_more_rows": (lambda x: x.masked_fill(MASK, 2.0), (1, 4)),
    "compare_with_a_full_buffer": (lambda x: x <= FULL, (3, 4)),
    "clamp_by_full_bounds": (lambda x: torch.clamp(x, FULL - 1, FULL + 1), (3, 4)),
    "fmod_by_a_full_buffer": (lambda x: torch.fmod(x, FULL), (3, 4)),
    "floor_divide_by_a_number": (lambda x: x // 0.3, (3, 4)),
    "addcmul_of_a_full_buffer": (lambda x: torch.addcmul(x, FULL, x, value=0.5), (3, 4)),
    "addcdiv_with_more_rows": (lambda x: torch.addcdiv(FULL, x, FULL), (1, 4)),
    "masked_sum_with_a_full_mask": (lambda x: torch.masked.sum(x, 1, mask=MASK), (3, 4)),
    "add_of_a_deeper_buffer": (lambda x: x + DEEPER, (3, 4)),
    "where_with_a_deeper_buffer": (lambda x: torch.where(x > 0, DEEPER, x), (3, 4)),
    "a_vector_input_times_a_matrix": (lambda x: x * FULL, (4,)),
    "a_0d_input_beside_a_matrix": (lambda x: torch.where(MASK, x, FULL), ()),
}


@pytest.mark.parametrize("name", sorted(WITH_CONSTANTS))
def test_a_static_program_broadcasts_constants_as_torch_does(name, tmp_path):
    fn, shape = WITH_CONSTANTS[name]
    module, x, archive = exported(fn, shape, tmp_path)
    out = tmp_path / "m.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", out, "--batch", "static"))
    why = _opinfo.check_file(out, module.forward, [x])
    assert why is None, why


@pytest.mark.parametrize("name", ["where_with_a_full_mask", "add_of_a_full_buffer",
                                  "masked_fill_with_a_full_mask", "fmod_by_a_full_buffer"])
def test_a_constant_that_meets_the_batch_is_refused_saying_where(name, tmp_path):
    fn, shape = WITH_CONSTANTS[name]
    _, _, archive = exported(fn, shape, tmp_path)
    out = tmp_path / "m.onnx"
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1 and not out.exists(), proc.stderr
    first = proc.stderr.strip().splitlines()[0]
    assert "[3, 4]: the constant's dimension 0 (size 3) lines up with the batch" in first, first
    assert "--batch static" in first, first


def test_a_declared_dynamic_dimension_is_refused_in_static_mode(tmp_path):
    archive = tmp_path / "m.pt2"
    _opinfo.saved_program(lambda x: x * 2, torch.randn(3, 4), archive)
    out = tmp_path / "m.onnx"
    proc = run_ckpt("to-onnx", archive, "-o", out, "--batch", "static")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "declares the dynamic dimension" in lines[0], proc.stderr
    assert "dynamic_shapes" in lines[0] and not out.exists()


def test_a_repeat_of_the_batch_is_refused_saying_why(tmp_path):
    archive = tmp_path / "m.pt2"
    _opinfo.saved_program(lambda x: x.tile((2, 3, 2)), torch.randn(3, 2), archive)
    out = tmp_path / "m.onnx"
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1 and not out.exists()
    first = proc.stderr.strip().splitlines()[0]
    assert "row i is input row i mod N" in first and "--batch static" in first, proc.stderr


_M = torch.Generator().manual_seed(2)
W = torch.randn(4, 5, generator=_M)  # a stored projection, right of the input
LEFT = torch.randn(6, 3, generator=_M)  # a fixed projection, left of the input
V4 = torch.randn(4, generator=_M)
V3 = torch.randn(3, generator=_M)
STACK = torch.randn(2, 4, 5, generator=_M)  # matrices broadcast in front of the input's
BIAS = torch.randn(3, 5, generator=_M)
# Matrix products of the input and a constant, in either slot (shapes with the batch
# first): each converted under a dynamic batch on dimension 0 and as a static program.
CONSTANT_PRODUCTS = {
    "activation_times_matrix": (lambda x: x @ W, (2, 3, 4)),
    "matrix_times_activation": (lambda x: LEFT @ x, (2, 3, 4)),
    "activation_times_vector": (lambda x: x @ V4, (2, 3, 4)),
    "vector_times_activation": (lambda x: V3 @ x, (2, 3, 4)),
    "rows_times_a_stack_in_front": (lambda x: x @ STACK, (3, 4)),
    "mm_of_rows": (lambda x: torch.mm(x, W), (3, 4)),
    "addmm_of_rows": (lambda x: torch.addmm(W[0], x, W, beta=0.5, alpha=2.0), (3, 4)),
    "mv_of_rows": (lambda x: torch.mv(x, V4), (3, 4)),
    "addmv_of_rows": (lambda x: torch.addmv(x[:, 0], x, V4, beta=0.5, alpha=2.0), (3, 4)),
    "outer_of_a_column": (lambda x: torch.outer(x[:, 1], V4), (3, 4)),
    "addr_of_a_column": (lambda x: torch.addr(x, x[:, 0], V4, beta=2.0, alpha=0.5), (3, 4)),
    "linear_of_rows": (lambda x: torch.nn.functional.linear(x, W.T, W[0]), (3, 4)),
    "addbmm_of_stacks_per_sample": (
        lambda x: torch.addbmm(W[0], x.transpose(0, 1), STACK, beta=0.5, alpha=2.0), (3, 2, 4)),
    "tensordot_by_a_constant": (
        lambda x: torch.tensordot(x, STACK, dims=([2, 1], [1, 0])), (3, 2, 4)),
    "tensordot_constant_first": (lambda x: torch.tensordot(W, x, dims=([0], [2])), (3, 2, 4)),
}
# Shapes only a static program has (a vector input, a product of constants beside it, a
# `bmm` whose constant's leading size torch requires to be the input's, `kron`, whose
# sizes torch.export fixes).
STATIC_PRODUCTS = {
    "vector_times_matrix": (lambda x: x @ W, (4,)),
    "matrix_times_vector": (lambda x: LEFT @ x, (3,)),
    "vector_times_vector": (lambda x: V4 @ x, (4,)),
    "vector_times_a_stack": (lambda x: x @ STACK, (4,)),
    "addmm_of_constants_beside_the_input": (
        lambda x: torch.addmm(x, LEFT, BIAS, beta=0.2, alpha=0.6), (1, 5)),
    "bmm_constant_first": (lambda x: torch.bmm(LEFT.expand(2, 6, 3), x), (2, 3, 4)),
    "baddbmm_constant_second": (
        lambda x: torch.baddbmm(x @ W, x, W.expand(2, 4, 5), beta=0.3, alpha=1.5), (2, 3, 4)),
    "outer_constant_first": (lambda x: torch.outer(V3, x), (4,)),
    "addr_of_a_0d_input": (lambda x: torch.addr(x, V3, V4), ()),
    "mv_constant_first": (lambda x: torch.mv(LEFT, x), (3,)),
    "linear_of_a_matrix": (lambda x: torch.nn.functional.linear(x, W.T), (3, 4)),
    "addbmm_of_a_stack": (lambda x: torch.addbmm(BIAS, x, STACK, beta=0.3, alpha=1.5), (2, 3, 4)),
    "kron_constant_first": (lambda x: torch.kron(LEFT, x), (3, 4)),
    "kron_by_a_constant": (lambda x: torch.kron(x, LEFT), (3, 4)),
    "tensordot_of_all_dimensions": (lambda x: torch.tensordot(x, BIAS, dims=2), (3, 5)),
}


# Products that would sum over the batch or interleave samples (shapes with the batch first).
MIXING_CONSTANT_PRODUCTS = {
    "addbmm": lambda x: torch.addbmm(W[0], x, STACK[:1].expand(x.shape[0], 4, 5)),
    "tensordot": lambda x: torch.tensordot(x, W[:, :1].expand(4, x.shape[0]), dims=([1, 0], [0, 1])),
}


@pytest.mark.parametrize("name", sorted(MIXING_CONSTANT_PRODUCTS))
def test_a_product_with_a_constant_across_samples_is_refused(name, tmp_path):
    archive = tmp_path / "m.pt2"
    x = torch.randn(3, 4) if name != "addbmm" else torch.randn(3, 3, 4)
    _opinfo.saved_program(MIXING_CONSTANT_PRODUCTS[name], x, archive)
    proc = run_ckpt("to-onnx", archive, "-o", tmp_path / "m.onnx")
    assert proc.returncode == 1, proc.stderr
    assert "mixes" in proc.stderr and name in proc.stderr, proc.stderr


@pytest.mark.parametrize("dynamic", [True, False], ids=["dynamic", "static"])
@pytest.mark.parametrize("name", sorted(CONSTANT_PRODUCTS))
def test_a_product_with_a_constant_in_either_slot_matches_torch(name, dynamic, tmp_path):
    fn, shape = CONSTANT_PRODUCTS[name]
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    archive, out = tmp_path / "m.pt2", tmp_path / "m.onnx"
    module = _opinfo.saved_program(fn, x, archive, dynamic=dynamic)
    ok(run_ckpt("to-onnx", archive, "-o", out, *([] if dynamic else ["--batch", "static"])))
    xs = [x, torch.randn(5, *shape[1:], generator=torch.Generator().manual_seed(1))]
    why = _opinfo.check_file(out, module.forward, xs if dynamic else [x])
    assert why is None, why


@pytest.mark.parametrize("name", sorted(STATIC_PRODUCTS))
def test_a_static_product_with_a_constant_matches_torch(name, tmp_path):
    fn, shape = STATIC_PRODUCTS[name]
    module, x, archive = exported(fn, shape, tmp_path)
    out = tmp_path / "m.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", out, "--batch", "static"))
    why = _opinfo.check_file(out, module.forward, [x])
    assert why is None, why
