"""ckpt scan and the rewrite refusal, checked against torch 2.13's own view of each file."""
import json

import pytest
import torch

from _util import (BENIGN, EXPECTED, FIXTURES, assert_clean_error, fixture_path, ok,
                   run_ckpt, unknown_globals)

UNKNOWN = [n for n in EXPECTED if unknown_globals(n)]
HOSTILE = FIXTURES / "hostile"


def scan(path):
    proc = run_ckpt("scan", "--json", path)
    return proc, json.loads(proc.stdout)


def paths(file, cls):
    return sorted({g["path"] for p in file["pickles"] for g in p["globals"] if g["class"] == cls})


@pytest.mark.parametrize("name", list(EXPECTED))
def test_every_fixture_scans_clean_or_unknown_with_its_unknown_globals(name):
    """Exit 0 when every global is safe, 3 (unknown) when some global is on no allow-list."""
    proc, out = scan(fixture_path(name))
    unknown = bool(unknown_globals(name))
    assert proc.returncode == (3 if unknown else 0), proc.stdout
    file = out["files"][0]
    assert file["status"] == ("unknown" if unknown else "clean") and file["issues"] == []
    assert paths(file, "dangerous") == []
    assert paths(file, "unknown") == sorted(unknown_globals(name))


# torch's static checker only parses protocol 2 ("Unsupported operand 149" on FRAME).
@pytest.mark.parametrize("name", [n for n in EXPECTED if EXPECTED[n]["format"] == "zip"
                                  and n != "zip_protocol4.pth"])
def test_torch_unsafe_globals_are_all_reported(name):
    """Every global torch's static check calls unsafe is one ckpt reports as not safe, a
    known torch_npu name, or one of ckpt's documented benign classes."""
    theirs = set(torch.serialization.get_unsafe_globals_in_checkpoint(fixture_path(name)))
    _, out = scan(fixture_path(name))
    file = out["files"][0]
    ours = set(paths(file, "unknown")) | set(paths(file, "dangerous"))
    assert {g for g in theirs if not g.startswith("torch_npu.") and g not in BENIGN} <= ours


@pytest.mark.parametrize("name", UNKNOWN)
@pytest.mark.parametrize("cmd", [["strip-module"], ["remap", "--to", "cpu"], ["convert"]])
def test_rewrites_refuse_unknown_globals_without_the_flag(name, cmd, tmp_path):
    out = tmp_path / "out.pth"
    proc = run_ckpt(*cmd, fixture_path(name), "-o", out)
    assert_clean_error(proc, name, out)
    assert "--allow-unknown-globals" in proc.stderr
    for g in unknown_globals(name):
        assert g in proc.stderr
    ok(run_ckpt(*cmd, fixture_path(name), "-o", out, "--allow-unknown-globals"))
    # The output keeps the globals it was allowed to pass: it never scans clean.
    proc, report = scan(out)
    assert proc.returncode == 3, proc.stderr
    kept = set(paths(report["files"][0], "unknown"))
    assert set(unknown_globals(name)) <= kept


@pytest.mark.parametrize("name", ["reduce_os_system.pth", "torch_load_nested.pth"])
def test_torch_agrees_hostile_zips_are_unsafe(name):
    path = HOSTILE / name
    proc, out = scan(path)
    assert proc.returncode == 1
    dangerous = paths(out["files"][0], "dangerous")
    theirs = set(torch.serialization.get_unsafe_globals_in_checkpoint(path))
    assert set(dangerous) <= theirs
    with pytest.raises(Exception, match="Unsupported global|weights_only"):
        torch.load(path, weights_only=True)


@pytest.mark.parametrize("name", ["nested_zip.pth", "stack_global_memo.pth", "renamed_pkl.pth"])
def test_hostile_inputs_are_refused_even_with_the_flag(name, tmp_path):
    out = tmp_path / "out.pth"
    proc = run_ckpt("strip-module", HOSTILE / name, "-o", out, "--allow-unknown-globals")
    assert_clean_error(proc, name, out)
    assert "dangerous globals" in proc.stderr
