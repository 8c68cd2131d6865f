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
