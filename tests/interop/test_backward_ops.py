"""`ckpt to-onnx` on torch's backward kernels of pooling, called directly as aten ops in a
module exported with a dynamic batch: `max_pool2d_with_indices_backward` (overlapping
windows, ties, padding, dilation, ceil_mode), `avg_pool2d_backward` (padding,
`count_include_pad`, `ceil_mode`, `divisor_override`) and `_adaptive_avg_pool2d_backward`
(even and uneven windows, growing and shrinking). Each module computes the forward op and
then its gradient for an output gradient derived from the input, and is judged as the OpInfo
sweep judges a sample (`_opinfo.check_file`) at two or three batch sizes.
"""
import pytest
import torch

from _util import run_ckpt
from test_linalg import convert, judged

aten = torch.ops.aten


def images(batch, channels, h, w, seed, ties=False):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, channels, h, w, generator=gen) * 3
    # Rounded values tie within windows: torch's index names the first of them.
    return x.round() if ties else x


def max_pool_grad(kernel, stride, padding, dilation, ceil_mode):
    def fn(x):
        y, idx = aten.max_pool2d_with_indices(x, kernel, stride, padding, dilation, ceil_mode)
        grad = torch.cos(y) * 2 + y
        return aten.max_pool2d_with_indices_backward(
            grad, x, kernel, stride, padding, dilation, ceil_mode, idx)
    return fn


MAX_POOLS = [
    ([2, 2], [2, 2], [0, 0], [1, 1], False),
    ([3, 3], [1, 1], [1, 1], [1, 1], False),  # overlapping: a position adds several
    ([3, 2], [2, 1], [1, 0], [1, 1], True),
    ([3, 3], [2, 2], [1, 1], [2, 2], False),  # dilated
    ([2, 3], [3, 2], [0, 1], [1, 1], True),  # ceil_mode adds a window
]


@pytest.mark.parametrize("pool", MAX_POOLS, ids=str)
@pytest.mark.parametrize("ties", [False, True])
def test_max_pool2d_backward_matches_torch(pool, ties, tmp_path):
    xs = [images(2, 3, 7, 6, 1, ties), images(4, 3, 7, 6, 2, ties)]
    judged(max_pool_grad(*pool), xs, tmp_path)


def test_max_pool2d_backward_of_an_input_gradient_reaches_each_index(tmp_path):
    # The output gradient is the input's own pooled values: the gradient is the input's
    # value times the number of windows it wins, zero elsewhere.
    def fn(x):
        y, idx = aten.max_pool2d_with_indices(x, [2, 2], [1, 1], [0, 0], [1, 1], False)
        return aten.max_pool2d_with_indices_backward(
            y, x, [2, 2], [1, 1], [0, 0], [1, 1], False, idx)
    judged(fn, [images(3, 2, 5, 5, 3)], tmp_path)


def test_max_pool2d_backward_refuses_more_index_pairs_than_exported(tmp_path):
    module, archive, out = convert(max_pool_grad([1, 1], [1, 1], [0, 0], [1, 1], False),
                                   images(2, 1, 65, 65, 4), tmp_path)
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "max_pool2d_with_indices_backward" in proc.stderr, proc.stderr
    assert "more than the 16777216 exported" in proc.stderr, proc.stderr
    assert not out.exists()


def avg_pool_grad(kernel, stride, padding, ceil_mode, count_include_pad, divisor):
    def fn(x):
        y = aten.avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor)
        grad = torch.sin(y) * 3 + 1
        return aten.avg_pool2d_backward(
            grad, x, kernel, stride, padding, ceil_mode, count_include_pad, divisor)
    return fn


AVG_POOLS = [
    ([2, 2], [2, 2], [0, 0], False, True, None),
    ([3, 3], [1, 1], [1, 1], False, True, None),
    ([3, 3], [1, 1], [1, 1], False, False, None),
    ([3, 2], [2, 1], [1, 1], True, True, None),
    ([3, 2], [2, 1], [1, 1], True, False, None),
    ([2, 3], [3, 2], [0, 1], True, False, None),  # ceil_mode: a window past the padding
    ([3, 3], [2, 2], [1, 1], False, True, 5),
    ([2, 2], [3, 3], [0, 0], True, False, 3),  # stride above kernel: positions no window holds
    ([3, 3], [], [1, 1], False, True, None),  # no stride: the kernel's
]


@pytest.mark.parametrize("pool", AVG_POOLS, ids=str)
def test_avg_pool2d_backward_matches_torch(pool, tmp_path):
    xs = [images(2, 3, 7, 8, 5), images(3, 3, 7, 8, 6)]
    judged(avg_pool_grad(*pool), xs, tmp_path)


def adaptive_grad(out):
    def fn(x):
        y = aten.adaptive_avg_pool2d(x, out)
        grad = torch.cos(y) * 2 - y
        return aten._adaptive_avg_pool2d_backward(grad, x)
    return fn


@pytest.mark.parametrize("out", [[1, 1], [3, 4], [4, 3], [5, 7], [7, 8], [9, 11]], ids=str)
def test_adaptive_avg_pool2d_backward_matches_torch(out, tmp_path):
    xs = [images(2, 3, 7, 8, 7), images(3, 3, 7, 8, 8)]
    judged(adaptive_grad(out), xs, tmp_path)


def layer_norm_grad(shape, affine, mask=(True, False, False), pick=0):
    gen = torch.Generator().manual_seed(9)
    w = torch.randn(shape, generator=gen) if affine else None
    b = torch.randn(shape, generator=gen) if affine else None

    def fn(x):
        y, mean, rstd = aten.native_layer_norm(x, shape, w, b, 1e-5)
        grad = torch.cos(y) * 2 + x
        return aten.native_layer_norm_backward(grad, x, shape, mean, rstd, w, b, list(mask))[pick]
    return fn


@pytest.mark.parametrize("shape", [[8], [5, 8], [3, 5, 8]], ids=str)
@pytest.mark.parametrize("affine", [False, True])
def test_native_layer_norm_backward_input_grad_matches_torch(shape, affine, tmp_path):
    gen = torch.Generator().manual_seed(10)
    xs = [torch.randn(2, 3, 5, 8, generator=gen) * 2 + 1, torch.randn(4, 3, 5, 8, generator=gen)]
    judged(layer_norm_grad(shape, affine), xs, tmp_path)


def test_native_layer_norm_backward_input_grad_with_every_output_asked(tmp_path):
    # output_mask asks for the weight's and bias's gradients too; only the input's is read.
    xs = [torch.randn(2, 5, 8), torch.randn(3, 5, 8)]
    judged(layer_norm_grad([8], True, (True, True, True)), xs, tmp_path)


@pytest.mark.parametrize("pick,what", [(1, "weight"), (2, "bias")])
def test_native_layer_norm_backward_refuses_parameter_grads_over_the_batch(pick, what, tmp_path):
    fn = layer_norm_grad([8], True, (True, True, True), pick)
    module, archive, out = convert(fn, torch.randn(2, 5, 8), tmp_path)
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert f"gradient of the {what} (output {pick}) sums over every sample" in proc.stderr
    assert "mixes samples" in proc.stderr, proc.stderr
    assert not out.exists()


def conv_grad(x_channels, out_channels, kernel, stride, padding, dilation, groups,
              transposed=False, output_padding=(0, 0), mask=(True, False, False), pick=0):
    gen = torch.Generator().manual_seed(11)
    shape = ([x_channels, out_channels // groups] if transposed
             else [out_channels, x_channels // groups]) + list(kernel)
    w = torch.randn(shape, generator=gen)

    def fn(x):
        y = aten.convolution(x, w, None, stride, padding, dilation, transposed,
                             list(output_padding), groups)
        grad = torch.cos(y) * 2 + y
        return aten.convolution_backward(
            grad, x, w, [out_channels], stride, padding, dilation, transposed,
            list(output_padding), groups, list(mask))[pick]
    return fn


CONVS = [
    (4, 6, [3, 3], [1, 1], [1, 1], [1, 1], 1),
    (4, 6, [3, 2], [2, 2], [0, 1], [1, 1], 1),  # a row the last window leaves unread
    (4, 6, [3, 3], [3, 2], [2, 1], [2, 1], 2),
    (4, 4, [2, 3], [1, 2], [1, 0], [1, 2], 4),  # depthwise
]


@pytest.mark.parametrize("conv", CONVS, ids=str)
def test_convolution_backward_input_grad_matches_torch(conv, tmp_path):
    gen = torch.Generator().manual_seed(12)
    xs = [torch.randn(2, 4, 9, 10, generator=gen), torch.randn(3, 4, 9, 10, generator=gen)]
    judged(conv_grad(*conv), xs, tmp_path)


@pytest.mark.parametrize("conv", [
    (4, 6, [3, 3], [2, 2], [1, 1], [1, 1], 1, True, (1, 0)),
    (4, 6, [2, 3], [1, 2], [0, 1], [2, 1], 2, True, (0, 1)),
], ids=str)
def test_convolution_backward_of_a_transposed_convolution_matches_torch(conv, tmp_path):
    gen = torch.Generator().manual_seed(13)
    xs = [torch.randn(2, 4, 6, 7, generator=gen), torch.randn(3, 4, 6, 7, generator=gen)]
    judged(conv_grad(*conv), xs, tmp_path)


def test_convolution_backward_1d_with_every_output_asked(tmp_path):
    gen = torch.Generator().manual_seed(14)
    w = torch.randn(5, 3, 3, generator=gen)

    def fn(x):
        y = aten.convolution(x, w, None, [2], [1], [1], False, [0], 1)
        return aten.convolution_backward(
            torch.sin(y), x, w, [5], [2], [1], [1], False, [0], 1, [True, True, True])[0]
    judged(fn, [torch.randn(2, 3, 12, generator=gen)], tmp_path)


@pytest.mark.parametrize("pick,what", [(1, "weight"), (2, "bias")])
def test_convolution_backward_refuses_parameter_grads_over_the_batch(pick, what, tmp_path):
    fn = conv_grad(4, 6, [3, 3], [1, 1], [1, 1], [1, 1], 1, mask=(True, True, True), pick=pick)
    module, archive, out = convert(fn, torch.randn(2, 4, 9, 10), tmp_path)
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert f"gradient of the {what} (output {pick}) sums over every sample" in proc.stderr
    assert not out.exists()


def group_norm_grad(groups, affine, mask=(True, False, False), pick=0, channels=6):
    gen = torch.Generator().manual_seed(15)
    w = torch.randn(channels, generator=gen) if affine else None
    b = torch.randn(channels, generator=gen) if affine else None

    def fn(x):
        hw = x[0, 0].numel()
        # native_group_norm itself is not lowered: its statistics as torch defines them.
        flat = x.reshape(x.shape[0], groups, -1)
        mean = flat.mean(-1)
        rstd = torch.rsqrt(flat.var(-1, correction=0) + 1e-5)
        y = aten.group_norm(x, groups, w, b, 1e-5)
        grad = torch.cos(y) * 2 + x
        return aten.native_group_norm_backward(
            grad, x, mean, rstd, w, x.shape[0], channels, hw, groups, list(mask))[pick]
    return fn


# Not 6 groups of a [N, 6] input: groups of one entry, whose gradient is 0 and which both
# torch and the file compute as rounding noise scaled by 1/√ε.
GROUP_NORMS = [(g, s) for g in [1, 2, 6] for s in [[], [5], [4, 5]] if (g, s) != (6, [])]


@pytest.mark.parametrize("groups,spatial", GROUP_NORMS, ids=str)
@pytest.mark.parametrize("affine", [False, True])
def test_native_group_norm_backward_input_grad_matches_torch(groups, affine, spatial, tmp_path):
    gen = torch.Generator().manual_seed(16)
    xs = [torch.randn(2, 6, *spatial, generator=gen) * 2 + 1,
          torch.randn(3, 6, *spatial, generator=gen)]
    judged(group_norm_grad(groups, affine), xs, tmp_path)


def test_native_group_norm_backward_refuses_the_weight_grad(tmp_path):
    fn = group_norm_grad(2, True, (True, True, True), 1)
    module, archive, out = convert(fn, torch.randn(2, 6, 4, 5), tmp_path)
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "gradient of the weight (output 1) sums over every sample" in proc.stderr
    assert not out.exists()


def test_embedding_dense_backward_is_refused_as_mixing_samples(tmp_path):
    def fn(x):
        indices = (x.abs() * 3).floor().clamp(0, 6).long()
        return aten.embedding_dense_backward(torch.cos(x).unsqueeze(-1).expand(-1, -1, 4),
                                             indices, 7, -1, False)
    module, archive, out = convert(fn, torch.randn(2, 5), tmp_path)
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "embedding_dense_backward" in proc.stderr, proc.stderr
    assert "mixes samples" in proc.stderr, proc.stderr
    assert not out.exists()
