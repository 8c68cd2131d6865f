"""Storage records copied by a rewrite sit at their input offset modulo 64 KiB where the
padding fits (4 KiB otherwise, and for mid-sized ones), so the kernel copies whole pages and XFS/btrfs can clone blocks; the
output must still load in torch, plainly and with `torch.load(mmap=True)`, including when
it replaces an existing file."""
import zipfile

import torch

from _util import _devices, ok, run_ckpt, storage_locations


def data_offsets(path):
    """{record name: absolute offset of its data} for a stored zip, from the local headers."""
    offsets = {}
    with zipfile.ZipFile(path) as z, open(path, "rb") as f:
        for info in z.infolist():
            f.seek(info.header_offset + 26)
            name_len, extra_len = (int.from_bytes(f.read(2), "little") for _ in range(2))
            offsets[info.filename.split("/", 1)[1]] = (info.header_offset + 30 + name_len
                                                      + extra_len)
    return offsets


def make_input(path):
    torch.manual_seed(0)
    big = torch.randn(3 << 20)  # 12 MiB: placed modulo 64 KiB
    sd = {
        "module.big": big,
        "module.big_view": big[1000:5000],  # shares big's storage
        "module.mid": torch.randn(100_000),  # 400 KB: placed modulo 4 KiB
        "module.small": torch.arange(7, dtype=torch.int64),  # laid out as torch does
        "module.half": torch.randn(5 << 20).half(),  # 10 MiB
    }
    with _devices.forced_location("cuda:0"):
        torch.save({"state_dict": sd, "epoch": 3}, path)
    return sd


def placed_pairs(inp, out):
    """(size, input data offset, output data offset) of every storage record; the storages
    of `make_input` all differ in size, which pairs them whatever keys the output uses."""
    def by_size(path):
        offsets = data_offsets(path)
        return {i.file_size: offsets[i.filename.split("/", 1)[1]]
                for i in zipfile.ZipFile(path).infolist()
                if i.filename.split("/", 1)[1].startswith("data/")
                and not i.filename.endswith("serialization_id")}
    before, after = by_size(inp), by_size(out)
    assert before.keys() == after.keys()
    return [(size, before[size], after[size]) for size in sorted(before)]


def check_output(inp, out, expected):
    assert storage_locations(out) == {"cpu": 4}
    assert all(start % 64 == 0 for start in data_offsets(out).values())
    pairs = placed_pairs(inp, out)
    # Every record of 256 KiB or more shares its offset modulo 4 KiB with the input; a large
    # one modulo 64 KiB unless that padding would not fit the extra field's u16 length.
    assert all(now % 4096 == was % 4096 for size, was, now in pairs if size >= 256 << 10)
    assert any(now % 65536 == was % 65536 for size, was, now in pairs if size >= 4 << 20)
    for kwargs in ({}, {"mmap": True}):
        got = torch.load(out, **kwargs)["state_dict"]
        assert got.keys() == expected.keys()
        for k, v in expected.items():
            assert got[k].dtype == v.dtype and torch.equal(got[k], v), k
        assert got["module.big_view"].untyped_storage().data_ptr() == \
            got["module.big"].untyped_storage().data_ptr()


def test_remap_places_records_and_loads_with_mmap(tmp_path):
    inp, out = tmp_path / "in.pth", tmp_path / "out.pth"
    expected = make_input(inp)
    ok(run_ckpt("remap", inp, "-o", out, "--to", "cpu"))
    check_output(inp, out, expected)
    # Over an existing output (the re-run of a pipeline): replaced atomically, same result.
    ok(run_ckpt("remap", inp, "-o", out, "--to", "cpu"))
    check_output(inp, out, expected)


def test_placed_output_rewritten_again_stays_placed(tmp_path):
    inp, mid, out = tmp_path / "in.pth", tmp_path / "mid.pth", tmp_path / "out.pth"
    expected = make_input(inp)
    ok(run_ckpt("remap", inp, "-o", mid, "--to", "cpu"))
    ok(run_ckpt("strip-module", mid, "-o", out))
    got = torch.load(out, mmap=True)["state_dict"]
    assert {k.removeprefix("module.") for k in expected} == got.keys()
    for k, v in expected.items():
        assert torch.equal(got[k.removeprefix("module.")], v), k
    pairs = placed_pairs(mid, out)
    assert all(now % 4096 == was % 4096 for size, was, now in pairs if size >= 256 << 10)
