"""`ckpt to-onnx` on `torch.export` archives (`.pt2`) against torch eager.

Each model is built by a script under `models/` and exported there with real torch
(`torch.export.export`, then `torch.export.save`; no decompositions run), with a declared
dynamic batch (`Dim("batch")`) and without one (the example's batch traced in). The ONNX file
must pass `onnx.checker.check_model(full_check=True)`, carry one opset import and the named
batch `dim_param`, have no Identity/Shape/Gather/Unsqueeze nodes, and match torch eager in
onnxruntime at batch 1, 3 and 8 from one file within max |diff| <= 1e-4 * max(1, max |ref|)
for every output (a dict's named after its keys), each output depending on the input.
"""
import sys
from pathlib import Path

import onnx
import pytest
import torch

from _util import check_parity, ok, run_ckpt

sys.path.insert(0, str(Path(__file__).resolve().parent / "models"))
import common  # noqa: E402
import mixer  # noqa: E402
import op_zoo  # noqa: E402
import rootnet  # noqa: E402
import tokens  # noqa: E402
import torchvision_classifiers  # noqa: E402
import torchvision_segmentation  # noqa: E402
import unet  # noqa: E402
import view_head  # noqa: E402

BATCHES = (1, 3, 8)
CASES = [
    # (id, build, per-sample input, dynamic batch declared)
    ("resnet18", lambda: torchvision_classifiers.build("resnet18", seed=1),
     torchvision_classifiers.CHW, True),
    ("resnet18-static", lambda: torchvision_classifiers.build("resnet18", seed=2),
     torchvision_classifiers.CHW, False),
    ("resnet50", lambda: torchvision_classifiers.build("resnet50", seed=3),
     torchvision_classifiers.CHW, True),
    ("mobilenet_v2", lambda: torchvision_classifiers.build("mobilenet_v2", seed=4),
     torchvision_classifiers.CHW, True),
    ("mobilenet_v2-static", lambda: torchvision_classifiers.build("mobilenet_v2", seed=5),
     torchvision_classifiers.CHW, False),
    ("unet", lambda: unet.build(seed=6), unet.CHW, True),
    ("unet-static", lambda: unet.build(seed=7), unet.CHW, False),
    ("view_head-static", lambda: view_head.build(seed=8), view_head.CHW, False),
    ("view_head", lambda: view_head.build(seed=9), view_head.CHW, True),
    ("tokens", lambda: tokens.build(seed=10), tokens.CHW, True),
    ("tokens-static", lambda: tokens.build(seed=11), tokens.CHW, False),
    # LayerNorm, exact GELU, softmax over the tokens (not the last axis) and over the classes.
    ("mixer", lambda: mixer.build(seed=12), mixer.CHW, True),
    ("mixer-static", lambda: mixer.build(seed=13), mixer.CHW, False),
    # Element-wise math, activations and folded constants; padding, norms and reductions.
    ("zoo_elementwise", lambda: op_zoo.build("elementwise", seed=14), op_zoo.CHW, True),
    ("zoo_reductions-static", lambda: op_zoo.build("reductions", seed=15), op_zoo.CHW, False),
    ("zoo_indexing", lambda: op_zoo.build("indexing", seed=20), op_zoo.CHW, True),
    ("zoo_overloads", lambda: op_zoo.build("overloads", seed=21), op_zoo.CHW, True),
    # Dilated ResNet-50s (FCN's `out` and `aux`, DeepLabV3's ASPP), LR-ASPP (hardswish,
    # hardsigmoid gates); dict outputs upsampled bilinearly to the input size.
    *[(arch, lambda arch=arch: torchvision_segmentation.build(arch, seed=20),
       torchvision_segmentation.CHW, True) for arch in torchvision_segmentation.ARCHS],
    ("lraspp_mobilenet_v3_large-static",
     lambda: torchvision_segmentation.build("lraspp_mobilenet_v3_large", seed=21),
     torchvision_segmentation.CHW, False),
    # The smallest variant of every CNN classifier family (resnet18/50, mobilenet_v2 above).
    *[pytest.param(arch, lambda arch=arch: torchvision_classifiers.build(arch, seed=22),
                   torchvision_classifiers.chw(arch), True, id=arch)
      for arch in torchvision_classifiers.ARCHS
      if arch not in ("resnet18", "resnet50", "mobilenet_v2")],
    ("shufflenet_v2_x0_5-static",
     lambda: torchvision_classifiers.build("shufflenet_v2_x0_5", seed=23),
     torchvision_classifiers.chw("shufflenet_v2_x0_5"), False),
]


def dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


@pytest.mark.parametrize("name,build,chw,dynamic", CASES,
                         ids=[c[0] if isinstance(c, tuple) else c.id for c in CASES])
def test_exported_program_matches_torch(name, build, chw, dynamic, tmp_path):
    model = build()
    archive = tmp_path / f"{name}.pt2"
    common.export_pt2(model, chw, dynamic, archive)
    out = tmp_path / f"{name}.onnx"
    proc = ok(run_ckpt("to-onnx", archive, "-o", out))
    batch_note = "(declared dynamic)" if dynamic else "made dynamic"
    assert batch_note in proc.stderr, proc.stderr
    c, h, w = chw
    assert proc.stdout.strip() == (
        f"atc --model={out} --framework=5 --output={tmp_path / name} --input_format=NCHW "
        f"--input_shape=\"input:-1,{c},{h},{w}\" --dynamic_batch_size=\"1,2,4,8\" "
        f"--soc_version=Ascend310P3")
    proto = onnx.load(str(out))
    assert proto.ir_version == 6
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 11)]
    ops = [n.op_type for n in proto.graph.node]
    banned = {"Identity", "Shape", "Gather", "Unsqueeze", "BatchNormalization"}
    if name in torchvision_classifiers.KEEPS_BN:
        banned.remove("BatchNormalization")
    assert not set(ops) & banned, ops
    assert dims(proto.graph.input[0]) == ["batch", *chw]
    assert all(dims(o)[0] == "batch" for o in proto.graph.output)
    if name.startswith("unet"):
        modes = sorted(
            next(a.s.decode() for a in n.attribute if a.name == "coordinate_transformation_mode")
            for n in proto.graph.node if n.op_type == "Resize")
        assert modes == ["align_corners", "asymmetric", "pytorch_half_pixel"]
    if name.startswith("fcn"):
        assert [o.name for o in proto.graph.output] == ["out", "aux"]
    check_parity(model, out, chw, torch.Generator().manual_seed(11))


@pytest.mark.parametrize("dynamic", [True, False], ids=["dynamic", "static"])
def test_rootnet_with_two_inputs_matches_torch(dynamic, tmp_path):
    """ResNet-50, three deconvs, soft-argmax with `arange`, and a second input `k_value`:
    both ONNX inputs named after `forward`'s parameters, with the batch."""
    model = rootnet.build(seed=16)
    gen = torch.Generator().manual_seed(17)
    batch = torch.export.Dim("batch")
    shapes = {"x": {0: batch}, "k_value": {0: batch}} if dynamic else None
    program = torch.export.export(model, rootnet.example(2, gen), dynamic_shapes=shapes)
    archive = tmp_path / "rootnet.pt2"
    torch.export.save(program, str(archive))
    out = tmp_path / "rootnet.onnx"
    proc = ok(run_ckpt("to-onnx", archive, "-o", out))
    c, h, w = rootnet.CHW
    assert f"inputs x [batch, {c}, {h}, {w}], k_value [batch, 1]" in proc.stderr, proc.stderr
    assert f'--input_shape="x:-1,{c},{h},{w};k_value:-1,1"' in proc.stdout, proc.stdout
    assert "--input_shape" not in proc.stderr, proc.stderr
    rootnet.check_export(model, out, BATCHES, gen)
    refused = run_ckpt("to-onnx", archive, "-o", tmp_path / "n.onnx", "--input-name", "image")
    assert refused.returncode == 1 and "the model takes 2 (x, k_value)" in refused.stderr


class BatchSizedFactories(torch.nn.Module):
    """Tensors sized by the batch but the same for every sample: a factory, and a
    parameter expanded over the batch."""

    def __init__(self):
        super().__init__()
        self.bias = torch.nn.Parameter(torch.randn(3, 1, 4))

    def forward(self, x):
        ones = torch.ones(x.shape[0], 3, 4, 4)
        return x * (ones + 1.0) + self.bias.expand(x.shape[0], 3, 4, 4)


def test_factories_sized_by_the_batch_are_the_same_for_every_sample(tmp_path):
    model = BatchSizedFactories().eval()
    archive = tmp_path / "m.pt2"
    common.export_pt2(model, (3, 4, 4), True, archive)
    out = tmp_path / "m.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", out))
    ops = {n.op_type for n in onnx.load(str(out)).graph.node}
    assert not ops & {"Expand", "ConstantOfShape", "Shape"}, ops
    check_parity(model, out, (3, 4, 4), torch.Generator().manual_seed(0))


class BoolFactoriesSizedByTheBatch(torch.nn.Module):
    """Bool masks the same for every sample, sized by the batch: onnxruntime has no bool
    `Where`, so the file must pick them at another type and cast."""

    def forward(self, x):
        return torch.zeros(x.shape[0], 3, dtype=torch.bool), torch.ones_like(x, dtype=torch.bool)


def test_bool_factories_sized_by_the_batch_run_in_onnxruntime_and_match_torch(tmp_path):
    import numpy as np
    import onnxruntime as ort

    model = BoolFactoriesSizedByTheBatch().eval()
    archive = tmp_path / "m.pt2"
    common.export_pt2(model, (4,), True, archive)
    out = tmp_path / "m.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", out))
    onnx.checker.check_model(onnx.load(str(out)), full_check=True)
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    for b in (1, 3):
        x = torch.randn(b, 4)
        x[0, 0] = float("nan")
        got = session.run(None, {session.get_inputs()[0].name: x.numpy()})
        for g, r in zip(got, model(x)):
            assert g.dtype == np.bool_ and np.array_equal(g, r.numpy()), (b, g, r)


class BatchSum(torch.nn.Module):
    def forward(self, x):
        return x.sum(dim=0, keepdim=True) + x


class BatchCumsum(torch.nn.Module):
    def forward(self, x):
        return torch.ones(x.shape[0], 3, 4, 4).cumsum(0) * x


class BatchRunningOps(torch.nn.Module):
    """An op along the batch of a value the same for every sample, none of them named
    anywhere in ckpt: the export finds each differs from sample to sample."""

    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, x):
        return self.op(torch.full((x.shape[0], 3, 4, 4), 0.5)) * x


class SamplesOfAUniformValue(torch.nn.Module):
    """Mixtral's mask code exported without a dynamic batch: positions expanded over the
    batch, then indexed by the literal sample numbers `arange(2)` of the traced batch."""

    def forward(self, x):
        positions = torch.arange(4.0).unsqueeze(0).expand(x.shape[0], -1)
        rows = torch.arange(x.shape[0])[:, None]
        picked = positions[rows, torch.arange(4)[None, :]]
        return x * picked.reshape(-1, 1, 1, 4)


def test_a_value_the_same_for_every_sample_indexed_by_sample_numbers_matches_torch(tmp_path):
    model = SamplesOfAUniformValue().eval()
    archive = tmp_path / "m.pt2"
    common.export_pt2(model, (3, 4, 4), False, archive)
    out = tmp_path / "m.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", out))
    check_parity(model, out, (3, 4, 4), torch.Generator().manual_seed(0))


class FirstFramesOfFoldedBatch(torch.nn.Module):
    """TimeSformer's `embeddings[:batch_size, 0]` on a batch×frames axis: the first B rows
    are the first samples' frames, not one row per sample."""

    def forward(self, x):
        frames = x.reshape(x.shape[0] * 3, 4, 4)
        return frames[: x.shape[0], 0] * 2


@pytest.mark.parametrize("model,node,reason", [
    (BatchSum(), "node `sum_1`", "it works along dimension 0, the batch"),
    (BatchCumsum(), "node `cumsum`", "differs from sample to sample, which mixes samples"),
    (FirstFramesOfFoldedBatch(), "node `slice", "takes rows of other samples: it mixes samples"),
    (BatchRunningOps(lambda t: t.cumprod(0)), "node `cumprod`", "differs from sample to sample"),
    (BatchRunningOps(lambda t: t.logcumsumexp(0)), "node `logcumsumexp`",
     "differs from sample to sample"),
    (BatchRunningOps(lambda t: t.softmax(0)), "node `softmax`", "differs from sample to sample"),
], ids=["batch-reduction", "running-sum-over-the-batch", "first-rows-of-batch-times-frames",
        "running-product-over-the-batch", "logcumsumexp-over-the-batch",
        "softmax-over-the-batch"])
def test_constants_and_reductions_across_the_batch_are_refused(model, node, reason, tmp_path):
    archive = tmp_path / "m.pt2"
    common.export_pt2(model, (3, 4, 4), True, archive)
    out = tmp_path / "m.onnx"
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1
    assert node in proc.stderr and reason in proc.stderr, proc.stderr
    assert not out.exists()


class PartialWrite(torch.nn.Module):
    """`x[:, :, 1:, 1:] = y` (MViT's relative positions beside a class token): a write into
    part of an activation through two slices."""

    def forward(self, x):
        x = x * 2
        x[:, :, 1:, 1:] = x[:, :, 1:, 1:].sigmoid() + 1.0
        return x * 3


class SelectWrite(torch.nn.Module):
    """`x[:, 0] = y`: a write through `select`."""

    def forward(self, x):
        x = x * 2
        x[:, 0] = x[:, 1].sigmoid()
        return x


class PoolIntoEmpty(torch.nn.Module):
    """doctr's traceable adaptive average pool: `out = torch.empty(N, C, 1, 3)` filled
    window by window, `out[:, :, oh, ow] = x[…].mean(…)`: writes through a slice of the
    whole batch and selects."""

    def forward(self, x):
        n, c, h, w = x.shape
        out = torch.empty((n, c, 1, 3), dtype=x.dtype)
        for ow in range(3):
            out[:, :, 0, ow] = x[:, :, :, ow * w // 3:((ow + 1) * w + 2) // 3].mean(dim=(-2, -1))
        return out


@pytest.mark.parametrize("model", [PartialWrite(), SelectWrite(), PoolIntoEmpty()],
                         ids=["slices", "select", "into-empty"])
def test_a_write_through_slices_into_an_activation_matches_torch(model, tmp_path):
    model = model.eval()
    archive = tmp_path / "m.pt2"
    common.export_pt2(model, (3, 4, 4), True, archive)
    out = tmp_path / "m.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", out))
    check_parity(model, out, (3, 4, 4), torch.Generator().manual_seed(0))


class WithNone(torch.nn.Module):
    """Returns `None` among its outputs, as torchaudio's wav2vec2 returns `(x, lengths)`
    without lengths."""

    def __init__(self, structure):
        super().__init__()
        self.structure = structure

    def forward(self, x):
        y = (x * 2).sigmoid()
        if self.structure == "pair":
            return y, None
        return {"logits": y, "lengths": None, "mean": y.mean(dim=1)}


@pytest.mark.parametrize("structure,names", [
    ("pair", ["output"]),
    ("dict", ["logits", "mean"]),
])
def test_a_none_output_is_left_out_and_the_rest_match_torch(structure, names, tmp_path):
    model = WithNone(structure).eval()
    archive = tmp_path / "m.pt2"
    common.export_pt2(model, (3, 4, 4), True, archive)
    out = tmp_path / "m.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", out))
    onnx.checker.check_model(str(out), full_check=True)
    assert [o.name for o in onnx.load(str(out)).graph.output] == names
    check_parity(model, out, (3, 4, 4), torch.Generator().manual_seed(0))


class SharedConvNorm(torch.nn.Module):
    """One conv-and-BatchNorm block applied twice (doctr's VIPTR applies its projection in
    a loop): the BatchNorm is folded into the conv once, and both calls read it."""

    def __init__(self, conv=torch.nn.Conv2d):
        super().__init__()
        self.block = torch.nn.Sequential(conv(3, 3, 3, padding=1), torch.nn.BatchNorm2d(3))
        with torch.no_grad():
            self.block[1].running_mean.normal_(0, 0.1)
            self.block[1].running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        return self.block(self.block(x).relu() + x)


@pytest.mark.parametrize("conv", [torch.nn.Conv2d, torch.nn.ConvTranspose2d],
                         ids=["conv", "transposed"])
def test_a_conv_and_norm_block_applied_twice_is_folded_once(conv, tmp_path):
    torch.manual_seed(6)
    model = SharedConvNorm(conv).eval()
    archive = tmp_path / "m.pt2"
    common.export_pt2(model, (3, 8, 8), True, archive)
    out = tmp_path / "m.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", out))
    proto = onnx.load(str(out))
    fused = [i.name for i in proto.graph.initializer if "fused_bn" in i.name]
    assert sorted(fused) == ["block.0.bias.fused_bn", "block.0.weight.fused_bn"], fused
    assert [n.op_type for n in proto.graph.node].count(
        "Conv" if conv is torch.nn.Conv2d else "ConvTranspose") == 2
    check_parity(model, out, (3, 8, 8), torch.Generator().manual_seed(0))


class TransposedWrite(torch.nn.Module):
    """`x.transpose(2, 3)[:, 0] = y`: a write through a transpose."""

    def forward(self, x):
        x = x * 2
        x.transpose(2, 3)[:, 0] = x[:, 1].sigmoid()
        return x


class StaleView(torch.nn.Module):
    """A full view of a tensor read after a copy overwrote the tensor."""

    def forward(self, x):
        x = x * 2
        before = x[:, :]
        x[:, :, 0:] = x.sigmoid()
        return x + before


@pytest.mark.parametrize("model,reason", [
    (TransposedWrite(), "only through slices of step 1, selects and reshapes"),
    (StaleView(), "is read after it"),
], ids=["through-transpose", "stale-view"])
def test_writes_into_activations_that_torch_would_alias_are_refused(model, reason, tmp_path):
    archive = tmp_path / "m.pt2"
    common.export_pt2(model, (3, 4, 4), True, archive)
    out = tmp_path / "m.onnx"
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "node `copy_" in proc.stderr and reason in proc.stderr, proc.stderr
    assert not out.exists()


class Frozen(torch.nn.Module):
    """Folds the batch into the channels: only valid at the traced batch size."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 1)

    def forward(self, x):
        y = self.conv(x)
        return y.reshape(1, -1, 8, 8)


def test_a_program_that_freezes_the_batch_is_refused_naming_the_node(tmp_path):
    archive = tmp_path / "frozen.pt2"
    common.export_pt2(Frozen(), (3, 8, 8), False, archive)
    out = tmp_path / "frozen.onnx"
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1
    assert "node `reshape`" in proc.stderr and "torch.ops.aten.reshape.default" in proc.stderr
    assert "y.reshape(1, -1, 8, 8)" in proc.stderr, proc.stderr
    assert not out.exists()


class Warp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 2, 1)

    def forward(self, x):
        y = self.conv(x)
        return torch.ops.aten.logit_backward(y, y)


def test_an_unsupported_op_is_named(tmp_path):
    archive = tmp_path / "warp.pt2"
    common.export_pt2(Warp(), (3, 8, 8), True, archive)
    proc = run_ckpt("to-onnx", archive, "-o", tmp_path / "warp.onnx")
    assert proc.returncode == 1
    assert "ckpt has no lowering of this op to ATC-clean opset-11 operators" in proc.stderr
    assert "node `logit_backward`" in proc.stderr, proc.stderr
    assert "torch.ops.aten.logit_backward.default" in proc.stderr
    assert "call: aten.logit_backward.default(grad_output: as_tensor" in proc.stderr
    assert "torch.ops.aten.logit_backward(y, y)" in proc.stderr
