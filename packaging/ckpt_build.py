"""The build backend `pip install .` runs: maturin's, except that it will not download a Rust
toolchain behind the user's back.

maturin fetches a temporary Rust toolchain (~800 MB, into the user's cache) when `cargo` is
not on PATH. ckpt refuses instead, with what to do, unless CKPT_ALLOW_RUST_DOWNLOAD=1 asks
for maturin's download. Everything else is maturin's own hooks, unchanged.
"""
import os
import shutil

ALLOW = os.environ.get("CKPT_ALLOW_RUST_DOWNLOAD") == "1"
if not ALLOW:
    # maturin reads this at each hook: no puccinialin requirement, no toolchain download.
    os.environ["MATURIN_NO_INSTALL_RUST"] = "1"

import maturin  # noqa: E402  (after the variable above, which its hooks read)

NO_CARGO = (
    "ckpt: building needs Rust's cargo (Rust >= 1.95) on PATH, and none was found. Install "
    "Rust from https://rustup.rs (then open a new shell), or set CKPT_ALLOW_RUST_DOWNLOAD=1 "
    "to let maturin download a temporary toolchain (~800 MB) into your cache."
)


def _require_cargo():
    if not ALLOW and shutil.which("cargo") is None:
        raise SystemExit(NO_CARGO)


def get_requires_for_build_wheel(config_settings=None):
    _require_cargo()
    return maturin.get_requires_for_build_wheel(config_settings)


def get_requires_for_build_sdist(config_settings=None):
    return maturin.get_requires_for_build_sdist(config_settings)


def get_requires_for_build_editable(config_settings=None):
    _require_cargo()
    return maturin.get_requires_for_build_editable(config_settings)


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    _require_cargo()
    return maturin.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _require_cargo()
    return maturin.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _require_cargo()
    return maturin.build_editable(wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory, config_settings=None):
    return maturin.build_sdist(sdist_directory, config_settings)
