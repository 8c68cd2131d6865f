"""`ckpt to-onnx` on models with int64 and bool inputs and outputs (token ids, attention
masks, argmax/topk indices, comparison masks), built by `models/tokens_int.py` and exported
with `torch.export` (dynamic batch) or traced with `torch.jit.trace`.

Each ONNX file must pass `onnx.checker.check_model(full_check=True)` (strict type
inference: every value's element type must be consistent), declare the inputs' and outputs'
element types as torch has them, use only ATC-clean ops (no Identity/Shape/Unsqueeze/
Expand/ConstantOfShape; Gather only on an initializer, i.e. an embedding table), and match
torch eager in onnxruntime at batch 1, 3 and 8 from one file: float outputs within
max |diff| <= 1e-4 * max(1, max |ref|), integer and bool outputs exactly. Ids are drawn in
range of the vocabulary; masks have padding at the end of each row. A sequence length
declared dynamic is refused with an error naming its symbol.
"""
import re
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from _util import ok, onnx_outputs, run_ckpt
from test_pt2 import dims

sys.path.insert(0, str(Path(__file__).resolve().parent / "models"))
import tokens_int  # noqa: E402

FORBIDDEN = {"Identity", "Shape", "Unsqueeze", "Squeeze", "Expand", "ConstantOfShape",
             "NonZero", "Loop", "If", "Range"}
ONNX_TYPES = {torch.float32: onnx.TensorProto.FLOAT, torch.int64: onnx.TensorProto.INT64,
              torch.int32: onnx.TensorProto.INT32, torch.bool: onnx.TensorProto.BOOL}


def elem_type(value_info):
    return value_info.type.tensor_type.elem_type


def check_file(out, model, kind):
    """The structural checks: full check, one opset, ATC-clean ops, declared types."""
    onnx.checker.check_model(str(out), full_check=True)
    proto = onnx.load(str(out), load_external_data=False)
    assert [(o.domain, o.version) for o in proto.opset_import] == [("", 11)]
    ops = [n.op_type for n in proto.graph.node]
    assert not set(ops) & FORBIDDEN, sorted(set(ops) & FORBIDDEN)
    tables = {i.name for i in proto.graph.initializer}
    for node in proto.graph.node:
        if node.op_type == "Gather":
            assert node.input[0] in tables, f"{node.name} gathers from a computed tensor"
    example = tokens_int.example(kind, 2)
    for value_info, tensor in zip(proto.graph.input, example):
        assert elem_type(value_info) == ONNX_TYPES[tensor.dtype], value_info
        assert dims(value_info) == ["batch", *tensor.shape[1:]]
    with torch.no_grad():
        ref = model(*example)
    refs = ref.values() if isinstance(ref, dict) else ref if isinstance(ref, tuple) else [ref]
    for value_info, tensor in zip(proto.graph.output, refs):
        assert elem_type(value_info) == ONNX_TYPES[tensor.dtype], value_info
        assert dims(value_info)[0] == "batch"
    return ops


def check_parity(model, out, kind, batches=(1, 3, 8)):
    """onnxruntime against torch eager at each batch, from one file; every output varies
    across the samples of the largest batch (parity is not vacuous)."""
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    feeds = [i.name for i in session.get_inputs()]
    names = [o.name for o in session.get_outputs()]
    for b in batches:
        inputs = tokens_int.example(kind, b, seed=100 + b)
        with torch.no_grad():
            ref = onnx_outputs(model(*inputs))
        assert names == list(ref), f"ONNX outputs {names}, torch returns {list(ref)}"
        got = dict(zip(names, session.run(None, {n: t.numpy() for n, t in zip(feeds, inputs)})))
        for name, r in ref.items():
            g = got[name]
            assert g.dtype == r.dtype and g.shape == r.shape, (name, g.dtype, r.dtype, g.shape)
            if r.dtype == np.float32:
                diff = float(np.abs(g - r).max())
                tol = 1e-4 * max(1.0, float(np.abs(r).max()))
                print(f"{out.stem} `{name}` batch {b}: max |diff| {diff:.3e} (tolerance {tol:.3e})")
                assert diff <= tol, f"`{name}` batch {b}: max |diff| {diff:.3e} > {tol:.3e}"
                varies = float(np.abs(r - r.mean(axis=0)).max()) >= 10 * tol
            else:
                assert np.array_equal(g, r), f"`{name}` batch {b}: {g} != {r}"
                varies = not (r == r[:1]).all()
            if b == max(batches):
                assert varies, f"`{name}` hardly depends on the input: vacuous"


def export(kind, tmp_path, seed):
    archive = tmp_path / f"{kind}.pt2"
    model = tokens_int.export(kind, archive, seed=seed)
    out = tmp_path / f"{kind}.onnx"
    proc = ok(run_ckpt("to-onnx", archive, "-o", out))
    return model, out, proc


@pytest.mark.parametrize("kind,seed", [("bert", 31), ("bert-int-mask", 32)])
def test_a_bert_like_encoder_with_an_attention_mask_input(kind, seed, tmp_path):
    model, out, proc = export(kind, tmp_path, seed)
    ops = check_file(out, model, kind)
    assert ops.count("Gather") == 1  # the token table; the positions are looked up at export
    assert ops.count("Softmax") == 1
    if kind == "bert":
        assert "Not" in ops and "Where" in ops
    # ND profiles for the token inputs, both listed.
    assert (f'--input_format=ND --input_shape="ids:-1,{tokens_int.SEQ};'
            f'mask:-1,{tokens_int.SEQ}" --dynamic_batch_size="1,2,4,8"') in proc.stdout, proc.stdout
    check_parity(model, out, kind)


def test_an_embedding_classifier_takes_int64_ids(tmp_path):
    model, out, _ = export("bag", tmp_path, 33)
    assert check_file(out, model, "bag").count("Gather") == 1
    check_parity(model, out, "bag")


def test_selections_comparisons_and_masks_give_int64_and_bool_outputs(tmp_path):
    model, out, _ = export("picker", tmp_path, 34)
    ops = set(check_file(out, model, "picker"))
    assert {"ArgMax", "ArgMin", "TopK", "ReduceMax", "Where", "Equal", "Less", "Greater",
            "Not", "And", "Or", "Cast"} <= ops, sorted(ops)
    check_parity(model, out, "picker")


def test_masked_pooling_with_a_bool_mask(tmp_path):
    model, out, _ = export("masked-bag", tmp_path, 35)
    check_file(out, model, "masked-bag")
    check_parity(model, out, "masked-bag")


@pytest.mark.parametrize("kind,seed", [("bag", 36), ("masked-bag", 37)])
def test_a_trace_with_integer_and_bool_inputs(kind, seed, tmp_path):
    traced = tmp_path / f"{kind}.pt"
    model = tokens_int.trace(kind, traced, seed=seed)
    out = tmp_path / f"{kind}.onnx"
    ok(run_ckpt("to-onnx", traced, "-o", out))
    check_file(out, model, kind)
    check_parity(model, out, kind)


def test_a_trace_without_recorded_inputs_takes_named_typed_shapes(tmp_path):
    model = tokens_int.build("masked-bag", seed=38)
    traced = tmp_path / "masked-bag.pt"
    with torch.no_grad():
        torch.jit.save(torch.jit.trace(model, tokens_int.example("masked-bag", 2),
                                       _store_inputs=False), str(traced))
    out = tmp_path / "masked-bag.onnx"
    seq = tokens_int.SEQ
    proc = run_ckpt("to-onnx", traced, "-o", out, "--input-shape", f"ids:{seq}:int64")
    assert proc.returncode == 1 and "`mask` is unknown" in proc.stderr, proc.stderr
    assert not out.exists()
    ok(run_ckpt("to-onnx", traced, "-o", out, "--input-shape", f"ids:{seq}:int64",
                "--input-shape", f"mask:{seq}:bool"))
    check_file(out, model, "masked-bag")
    check_parity(model, out, "masked-bag")


def test_a_dynamic_sequence_length_stays_dynamic_named_by_its_symbol(tmp_path):
    archive = tmp_path / "bag-seq.pt2"
    model = tokens_int.export("bag", archive, seed=39, dynamic_seq=True)
    out = tmp_path / "bag-seq.onnx"
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert "--dynamic_dims=" in proc.stdout + proc.stderr
    graph = onnx.load(str(out)).graph
    batch, seq = dims(graph.input[0])
    # torch's symbol for the sequence, as the program names it.
    assert batch == "batch" and re.fullmatch(r"s\d+", seq), dims(graph.input[0])
    session = ort.InferenceSession(str(out))
    for b, length in [(1, 2), (3, 5), (2, tokens_int.SEQ)]:
        (ids,) = tokens_int.example("bag", b, seq=length, seed=b + length)
        with torch.no_grad():
            want = model(ids)
        want = (want[0] if isinstance(want, (tuple, list)) else want).numpy()
        got = session.run(None, {"input": ids.numpy()})[0]
        assert np.abs(got - want).max() <= 1e-4 * max(1.0, np.abs(want).max()), (b, length)
