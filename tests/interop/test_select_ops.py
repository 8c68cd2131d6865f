"""`ckpt to-onnx` on the ops that pick values along an axis and return where they were, as
torch's named results (`sort`, `kthvalue`, `cummax`/`cummin`, `aminmax`, `frexp`, `topk`
and `argsort` of a 0-d tensor, `max()`/`min()` of a whole static tensor), and on
`searchsorted` of a number or of constant values (torch's binary search, on sorted and
unsorted sequences, row by row, through a constant sorter), `bucketize` in constant sorted
boundaries (the count of boundaries passed, with a dynamic batch), `quantile`/`nanquantile`
at a constant tensor `q` (stacked in front, the batch moved behind),
`renorm` (along the batch, or any dimension of a static tensor), `cartesian_prod` of
static 1-D tensors: `sort` in
torch's order (NaN last ascending, first descending; ties in input order with
`stable=True`), `kthvalue` the k-th in that order, `cummax`/`cummin` as torch's scan (the
latest of equal values, a NaN kept once met), `frexp` exact for subnormals, zeros, ±inf and
NaN. Each module is exported with a dynamic batch (the op along a per-sample axis) or
static, converted, and judged as the OpInfo sweep judges a sample (`_opinfo.check_file`:
full ONNX check, opset 11, ATC-clean, onnxruntime equal to torch eager) on rows holding
NaN, ±inf and signed zeros. `mode` and `signbit` are refused naming why, and `narrow` to
length 0 naming ATC.
"""
import pytest
import torch

import _opinfo
from _util import ok, run_ckpt

NAN, INF = float("nan"), float("inf")


def rows(shape, seed, ties=False):
    """Inputs of `shape` (batch first) at batch sizes 2 and 5, with special rows along the
    last axis: one NaN, +inf and −inf, −0.0 next to a NaN; `ties`: repeated values too (two
    NaN, equal numbers), which only ops whose index torch defines on ties may meet."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    n = shape[-1]
    for batch in (2, 5):
        x = torch.randn(batch, *shape, generator=gen)
        flat = x.reshape(-1, n)
        flat[0, 1] = NAN
        flat[1, 0], flat[1, n - 1] = INF, -INF
        flat[2, 2], flat[2, 0] = -0.0, NAN
        if ties:
            flat[3, 0] = flat[3, 2] = flat[3, n - 1] = 0.5
            flat[2, n - 2] = NAN
        out.append(flat.reshape(batch, *shape))
    return out


def convert(fn, xs, tmp_path, static=False):
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    module = _opinfo.saved_program(fn, xs[0], archive, dynamic=not static)
    batch = ("--batch", "static") if static else ()
    return module, archive, out, batch


# Sorted boundaries with ties, an infinity and a signed zero (bucketize's constant argument).
EDGES = torch.tensor([-INF, -1.0, -0.0, 0.0, 0.5, 0.5, 2.0])

PER_SAMPLE = {
    "sort dim -1": (lambda x: torch.sort(x, -1), (4, 7), False),
    "sort dim 1 descending": (lambda x: torch.sort(x, 1, descending=True), (5, 3, 4), False),
    "sort stable with ties": (lambda x: torch.sort(x, dim=-1, stable=True), (4, 7), True),
    "sort stable descending with ties": (
        lambda x: torch.sort(x, dim=2, descending=True, stable=True), (3, 4, 6), True),
    "sort values only": (lambda x: torch.sort(x, -1).values, (4, 7), True),
    "argsort stable along 1": (
        lambda x: torch.argsort(x, dim=1, stable=True), (6, 4), True),
    "kthvalue 3 dim -1": (lambda x: torch.kthvalue(x, 3, -1), (4, 7), False),
    "kthvalue last, keepdim": (lambda x: torch.kthvalue(x, 7, -1, keepdim=True), (4, 7), False),
    "kthvalue 2 dim 1 of 4-d": (lambda x: torch.kthvalue(x, 2, 1), (5, 3, 4), False),
    "cummax dim -1 with ties": (lambda x: torch.cummax(x, -1), (4, 7), True),
    "cummin dim 1 with ties": (lambda x: torch.cummin(x, 1), (6, 4), True),
    "cummax dim 2 of 4-d": (lambda x: torch.cummax(x, 2), (3, 4, 5), True),
    "aminmax dim -1": (lambda x: torch.aminmax(x, dim=-1), (4, 7), True),
    "aminmax dim 1 keepdim": (lambda x: torch.aminmax(x, dim=1, keepdim=True), (5, 3), True),
    "frexp": (torch.frexp, (4, 7), True),
    "topk with the batch": (lambda x: torch.topk(x, 2, -1), (4, 7), False),
    "renorm along the batch": (lambda x: torch.renorm(x, 2, 0, 1.5), (4, 7), False),
    "renorm p 1 along the batch": (lambda x: torch.renorm(x * 0.2, 1, 0, 1.0), (3, 4), False),
    "quantile of a constant q": (
        lambda x: torch.quantile(x, torch.tensor([0.1, 0.5, 1.0]), dim=-1), (4, 7), True),
    "nanquantile of a constant q, keepdim": (
        lambda x: torch.nanquantile(x, torch.tensor([0.25, 0.0]), dim=1, keepdim=True,
                                    interpolation="nearest"), (6, 4), True),
    "bucketize": (lambda x: torch.bucketize(x, EDGES), (4, 7), True),
    "bucketize right, int32": (
        lambda x: torch.bucketize(x, EDGES, right=True, out_int32=True), (3, 5), True),
}


@pytest.mark.parametrize("name", PER_SAMPLE)
def test_picks_along_a_sample_axis_match_torch(name, tmp_path):
    fn, shape, ties = PER_SAMPLE[name]
    xs = rows(shape, 31, ties)
    if name == "frexp":
        for x in xs:
            x.view(-1)[-4:] = torch.tensor([1e-45, -3e-39, 2.0 ** 127 * 1.5, -0.75])
    module, archive, out, batch = convert(fn, xs, tmp_path)
    ok(run_ckpt("to-onnx", archive, "-o", out, *batch))
    why = _opinfo.check_file(out, module, xs)
    assert why is None, why


STATIC = {
    "sort 1-d": (lambda x: torch.sort(x), (9,)),
    "sort along dimension 0": (lambda x: torch.sort(x, 0, descending=True), (7, 3)),
    "sort 0-d": (lambda x: torch.sort(x), ()),
    "argsort 0-d": (lambda x: torch.argsort(x, 0), ()),
    "topk 0-d": (lambda x: torch.topk(x, 1), ()),
    "topk 0-d dim 0": (lambda x: torch.topk(x, 1, 0), ()),
    "kthvalue 0-d": (lambda x: torch.kthvalue(x, 1), ()),
    "kthvalue along dimension 0": (lambda x: torch.kthvalue(x, 2, 0), (6, 3)),
    "cummax 0-d": (lambda x: torch.cummax(x, 0), ()),
    "cummin 1-d": (lambda x: torch.cummin(x, 0), (8,)),
    "max of every entry": (torch.max, (5, 7)),
    "min of every entry": (torch.min, (5, 7)),
    "max of a 0-d tensor": (torch.max, ()),
    "aminmax of every entry": (torch.aminmax, (5, 7)),
    "aminmax of a 0-d tensor": (torch.aminmax, ()),
    "frexp 1-d": (torch.frexp, (6,)),
    "renorm along dimension 1": (lambda x: torch.renorm(x, 3, 1, 0.8), (4, 5)),
    "renorm inf along dimension 0": (lambda x: torch.renorm(x, float("inf"), 0, 1.0), (4, 5)),
    "cartesian_prod of one tensor": (torch.cartesian_prod, (5,)),
    "cartesian_prod of the tensor and its square": (
        lambda x: torch.cartesian_prod(x, x * x, x[:2]), (4,)),
    "searchsorted left": (lambda x: torch.searchsorted(x, 0.25), (9,)),
    "searchsorted right, int32": (
        lambda x: torch.searchsorted(x, -0.5, right=True, out_int32=True), (8,)),
    "searchsorted side right": (lambda x: torch.searchsorted(x, 1.0, side="right"), (3,)),
    "quantile of every entry at a constant q": (
        lambda x: torch.quantile(x, torch.tensor([0.3, 0.9])), (3, 4)),
    "searchsorted of constant values": (
        lambda x: torch.searchsorted(x, torch.tensor([[-0.5, 0.25], [NAN, 1.0]])), (9,)),
    "row by row through a sorter, searchsorted": (
        lambda x: torch.searchsorted(x, torch.tensor([[0.0, -1.0, 0.5], [2.0, -0.0, NAN]]),
                                     right=True, sorter=torch.tensor([[3, 0, 2, 1], [1, 2, 3, 0]])),
        (2, 4)),
}


@pytest.mark.parametrize("name", STATIC)
def test_picks_of_a_static_tensor_match_torch(name, tmp_path):
    fn, shape = STATIC[name]
    gen = torch.Generator().manual_seed(32)
    x = torch.randn(shape, generator=gen)
    module, archive, out, batch = convert(fn, [x], tmp_path, static=True)
    ok(run_ckpt("to-onnx", archive, "-o", out, *batch))
    checked = [x]
    if x.dim():
        for planted in ((NAN,), (INF, -INF, -0.0), (0.0, NAN, INF)):
            y = x.clone()
            y.view(-1)[: len(planted)] = torch.tensor(planted)
            checked.append(y)
    if name.startswith("searchsorted"):
        # A sorted sequence, with ties, and the searched value among its entries.
        s = torch.sort(x).values
        ties = [-1.0, -0.5, -0.5, 0.25, 0.25, 1.0, 1.0, 2.0, 3.0]
        checked += [s, torch.tensor(ties[len(ties) - len(s):])]
        checked.append(torch.cat([s[1:], torch.tensor([NAN])]))
    for y in checked:
        why = _opinfo.check_file(out, module, [y])
        assert why is None, why


REFUSED = {
    "mode": (lambda x: torch.mode(x, -1), "std::sort"),
    "signbit": (torch.signbit, "sign bit"),
    "narrow to length 0": (lambda x: x.narrow(1, 2, 0) + 1, "ATC does not compile"),
}


def test_combinations_are_refused_for_their_value_shaped_size(tmp_path):
    # torch.export records the row count as a data-dependent size even for r = 1.
    _, archive, out, batch = convert(lambda x: torch.combinations(x, 1), [torch.randn(5)],
                                     tmp_path, static=True)
    proc = run_ckpt("to-onnx", archive, "-o", out, *batch)
    assert proc.returncode == 1, proc.stderr
    assert "data-dependent" in proc.stderr, proc.stderr


@pytest.mark.parametrize("name", REFUSED)
def test_what_cannot_match_torch_is_refused_naming_why(name, tmp_path):
    fn, why = REFUSED[name]
    _, archive, out, batch = convert(fn, rows((4, 7), 33), tmp_path)
    proc = run_ckpt("to-onnx", archive, "-o", out, *batch)
    assert proc.returncode == 1, proc.stderr
    assert why in proc.stderr, proc.stderr
