"""`ckpt to-onnx` on torch's scatter family by constant positions: `scatter` (of a source and
of a value), `scatter_add`, `scatter_reduce` (every `reduce`, `include_self` both ways),
`index_put` (`accumulate` both ways), `select_scatter`, `slice_scatter`,
`masked_scatter`, `index_add`, `index_copy`, `index_fill`, `index_reduce`, `put` and
`max_unpool1d`/`2d`/`3d` (a write into zeros), and the
gathers `take` and `take_along_dim`, on float32 (NaN, infinities and signed zeros among the values) and int64
tensors, with repeated indices, negative dimensions and indices, constant and computed
sources. Each module is exported with torch.export, converted, and judged as the OpInfo
sweep judges a sample (`_opinfo.check_file`: full ONNX check, opset 11, ATC-clean,
onnxruntime equal to torch eager): at a fixed batch with `--batch static`, or with a
dynamic batch at two batch sizes when the op keeps the samples apart. Refusals name their
reason: a computed index, a plain write whose index repeats a position (torch leaves the
result undefined), a write along the batch or by positions that differ per sample (mixes
samples).
"""
import pytest
import torch

import _opinfo
from _util import ok, run_ckpt

SPECIAL = (float("nan"), float("inf"), float("-inf"), -0.0, 0.0, -1.5)
I64 = torch.int64


def floats(shape, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=gen)
    x.view(-1)[: len(SPECIAL)] = torch.tensor(SPECIAL)
    return x


def ints(shape, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(-9, 10, shape, generator=gen)


def export(fn, x, tmp_path, dynamic):
    module = _opinfo.OpModule(fn).eval()
    shapes = {"x": {0: torch.export.Dim("batch")}} if dynamic else None
    program = torch.export.export(module, (x,), dynamic_shapes=shapes)
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(program, str(archive))
    return module, archive, out


def converts(fn, x, tmp_path, dynamic=False):
    """`fn` at `x` converts (statically, or with a dynamic batch judged at batch sizes
    `x.shape[0]` and another) and matches torch."""
    module, archive, out = export(fn, x, tmp_path, dynamic)
    ok(run_ckpt("to-onnx", archive, "-o", out, *([] if dynamic else ["--batch", "static"])))
    why = _opinfo.check_file(out, module, [x])
    assert why is None, why


def refused(fn, x, tmp_path, reason, dynamic=False):
    _, archive, out = export(fn, x, tmp_path, dynamic)
    proc = run_ckpt("to-onnx", archive, "-o", out, *([] if dynamic else ["--batch", "static"]))
    assert proc.returncode == 1, proc.stderr
    assert reason in proc.stderr, proc.stderr
    assert not out.exists()


IDX = torch.tensor([[2, 0, 2, 1], [1, 1, 1, 0], [0, 2, 0, 2]])        # repeats along dim 1
ROWS = torch.tensor([[4, 0, 3], [1, 2, 0], [0, 1, 4]])                 # a permutation per row
SRC = torch.arange(12.0).reshape(3, 4) - 5.5

UNPOOL_2D = torch.tensor([[[[11, 0, 7]], [[5, 6, 2]]]])              # two planes of 3×4

STATIC = {
    "scatter src dim 1": (lambda x: x.scatter(1, ROWS, SRC[:, :3]), (3, 5), floats),
    "scatter src dim -2": (lambda x: x.scatter(-2, torch.tensor([[2, 0, 1, 0]]), SRC),
                           (3, 4), floats),
    "scatter src int64": (lambda x: x.scatter(-1, ROWS, SRC[:, :3].to(I64)), (3, 5), ints),
    "scatter src computed": (lambda x: x.scatter(1, ROWS, x[:, :3] * 2), (3, 5), floats),
    "scatter value repeated": (lambda x: x.scatter(1, IDX, 2.5), (3, 4), floats),
    "scatter value int64": (lambda x: x.scatter(-1, IDX, 7), (3, 4), ints),
    "scatter_add repeated": (lambda x: x.scatter_add(1, IDX, SRC), (3, 4), floats),
    "scatter_add int64 dim 0": (lambda x: x.scatter_add(0, IDX % 2, SRC.to(I64)),
                                 (3, 4), ints),
    "scatter_add computed source": (lambda x: x.scatter_add(1, IDX, x.flip(1)),
                                    (3, 4), floats),
    "index_put": (lambda x: torch.index_put(x, (torch.tensor([2, -3]),),
                                            torch.tensor([[1.0], [-0.0]])), (3, 4), floats),
    "index_put accumulate repeated": (
        lambda x: torch.index_put(x, (torch.tensor([0, 2, 0]), torch.tensor([1, 3, 1])),
                                  torch.tensor([1.5, 2.5, 3.5]), accumulate=True),
        (3, 4), floats),
    "index_put int64 broadcast values": (
        lambda x: torch.index_put(x, (torch.tensor([[0], [2]]), torch.tensor([1, 3])),
                                  torch.tensor(5)), (3, 4), ints),
    "index_put computed values": (
        lambda x: torch.ops.aten.index_put(x, [None, torch.tensor([3, 0])], x[:, :2] * 3),
        (3, 4), floats),
    "select_scatter": (lambda x: torch.select_scatter(x, x[:, 1] + 1, 1, -1), (3, 4), floats),
    "select_scatter dim 0": (lambda x: torch.select_scatter(x, torch.ones(4), 0, 1),
                             (3, 4), floats),
    "slice_scatter step 2": (lambda x: torch.slice_scatter(x, x[:, :2] * 2, 1, 1, 100, 2),
                             (3, 5), floats),
    "slice_scatter clamped start": (
        lambda x: torch.slice_scatter(x, torch.zeros(2, 4), 0, -7, 2), (3, 4), floats),
    "slice_scatter int64": (lambda x: torch.slice_scatter(x, x[:, -1:], -1, 0, 1), (3, 4), ints),
    "masked_scatter": (
        lambda x: x.masked_scatter(torch.tensor([True, False, True, True]), SRC.flip(0)),
        (3, 4), floats),
    "masked_scatter int64": (
        lambda x: x.masked_scatter(torch.tensor([[True], [False], [True]]), x.flip(1) + 1),
        (3, 4), ints),
}
STATIC.update({
    "index_add repeated alpha": (lambda x: x.index_add(1, torch.tensor([3, 0, 3]),
                                                       SRC[:, :3], alpha=-2), (3, 4), floats),
    "index_add computed source": (lambda x: x.index_add(-2, torch.tensor([2, 2]), x[:2] * 3),
                                  (3, 4), floats),
    "index_add int64": (lambda x: x.index_add(1, torch.tensor([1, 1]), SRC[:, :2].to(I64)),
                        (3, 4), ints),
    "index_copy": (lambda x: x.index_copy(0, torch.tensor([2, 0]), x[1:] + 1), (3, 4), floats),
    "index_fill negative": (lambda x: x.index_fill(1, torch.tensor([-1, 0, -1]), -2.5),
                            (3, 4), floats),
    "index_fill int64 by a tensor": (
        lambda x: x.index_fill(0, torch.tensor([1]), torch.tensor(7)), (3, 4), ints),
    "put": (lambda x: x.put(torch.tensor([-1, 0, 5]), SRC[0, :3]), (3, 4), floats),
    "put accumulate repeated": (
        lambda x: x.put(torch.tensor([[1, 1], [0, 1]]), x[:2, :2], accumulate=True),
        (3, 4), floats),
    "take": (lambda x: x.take(torch.tensor([[11, -12], [5, 5]])), (3, 4), floats),
    "take int64": (lambda x: x.take(torch.tensor([3, 0])), (3, 4), ints),
    "take_along_dim": (lambda x: x.take_along_dim(torch.tensor([[3, 0, 3]]), 1), (3, 4), floats),
    "take_along_dim flat": (lambda x: x.take_along_dim(torch.tensor([[7], [0]])), (3, 4), floats),
    "scatter reduce add repeated": (lambda x: x.scatter(1, IDX, SRC, reduce="add"),
                                    (3, 4), floats),
    "scatter value reduce multiply": (lambda x: x.scatter(0, IDX[:2] % 3, 2.5,
                                                          reduce="multiply"), (3, 4), floats),
    "max_unpool2d": (lambda x: torch.ops.aten.max_unpool2d(x, UNPOOL_2D, [3, 4]),
                     (1, 2, 1, 3), floats),
    "max_unpool2d of a 3-D input": (lambda x: torch.ops.aten.max_unpool2d(
        x, UNPOOL_2D[0], [3, 4]), (2, 1, 3), floats),
    "max_unpool1d": (lambda x: torch.nn.functional.max_unpool1d(
        x, torch.tensor([[[5, 1, 0], [2, 3, 4]]]), 2), (1, 2, 3), floats),
    "max_unpool3d": (lambda x: torch.ops.aten.max_unpool3d(
        x, UNPOOL_2D.unsqueeze(2), [1, 3, 4], [1, 1, 1], [0, 0, 0]), (1, 2, 1, 1, 3), floats),
})
for reduce in ("prod", "mean", "amax", "amin"):
    for include_self in (True, False):
        STATIC[f"index_reduce {reduce} include_self={include_self}"] = (
            lambda x, r=reduce, i=include_self: x.index_reduce(
                1, torch.tensor([2, 0, 2]), SRC[:, :3].where(SRC[:, :3] != -0.5, torch.nan), r,
                include_self=i),
            (3, 4), floats)
for reduce in ("sum", "prod", "mean", "amax", "amin"):
    for include_self in (True, False):
        STATIC[f"scatter_reduce {reduce} include_self={include_self}"] = (
            lambda x, r=reduce, i=include_self: x.scatter_reduce(
                1, IDX, SRC.where(SRC != -0.5, torch.nan), r, include_self=i),
            (3, 4), floats)
        if reduce != "mean":
            STATIC[f"scatter_reduce int64 {reduce} include_self={include_self}"] = (
                lambda x, r=reduce, i=include_self: x.scatter_reduce(
                    -1, IDX, SRC.to(I64), r, include_self=i),
                (3, 4), ints)


@pytest.mark.parametrize("name", STATIC)
def test_scatter_by_constant_positions_matches_torch(name, tmp_path):
    fn, shape, make = STATIC[name]
    converts(fn, make(shape, 1), tmp_path)


BATCHED = {
    "scatter by an index expanded over the batch": (
        lambda x: x.scatter(1, torch.tensor([[3, 0]]).expand(x.shape[0], 2), x[:, 1:3] * 2),
        (2, 4)),
    "scatter_add of a value along a later dimension": (
        lambda x: x.scatter_reduce(
            2, torch.tensor([[[1, 1, 0]]]).expand(x.shape[0], 2, 3), x[:, :, :3], "amax"),
        (2, 2, 4)),
    "index_put past the batch": (
        lambda x: torch.ops.aten.index_put(x, [None, torch.tensor([3, 0])], x[:, 1:3] - 1),
        (2, 4)),
    "index_put accumulate past the batch": (
        lambda x: torch.ops.aten.index_put(x, [None, torch.tensor([1, 1])], x[:, :2],
                                           accumulate=True),
        (2, 4)),
    "index_put of a constant past the batch": (
        lambda x: torch.ops.aten.index_put(x, [None, torch.tensor([2, 0])],
                                           torch.tensor([[-0.0], [4.0]])), (2, 3, 4)),
    "select_scatter": (lambda x: torch.select_scatter(x, x[:, 0] * 3, 1, 2), (2, 4)),
    "index_add past the batch": (
        lambda x: x.index_add(2, torch.tensor([1, 1, 0]), x[:, :, :3] * 2, alpha=3), (2, 3, 4)),
    "index_copy past the batch": (
        lambda x: x.index_copy(1, torch.tensor([0, 2]), x[:, 1:3].flip(1)), (2, 4)),
    "index_fill past the batch": (lambda x: x.index_fill(-1, torch.tensor([-1, 1]), 4.0),
                                  (2, 3, 4)),
    "index_reduce amax past the batch": (
        lambda x: x.index_reduce(1, torch.tensor([0, 0, 3]), x[:, 1:], "amax",
                                 include_self=False), (2, 4)),
    "slice_scatter": (lambda x: torch.slice_scatter(x, x[:, :, :2], 2, -2), (2, 3, 4)),
    "max_unpool2d by indices expanded over the batch": (
        lambda x: torch.ops.aten.max_unpool2d(
            x, UNPOOL_2D.expand(x.shape[0], 2, 1, 3), [3, 4]), (2, 2, 1, 3)),
}


@pytest.mark.parametrize("name", BATCHED)
def test_scatter_on_each_sample_alike_keeps_a_dynamic_batch(name, tmp_path):
    fn, shape = BATCHED[name]
    converts(fn, floats(shape, 2), tmp_path, dynamic=True)


REFUSED = {
    "a computed index": (lambda x: x.scatter(1, x.argsort(1)[:, :2], 1.0),
                         "computed by the graph", False),
    "a plain scatter repeating a position": (lambda x: x.scatter(1, IDX, SRC),
                                             "undefined", False),
    "index_put repeating a position": (
        lambda x: torch.index_put(x, (torch.tensor([1, 1]),), torch.tensor(2.0)),
        "undefined", False),
    "scatter_reduce mean of int64": (
        lambda x: x.to(I64).scatter_reduce(1, IDX, SRC.to(I64), "mean"), "rounds it down",
        False),
    "a scatter along the batch": (
        lambda x: x.scatter_add(0, torch.tensor([[0, 0, 0, 0]]), x[:1]), "mixes samples", True),
    "a slice_scatter along the batch": (
        lambda x: torch.slice_scatter(x, x[:1] * 2, 0, 0, 1), "mixes samples", True),
    "an index_add along the batch": (
        lambda x: x.index_add(0, torch.tensor([0]), x[:1]), "mixes samples", True),
    "max_unpool2d repeating a position": (
        lambda x: torch.ops.aten.max_unpool2d(
            x.view(1, 3, 1, 4), torch.zeros(1, 3, 1, 4, dtype=I64), [2, 4]),
        "not specified", False),
    "index_copy repeating a position": (
        lambda x: x.index_copy(1, torch.tensor([1, 1]), x[:, :2]), "undefined", False),
    "take with a batch": (lambda x: x.take(torch.tensor([0, 5])), "mixes samples", True),
    "put with a batch": (lambda x: x.put(torch.tensor([0]), torch.ones(1)), "mixes samples",
                         True),
    "a masked_scatter with a batch": (
        lambda x: x.masked_scatter(torch.tensor([True, False, True, False]), x * 2),
        "mixes samples", True),
}


@pytest.mark.parametrize("name", REFUSED)
def test_scatter_it_cannot_write_exactly_is_refused(name, tmp_path):
    fn, reason, dynamic = REFUSED[name]
    refused(fn, floats((3, 4), 3), tmp_path, reason, dynamic)


class ExpandedIndex(torch.nn.Module):
    """A scatter_add by an index buffer expanded over the batch, as a trace records it."""

    def __init__(self):
        super().__init__()
        self.register_buffer("index", torch.tensor([[3, 0]]))

    def forward(self, x):
        return x.scatter_add(1, self.index.expand(x.shape[0], 2), x[:, 1:3] * 2)


def test_a_traced_scatter_keeps_a_dynamic_batch(tmp_path):
    x = floats((2, 4), 4)
    module = ExpandedIndex().eval()
    archive, out = tmp_path / "m.pt", tmp_path / "m.onnx"
    torch.jit.trace(module, (x,)).save(str(archive))
    ok(run_ckpt("to-onnx", archive, "-o", out))
    why = _opinfo.check_file(out, module, [x])
    assert why is None, why


def test_a_traced_scatter_by_fixed_rows_is_refused(tmp_path):
    x = floats((2, 4), 5)
    module = _opinfo.OpModule(lambda x: x.scatter(1, torch.tensor([[3, 0], [1, 2]]), 5.0))
    archive, out = tmp_path / "m.pt", tmp_path / "m.onnx"
    torch.jit.trace(module.eval(), (x,)).save(str(archive))
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    # The trace importer sizes the call on stand-ins first: at other batch sizes fixed
    # rows do not fit, so it is refused there, naming the call.
    assert "scatter" in proc.stderr, proc.stderr
    assert not out.exists()
