"""`ckpt check` (the `libtorch` feature build, `$CKPT_CHECK_BIN`) against real torch:

- a traced model and its `ckpt to-onnx` export pass (exit 0) with one row per batch size,
  and the printed max |ref| is the one torch computes in Python on the documented inputs
  (`torch.manual_seed(seed)`, then `torch.randn` per batch and per input);
- the ONNX of one traced model against a differently seeded trace, and an ONNX whose
  classifier bias was nudged by 0.01, fail (exit 1, one stderr line);
- several inputs and outputs: tuple outputs by position, dict outputs by key (with the ONNX
  output order deliberately different from the dict's); and `ckpt to-onnx`'s own exports of
  the committed dict-output, tuple-output and two-input traces;
- a `.pt2` archive is refused with one line; the default build (`$CKPT_BIN`) says it lacks the
  feature.

`CKPT_CHECK_BIN` must be set (this file fails, never skips, without it). The binary links
libtorch from the venv's torch wheel: this file puts the wheel's `torch/lib` on the child's
LD_LIBRARY_PATH.
"""
import os
import subprocess
import sys
import warnings
from pathlib import Path

import onnx
import onnxruntime as ort
import pytest
import torch
import torchvision
from onnx import numpy_helper

from _util import FIXTURES, ok, run_ckpt

sys.path.insert(0, str(FIXTURES / "script"))
from models import conv_bn_relu, randomise_bn  # noqa: E402  (fixtures/script/models.py)

TORCH_LIB = Path(torch.__file__).parent / "lib"
BATCHES = (1, 3, 8)


def check_bin():
    path = os.environ.get("CKPT_CHECK_BIN")
    if not path:
        pytest.fail("CKPT_CHECK_BIN is not set: build the `libtorch` feature binary "
                    "(see docs/onnx.md, `Building ckpt check`) and point CKPT_CHECK_BIN at it", pytrace=False)
    if not Path(path).is_file():
        pytest.fail(f"CKPT_CHECK_BIN={path} does not exist", pytrace=False)
    return path


def run_check(*args):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        p for p in (str(TORCH_LIB), env.get("LD_LIBRARY_PATH")) if p)
    return subprocess.run([check_bin(), "check", *map(str, args)], capture_output=True,
                          text=True, timeout=600, env=env)


def rows(stdout):
    """{(batch, output): (max_abs, max_ref, rel, verdict)} from the printed table."""
    table = {}
    for line in stdout.strip().splitlines()[1:]:
        f = line.split()
        table[(int(f[0]), f[1])] = (float(f[-4]), float(f[-3]), float(f[-2]), f[-1])
    return table


def one_error_line(proc, name):
    assert proc.returncode == 1, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and name in lines[0], proc.stderr
    return lines[0]


def trace(model, chw, path, seed=1):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        x = torch.randn(2, *chw, generator=torch.Generator().manual_seed(seed))
        torch.jit.save(torch.jit.trace(model, x), str(path))
    return path


class SmallNet(torch.nn.Module):
    """conv-bn-relu, pool, flatten, linear: a trace of it runs at any batch size (unlike
    fixtures' NarrowCnn, whose `view` has the traced batch baked in)."""

    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(conv_bn_relu(3, 8), torch.nn.MaxPool2d(2),
                                            conv_bn_relu(8, 16))
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.pool(self.features(x)), 1))


def narrow(seed):
    torch.manual_seed(seed)
    model = SmallNet()
    randomise_bn(model, torch.Generator().manual_seed(seed))
    return model.eval()


def exported(tmp_path, name, model, chw):
    archive = trace(model, chw, tmp_path / f"{name}.pt")
    out = tmp_path / f"{name}.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", out))
    return archive, out


@pytest.mark.parametrize("name", ["small_net", "resnet18"])
def test_export_passes_with_the_documented_inputs(name, tmp_path):
    if name == "resnet18":
        torch.manual_seed(0)
        model, chw = torchvision.models.resnet18(weights=None).eval(), (3, 64, 64)
    else:
        model, chw = narrow(0), (3, 32, 32)
    archive, out = exported(tmp_path, name, model, chw)
    proc = run_check(out, "--against", archive, "--seed", "5")
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    assert proc.stderr.strip() == "ok: 3 comparisons within rel 1e-4 (seed 5)"
    table = rows(proc.stdout)
    assert sorted(table) == [(b, "output") for b in BATCHES]
    torch.manual_seed(5)
    for b in BATCHES:
        x = torch.randn(b, *chw)
        with torch.no_grad():
            ref = model(x)
        max_abs, max_ref, rel, verdict = table[(b, "output")]
        print(f"{name} batch {b}: max|diff| {max_abs:.3e} rel {rel:.3e} max|ref| {max_ref:.3e}")
        assert verdict == "ok" and rel <= 1e-4 and max_abs <= 1e-4 * max(1.0, max_ref)
        assert max_ref == pytest.approx(float(ref.abs().max()), rel=1e-3)


def test_a_different_model_fails(tmp_path):
    _, out = exported(tmp_path, "a", narrow(0), (3, 32, 32))
    other = trace(narrow(1), (3, 32, 32), tmp_path / "b.pt")
    proc = run_check(out, "--against", other)
    line = one_error_line(proc, "a.onnx")
    assert "3 of 3 comparisons exceed the tolerance 1e-4" in line, line
    assert all(r[3] == "FAIL" for r in rows(proc.stdout).values()), proc.stdout


def test_a_perturbed_initializer_fails(tmp_path):
    archive, out = exported(tmp_path, "narrow", narrow(0), (3, 32, 32))
    proto = onnx.load(str(out))
    bias = next(t for t in proto.graph.initializer if t.name == "head.bias")
    values = numpy_helper.to_array(bias).copy()
    values[3] += 0.01
    bias.CopyFrom(numpy_helper.from_array(values, bias.name))
    bad = tmp_path / "nudged.onnx"
    onnx.save(proto, str(bad))
    proc = run_check(bad, "--against", archive, "--batches", "1,3")
    line = one_error_line(proc, "nudged.onnx")
    assert "2 of 2 comparisons exceed" in line, line
    for max_abs, max_ref, rel, verdict in rows(proc.stdout).values():
        assert verdict == "FAIL" and max_abs == pytest.approx(0.01, rel=1e-3)
        assert rel == pytest.approx(0.01 / max(1.0, max_ref), rel=1e-3)
    # The same files pass when the tolerance allows the nudge.
    proc = run_check(bad, "--against", archive, "--batches", "1,3", "--tolerance", "0.1")
    assert proc.returncode == 0, proc.stderr


class TwoHeads(torch.nn.Module):
    """Two inputs; returns a dict (`as_dict`) or a tuple of two differently shaped tensors."""

    def __init__(self, as_dict):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.fc = torch.nn.Linear(5, 2)
        self.as_dict = as_dict

    def forward(self, image, features):
        maps = torch.relu(self.conv(image))
        scores = self.fc(features) + maps.mean(dim=(2, 3))[:, :2]
        return {"maps": maps, "scores": scores} if self.as_dict else (maps, scores)


@pytest.mark.parametrize("as_dict", [False, True])
def test_several_inputs_and_outputs(as_dict, tmp_path):
    torch.manual_seed(0)
    model = TwoHeads(as_dict).eval()
    example = (torch.randn(2, 3, 8, 8), torch.randn(2, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        traced = torch.jit.trace(model, example, strict=False)
    archive = tmp_path / "two.pt"
    torch.jit.save(traced, str(archive))
    out = tmp_path / "two.onnx"
    names = ["maps", "scores"] if as_dict else ["output_0", "output_1"]
    torch.onnx.export(model, example, str(out), dynamo=False, opset_version=11,
                      input_names=["image", "features"], output_names=names,
                      dynamic_axes={n: {0: "batch"} for n in ["image", "features", *names]})
    if as_dict:
        # ONNX outputs in the other order: only matching by key can pass.
        proto = onnx.load(str(out))
        swapped = list(reversed(proto.graph.output))
        del proto.graph.output[:]
        proto.graph.output.extend(swapped)
        onnx.save(proto, str(out))
        names.reverse()
    assert [o.name for o in ort.InferenceSession(str(out)).get_outputs()] == names
    proc = run_check(out, "--against", archive)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    assert sorted(rows(proc.stdout)) == sorted((b, n) for b in BATCHES for n in names)


def test_pt2_is_refused_with_one_line(tmp_path):
    model = narrow(0)
    _, out = exported(tmp_path, "narrow", model, (3, 32, 32))
    pt2 = tmp_path / "narrow.pt2"
    torch.export.save(torch.export.export(model, (torch.randn(2, 3, 32, 32),)), str(pt2))
    line = one_error_line(run_check(out, "--against", pt2), "narrow.pt2")
    assert "torch.export (.pt2) archive cannot be run by libtorch" in line, line


def test_default_build_says_it_lacks_the_feature(tmp_path):
    proc = run_ckpt("check", tmp_path / "m.onnx", "--against", tmp_path / "m.pt")
    line = one_error_line(proc, "m.onnx")
    assert "built without the `libtorch` feature" in line, line


@pytest.mark.parametrize("name,outputs", [
    ("segmenter", ["out", "aux"]),       # a dict: ONNX outputs named after its keys
    ("shuffle", ["output_0", "output_1"]),  # a tuple: numbered
    ("rootnet", ["output"]),             # two inputs (`x`, `k_value`)
])
def test_ckpt_exports_with_several_inputs_or_outputs_pass(name, outputs, tmp_path):
    """`ckpt to-onnx`'s own multi-output and multi-input exports of the committed traced
    fixtures (fixtures/script/) match the traces in libtorch, output by output."""
    archive = FIXTURES / "script" / f"{name}.pt"
    onnx_path = tmp_path / f"{name}.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", onnx_path))
    proc = run_check(onnx_path, "--against", archive)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    table = rows(proc.stdout)
    assert sorted(table) == sorted((b, o) for b in BATCHES for o in outputs), proc.stdout
    assert all(v[-1] == "ok" and v[2] <= 1e-4 for v in table.values()), proc.stdout
