"""torch itself as the oracle of `ckpt scan` (issue 26): every file is loaded by torch 2.13
with a recording pickle module (torch_oracle.py), nothing executed, and ckpt's verdict is
held to what torch reached.

* Attacks (evasions.py, one per construction): whenever torch asked for a global off ckpt's
  safe list, ckpt says dangerous or unknown (exit 1 or 3), never clean (0) nor unreadable
  (2); a file torch loads is never unreadable.
* Benign controls (every fixture outside fixtures/hostile, a safetensors file, files real
  torch writes in each format): torch loads them, ckpt is never dangerous nor unreadable,
  and the globals ckpt calls unsafe are exactly the ones torch reached.
Every miss is listed in one assertion message.
"""
import io
import json
import subprocess

import pytest
import torch

import evasions
import torch_oracle
from _util import EXPECTED, FIXTURES, ckpt_bin
from torch_oracle import Oracle

# One worker runs the whole module, so its module-scoped oracle and corpus are built once.
pytestmark = pytest.mark.xdist_group(__name__)

VERDICTS = evasions.VERDICTS
# Fixtures that are not torch.load inputs (torch.export archives, DCP shards) or that
# torch.jit.load refuses by design (a TorchScript module that recurses): ckpt must still
# not call them dangerous or unreadable, but torch is not asked to load them.
NOT_TORCH_LOAD = ("pt2/", "dcp/", "script/hostile_recursion.pt")
SUFFIXES = (".pt", ".pth", ".ckpt", ".bin", ".tar", ".pt2", ".safetensors", ".distcp")


@pytest.fixture(scope="module")
def oracle():
    with Oracle() as o:
        yield o


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, oracle):
    return evasions.evaluate(tmp_path_factory.mktemp("evasions"), oracle)


def scan(path):
    """(exit status, the globals ckpt classifies unknown or dangerous)."""
    proc = subprocess.run([ckpt_bin(), "scan", "--json", str(path)], capture_output=True,
                          text=True, timeout=120)
    try:
        files = json.loads(proc.stdout)["files"]
    except (json.JSONDecodeError, KeyError):
        return proc.returncode, set()
    return proc.returncode, {g["path"] for f in files for p in f.get("pickles", [])
                             for g in p["globals"] if g["class"] != "safe"}


# ------------------------------------------------------------------ the oracle itself
def test_oracle_loads_a_fixture_with_only_allow_listed_names(oracle):
    res = oracle.load(FIXTURES / "zip_tinycnn_sd.pth")
    assert res.completed, res.error
    assert "torch._utils._rebuild_tensor_v2" in res.names and res.reached == [], res


def test_oracle_records_a_payload_and_runs_nothing(oracle, tmp_path):
    hostile = oracle.load(FIXTURES / "hostile/reduce_os_system.pth")
    assert hostile.reached == ["os.system"], hostile
    marker = tmp_path / "MARKER"
    attacks = {
        "os_system.pth": evasions.call_body(arg=f"touch {marker}"),
        "exec.pth": evasions.call_body("builtins", "exec",
                                       f"open({str(marker)!r}, 'w').close()"),
    }
    for name, body in attacks.items():
        path = tmp_path / name
        path.write_bytes(evasions.plain_zip(evasions.proto(2) + body + b"."))
        res = oracle.load(path)
        assert res.completed and res.reached, (name, res)
    assert not marker.exists(), "a payload ran under the oracle"


def test_oracle_records_the_torchscript_dispatch(oracle):
    res = oracle.load(FIXTURES / "ts_scripted.pt")
    assert res.completed and res.jit and res.names == [], res


def test_oracle_records_copyreg_extension_lookups():
    """CPython's C unpickler resolves EXT1/2/4 through find_class: the recorder sees them."""
    import copyreg
    log = io.StringIO()
    code = 0xF1
    copyreg.add_extension("os", "system", code)
    try:
        rec = torch_oracle._recorder(log)
        obj = rec.loads(b"\x80\x02\x82" + bytes([code]) + b"X\x01\x00\x00\x00x\x85R.")
    finally:
        copyreg.remove_extension("os", "system", code)
    assert 'N\t["os", "system"]' in log.getvalue()
    assert type(obj).__name__.startswith("Inert"), obj


# ------------------------------------------------------------------ attacks
def test_no_file_torch_reaches_a_payload_in_is_clean_or_unreadable(corpus):
    misses, attacks = [], 0
    for case, path, res, code in corpus:
        attacks += bool(res.reached)
        if not evasions.verdict_ok(case, res, code):
            seen = ", ".join(sorted(set(res.reached))) or "nothing off the safe list"
            misses.append(f"{path.name} [{case.family}]: torch reached {seen} "
                          f"(load {'completed' if res.completed else 'failed'}); ckpt exit "
                          f"{code} {VERDICTS.get(code, '?')}")
    print(f"{len(corpus)} crafted files, torch reached a payload in {attacks}")
    assert not misses, f"{len(misses)} of {len(corpus)} crafted files:\n" + "\n".join(misses)


def test_every_family_has_an_attack_torch_reaches(corpus):
    reached = {case.family for case, _, res, _ in corpus if res.reached}
    assert reached >= {"zip", "torchscript", "tar", "legacy", "pickle"}, reached


# ------------------------------------------------------------------ benign controls
def torch_written(out):
    """Files real torch writes, one per format: zip, legacy stream, TorchScript,
    safetensors."""
    sd = {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.ones(3)}
    paths = {}
    paths["torch_zip.pth"] = out / "torch_zip.pth"
    torch.save(sd, paths["torch_zip.pth"])
    paths["torch_legacy.pth"] = out / "torch_legacy.pth"
    torch.save(sd, paths["torch_legacy.pth"], _use_new_zipfile_serialization=False)
    paths["torch_script.pt"] = out / "torch_script.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(3, 2)), paths["torch_script.pt"])
    from safetensors.torch import save_file
    paths["model.safetensors"] = out / "model.safetensors"
    save_file(sd, paths["model.safetensors"])
    paths["crafted.safetensors"] = out / "crafted.safetensors"
    paths["crafted.safetensors"].write_bytes(evasions.safetensors_benign())
    return paths


def controls(tmp):
    files = [p for p in sorted(FIXTURES.rglob("*"))
             if p.is_file() and p.suffix in SUFFIXES and "hostile" not in p.relative_to(
                 FIXTURES).parts]
    return [(str(p.relative_to(FIXTURES)), p) for p in files] + sorted(torch_written(tmp).items())


def test_benign_controls_load_in_torch_and_scan_as_torch_reads_them(oracle, tmp_path):
    misses, count = [], 0
    for name, path in controls(tmp_path):
        count += 1
        code, unsafe = scan(path)
        if code not in (0, 3):
            misses.append(f"{name}: ckpt exit {code} {VERDICTS.get(code, '?')}")
            continue
        if name.startswith(NOT_TORCH_LOAD):
            continue
        load_kwargs = EXPECTED.get(name, {}).get("load_kwargs") or {}
        res = oracle.load(path, encoding=load_kwargs.get("encoding"),
                          fake_npu=bool(load_kwargs.get("fake_torch_npu")))
        if not res.completed:
            misses.append(f"{name}: torch.load failed: {res.error}")
        reached = set(res.reached)
        if reached != unsafe or (code == 3) != bool(reached):
            misses.append(f"{name}: torch reached {sorted(reached)}, ckpt exit {code} calls "
                          f"{sorted(unsafe)} unsafe")
    assert not misses, f"{len(misses)} of {count} benign controls:\n" + "\n".join(misses)
