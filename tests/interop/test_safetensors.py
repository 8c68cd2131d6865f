"""ckpt to-safetensors: outputs read with Python safetensors (`load_file`, `safe_open`) and
compared with what torch.load gives for the input; sharing handled as the reference
converter (`safetensors.torch._remove_duplicate_names`, used by `save_model`) handles it."""
import json
import resource
import struct
import subprocess
import sys
from collections import OrderedDict

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import _remove_duplicate_names, load_file

from _util import _devices, assert_clean_error, fixture_path, ok, run_ckpt


def to_st(inp, out, *args):
    ok(run_ckpt("to-safetensors", inp, "-o", out, *args))
    return out


def header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


def metadata(path):
    with safe_open(str(path), "pt") as f:
        return f.metadata()


def raw(t):
    """Bitwise view (NaN-safe, works for float8 and bool)."""
    t = t.contiguous()
    return t.view(torch.uint8) if t.element_size() == 1 else t.view(-1).view(torch.uint8)


def assert_same(expected, actual, name):
    assert actual.dtype == expected.dtype, f"{name}: dtype {actual.dtype} != {expected.dtype}"
    assert tuple(actual.shape) == tuple(expected.shape), f"{name}: shape"
    assert actual.is_contiguous()
    assert torch.equal(raw(expected.reshape(-1)), raw(actual.reshape(-1))), f"{name}: bytes differ"


def expected_from(sd):
    """What the reference converter keeps, and the aliases it records."""
    sd = {k: v for k, v in sd.items() if isinstance(v, torch.Tensor)}
    aliases = {}
    for kept, removed in _remove_duplicate_names(sd).items():
        for name in removed:
            aliases[name] = kept
    return {k: v for k, v in sd.items() if k not in aliases}, aliases


def check_against_torch(inp, out, sd=None):
    if sd is None:
        sd = torch.load(inp, map_location="cpu", weights_only=True)
    kept, aliases = expected_from(sd)
    loaded = load_file(str(out))
    assert sorted(loaded) == sorted(kept)
    for name, tensor in kept.items():
        assert_same(tensor, loaded[name], name)
    md = metadata(out)
    assert md.pop("format") == "pt"
    assert md == aliases
    return loaded


DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
          torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64,
          torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e4m3fnuz, torch.float8_e5m2fnuz,
          torch.uint16, torch.uint32, torch.uint64]


def sample(dtype, shape=(3, 5), seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_complex:
        return torch.randn(shape, generator=g, dtype=dtype)
    if dtype.is_floating_point:
        x = torch.randn(shape, generator=g) * 4
        x.view(-1)[0] = float("nan") if dtype not in (torch.float8_e4m3fnuz,
                                                      torch.float8_e5m2fnuz) else 1.0
        return x.to(dtype)
    if dtype in (torch.uint16, torch.uint32, torch.uint64):
        return torch.randint(0, 200, shape, generator=g, dtype=torch.int64).to(dtype)
    return torch.randint(-100, 100, shape, generator=g, dtype=torch.int64).to(dtype)


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_every_dtype_round_trips(tmp_path, legacy):
    dtypes = [d for d in DTYPES if not legacy or d in
              (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
               torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool, torch.complex64)]
    sd = OrderedDict((str(d).split(".")[-1], sample(d, seed=i)) for i, d in enumerate(dtypes))
    sd["scalar"] = torch.tensor(3.5)
    sd["empty"] = torch.zeros(0, 4)
    inp = tmp_path / "in.pth"
    torch.save(sd, inp, _use_new_zipfile_serialization=not legacy)
    out = to_st(inp, tmp_path / "out.safetensors")
    check_against_torch(inp, out)
    h = header(out)
    assert h["__metadata__"] == {"format": "pt"}
    assert h["float8_e4m3fn"]["dtype"] == "F8_E4M3" if not legacy else True


def test_shared_and_aliased_tensors_follow_the_reference(tmp_path):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    tied = torch.randn(5, 3)
    sd = OrderedDict()
    sd["encoder.weight"] = tied
    sd["decoder.weight"] = tied            # tied embedding: same tensor twice
    sd["a.full"] = base
    sd["b.rows"] = base[1:]                # overlapping partial view of a kept storage
    sd["c.flat"] = base.view(-1)           # another complete alias
    sd["other"] = torch.ones(2)
    inp = tmp_path / "in.pth"
    torch.save(sd, inp)
    out = to_st(inp, tmp_path / "out.safetensors")
    loaded = check_against_torch(inp, out)
    md = metadata(out)
    # the alphabetically first complete name is kept, as the reference does
    assert md["encoder.weight"] == "decoder.weight"
    assert md["b.rows"] == "a.full" and md["c.flat"] == "a.full"
    assert set(loaded) == {"decoder.weight", "a.full", "other"}


def test_non_contiguous_views_are_written_contiguous(tmp_path):
    base = torch.randn(6, 8)
    sd = OrderedDict(t=torch.randn(7, 5).t(),            # a transpose owning its storage
                     strided=base[:, ::3],               # every third column
                     window=base[2:4, 1:6],              # an interior window
                     expanded=torch.randn(3, 1).expand(3, 4))  # zero stride
    inp = tmp_path / "in.pth"
    torch.save(sd, inp)
    out = to_st(inp, tmp_path / "out.safetensors")
    loaded = load_file(str(out))
    assert sorted(loaded) == sorted(sd)
    for name, tensor in sd.items():
        assert_same(tensor, loaded[name], name)
    # `strided` and `window` overlap in one storage but neither covers it: the reference
    # refuses such a group; ckpt writes each on its own.
    assert metadata(out) == {"format": "pt"}


def test_fixture_checkpoints(tmp_path):
    for name, key in [("zip_train_ckpt.pth", None), ("cuda0_train_ckpt.pth", None),
                      ("legacy_tinycnn_sd.pth", None), ("zip_deflated.pth", None),
                      ("zip_dataparallel_sd.pth", None), ("zip_align4096.pth", None)]:
        inp = fixture_path(name)
        out = to_st(inp, tmp_path / f"{name}.safetensors")
        obj = torch.load(inp, map_location="cpu", weights_only=False)
        sd = obj if all(isinstance(v, torch.Tensor) for v in obj.values()) else None
        if sd is None:
            sd = next(v for v in obj.values() if isinstance(v, dict) and v
                      and all(isinstance(x, torch.Tensor) for x in v.values()))
        loaded = check_against_torch(inp, out, sd)
        if name == "zip_dataparallel_sd.pth":
            assert all(k.startswith("module.") for k in loaded), "prefixes are kept"


def test_key_selection_and_ambiguity(tmp_path):
    model = OrderedDict(w=torch.randn(2, 2))
    ema = OrderedDict(w=torch.randn(2, 2))
    inp = tmp_path / "two.pth"
    torch.save({"model": model, "ema": ema, "epoch": 3}, inp)
    proc = run_ckpt("to-safetensors", inp, "-o", tmp_path / "x.safetensors")
    assert_clean_error(proc, inp, tmp_path / "x.safetensors")
    assert "--key" in proc.stderr and "`model`" in proc.stderr and "`ema`" in proc.stderr
    out = to_st(inp, tmp_path / "ema.safetensors", "--key", "ema")
    assert_same(ema["w"], load_file(str(out))["w"], "w")
    proc = run_ckpt("to-safetensors", inp, "-o", tmp_path / "y.safetensors", "--key", "epoch")
    assert_clean_error(proc, inp, tmp_path / "y.safetensors")


def test_unsupported_dtypes_and_bad_input_are_refused_cleanly(tmp_path):
    inp = tmp_path / "c128.pth"
    torch.save({"z": torch.zeros(2, dtype=torch.complex128)}, inp)
    out = tmp_path / "c128.safetensors"
    proc = run_ckpt("to-safetensors", inp, "-o", out)
    assert_clean_error(proc, inp, out)
    assert "complex128" in proc.stderr
    bad = tmp_path / "trunc.pth"
    bad.write_bytes(fixture_path("zip_tinycnn_sd.pth").read_bytes()[:300])
    proc = run_ckpt("to-safetensors", bad, "-o", out)
    assert_clean_error(proc, bad, out)
    assert not list(tmp_path.glob(".*partial"))


def test_streams_with_bounded_memory(tmp_path):
    """A 256 MiB tensor converts in a small fraction of its size in memory."""
    big = torch.arange(64 << 20, dtype=torch.int32)
    inp = tmp_path / "big.pth"
    torch.save({"big": big, "view": big[1:1 << 20]}, inp)
    del big
    out = tmp_path / "big.safetensors"
    probe = ("import resource, subprocess, sys; "
             "r = subprocess.run(sys.argv[1:]); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(r.returncode)")
    from _util import ckpt_bin
    proc = subprocess.run([sys.executable, "-c", probe, ckpt_bin(), "to-safetensors", str(inp),
                           "-o", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    peak_mib = int(proc.stdout.strip()) / 1024
    assert peak_mib < 96, f"peak RSS {peak_mib:.0f} MiB for a 256 MiB tensor"
    with safe_open(str(out), "pt") as f:
        assert f.metadata() == {"format": "pt", "view": "big"}
        t = f.get_tensor("big")
    assert t.shape == (64 << 20,) and t[12345].item() == 12345 and t[-1].item() == (64 << 20) - 1
