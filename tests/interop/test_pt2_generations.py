"""`ckpt to-onnx` on `.pt2` archives written by every torch generation since torch.export
(fixtures/pt2/generations: the flat layout of torch 2.1-2.7 with schemas 1, 2, 5.1, 5.3,
7.3, 8.2, 8.7, and the archive layout of 2.8 to 2.15 with schemas 8.8, 8.14, 8.15, 8.17
and 8.20), against the outputs the
same torch version computed when it wrote them (the torch running this tier is not
needed, and could not load most of them).

Each converted file must pass `onnx.checker.check_model(full_check=True)`, import opset 11
alone, name its batch `dim_param` `batch` on the input and the output, use only ops of
CANN's opset-11 parser table and none of the banned ones (ATC-clean), and match the stored
outputs in onnxruntime at batch 1 and 3 from one file within
max |diff| <= 1e-4 * max(1, max |ref|). `inspect --json` must report the layout and the
schema version the manifest records, and `scan` must find every pickle clean.
"""
import json
import math
from pathlib import Path

import numpy as np
import onnx
import pytest

import _coverage as cov
from _util import ok, run_ckpt

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent.parent / "fixtures" / "pt2" / "generations"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())


def probe_input(batch, shape, seed):
    """The generator's `probe_input`, in numpy (bit for bit: integers, one division)."""
    i = np.arange(batch * math.prod(shape), dtype=np.int64)
    v = ((i * 7919 + seed * 31) % 2001) - 1000
    return (v.astype(np.float32) / np.float32(1000.0)).reshape(batch, *shape)


def dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def test_every_layout_and_schema_generation_is_covered():
    """The manifest holds both layouts, every schema major torch released, and both
    models of every torch version the generator pins."""
    layouts = {entry["layout"] for entry in MANIFEST.values()}
    majors = {entry["schema"].split(".")[0] for entry in MANIFEST.values()}
    assert layouts == {"flat", "archive"}, layouts
    assert majors >= {"1", "2", "5", "7", "8"}, majors
    pinned = (FIXTURES / "VERSIONS").read_text().split()
    assert sorted(MANIFEST) == sorted(f"{m}-{v}" for v in pinned for m in ("cnn", "ops"))


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_generation_converts_and_matches_its_torch(name, tmp_path):
    entry = MANIFEST[name]
    archive = FIXTURES / f"{name}.pt2"

    report = json.loads(ok(run_ckpt("inspect", "--json", archive)).stdout)
    assert (report["format"], report["layout"], report["schema"]) == (
        "pt2", entry["layout"], entry["schema"])
    scan = ok(run_ckpt("scan", archive))
    assert "clean (pt2)" in scan.stdout, scan.stdout
    # Every archive pickles something torch loads: the state dict (flat layout, torch 2.8's
    # archive layout) or the sample inputs.
    assert scan.stdout.count("  pickle ") >= 1, scan.stdout

    out = tmp_path / f"{name}.onnx"
    ok(run_ckpt("to-onnx", archive, "-o", out))
    onnx.checker.check_model(str(out), full_check=True)
    proto = onnx.load(str(out))
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 11)]
    assert dims(proto.graph.input[0]) == [cov.BATCH_NAME, *entry["input"]]
    assert all(dims(o)[0] == cov.BATCH_NAME for o in proto.graph.output)
    ops = {n.op_type for n in proto.graph.node}
    assert not ops & set(cov.BANNED_OPS), ops
    assert ops <= cov.atc_ops(), ops - cov.atc_ops()

    import onnxruntime as ort

    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    for batch in entry["batches"]:
        x = probe_input(batch, entry["input"], entry["seed"])
        (got,) = session.run(None, {session.get_inputs()[0].name: x})
        ref = np.fromfile(FIXTURES / f"{name}.out.b{batch}.f32", dtype="<f4")
        assert got.size == ref.size, (got.shape, ref.size)
        diff = float(np.abs(got.reshape(-1) - ref).max())
        tol = 1e-4 * max(1.0, float(np.abs(ref).max()))
        print(f"{name} batch {batch}: max |diff| {diff:.3e} (tolerance {tol:.3e})")
        assert diff <= tol, f"batch {batch}: max |diff| {diff:.3e} > {tol:.3e}"
