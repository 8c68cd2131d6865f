"""`ckpt to-onnx` on the embedding and masked-index ops written as the ops torch computes
them by: `embedding` of a table the program computes (its rows picked), `embedding_renorm_`
(`F.embedding` with `max_norm`: rows named by the ids rescaled in place, which the lookup
then reads through the table's first name), `embedding_bag` of 1-D ids cut by constant
offsets (sum, mean, max; a padding id, negative ones counting from the table's end; per-sample
weights; `include_last_offset`; an empty bag; 2-D ids), and torch's `_unsafe_masked_index` and its
accumulating put (indices clamped as ATen's kernel clamps them, negative ones counting from
the end). The table or tensor is the program's input, the other tensors its constants, so
in a static program (`--batch static`) each converts and matches torch eager in
onnxruntime; under a dynamic batch each picks rows of the batch by their place, and the
refusal says it mixes samples. Last, an in-place op on a detached alias read later through
a view that sees only part of the change is refused, naming both values.
"""
import pytest
import torch

import _opinfo
from _util import ok, run_ckpt

F = torch.nn.functional
IDS = torch.tensor([[0, 2, 5], [1, 1, 3]])
FLAT = torch.tensor([0, 2, 5, 1, 1, 3, 4])
OFFSETS = torch.tensor([0, 3, 3, 5])
ROWS = torch.tensor([[0], [3], [4], [-2], [1], [9], [-5]])
MASK = torch.tensor([[True, False, True, True, False, True, True]] * 7)

# name: (fn of the input and the constants, constants, input sizes)
CASES = {
    "embedding of a computed table": (
        lambda x, c: F.embedding(c["ids"], x * 2), {"ids": IDS}, (6, 4)),
    "embedding with max_norm": (
        lambda x, c: F.embedding(c["ids"], x, max_norm=1.0), {"ids": IDS}, (6, 4)),
    "embedding with max_norm of norm 1": (
        lambda x, c: F.embedding(c["ids"], x, max_norm=0.5, norm_type=1.0), {"ids": IDS},
        (6, 4)),
    "embedding_bag sum with a padding id": (
        lambda x, c: F.embedding_bag(c["ids"], x, c["offsets"], mode="sum", padding_idx=1),
        {"ids": FLAT, "offsets": OFFSETS}, (6, 4)),
    "embedding_bag mean with a padding id from the end": (
        lambda x, c: F.embedding_bag(c["ids"], x, c["offsets"], mode="mean", padding_idx=-2),
        {"ids": FLAT, "offsets": OFFSETS}, (6, 4)),
    "embedding_bag max": (
        lambda x, c: F.embedding_bag(c["ids"], x, c["offsets"], mode="max"),
        {"ids": FLAT, "offsets": OFFSETS}, (6, 4)),
    "embedding_bag per-sample weights": (
        lambda x, c: F.embedding_bag(c["ids"], x, c["offsets"], mode="sum",
                                     per_sample_weights=c["weights"]),
        {"ids": FLAT, "offsets": OFFSETS, "weights": torch.rand(7)}, (6, 4)),
    "embedding_bag include_last_offset": (
        lambda x, c: F.embedding_bag(c["ids"], x, c["offsets"], mode="mean",
                                     include_last_offset=True),
        {"ids": FLAT, "offsets": torch.tensor([0, 3, 3, 5, 7])}, (6, 4)),
    "embedding_bag of 2-D ids": (
        lambda x, c: F.embedding_bag(c["ids"], x, mode="max", padding_idx=1),
        {"ids": IDS}, (6, 4)),
    "masked index": (
        lambda x, c: torch.ops.aten._unsafe_masked_index(x, c["mask"], [c["rows"], c["cols"]],
                                                         -8.5),
        {"mask": MASK, "rows": ROWS, "cols": ROWS.T.clone()}, (5, 5)),
    "masked index of one dimension": (
        lambda x, c: torch.ops.aten._unsafe_masked_index(x, c["mask"], [None, c["cols"]], 2.0),
        {"mask": MASK[:5], "cols": ROWS[:, 0].clone()}, (5, 5)),
    "masked index put accumulate": (
        lambda x, c: torch.ops.aten._unsafe_masked_index_put_accumulate(
            x, c["mask"], [c["rows"], c["cols"]], c["values"]),
        {"mask": MASK, "rows": ROWS, "cols": ROWS.T.clone(), "values": torch.randn(7, 7)},
        (5, 5)),
}


class WithConstants(torch.nn.Module):
    def __init__(self, fn, constants):
        super().__init__()
        self.fn = fn
        self.names = list(constants)
        for name, value in constants.items():
            self.register_buffer(name, value.clone())

    def forward(self, x):
        return self.fn(x, {name: getattr(self, name) for name in self.names})


def exported(module, x, path, dynamic):
    shapes = {"x": {0: torch.export.Dim("batch")}} if dynamic else None
    torch.export.save(torch.export.export(module, (x,), dynamic_shapes=shapes), str(path))


@pytest.mark.parametrize("name", CASES)
def test_static_program_converts_and_matches_torch(name, tmp_path):
    fn, constants, sizes = CASES[name]
    module = WithConstants(fn, constants).eval()
    x = torch.randn(*sizes, generator=torch.Generator().manual_seed(1)) * 2
    archive, out = tmp_path / "m.pt2", tmp_path / "m.onnx"
    exported(module, x, archive, dynamic=False)
    ok(run_ckpt("to-onnx", archive, "-o", out, "--batch", "static"))
    why = _opinfo.check_file(out, module, [x])
    assert why is None, why


# The cases torch.export keeps dynamic (a padding id is checked against the table's rows,
# the batch; a mask of the result's sizes pins it).
DYNAMIC = ["embedding of a computed table", "embedding with max_norm", "embedding_bag max",
           "embedding_bag per-sample weights", "embedding_bag include_last_offset",
           "masked index", "masked index put accumulate"]


@pytest.mark.parametrize("name", DYNAMIC)
def test_dynamic_batch_refusal_says_it_mixes_samples(name, tmp_path):
    fn, constants, sizes = CASES[name]
    module = WithConstants(fn, constants).eval()
    x = torch.randn(*sizes)
    archive, out = tmp_path / "m.pt2", tmp_path / "m.onnx"
    exported(module, x, archive, dynamic=True)
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "which mixes samples" in proc.stderr, proc.stderr
    assert not out.exists()


class PartialViewReadLater(torch.nn.Module):
    def forward(self, x):
        x = x * 1
        part = x[:, :2]
        with torch.no_grad():
            x.detach().relu_()
        return part * 2


def test_an_in_place_change_a_partial_view_reads_later_is_refused(tmp_path):
    archive, out = tmp_path / "m.pt2", tmp_path / "m.onnx"
    exported(PartialViewReadLater().eval(), torch.randn(3, 4), archive, dynamic=False)
    proc = run_ckpt("to-onnx", archive, "-o", out, "--batch", "static")
    assert proc.returncode == 1, proc.stderr
    assert "in part" in proc.stderr and "relu_" in proc.stderr, proc.stderr
    assert not out.exists()
