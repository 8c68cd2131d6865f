"""`F.grid_sample` (aten `grid_sampler_2d`, traces' `torch.grid_sampler`) with torch as the
oracle: every interpolation (bilinear, nearest, bicubic) × padding (zeros, border,
reflection) × align_corners, through `torch.export` (dynamic batch) and `ckpt to-onnx`,
judged by the coverage sweep's checks (full onnx.checker, onnxruntime against torch eager
at batch 1 and 3, ATC-clean opset-11 ops). Each model samples its image twice: at a random
grid scaled past [-1, 1] (taps outside the image on every side), and at a fixed lattice of
coordinates from -1.5 to 1.5 whose unnormalized values include whole pixels, pixel edges and
exact halves (nearest rounds those half to even), the same for every sample.
"""
import pytest
import torch
import torch.nn.functional as F

import _coverage as cov
from _util import ckpt_bin

MODES = ["bilinear", "nearest", "bicubic"]
PADDINGS = ["zeros", "border", "reflection"]
IMAGE = (3, 5, 6)
GRID = (4, 7, 2)


class Sample(torch.nn.Module):
    def __init__(self, mode, padding, align):
        super().__init__()
        self.how = dict(mode=mode, padding_mode=padding, align_corners=align)
        ys, xs = torch.meshgrid(torch.linspace(-1.5, 1.5, 13), torch.linspace(-1.5, 1.5, 13),
                                indexing="ij")
        self.register_buffer("lattice", torch.stack([xs, ys], dim=-1)[None])

    def forward(self, x, g):
        lattice = self.lattice.expand(x.shape[0], -1, -1, -1)
        return (F.grid_sample(x, g * 1.6, **self.how), F.grid_sample(x, lattice, **self.how))


def inputs():
    return [cov.Input("x", IMAGE), cov.Input("g", GRID)]


def check(route, model, tmp_path):
    path = cov.convert(route, model, inputs(), tmp_path, "grid", ckpt_bin())
    verdict = cov.judge(path, model, inputs())
    assert verdict.category == "ok", verdict.detail
    assert not verdict.vacuous
    assert verdict.ops.get("GatherElements", 0) > 0, verdict.ops


@pytest.mark.parametrize("align", [False, True], ids=["half_pixel", "corners"])
@pytest.mark.parametrize("padding", PADDINGS)
@pytest.mark.parametrize("mode", MODES)
def test_every_mode_padding_and_alignment_matches_torch(mode, padding, align, tmp_path):
    check("pt2", Sample(mode, padding, align), tmp_path)


@pytest.mark.parametrize("mode,padding,align", [("bilinear", "zeros", False),
                                                ("bicubic", "reflection", True),
                                                ("nearest", "border", False)])
def test_a_trace_records_grid_sampler_and_converts(mode, padding, align, tmp_path):
    check("trace", Sample(mode, padding, align), tmp_path)


def test_a_volume_is_refused_naming_the_node(tmp_path):
    class Volume(torch.nn.Module):
        def forward(self, x, g):
            return F.grid_sample(x, g, align_corners=False)

    model = Volume()
    specs = [cov.Input("x", (2, 3, 4, 5)), cov.Input("g", (2, 3, 4, 3))]
    with pytest.raises(cov.ConversionError, match="grid_sampler"):
        cov.convert("pt2", model, specs, tmp_path, "volume", ckpt_bin())
