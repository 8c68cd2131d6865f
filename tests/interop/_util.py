"""Shared helpers for the ckpt interop tests (run with the venv from scripts/interop-venv)."""
import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
sys.path.insert(0, str(FIXTURES))

import _devices  # noqa: E402  (fixtures/_devices.py)
import _ptfacts  # noqa: E402  (fixtures/_ptfacts.py)

EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
LEGACY_MAGIC = _ptfacts.LEGACY_MAGIC
WRAPPERS = ("module.", "_orig_mod.", "_fsdp_wrapped_module.", "_checkpoint_wrapped_module.")
NPU_MODULES = ("torch_npu", "torch_npu.utils", "torch_npu.utils.storage",
               "torch_npu.npu", "torch_npu.npu._format")


def ckpt_bin():
    p = Path(os.environ.get("CKPT_BIN", "target/release/ckpt"))
    if not p.is_absolute():
        p = ROOT / p
    if not (p.is_file() and os.access(p, os.X_OK)):
        pytest.fail(f"ckpt binary not found or not executable: {p} "
                    f"(build it with `cargo build --release` or set CKPT_BIN)", pytrace=False)
    return str(p)


def run_ckpt(*args, timeout=600):
    """Runs ckpt; a `to-onnx` that succeeds must also write a file `ckpt atc-check` passes."""
    proc = subprocess.run([ckpt_bin(), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)
    args = [str(a) for a in args]
    if proc.returncode == 0 and args[:1] == ["to-onnx"]:
        for flag in ("-o", "--output"):
            if flag in args[:-1]:
                import _coverage
                _coverage.assert_atc_check(ckpt_bin(), args[args.index(flag) + 1])
    return proc


def ok(proc):
    assert proc.returncode == 0, (
        f"ckpt {' '.join(proc.args[1:])} exited {proc.returncode}\n"
        f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
    return proc


# ------------------------------------------------------------------ fixture sets
def names(*formats):
    return [n for n, e in EXPECTED.items() if e["format"] in formats]


def fixture_path(name):
    return FIXTURES / name


def needs_fake_npu(name):
    return bool(EXPECTED[name]["load_kwargs"].get("fake_torch_npu"))


def needs_unsafe_load(name):
    """True if the *content* needs weights_only=False (globals off the allow-list other than
    torch_npu's, which remap replaces by standard rebuilds)."""
    e = EXPECTED[name]
    ug = [g for g in (e["unsafe_globals"] or []) if not g.startswith("torch_npu.")]
    return bool(ug) or e["format"] in ("tar", "torchscript")


# ckpt's documented benign classes (src/security/rules.rs, BENIGN): safe although off
# torch's weights_only allow-list.
BENIGN = {"argparse.Namespace", "numpy.core.multiarray._reconstruct",
          "numpy._core.multiarray._reconstruct", "numpy.ndarray", "numpy.dtype",
          "numpy.core.multiarray.scalar", "numpy._core.multiarray.scalar",
          "torch.torch_version.TorchVersion"}


def unknown_globals(name):
    """The fixture's globals that `ckpt scan` classifies unknown: off the weights_only
    allow-list, not torch_npu's known names and not ckpt's benign classes."""
    return [g for g in (EXPECTED[name]["unsafe_globals"] or [])
            if not g.startswith("torch_npu.") and g not in BENIGN]


def allow_unknown(name):
    """Extra arguments a rewriting command needs for this fixture: `--allow-unknown-globals`
    when it names unknown globals (rewrites refuse those by default)."""
    return ["--allow-unknown-globals"] if unknown_globals(name) else []


def has_non_cpu_tags(name):
    return set(EXPECTED[name]["storage_locations"]) != {"cpu"}


# ------------------------------------------------------------------ loading
@contextlib.contextmanager
def fake_npu(enabled=True):
    """Install the stub torch_npu modules for the duration (and remove them again)."""
    if not enabled:
        with without_fake_npu():
            yield
        return
    _devices.install_fake_torch_npu()
    try:
        yield
    finally:
        for m in NPU_MODULES:
            sys.modules.pop(m, None)


@contextlib.contextmanager
def without_fake_npu():
    saved = {m: sys.modules.pop(m) for m in NPU_MODULES if m in sys.modules}
    try:
        yield
    finally:
        sys.modules.update(saved)


def load_input(name_or_path, load_kwargs=None):
    """Load an input the reference way: map_location='cpu', weights_only=False,
    fixture-specific encoding, fake torch_npu for style-B files."""
    if load_kwargs is None:
        load_kwargs = EXPECTED[Path(name_or_path).name]["load_kwargs"]
    kw = {k: v for k, v in load_kwargs.items() if k in ("encoding",)}
    path = name_or_path if os.path.isabs(str(name_or_path)) else fixture_path(name_or_path)
    with fake_npu(bool(load_kwargs.get("fake_torch_npu"))):
        return torch.load(path, map_location="cpu", weights_only=False, **kw)


# ------------------------------------------------------------------ expected transforms
def is_tensor(x):
    return isinstance(x, torch.Tensor)


def state_dict_like(d):
    return (isinstance(d, dict) and len(d) > 0 and all(isinstance(k, str) for k in d)
            and any(is_tensor(v) for v in d.values()))


def expected_strip(obj, _seen=None):
    """What `ckpt strip-module` must produce: in every state-dict-like mapping (str keys,
    at least one tensor value) strip wrapper prefixes while every key carries the same
    one, repeatedly, exactly like consume_prefix_in_state_dict_if_present (incl.
    `_metadata`).  Mutates and returns obj."""
    _seen = set() if _seen is None else _seen
    if id(obj) in _seen:
        return obj
    _seen.add(id(obj))
    if isinstance(obj, dict):
        for k in list(obj):
            obj[k] = expected_strip(obj[k], _seen)
        if state_dict_like(obj):
            while True:
                p = next((p for p in WRAPPERS if all(k.startswith(p) for k in obj)), None)
                if p is None:
                    break
                consume_prefix_in_state_dict_if_present(obj, p)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            obj[i] = expected_strip(v, _seen)
    elif isinstance(obj, tuple) and type(obj) is tuple:
        return tuple(expected_strip(v, _seen) for v in obj)
    return obj


# ------------------------------------------------------------------ comparison
class Mismatch(AssertionError):
    pass


def _storage_id(t):
    return t.untyped_storage()._cdata


def compare(exp, act, path="obj", pairs=None, _seen=None):
    """Recursively assert act == exp.  Collects (path, exp_tensor, act_tensor) in pairs."""
    pairs = [] if pairs is None else pairs
    _seen = {} if _seen is None else _seen
    if type(exp) is not type(act):
        raise Mismatch(f"{path}: type {type(act).__name__} != expected {type(exp).__name__}")
    if id(exp) in _seen:
        if _seen[id(exp)] is not act and not isinstance(exp, (str, int, float, bytes)):
            # identity of shared sub-objects (memo) must be kept for tensors
            if is_tensor(exp):
                raise Mismatch(f"{path}: tensor object identity not preserved")
        return pairs
    if not isinstance(exp, (str, int, float, bytes, bool, type(None))):
        _seen[id(exp)] = act
    if is_tensor(exp):
        compare_tensor(exp, act, path, pairs)
    elif isinstance(exp, dict):
        if list(exp.keys()) != list(act.keys()):
            raise Mismatch(f"{path}: keys {list(act.keys())} != expected {list(exp.keys())}")
        for k in exp:
            compare(exp[k], act[k], f"{path}[{k!r}]", pairs, _seen)
        em, am = getattr(exp, "_metadata", None), getattr(act, "_metadata", None)
        if em is not None or am is not None:
            if em is None or am is None or list(em.items()) != list(am.items()):
                raise Mismatch(f"{path}._metadata: {am!r} != expected {em!r}")
    elif isinstance(exp, (list, tuple)):
        if len(exp) != len(act):
            raise Mismatch(f"{path}: len {len(act)} != {len(exp)}")
        for i, (e, a) in enumerate(zip(exp, act)):
            compare(e, a, f"{path}[{i}]", pairs, _seen)
    elif isinstance(exp, (set, frozenset)):
        if exp != act:
            raise Mismatch(f"{path}: {act!r} != expected {exp!r}")
    elif isinstance(exp, float):
        if not (exp == act or (math.isnan(exp) and math.isnan(act))):
            raise Mismatch(f"{path}: {act!r} != expected {exp!r}")
    elif isinstance(exp, (str, bytes, int, bool, type(None), torch.dtype, torch.device,
                          torch.Size, torch.layout, torch.qscheme)):
        if exp != act:
            raise Mismatch(f"{path}: {act!r} != expected {exp!r}")
    elif isinstance(exp, argparse.Namespace) or hasattr(exp, "__dict__"):
        compare(vars(exp), vars(act), f"{path}.__dict__", pairs, _seen)
    else:
        if exp != act:
            raise Mismatch(f"{path}: {act!r} != expected {exp!r}")
    return pairs


def _storage_bytes(us):
    """The whole untyped storage as a flat uint8 tensor (bitwise, NaN-safe comparison)."""
    return torch.empty(0, dtype=torch.uint8).set_(us)


def compare_tensor(e, a, path, pairs):
    def chk(what, x, y):
        if x != y:
            raise Mismatch(f"{path}: {what} {y!r} != expected {x!r}")
    chk("dtype", e.dtype, a.dtype)
    chk("layout", e.layout, a.layout)
    chk("shape", tuple(e.shape), tuple(a.shape))
    chk("requires_grad", e.requires_grad, a.requires_grad)
    chk("device", e.device, a.device)
    chk("python attributes", getattr(e, "__dict__", {}), getattr(a, "__dict__", {}))
    if e.is_sparse:
        chk("is_coalesced", e.is_coalesced(), a.is_coalesced())
        compare_tensor(e._indices(), a._indices(), path + "._indices()", pairs)
        compare_tensor(e._values(), a._values(), path + "._values()", pairs)
        return
    chk("stride", e.stride(), a.stride())
    chk("storage_offset", e.storage_offset(), a.storage_offset())
    chk("is_conj", e.is_conj(), a.is_conj())
    chk("is_neg", e.is_neg(), a.is_neg())
    if e.is_quantized:
        chk("qscheme", e.qscheme(), a.qscheme())
        chk("q_scale", e.q_scale(), a.q_scale())
        chk("q_zero_point", e.q_zero_point(), a.q_zero_point())
    es, as_ = e.untyped_storage(), a.untyped_storage()
    chk("storage nbytes", es.nbytes(), as_.nbytes())
    if not torch.equal(_storage_bytes(es), _storage_bytes(as_)):
        raise Mismatch(f"{path}: storage bytes differ")
    pairs.append((path, e, a))


def assert_same_sharing(pairs):
    """Tensors that share a storage in the expectation share one in the output, and
    tensors that do not, do not."""
    fwd, back = {}, {}
    for path, e, a in pairs:
        ek, ak = _storage_id(e), _storage_id(a)
        if fwd.setdefault(ek, (ak, path))[0] != ak:
            raise Mismatch(f"{path}: shares a storage with {fwd[ek][1]} in the input "
                           f"but not in the output")
        if back.setdefault(ak, (ek, path))[0] != ek:
            raise Mismatch(f"{path}: shares a storage with {back[ak][1]} in the output "
                           f"but not in the input")


def assert_equivalent(exp, act):
    pairs = compare(exp, act)
    assert_same_sharing(pairs)
    return pairs


# ------------------------------------------------------------------ file checks
def storage_locations(path):
    return _ptfacts.storage_locations(path)


def file_globals(path):
    fmt = _ptfacts.detect_format(path)
    if fmt == "zip":
        return _ptfacts.scan_pickle(_ptfacts.zip_pickle_bytes(path))[1]
    if fmt == "legacy":
        import pickle
        with open(path, "rb") as f:
            for _ in range(3):
                pickle.load(f, encoding="latin1")
            u = _ptfacts._StubUnpickler(f)
            u.load()
            return u.globals
    raise AssertionError(f"{path}: unexpected format {fmt}")


def assert_same_container(inp, out):
    fin, fout = _ptfacts.detect_format(inp), _ptfacts.detect_format(out)
    assert fout == fin, f"{out}: container {fout}, input was {fin}"
    head = Path(out).read_bytes()[:16]
    if fin == "legacy":
        assert head.startswith(LEGACY_MAGIC), f"{out}: no legacy magic: {head.hex()}"
    else:
        assert head.startswith(b"PK\x03\x04"), f"{out}: not a zip: {head.hex()}"


def assert_clean_error(proc, in_name, out_path=None):
    """exit 1, exactly one stderr line naming the input file, OUT absent."""
    assert proc.returncode == 1, (f"expected exit 1, got {proc.returncode}\n"
                                  f"stdout: {proc.stdout}\nstderr: {proc.stderr}")
    lines = proc.stderr.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].strip(), f"want one stderr line, got: {proc.stderr!r}"
    assert Path(in_name).name in lines[0], f"stderr does not name {Path(in_name).name}: {lines[0]!r}"
    if out_path is not None:
        assert not Path(out_path).exists(), f"{out_path} exists after a failed run"


# ------------------------------------------------------------------ to-onnx parity
def onnx_outputs(result):
    """A model's torch result as {ONNX output name: array}, named as `to-onnx` names them:
    one tensor `output`, a dict's tensors after their keys, a tuple's `output_<k>`; a `None`
    has no ONNX output and is left out before naming."""
    if isinstance(result, dict):
        items = [(k, v) for k, v in result.items() if v is not None]
    elif isinstance(result, (tuple, list)):
        kept = [v for v in result if v is not None]
        items = [(f"output_{k}", v) for k, v in enumerate(kept)]
    else:
        items = [("output", result)]
    if len(items) == 1:
        items = [("output", items[0][1])]
    return {name: value.numpy() for name, value in items}


def check_parity(model, onnx_path, chw, gen, batches=(1, 3, 8)):
    """onnxruntime on `onnx_path` against torch eager at each batch size, from one file:
    every output (by name) within max |diff| <= 1e-4 * max(1, max |ref|). Parity must not be
    vacuous: at the largest batch each output varies across samples by at least 10 times
    the tolerance."""
    import numpy as np
    import onnxruntime as ort

    session = ort.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    for b in batches:
        x = torch.randn(b, *chw, generator=gen)
        with torch.no_grad():
            ref = onnx_outputs(model(x))
        assert names == list(ref), f"ONNX outputs {names}, torch returns {list(ref)}"
        got = dict(zip(names, session.run(None, {"input": x.numpy()})))
        for name, r in ref.items():
            assert got[name].shape == r.shape, (name, got[name].shape, r.shape)
            diff = float(np.abs(got[name] - r).max())
            tol = 1e-4 * max(1.0, float(np.abs(r).max()))
            print(f"{onnx_path.stem} `{name}` batch {b}: max |diff| {diff:.3e} "
                  f"(tolerance {tol:.3e}, max |ref| {np.abs(r).max():.3e})")
            assert diff <= tol, f"`{name}` batch {b}: max |diff| {diff:.3e} > {tol:.3e}"
            if b == max(batches):
                spread = float(np.abs(r - r.mean(axis=0)).max())
                assert spread >= 10 * tol, (
                    f"`{name}` hardly depends on the input (spread {spread:.3e}): vacuous")
