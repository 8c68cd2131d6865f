"""Sharded DCP checkpoints written by real FSDP2 on 2 and 3 gloo CPU ranks (rows, uneven rows,
columns, a replicated buffer, AdamW state, plain values): `ckpt consolidate` must equal
torch's `dcp_to_torch_save` tensor for tensor, load with `weights_only=True` and
`safetensors.torch.load_file`; a truncated folder is refused with nothing written. The
reverse: `ckpt shard` of the consolidated checkpoint to the other rank count loads with
`dcp.load` into FSDP2 (model and AdamW state) and trains on to torch's own losses."""
import json
import os
import pickle
import shutil
import importlib.util
import subprocess
import struct
import sys
import zipfile
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint import FileSystemReader
from torch.distributed.checkpoint.format_utils import dcp_to_torch_save, torch_save_to_dcp

from _util import FIXTURES, ok, run_ckpt

# One worker runs the whole module, so its module-scoped fixture is built once.
pytestmark = pytest.mark.xdist_group(__name__)

GENERATE = FIXTURES / "dcp" / "generate.py"


def run_ranks(args, timeout):
    """Runs a multi-process gloo script. torch's gloo teardown sometimes aborts a rank
    (SIGABRT, "terminate called without an active exception") on a loaded two-core machine;
    such a death by a signal (of the script, or of a rank, which `mp.spawn` reports as
    `ProcessExitedException: … terminated with signal`) is retried once, saying so, and a
    second one fails the test. An ordinary failure (non-zero exit) is never retried."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for attempt in (1, 2):
        proc = subprocess.run([sys.executable, *map(str, args)], env=env, timeout=timeout,
                              capture_output=True, text=True)
        rank_killed = ("ProcessExitedException" in proc.stderr
                       and "terminated with signal" in proc.stderr)
        if (proc.returncode >= 0 and not rank_killed) or attempt == 2:
            break
        print(f"RETRY: {args[0].name} died by signal {-proc.returncode}; running it again\n"
              f"{proc.stderr[-2000:]}")
    assert proc.returncode == 0, proc.stderr[-4000:]


@pytest.fixture(scope="module", params=[2, 3], ids=["2ranks", "3ranks"])
def folder(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"dcp{request.param}") / "ckpt"
    run_ranks([GENERATE, request.param, out], timeout=120)
    ref = out.parent / "reference.pth"
    dcp_to_torch_save(out, ref)
    return out, torch.load(ref, weights_only=False)


def same(ref, got, path="root"):
    assert type(ref) is type(got), (path, type(ref), type(got))
    if isinstance(ref, dict):
        assert list(ref) == list(got), (path, list(ref), list(got))
        for k in ref:
            same(ref[k], got[k], f"{path}.{k}")
    elif isinstance(ref, (list, tuple)):
        assert len(ref) == len(got), path
        for i, (a, b) in enumerate(zip(ref, got)):
            same(a, b, f"{path}[{i}]")
    elif isinstance(ref, torch.Tensor):
        assert ref.dtype == got.dtype and ref.shape == got.shape, path
        assert torch.equal(ref, got), path
    else:
        assert ref == got, (path, ref, got)


def test_inspect_reports_ranks_chunks_and_no_problems(folder):
    out, ref = folder
    report = json.loads(ok(run_ckpt("inspect", out, "--json")).stdout)
    assert report["format"] == "dcp" and report["problems"] == []
    assert report["scan"] == "clean"
    entries = {e["key"]: e for e in report["entries"]}
    columns = entries["model.b.weight"]["chunks"]
    assert len(columns) == len(report["ranks"]) and all(c["offsets"][0] == 0 for c in columns)
    assert entries["model.steps"]["kind"] == "tensor" and len(entries["model.steps"]["chunks"]) == 1
    assert entries["optim.param_groups.0.lr"]["kind"] == "value"


def test_consolidated_pth_equals_dcp_to_torch_save(folder, tmp_path):
    out, ref = folder
    pth = tmp_path / "full.pth"
    ok(run_ckpt("consolidate", out, "-o", pth))
    same(ref, torch.load(pth, weights_only=True))


def test_model_only_and_extract(folder, tmp_path):
    out, ref = folder
    model_only = tmp_path / "model_only.pth"
    ok(run_ckpt("consolidate", out, "-o", model_only, "--model-only"))
    expected = {k: v for k, v in ref.items() if k != "optim"}
    same(expected, torch.load(model_only, weights_only=True))

    st = tmp_path / "model.safetensors"
    ok(run_ckpt("consolidate", out, "-o", st, "--extract", "model"))
    loaded = load_file(st)
    assert sorted(loaded) == sorted(ref["model"])
    for k, v in ref["model"].items():
        assert torch.equal(loaded[k], v), k


def test_truncated_folder_is_refused(folder, tmp_path):
    out, _ = folder
    broken = tmp_path / "broken"
    shutil.copytree(out, broken)
    shard = broken / "__1_0.distcp"
    shard.write_bytes(shard.read_bytes()[:-100])
    target = tmp_path / "never.pth"
    proc = run_ckpt("consolidate", broken, "-o", target)
    assert proc.returncode == 1, proc.stderr
    assert "__1_0.distcp" in proc.stderr and "run past the end" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not target.exists()


def test_batch_consolidates_then_casts(folder, tmp_path):
    """A batch job over the DCP folder: consolidate the model, cast it to bfloat16, write a
    checkpoint and safetensors; torch loads both and they equal the reference, cast."""
    out, ref = folder
    runs = tmp_path / "runs"
    shutil.copytree(out, runs / "step_3")
    plan = tmp_path / "plan.toml"
    plan.write_text('[[job]]\ninputs = ["runs"]\noutput_dir = "out"\n'
                    'steps = [{ consolidate = "model" }, { dtype = "bfloat16" }, '
                    '"to-safetensors", "format"]\n')
    ok(run_ckpt("batch", plan, "--jobs", "1", "--quiet"))
    manifest = json.loads((tmp_path / "plan.manifest.json").read_text())
    (entry,) = manifest["entries"]
    assert entry["status"] == "ok" and entry["input"] == "runs/step_3", entry
    expected = {k: v.to(torch.bfloat16) if v.is_floating_point() else v
                for k, v in ref["model"].items()}
    same(expected, torch.load(tmp_path / "out" / "step_3.pth", weights_only=True))
    loaded = load_file(tmp_path / "out" / "step_3.safetensors")
    assert sorted(loaded) == sorted(expected)
    for k, v in expected.items():
        assert torch.equal(loaded[k], v), k


RESUME = Path(__file__).with_name("_dcp_resume.py")


def resume(world, folder, out):
    run_ranks([RESUME, world, folder, out], timeout=180)
    return json.loads(Path(out).read_text()), torch.load(str(out) + ".pt", weights_only=True)


def chunk_boxes(folder, fqn):
    md = FileSystemReader(folder).read_metadata().state_dict_metadata[fqn]
    return sorted((tuple(c.offsets), tuple(c.sizes)) for c in md.chunks)


def test_resharded_by_ckpt_resumes_like_torch(folder, tmp_path):
    """FSDP2 + AdamW saved by `dcp.save` on 2 or 3 ranks, consolidated by ckpt, resharded by
    `ckpt shard` for the other rank count, loaded with `dcp.load` into FSDP2 there (model and
    optimizer) and trained on: the losses equal those of torch's own path, `dcp.load` of the
    original folder on the new world size."""
    out, ref = folder
    saved_world = len(json.loads(ok(run_ckpt("inspect", out, "--json")).stdout)["ranks"])
    world = 5 - saved_world  # 2 -> 3, 3 -> 2
    full = tmp_path / "full.pth"
    ok(run_ckpt("consolidate", out, "-o", full))
    resharded = tmp_path / f"ckpt{world}"
    summary = json.loads(ok(run_ckpt("shard", full, "-o", resharded, "--ranks", str(world),
                                      "--json")).stdout)
    assert summary["ranks"] == world
    assert sorted(p.name for p in resharded.iterdir()) == \
        [".metadata"] + [f"__{r}_0.distcp" for r in range(world)]

    ours, our_model = resume(world, resharded, tmp_path / "ours.json")
    theirs, their_model = resume(world, out, tmp_path / "theirs.json")
    assert ours["extra"] == {"epoch": 3, "tag": "run"}
    same(their_model, our_model)
    same(ref["model"], our_model)
    assert len(set(ours["losses"])) == 3, ours  # training moves on
    assert ours["losses"] == theirs["losses"], (ours, theirs)


def test_shard_lays_rows_out_as_fsdp2_does(folder, tmp_path):
    """Row-sharded parameters and their AdamW state get the chunks FSDP2 itself saves at the
    same world size (torch.chunk along dim 0, uneven last ranks), 0-d state one chunk. (A
    state dict does not say which tensors are buffers, which FSDP2 leaves whole: ckpt splits
    them by rows too, and `dcp.load` reads either layout.)"""
    out, _ = folder
    world = len(json.loads(ok(run_ckpt("inspect", out, "--json")).stdout)["ranks"])
    full = tmp_path / "full.pth"
    ok(run_ckpt("consolidate", out, "-o", full))
    again = tmp_path / "again"
    ok(run_ckpt("shard", full, "-o", again, "--ranks", str(world)))
    for fqn in ["model.a.weight", "model.c.weight", "model.c.bias",
                "optim.state.a.weight.exp_avg", "optim.state.c.bias.exp_avg_sq",
                "optim.state.a.weight.step"]:
        assert chunk_boxes(again, fqn) == chunk_boxes(out, fqn), fqn


@pytest.mark.parametrize("ranks", [1, 4])
def test_shard_loads_into_a_plain_model(tmp_path, ranks):
    """A single-rank and a four-rank folder of one ordinary state dict: `dcp_to_torch_save`
    gives the state dict back, and `dcp.load` without a process group fills a plain model."""
    # By path, under its own name: other test modules import another fixtures' `generate`.
    spec = importlib.util.spec_from_file_location("dcp_generate", GENERATE)
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    Model = generate.Model

    torch.manual_seed(7)
    model = Model()
    src = tmp_path / "model.pth"
    torch.save({"model": model.state_dict(), "step": 5}, src)
    folder = tmp_path / f"dcp{ranks}"
    ok(run_ckpt("shard", src, "-o", folder, "--ranks", str(ranks)))
    ref = torch.load(src, weights_only=True)
    ref["model"] = dict(ref["model"])  # DCP keeps the entries, not the OrderedDict
    back = tmp_path / "back.pth"
    dcp_to_torch_save(folder, back)
    same(ref, torch.load(back, weights_only=False))

    fresh = Model()
    state = {"model": fresh.state_dict(), "step": 0}
    dcp.load(state, checkpoint_id=folder)
    fresh.load_state_dict(state["model"])
    assert state["step"] == 5
    for k, v in model.state_dict().items():
        assert torch.equal(fresh.state_dict()[k], v), k

    # torch's own single-file-to-DCP conversion loads to the same values.
    theirs = tmp_path / "theirs"
    torch_save_to_dcp(src, theirs)
    other = {"model": Model().state_dict(), "step": 0}
    dcp.load(other, checkpoint_id=theirs)
    same(state, other)


def test_shard_refuses_bad_input_with_one_line(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a checkpoint")
    target = tmp_path / "never"
    proc = run_ckpt("shard", text, "-o", target, "--ranks", "2")
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert not target.exists()


def test_dtypes_without_a_storage_class_shard_and_consolidate(tmp_path):
    """uint16/uint32, float8 and complex32 chunks are saved as torch.save saves them
    (untyped storage, `_rebuild_tensor_v3`): `dcp_to_torch_save` and `ckpt consolidate`
    both give the bits back."""
    src = tmp_path / "odd.pth"
    sd = {"u16": torch.arange(10).to(torch.uint16).reshape(5, 2),
          "f8": torch.randn(7, 3).to(torch.float8_e4m3fn),
          "c32": torch.randn(5, dtype=torch.complex64).to(torch.complex32),
          "u32": torch.arange(3).to(torch.uint32)}
    torch.save(sd, src)
    folder = tmp_path / "odd"
    ok(run_ckpt("shard", src, "-o", folder, "--ranks", "3"))
    theirs, ours = tmp_path / "theirs.pth", tmp_path / "ours.pth"
    dcp_to_torch_save(folder, theirs)
    ok(run_ckpt("consolidate", folder, "-o", ours))
    for got in (torch.load(theirs, weights_only=True), torch.load(ours, weights_only=True)):
        assert list(got) == list(sd)
        for k, v in sd.items():
            assert got[k].dtype == v.dtype and got[k].shape == v.shape, k
            assert torch.equal(got[k].view(torch.uint8), v.view(torch.uint8)), k


class _System:
    """Pickles as `os.system("true")` (`posix.system` on Linux): a dangerous global; pickling
    never calls it."""

    def __reduce__(self):
        return (os.system, ("true",))


def test_scan_reads_metadata_and_every_shard_file_by_file(folder, tmp_path):
    """`ckpt scan DIR` reports `.metadata` and each `.distcp` file torch wrote, clean (exit 0),
    with one pickle per stored item; a `.metadata` naming a dangerous global exits 1."""
    out, _ = folder
    report = json.loads(ok(run_ckpt("scan", "--json", out)).stdout)
    names = [Path(f["path"]).name for f in report["files"]]
    assert names == [".metadata"] + sorted(p.name for p in out.glob("*.distcp"))
    assert all(f["status"] == "clean" and f["pickles"] for f in report["files"]), report
    items = len(FileSystemReader(out).read_metadata().storage_data)
    assert sum(len(f["pickles"]) for f in report["files"][1:]) == items

    bad = tmp_path / "bad"
    shutil.copytree(out, bad)
    (bad / ".metadata").write_bytes(pickle.dumps(_System(), protocol=2))
    proc = run_ckpt("scan", "--json", bad)
    assert proc.returncode == 1, proc.stderr
    meta = json.loads(proc.stdout)["files"][0]
    assert meta["status"] == "dangerous"
    assert [g["path"] for p in meta["pickles"] for g in p["globals"]
            if g["class"] == "dangerous"] == ["posix.system"]  # os.system, as pickle spells it


RUNS = Path(__file__).parent / "_dcp_runs.py"


@pytest.mark.parametrize("crc", ["crc", "no-crc"])
def test_pth_from_long_row_and_column_runs(tmp_path, crc):
    """Chunks whose runs are copied file to file (rows of 1 MiB and more, and a middle-axis
    split whose 1 MiB runs interleave the ranks' files) beside buffered short runs (columns):
    the consolidated `.pth` equals `dcp_to_torch_save`, every record's CRC-32 is right (taken
    from the chunks' zips, or computed when torch.save skipped it), storage data start on a
    multiple of 64, and it loads with `mmap=True`."""
    out = tmp_path / "runs"
    run_ranks([RUNS, out] + (["--no-crc"] if crc == "no-crc" else []), timeout=120)
    ref = tmp_path / "reference.pth"
    dcp_to_torch_save(out, ref)
    pth = tmp_path / "full.pth"
    ok(run_ckpt("consolidate", out, "-o", pth))
    expected = torch.load(ref, weights_only=False)
    same(expected, torch.load(pth, weights_only=True))
    same(expected, torch.load(pth, weights_only=True, mmap=True))
    with zipfile.ZipFile(pth) as z:
        assert z.testzip() is None
        raw = pth.read_bytes()
        for info in z.infolist():
            if "/data/" in info.filename:
                h = info.header_offset
                name_len, extra_len = struct.unpack("<HH", raw[h + 26:h + 30])
                assert (h + 30 + name_len + extra_len) % 64 == 0, info.filename
