"""Self-checks of the fixture set (no ckpt binary needed)."""
import os

import torch

from _util import EXPECTED, FIXTURES, _ptfacts


def test_torch_version_matches_fixtures():
    want = (FIXTURES / "TORCH_VERSION").read_text().strip()
    assert torch.__version__.split("+")[0] == want


def test_every_fixture_present_and_small():
    total = 0
    for name, e in EXPECTED.items():
        p = FIXTURES / name
        assert p.is_file(), f"missing fixture {name}"
        total += os.path.getsize(p)
    assert total < 3 * 2 ** 20, f"fixtures total {total} bytes (limit 3 MiB)"


def test_file_level_facts_match_expected():
    for name, e in EXPECTED.items():
        p = FIXTURES / name
        assert _ptfacts.detect_format(p) == e["format"], name
        recs = _ptfacts.scan_storages(p)
        assert len(recs) == e["storages"], name
        assert sum(r["nbytes"] for r in recs) == e["bytes"], name
        assert _ptfacts.storage_locations(p) == e["storage_locations"], name
