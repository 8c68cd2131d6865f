"""A DDP-wrapped torchvision resnet18 training checkpoint tagged cuda:0, generated at test
time (real shapes: ~45 MiB, too big for fixtures/)."""
import json

import pytest
import torch
import torch.nn as nn
import torchvision

from _util import (_devices, assert_equivalent, expected_strip, ok, run_ckpt,
                   storage_locations, without_fake_npu)

# One worker runs the whole module, so its module-scoped fixture is built once.
pytestmark = pytest.mark.xdist_group(__name__)


@pytest.fixture(scope="module")
def ddp_ckpt(tmp_path_factory):
    torch.manual_seed(0)
    model = torchvision.models.resnet18()
    ddp = nn.DataParallel(model)  # same `module.` layout as DistributedDataParallel
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    model.train()
    nn.functional.cross_entropy(ddp(torch.randn(2, 3, 32, 32)), torch.tensor([1, 2])).backward()
    opt.step()
    obj = {"epoch": 90, "arch": "resnet18", "best_acc1": 69.758,
           "state_dict": ddp.state_dict(), "optimizer": opt.state_dict()}
    path = tmp_path_factory.mktemp("resnet18") / "resnet18_ddp_cuda0.pth.tar"
    with _devices.forced_location("cuda:0"):
        torch.save(obj, path)
    n_storages = len(obj["state_dict"]) + len(obj["optimizer"]["state"])
    assert storage_locations(path) == {"cuda:0": n_storages}
    return path


def load_in(path):
    return torch.load(path, map_location="cpu", weights_only=False)


def test_strip_then_remap_loads_strict(ddp_ckpt, tmp_path):
    mid, out = tmp_path / "mid.pth", tmp_path / "out.pth"
    ok(run_ckpt("strip-module", ddp_ckpt, "-o", mid))
    ok(run_ckpt("remap", mid, "-o", out, "--to", "cpu"))
    with without_fake_npu():
        got = torch.load(out)  # plain default args
    torchvision.models.resnet18().load_state_dict(got["state_dict"], strict=True)
    assert_equivalent(expected_strip(load_in(ddp_ckpt)), got)


def test_remap_then_strip(ddp_ckpt, tmp_path):
    mid, out = tmp_path / "mid.pth", tmp_path / "out.pth"
    ok(run_ckpt("remap", ddp_ckpt, "-o", mid, "--to", "cpu"))
    ok(run_ckpt("strip-module", mid, "-o", out))
    got = torch.load(out)
    torchvision.models.resnet18().load_state_dict(got["state_dict"], strict=True)
    assert_equivalent(expected_strip(load_in(ddp_ckpt)), got)


def test_strip_keeps_cuda_tags(ddp_ckpt, tmp_path):
    out = tmp_path / "out.pth"
    ok(run_ckpt("strip-module", ddp_ckpt, "-o", out))
    assert storage_locations(out) == storage_locations(ddp_ckpt)
    got = torch.load(out, map_location="cpu")
    torchvision.models.resnet18().load_state_dict(got["state_dict"], strict=True)


def test_inspect(ddp_ckpt):
    info = json.loads(ok(run_ckpt("inspect", ddp_ckpt, "--json")).stdout)
    obj = load_in(ddp_ckpt)
    n = len(obj["state_dict"]) + len(obj["optimizer"]["state"])
    assert info["format"] == "zip"
    assert info["tensors"] == n and info["storages"] == n
    assert info["locations"] == {"cuda:0": n}
    assert "module." in "".join(info["prefixes"])
    assert info["amp"] is None
