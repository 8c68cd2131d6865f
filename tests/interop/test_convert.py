"""ckpt convert: dtype casts, slim releases, container changes and combined passes, checked
with real torch 2.13."""
import copy
from collections import OrderedDict
from pathlib import Path

import pytest
import torch

from _util import (EXPECTED, LEGACY_MAGIC, assert_clean_error, assert_equivalent,
                   assert_same_sharing, compare, expected_strip, fixture_path, load_input,
                   needs_unsafe_load, ok, run_ckpt, state_dict_like)

OPTIMIZER_KEYS = ("optimizer", "optimizers", "optimizer_states", "optimizer_state_dict")
DROPPED = {"optimizer", "optimizers", "optimizer_states", "optimizer_state_dict", "scheduler",
           "lr_scheduler", "lr_schedulers", "scheduler_state_dict", "scaler", "amp",
           "grad_scaler", "amp_scaler", "scaler_state_dict", "native_amp_scaling_state",
           "amp_scaling_state"}
FLOATS = (torch.float64, torch.float32, torch.float16, torch.bfloat16)


def convert(inp, tmp_path, *args, name="out.pth"):
    out = tmp_path / name
    ok(run_ckpt("convert", inp, "-o", out, *args))
    return out


def load_out(out, name):
    """Plain torch.load, unless the input's own content needs weights_only=False."""
    return torch.load(out, weights_only=not needs_unsafe_load(name))


def cast_state_dicts(obj, dtype, optimizer=False, _seen=None):
    """What `--dtype` must produce, computed by torch: `t.to(dtype)` for every floating tensor
    of every state dict (and of optimizer state, except `step`, with optimizer=True)."""
    _seen = set() if _seen is None else _seen
    if id(obj) in _seen:
        return obj
    _seen.add(id(obj))
    if isinstance(obj, dict):
        if state_dict_like(obj):
            for k, v in obj.items():
                if isinstance(v, torch.Tensor) and v.dtype in FLOATS:
                    obj[k] = v.to(dtype)
        elif all(isinstance(k, int) for k in obj) and obj:
            pass  # an optimizer's per-parameter `state` is not a state dict
        else:
            for k, v in obj.items():
                if optimizer and k in OPTIMIZER_KEYS:
                    obj[k] = cast_all(v, dtype)
                else:
                    obj[k] = cast_state_dicts(v, dtype, False, _seen)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            obj[i] = cast_state_dicts(v, dtype, False, _seen)
    return obj


def cast_all(obj, dtype):
    if isinstance(obj, torch.Tensor):
        return obj.to(dtype) if obj.dtype in FLOATS else obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k != "step":
                obj[k] = cast_all(v, dtype)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            obj[i] = cast_all(v, dtype)
    return obj


def tensors(obj, path="obj"):
    if isinstance(obj, torch.Tensor):
        yield path, obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from tensors(v, f"{path}[{k!r}]")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from tensors(v, f"{path}[{i}]")


# ------------------------------------------------------------------ --dtype
@pytest.mark.parametrize("name", ["zip_train_ckpt.pth", "legacy_train_ckpt.pth",
                                  "zip_tinycnn_sd.pth", "amp_lightning.ckpt",
                                  "zip_deflated.pth"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_dtype_casts_model_floats_bitwise_like_torch(name, dtype, tmp_path):
    out = convert(fixture_path(name), tmp_path, "--dtype", dtype)
    want = cast_state_dicts(load_input(name), getattr(torch, dtype))
    act = load_out(out, name)
    assert_equivalent(want, act)
    cast = [p for p, t in tensors(act) if t.dtype == getattr(torch, dtype)]
    assert cast, "nothing was cast"
    assert any(t.dtype == torch.int64 for _, t in tensors(act)), "int buffers must stay"


def test_dtype_leaves_optimizer_state_unless_asked(tmp_path):
    name = "zip_train_ckpt.pth"
    plain = load_out(convert(fixture_path(name), tmp_path, "--dtype", "float16"), name)
    assert all(t.dtype == torch.float32 for _, t in tensors(plain["optimizer"]))
    out = convert(fixture_path(name), tmp_path, "--dtype", "float16", "--dtype-optimizer",
                  name="opt.pth")
    want = cast_state_dicts(load_input(name), torch.float16, optimizer=True)
    act = load_out(out, name)
    assert_equivalent(want, act)
    assert all(t.dtype == torch.float16 for _, t in tensors(act["optimizer"]))


def test_fp16_weights_become_fp32_again(tmp_path):
    """An apex O2-style fp16 model state dict (incl. BN int buffer) back to fp32 for a resume."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4)).half()
    inp = tmp_path / "fp16.pth"
    torch.save({"model": model.state_dict(), "epoch": 3}, inp)
    out = convert(inp, tmp_path, "--dtype", "float32")
    want = torch.load(inp)
    want["model"] = OrderedDict((k, v.float() if v.is_floating_point() else v)
                                for k, v in want["model"].items())
    act = torch.load(out)
    for k, v in want["model"].items():
        assert act["model"][k].dtype == v.dtype
        assert torch.equal(act["model"][k], v), k
    assert act["epoch"] == 3


def test_dtype_keeps_views_offsets_and_sharing(tmp_path):
    base = torch.randn(4, 5)
    sd = OrderedDict([("base", base), ("row1", base[1]), ("transposed", base.t()),
                      ("tail", base[:, 2:]), ("steps", torch.tensor(7))])
    inp = tmp_path / "views.pth"
    torch.save(sd, inp)
    act = torch.load(convert(inp, tmp_path, "--dtype", "float16"))
    pairs = []
    for k, v in sd.items():
        a = act[k]
        want = v.to(torch.float16) if v.is_floating_point() else v
        assert a.dtype == want.dtype, k
        assert a.stride() == v.stride() and a.storage_offset() == v.storage_offset(), k
        assert torch.equal(a.contiguous().view(torch.int16) if a.is_floating_point() else a,
                           want.contiguous().view(torch.int16) if a.is_floating_point() else want), k
        pairs.append((k, v, a))
    assert_same_sharing(pairs)


def test_dtype_on_a_storage_shared_with_an_uncast_tensor_is_a_clean_error(tmp_path):
    w = torch.randn(6)
    inp = tmp_path / "shared.pth"
    torch.save({"model": {"w": w}, "extra": [w[2:]]}, inp)
    out = tmp_path / "out.pth"
    proc = run_ckpt("convert", inp, "-o", out, "--dtype", "float16")
    assert_clean_error(proc, inp, out)


def test_dtype_refuses_big_endian_storages(tmp_path):
    """A cast decodes elements, so an input whose `byteorder` record says big is refused."""
    import zipfile
    src = fixture_path("zip_tinycnn_sd.pth")
    inp = tmp_path / "big.pth"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(inp, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            zout.writestr(info, b"big" if info.filename.endswith("/byteorder") else data)
    out = tmp_path / "out.pth"
    proc = run_ckpt("convert", inp, "-o", out, "--dtype", "float16")
    assert_clean_error(proc, inp, out)
    assert "big-endian" in proc.stderr


# ------------------------------------------------------------------ --format
@pytest.mark.parametrize("name", ["zip_train_ckpt.pth", "zip_tinycnn_sd.pth",
                                  "zip_params_views.pth", "amp_lightning.ckpt"])
def test_format_legacy_from_zip_loads_and_equals_input(name, tmp_path):
    out = convert(fixture_path(name), tmp_path, "--format", "legacy")
    head = Path(out).read_bytes()[:16]
    assert head.startswith(LEGACY_MAGIC) and not head.startswith(b"PK")
    assert_equivalent(load_input(name), load_out(out, name))


@pytest.mark.parametrize("name", ["legacy_train_ckpt.pth", "legacy_params_views.pth",
                                  "legacy_dtypes.pth"])
def test_format_zip_from_legacy_loads_and_equals_input(name, tmp_path):
    out = convert(fixture_path(name), tmp_path, "--format", "zip")
    assert Path(out).read_bytes()[:4] == b"PK\x03\x04"
    assert_equivalent(load_input(name), load_out(out, name))


def test_format_legacy_refuses_new_dtypes_naming_dtype_and_tensor(tmp_path):
    out = tmp_path / "out.pth"
    proc = run_ckpt("convert", fixture_path("zip_dtypes.pth"), "-o", out, "--format", "legacy")
    assert_clean_error(proc, "zip_dtypes.pth", out)
    assert "legacy" in proc.stderr and "complex32" in proc.stderr


# ------------------------------------------------------------------ selection
@pytest.mark.parametrize("name", ["zip_train_ckpt.pth", "amp_lightning.ckpt", "amp_native.pth",
                                  "legacy_train_ckpt.pth"])
def test_drop_optimizer_loads_and_holds_the_rest(name, tmp_path):
    out = convert(fixture_path(name), tmp_path, "--drop-optimizer")
    want = load_input(name)
    for key in [k for k in want if k in DROPPED]:
        del want[key]
    act = load_out(out, name)
    assert set(act).isdisjoint(DROPPED)
    assert_equivalent(want, act)


@pytest.mark.parametrize("name,key", [("zip_train_ckpt.pth", "state_dict"),
                                      ("amp_apex.pth", "model"),
                                      ("amp_lightning.ckpt", "state_dict")])
def test_extract_writes_just_that_mapping(name, key, tmp_path):
    out = convert(fixture_path(name), tmp_path, "--extract", key)
    act = torch.load(out)
    assert_equivalent(load_input(name)[key], act)


def test_keep_keeps_only_those_keys_in_original_order(tmp_path):
    out = convert(fixture_path("zip_train_ckpt.pth"), tmp_path, "--keep", "state_dict", "epoch")
    inp = load_input("zip_train_ckpt.pth")
    act = torch.load(out)
    assert list(act) == ["epoch", "state_dict"]
    assert_equivalent({"epoch": inp["epoch"], "state_dict": inp["state_dict"]}, act)


@pytest.mark.parametrize("args", [["--keep", "state_dict", "nope"], ["--extract", "nope"],
                                  ["--extract", "epoch"]])
def test_unknown_or_unusable_keys_are_clean_errors(args, tmp_path):
    out = tmp_path / "out.pth"
    proc = run_ckpt("convert", fixture_path("zip_train_ckpt.pth"), "-o", out, *args)
    assert_clean_error(proc, "zip_train_ckpt.pth", out)
    if args[0] == "--keep":
        assert "`state_dict`" in proc.stderr and "available" in proc.stderr


# ------------------------------------------------------------------ all in one pass
def test_one_pass_strip_amp_dtype_legacy(tmp_path):
    name = "zip_train_ckpt.pth"
    out = convert(fixture_path(name), tmp_path, "--strip-module", "--amp", "native",
                  "--dtype", "float16", "--format", "legacy")
    assert Path(out).read_bytes()[:16].startswith(LEGACY_MAGIC)
    want = cast_state_dicts(expected_strip(load_input(name)), torch.float16)
    apex = want["amp"]["loss_scaler0"]
    want["amp"] = {"scale": apex["loss_scale"], "growth_factor": 2.0, "backoff_factor": 0.5,
                   "growth_interval": 2000, "_growth_tracker": apex["unskipped"]}
    act = load_out(out, name)
    assert_equivalent(want, act)


def test_one_pass_extract_strip_remap_cast_release(tmp_path):
    name = "cuda0_train_ckpt.pth"
    out = convert(fixture_path(name), tmp_path, "--extract", "state_dict", "--strip-module",
                  "--to", "cpu", "--dtype", "bfloat16")
    want = cast_state_dicts(expected_strip({"sd": load_input(name)["state_dict"]}),
                            torch.bfloat16)["sd"]
    assert_equivalent(want, torch.load(out))


@pytest.mark.parametrize("name,args", [
    ("amp_disabled.pth", ["--strip-module", "--amp", "native"]),
    ("amp_apex_multi.pth", ["--dtype", "float16", "--amp", "native"]),
    ("zip_train_ckpt.pth", ["--drop-optimizer", "--keep", "optimizer"]),
])
def test_a_failing_step_writes_nothing(name, args, tmp_path):
    out = tmp_path / "out.pth"
    assert_clean_error(run_ckpt("convert", fixture_path(name), "-o", out, *args), name, out)
    assert list(tmp_path.iterdir()) == []
