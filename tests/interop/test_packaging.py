"""`pip install .`'s build backend (packaging/ckpt_build.py): maturin's hooks, except that
without cargo on PATH it stops with what to do instead of letting maturin download a Rust
toolchain (~800 MB) into the user's cache."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A stand-in for maturin (the real one is only in pip's isolated build env): each hook
# prints its name and whether maturin would be allowed to download Rust.
FAKE_MATURIN = """
import os
def _hook(name):
    def hook(*args, **kwargs):
        print(name, os.environ.get("MATURIN_NO_INSTALL_RUST", "download-allowed"))
        return []
    return hook
for _name in ["get_requires_for_build_wheel", "get_requires_for_build_sdist",
              "get_requires_for_build_editable", "prepare_metadata_for_build_wheel",
              "build_wheel", "build_editable", "build_sdist"]:
    globals()[_name] = _hook(_name)
"""


def run_hook(tmp_path, hook, path, allow=False):
    (tmp_path / "maturin.py").write_text(FAKE_MATURIN)
    env = {"PATH": path, "PYTHONPATH": f"{tmp_path}:{ROOT / 'packaging'}"}
    if allow:
        env["CKPT_ALLOW_RUST_DOWNLOAD"] = "1"
    return subprocess.run([sys.executable, "-c", f"import ckpt_build; ckpt_build.{hook}()"],
                          env=env, capture_output=True, text=True)


def test_without_cargo_the_build_stops_and_says_what_to_do(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    done = run_hook(tmp_path, "get_requires_for_build_wheel", str(empty))
    assert done.returncode != 0
    assert "needs Rust's cargo" in done.stderr and "CKPT_ALLOW_RUST_DOWNLOAD=1" in done.stderr
    assert done.stdout == ""


def test_with_cargo_the_hooks_are_maturins_and_never_download(tmp_path):
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    cargo = fake_bin / "cargo"
    cargo.write_text("#!/bin/sh\n")
    cargo.chmod(0o755)
    done = run_hook(tmp_path, "get_requires_for_build_wheel", str(fake_bin))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["get_requires_for_build_wheel", "1"]


def test_the_download_is_maturins_when_asked_for(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    done = run_hook(tmp_path, "get_requires_for_build_wheel", str(empty), allow=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["get_requires_for_build_wheel", "download-allowed"]
