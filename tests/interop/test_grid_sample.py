"""`F.grid_sample` (aten `grid_sampler_2d`, traces' `torch.grid_sampler`) with torch as the
oracle: every interpolation (bilinear, nearest, bicubic) × padding (zeros, border,
reflection) × align_corners, through `torch.export` (dynamic batch) and `ckpt to-onnx`,
judged by the coverage sweep's checks (full onnx.checker, onnxruntime against torch eager
at batch 1 and 3, ATC-clean opset-11 ops). Each model samples its image twice: at a random
grid scaled past [-1, 1] (taps outside the image on every side), and at a fixed lattice of
coordinates from -1.5 to 1.5 whose unnormalized values include whole pixels, pixel edges and
exact halves (nearest rounds those half to even), the same for every sample.

A grid held as a buffer with one grid per sample (`grid_sampler_2d`, and `grid_sampler_3d`
of a volume) converts in a static program, its taps computed at export; a volume's grid expanded over
a dynamic batch is refused by name.
"""
import pytest
import torch
import torch.nn.functional as F

import _coverage as cov
import _opinfo
from _util import ckpt_bin, ok, run_ckpt

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


class AtBuffer(torch.nn.Module):
    """`F.grid_sample` at a grid held as a buffer, one grid per sample, scaled past [-1, 1]
    (taps outside on every side) with a NaN and an infinity among its coordinates."""

    def __init__(self, grid_shape, mode, padding, align):
        super().__init__()
        gen = torch.Generator().manual_seed(21)
        grid = torch.rand(grid_shape, generator=gen) * 3.2 - 1.6
        grid.view(-1)[:2] = torch.tensor([float("nan"), float("inf")])
        self.register_buffer("grid", grid)
        self.how = dict(mode=mode, padding_mode=padding, align_corners=align)

    def forward(self, x):
        return F.grid_sample(x, self.grid, **self.how)


# torch samples a volume bilinearly or nearest only.
CONSTANT_GRIDS = [(volume, mode, padding, align) for volume in (False, True)
                  for mode in MODES for padding in PADDINGS for align in (False, True)
                  if not (volume and mode == "bicubic")]


@pytest.mark.parametrize("volume,mode,padding,align", CONSTANT_GRIDS)
def test_a_constant_grid_matches_torch_in_a_static_program(volume, mode, padding, align,
                                                           tmp_path):
    shape, grid = ((2, 3, 4, 5, 6), (2, 3, 4, 2, 3)) if volume else ((2, 3, 5, 6), (2, 4, 7, 2))
    module = AtBuffer(grid, mode, padding, align).eval()
    x = torch.randn(shape, generator=torch.Generator().manual_seed(22))
    archive, out = tmp_path / "grid.pt2", tmp_path / "grid.onnx"
    torch.export.save(torch.export.export(module, (x,)), str(archive))
    ok(run_ckpt("to-onnx", archive, "-o", out, "--batch", "static"))
    why = _opinfo.check_file(out, module, [x])
    assert why is None, why


def test_a_volume_at_a_constant_grid_under_a_dynamic_batch_is_refused_by_name(tmp_path):
    class Expanded(AtBuffer):
        def forward(self, x):
            grid = self.grid.expand(x.shape[0], -1, -1, -1, -1)
            return F.grid_sample(x, grid, **self.how)

    module = Expanded((1, 3, 4, 2, 3), "bilinear", "zeros", False).eval()
    x = torch.randn(2, 3, 4, 5, 6)
    program = torch.export.export(module, (x,),
                                  dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    archive, out = tmp_path / "grid.pt2", tmp_path / "grid.onnx"
    torch.export.save(program, str(archive))
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "grid_sampler" in proc.stderr and "--batch static" in proc.stderr, proc.stderr
