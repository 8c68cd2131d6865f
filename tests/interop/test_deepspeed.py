"""DeepSpeed ZeRO folders (the committed fixtures: ZeRO-1/2/3 and bf16 over 2 ranks, written
by DeepSpeed 0.19.8 through fixtures/deepspeed/generate.py): `ckpt consolidate` must load with
`torch.load(weights_only=True)` and equal what DeepSpeed's own
`get_fp32_state_dict_from_zero_checkpoint` returned (saved beside each fixture), key order
and tied parameters included; its safetensors output loads with `safetensors.torch` (a tied
name stored once, as `save_model` stores it); a batch job that starts with `consolidate`
takes the save folder. DeepSpeed itself is not needed."""
import importlib.util
import json
import shutil

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import load_file, load_model

from _util import FIXTURES, ok, run_ckpt

DS = FIXTURES / "deepspeed"
CONFIGS = ["zero1", "zero2", "zero3", "bf16"]


def expected(config):
    meta = json.loads((DS / f"{config}.expected.json").read_text())
    return load_file(DS / f"{config}.expected.safetensors"), meta


@pytest.mark.parametrize("config", CONFIGS)
def test_pth_loads_weights_only_and_equals_deepspeed(config, tmp_path):
    ref, meta = expected(config)
    pth = tmp_path / "model.pth"
    ok(run_ckpt("consolidate", DS / config, "-o", pth))
    got = torch.load(pth, weights_only=True)
    assert list(got) == meta["keys"]
    for key in meta["keys"]:
        assert got[key].dtype == ref[key].dtype and got[key].shape == ref[key].shape, key
        assert torch.equal(got[key], ref[key]), key
    for alias, source in meta["aliases"].items():
        assert got[alias] is got[source] or got[alias].data_ptr() == got[source].data_ptr()


@pytest.mark.parametrize("config", CONFIGS)
def test_safetensors_loads_and_equals_deepspeed(config, tmp_path):
    """Tied names are stored once, as `safetensors.torch.save_model` stores them, and
    `load_model` restores them into the fixture's model."""
    ref, meta = expected(config)
    st = tmp_path / "model.safetensors"
    ok(run_ckpt("consolidate", DS / config / "step1", "-o", st))
    got = load_file(st)
    dropped = {max(a, s): min(a, s) for a, s in meta["aliases"].items()}
    assert sorted(got) == sorted(k for k in meta["keys"] if k not in dropped)
    for key, tensor in got.items():
        assert tensor.dtype == ref[key].dtype and torch.equal(tensor, ref[key]), key
    with safe_open(st, "pt") as f:
        metadata = f.metadata()
    for name, kept in dropped.items():
        assert metadata[name] == kept


def test_state_dict_loads_into_the_model(tmp_path):
    """The ZeRO-3 output (`.pth`, and safetensors through `load_model`) is a state dict the
    fixture's model takes with strict loading."""
    spec = importlib.util.spec_from_file_location("ds_generate", DS / "generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    pth, st = tmp_path / "model.pth", tmp_path / "model.safetensors"
    ok(run_ckpt("consolidate", DS / "zero3", "-o", pth))
    ok(run_ckpt("consolidate", DS / "zero3", "-o", st))
    model = generate.Model()
    model.load_state_dict(torch.load(pth, weights_only=True), strict=True)
    load_model(model, st, strict=True)
    assert model.head.weight is model.emb.weight


def test_batch_consolidates_a_save_folder(tmp_path):
    ref, meta = expected("zero2")
    runs = tmp_path / "runs"
    shutil.copytree(DS / "zero2", runs / "zero2")
    plan = tmp_path / "plan.toml"
    plan.write_text('[[job]]\ninputs = ["runs"]\noutput_dir = "out"\n'
                    'steps = ["consolidate", "to-safetensors"]\n')
    ok(run_ckpt("batch", plan, "--jobs", "1", "--quiet"))
    (st,) = (tmp_path / "out").glob("*.safetensors")
    got = load_file(st)
    assert sorted(got) == sorted(k for k in meta["keys"] if k != "head.weight")
    for key, tensor in got.items():
        assert torch.equal(tensor, ref[key]), key


def test_missing_rank_file_is_refused(tmp_path):
    broken = tmp_path / "run"
    shutil.copytree(DS / "zero3", broken)
    (broken / "step1" / "zero_pp_rank_1_mp_rank_00_optim_states.pt").unlink()
    target = tmp_path / "never.pth"
    proc = run_ckpt("consolidate", broken, "-o", target)
    assert proc.returncode == 1, proc.stderr
    assert "partition_count says 2 ranks" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not target.exists()
