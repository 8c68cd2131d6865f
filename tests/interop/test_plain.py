"""`ckpt convert --plain` against torch 2.13: the output loads with the default
`torch.load(path)` (weights_only=True) and holds what a `weights_only=False` load of the
original holds after the same plain conversion done in Python (Namespace -> vars, omegaconf ->
OmegaConf.to_container, numpy arrays -> torch.from_numpy, numpy scalars -> .item(), paths ->
str, enum members -> .value); ckpt's copy of torch's allow-list is torch's own."""
import argparse
import enum
import json
import pathlib
import re
import sys

import numpy as np
import pytest
import torch
from omegaconf import DictConfig, ListConfig, OmegaConf

from _util import FIXTURES, ROOT, ok, run_ckpt
from torch_oracle import WEIGHTS_ONLY

PLAIN = FIXTURES / "plain"
sys.path.insert(0, str(PLAIN))  # _plain_types: the enum and user class the fixtures pickle


def test_allow_list_is_torchs():
    from torch._weights_only_unpickler import _get_allowed_globals
    torch_list = set(_get_allowed_globals())
    assert WEIGHTS_ONLY == torch_list, (
        f"src/torch/allowlist.rs differs from torch {torch.__version__}: "
        f"missing {sorted(torch_list - WEIGHTS_ONLY)}, extra {sorted(WEIGHTS_ONLY - torch_list)}")


def plain(x):
    """The plain conversion, done on the real Python objects."""
    if isinstance(x, argparse.Namespace):
        return {k: plain(v) for k, v in vars(x).items()}
    if isinstance(x, (DictConfig, ListConfig)):
        return plain(OmegaConf.to_container(x))
    if isinstance(x, np.ndarray):
        return torch.from_numpy(np.array(x, order="C"))  # (0-d stays 0-d)
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, pathlib.PurePath):
        return str(x)
    if isinstance(x, enum.Enum):
        return plain(x.value)
    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, dict):
        kind = type(x) if type(x) in (dict, type(torch.nn.Linear(1, 1).state_dict())) else dict
        return kind((plain(k), plain(v)) for k, v in x.items())
    if isinstance(x, list):
        return [plain(v) for v in x]
    if isinstance(x, tuple):
        return tuple(plain(v) for v in x)
    return x


def assert_same(exp, act, path="obj"):
    assert type(exp) is type(act), f"{path}: {type(exp).__name__} expected, got {type(act).__name__}"
    if isinstance(exp, torch.Tensor):
        assert (exp.dtype, exp.shape) == (act.dtype, act.shape), path
        assert torch.equal(exp, act), path
    elif isinstance(exp, dict):
        assert list(exp) == list(act), f"{path}: keys"
        for k in exp:
            assert_same(exp[k], act[k], f"{path}/{k}")
    elif isinstance(exp, (list, tuple)):
        assert len(exp) == len(act), f"{path}: length"
        for i, (e, a) in enumerate(zip(exp, act)):
            assert_same(e, a, f"{path}/{i}")
    else:
        assert exp == act, f"{path}: {exp!r} != {act!r}"


@pytest.mark.parametrize("name", ["plain_np1.pth", "plain_np2.pth", "plain_legacy.pth"])
def test_plain_output_loads_with_weights_only_and_holds_the_plain_values(name, tmp_path):
    inp, out = PLAIN / name, tmp_path / "out.pth"
    with pytest.raises(Exception, match="weights_only"):
        torch.load(inp)
    ok(run_ckpt("convert", "--plain", inp, "-o", out))
    if name != "plain_legacy.pth":  # torch reads this list from zip files only
        assert torch.serialization.get_unsafe_globals_in_checkpoint(out) == []
    got = torch.load(out)
    expected = plain(torch.load(inp, weights_only=False))
    assert_same(expected, got)
    assert got["mean"].dtype == torch.float32 and got["count"].shape == ()


def test_plain_refuses_an_unknown_class_and_writes_nothing(tmp_path):
    out = tmp_path / "out.pth"
    proc = run_ckpt("convert", "--plain", PLAIN / "plain_refused.pth", "-o", out)
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "`extra/hook` is a `_plain_types.Opaque` object" in proc.stderr
    assert not out.exists()


def weights_only_load(path):
    """What torch's default load does with `path`: ("loads", None), ("global", the global it
    refuses), or ("other", message) when it fails before or apart from any global (an
    opcode its weights_only unpickler lacks, a tar file)."""
    try:
        torch.load(path, map_location="cpu", encoding="latin1")  # Python 2 pickles need it
    except Exception as e:  # torch wraps the unpickler's error in its own
        m = re.search(r"GLOBAL (\S+) (?:was not an allowed global|whose module)", str(e))
        return ("global", m.group(1)) if m else ("other", str(e)[-200:])
    return ("loads", None)


ALL = sorted([p for p in FIXTURES.glob("*") if p.suffix in (".pth", ".tar", ".ckpt")]
             + list(PLAIN.glob("*.pth")))


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_inspect_blockers_agree_with_torchs_default_load(path):
    """Where torch's default load refuses a global, `inspect` lists blockers and that global's
    class among them; where it loads, inspect lists none."""
    report = json.loads(ok(run_ckpt("inspect", "--json", path)).stdout)
    blockers = [b["class"] for b in report.get("weights_only_blockers", [])]
    outcome, detail = weights_only_load(path)
    if outcome == "loads":
        assert blockers == [], (path.name, blockers)
    elif outcome == "global":
        canonical = detail.replace("copyreg._reconstructor", "argparse.Namespace")
        assert canonical in blockers, (path.name, detail, blockers)


def test_the_oracle_sees_both_outcomes():
    outcomes = {weights_only_load(p)[0] for p in ALL}
    assert {"loads", "global"} <= outcomes, outcomes
