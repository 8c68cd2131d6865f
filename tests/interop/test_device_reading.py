"""The device reading (`ckpt atc-check --device-reading`: each node replaced by what ATC's
parser turns it into, from the model of CANN's parser in crates/onnx/src/cann.rs) in the interop
tier.

Two halves, one per direction of the check:
- every case the parser reads differently from ONNX, as a torch model through `ckpt
  to-onnx`: it converts with torch's meaning in onnxruntime *and* in the device reading
  (`_coverage.judge` runs both), or ckpt refuses it naming the node;
- for every rule, a hand-made ONNX file whose device reading differs from onnxruntime's
  reading of the file, so the device check reports it (naming the node) and `atc-check`
  flags it: the check can fail. Where the device's arithmetic is simple, the reading is
  also compared with an independent numpy reading of the Ascend operator.
"""
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

import _coverage as cov
from _util import ckpt_bin, run_ckpt


# ------------------------------------------------------------------ torch through ckpt
class Interpolate(torch.nn.Module):
    def __init__(self, sizes, **how):
        super().__init__()
        self.sizes, self.how = sizes, how

    def forward(self, x):
        return tuple(F.interpolate(x, size=s, **self.how) for s in self.sizes)


class Args(torch.nn.Module):
    """Kept arg axes off 1, argmin and topk indices as outputs (int64 in torch; ATC's
    plugins give int32, so an output straight from TopK's indices needs the graph's Cast)."""

    def forward(self, x):
        return (x.argmax(dim=2, keepdim=True), x.argmin(dim=-1, keepdim=True),
                x.argmin(dim=1), x.topk(3, dim=-1)[1].float() * 2, x.topk(2, dim=1)[0],
                x.topk(2, dim=-1)[1])


class Pool(torch.nn.Module):
    def __init__(self, **kw):
        super().__init__()
        self.kw = kw

    def forward(self, x):
        return F.avg_pool2d(x, **self.kw)


class Addmm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(8, 5))
        self.b = torch.nn.Parameter(torch.randn(5))

    def forward(self, x):
        return torch.addmm(self.b, x, self.w, beta=0.5, alpha=2.0)


class Recurrent(torch.nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.rnn = cell(6, 5, batch_first=True)

    def forward(self, x):
        return self.rnn(x)[0]


class Softmaxes(torch.nn.Module):
    def forward(self, x):
        return torch.log_softmax(x, dim=1), torch.softmax(x, dim=1), F.log_softmax(x, dim=-1)


TORCH_CASES = {
    # 7 → 31 lost a row to the nearest f32 scale; 14×20 → 16×24 nearest read other rows.
    "resize-sizes": (Interpolate([(31, 16), (16, 24), (2, 82)], mode="bilinear",
                                 align_corners=False), (2, 7, 14), True),
    "resize-nearest-ratios": (Interpolate([(16, 24), (31, 16), (9, 13)], mode="nearest"),
                              (2, 14, 20), True),
    "bilinear-to-length-1": (Interpolate([(1, 5), (7, 1)], mode="bilinear",
                                         align_corners=False), (2, 14, 20), False),
    "arg-axes-and-int32": (Args(), (3, 12, 14), True),
    "ai-cpu-pool-counted-pad": (Pool(kernel_size=16, stride=1, padding=2,
                                     count_include_pad=True), (2, 41, 41), True),
    "ai-cpu-pool-stride-64": (Pool(kernel_size=4, stride=64), (2, 130, 130), True),
    "gemm-alpha-beta": (Addmm(), (8,), False),
    "gru": (Recurrent(torch.nn.GRU), (4, 6), False),
    "lstm": (Recurrent(torch.nn.LSTM), (4, 6), False),
    "log-softmax-axes": (Softmaxes(), (4, 6), False),
}


@pytest.mark.parametrize("case", TORCH_CASES)
def test_each_case_keeps_torchs_meaning_in_onnx_and_on_the_device(case, tmp_path):
    model, shape, read = TORCH_CASES[case]
    inputs = [cov.Input("x", shape)]
    model = model.eval()
    path = cov.convert("pt2", model, inputs, tmp_path, case, ckpt_bin())
    verdict = cov.judge(path, model, inputs)
    print(case, verdict.device, verdict.ops)
    assert verdict.category == "ok", verdict.detail
    # Which cases have a node the device reads differently is known: the reading must have
    # run on those (and said so when it did not need to).
    if read:
        assert "match torch" in verdict.device, verdict.device
    else:
        assert verdict.device, "the device check said nothing"


@pytest.mark.parametrize("kw", [
    dict(kernel_size=16, stride=1, padding=2, count_include_pad=False),
    dict(kernel_size=16, stride=2, ceil_mode=True),
], ids=["uncounted-pad", "ceil"])
def test_ai_cpu_pools_convert_with_the_devices_meaning_or_are_refused_naming_the_node(
        kw, tmp_path):
    inputs = [cov.Input("x", (2, 41, 41))]
    model = Pool(**kw).eval()
    try:
        path = cov.convert("pt2", model, inputs, tmp_path, "pool", ckpt_bin())
    except cov.ConversionError as e:
        assert "avg_pool2d" in str(e) and "AI CPU" in str(e), e
        return
    verdict = cov.judge(path, model, inputs)
    assert verdict.category == "ok", verdict.detail
    assert "match torch" in verdict.device, verdict.device


# ------------------------------------------------------------------ hand-made files
class OnnxReference:
    """onnxruntime's reading of an ONNX file, standing in for torch as the reference."""

    def __init__(self, path):
        self.session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        self.names = [i.name for i in self.session.get_inputs()]

    def __call__(self, *xs):
        outs = self.session.run(None, {n: x.numpy() for n, x in zip(self.names, xs)})
        return tuple(torch.from_numpy(o) for o in outs)


def save(path, nodes, x_shape, outputs, inits=(), opset=11):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", *x_shape])
    outs = [helper.make_tensor_value_info(name, elem, rest[0] if rest else None)
            for name, elem, *rest in outputs]
    graph = helper.make_graph(nodes, "g", [x], outs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=7)
    onnx.save(model, str(path))
    return path


def tensor(name, shape, seed):
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return numpy_helper.from_array(values, name)


def rnn(op, hidden=3, peepholes=False, **attrs):
    gates = 4 if op == "LSTM" else 3
    ins = ["x", "W", "R", "B"]
    inits = [tensor("W", (1, gates * hidden, 4), 1), tensor("R", (1, gates * hidden, hidden), 2),
             tensor("B", (1, 2 * gates * hidden), 3)]
    if peepholes:
        ins += ["", "", "", "P"]
        inits.append(tensor("P", (1, 3 * hidden), 4))
    node = helper.make_node(op, ins, ["y"], name=f"cell_{op}", hidden_size=hidden, **attrs)
    return [node], (2, 4), [("y", TensorProto.FLOAT)], inits


def resize(mode, coords, n_in, n_out, **attrs):
    roi = numpy_helper.from_array(np.zeros(0, np.float32), "roi")
    scales = numpy_helper.from_array(
        np.array([1, 1, n_out[0] / n_in[0], n_out[1] / n_in[1]], np.float32), "scales")
    node = helper.make_node("Resize", ["x", "roi", "scales"], ["y"], name="the_resize",
                            mode=mode, coordinate_transformation_mode=coords, **attrs)
    return [node], (1, *n_in), [("y", TensorProto.FLOAT, ["b", 1, *n_out])], [roi, scales]


def pool(**attrs):
    node = helper.make_node("AveragePool", ["x"], ["y"], name="big_pool", **attrs)
    return [node], (1, 40, 40), [("y", TensorProto.FLOAT)], []


def one(op, outputs=(("y", TensorProto.FLOAT),), shape=(3, 5, 7), inits=(), ins=("x",),
        **attrs):
    node = helper.make_node(op, list(ins), [o for o, _ in outputs], name=f"the_{op}", **attrs)
    return [node], shape, list(outputs), list(inits)


I64 = TensorProto.INT64
HAND_MADE = {
    "gemm-alpha-beta": one("Gemm", shape=(4,), ins=("x", "w", "c"), alpha=2.0, beta=0.5,
                           inits=[tensor("w", (4, 3), 5), tensor("c", (3,), 6)]),
    "gru-linear-before-reset": rnn("GRU"),
    "lstm-clip": rnn("LSTM", clip=0.2),
    "lstm-input-forget": rnn("LSTM", input_forget=1),
    "lstm-peepholes": rnn("LSTM", peepholes=True),
    "argmax-kept-axis-2": one("ArgMax", [("y", I64)], axis=2),
    "argmin-int32": one("ArgMin", [("y", I64)], axis=1),
    "topk-int32": one("TopK", [("v", TensorProto.FLOAT), ("y", I64)], ins=("x", "k"),
                      inits=[numpy_helper.from_array(np.array([2], np.int64), "k")]),
    "log-softmax-default-axis": one("LogSoftmax"),
    "softmax-axis-1": one("Softmax", axis=1),
    "ai-cpu-pool-uncounted-pad": pool(kernel_shape=[16, 16], pads=[2, 2, 2, 2],
                                      count_include_pad=0),
    "ai-cpu-pool-ceil": pool(kernel_shape=[15, 20], strides=[2, 2], ceil_mode=1),
    "resize-nearest-ratio": resize("nearest", "asymmetric", (14, 20), (16, 24),
                                   nearest_mode="floor"),
    "resize-linear-half-pixel": resize("linear", "half_pixel", (4, 6), (8, 12)),
    "resize-linear-to-length-1": resize("linear", "pytorch_half_pixel", (14, 20), (1, 5)),
}


@pytest.mark.parametrize("case", HAND_MADE)
def test_the_device_check_fails_where_the_device_reads_a_file_otherwise(case, tmp_path):
    nodes, shape, outputs, inits = HAND_MADE[case]
    path = save(tmp_path / f"{case}.onnx", nodes, shape, outputs, inits)
    name = nodes[0].name
    # atc-check flags the node: it changes meaning, or, for the int32 indices (same values,
    # another type) and Softmax before opset 13 over a non-last axis (the parser leaves the
    # axis to a fusion pass), notes it.
    report = json.loads(run_ckpt("atc-check", path, "--json").stdout)
    flagged = [f for f in report["findings"] if f["node"] == name]
    assert flagged, report
    if "int32" not in case and case != "softmax-axis-1":
        assert report["exit_code"] == 2, report
    reference = OnnxReference(path)
    inputs = [cov.Input("x", shape)]
    problem, note = cov.device_parity(path, reference, inputs, ckpt_bin())
    print(case, problem)
    assert problem and name in problem, (problem, note)


def device_reading(path, tmp_path):
    shaped, out = tmp_path / "shaped.onnx", tmp_path / "device.onnx"
    onnx.shape_inference.infer_shapes_path(str(path), str(shaped))
    proc = run_ckpt("atc-check", shaped, "--device-reading", out)
    assert proc.returncode in (0, 2), proc.stderr
    return OnnxReference(out)


def test_the_reading_is_the_ascend_operators_arithmetic(tmp_path):
    """Independent numpy readings of ResizeNearestNeighborV2 (`⌊dst · f32(in/out)⌋`), of
    ResizeBilinearV2 without half-pixel centres (`dst · in/out`), of ArgMax's ExpandDims at
    axis 1, and of the AI CPU's zero-padded VALID pool, against the reading."""
    x = np.random.default_rng(0).standard_normal((2, 1, 14, 20)).astype(np.float32)
    path = save(tmp_path / "n.onnx", *resize("nearest", "asymmetric", (14, 20), (16, 24)))
    rows = np.floor(np.arange(16, dtype=np.float32) * np.float32(14 / 16)).astype(int)
    cols = np.floor(np.arange(24, dtype=np.float32) * np.float32(20 / 24)).astype(int)
    got = device_reading(path, tmp_path)(torch.from_numpy(x))[0].numpy()
    assert np.array_equal(got, x[:, :, rows][:, :, :, cols])

    x = np.random.default_rng(1).standard_normal((2, 1, 4, 6)).astype(np.float32)
    path = save(tmp_path / "l.onnx", *resize("linear", "half_pixel", (4, 6), (8, 12)))

    def legacy(n_in, n_out):
        c = np.minimum(np.arange(n_out) * n_in / n_out, n_in - 1)
        lo = np.floor(c).astype(int)
        hi = np.minimum(lo + 1, n_in - 1)
        return lo, hi, (c - lo).astype(np.float32)
    lo, hi, w = legacy(4, 8)
    y = x[:, :, lo] * (1 - w)[:, None] + x[:, :, hi] * w[:, None]
    lo, hi, w = legacy(6, 12)
    y = y[..., lo] * (1 - w) + y[..., hi] * w
    got = device_reading(path, tmp_path)(torch.from_numpy(x))[0].numpy()
    assert np.abs(got - y).max() < 1e-5

    x = np.random.default_rng(2).standard_normal((2, 3, 5, 7)).astype(np.float32)
    path = save(tmp_path / "a.onnx", *one("ArgMax", [("y", I64)], axis=2))
    got = device_reading(path, tmp_path)(torch.from_numpy(x))[0].numpy()
    assert np.array_equal(got, np.expand_dims(x.argmax(axis=2), 1))

    x = np.random.default_rng(3).standard_normal((2, 1, 40, 40)).astype(np.float32)
    path = save(tmp_path / "p.onnx", *pool(kernel_shape=[16, 16], pads=[2, 2, 2, 2],
                                            strides=[2, 2], count_include_pad=0, ceil_mode=1))
    padded = np.pad(x, ((0, 0), (0, 0), (2, 2), (2, 2)))
    n = (44 - 16) // 2 + 1
    want = np.array([[padded[..., 2 * i:2 * i + 16, 2 * j:2 * j + 16].mean(axis=(-1, -2))
                      for j in range(n)] for i in range(n)]).transpose(2, 3, 0, 1)
    got = device_reading(path, tmp_path)(torch.from_numpy(x))[0].numpy()
    assert got.shape == want.shape and np.abs(got - want).max() < 1e-5


def test_a_node_the_reading_cannot_express_is_named_and_nothing_is_written(tmp_path):
    # The Resize's input height and width are not declared (no shape inference).
    nodes, _, outputs, inits = resize("nearest", "asymmetric", (14, 20), (16, 24))
    path = save(tmp_path / "r.onnx", nodes, ("c", "h", "w"), outputs, inits)
    out = tmp_path / "device.onnx"
    proc = run_ckpt("atc-check", path, "--device-reading", out)
    assert proc.returncode == 1 and proc.stdout == "", proc.stdout
    assert proc.stderr.count("\n") == 1 and "the_resize (Resize)" in proc.stderr, proc.stderr
    assert not out.exists()
