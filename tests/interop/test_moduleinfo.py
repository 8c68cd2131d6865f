"""torch's nn module database (`module_db`, the ModuleInfo suite) through `.pt2` ->
`ckpt to-onnx`: a fast subset of what scripts/opinfo-sweep runs over the whole database
(docs/opinfo.md), judged the same way (`_moduleinfo.py`, `_opinfo.py`).

A few modules, each with the sample of the database it must convert: unbatched inputs
(a convolution of `[C, L]` in a static program, average pooling with the batch along the
channels), instance norm by running statistics, a GRU, losses of constant targets; and a
handful of modules whose every sample must give no wrong file.
"""
from pathlib import Path

import pytest

import _moduleinfo
from _util import ckpt_bin

# Module and the index of a sample that must convert.
MUST_CONVERT = {
    # Unbatched inputs: a static `[C, L]` convolution read as one sample; pooling with the
    # dynamic batch along the channels of a `[C, L]` input.
    "nn.Conv1d": 2, "nn.ConvTranspose2d": 1, "nn.AvgPool1d": 0, "nn.LPPool2d": 1,
    # Running statistics of InstanceNorm (track_running_stats=True in eval mode).
    "nn.InstanceNorm2d": 0,
    "nn.GRU": 4, "nn.GroupNorm": 7, "nn.RMSNorm": 3, "nn.PReLU": 4,
    "nn.CircularPad2d": 0, "nn.LocalResponseNorm": 1,
    # Losses of a constant target (ported rules, then the reduction in a static program).
    "nn.BCEWithLogitsLoss": 3, "nn.MultiLabelSoftMarginLoss": 2,
    # Cells and bilinear written as torch's own products and gates.
    "nn.RNNCell": 2, "nn.GRUCell": 1, "nn.LSTMCell": 0, "nn.Bilinear": 0,
    # Losses torch keeps whole (class picks computed at export), in static programs.
    "nn.CrossEntropyLoss": 13, "nn.NLLLoss": 10, "nn.MultiMarginLoss": 0,
    "nn.MultiLabelMarginLoss": 1, "nn.CosineEmbeddingLoss": 0,
    # Fractional max pooling by the module's given samples, batched and unbatched.
    "nn.FractionalMaxPool2d": 3, "nn.FractionalMaxPool3d": 4,
}
# Modules whose every sample (as the sweep picks them) must give no wrong file.
NO_WRONG = ("nn.Linear", "nn.MultiheadAttention", "nn.TransformerEncoderLayer",
            "nn.Bilinear", "nn.LayerNorm", "nn.BatchNorm2d")

_DB = None


def module_named(name):
    global _DB
    if _DB is None:
        _DB = {info.name: info for info in _moduleinfo.load_module_db()}
    return _DB[name]


@pytest.mark.parametrize("name", MUST_CONVERT)
def test_module_samples_convert_exactly(name):
    results, _ = _moduleinfo.run_module(Path(ckpt_bin()), module_named(name),
                                        only={MUST_CONVERT[name]})
    assert [r.verdict for r in results] == ["ok"], [
        f"#{r.sample} {r.shape} ({r.args}): {r.verdict} {r.detail}" for r in results]


@pytest.mark.parametrize("name", NO_WRONG)
def test_no_module_sample_gives_a_wrong_file(name):
    results, _ = _moduleinfo.run_module(Path(ckpt_bin()), module_named(name), most=4)
    assert results, f"{name}: no sample ran"
    wrong = [f"#{r.sample} {r.shape} ({r.args}): {r.detail}"
             for r in results if r.verdict == "wrong"]
    assert not wrong, wrong
