"""`ckpt to-onnx` on TorchScript archives (`torch.jit.trace` + `torch.jit.save`) against
torch eager: torchvision resnet18 and mobilenet_v2 (random init, BatchNorm statistics
randomised or calibrated so folding is exercised), the smallest variant of every other CNN
classifier family and the segmentation models (dict outputs, traced with strict=False) of
`models/`, and a small UNet (transposed conv,
nearest and bilinear upsampling, skip concatenation, sigmoid). Each is traced at batch 2;
the export must pass `onnx.checker.check_model(full_check=True)` and match torch eager in
onnxruntime at batch 1, 3 and 8 from one file, within max |diff| <= 1e-4 * max(1, max |ref|),
for every output (named after the dict keys when there are several).
"""
import sys
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torchvision

from _util import FIXTURES, check_parity, ok, run_ckpt

sys.path.insert(0, str(FIXTURES / "script"))
from models import NarrowCnn, TinyUNet, randomise_bn  # noqa: E402  (fixtures/script/models.py)

sys.path.insert(0, str(Path(__file__).resolve().parent / "models"))
import mixer  # noqa: E402  (the `.pt2` test's models, traced here instead of exported)
import op_zoo  # noqa: E402
import rootnet  # noqa: E402
import tokens  # noqa: E402
import torchvision_classifiers  # noqa: E402
import torchvision_segmentation  # noqa: E402
import unet  # noqa: E402
import view_head  # noqa: E402

BATCHES = (1, 3, 8)
TRACE_BATCH = 2


def calibrate_bn(model, chw, gen):
    """One train-mode pass on random images: random-init MobileNets otherwise give an
    input-independent output, which would make parity vacuous."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.reset_running_stats()
            m.momentum = None
    model.train()
    model(torch.randn(8, *chw, generator=gen))
    model.eval()


def build(name, gen):
    if name == "resnet18":
        model = torchvision.models.resnet18(weights=None)
        randomise_bn(model, gen)
        with torch.no_grad():
            for n, m in model.named_modules():
                if n.startswith("layer") and n.endswith(".bn2"):
                    m.weight.mul_(0.2)
        return model.eval(), (3, 224, 224)
    if name == "mobilenet_v2":
        model = torchvision.models.mobilenet_v2(weights=None)
        with torch.no_grad():
            calibrate_bn(model, (3, 224, 224), gen)
            head = model.classifier[1]
            std = model(torch.randn(4, 3, 224, 224, generator=gen)).std()
            head.weight.div_(std)
            head.bias.div_(std)
        return model.eval(), (3, 224, 224)
    if name in SHARED:
        module = SHARED[name]
        return module.build(seed=3), module.CHW
    if name.startswith("zoo_"):
        return op_zoo.build(name.removeprefix("zoo_"), seed=4), op_zoo.CHW
    if name in torchvision_classifiers.ARCHS:
        return torchvision_classifiers.build(name, seed=22), torchvision_classifiers.chw(name)
    if name in torchvision_segmentation.ARCHS:
        return torchvision_segmentation.build(name, seed=20), torchvision_segmentation.CHW
    model = {"unet": TinyUNet, "narrow_cnn": NarrowCnn}[name]()
    randomise_bn(model, gen)
    return model.eval(), (3, 32, 32)


# The models of `test_pt2.py`, so that both fronts are checked on the same graphs.
SHARED = {"pt2_unet": unet, "view_head": view_head, "tokens": tokens, "mixer": mixer}


# Every CNN classifier family and the segmentation models, built as `test_pt2.py` builds them.
TORCHVISION = [
    *(a for a in torchvision_classifiers.ARCHS if a not in ("resnet18", "mobilenet_v2")),
    *torchvision_segmentation.ARCHS,
]


@pytest.mark.parametrize("name", [
    "resnet18", "mobilenet_v2", "unet", "narrow_cnn", *SHARED,
    "zoo_elementwise", "zoo_reductions", "zoo_indexing",
    *TORCHVISION])
def test_traced_model_matches_torch(name, tmp_path):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    model, chw = build(name, gen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        # strict=False: the segmentation models return a dict.
        traced = torch.jit.trace(
            model, torch.randn(TRACE_BATCH, *chw, generator=gen), strict=False)
    archive = tmp_path / f"{name}.pt"
    torch.jit.save(traced, str(archive))
    out = tmp_path / f"{name}.onnx"
    proc = ok(run_ckpt("to-onnx", archive, "-o", out))
    assert f"traced at batch {TRACE_BATCH}, exported with a dynamic batch" in proc.stderr
    shape = ",".join(map(str, chw))
    assert proc.stdout.strip() == (
        f"atc --model={out} --framework=5 --output={tmp_path / name} --input_format=NCHW "
        f"--input_shape=\"input:-1,{shape}\" --dynamic_batch_size=\"1,2,4,8\" "
        f"--soc_version=Ascend310P3")

    proto = onnx.load(str(out))
    onnx.checker.check_model(proto, full_check=True)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 11)]
    ops = [n.op_type for n in proto.graph.node]
    banned = {"Identity", "Shape", "Gather", "Unsqueeze", "BatchNormalization"}
    if name in torchvision_classifiers.KEEPS_BN:
        banned.remove("BatchNormalization")
    assert not set(ops) & banned, ops
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"

    if name == "fcn_resnet50":
        assert [o.name for o in proto.graph.output] == ["out", "aux"]
    check_parity(model, out, chw, gen)


def test_traced_rootnet_with_two_inputs_matches_torch(tmp_path):
    """ResNet-50, three deconvs, soft-argmax with `arange` (its traced size arithmetic
    evaluated), and a second input `k_value`: ONNX inputs named after `forward`'s
    parameters, with the batch."""
    model = rootnet.build(seed=18)
    gen = torch.Generator().manual_seed(19)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        traced = torch.jit.trace(model, rootnet.example(TRACE_BATCH, gen))
    archive = tmp_path / "rootnet.pt"
    torch.jit.save(traced, str(archive))
    out = tmp_path / "rootnet.onnx"
    proc = ok(run_ckpt("to-onnx", archive, "-o", out))
    c, h, w = rootnet.CHW
    assert f"inputs x [batch, {c}, {h}, {w}], k_value [batch, 1]; traced at batch {TRACE_BATCH}" in proc.stderr, proc.stderr
    assert f'--input_shape="x:-1,{c},{h},{w};k_value:-1,1"' in proc.stdout, proc.stdout
    rootnet.check_export(model, out, BATCHES, gen)


def test_scripted_model_is_refused_with_its_line(tmp_path):
    class Gate(torch.nn.Module):
        def forward(self, x):
            if bool(x.sum() > 0):
                return x * 2
            return x

    archive = tmp_path / "scripted.pt"
    torch.jit.save(torch.jit.script(Gate()), str(archive))
    proc = run_ckpt("to-onnx", archive, "-o", tmp_path / "x.onnx", "--input-shape", "3,4,4")
    assert proc.returncode == 1
    assert "`code/__torch__" in proc.stderr and "scripted control flow is not supported" in proc.stderr
    assert not (tmp_path / "x.onnx").exists()


@torch.jit.script
def _halve_until_small(x: torch.Tensor) -> torch.Tensor:
    # A loop torch.jit.script keeps (kornia's canny hysteresis).
    while bool((x.abs() > 1).any()):
        x = x / 2
    return x


class _ScriptedBeside(torch.nn.Module):
    """A scripted function called in the traced forward; `use` says whether the output
    reads its result."""

    def __init__(self, use):
        super().__init__()
        self.use = use

    def forward(self, x):
        small = _halve_until_small(x)
        return x * 2 + (small if self.use else 0)


def test_a_scripted_call_no_output_reads_is_dropped_and_one_it_reads_is_refused(tmp_path):
    """A trace keeps what the model computed and did not return (kornia's canny computes
    its hysteresis edges beside the magnitude): that part never blocks the export, as
    torch.export drops it; a scripted function whose result an output reads is refused,
    naming it."""
    gen = torch.Generator().manual_seed(3)
    example = torch.randn(2, 3, 4, generator=gen)
    for use in (False, True):
        archive = tmp_path / f"scripted_{use}.pt"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            torch.jit.save(torch.jit.trace(_ScriptedBeside(use), example), str(archive))
        out = tmp_path / f"scripted_{use}.onnx"
        proc = run_ckpt("to-onnx", archive, "-o", out)
        if use:
            assert proc.returncode == 1, proc.stderr
            assert "_halve_until_small` is a scripted function" in proc.stderr, proc.stderr
            assert not out.exists()
            continue
        ok(proc)
        session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name
        for b in (1, 3):
            x = torch.randn(b, 3, 4, generator=gen)
            got = session.run(None, {name: x.numpy()})[0]
            np.testing.assert_allclose(got, (x * 2).numpy(), rtol=1e-6, atol=1e-6)


class _WithExportedMethod(torch.nn.Module):
    """A traced forward beside a `@torch.jit.export` method with a default argument and a
    loop (torchaudio's wav2vec2 `extract_features`), and a weight-normalised convolution
    (`parametrizations.weight_norm`, whose scripted getter raises), as wav2vec2's positional
    convolution: scripted code the trace does not run."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.utils.parametrizations.weight_norm(
            torch.nn.Conv1d(3, 6, 3, padding=1), dim=2)

    @torch.jit.export
    def extract(self, x: torch.Tensor, times: int = 2) -> torch.Tensor:
        for _ in range(times):
            x = x * 2
        return x

    def forward(self, x):
        return self.conv(x).relu()


def test_scripted_methods_a_trace_does_not_run_do_not_block_it(tmp_path):
    model = _WithExportedMethod().eval()
    archive = tmp_path / "exported.pt"
    with torch.no_grad():
        torch.jit.save(torch.jit.trace(model, torch.randn(2, 3, 8)), str(archive))
    out = tmp_path / "exported.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", out))
    onnx.checker.check_model(str(out), full_check=True)
    check_parity(model, out, (3, 8), torch.Generator().manual_seed(5), batches=BATCHES)


class _PairedSamples(torch.nn.Module):
    """timm's csatv2 spatial attention: q, k and v unbound to [B, N] rows, so `q @ k.mT` is
    [B, B], each sample's scores against every other sample's keys."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(1, 3, bias=False)

    def forward(self, x):
        q, k, v = self.qkv(x.flatten(1).unsqueeze(-1)).unbind(-1)
        return ((q @ k.transpose(-1, -2)).softmax(dim=-1) @ v).unsqueeze(-1)


def test_a_product_pairing_the_samples_is_refused_as_mixing_them(tmp_path):
    """A value computed across samples (its sizes [1, 1] at batch 1, [2, 2] at batch 2)
    cannot follow a dynamic batch: refused naming the op and why, not as a shape unknown."""
    archive = tmp_path / "paired.pt"
    with torch.no_grad():
        traced = torch.jit.trace(_PairedSamples(), torch.randn(2, 1, 7, 7), check_trace=False)
    torch.jit.save(traced, str(archive))
    out = tmp_path / "paired.onnx"
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "matmul.default" in proc.stderr and "mixes samples" in proc.stderr, proc.stderr
    assert not out.exists()


class _StackedPair(torch.nn.Module):
    """RAFT's feature encoder: two images' batches concatenated along the batch, encoded in
    one pass and `chunk`ed apart again."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, image1, image2):
        features = self.conv(torch.cat([image1, image2], dim=0)).relu()
        f1, f2 = torch.chunk(features, chunks=2, dim=0)
        return (f1 * f2).sum(1)


def test_batches_stacked_along_the_batch_are_refused_naming_the_cat(tmp_path):
    """`cat` along the batch stacks whole batches (block after block), which no batch
    placement describes (a folded batch keeps each sample's rows together): refused naming
    the cat and what to do, before any file is written. torch.export refuses the same
    program with a dynamic batch (the `chunk` into halves specialises it)."""
    archive = tmp_path / "stacked.pt"
    pair = (torch.randn(2, 3, 8, 8), torch.randn(2, 3, 8, 8))
    with torch.no_grad():
        traced = torch.jit.trace(_StackedPair().eval(), pair, check_trace=False)
    torch.jit.save(traced, str(archive))
    out = tmp_path / "stacked.onnx"
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "cat.default" in proc.stderr and "stacks whole batches" in proc.stderr, proc.stderr
    assert not out.exists()
    batch = torch.export.Dim("batch")
    with pytest.raises(Exception, match="Constraints violated"):
        torch.export.export(_StackedPair().eval(), pair,
                            dynamic_shapes=({0: batch}, {0: batch}))
