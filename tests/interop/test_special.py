"""torch's special functions (`digamma`, `lgamma`, `polygamma`, `mvlgamma`, `erfinv`,
`special_ndtri`, the modified Bessel functions `i0`, `i1`, `k0`, `k1` and their scaled forms,
`special_spherical_bessel_j0`, the Bessel functions `j0`, `j1`, `y0`, `y1`, `special_airy_ai`,
`special_erfcx`, `special_log_ndtr`) through `.pt2` ->
`ckpt to-onnx`, over each function's whole domain: a dense grid, points beside every pole,
large and tiny magnitudes, ±0, ±inf and NaN (`mvlgamma` too: torch 2.13 computes it
below `(p - 1)/2`, where it once raised). Each module is exported with a dynamic batch;
the file must pass `onnx.checker.check_model(full_check=True)`, import opset 11 only, be
ATC-clean, and give torch eager's float32 values in onnxruntime element by element: NaN
and ±inf where torch has them, and elsewhere |diff| <= 1e-4 * max(1, |torch|) (the OpInfo
harness asks that of a whole tensor, against its largest value). Polygamma orders above
the highest exported one are refused.
"""
import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from _opinfo import check_file, export
from _util import run_ckpt

TOLERANCE = 1e-4
COLUMNS = 8


def grid(low, high, count):
    return np.linspace(low, high, count).tolist()


def near(points, gaps=(1e-1, 1e-3, 1e-5)):
    return [p + s * g for p in points for g in gaps for s in (-1, 1)]


SPECIALS = [0.0, -0.0, math.inf, -math.inf, math.nan]
LARGE = [s * m for m in (1e3, 1e5, 1e10, 1e20, 1e30, 3e38) for s in (-1, 1)]
TINY = [s * m for m in (1e-10, 1e-30, 1e-40) for s in (-1, 1)]
# The real line with the gamma family's poles (0 and the negative integers).
REAL_LINE = (grid(-30, 30, 6001) + near(range(-12, 1)) + [k + 0.5 for k in range(-12, 12)]
             + [float(k) for k in range(-12, 13)] + grid(-1000.5, -999.5, 101)
             + LARGE + TINY + SPECIALS)
UNIT = grid(-1, 1, 4001) + near([-1.0, 1.0]) + [1 - 2 ** -24, -1 + 2 ** -24] + [1.5, -3.0] + TINY + SPECIALS
PROBABILITY = (grid(0, 1, 4001) + [1e-38, 1e-30, 1e-20, 1e-14, 1e-10, 1e-6, 1 - 1e-6, 1 - 2 ** -24]
               + near([0.0, 1.0]) + [2.0, -1.0] + SPECIALS)
BESSEL = grid(-100, 100, 8001) + near([-8.0, 8.0]) + [88.0, 89.0, 90.0, 95.0, -89.0] + LARGE + TINY + SPECIALS
# The Bessel functions of the first and second kind change form at 5 (J0 also below 1e-5),
# those of the second kind (K) at 2; their zeros near 2.405, 3.832, 0.894 and 2.197.
CYLINDER = (BESSEL + grid(-6, 6, 2401) + near([-5.0, 5.0, 2.0, 1e-5, 2.404825557695773,
                                               3.8317059702075125, 0.8935769662791675,
                                               2.197141326031017]) + [1e3 + 0.5, 12345.678])
# The Airy function changes form at -2.09, 2.09, 8.3203353 and 103.892.
AIRY = (grid(-200, 200, 8001) + grid(-3, 9, 2401) + near([-2.09, 2.09, 8.3203353, 103.892])
        + [-1e3, -1e4, -1e5] + LARGE + TINY + SPECIALS)
# erfcx changes form at 50 and 5e7 (and -6.1, -26.7 below 0); log_ndtr at -1.
ERFCX = (grid(-30, 60, 9001) + grid(-1, 1, 2001) + near([-26.7, -6.1, 0.0, 50.0, 5e7])
         + LARGE + TINY + SPECIALS)


class Special(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


CASES = {
    "digamma": (torch.digamma, REAL_LINE),
    "lgamma": (torch.lgamma, REAL_LINE),
    **{f"polygamma_{n}": ((lambda n: lambda x: torch.polygamma(n, x))(n), REAL_LINE)
       for n in range(7)},
    "special_polygamma_3": (lambda x: torch.special.polygamma(3, x), REAL_LINE),
    **{f"mvlgamma_{p}": ((lambda p: lambda x: torch.mvlgamma(x, p))(p), REAL_LINE)
       for p in (1, 2, 3, 5)},
    "multigammaln_3": (lambda x: torch.special.multigammaln(x, 3), REAL_LINE),
    "gammaln": (torch.special.gammaln, REAL_LINE),
    "psi": (torch.special.psi, REAL_LINE),
    "erfinv": (torch.erfinv, UNIT),
    "ndtri": (torch.special.ndtri, PROBABILITY),
    "i0": (torch.i0, BESSEL),
    "i0e": (torch.special.i0e, BESSEL),
    "i1": (torch.special.i1, BESSEL),
    "i1e": (torch.special.i1e, BESSEL),
    "modified_bessel_i0": (torch.special.modified_bessel_i0, BESSEL),
    "modified_bessel_i1": (torch.special.modified_bessel_i1, BESSEL),
    "spherical_bessel_j0": (torch.special.spherical_bessel_j0, BESSEL + grid(-0.6, 0.6, 1201)),
    "bessel_j0": (torch.special.bessel_j0, CYLINDER),
    "bessel_j1": (torch.special.bessel_j1, CYLINDER),
    "bessel_y0": (torch.special.bessel_y0, CYLINDER),
    "bessel_y1": (torch.special.bessel_y1, CYLINDER),
    "modified_bessel_k0": (torch.special.modified_bessel_k0, CYLINDER),
    "modified_bessel_k1": (torch.special.modified_bessel_k1, CYLINDER),
    "scaled_modified_bessel_k0": (torch.special.scaled_modified_bessel_k0, CYLINDER),
    "scaled_modified_bessel_k1": (torch.special.scaled_modified_bessel_k1, CYLINDER),
    "airy_ai": (torch.special.airy_ai, AIRY),
    "erfcx": (torch.special.erfcx, ERFCX),
    "log_ndtr": (torch.special.log_ndtr, ERFCX + grid(-60, -20, 401)),
}


def as_rows(values):
    x = torch.tensor(values, dtype=torch.float32)
    pad = (-len(x)) % COLUMNS
    x = torch.cat([x, x[:pad]])
    return x.reshape(-1, COLUMNS)


def convert(tmp_path, name, fn, x):
    archive, out = tmp_path / f"{name}.pt2", tmp_path / f"{name}.onnx"
    assert export(Special(fn).eval(), x, archive), f"{name}: the batch did not stay dynamic"
    proc = run_ckpt("to-onnx", str(archive), "-o", str(out))
    return proc, out


def elementwise(ref, got):
    """The inputs' positions where onnxruntime's `got` is not torch's `ref`."""
    ref, got = ref.astype(np.float64), got.astype(np.float64)
    nan = np.isnan(ref) != np.isnan(got)
    both = ~np.isnan(ref) & ~np.isnan(got)
    inf = both & (np.isinf(ref) | np.isinf(got)) & (ref != got)
    finite = both & np.isfinite(ref) & np.isfinite(got)
    far = np.zeros_like(nan)
    far[finite] = np.abs(ref[finite] - got[finite]) > TOLERANCE * np.maximum(1, np.abs(ref[finite]))
    return nan | inf | far


@pytest.mark.parametrize("name", sorted(CASES))
def test_special_function_matches_torch_over_its_domain(tmp_path, name):
    fn, values = CASES[name]
    x = as_rows(values)
    proc, out = convert(tmp_path, name, fn, x)
    assert proc.returncode == 0, proc.stderr
    why = check_file(out, fn, [x[:5]])  # checker, opset 11, ATC-clean, another batch size
    assert why is None, why
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
    ref = fn(x).numpy()
    assert got.dtype == ref.dtype and got.shape == ref.shape
    bad = elementwise(ref, got)
    if bad.any():
        rows = [f"x={x.numpy()[i]!r}: torch {ref[i]!r}, onnx {got[i]!r}"
                for i in zip(*np.nonzero(bad))][:10]
        pytest.fail(f"{name}: {bad.sum()} of {bad.size} values differ:\n" + "\n".join(rows))


def test_polygamma_beyond_the_exported_orders_is_refused(tmp_path):
    x = as_rows(grid(1, 5, 16))
    proc, out = convert(tmp_path, "polygamma_7", lambda x: torch.polygamma(7, x), x)
    assert proc.returncode == 1 and not out.exists()
    assert "polygamma of order 7 is not exported" in proc.stderr, proc.stderr
