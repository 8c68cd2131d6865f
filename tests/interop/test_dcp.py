"""Sharded DCP checkpoints written by real FSDP2 on 2 and 3 gloo CPU ranks (rows, uneven rows,
columns, a replicated buffer, AdamW state, plain values): `ckpt consolidate` must equal
torch's `dcp_to_torch_save` tensor for tensor, load with `weights_only=True` and
`safetensors.torch.load_file`; a truncated folder is refused with nothing written."""
import json
import os
import shutil
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file
from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

from _util import FIXTURES, ok, run_ckpt

GENERATE = FIXTURES / "dcp" / "generate.py"


@pytest.fixture(scope="module", params=[2, 3], ids=["2ranks", "3ranks"])
def folder(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"dcp{request.param}") / "ckpt"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, GENERATE, str(request.param), out], env=env, check=True,
                   timeout=120)
    ref = out.parent / "reference.pth"
    dcp_to_torch_save(out, ref)
    return out, torch.load(ref, weights_only=False)


def same(ref, got, path="root"):
    assert type(ref) is type(got), (path, type(ref), type(got))
    if isinstance(ref, dict):
        assert list(ref) == list(got), (path, list(ref), list(got))
        for k in ref:
            same(ref[k], got[k], f"{path}.{k}")
    elif isinstance(ref, (list, tuple)):
        assert len(ref) == len(got), path
        for i, (a, b) in enumerate(zip(ref, got)):
            same(a, b, f"{path}[{i}]")
    elif isinstance(ref, torch.Tensor):
        assert ref.dtype == got.dtype and ref.shape == got.shape, path
        assert torch.equal(ref, got), path
    else:
        assert ref == got, (path, ref, got)


def test_inspect_reports_ranks_chunks_and_no_problems(folder):
    out, ref = folder
    report = json.loads(ok(run_ckpt("inspect", out, "--json")).stdout)
    assert report["format"] == "dcp" and report["problems"] == []
    assert report["scan"] == "clean"
    entries = {e["key"]: e for e in report["entries"]}
    columns = entries["model.b.weight"]["chunks"]
    assert len(columns) == len(report["ranks"]) and all(c["offsets"][0] == 0 for c in columns)
    assert entries["model.steps"]["kind"] == "tensor" and len(entries["model.steps"]["chunks"]) == 1
    assert entries["optim.param_groups.0.lr"]["kind"] == "value"


def test_consolidated_pth_equals_dcp_to_torch_save(folder, tmp_path):
    out, ref = folder
    pth = tmp_path / "full.pth"
    ok(run_ckpt("consolidate", out, "-o", pth))
    same(ref, torch.load(pth, weights_only=True))


def test_model_only_and_extract(folder, tmp_path):
    out, ref = folder
    model_only = tmp_path / "model_only.pth"
    ok(run_ckpt("consolidate", out, "-o", model_only, "--model-only"))
    expected = {k: v for k, v in ref.items() if k != "optim"}
    same(expected, torch.load(model_only, weights_only=True))

    st = tmp_path / "model.safetensors"
    ok(run_ckpt("consolidate", out, "-o", st, "--extract", "model"))
    loaded = load_file(st)
    assert sorted(loaded) == sorted(ref["model"])
    for k, v in ref["model"].items():
        assert torch.equal(loaded[k], v), k


def test_truncated_folder_is_refused(folder, tmp_path):
    out, _ = folder
    broken = tmp_path / "broken"
    shutil.copytree(out, broken)
    shard = broken / "__1_0.distcp"
    shard.write_bytes(shard.read_bytes()[:-100])
    target = tmp_path / "never.pth"
    proc = run_ckpt("consolidate", broken, "-o", target)
    assert proc.returncode == 1, proc.stderr
    assert "__1_0.distcp" in proc.stderr and "run past the end" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not target.exists()


def test_batch_consolidates_then_casts(folder, tmp_path):
    """A batch job over the DCP folder: consolidate the model, cast it to bfloat16, write a
    checkpoint and safetensors; torch loads both and they equal the reference, cast."""
    out, ref = folder
    runs = tmp_path / "runs"
    shutil.copytree(out, runs / "step_3")
    plan = tmp_path / "plan.toml"
    plan.write_text('[[job]]\ninputs = ["runs"]\noutput_dir = "out"\n'
                    'steps = [{ consolidate = "model" }, { dtype = "bfloat16" }, '
                    '"to-safetensors", "format"]\n')
    ok(run_ckpt("batch", plan, "--jobs", "1", "--quiet"))
    manifest = json.loads((tmp_path / "plan.manifest.json").read_text())
    (entry,) = manifest["entries"]
    assert entry["status"] == "ok" and entry["input"] == "runs/step_3", entry
    expected = {k: v.to(torch.bfloat16) if v.is_floating_point() else v
                for k, v in ref["model"].items()}
    same(expected, torch.load(tmp_path / "out" / "step_3.pth", weights_only=True))
    loaded = load_file(tmp_path / "out" / "step_3.safetensors")
    assert sorted(loaded) == sorted(expected)
    for k, v in expected.items():
        assert torch.equal(loaded[k], v), k
