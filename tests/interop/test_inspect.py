"""ckpt inspect --json against fixtures/expected.json."""
import json

import pytest

from _util import EXPECTED, fixture_path, ok, run_ckpt

ALL = list(EXPECTED)


def inspect(name):
    proc = ok(run_ckpt("inspect", fixture_path(name), "--json"))
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as e:
        pytest.fail(f"inspect --json did not print one JSON object: {e}\n{proc.stdout[:2000]}")


@pytest.mark.parametrize("name", ALL)
def test_inspect_core_facts(name):
    got, e = inspect(name), EXPECTED[name]
    for field in ("format", "tensors", "storages", "bytes", "locations"):
        assert field in got, f"missing field {field}"
    assert {f: got[f] for f in ("format", "tensors", "storages", "bytes", "locations")} == \
        {f: e[f] for f in ("format", "tensors", "storages", "bytes", "locations")}


@pytest.mark.parametrize("name", ALL)
def test_inspect_dtypes(name):
    assert inspect(name)["dtypes"] == EXPECTED[name]["dtypes"]


@pytest.mark.parametrize("name", [n for n in ALL if EXPECTED[n]["unsafe_globals"] is not None])
def test_inspect_unsafe_globals(name):
    assert sorted(inspect(name)["unsafe_globals"]) == EXPECTED[name]["unsafe_globals"]


@pytest.mark.parametrize("name", ALL)
def test_inspect_amp(name):
    got, want = inspect(name)["amp"], EXPECTED[name]["amp"]
    if want is None:
        assert got is None
    else:
        assert got is not None and got["kind"] == want["kind"], got
        assert want["path"] in str(got["path"]), got


@pytest.mark.parametrize("name", ALL)
def test_inspect_prefixes(name):
    got = inspect(name)["prefixes"]
    want = EXPECTED[name]["wrapper_prefix"]
    assert isinstance(got, list)
    if not want:
        assert got == []
        return
    parts = [p + "." for p in want.rstrip(".").split(".")]
    # accepted spellings: per component (["module.", "_orig_mod."]), distinct components,
    # or the whole stack (["module._orig_mod."])
    assert got in (parts, sorted(set(parts)), list(dict.fromkeys(parts)), [want]) or \
        "".join(got) == want, got


@pytest.mark.parametrize("name", [n for n in ALL if EXPECTED[n]["top_keys"]])
def test_inspect_keys_mention_top_level(name):
    keys = json.dumps(inspect(name)["keys"])
    for k in EXPECTED[name]["top_keys"]:
        assert json.dumps(k) in keys or k in keys, f"top-level key {k!r} not in keys"
