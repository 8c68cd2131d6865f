"""`ckpt atc-check` on files ckpt writes and on files torch's own exporter writes, and the
lowerings that keep ATC's meaning: `argmax`/`argmin` with `keepdim` on an axis other than
1 (ATC's parser puts a kept axis back at position 1), and average pooling on ATC's AI CPU
path (more than 255 kernel elements or a stride above 63), which ignores
`count_include_pad=False` and `ceil_mode`.
"""
import json
import warnings

import onnx
import pytest
import torch
import torch.nn.functional as F

import _coverage as cov
from _util import ckpt_bin, run_ckpt

INPUTS = [cov.Input("x", (3, 12, 14))]


class Kept(torch.nn.Module):
    """argmax/argmin/max.dim with keepdim on every per-sample axis."""

    def forward(self, x):
        outs = []
        for dim in (1, 2, 3, -1):
            outs.append(x.argmax(dim=dim, keepdim=True).float())
            outs.append(x.argmin(dim=dim, keepdim=True).float())
            values, indices = x.max(dim=dim, keepdim=True)
            outs += [values, indices.float()]
        return tuple(outs)


class Resized(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x):
        y = self.conv(x)
        return F.interpolate(y, size=(1, 5), mode="bilinear", align_corners=False)


def test_kept_arg_axes_convert_with_torchs_shapes_and_pass_atc_check(tmp_path):
    model = Kept().eval()
    path = cov.convert("pt2", model, INPUTS, tmp_path, "kept", ckpt_bin())
    verdict = cov.judge(path, model, INPUTS)
    assert verdict.category == "ok", verdict.detail
    nodes = onnx.load(str(path)).graph.node
    kept = [n for n in nodes if n.op_type in ("ArgMax", "ArgMin")
            and any(a.name == "keepdims" and a.i == 1 for a in n.attribute)]
    assert all(next(a.i for a in n.attribute if a.name == "axis") == 1 for n in kept), \
        "keepdims=1 written on an axis other than 1"


def test_atc_check_reports_torch_exporters_files_naming_the_nodes(tmp_path):
    path = tmp_path / "torch.onnx"
    model = Kept().eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.randn(2, 3, 12, 14),), str(path), opset_version=11,
                          dynamo=False, input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    proc = run_ckpt("atc-check", path)
    print(proc.stdout)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    changed = [line for line in proc.stdout.splitlines() if line.startswith("CHANGES MEANING")]
    # torch writes keepdims=1 ArgMax/ArgMin on axes 2 and 3 (and -1): each is named.
    assert len(changed) >= 4 and all("ArgM" in line and "position 1" in line
                                     for line in changed), proc.stdout
    report = json.loads(run_ckpt("atc-check", path, "--json").stdout)
    assert report["exit_code"] == 2 and report["opset"] == 11
    assert {f["level"] for f in report["findings"]} >= {"changes-meaning"}
    assert all(f["node"] and f["op"] for f in report["findings"])


def test_atc_check_rejects_torchs_computed_resize_sizes(tmp_path):
    path = tmp_path / "resize.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Resized().eval(), (torch.randn(2, 3, 12, 14),), str(path),
                          opset_version=11, dynamo=False, input_names=["x"],
                          dynamic_axes={"x": {0: "batch"}})
    proc = run_ckpt("atc-check", path, "--cann", "8.1")
    assert proc.returncode == 2, proc.stdout
    assert any(line.startswith("REJECT") and "(Resize)" in line and "constant" in line
               for line in proc.stdout.splitlines()), proc.stdout


def test_ckpt_writes_what_atc_check_passes(tmp_path):
    model = Resized().eval()
    path = cov.convert("pt2", model, INPUTS, tmp_path, "resized", ckpt_bin())
    proc = run_ckpt("atc-check", path)
    assert proc.returncode == 0, proc.stdout
    assert cov.judge(path, model, INPUTS).category == "ok"


def test_unreadable_files_and_unknown_generations_are_one_line_errors(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00not a model\xff" * 3)
    proc = run_ckpt("atc-check", bad)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and str(bad) in proc.stderr, proc.stderr
    proc = run_ckpt("atc-check", tmp_path / "missing.onnx")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    proc = run_ckpt("atc-check", bad, "--cann", "7.0")
    assert proc.returncode == 1 and "unknown generation" in proc.stderr


class BigPool(torch.nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.kw = kw

    def forward(self, x):
        return F.avg_pool2d(x, **self.kw)


@pytest.mark.parametrize("kw, refused", [
    (dict(kernel_size=16, stride=1, padding=2, count_include_pad=False), True),
    (dict(kernel_size=16, stride=2, ceil_mode=True), True),
    (dict(kernel_size=16, stride=1, padding=2, count_include_pad=True), False),
    (dict(kernel_size=15, stride=2, padding=3, ceil_mode=True, count_include_pad=False), False),
], ids=["uncounted-pad", "ceil", "counted-pad", "small-kernel"])
def test_ai_cpu_average_pools_convert_or_are_refused_naming_the_node(kw, refused, tmp_path):
    inputs = [cov.Input("x", (2, 41, 41))]
    model = BigPool(**kw).eval()
    if refused:
        with pytest.raises(cov.ConversionError, match=r"avg_pool2d.*AI CPU"):
            cov.convert("pt2", model, inputs, tmp_path, "pool", ckpt_bin())
    else:
        path = cov.convert("pt2", model, inputs, tmp_path, "pool", ckpt_bin())
        assert cov.judge(path, model, inputs).category == "ok"
