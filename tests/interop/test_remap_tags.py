"""remap --map / --to: location tags written into the output (read from persistent ids)."""
import pytest
import torch

from _util import (EXPECTED, assert_equivalent, assert_same_container, fixture_path,
                   load_input, ok, run_ckpt, storage_locations, without_fake_npu)

MIXED = "mixed_cuda_zip.pth"  # storages: cuda:0 x5, cuda:1 x4


def remap(tmp_path, name, *args):
    inp, out = fixture_path(name), tmp_path / "out.pth"
    ok(run_ckpt("remap", inp, "-o", out, *args))
    assert_same_container(inp, out)
    return out


def test_mixed_fixture_is_mixed():
    assert EXPECTED[MIXED]["storage_locations"] == {"cuda:0": 5, "cuda:1": 4}


def test_map_cuda_wildcard_to_cpu(tmp_path):
    out = remap(tmp_path, MIXED, "--map", "cuda:*=cpu")
    assert storage_locations(out) == {"cpu": 9}
    with without_fake_npu():
        act = torch.load(out)  # plain default args
    assert_equivalent(load_input(MIXED), act)


def test_map_cuda1_to_cuda0(tmp_path):
    out = remap(tmp_path, MIXED, "--map", "cuda:1=cuda:0")
    assert storage_locations(out) == {"cuda:0": 9}
    act = torch.load(out, map_location={"cuda:0": "cpu"})  # exact tag match or it raises
    assert_equivalent(load_input(MIXED), act)


def test_map_only_touches_matching_tags(tmp_path):
    out = remap(tmp_path, MIXED, "--map", "cuda:1=cpu")
    assert storage_locations(out) == {"cuda:0": 5, "cpu": 4}
    act = torch.load(out, map_location={"cuda:0": "cpu"})
    assert_equivalent(load_input(MIXED), act)


def test_map_repeated(tmp_path):
    out = remap(tmp_path, MIXED, "--map", "cuda:0=cpu", "--map", "cuda:1=npu:0")
    assert storage_locations(out) == {"cpu": 5, "npu:0": 4}
    act = torch.load(out, map_location={"npu:0": "cpu"})
    assert_equivalent(load_input(MIXED), act)


@pytest.mark.parametrize("name", [MIXED, "cuda3_zip.pth", "cuda3_legacy.pth",
                                  "zip_tinycnn_sd.pth", "legacy_train_ckpt.pth"])
def test_to_npu0(tmp_path, name):
    out = remap(tmp_path, name, "--to", "npu:0")
    assert storage_locations(out) == {"npu:0": EXPECTED[name]["storages"]}
    with pytest.raises(Exception, match="npu:0"):
        torch.load(out)  # no torch_npu here: torch refuses the npu:0 tag, as for a real file
    act = torch.load(out, map_location={"npu:0": "cpu"})
    assert_equivalent(load_input(name), act)


@pytest.mark.parametrize("name", ["cuda3_legacy.pth", "npu0_legacy.pth", "npu0_zip.pth"])
def test_map_wildcard_on_single_device_files(tmp_path, name):
    src = next(iter(EXPECTED[name]["storage_locations"]))
    dev = src.split(":")[0]
    out = remap(tmp_path, name, "--map", f"{dev}:*=cpu")
    assert storage_locations(out) == {"cpu": EXPECTED[name]["storages"]}
    act = torch.load(out)
    assert_equivalent(load_input(name), act)


@pytest.mark.parametrize("name", ["npu_rebuild_enum.pth", "npu_rebuild_int.pth",
                                  "npu_rebuild_bool.pth"])
def test_npu_style_b_to_cpu_loads_without_torch_npu(tmp_path, name):
    out = remap(tmp_path, name, "--to", "cpu")
    with without_fake_npu():
        act = torch.load(out)  # weights_only=True, torch_npu absent
    assert_equivalent(load_input(name), act)
    assert type(act["extra_param"]) is torch.nn.Parameter
