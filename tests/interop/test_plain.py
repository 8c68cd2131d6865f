"""`ckpt convert --plain` against torch 2.13: the output loads with the default
`torch.load(path)` (weights_only=True) and holds what a `weights_only=False` load of the
original holds after the same plain conversion done in Python (Namespace -> vars, omegaconf ->
OmegaConf.to_container, numpy arrays -> torch.from_numpy, numpy scalars -> .item(), paths ->
str, enum members -> .value; fixtures/plain/_plain_values.py), also for training checkpoints
torch 1.13.1, 2.1.2 and 2.11.0 wrote; ckpt's copy of torch's allow-list is torch's own."""
import json
import re
import sys
import zipfile

import pytest
import torch

from _util import FIXTURES, ok, run_ckpt
from torch_oracle import WEIGHTS_ONLY

PLAIN = FIXTURES / "plain"
# _plain_types: the enum and user class the fixtures pickle; _plain_values: the plain
# conversion in Python and the JSON form the generator records it in.
sys.path.insert(0, str(PLAIN))
from _plain_values import from_json, plain  # noqa: E402


def test_allow_list_is_torchs():
    from torch._weights_only_unpickler import _get_allowed_globals
    torch_list = set(_get_allowed_globals())
    assert WEIGHTS_ONLY == torch_list, (
        f"crates/formats/src/torch/allowlist.rs differs from torch {torch.__version__}: "
        f"missing {sorted(torch_list - WEIGHTS_ONLY)}, extra {sorted(WEIGHTS_ONLY - torch_list)}")


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


GENERATIONS = sorted(PLAIN.glob("plain_torch*.pth"))


@pytest.mark.parametrize("path", GENERATIONS, ids=lambda p: p.name)
def test_plain_output_of_an_older_torch_loads_with_weights_only_and_holds_what_it_recorded(
        path, tmp_path):
    """Training checkpoints older torch versions wrote (zip, and legacy from torch 1.x): after
    the rewrite, today's default load reads them and they hold the plain form the writing
    torch recorded (plain_torchV.json), tensors bit for bit."""
    record = json.loads((PLAIN / (path.stem.removesuffix("_legacy") + ".json")).read_text())
    assert path.name.startswith(f"plain_torch{record['torch']}")
    out = tmp_path / "out.pth"
    with pytest.raises(Exception, match="weights_only"):
        torch.load(path)
    ok(run_ckpt("convert", "--plain", path, "-o", out))
    if zipfile.is_zipfile(out):  # torch reads this list from zip files only
        assert torch.serialization.get_unsafe_globals_in_checkpoint(out) == []
    got = torch.load(out)
    assert_same(from_json(record["plain"]), got)
    assert {"model", "optimizer", "scaler", "args", "cfg", "mean", "mode"} <= set(got)
    assert got["scaler"]["scale"] == 1024.0 and got["optimizer"]["state"][0]["step"] == 1


def test_every_generation_the_generator_pins_has_its_files():
    pinned = [line.split()[0].removeprefix("torch==") for line in
              (PLAIN / "VERSIONS").read_text().splitlines() if line.startswith("torch==")]
    older = [v for v in pinned if v != torch.__version__.split("+")[0]]
    assert len(older) >= 3, pinned
    for v in older:
        assert PLAIN / f"plain_torch{v}.pth" in GENERATIONS, v
        assert (PLAIN / f"plain_torch{v}.json").exists(), v
    assert any(p.name.endswith("_legacy.pth") for p in GENERATIONS)


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
