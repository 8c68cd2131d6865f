"""strip-module / remap --to cpu on every zip and legacy fixture, checked with torch."""
import pytest
import torch

from _util import (EXPECTED, allow_unknown, assert_equivalent, assert_same_container, expected_strip,
                   fake_npu, file_globals, fixture_path, has_non_cpu_tags, load_input, names,
                   needs_fake_npu, needs_unsafe_load, ok, run_ckpt, storage_locations,
                   without_fake_npu, _ptfacts)

REWRITABLE = names("zip", "legacy")


def load_output(out, name, remapped):
    """Load ckpt's output as plainly as the content allows: default torch.load(OUT) unless the
    content itself needs weights_only=False; never an `encoding`; map_location only for a
    non-remapped output of a non-cpu input; torch_npu stubs only for non-remapped style B."""
    kw = {}
    if needs_unsafe_load(name):
        kw["weights_only"] = False
    if not remapped and has_non_cpu_tags(name):
        kw["map_location"] = "cpu"
    if not remapped and needs_fake_npu(name):
        kw["weights_only"] = False
        with fake_npu():
            return torch.load(out, **kw)
    with without_fake_npu():
        return torch.load(out, **kw)


def check_storages_kept(out, name):
    recs = _ptfacts.scan_storages(out)
    assert len(recs) == EXPECTED[name]["storages"], "number of storages changed"
    assert sum(r["nbytes"] for r in recs) == EXPECTED[name]["bytes"], "storage bytes changed"


@pytest.mark.parametrize("name", REWRITABLE)
def test_strip_module(name, tmp_path):
    inp, out = fixture_path(name), tmp_path / "out.pth"
    ok(run_ckpt("strip-module", inp, "-o", out, *allow_unknown(name)))
    assert_same_container(inp, out)
    assert storage_locations(out) == EXPECTED[name]["storage_locations"], "tags changed"
    check_storages_kept(out, name)
    act = load_output(out, name, remapped=False)
    assert_equivalent(expected_strip(load_input(name)), act)


@pytest.mark.parametrize("name", REWRITABLE)
def test_remap_to_cpu(name, tmp_path):
    inp, out = fixture_path(name), tmp_path / "out.pth"
    ok(run_ckpt("remap", inp, "-o", out, "--to", "cpu", *allow_unknown(name)))
    assert_same_container(inp, out)
    assert set(storage_locations(out)) == {"cpu"}
    check_storages_kept(out, name)
    leftover = [g for g in file_globals(out) if g.startswith("torch_npu")]
    assert not leftover, f"torch_npu globals left after remap: {leftover}"
    act = load_output(out, name, remapped=True)
    assert_equivalent(load_input(name), act)


@pytest.mark.parametrize("name", REWRITABLE)
def test_strip_then_remap(name, tmp_path):
    inp, mid, out = fixture_path(name), tmp_path / "mid.pth", tmp_path / "out.pth"
    ok(run_ckpt("strip-module", inp, "-o", mid, *allow_unknown(name)))
    ok(run_ckpt("remap", mid, "-o", out, "--to", "cpu", *allow_unknown(name)))
    assert_same_container(inp, out)
    act = load_output(out, name, remapped=True)
    assert_equivalent(expected_strip(load_input(name)), act)


@pytest.mark.parametrize("name", [n for n in REWRITABLE if EXPECTED[n]["wrapper_prefix"]])
def test_strip_removes_prefix(name, tmp_path):
    """Belt and braces: no state-dict key of the output starts with a wrapper prefix."""
    out = tmp_path / "out.pth"
    ok(run_ckpt("strip-module", fixture_path(name), "-o", out, *allow_unknown(name)))
    obj = load_output(out, name, remapped=False)
    sds = []

    def walk(o):
        if isinstance(o, dict):
            if any(isinstance(v, torch.Tensor) for v in o.values()):
                sds.append(o)
            for v in o.values():
                walk(v)
    walk(obj)
    assert sds
    for sd in sds:
        bad = [k for k in sd if isinstance(k, str) and
               k.startswith(("module.", "_orig_mod."))]
        assert not bad, bad
