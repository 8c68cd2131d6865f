"""`ckpt to-onnx` on division as torch rounds it, compared bit for bit with torch eager:
`fmod` (C's), `remainder` (Python's `%`), `div` with `rounding_mode='trunc'` and `'floor'`
(Python's `//`), of two activations, an activation and a number, and an activation and a
constant tensor. The inputs hold the values where a graph that divides first and rounds
after would differ from torch: `3 // 0.1` (torch floors the exact quotient, 29, where the
rounded `3 / 0.1` is 30), `fmod(3, 0.1)`, signed zeros, infinities, NaN and zero divisors.
Each file is also judged as the OpInfo sweep judges one (full ONNX check, opset 11,
ATC-clean, onnxruntime at two batch sizes). Then `xor` and `and`/`or` with a bool number,
of masks, and the refusal of bitwise operators on integers. Last, the same divisions of
integer tensors (int64 and int32), whose results torch keeps integers: negative operands
of either sign, by an activation, a number and a constant tensor, bit for bit.
"""
import numpy as np
import onnxruntime as ort
import pytest
import torch

import _opinfo
from _util import ok, run_ckpt

EDGES = (3.0, 0.1, -3.0, 0.1, 3.0, -0.1, -0.0, 2.0, 0.0, -2.0, 1.0, 0.0, -1.0, 0.0,
         float("inf"), 2.0, 5.0, float("inf"), -5.0, float("-inf"), float("nan"), 1.0,
         1.0, float("nan"), -4.0, 2.0, 4.0, -2.0, 7.5, -2.0, -7.5, 2.0, 1e-30, 3e38)


def pairs(batch, seed):
    """[batch, 2, 17]: channel 0 dividends, channel 1 divisors (the edges first)."""
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(batch, 2, 17, generator=gen) * 4).round(decimals=1)
    edges = torch.tensor(EDGES).view(-1, 2).T  # [2, 17]
    x[0] = edges
    return x


class Divide(torch.nn.Module):
    def __init__(self, fn, constant=None):
        super().__init__()
        self.fn = fn
        if constant is not None:
            self.register_buffer("divisor", constant)
        else:
            self.divisor = None

    def forward(self, x):
        a = x[:, 0]
        b = x[:, 1] if self.divisor is None else self.divisor
        return self.fn(a, b)


OPS = {
    "fmod": torch.fmod,
    "remainder": torch.remainder,
    "div trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "div floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "floor_divide operator": lambda a, b: a // b,
    "percent operator": lambda a, b: a % b,
}
DIVISORS = {
    "activation": None,
    "number 0.1": 0.1,
    "number -2.5": -2.5,
    "constant tensor": torch.tensor([0.1, -0.1, 2.0, -2.0, 0.0, float("inf"), -0.0, 3.0,
                                     1.0, -1.0, 7.0, 0.5, -0.5, 1e-30, 3e38, -7.0, 4.0]),
}


def exported(module, x, tmp_path):
    """`module` exported with a dynamic batch at example `x`: the archive and the ONNX path."""
    program = torch.export.export(module, (x,),
                                  dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    archive, out = tmp_path / "op.pt2", tmp_path / "op.onnx"
    torch.export.save(program, str(archive))
    return archive, out


def exactly(ref, got):
    """None when `got` is `ref` bit for bit (NaN as NaN, zeros with their sign)."""
    ref = ref.numpy()
    if ref.shape != got.shape or ref.dtype != got.dtype:
        return f"{got.shape} {got.dtype}, torch {ref.shape} {ref.dtype}"
    both_nan = np.isnan(ref) & np.isnan(got)
    same = (ref == got) & (np.signbit(ref) == np.signbit(got))
    bad = ~(same | both_nan)
    if bad.any():
        i = np.argwhere(bad)[0]
        return f"at {tuple(i)}: {got[tuple(i)]!r}, torch {ref[tuple(i)]!r}"
    return None


@pytest.mark.parametrize("divisor", DIVISORS)
@pytest.mark.parametrize("op", OPS)
def test_division_rounds_bit_for_bit_as_torch(op, divisor, tmp_path):
    fn, b = OPS[op], DIVISORS[divisor]
    if isinstance(b, float):
        module = Divide(lambda x, _: fn(x, b))
    else:
        module = Divide(fn, b)
    module.eval()
    xs = [pairs(2, 1), pairs(5, 2)]
    archive, out = exported(module, xs[0], tmp_path)
    ok(run_ckpt("to-onnx", archive, "-o", out))
    why = _opinfo.check_file(out, module, xs)
    assert why is None, why
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    for x in xs:
        (got,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
        why = exactly(module(x), got)
        assert why is None, f"{op} by {divisor}: {why}"


MASKS = {
    "xor of masks": lambda x: (x > 0) ^ (x < 1),
    "logical_xor of floats": lambda x: torch.logical_xor(x, x.flip(-1)),
    "and with True": lambda x: (x > 0) & True,
    "or with False": lambda x: (x > 0) | False,
    "xor with True": lambda x: (x > 0) ^ True,
}


@pytest.mark.parametrize("name", MASKS)
def test_xor_and_bool_numbers_of_masks_match_torch(name, tmp_path):
    module = _opinfo.OpModule(MASKS[name]).eval()
    gen = torch.Generator().manual_seed(3)
    xs = [torch.randn(b, 3, 5, generator=gen) for b in (2, 5)]
    xs[0].view(-1)[:3] = torch.tensor([0.0, float("nan"), -0.0])
    archive, out = exported(module, xs[0], tmp_path)
    ok(run_ckpt("to-onnx", archive, "-o", out))
    why = _opinfo.check_file(out, module, xs)
    assert why is None, why


def test_a_bitwise_operator_on_integers_is_refused_naming_opset_11(tmp_path):
    module = _opinfo.OpModule(lambda x: x.long() ^ 3).eval()
    x = torch.randn(2, 4) * 5
    archive, out = exported(module, x, tmp_path)
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "opset 11 has none" in proc.stderr, proc.stderr
    assert not out.exists()


class HashedIds(torch.nn.Module):
    """CANINE's hash embedding step: `((ids + 1) * prime) % buckets` on int64 ids."""

    def __init__(self, buckets):
        super().__init__()
        self.buckets = buckets

    def forward(self, x):
        return ((x + 1) * 31) % self.buckets


@pytest.mark.parametrize("buckets", [64, -7])
def test_integer_remainder_by_a_number_matches_python(buckets, tmp_path):
    # Negative ids and a negative divisor: Python's sign rule, which ATC's truncating Mod
    # does not give by itself.
    x = torch.arange(-40, 40, dtype=torch.int64).reshape(4, 20)
    archive, out = exported(HashedIds(buckets), x, tmp_path)
    ok(run_ckpt("to-onnx", archive, "-o", out))
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    for batch in (x, x[:1] * 977 - 5):
        got = session.run(None, {session.get_inputs()[0].name: batch.numpy()})[0]
        assert exactly(HashedIds(buckets)(batch), got) is None


INTEGER_DIVISORS = {
    "activation": None,
    "number 7": 7,
    "number -3": -3,
    "constant tensor": torch.tensor([7, -7, 1, -1, 2, -2, 3, -3, 64, -64, 5, 11, -13, 1000,
                                     -1000, 4, 9]),
}


def integer_pairs(batch, seed, dtype):
    """[batch, 2, 17] integers: channel 0 dividends of both signs, channel 1 nonzero
    divisors (torch raises on an integer zero divisor)."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(-1000, 1000, (batch, 2, 17), generator=gen)
    x[:, 1] = torch.where(x[:, 1] == 0, 1, x[:, 1] % 23)
    x[:, 1] = torch.where(x[:, 1] == 0, -5, x[:, 1])
    return x.to(dtype)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
@pytest.mark.parametrize("divisor", INTEGER_DIVISORS)
@pytest.mark.parametrize("op", OPS)
def test_integer_division_matches_torch_bit_for_bit(op, divisor, dtype, tmp_path):
    fn, b = OPS[op], INTEGER_DIVISORS[divisor]
    if isinstance(b, int):
        module = Divide(lambda x, _: fn(x, b))
    else:
        module = Divide(fn, None if b is None else b.to(dtype))
    module.eval()
    xs = [integer_pairs(2, 1, dtype), integer_pairs(5, 2, dtype)]
    archive, out = exported(module, xs[0], tmp_path)
    ok(run_ckpt("to-onnx", archive, "-o", out))
    why = _opinfo.check_file(out, module, xs)
    assert why is None, why
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    for x in xs:
        got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
        assert exactly(module(x), got) is None


def test_integer_division_by_a_constant_zero_is_refused(tmp_path):
    module = Divide(lambda a, b: a // b, torch.tensor([3, 0, 2])).eval()
    x = torch.randint(-9, 9, (2, 2, 3))
    archive, out = exported(module, x, tmp_path)
    proc = run_ckpt("to-onnx", archive, "-o", out)
    assert proc.returncode == 1, proc.stderr
    assert "torch raises on zero" in proc.stderr, proc.stderr
    assert not out.exists()
