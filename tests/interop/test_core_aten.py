"""torch's Core ATen opset (`torch.Tag.core`: the overloads torch's own decompositions
bottom out in, which a backend must implement) against ckpt's op table: every core
overload is lowered to ONNX, or refused for a reason the generated op table gives (a
class torch's tags and namespaces define, or a reason of its own). Then the core overloads
that `torch.export` emits only when a program calls them directly (or after
`run_decompositions`), each exported with a dynamic batch, converted, and judged as the
OpInfo sweep judges a sample: full ONNX check, opset 11, ATC-clean, onnxruntime equal to
torch eager at two batch sizes.
"""
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import _opinfo
from _util import ok, run_ckpt

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "onnx-ops.md"


def core_overloads():
    """Every `name.overload` of aten tagged `core`, from torch's whole schema registry
    (`dir(torch.ops.aten)` lists only the ops already looked up, so depends on what ran
    before)."""
    out = set()
    for schema in torch._C._jit_get_all_schemas():
        if not schema.name.startswith("aten::"):
            continue
        name, overload = schema.name[len("aten::"):], schema.overload_name or "default"
        try:
            op = getattr(getattr(torch.ops.aten, name), overload)
        except (AttributeError, RuntimeError):
            continue
        if torch.Tag.core in op.tags:
            out.add(f"{name}.{overload}")
    return sorted(out)


def documented():
    """The lowered overloads, and the ops refused with a reason, as docs/onnx-ops.md
    (generated from the registry, the schema table and the refusal classes) lists them."""
    doc = DOC.read_text()
    lowered = set(re.findall(r"^\| `(\w+\.\w+)\(", doc, re.M))
    refused_part = doc[doc.index("## Refused, and why"):]
    refused = {op for line in refused_part.splitlines() if line.startswith("|")
               for op in re.findall(r"`(\w+)`", line)}
    return lowered, refused


def test_every_core_aten_overload_is_lowered_or_refused_for_a_reason():
    core = core_overloads()
    assert len(core) > 150, f"only {len(core)} core overloads: torch's tags changed?"
    lowered, refused = documented()
    missing = [o for o in core if o not in lowered and o.split(".")[0] not in refused]
    assert not missing, (
        f"{len(missing)} of torch's {len(core)} Core ATen overloads are neither lowered nor "
        f"refused for a reason: {', '.join(missing)}")


class Stats(torch.nn.Module):
    """A module with BatchNorm's running statistics as buffers, calling `fn` on them."""

    def __init__(self, fn, channels=3):
        super().__init__()
        gen = torch.Generator().manual_seed(0)
        self.register_buffer("mean", torch.randn(channels, generator=gen))
        self.register_buffer("var", torch.rand(channels, generator=gen) + 0.5)
        self.register_buffer("weight", torch.randn(channels, generator=gen))
        self.register_buffer("bias", torch.randn(channels, generator=gen))
        self.fn = fn

    def forward(self, x):
        return self.fn(self, x)


def with_specials(x):
    """`x` with NaN, −inf, +inf, +0 and −0 at some of its entries."""
    x = torch.where(x > 1.6, float("nan"), x)
    x = torch.where(x < -1.6, float("-inf"), x)
    x = torch.where((x > 1.2) & (x < 1.4), float("inf"), x)
    # Zeros signed by a product: onnxruntime's Where gives +0 for a chosen −0.
    return x * (x.abs() >= 0.1)


aten = torch.ops.aten
DIRECT = {
    "reflection_pad1d": (lambda x: aten.reflection_pad1d(x, [2, 1]), (3, 6)),
    "reflection_pad3d": (lambda x: aten.reflection_pad3d(x, [1, 2, 0, 1, 2, 1]), (2, 4, 4, 5)),
    "replication_pad1d": (lambda x: aten.replication_pad1d(x, [0, 3]), (3, 6)),
    "replication_pad3d": (lambda x: aten.replication_pad3d(x, [2, 0, 1, 1, 0, 2]),
                          (2, 3, 4, 5)),
    "_adaptive_avg_pool2d": (lambda x: aten._adaptive_avg_pool2d(x, [3, 2]), (2, 7, 5)),
    "_adaptive_avg_pool3d": (lambda x: aten._adaptive_avg_pool3d(x, [2, 3, 1]), (2, 5, 7, 3)),
    "native_group_norm, all outputs": (
        lambda x: aten.native_group_norm(x, None, None, x.shape[0], 6, 20, 3, 1e-5),
        (6, 4, 5)),
    "atan2 with out=": (lambda x: torch.atan2(x, x.flip(-1) + 0.5, out=torch.empty_like(x)),
                        (3, 4)),
    **{f"cdist p={p} of two activations": (
        lambda x, p=p: torch.cdist(x, x.flip(1)[:, :3] * 0.5, p=p), (5, 4))
       for p in (0.0, 1.0, 2.0, 1.5, float("inf"))},
    **{f"cdist p={p} with NaN and infinities": (
        lambda x, p=p: torch.cdist(
            torch.where(x > 1.0, float("nan"), torch.where(x < -1.0, float("inf"), x)),
            x.flip(1)[:, :3].clamp(max=1.0) * 0.5, p=p), (5, 4))
       for p in (0.0, 1.0, 2.0, 1.5, float("inf"))},
    # Along per-sample axes of any length: scans (cumprod, logcumsumexp), halvings (prod),
    # strided Slices (unfold into more windows than entries), and NaN, infinities and zeros
    # reaching every later entry.
    "cumprod along 300 entries": (lambda x: (1 + 0.01 * x).cumprod(1), (300,)),
    "cumprod with NaN, infinity and zero": (
        lambda x: torch.where(x > 1.5, float("nan"), torch.where(
            x < -1.5, float("inf"), torch.where(x.abs() < 0.05, 0.0, x))).cumprod(-1), (3, 40)),
    "logcumsumexp along 300 entries": (lambda x: x.logcumsumexp(-1), (4, 300)),
    "logcumsumexp with infinities": (
        lambda x: torch.where(x > 1.0, float("-inf"), torch.where(
            x < -1.5, float("inf"), x)).logcumsumexp(1), (37,)),
    "prod along 2001 entries": (lambda x: (1 + 0.001 * x).prod(-1), (2001,)),
    "prod with NaN, infinity and zero": (
        lambda x: torch.where(x > 1.5, float("nan"), torch.where(
            x < -1.5, float("inf"), torch.where(x.abs() < 0.05, 0.0, x))).prod(1), (37, 2)),
    "unfold into 91 windows": (lambda x: x.unfold(1, 3, 11), (1000,)),
    # Constant index tensors on adjacent per-sample dimensions, broadcast together.
    "index by two constant tensors": (lambda x: x[:, [0, 2, -1], [1, 1, 0]] * 2, (4, 3)),
    "index by broadcast constant tensors": (
        lambda x: x[:, :, torch.tensor([[0], [2]]), torch.tensor([1, 3])], (2, 3, 4)),
    "cdist p=2 to a constant codebook": (
        lambda x: torch.cdist(x, torch.linspace(-1, 1, 24).view(6, 4)), (5, 4)),
    # torch's rules of two or three tensors (ported decompositions), on two activations
    # holding NaN, both infinities and both zeros.
    **{f"{name} of two activations with NaN, infinities and zeros": (
        lambda x, f=f: f(with_specials(x), with_specials(x.flip(-1))), (3, 40))
       for name, f in {
           "hypot": torch.hypot, "logaddexp": torch.logaddexp,
           "logaddexp2": torch.logaddexp2, "fmax": torch.fmax, "fmin": torch.fmin,
           "copysign": torch.copysign, "heaviside": torch.heaviside, "xlogy": torch.xlogy,
           "xlog1py": torch.special.xlog1py, "clamp_min": torch.clamp_min,
           "clamp_max": torch.clamp_max, "pow": lambda a, b: torch.pow(a.abs(), b),
           "isclose with equal_nan": lambda a, b: torch.isclose(
               a, torch.where(b.abs() < 1, a + 1e-6 * b, b), equal_nan=True),
           "lerp by a tensor weight": lambda a, b: torch.lerp(a, b, torch.sigmoid(b) * 2 - 0.5),
       }.items()},
    # Losses, each sample's own (reduction='none'), of two activations and constants.
    **{f"{name}, unreduced": (fn, (3, 8)) for name, fn in {
        "mse_loss": lambda x: F.mse_loss(x, x.flip(-1), reduction="none"),
        "smooth_l1_loss": lambda x: F.smooth_l1_loss(x, x.flip(-1), reduction="none", beta=0.5),
        "huber_loss": lambda x: F.huber_loss(x, x.flip(-1), reduction="none", delta=0.7),
        "soft_margin_loss": lambda x: F.soft_margin_loss(x, x.flip(-1).sign(), reduction="none"),
        "kl_div": lambda x: F.kl_div(x, x.flip(-1).softmax(-1), reduction="none"),
        "poisson_nll_loss, full": lambda x: F.poisson_nll_loss(
            x, x.flip(-1).abs() * 3, full=True, reduction="none"),
        "binary_cross_entropy": lambda x: F.binary_cross_entropy(
            torch.sigmoid(x), torch.sigmoid(x.flip(-1)), weight=torch.linspace(0.5, 2, 8),
            reduction="none"),
        "binary_cross_entropy_with_logits": lambda x: F.binary_cross_entropy_with_logits(
            x, torch.sigmoid(x.flip(-1)), pos_weight=torch.linspace(0.5, 2, 8),
            reduction="none"),
        "hinge_embedding_loss": lambda x: F.hinge_embedding_loss(
            x, torch.tensor([1.0, -1.0]).repeat(4), reduction="none"),
        "margin_ranking_loss": lambda x: F.margin_ranking_loss(
            x, x.flip(-1), x.flip(1).sign(), margin=0.3, reduction="none"),
    }.items()},
    # Losses torch keeps whole, each sample's own, their targets activations (class
    # indices picked by Equal against the classes' numbers) or constants beside the rows.
    **{f"{name}, unreduced": (fn, shape) for name, (fn, shape) in {
        "cross_entropy, class indices, weight": (lambda x: F.cross_entropy(
            x, x.flip(-1).argmax(-1), weight=torch.linspace(0.5, 2, 5), reduction="none"),
            (5,)),
        "cross_entropy, ignore_index, label_smoothing": (lambda x: F.cross_entropy(
            x, x.flip(1).argmax(1), ignore_index=2, label_smoothing=0.2,
            reduction="none"), (4, 3, 2)),
        "cross_entropy, probabilities": (lambda x: F.cross_entropy(
            x, x.flip(-1).softmax(-1), label_smoothing=0.1, reduction="none"), (5,)),
        "nll_loss, weight, ignore_index": (lambda x: F.nll_loss(
            x.log_softmax(1), x.flip(1).argmax(1), weight=torch.linspace(0.5, 2, 4),
            ignore_index=1, reduction="none"), (4, 3)),
        "multi_margin_loss": (lambda x: F.multi_margin_loss(
            x, x.flip(-1).argmax(-1), p=2, margin=0.5, weight=torch.linspace(0.5, 2, 5),
            reduction="none"), (5,)),
        "cosine_embedding_loss": (lambda x: F.cosine_embedding_loss(
            x, x.flip(-1), (x[:, 0] > 0).float() * 2 - 1, margin=0.1, reduction="none"),
            (6,)),
        "triplet_margin_loss, swap": (lambda x: F.triplet_margin_loss(
            x, x.flip(-1), x * 0.5 + 1, p=1.5, swap=True, reduction="none"), (6,)),
        "pairwise_distance, a constant": (lambda x: F.pairwise_distance(
            x, torch.linspace(-1, 1, 6), p=3, keepdim=True), (6,)),
        "cosine_similarity, a constant": (lambda x: F.cosine_similarity(
            x, torch.linspace(-1, 1, 6), dim=-1), (4, 6)),
    }.items()},
}
STATS = {
    "_native_batch_norm_legit, eval": (
        lambda m, x: aten._native_batch_norm_legit(x, m.weight, m.bias, m.mean, m.var,
                                                   False, 0.1, 1e-5)[0], (3, 4, 4)),
    "native_batch_norm, eval": (
        lambda m, x: aten.native_batch_norm(x, m.weight, m.bias, m.mean, m.var,
                                            False, 0.1, 1e-3)[0], (3, 5)),
}


def exported(module, shape, tmp_path):
    gen = torch.Generator().manual_seed(7)
    xs = [torch.randn(b, *shape, generator=gen) for b in (2, 5)]
    program = torch.export.export(module, (xs[0],),
                                  dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(program, str(archive))
    return xs, archive, out


@pytest.mark.parametrize("name", [*DIRECT, *STATS])
def test_core_overloads_called_directly_match_torch(name, tmp_path):
    if name in DIRECT:
        fn, shape = DIRECT[name]
        module = _opinfo.OpModule(fn).eval()
    else:
        fn, shape = STATS[name]
        module = Stats(fn).eval()
    xs, archive, out = exported(module, shape, tmp_path)
    ok(run_ckpt("to-onnx", archive, "-o", out))
    why = _opinfo.check_file(out, module, xs)
    assert why is None, why


def test_a_loss_reduced_over_the_batch_is_refused_as_mixing_samples(tmp_path):
    module = _opinfo.OpModule(lambda x: F.mse_loss(x, x.flip(-1))).eval()
    _, archive, out = exported(module, (4,), tmp_path)
    result = run_ckpt("to-onnx", archive, "-o", out)
    assert result.returncode == 1 and "the batch included" in result.stderr, result.stderr
    assert not out.exists()


def test_a_cross_entropy_averaged_over_the_batch_is_refused_as_mixing_samples(tmp_path):
    module = _opinfo.OpModule(lambda x: F.cross_entropy(x, x.argmax(-1))).eval()
    _, archive, out = exported(module, (4,), tmp_path)
    result = run_ckpt("to-onnx", archive, "-o", out)
    assert result.returncode == 1 and "the batch included" in result.stderr, result.stderr
    assert not out.exists()


def _gen():
    return torch.Generator().manual_seed(11)


# Losses with constant targets in static programs: the reductions over every entry, class
# weights, ignore_index (mean divided by the picked weights), label smoothing, and
# probability targets.
STATIC_LOSSES = {
    f"cross_entropy, {r}": (F.cross_entropy, (6, 4), (torch.tensor([0, 3, 1, 1, 2, 3]),),
                            dict(reduction=r))
    for r in ("mean", "sum")
} | {
    "cross_entropy, weight, ignore_index, mean": (
        F.cross_entropy, (6, 4), (torch.tensor([0, 3, -1, 1, 2, -1]),),
        dict(weight=torch.linspace(0.5, 2, 4), ignore_index=-1)),
    "cross_entropy, every position ignored, mean": (
        F.cross_entropy, (2, 4), (torch.tensor([2, 2]),), dict(ignore_index=2)),
    "cross_entropy, label_smoothing, weight, ignore_index": (
        F.cross_entropy, (3, 4, 2), (torch.tensor([[0, 1], [3, 3], [1, 0]]),),
        dict(weight=torch.linspace(0.5, 2, 4), ignore_index=3, label_smoothing=0.3)),
    "cross_entropy, label_smoothing, sum": (
        F.cross_entropy, (5, 3), (torch.tensor([0, 2, 1, 1, 0]),),
        dict(label_smoothing=0.1, reduction="sum")),
    "cross_entropy, probabilities, weight, label_smoothing": (
        F.cross_entropy, (3, 4, 2), (torch.rand(3, 4, 2, generator=_gen()),),
        dict(weight=torch.linspace(0.5, 2, 4), label_smoothing=0.2)),
    "cross_entropy, one sample": (F.cross_entropy, (4,), (torch.tensor(2),), {}),
    "nll_loss, weight, ignore_index, sum": (
        F.nll_loss, (4, 3, 2), (torch.tensor([[0, 1], [2, 2], [1, 0], [0, 2]]),),
        dict(weight=torch.tensor([0.5, 1.0, 3.0]), ignore_index=2, reduction="sum")),
    "multi_margin_loss, weight, mean": (
        F.multi_margin_loss, (5, 4), (torch.tensor([0, 3, 1, 1, 2]),),
        dict(weight=torch.linspace(0.5, 2, 4), margin=0.7)),
    "multilabel_margin_loss, sum": (
        F.multilabel_margin_loss, (3, 4),
        (torch.tensor([[3, 0, -1, 1], [1, 1, 2, -1], [-1, 0, 1, 2]]),),
        dict(reduction="sum")),
    "cosine_embedding_loss, mean": (
        F.cosine_embedding_loss, (4, 5),
        (torch.randn(4, 5, generator=_gen()), torch.tensor([1.0, -1.0, -1.0, 1.0])),
        dict(margin=0.2)),
    "triplet_margin_loss, sum": (
        F.triplet_margin_loss, (4, 5),
        (torch.randn(4, 5, generator=_gen()), torch.randn(4, 5, generator=_gen()) * 2),
        dict(reduction="sum", swap=True)),
    "dist, p = 3": (torch.dist, (3, 4), (torch.randn(4, generator=_gen()),), dict(p=3)),
    "dist, p = inf": (torch.dist, (3, 4), (torch.randn(3, 4, generator=_gen()),),
                      dict(p=float("inf"))),
}


@pytest.mark.parametrize("name", STATIC_LOSSES)
def test_losses_with_constant_targets_in_static_programs_match_torch(name, tmp_path):
    fn, shape, args, kwargs = STATIC_LOSSES[name]
    module = _opinfo.OpModule(fn, args, kwargs).eval()
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(5))
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(torch.export.export(module, (x,)), str(archive))
    ok(run_ckpt("to-onnx", archive, "-o", out, "--batch", "static"))
    why = _opinfo.check_file(out, module, [x])
    assert why is None, why


def test_cdist_that_torch_computes_by_a_matrix_product_is_refused(tmp_path):
    module = _opinfo.OpModule(lambda x: torch.cdist(x, x * 2.0)).eval()
    _, archive, out = exported(module, (26, 3), tmp_path)
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "matrix product" in proc.stderr, proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 1.5, float("inf")])
def test_pdist_of_a_static_program_matches_torch(p, tmp_path):
    module = _opinfo.OpModule(lambda x: torch.pdist(x, p=p)).eval()
    x = torch.randn(7, 5, generator=torch.Generator().manual_seed(3))
    x[4] = x[1]  # a zero distance, which p = 0 counts apart
    x[2, 0], x[5, 1], x[6, 1] = float("nan"), float("inf"), float("inf")  # NaN, inf − inf
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(torch.export.export(module, (x,)), str(archive))
    ok(run_ckpt("to-onnx", archive, "-o", out, "--batch", "static"))
    why = _opinfo.check_file(out, module, [x])
    assert why is None, why


HISTC = {
    "default bins, the input's extrema": dict(),
    "fixed range, entries outside": dict(bins=7, min=-1.0, max=1.5),
    "integer bounds": dict(bins=5, min=-2, max=2),
    "one bin": dict(bins=1, min=-0.5, max=0.5),
}


@pytest.mark.parametrize("name", HISTC)
def test_histc_of_a_static_program_matches_torch(name, tmp_path):
    kwargs = HISTC[name]
    module = _opinfo.OpModule(lambda x: torch.histc(x, **kwargs)).eval()
    x = torch.randn(6, 5, generator=torch.Generator().manual_seed(5))
    x[1, 1], x[2, 2] = 1.5, -1.0  # both edges of the fixed range
    if kwargs:
        x[0, 0] = float("nan")  # skipped (torch refuses it in a range from the extrema)
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(torch.export.export(module, (x,)), str(archive))
    ok(run_ckpt("to-onnx", archive, "-o", out, "--batch", "static"))
    # Equal extrema widen by 1 each way.
    inputs = [x, torch.full((6, 5), 0.25)]
    for each in inputs:
        module(each)  # torch counts it: the comparison below is not skipped
    why = _opinfo.check_file(out, module, inputs)
    assert why is None, why


HISTOGRAM = {
    "a range, entries outside": dict(bins=7, range=(-1.0, 1.5)),
    "a range, density": dict(bins=4, range=(-2.0, 0.75), density=True),
    "a range of one point": dict(bins=3, range=(0.25, 0.25)),
}


@pytest.mark.parametrize("name", HISTOGRAM)
def test_histogram_with_a_bin_count_of_a_static_program_matches_torch(name, tmp_path):
    kwargs = HISTOGRAM[name]
    module = _opinfo.OpModule(lambda x: tuple(torch.histogram(x, **kwargs))).eval()
    x = torch.randn(6, 5, generator=torch.Generator().manual_seed(5))
    # Entries on edges, where the division alone may pick the neighbouring bin.
    x[1, :] = torch.linspace(-1.0, 1.5, 8)[:5]
    x[0, 0] = float("nan")  # skipped
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(torch.export.export(module, (x,)), str(archive))
    ok(run_ckpt("to-onnx", archive, "-o", out, "--batch", "static"))
    inputs = [x, torch.full((6, 5), 0.25), torch.linspace(-3, 3, 30).view(6, 5)]
    for each in inputs:
        module(each)  # torch bins it: the comparison below is not skipped
    why = _opinfo.check_file(out, module, inputs)
    assert why is None, why


def test_histogram_with_edges_from_the_extrema_is_refused_naming_the_fused_rounding(tmp_path):
    module = _opinfo.OpModule(lambda x: tuple(torch.histogram(x, 5))).eval()
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(torch.export.export(module, (torch.randn(4, 3),)), str(archive))
    proc = run_ckpt("to-onnx", archive, "-o", out, "--batch", "static")
    assert proc.returncode == 1, proc.stderr
    assert "fused multiply-add" in proc.stderr, proc.stderr
    assert not out.exists()


HISTOGRAM_EDGES = {
    "edges, entries on them and outside": dict(edges=[-1.0, -0.25, 0.0, 0.5, 1.5]),
    "equal edges, density": dict(edges=[-2.0, 0.0, 0.0, 0.75], density=True),
    "one bin": dict(edges=[-1.0, 1.0]),
}


@pytest.mark.parametrize("name", HISTOGRAM_EDGES)
def test_histogram_by_constant_edges_of_a_static_program_matches_torch(name, tmp_path):
    # torch has no meta kernel of this overload: it exports only at a fixed batch.
    spec = dict(HISTOGRAM_EDGES[name])
    edges = torch.tensor(spec.pop("edges"))
    module = _opinfo.OpModule(lambda x, e: tuple(torch.histogram(x, e, **spec)),
                              (edges,)).eval()
    x = torch.randn(6, 5, generator=torch.Generator().manual_seed(5))
    x[1, :] = edges[torch.arange(5) % len(edges)]  # entries on the edges
    x[0, 0] = float("nan")  # skipped
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(torch.export.export(module, (x,)), str(archive))
    ok(run_ckpt("to-onnx", archive, "-o", out, "--batch", "static"))
    inputs = [x, torch.full((6, 5), 0.25), torch.linspace(-3, 3, 30).view(6, 5)]
    why = _opinfo.check_file(out, module, inputs)
    assert why is None, why


SEGMENT_REDUCE = {
    # (data sizes, reduction, axis, lengths, initial)
    "max, an empty segment": ((7,), "max", 0, [2, 0, 4, 1], None),
    "mean, empty without initial is NaN": ((3, 6), "mean", 1, [[1, 0, 5]] * 3, None),
    "mean with initial": ((3, 6), "mean", 1, [[2, 0, 4], [6, 0, 0], [0, 3, 3]], 2.5),
    "sum along the first dimension": ((6, 2, 3), "sum", 0, [3, 3, 0], 1.0),
    "min per row": ((2, 5, 3), "min", 1, [[1, 4], [5, 0]], None),
    "prod with initial": ((4, 3), "prod", 1, [[1, 2]] * 4, -2.0),
}


@pytest.mark.parametrize("offsets", [False, True], ids=["lengths", "offsets"])
@pytest.mark.parametrize("name", SEGMENT_REDUCE)
def test_segment_reduce_by_constant_lengths_of_a_static_program_matches_torch(
        name, offsets, tmp_path):
    sizes, reduce, axis, lengths, initial = SEGMENT_REDUCE[name]
    lengths = torch.tensor(lengths)
    if offsets:
        table = torch.cat([torch.zeros_like(lengths[..., :1]), lengths.cumsum(-1)], -1)
        kw = "offsets"
    else:
        table, kw = lengths, "lengths"
    module = _opinfo.OpModule(
        lambda x, t: torch.segment_reduce(x, reduce, **{kw: t}, axis=axis, initial=initial),
        (table,)).eval()
    x = torch.randn(*sizes, generator=torch.Generator().manual_seed(3))
    x.view(-1)[1] = float("nan")  # taken up by max and min, summed into the others
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(torch.export.export(module, (x,)), str(archive))
    ok(run_ckpt("to-onnx", archive, "-o", out, "--batch", "static"))
    why = _opinfo.check_file(out, module, [x, torch.randn(*sizes)])
    assert why is None, why


@pytest.mark.parametrize("axis", [0, 1])
def test_segment_reduce_under_a_dynamic_batch_is_refused(axis, tmp_path):
    lengths = torch.tensor([2, 0, 1]) if axis == 0 else torch.tensor([[2, 0, 1]] * 3)
    module = _opinfo.OpModule(
        lambda x, t: torch.segment_reduce(x, "sum", lengths=t, axis=axis), (lengths,)).eval()
    x = torch.randn(3, 3)
    program = torch.export.export(module, (x,),
                                  dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(program, str(archive))
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    reason = "mixes samples" if axis == 0 else "holds at that batch only"
    assert reason in proc.stderr, proc.stderr
    assert not out.exists()


def test_histc_under_a_dynamic_batch_is_refused_as_mixing_samples(tmp_path):
    module = _opinfo.OpModule(lambda x: torch.histc(x, bins=4, min=-1, max=1)).eval()
    _, archive, out = exported(module, (3,), tmp_path)
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "every sample's together" in proc.stderr, proc.stderr
    assert not out.exists()


NONZERO_STATIC = {
    "more rows than nonzero entries": dict(size=12),
    "fewer rows, fill 7": dict(size=3, fill_value=7),
}


@pytest.mark.parametrize("name", NONZERO_STATIC)
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_nonzero_static_of_a_static_program_matches_torch(name, dtype, tmp_path):
    kwargs = NONZERO_STATIC[name]
    module = _opinfo.OpModule(lambda x: torch.nonzero_static(x, **kwargs)).eval()
    gen = torch.Generator().manual_seed(9)
    x = (torch.randint(-1, 2, (3, 2, 4), generator=gen) * torch.randint(0, 2, (3, 2, 4), generator=gen))
    x = x.to(dtype)
    if dtype == torch.float32:
        x[0, 0, 0] = float("nan")  # nonzero
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(torch.export.export(module, (x,)), str(archive))
    ok(run_ckpt("to-onnx", archive, "-o", out, "--batch", "static"))
    why = _opinfo.check_file(out, module, [x, torch.zeros_like(x)])
    assert why is None, why


def test_batch_norm_with_batch_statistics_is_refused_as_training_mode(tmp_path):
    module = Stats(lambda m, x: aten._native_batch_norm_legit(
        x, m.weight, m.bias, m.mean, m.var, True, 0.1, 1e-5)[0]).eval()
    _, archive, out = exported(module, (3, 4), tmp_path)
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "the batch's statistics (training mode" in proc.stderr, proc.stderr
    assert not out.exists()


class Compound(torch.nn.Module):
    """A module holding recurrent cells and a bilinear layer, calling `fn` on them."""

    def __init__(self, fn):
        super().__init__()
        gen = torch.Generator().manual_seed(5)
        self.fn = fn
        self.rnn = torch.nn.RNNCell(6, 4, nonlinearity="relu")
        self.gru = torch.nn.GRUCell(6, 4)
        self.lstm = torch.nn.LSTMCell(6, 4)
        self.bilinear = torch.nn.Bilinear(6, 4, 3)
        self.register_buffer("points", torch.rand(4, generator=gen).cumsum(0))
        self.register_buffer("tests", torch.tensor([0.0, 1.0, -1.0, 2.0]))
        self.register_buffer("mask", torch.rand(10, generator=gen) > 0.5)

    def forward(self, x):
        return self.fn(self, x)


# Compound ops written as the ops torch computes them by, on activations with a dynamic
# batch (the cells' state and bilinear's second input computed from the input too).
COMPOUND = {
    "rnn_relu_cell": (lambda m, x: m.rnn(x[:, :6], x[:, 6:]), (10,)),
    "gru_cell": (lambda m, x: m.gru(x[:, :6], x[:, 6:].tanh()), (10,)),
    "lstm_cell": (lambda m, x: torch.cat(m.lstm(x[:, :6], (x[:, 6:], x[:, 6:] * 0.5)), 1),
                  (10,)),
    "bilinear": (lambda m, x: m.bilinear(x[:, :6], x[:, 6:]), (10,)),
    "cross": (lambda m, x: torch.linalg.cross(x, x.flip(-1) + 1.0), (2, 3)),
    "trapezoid at sample points": (lambda m, x: torch.trapezoid(x, m.points), (3, 4)),
    "cumulative_trapezoid at sample points": (
        lambda m, x: torch.cumulative_trapezoid(x, m.points, dim=-1), (3, 4)),
    "isin": (lambda m, x: torch.isin(x.round(), m.tests).float(), (2, 5)),
    "_softmax_backward_data": (lambda m, x: aten._softmax_backward_data(
        x, x.softmax(-1), -1, torch.float32), (3, 5)),
    "native_dropout_backward": (lambda m, x: aten.native_dropout_backward(
        x, m.mask, 2.0), (10,)),
}


@pytest.mark.parametrize("name", COMPOUND)
def test_compound_ops_match_torch_under_a_dynamic_batch(name, tmp_path):
    fn, shape = COMPOUND[name]
    module = Compound(fn).eval()
    xs, archive, out = exported(module, shape, tmp_path)
    ok(run_ckpt("to-onnx", archive, "-o", out))
    why = _opinfo.check_file(out, module, xs)
    assert why is None, why


# Compound ops and scatters that work across the first dimension: static programs.
STATIC_COMPOUND = {
    "block_diag": lambda m, x: torch.block_diag(x, m.tests, x[:1]),
    "diagonal_scatter": lambda m, x: torch.diagonal_scatter(x, x[0, :4] * 2, 1),
    "diagonal_scatter, other dimensions": lambda m, x: torch.diagonal_scatter(
        x.unsqueeze(0).expand(2, 4, 5).contiguous(), torch.ones(2, 4), 0, 1, 2),
}


@pytest.mark.parametrize("name", STATIC_COMPOUND)
def test_compound_ops_of_a_static_program_match_torch(name, tmp_path):
    module = Compound(STATIC_COMPOUND[name]).eval()
    x = torch.randn(4, 5, generator=torch.Generator().manual_seed(3))
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(torch.export.export(module, (x,)), str(archive))
    ok(run_ckpt("to-onnx", archive, "-o", out, "--batch", "static"))
    why = _opinfo.check_file(out, module, [x])
    assert why is None, why


def test_batch_norm_with_update_is_refused_as_batch_statistics(tmp_path):
    module = Stats(lambda m, x: aten._batch_norm_with_update(
        x, m.weight, m.bias, m.mean, m.var, 0.1, 1e-5)[0]).eval()
    _, archive, out = exported(module, (3, 4), tmp_path)
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "the batch's statistics (training mode" in proc.stderr, proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("mask", ["bool", "additive"])
def test_attention_with_a_constant_mask_of_its_own_batch_in_a_static_program_matches_torch(
        mask, tmp_path):
    # transformers' causal masks built at fixed sizes: [batch, 1, L, L] beside queries of
    # [batch, heads, L, d], the mask's batch broadcast within the one static row.
    causal = torch.ones(2, 1, 6, 6, dtype=torch.bool).tril()
    causal[1, 0, :, 0] = False  # a different mask per sample
    causal[1, 0, 0, 1] = True
    m = causal if mask == "bool" else torch.zeros(2, 1, 6, 6).masked_fill(~causal, -1e4)
    module = _opinfo.OpModule(
        lambda q, m: F.scaled_dot_product_attention(q, q * 0.5, q, attn_mask=m), (m,)).eval()
    x = torch.randn(2, 3, 6, 4, generator=torch.Generator().manual_seed(1))
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(torch.export.export(module, (x,)), str(archive))
    ok(run_ckpt("to-onnx", archive, "-o", out, "--batch", "static"))
    why = _opinfo.check_file(out, module, [x])
    assert why is None, why
