"""Error contract: exit status 1, one stderr line naming the input file, OUT never left."""
import hashlib
import random
import shutil

import pytest
import torch

from _util import assert_clean_error, fixture_path, run_ckpt

COMMANDS = {
    "inspect": lambda i, o: ("inspect", i, "--json"),
    "strip-module": lambda i, o: ("strip-module", i, "-o", o),
    "remap": lambda i, o: ("remap", i, "-o", o, "--to", "cpu"),
    "shard": lambda i, o: ("shard", i, "-o", o, "--ranks", "2"),
}


def make_bad(kind, tmp_path):
    if kind == "truncated_zip":
        data = fixture_path("zip_train_ckpt.pth").read_bytes()
        data = data[: len(data) * 6 // 10]
    elif kind == "truncated_legacy":  # cut inside the raw storage bytes at the end
        data = fixture_path("legacy_train_ckpt.pth").read_bytes()[:-100]
    elif kind == "truncated_zip_header":
        data = fixture_path("zip_tinycnn_sd.pth").read_bytes()[:40]
    elif kind == "random":
        data = random.Random(0).randbytes(4096)
    elif kind == "empty":
        data = b""
    else:
        raise ValueError(kind)
    p = tmp_path / f"bad_{kind}.pth"
    p.write_bytes(data)
    return p


@pytest.mark.parametrize("cmd", list(COMMANDS))
@pytest.mark.parametrize("kind", ["truncated_zip", "truncated_legacy", "truncated_zip_header",
                                  "random", "empty"])
def test_corrupt_input(tmp_path, kind, cmd):
    inp, out = make_bad(kind, tmp_path), tmp_path / "out.pth"
    proc = run_ckpt(*COMMANDS[cmd](inp, out))
    assert_clean_error(proc, inp, out)


@pytest.mark.parametrize("cmd", list(COMMANDS))
def test_missing_input(tmp_path, cmd):
    inp, out = tmp_path / "does_not_exist.pth", tmp_path / "out.pth"
    assert_clean_error(run_ckpt(*COMMANDS[cmd](inp, out)), inp, out)


@pytest.mark.parametrize("cmd", ["strip-module", "remap"])
@pytest.mark.parametrize("spelling", ["same", "dot_segment"])
def test_out_equals_in_refused(tmp_path, cmd, spelling):
    inp = tmp_path / "model_ckpt.pth"
    shutil.copy(fixture_path("zip_dataparallel_sd.pth"), inp)
    before = hashlib.sha256(inp.read_bytes()).hexdigest()
    out = inp if spelling == "same" else tmp_path / "." / "sub" / ".." / inp.name
    (tmp_path / "sub").mkdir()
    proc = run_ckpt(*COMMANDS[cmd](inp, out))
    assert_clean_error(proc, inp)
    assert hashlib.sha256(inp.read_bytes()).hexdigest() == before, "input was modified"


@pytest.mark.parametrize("fmt", ["zip", "legacy"])
def test_strip_collision(tmp_path, fmt):
    inp, out = tmp_path / f"collide_{fmt}.pth", tmp_path / "out.pth"
    sd = {"module.a": torch.ones(2), "a": torch.zeros(2), "module.b": torch.ones(1)}
    torch.save(sd, inp, _use_new_zipfile_serialization=(fmt == "zip"))
    assert_clean_error(run_ckpt("strip-module", inp, "-o", out), inp, out)


def test_strip_collision_nested(tmp_path):
    """A collision inside a nested state dict (training checkpoint) is an error too."""
    inp, out = tmp_path / "collide_nested.pth", tmp_path / "out.pth"
    sd = {"module.fc.weight": torch.ones(2), "fc.weight": torch.zeros(2)}
    torch.save({"epoch": 1, "state_dict": sd}, inp)
    assert_clean_error(run_ckpt("strip-module", inp, "-o", out), inp, out)
