"""ckpt batch: a plan run over >= 50 mixed checkpoints generated here with torch 2.13 (zip and
legacy, DDP `module.` prefixes, cuda-tagged storages, float16, training checkpoints, corrupt
files), every output verified with torch, safetensors and onnxruntime; resume after kill -9;
sharding across 3 machines and `ckpt manifest merge`."""
import json
import os
import signal
import subprocess
import sys
import time
from collections import OrderedDict
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch
from safetensors.torch import load_file

from _util import FIXTURES, _devices, ckpt_bin, ok, run_ckpt, storage_locations

sys.path.insert(0, str(FIXTURES / "onnx"))
import generate as onnx_fixtures  # noqa: E402  (fixtures/onnx/generate.py)

# One worker runs the whole module, so its module-scoped fixture is built once.
pytestmark = pytest.mark.xdist_group(__name__)

TRAINING_KEYS = {"optimizer", "lr_scheduler", "scaler"}


def model_sd(seed, dtype=torch.float32, width=8):
    g = torch.Generator().manual_seed(seed)
    sd = OrderedDict()
    sd["conv.weight"] = torch.randn(width, 3, 3, 3, generator=g)
    sd["conv.bias"] = torch.randn(width, generator=g)
    sd["bn.weight"] = torch.rand(width, generator=g)
    sd["bn.running_mean"] = torch.randn(width, generator=g)
    sd["bn.num_batches_tracked"] = torch.tensor(seed)
    sd["fc.weight"] = torch.randn(10, width, generator=g)
    for k, v in sd.items():
        if v.is_floating_point():
            sd[k] = v.to(dtype)
    return sd


def write_checkpoint(path, seed, *, legacy, ddp, train, cuda, fp16):
    """Saves one generated checkpoint; returns the expected model state dict (stripped)."""
    sd = model_sd(seed, torch.float16 if fp16 else torch.float32)
    saved = OrderedDict((("module." + k) if ddp else k, v) for k, v in sd.items())
    obj = saved
    if train:
        obj = {"epoch": seed, "state_dict": saved, "arch": "tiny",
               "optimizer": {"state": {0: {"momentum_buffer": torch.ones(3)}},
                             "param_groups": [{"lr": 0.1, "params": [0]}]},
               "lr_scheduler": {"last_epoch": seed}}
    path.parent.mkdir(parents=True, exist_ok=True)
    with _devices.forced_location("cuda:0" if cuda else None):
        torch.save(obj, path, _use_new_zipfile_serialization=not legacy)
    return sd


def make_inputs(root, count, corrupt=True, width=8):
    """`count` valid mixed checkpoints under root/ckpts (nested folders), plus corrupt ones.
    Returns {relative path: expected state dict or None for corrupt}."""
    expected = {}
    for i in range(count):
        rel = f"ckpts/run{i % 4}/{'deep/' if i % 3 == 0 else ''}model{i:03d}.pth.tar"
        kind = dict(legacy=i % 2 == 1, ddp=i % 3 != 2, train=i % 4 < 2, cuda=i % 5 == 0,
                    fp16=i % 7 == 3)
        sd = write_checkpoint(root / rel, i, **kind)
        if width != 8:
            sd = None
        expected[rel] = (sd, kind)
    if corrupt:
        good = (root / next(iter(expected))).read_bytes()
        for j in range(3):
            rel = f"ckpts/bad/truncated{j}.pth.tar"
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(good[: len(good) * (j + 1) // 4])
            expected[rel] = (None, None)
        for j in range(2):
            rel = f"ckpts/bad/random{j}.pth.tar"
            (root / rel).write_bytes(os.urandom(2000 + j))
            expected[rel] = (None, None)
        rel = "ckpts/bad/empty.pth.tar"
        (root / rel).write_bytes(b"")
        expected[rel] = (None, None)
    return expected


PLAN = """
[[job]]
inputs = ["ckpts/**/*.pth.tar"]
output_dir = "out"
name = "{stem}-{sha8}"
steps = ["strip-module", { remap = "cpu" }, "drop-optimizer", { format = "zip" }, "to-safetensors"]

[[job]]
inputs = ["onnx"]
output_dir = "out/onnx"
name = "{stem}-{sha8}"
steps = ["strip-module", { remap = "cpu" }, "drop-optimizer",
         { to-onnx = { opset = 11, input-shape = [3, 40, 40] } }, "to-safetensors"]
"""


def batch(plan, *args, timeout=900):
    return subprocess.run([ckpt_bin(), "batch", str(plan), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def manifest_of(path):
    return json.loads(Path(path).read_text())


def sha256(path):
    import hashlib
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def no_leftovers(root):
    bad = [p for p in Path(root).rglob("*")
           if p.name.endswith(".partial") or p.name.startswith(".ckpt-staging-")]
    assert not bad, f"partial or temporary files left: {bad}"


def assert_same_sd(expected, actual, where, ordered=True):
    if ordered:
        assert list(actual) == list(expected), f"{where}: keys {list(actual)}"
    assert sorted(actual) == sorted(expected), f"{where}: keys {list(actual)}"
    for k, v in expected.items():
        assert actual[k].dtype == v.dtype and torch.equal(actual[k], v), f"{where}: {k}"


def verify_entry(root, entry, expected_sd, kind):
    """Every output of an ok entry: hash and size as recorded, loads in torch/safetensors."""
    assert entry["status"] == "ok", entry
    outputs = {o["kind"]: o for o in entry["outputs"]}
    for o in entry["outputs"]:
        p = root / o["path"]
        assert p.stat().st_size == o["size"] and sha256(p) == o["sha256"], o["path"]
    ckpt_path = root / outputs["checkpoint"]["path"]
    assert set(storage_locations(ckpt_path)) == {"cpu"}
    obj = torch.load(ckpt_path, weights_only=True)    # plain load: cpu tags, no unsafe globals
    sd = obj["state_dict"] if kind["train"] else obj
    if kind["train"]:
        assert not TRAINING_KEYS & set(obj), f"{entry['input']}: training state kept"
        assert obj["epoch"] == torch.load(root / entry["input"], map_location="cpu",
                                          weights_only=False)["epoch"]
    assert_same_sd(expected_sd, sd, entry["input"])
    assert_same_sd(expected_sd, load_file(str(root / outputs["safetensors"]["path"])),
                   entry["input"] + " (safetensors)", ordered=False)


@pytest.fixture(scope="module")
def big_batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("batch")
    expected = make_inputs(root, 52)
    (root / "onnx").mkdir()
    for name in ("resnet18_narrow.pth",):
        (root / "onnx" / name).write_bytes((FIXTURES / "onnx" / name).read_bytes())
    (root / "plan.toml").write_text(PLAN)
    started = time.monotonic()
    proc = batch(root / "plan.toml", "--jobs", "2")
    return root, expected, proc, time.monotonic() - started


def test_batch_of_mixed_checkpoints_verified_with_torch_and_safetensors(big_batch):
    root, expected, proc, seconds = big_batch
    assert len(expected) >= 50
    assert proc.returncode == 1, proc.stderr       # corrupt inputs make the exit non-zero
    manifest = manifest_of(root / "plan.manifest.json")
    entries = {e["input"]: e for e in manifest["entries"] if e["job"] == 0}
    assert sorted(entries) == sorted(expected)
    assert manifest["inputs_total"] == len(expected) + 1 and manifest["shard"] is None
    for rel, (sd, kind) in expected.items():
        e = entries[rel]
        assert e["sha256"] == sha256(root / rel) and e["size"] == (root / rel).stat().st_size
        assert e["tool_version"] and e["duration_ms"] >= 0 and len(e["steps"]) == 5
        if sd is None:
            assert e["status"] == "failed" and e["error"] and e["outputs"] == []
        else:
            verify_entry(root, e, sd, kind)
    no_leftovers(root)
    print(f"{len(expected)} inputs in {seconds:.1f} s")


def test_failures_are_listed_with_their_errors(big_batch):
    root, expected, proc, _ = big_batch
    corrupt = [rel for rel, (sd, _) in expected.items() if sd is None]
    for rel in corrupt:
        line = next((l for l in proc.stderr.splitlines() if l.strip().startswith(f"FAILED {rel}:")),
                    None)
        assert line and len(line.split(":", 1)[1].strip()) > 5, proc.stderr
    assert f"{len(corrupt)} failed" in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == \
        f"ckpt: error: {len(corrupt)} of {len(expected) + 1} inputs failed"


def test_onnx_step_runs_in_onnxruntime(big_batch):
    root, _, _, _ = big_batch
    manifest = manifest_of(root / "plan.manifest.json")
    (entry,) = [e for e in manifest["entries"] if e["job"] == 1]
    assert entry["status"] == "ok", entry
    outputs = {o["kind"]: root / o["path"] for o in entry["outputs"]}
    facts = json.loads((FIXTURES / "onnx" / "manifest.json").read_text())["resnet18_narrow"]
    session = ort.InferenceSession(str(outputs["onnx"]), providers=["CPUExecutionProvider"])
    for b in facts["batches"]:
        x = onnx_fixtures.probe_input(b, tuple(facts["input"]), facts["seed"]).numpy()
        want = np.fromfile(FIXTURES / "onnx" / f"resnet18_narrow.out.b{b}.f32", dtype="<f4")
        (got,) = session.run(None, {"input": x})
        assert np.abs(got.reshape(-1) - want).max() <= 1e-4 * max(1.0, np.abs(want).max())
    src = torch.load(root / entry["input"], map_location="cpu", weights_only=True)["state_dict"]
    st = load_file(str(outputs["safetensors"]))
    assert sorted(st) == sorted(k[len("module."):] for k in src)
    for k, v in src.items():
        assert torch.equal(st[k[len("module."):]], v)


def test_rerun_skips_what_is_done_and_retries_failures(big_batch):
    root, expected, _, _ = big_batch
    before = {p: p.stat().st_mtime_ns for p in (root / "out").rglob("*") if p.is_file()}
    proc = batch(root / "plan.toml", "--jobs", "2")
    assert proc.returncode == 1
    good = sum(1 for sd, _ in expected.values() if sd is not None) + 1
    assert f"processed 0, {good} up to date" in proc.stderr, proc.stderr
    after = {p: p.stat().st_mtime_ns for p in (root / "out").rglob("*") if p.is_file()}
    assert after == before, "a skipped input's outputs were rewritten"


def test_dry_run_lists_the_expanded_plan_and_writes_nothing(tmp_path):
    expected = make_inputs(tmp_path, 6, corrupt=False)
    (tmp_path / "plan.toml").write_text("[[job]]" + PLAN.split("[[job]]")[1])
    before = sorted(tmp_path.rglob("*"))
    proc = batch(tmp_path / "plan.toml", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert sorted(tmp_path.rglob("*")) == before
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == len(expected)
    for rel in expected:
        stem = Path(rel).name[: -len(".pth.tar")]
        sha8 = sha256(tmp_path / rel)[:8]
        line = next(l for l in lines if f" {rel} -> " in l)
        assert f"out/{stem}-{sha8}.pth" in line and f"out/{stem}-{sha8}.safetensors" in line


def test_kill_9_then_rerun_ends_complete_and_correct(tmp_path):
    expected = make_inputs(tmp_path, 60, corrupt=False, width=40000)  # ~6 MiB files
    (tmp_path / "plan.toml").write_text("[[job]]" + PLAN.split("[[job]]")[1])
    manifest = tmp_path / "plan.manifest.json"
    out = tmp_path / "out"
    proc = subprocess.Popen([ckpt_bin(), "batch", str(tmp_path / "plan.toml"), "--jobs", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and len(list(out.glob("*.safetensors"))) >= 5:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the batch finished before it could be killed; make it bigger"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    published = len(list(out.glob("*.safetensors")))
    assert 5 <= published < len(expected), published
    done_at_kill = sum(e["status"] == "ok" for e in manifest_of(manifest)["entries"])
    assert done_at_kill <= published
    # The killed process left its staging folder behind; the rerun must clear it.
    assert list(out.glob(".ckpt-staging-*"))
    # Whatever is in place is whole: every visible output loads.
    for p in (tmp_path / "out").glob("*.safetensors"):
        load_file(str(p))
    proc = batch(tmp_path / "plan.toml", "--jobs", "1")
    assert proc.returncode == 0, proc.stderr
    assert f"processed {len(expected) - done_at_kill}, {done_at_kill} up to date" in proc.stderr, \
        proc.stderr
    final = manifest_of(manifest)
    assert len(final["entries"]) == len(expected)
    for e in final["entries"]:
        rel = e["input"]
        sd_src = torch.load(tmp_path / rel, map_location="cpu", weights_only=False)
        sd_src = sd_src["state_dict"] if isinstance(sd_src, dict) and "state_dict" in sd_src else sd_src
        want = OrderedDict((k[len("module."):] if k.startswith("module.") else k, v)
                           for k, v in sd_src.items())
        verify_entry(tmp_path, e, want, expected[rel][1])
    no_leftovers(tmp_path)
    names = {p.name for p in (tmp_path / "out").iterdir()}
    recorded = {Path(o["path"]).name for e in final["entries"] for o in e["outputs"]}
    assert names == recorded, names ^ recorded


def test_three_shards_cover_each_input_once_and_merge(tmp_path):
    expected = make_inputs(tmp_path, 30)
    (tmp_path / "plan.toml").write_text("[[job]]" + PLAN.split("[[job]]")[1])
    shards = []
    for i in range(3):
        proc = batch(tmp_path / "plan.toml", "--shard", f"{i}/3", "--jobs", "2")
        assert proc.returncode in (0, 1), proc.stderr
        path = tmp_path / f"plan.manifest.{i}-of-3.json"
        m = manifest_of(path)
        assert m["shard"] == f"{i}/3" and m["inputs_total"] == len(expected)
        shards.append((path, {e["input"] for e in m["entries"]}))
    union = set().union(*(s for _, s in shards))
    assert union == set(expected)
    assert sum(len(s) for _, s in shards) == len(expected), "an input ran in two shards"
    assert all(s for _, s in shards), "a shard got no input"
    out = tmp_path / "merged.json"
    proc = run_ckpt("manifest", "merge", *(p for p, _ in shards), "-o", out)
    ok(proc)
    assert "warning" not in proc.stderr
    merged = manifest_of(out)
    assert {e["input"] for e in merged["entries"]} == set(expected)
    assert merged["merged_shards"] == ["0/3", "1/3", "2/3"] and merged["shard"] is None
    for e in merged["entries"]:
        sd, kind = expected[e["input"]]
        if sd is None:
            assert e["status"] == "failed"
        else:
            verify_entry(tmp_path, e, sd, kind)
    proc = run_ckpt("manifest", "merge", shards[0][0], shards[1][0], "-o", tmp_path / "part.json")
    ok(proc)
    assert "no manifest for shard 2/3" in proc.stderr


@pytest.mark.parametrize("plan,message", [
    ('[[job]]\ninputs = ["x/*.pth"]\noutput_dir = "o"\nsteps = ["format"]', "matches no file"),
    ('[[job]]\ninputs = ["a.pth"]\noutput_dir = "o"\nsteps = ["sparkle"]', "unknown step"),
    ('[[job]]\ninputs = ["a.pth"]\noutput_dir = "o"\nname = "{stem}-{md5}"\nsteps = ["format"]',
     "unknown placeholder"),
])
def test_bad_plans_fail_before_touching_anything(tmp_path, plan, message):
    torch.save(model_sd(0), tmp_path / "a.pth")
    (tmp_path / "plan.toml").write_text(plan)
    proc = batch(tmp_path / "plan.toml")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "plan.toml" in lines[0] and message in lines[0], proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.pth", "plan.toml"]


def test_dangerous_inputs_are_refused_and_unknown_ones_need_the_flag(tmp_path):
    """A pickle naming os.system is never rewritten; one with only unknown globals (a whole
    pickled nn.Module) only with --allow-unknown-globals. Nothing is written for a refusal."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "evil.pth").write_bytes((FIXTURES / "hostile" / "reduce_os_system.pth").read_bytes())
    (inputs / "module.pth").write_bytes((FIXTURES / "unsafe_module.pth").read_bytes())
    plan = tmp_path / "plan.toml"
    plan.write_text('[[job]]\ninputs = ["in/*.pth"]\noutput_dir = "out"\nname = "{stem}"\n'
                    'steps = ["strip-module", { remap = "cpu" }]\n')
    proc = run_ckpt("batch", plan, "--jobs", "1")
    assert proc.returncode != 0
    manifest = json.loads((tmp_path / "plan.manifest.json").read_text())
    by_input = {Path(e["input"]).name: e for e in manifest["entries"]}
    assert by_input["evil.pth"]["status"] == "failed"
    assert "dangerous" in by_input["evil.pth"]["error"]
    assert by_input["module.pth"]["status"] == "failed"
    assert not (tmp_path / "out" / "evil.pth").exists()

    proc = run_ckpt("batch", plan, "--jobs", "1", "--allow-unknown-globals")
    assert proc.returncode != 0, "evil.pth still fails"
    assert (tmp_path / "out" / "module.pth").exists()
    assert not (tmp_path / "out" / "evil.pth").exists()
    torch.load(tmp_path / "out" / "module.pth", weights_only=False)

    out = tmp_path / "evil.safetensors"
    proc = run_ckpt("to-safetensors", inputs / "evil.pth", "-o", out)
    assert proc.returncode == 1 and not out.exists()


class _TinyNet(torch.nn.Module):
    """A user's own model (no torchvision architecture): conv, BN, ReLU, pooling, linear."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        return self.fc(x.mean(dim=(2, 3)))


def test_a_plan_exports_torch_export_and_torchscript_archives(tmp_path):
    """A job whose only step is `to-onnx` takes `.pt2` and TorchScript archives too (a folder
    walk finds `.pt2`), each exported through its program with a dynamic batch and matching
    torch; a step that works on checkpoints fails on an archive naming the step and the
    input's kind, and writes nothing for it."""
    torch.manual_seed(0)
    model = _TinyNet().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-1, 1)
        model.bn.running_var.uniform_(0.5, 2)
    example = torch.randn(2, 3, 12, 12)
    models = tmp_path / "models"
    models.mkdir()
    program = torch.export.export(model, (example,),
                                  dynamic_shapes=({0: torch.export.Dim("batch")},))
    torch.export.save(program, models / "tiny.pt2")
    torch.jit.trace(model, example).save(models / "tiny_trace.pt")
    plan = tmp_path / "plan.toml"
    plan.write_text('[[job]]\ninputs = ["models"]\noutput_dir = "out"\nname = "{stem}"\n'
                    'steps = [{ to-onnx = { opset = 11 } }]\n')
    ok(batch(plan, "--jobs", "1"))
    manifest = manifest_of(tmp_path / "plan.manifest.json")
    assert sorted(Path(e["input"]).name for e in manifest["entries"]) == ["tiny.pt2",
                                                                           "tiny_trace.pt"]
    x = torch.randn(3, 3, 12, 12)
    with torch.no_grad():
        want = model(x).numpy()
    for name in ("tiny", "tiny_trace"):
        session = ort.InferenceSession(str(tmp_path / "out" / f"{name}.onnx"))
        (got,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=name)
        assert session.get_inputs()[0].shape[0] == "batch", name

    refusing = tmp_path / "refusing.toml"
    refusing.write_text('[[job]]\ninputs = ["models/tiny.pt2", "models/tiny_trace.pt"]\n'
                        'output_dir = "out2"\nname = "{stem}"\n'
                        'steps = ["strip-module", { to-onnx = { opset = 11 } }]\n')
    proc = batch(refusing, "--jobs", "1")
    assert proc.returncode == 1, proc.stderr
    entries = manifest_of(tmp_path / "refusing.manifest.json")["entries"]
    assert [e["status"] for e in entries] == ["failed", "failed"], entries
    kinds = {Path(e["input"]).name: e["error"] for e in entries}
    assert "strip-module" in kinds["tiny.pt2"] and "torch.export archive" in kinds["tiny.pt2"]
    assert "TorchScript archive" in kinds["tiny_trace.pt"]
    assert not (tmp_path / "out2").exists() or not any((tmp_path / "out2").rglob("*.onnx"))

    arch = tmp_path / "arch.toml"
    arch.write_text('[[job]]\ninputs = ["models/tiny.pt2"]\noutput_dir = "out3"\n'
                    'name = "{stem}"\nsteps = [{ to-onnx = { arch = "resnet18" } }]\n')
    proc = batch(arch, "--jobs", "1")
    assert proc.returncode == 1
    (entry,) = manifest_of(tmp_path / "arch.manifest.json")["entries"]
    assert "`arch` does not apply" in entry["error"], entry
