"""Every aten op evaluated on constants computes what torch computes.

For every row of the aten schema table (read from `docs/onnx-ops.md`, which prints all of
them), the cases below call the overload on buffers generated here (float32, float16, int64
and bool where torch accepts the op for that dtype, with -inf, inf, nan and signed zeros
among the float values, and broadcasting operands). Each case is one output of a model
`x + op(buffers).float()`; the model is exported with torch.export and converted by
`ckpt to-onnx`, which must fold the op (every node then reads the input: the op was
evaluated at export, not lowered), and onnxruntime's output at `x = 0` is compared with
torch's result: integers and bools exactly, float32 to 1e-5 relative, float16 (evaluated
in float32 by ckpt, each result rounded to float16) to 2e-2, as torch accumulates in float16. Cases are exported together in a few models for
speed; a model ckpt refuses is retried case by case so the failure names the op.

Rows the document marks as not evaluated, the symbolic-size rows that no program applies
to a constant (its sizes are numbers there), and `tensor_split` at a tensor's positions
(whose pieces' sizes torch.export cannot know) have no case; every other row must.
"""
import math
import re
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

from _util import ROOT, ok, run_ckpt

DOC = ROOT / "docs" / "onnx-ops.md"
ROW = re.compile(r"^\| `(?P<target>[A-Za-z_0-9]+\.[A-Za-z_0-9]+)\(")
# A program holds a constant's size as a number: these rows only ever see the batch.
SIZES_ONLY = {"sym_size.int", "sym_numel.default", "_operator.mul"}
# Pieces cut at a tensor's positions have sizes torch.export cannot know, so no program adds
# them to anything; the evaluator's reading of the tensor is unit-tested instead.
DATA_SIZED = {"tensor_split.tensor_indices_or_sections"}

F32, F16, I64, BOOL = torch.float32, torch.float16, torch.int64, torch.bool
ALL = (F32, F16, I64, BOOL)
NUMERIC = (F32, F16, I64)
FLOATS = (F32, F16)
EDGES = [float("-inf"), float("inf"), float("nan"), 0.0, -0.0]


def schema_rows():
    rows, skipped = [], []
    section = ""
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            section = line
        m = ROW.match(line)
        if m:
            (skipped if "Not evaluated" in section else rows).append(m["target"])
    return sorted(set(rows)), set(skipped)


class T:
    """A buffer to generate: its shape, and how (`edges`: the float edge values first;
    `low`/`high`: the range of integers; `positive`: floats above 0; `nonzero`)."""

    def __init__(self, *shape, edges=True, low=-5, high=6, positive=False, nonzero=False,
                 dtype=None, values=None):
        self.shape, self.edges, self.low, self.high = shape, edges, low, high
        self.positive, self.nonzero, self.dtype, self.values = positive, nonzero, dtype, values

    def make(self, dtype, gen):
        dtype = self.dtype or dtype
        if self.values is not None:
            return torch.tensor(self.values, dtype=dtype).reshape(self.shape)
        if dtype == BOOL:
            return torch.randint(0, 2, self.shape, generator=gen).bool()
        if dtype.is_floating_point:
            x = torch.randn(self.shape, generator=gen) * 2
            if self.positive:
                x = x.abs() + 0.1
            if self.nonzero:
                x = torch.where(x.abs() < 0.1, torch.full_like(x, 0.5), x)
            flat = x.reshape(-1)
            if self.edges and not self.positive:
                n = min(len(EDGES), flat.numel() // 3)
                flat[:n] = torch.tensor(EDGES[:n])
            return flat.reshape(self.shape).to(dtype)
        low = 1 if self.positive else self.low
        x = torch.randint(low, self.high, self.shape, generator=gen)
        if self.nonzero:
            x = torch.where(x == 0, torch.ones_like(x), x)
        return x.to(dtype)


class Case:
    def __init__(self, target, *args, dtypes=FLOATS, tol=None, unspecified=False, results=None,
                 **kwargs):
        self.target, self.args, self.kwargs = target, args, kwargs
        # `unspecified`: torch leaves the values undefined (`empty`); only sizes compare.
        self.dtypes, self.tol, self.unspecified = dtypes, tol, unspecified
        # `results`: how many of the op's results a model reads (`embedding_bag`'s bags, not
        # the bookkeeping after them, which its kernels fill differently by mode).
        self.results = results

    def op(self):
        name, overload = self.target.rsplit(".", 1)
        return getattr(getattr(torch.ops.aten, name), overload)

    def in_place(self):
        return self.target.split(".")[0].endswith("_") and not self.target.startswith("__")


# Three 3x3 matrices: determinant 18, -5 (a zero pivot first), 0.
SQUARES = [2, 1, 0, 1, 3, 1, 0, 1, 4,
           0, 2, 1, 1, 1, 0, 3, 0, 1,
           1, 2, 3, 2, 4, 6, 1, 0, 1]
# Two symmetric positive definite 3x3 matrices.
DEFINITE = [2, 1, 0, 1, 3, 1, 0, 1, 4,
            4, 2, 0.5, 2, 5, 1, 0.5, 1, 3]


def C(target, *args, **kwargs):
    return Case(target, *args, **kwargs)


def unary(targets, dtypes, **kw):
    return [C(t, T(2, 5), dtypes=dtypes, **kw) for t in targets]


def binary(targets, dtypes, **kw):
    return [C(t, T(2, 3, **kw), T(3, **kw), dtypes=dtypes) for t in targets]


CASES = [
    *unary(["abs.default", "neg.default", "sign.default", "ceil.default", "floor.default",
            "round.default", "relu.default", "relu_.default", "clone.default",
            "contiguous.default", "alias.default", "detach.default", "detach_.default",
            "lift_fresh_copy.default", "logical_not.default"], ALL),
    C("bitwise_not.default", T(2, 5), dtypes=(I64, BOOL)),
    # Ported decompositions (ckpt's `aten::decompose` table).
    *unary(["acos.default", "asin.default", "atan.default", "sinh.default", "cosh.default",
            "tan.default", "asinh.default", "acosh.default", "atanh.default", "erf.default",
            "erfc.default", "sgn.default", "log2.default", "log10.default", "log1p.default",
            "expm1.default", "exp2.default", "square.default", "deg2rad.default",
            "rad2deg.default", "frac.default", "trunc.default", "positive.default", "resolve_conj.default", "resolve_neg.default",
            "conj_physical.default", "real.default", "celu.default", "selu.default",
            "log_sigmoid.default", "logit.default", "sinc.default", "special_ndtr.default",
            "special_entr.default", "isnan.default", "isinf.default", "isposinf.default",
            "isneginf.default", "angle.default", "isreal.default"], FLOATS),
    # Special functions (ckpt's `aten::special` programs, computed in double precision).
    *unary(["digamma.default", "lgamma.default", "erfinv.default", "i0.default",
            "special_i0e.default", "special_i1.default", "special_i1e.default",
            "special_ndtri.default", "special_modified_bessel_i0.default",
            "special_modified_bessel_i1.default", "special_spherical_bessel_j0.default",
            "special_digamma.default", "special_psi.default", "special_gammaln.default",
            "special_erfinv.default", "special_i0.default", "special_bessel_j0.default",
            "special_bessel_j1.default", "special_bessel_y0.default", "special_bessel_y1.default",
            "special_modified_bessel_k0.default", "special_modified_bessel_k1.default",
            "special_scaled_modified_bessel_k0.default",
            "special_scaled_modified_bessel_k1.default", "special_airy_ai.default",
            "special_erfcx.default", "special_log_ndtr.default"], (*FLOATS, I64)),
    *[C(t, n, T(2, 5)) for t in ("polygamma.default", "special_polygamma.default")
      for n in (0, 1, 2, 5)],
    *[C(t, T(2, 5), p) for t in ("mvlgamma.default", "special_multigammaln.default")
      for p in (1, 3)],
    C("copysign.Scalar", T(2, 5), -0.0),
    C("celu.default", T(2, 5), 2.0),
    C("logit.default", T(2, 5), 0.2),
    # Without posinf/neginf, float16 is refused (its own largest values are the defaults).
    C("nan_to_num.default", T(2, 5), dtypes=(F32,)),
    C("nan_to_num.default", T(2, 5), 1.0, 2.0, -3.0),
    *[C(t, T(2, 5), d, k, dtypes=(F32,)) for t in ("all.dim", "any.dim", "logsumexp.default")
      for d, k in ((1, False), (0, True))],
    C("all.dims", T(2, 5), [0, 1], dtypes=(F32,)),
    C("all.default", T(2, 5), dtypes=(F32,)),
    C("any.default", T(2, 5), dtypes=(F32,)),
    C("any.dims", T(2, 5), [1], True, dtypes=(F32,)),
    C("count_nonzero.default", T(2, 5), 1, dtypes=(F32,)),
    C("count_nonzero.dim_IntList", T(2, 5), [0, 1], dtypes=(F32,)),
    *[C(t, T(), d, k, dtypes=(F32,)) for t in ("all.dim", "any.dim", "logsumexp.default")
      for d, k in ((0, False), (-1, True))],
    *unary(["sqrt.default", "rsqrt.default", "exp.default", "log.default", "sigmoid.default",
            "sigmoid_.default", "tanh.default", "tanh_.default", "sin.default", "cos.default",
            "reciprocal.default", "silu.default", "silu_.default", "mish.default",
            "mish_.default", "hardsigmoid.default", "hardsigmoid_.default",
            "hardswish.default", "hardswish_.default", "relu6.default",
            "elu.default", "elu_.default", "leaky_relu.default", "leaky_relu_.default",
            "hardtanh.default", "hardtanh_.default", "softplus.default"], FLOATS),
    C("gelu.default", T(2, 5, edges=False), dtypes=FLOATS),
    C("gelu.default", T(2, 5, edges=False), approximate="tanh"),
    C("elu.default", T(2, 5), 0.5, 2.0, 1.5),
    C("leaky_relu.default", T(2, 5), 0.2),
    C("hardtanh.default", T(2, 5), -0.5, 2.0),
    C("softplus.default", T(2, 5), 2.0, 3.0),
    C("softplus.default", T(2, 5), 3.0, 0.2),
    *unary(["hardshrink.default", "softshrink.default"], FLOATS),
    C("hardshrink.default", T(2, 5), 1.5),
    C("softshrink.default", T(2, 5, values=[0.5, -0.5, 0.7, -0.7, 2, -2, 0, 1, -1, 0.25]), 1),
    C("threshold.default", T(2, 5), 0.5, -2.0, dtypes=FLOATS),
    C("threshold.default", T(2, 5), 1, 7, dtypes=(F32,)),
    *[C("round.decimals", T(2, 5, values=[0.125, 2.5, -0.375, 1234.5, 0.0, 1.0051, -2.5e-3, 7, 9e9,
                                          float("nan")]), decimals=d, dtypes=(F32,))
      for d in (0, 2, -2)],
    *[C(t, T(*shape), dtypes=ALL) for t in ["atleast_1d.default", "atleast_2d.default",
                                             "atleast_3d.default"]
      for shape in ((), (4,), (2, 3), (2, 3, 2))],
    C("pixel_shuffle.default", T(2, 8, 2, 3), 2, dtypes=ALL),
    C("pixel_shuffle.default", T(2, 1, 9, 1, 2), 3, dtypes=(F32,)),
    C("pixel_unshuffle.default", T(1, 2, 4, 6), 2, dtypes=ALL),
    C("channel_shuffle.default", T(2, 6, 2, 3), 3, dtypes=ALL),
    C("native_channel_shuffle.default", T(1, 8, 5), 4, dtypes=ALL),
    C("diag_embed.default", T(2, 3), dtypes=ALL),
    C("diag_embed.default", T(3, 4), 2, dtypes=ALL),
    C("diag_embed.default", T(2, 3, 2), -1, 0, 2, dtypes=ALL),
    C("diag_embed.default", T(4, 3), 1, -1, 0, dtypes=(F32,)),
    C("diagonal.default", T(3, 4), dtypes=ALL),
    C("diagonal.default", T(2, 3, 4), -1, 2, 1, dtypes=ALL),
    C("diagonal.default", T(3, 4), 5, dtypes=(F32,)),
    C("diagonal_copy.default", T(2, 4, 3), 1, -1, 0, dtypes=ALL),
    C("linalg_diagonal.default", T(2, 3, 4), offset=1, dtypes=ALL),
    C("linalg_diagonal.default", T(2, 3, 4), offset=-1, dim1=0, dim2=2, dtypes=(F32,)),
    C("diag.default", T(4), dtypes=ALL),
    C("diag.default", T(3), -2, dtypes=(F32,)),
    C("diag.default", T(3, 5), 1, dtypes=ALL),
    C("trace.default", T(3, 4), dtypes=NUMERIC),
    C("diagflat.default", T(2, 3), dtypes=ALL),
    C("diagflat.default", T(4), -1, dtypes=(F32,)),
    # Small matrices (LU with partial pivoting, Cholesky): positive, negative and zero
    # determinants, a zero on the diagonal that needs a row swap. The log-determinant of
    # the singular one is torch's LAPACK rounding noise, which the evaluator refuses, so
    # logdet (NaN where negative) takes the two regular ones.
    *[C(t, T(3, 3, 3, values=SQUARES), dtypes=(F32,))
      for t in ("linalg_det.default", "det.default")],
    *[C(t, T(2, 3, 3, values=SQUARES[:18]), dtypes=(F32,))
      for t in ("logdet.default", "linalg_slogdet.default", "slogdet.default")],
    *[C(t, T(2, 3, 3, values=SQUARES[:18]), dtypes=(F32,))
      for t in ("linalg_inv.default", "inverse.default")],
    C("linalg_cholesky.default", T(2, 3, 3, values=DEFINITE), upper=True, dtypes=(F32,)),
    C("cholesky.default", T(2, 3, 3, values=DEFINITE), False, dtypes=(F32,)),
    C("cholesky_inverse.default", T(2, 3, 3, values=DEFINITE), True, dtypes=(F32,)),
    C("linalg_inv_ex.default", T(2, 3, 3, values=SQUARES[:18]), dtypes=(F32,)),
    C("linalg_cholesky_ex.default", T(2, 3, 3, values=DEFINITE), upper=True, dtypes=(F32,)),
    # LU factors of regular matrices (`info` of a singular one is LAPACK's rounding), of
    # square and rectangular ones.
    *[C(t, T(2, 3, 3, values=SQUARES[:18]), dtypes=(F32,))
      for t in ("linalg_lu_factor.default", "linalg_lu_factor_ex.default",
                "_lu_with_info.default", "linalg_lu.default")],
    C("linalg_lu.default", T(2, 3), dtypes=(F32,)),
    # Householder QR, LAPACK's signs: reduced and complete, square and rectangular (finite
    # entries: torch's kernel's scaled norms decide what infinities and NaN give).
    C("geqrf.default", T(2, 3, 3, values=SQUARES[:18]), dtypes=(F32,)),
    C("linalg_qr.default", T(2, 3, 3, values=SQUARES[:18]), dtypes=(F32,)),
    C("linalg_qr.default", T(3, 2, edges=False), "complete", dtypes=(F32,)),
    C("qr.default", T(2, 3, edges=False), False, dtypes=(F32,)),
    C("linalg_lu_factor.default", T(3, 2), dtypes=(F32,)),
    C("linalg_matrix_power.default", T(2, 3, 3, values=SQUARES[:18]), -2, dtypes=(F32,)),
    C("matrix_power.default", T(2, 3, 3, values=SQUARES[:18]), 3, dtypes=(F32,)),
    C("linalg_vander.default", T(2, 4), N=3, dtypes=(F32,)),
    # Eigenvalues of a triangle (the other ignored) and singular values, with what torch
    # derives from them: rank (default, atol, rtol, hermitian), pseudo-inverse, cond.
    C("linalg_eigvalsh.default", T(2, 3, 3, values=SQUARES[:18]), dtypes=(F32,)),
    C("linalg_eigvalsh.default", T(2, 3, 3, values=SQUARES[:18]), "U", dtypes=(F32,)),
    C("linalg_svdvals.default", T(2, 3, 4, edges=False), dtypes=(F32,)),
    C("linalg_matrix_rank.atol_rtol_tensor", T(3, 3, 3, values=SQUARES), dtypes=(F32,)),
    C("linalg_matrix_rank.atol_rtol_tensor", T(2, 3, 3, values=DEFINITE), hermitian=True,
      dtypes=(F32,)),
    C("linalg_matrix_rank.atol_rtol_float", T(3, 3, 3, values=SQUARES), atol=1.0, dtypes=(F32,)),
    C("linalg_matrix_rank.atol_rtol_float", T(2, 4, 3, edges=False), rtol=0.5, dtypes=(F32,)),
    C("linalg_pinv.atol_rtol_tensor", T(2, 3, 4, edges=False), dtypes=(F32,)),
    C("linalg_pinv.atol_rtol_tensor", T(2, 3, 3, values=DEFINITE), hermitian=True,
      dtypes=(F32,)),
    C("linalg_pinv.atol_rtol_float", T(2, 3, 3, values=SQUARES[:18]), rtol=0.1, dtypes=(F32,)),
    C("pinverse.default", T(2, 4, 3, edges=False), dtypes=(F32,)),
    C("linalg_cond.default", T(2, 3, 3, values=SQUARES[:18]), dtypes=(F32,)),
    C("linalg_cond.default", T(2, 4, 3, edges=False), -2, dtypes=(F32,)),
    C("linalg_matrix_norm.default", T(2, 3, 4, edges=False), 2, dtypes=(F32,)),
    C("linalg_matrix_norm.default", T(2, 3, 4, edges=False), -2, [2, 0], True, dtypes=(F32,)),
    C("linalg_matrix_norm.str_ord", T(2, 3, 4, edges=False), "nuc", [1, 0], dtypes=(F32,)),
    # Matrix norms without singular values, and linalg_norm's choice of vector or matrix.
    C("linalg_matrix_norm.default", T(2, 3, 4), 1, dtypes=(F32,)),
    C("linalg_matrix_norm.default", T(2, 3, 4), float("-inf"), [0, 2], True, dtypes=(F32,)),
    C("linalg_matrix_norm.str_ord", T(2, 3, 4), dtypes=(F32,)),
    C("linalg_norm.default", T(2, 3, 4), dtypes=(F32,)),
    C("linalg_norm.default", T(3, 4), float("inf"), dtypes=(F32,)),
    C("linalg_norm.ord_str", T(2, 3, 4), "fro", [2, 0], dtypes=(F32,)),
    # linspace/logspace with 0-d tensor ends (torch's kernel: each half from its own end).
    C("linspace.Tensor_Scalar", T(values=-2.5), 4, 50, dtypes=(F32,)),
    C("linspace.Tensor_Tensor", T(values=0.1), T(values=7.7), 13, dtypes=(F32,)),
    C("linspace.Scalar_Tensor", -3, T(values=4.3), 1, dtypes=(F32,)),
    C("logspace.Tensor_Scalar", T(values=-2.0), 2, 4, 3.0, dtypes=(F32,)),
    C("logspace.Tensor_Tensor", T(values=0.5), T(values=-1.5), 6, dtypes=(F32,)),
    C("logspace.Scalar_Tensor", 1.2, T(values=2.0), 5, 1.1, dtypes=(F32,)),
    # ... and with number ends (RAFT's `linspace(-r, r, 2r + 1)` of ints is float32).
    C("linspace.default", -4, 4, 9, dtypes=(F32,)),
    C("linspace.default", 0.1, -7.7, 50, dtypes=(F32,)),
    C("logspace.default", -2, 2.5, 7, 2.0, dtypes=(F32,)),
    C("glu.default", T(2, 6)),
    C("glu.default", T(4, 3), 0),
    C("round.default", T(6, values=[0.5, 1.5, 2.5, -0.5, -1.5, 2.4]), dtypes=(F32,)),
    *[C(t, T(2, 3), T(3), dtypes=ALL) for t in
      ["add.Tensor", "mul.Tensor", "maximum.default", "minimum.default", "max.other",
       "min.other", "eq.Tensor",
       "ne.Tensor", "lt.Tensor", "le.Tensor", "gt.Tensor", "ge.Tensor"]],
    *[C(t, T(2, 3), T(2, 1), dtypes=NUMERIC) for t in
      ["sub.Tensor", "rsub.Tensor", "add_.Tensor", "sub_.Tensor", "mul_.Tensor"]],
    C("add.Tensor", T(2, 3), T(3), alpha=3, dtypes=(F32, I64)),
    C("sub.Tensor", T(2, 3), T(3), alpha=2, dtypes=(F32, I64)),
    *[C(t, T(2, 3), T(3, nonzero=True), dtypes=NUMERIC) for t in
      ["div.Tensor", "div_.Tensor"]],
    *[C("div.Tensor_mode", T(2, 4), T(4, nonzero=True), rounding_mode=m, dtypes=NUMERIC)
      for m in ("floor", "trunc", None)],
    C("div.Tensor_mode", T(2, 3), 2, rounding_mode="floor", dtypes=NUMERIC),
    C("remainder.Tensor", T(3, 4), T(4, nonzero=True), dtypes=NUMERIC),
    C("remainder.Tensor", T(2, 3), T(3, values=[-7, 3, -2]), dtypes=NUMERIC),
    *[C("remainder.Scalar", T(2, 4), s, dtypes=NUMERIC) for s in (3, -2, 2.5)],
    C("fmod.Tensor", T(3, 4), T(4, nonzero=True), dtypes=NUMERIC),
    C("fmod.Tensor", T(2, 3), T(3, values=[-7, 3, -2]), dtypes=NUMERIC),
    *[C("fmod.Scalar", T(2, 4), s, dtypes=NUMERIC) for s in (3, -2, 0.1)],
    *[C("div.Scalar_mode", T(2, 4), s, rounding_mode=m, dtypes=NUMERIC)
      for s in (3, -2) for m in ("floor", "trunc")],
    C("div.Scalar_mode", T(2, 4), 0.1, rounding_mode="floor"),
    C("floor_divide.default", T(3, 4), T(4, nonzero=True), dtypes=NUMERIC),
    *[C("floor_divide.Scalar", T(2, 4), s, dtypes=NUMERIC) for s in (3, -2)],
    C("floor_divide.Scalar", T(2, 4), 0.1),
    *[C(t, T(2, 3), 2, dtypes=NUMERIC) for t in
      ["add.Scalar", "sub.Scalar", "mul.Scalar", "rsub.Scalar"]],
    C("add.Scalar", T(2, 3), 1.5, dtypes=NUMERIC),
    C("mul.Scalar", T(2, 3), 0.5, dtypes=NUMERIC),
    C("div.Scalar", T(2, 3), 4, dtypes=NUMERIC),
    C("div.Scalar", T(2, 3), -0.5, dtypes=NUMERIC),
    # Aliases (`native_functions.yaml`: "alias for"), computed as the op they name.
    *[C(t, T(2, 3), T(3, nonzero=True), dtypes=NUMERIC) for t in
      ["divide.Tensor", "true_divide.Tensor", "multiply.Tensor"]],
    C("divide.Tensor_mode", T(2, 4), T(4, nonzero=True), rounding_mode="floor",
      dtypes=NUMERIC),
    *[C(t, T(2, 3), -0.5, dtypes=NUMERIC) for t in
      ["divide.Scalar", "true_divide.Scalar", "multiply.Scalar"]],
    C("subtract.Tensor", T(2, 3), T(2, 1), alpha=2, dtypes=(F32, I64)),
    C("concat.default", [T(2, 3), T(2, 1)], 1, dtypes=(F32, I64)),
    *[C(t, T(2, 3), 1, dtypes=ALL) for t in
      ["eq.Scalar", "ne.Scalar", "lt.Scalar", "le.Scalar", "gt.Scalar", "ge.Scalar"]],
    C("lt.Scalar", T(2, 3), 0.5, dtypes=NUMERIC),
    *[C(t, T(2, 3), T(3), dtypes=(I64, BOOL)) for t in
      ["__and__.Tensor", "__or__.Tensor", "__xor__.Tensor", "bitwise_and.Tensor",
       "bitwise_or.Tensor", "bitwise_xor.Tensor"]],
    *[C(t, T(2, 3), s, dtypes=(I64,)) for s in (3, -6) for t in
      ["__and__.Scalar", "__or__.Scalar", "__xor__.Scalar", "bitwise_and.Scalar",
       "bitwise_or.Scalar", "bitwise_xor.Scalar"]],
    *[C(t, T(2, 3), T(3), dtypes=ALL) for t in
      ["logical_and.default", "logical_or.default", "logical_xor.default"]],
    C("pow.Tensor_Tensor", T(2, 3, positive=True), T(3)),
    C("pow.Tensor_Tensor", T(2, 3, low=0, high=4), T(3, low=0, high=3), dtypes=(I64,)),
    *[C("pow.Tensor_Scalar", T(2, 3), e, dtypes=NUMERIC) for e in (2, 3, -1.0, -2.0, 1.7)],
    *[C("pow.Tensor_Scalar", T(2, 3, positive=True), e) for e in (0.5, -0.5)],
    C("pow.Scalar", 2.0, T(2, 3)),
    C("pow.Scalar", 3, T(2, 3, low=0, high=5), dtypes=(I64,)),
    C("where.self", T(2, 3, dtype=BOOL), T(2, 3), T(3), dtypes=ALL),
    C("where.ScalarSelf", T(2, 3, dtype=BOOL), 1.5, T(3), dtypes=NUMERIC),
    C("where.ScalarOther", T(2, 3, dtype=BOOL), T(3), -2, dtypes=NUMERIC),
    C("where.Scalar", T(2, 3, dtype=BOOL), 1.5, -2, dtypes=(F32,)),
    C("where.Scalar", T(2, 3, dtype=BOOL), 3, -2, dtypes=(F32,)),
    C("masked_fill.Scalar", T(2, 3), T(3, dtype=BOOL), float("-inf"), dtypes=FLOATS),
    C("masked_fill.Scalar", T(2, 3), T(2, 1, dtype=BOOL), 7, dtypes=ALL),
    C("masked_fill.Tensor", T(2, 3), T(3, dtype=BOOL), T(dtype=F32, values=-1.5), dtypes=NUMERIC),
    C("masked_fill_.Scalar", T(2, 3), T(3, dtype=BOOL), float("-inf"), dtypes=FLOATS),
    C("masked_fill_.Tensor", T(2, 3), T(3, dtype=BOOL), T(dtype=F32, values=-1.5), dtypes=NUMERIC),
    C("clamp.default", T(2, 5), -1.0, 1.5, dtypes=NUMERIC),
    C("clamp.default", T(2, 5), None, 1, dtypes=NUMERIC),
    C("clamp_min.default", T(2, 5), -0.5, dtypes=NUMERIC),
    C("clamp_max.default", T(2, 5), 2, dtypes=NUMERIC),
    C("clamp.Tensor", T(2, 3), T(3), T(2, 1), dtypes=NUMERIC),
    C("addcmul.default", T(2, 3), T(3), T(2, 3), value=0.5),
    C("addcdiv.default", T(2, 3), T(3), T(2, 3, nonzero=True), value=2),
    C("prelu.default", T(2, 3, 4), T(3)),
    C("prelu.default", T(2, 3), T(1)),
    # Conversions.
    *[C("to.dtype", T(2, 5), d, dtypes=ALL) for d in (F32, I64, BOOL, torch.int32, F16)],
    C("to.dtype", T(1, values=[float("-inf")]), torch.int64, dtypes=(F32,)),
    C("to.dtype_layout", T(2, 5), dtype=I64, dtypes=ALL),
    C("to.device", T(2, 5), "cpu", F32, dtypes=ALL),
    C("_to_copy.default", T(2, 5), dtype=F32, dtypes=ALL),
    C("type_as.default", T(2, 3), T(1, dtype=F32), dtypes=ALL),
    C("type_as.default", T(2, 3), T(1, dtype=I64), dtypes=(F32,)),
    # Reductions and scans.
    *[C(t, T(2, 3, 4), [1], dtypes=FLOATS) for t in ["mean.dim", "amax.default",
                                                      "amin.default"]],
    C("mean.dim", T(2, 3, 4), [0, 2], True),
    C("mean.default", T(2, 3)),
    C("sum.dim_IntList", T(2, 3, 4), [-1], dtypes=ALL),
    C("sum.dim_IntList", T(2, 3, 4), [0, 2], True, dtype=I64, dtypes=(I64, BOOL)),
    # A 0-d tensor's dimension 0 (or -1), as torch wraps it, is its one entry.
    C("sum.dim_IntList", T(), [-1], dtypes=ALL),
    C("sum.dim_IntList", T(), [0], True, dtype=I64, dtypes=(I64, BOOL)),
    C("mean.dim", T(), [0], True),
    C("count_nonzero.default", T(), -1, dtypes=(F32,)),
    C("prod.dim_int", T(), -1, True, dtypes=(F32,)),
    C("prod.dim_int", T(2, 3, 4, edges=False), 1, dtypes=(F32,)),
    C("prod.dim_int", T(2, 3, 4), -1, True, dtypes=(F32,)),
    C("prod.default", T(2, 3, 4, edges=False), dtypes=(F32,)),
    C("prod.default", T(3, 2), dtypes=(F32,)),
    C("sum.default", T(2, 3), dtypes=ALL),
    C("amax.default", T(2, 3, 4), [0, 1], True, dtypes=(F32, I64, BOOL)),
    C("var.correction", T(2, 5), [1], correction=0),
    C("var.dim", T(2, 5), [1], True, True),
    C("std.correction", T(2, 5), [1], correction=1, keepdim=True),
    C("std.dim", T(2, 5), [0], False),
    C("var.default", T(2, 5), True),
    C("std.default", T(2, 5), False),
    C("linalg_vector_norm.default", T(2, 5), 2, [1]),
    C("pairwise_distance.default", T(2, 5), T(5), dtypes=(F32,)),
    C("pairwise_distance.default", T(3, 4), T(3, 4), 2.0, 1e-3, True, dtypes=(F32,)),
    C("cumsum.default", T(2, 5), 1, dtypes=ALL),
    C("cumsum.default", T(2, 5), 0, dtype=F32, dtypes=(I64, BOOL)),
    C("cumsum.default", T(), -1, dtypes=ALL),
    *[C(t, T(3, 4), 1, dtypes=NUMERIC) for t in ["argmax.default", "argmin.default"]],
    C("argmax.default", T(3, 4, values=[1, 5, 5, 0, 2, 2, 2, 2, 9, 1, 9, 0]), dtypes=NUMERIC),
    C("argmin.default", T(3, 4), 0, True, dtypes=NUMERIC),
    *[C(t, T(3, 4), 1, dtypes=(F32, I64, BOOL)) for t in ["max.dim", "min.dim"]],
    C("min.dim", T(3, 4), 0, True, dtypes=(F32, I64)),
    C("topk.default", T(3, 6, edges=False), 2, dtypes=FLOATS),
    C("topk.default", T(2, 4, values=[5, -1, 3, 0, 2, 9, -4, 7]), 2, dtypes=(I64,)),
    C("topk.default", T(3, 6, edges=False), 3, 0, False, dtypes=(F32,)),
    # Order statistics: the lower middle (NaN through median, and the first NaN's index;
    # skipped by nanmedian), every interpolation of quantile, msort along dimension 0.
    C("median.default", T(3, 6), dtypes=(F32, I64)),
    C("nanmedian.default", T(3, 6), dtypes=(F32,)),
    C("median.dim", T(3, 7), 1, True, dtypes=(F32,)),
    C("median.dim", T(4, 3, edges=False), 0, dtypes=(F32,)),
    C("nanmedian.dim", T(3, 6, edges=False), 1, dtypes=(F32,)),
    C("quantile.scalar", T(3, 6), 0.3, dtypes=(F32,)),
    *[C("quantile.scalar", T(3, 6, edges=False), 0.4, 1, interpolation=m, dtypes=(F32,))
      for m in ("linear", "lower", "higher", "midpoint", "nearest")],
    *[C("nanquantile.scalar", T(3, 6), 0.7, 1, True, interpolation=m, dtypes=(F32,))
      for m in ("linear", "lower", "higher", "midpoint", "nearest")],
    C("nanquantile.scalar", T(2, 5), 0.25, dtypes=(F32,)),
    C("quantile.default", T(3, 6), T(3, values=[0.0, 0.3, 1.0]), 1, interpolation="midpoint",
      dtypes=(F32,)),
    C("nanquantile.default", T(3, 6), T(values=[0.75]), dtypes=(F32,)),
    C("msort.default", T(3, 6), dtypes=(F32, I64)),
    # sort in torch's order (NaN last ascending, first descending), ties in input order when
    # stable; kthvalue the k-th in that order; cummax/cummin as torch's scan (the latest of
    # equal values, NaN kept once met); aminmax and max()/min() as amin/amax.
    C("sort.default", T(3, 6, edges=False), dtypes=(F32,)),
    C("sort.default", T(3, 6, edges=False), 0, True, dtypes=(F32,)),
    C("sort.stable", T(3, 6), stable=True, dim=1, dtypes=(F32, I64)),
    C("sort.stable", T(3, 6), stable=True, dim=0, descending=True, dtypes=(F32,)),
    C("kthvalue.default", T(3, 6, edges=False), 2, dtypes=(F32,)),
    C("kthvalue.default", T(4, 3, edges=False), 4, 0, True, dtypes=(F32,)),
    C("cummax.default", T(3, 6), 1, dtypes=(F32, I64)),
    C("cummin.default", T(4, 3), 0, dtypes=(F32, I64)),
    C("aminmax.default", T(3, 6), dtypes=(F32, I64)),
    C("aminmax.default", T(3, 6), dim=1, keepdim=True, dtypes=(F32,)),
    C("max.default", T(3, 6), dtypes=(F32, I64)),
    C("min.default", T(3, 6), dtypes=(F32, I64)),
    # renorm: slices along dim scaled to maxnorm where their p-norm exceeds it.
    C("renorm.default", T(3, 4, edges=False), 2, 0, 1.5, dtypes=(F32,)),
    C("renorm.default", T(3, 4, 2, edges=False), 1, 1, 2.0, dtypes=(F32,)),
    C("renorm.default", T(3, 4, edges=False), float("inf"), -1, 1.0, dtypes=(F32,)),
    # cartesian_prod with the last index fastest.
    C("cartesian_prod.default", [T(3), T(2)], dtypes=(F32, I64)),
    C("cartesian_prod.default", [T(4)], dtypes=(F32,)),
    # searchsorted: torch's binary search, NaN found at the end.
    C("searchsorted.Scalar", T(8, values=[-3, -1, 0, 0, 2, 5, 5, 9]), 0, dtypes=(F32, I64)),
    C("searchsorted.Scalar", T(8, values=[-3, -1, 0, 0, 2, 5, 5, 9]), 5, right=True, dtypes=(F32,)),
    C("searchsorted.Scalar", T(5, values=[1, 2, 3, 4, 5]), float("nan"), out_int32=True, dtypes=(F32,)),
    C("searchsorted.Tensor", T(2, 4, values=[3, 1, 2, 0, 5, 5, 6, 9]), T(2, 3, values=[2, 0, 9, 5, 6, 1]),
      right=True, sorter=T(2, 4, dtype=I64, values=[3, 1, 2, 0, 0, 1, 2, 3]), dtypes=(F32,)),
    C("bucketize.Tensor", T(2, 3, values=[-1, 0, 2, 2.5, 7, 3]), T(4, values=[0, 2, 2, 5]),
      dtypes=(F32, I64)),
    C("bucketize.Tensor", T(2, 3, values=[-1, 0, 2, 2.5, 7, 3]), T(4, values=[0, 2, 2, 5]),
      out_int32=True, right=True, dtypes=(F32,)),
    C("frexp.Tensor", T(3, 6, values=[1e-45, -3e-39, 2.0 ** 127 * 1.5, -0.75, 3.0, 1.0, 0.0, -0.0,
                                       float("inf"), float("-inf"), float("nan"), 0.1, -7.5,
                                       1e30, 2.0 ** -126, 5.0, -1e-20, 0.5]), dtypes=(F32,)),
    C("softmax.int", T(2, 5), 1),
    C("_softmax.default", T(2, 5), 0, False),
    C("log_softmax.int", T(2, 5, edges=False), -1),
    C("_log_softmax.default", T(2, 5, edges=False), 1, False),
    # A 0-d tensor along its dimension 0 (or -1): torch computes on its one-entry view.
    *[C(t, T(values=v), d, dtypes=(F32,)) for t in ("softmax.int", "log_softmax.int")
      for v in ([0.75], [float("inf")], [float("-inf")], [float("nan")]) for d in (0, -1)],
    # Layouts.
    C("view.default", T(2, 6), [3, 4], dtypes=ALL),
    # Copies of views: the view's values.
    *unary(["alias_copy.default", "detach_copy.default", "t_copy.default",
            "squeeze_copy.default"], ALL),
    C("expand_copy.default", T(3, 1), [2, 3, 4], dtypes=ALL),
    C("narrow_copy.default", T(5, 4), 1, 1, 2, dtypes=ALL),
    C("permute_copy.default", T(2, 3, 4), [2, 0, 1], dtypes=ALL),
    C("select_copy.int", T(3, 4), 1, -1, dtypes=ALL),
    C("slice_copy.Tensor", T(5, 4), 0, 1, 5, 2, dtypes=ALL),
    C("split_copy.Tensor", T(5, 2), 2, dtypes=ALL),
    C("split_with_sizes_copy.default", T(5, 2), [1, 4], dtypes=ALL),
    C("squeeze_copy.dim", T(2, 1, 3), 1, dtypes=ALL),
    C("squeeze_copy.dims", T(1, 2, 1), [0, 2], dtypes=ALL),
    C("transpose_copy.int", T(2, 3, 4), 0, 2, dtypes=ALL),
    C("transpose_copy.int", T(), 0, -1, dtypes=ALL),
    C("squeeze_copy.dim", T(), -1, dtypes=ALL),
    C("squeeze_copy.dims", T(), [0], dtypes=ALL),
    C("unfold_copy.default", T(), -1, 1, 2, dtypes=ALL),
    C("unbind_copy.int", T(3, 2), 0, dtypes=ALL),
    C("unfold_copy.default", T(2, 7), 1, 3, 2, dtypes=ALL),
    C("unsqueeze_copy.default", T(2, 3), -1, dtypes=ALL),
    C("view_copy.default", T(2, 6), [3, 4], dtypes=ALL),
    *[C(t, T(2, 3, 4), dtypes=ALL) for t in ["mT.default", "mH.default", "adjoint.default"]],
    C("broadcast_to.default", T(3, 1), [2, 3, 4], dtypes=ALL),
    C("reshape.default", T(2, 6), [-1, 3], dtypes=ALL),
    C("_unsafe_view.default", T(2, 6), [12], dtypes=ALL),
    C("reshape_as.default", T(2, 6), T(4, 3), dtypes=ALL),
    C("view_as.default", T(2, 6), T(3, 4), dtypes=ALL),
    C("flatten.using_ints", T(2, 3, 4), 1, 2, dtypes=ALL),
    C("ravel.default", T(2, 3, 4), dtypes=ALL),
    C("ravel.default", T(), dtypes=(F32,)),
    C("unflatten.int", T(2, 6), 1, [2, 3], dtypes=ALL),
    C("permute.default", T(2, 3, 4), [2, 0, 1], dtypes=ALL),
    C("transpose.int", T(2, 3, 4), 0, 2, dtypes=ALL),
    C("transpose.int", T(), -1, 0, dtypes=ALL),
    C("t.default", T(2, 3), dtypes=ALL),
    C("unsqueeze.default", T(2, 3), -1, dtypes=ALL),
    C("squeeze.dim", T(2, 1, 3), 1, dtypes=ALL),
    C("squeeze.dims", T(1, 2, 1), [0, 2], dtypes=ALL),
    C("squeeze.default", T(1, 2, 1, 3), dtypes=ALL),
    C("squeeze.dim", T(), 0, dtypes=ALL),
    C("squeeze.dims", T(), [-1], dtypes=ALL),
    C("select.int", T(3, 4), 1, -1, dtypes=ALL),
    C("slice.Tensor", T(5, 4), 0, 1, 5, 2, dtypes=ALL),
    C("narrow.default", T(5, 4), 1, 1, 2, dtypes=ALL),
    C("index.Tensor", T(4, 3), [T(2, 2, dtype=I64, low=-4, high=4)], dtypes=ALL),
    C("index_select.default", T(4, 3), 1, T(4, dtype=I64, low=0, high=3), dtypes=ALL),
    C("expand.default", T(3, 1), [2, 3, 4], dtypes=ALL),
    C("expand_as.default", T(3, 1), T(2, 3, 4), dtypes=ALL),
    C("repeat.default", T(2, 3), [2, 1, 2], dtypes=ALL),
    C("tile.default", T(2, 3), [2], dtypes=ALL),
    C("repeat_interleave.self_int", T(2, 3), 2, 1, dtypes=ALL),
    C("split.Tensor", T(5, 2), 2, dtypes=ALL),
    C("split_with_sizes.default", T(5, 2), [1, 4], dtypes=ALL),
    C("chunk.default", T(2, 5), 3, 1, dtypes=ALL),
    C("unbind.int", T(3, 2), 0, dtypes=ALL),
    C("tensor_split.indices", T(6, 2), [1, 4], dtypes=ALL),
    C("tensor_split.sections", T(2, 5), 3, 1, dtypes=ALL),
    *unary(["fliplr.default", "flipud.default", "numpy_T.default", "matrix_H.default"], ALL),
    *[C("rot90.default", T(2, 3, 4), k, dims, dtypes=ALL)
      for k, dims in ((1, [1, 2]), (2, [0, -1]), (-1, [2, 0]), (4, [0, 1]))],
    C("movedim.int", T(2, 3, 4), 0, -1, dtypes=ALL),
    C("_safe_softmax.default", T(2, 5), 1, dtypes=(F32,)),
    C("_safe_softmax.default", T(values=[float("-inf")]), -1, dtypes=(F32,)),
    C("_safe_softmax.default",
      T(2, 5, values=[[float("-inf")] * 5, [0.5, 1.0, float("-inf"), 2.0, 0.0]]), -1,
      dtypes=(F32,)),
    C("sum_to_size.default", T(2, 3, 4), [2, 1, 4], dtypes=(F32,)),
    C("sum_to_size.default", T(2, 3, 4), [1, 4], dtypes=(F32,)),
    *[C(t, T(2, 3, 4), [1], dtypes=(F32,)) for t in ("var_mean.correction", "var_mean.dim",
                                                    "std_mean.correction", "std_mean.dim")],
    C("var_mean.default", T(2, 3, 4), False, dtypes=(F32,)),
    C("std_mean.default", T(2, 3, 4), dtypes=(F32,)),
    C("movedim.intlist", T(2, 3, 4), [0, 2], [1, 0], dtypes=ALL),
    C("unsafe_split.Tensor", T(5, 2), 2, dtypes=ALL),
    C("unsafe_split_with_sizes.default", T(5, 2), [2, 3], dtypes=ALL),
    C("unsafe_chunk.default", T(2, 5), 3, 1, dtypes=ALL),
    C("hsplit.int", T(2, 6), 3, dtypes=ALL),
    C("hsplit.array", T(6), [1, 4], dtypes=ALL),
    C("vsplit.int", T(4, 2), 2, dtypes=ALL),
    C("vsplit.array", T(6, 2), [1, 4], dtypes=ALL),
    C("dsplit.int", T(1, 2, 4), 2, dtypes=ALL),
    C("dsplit.array", T(1, 2, 6), [1, 4], dtypes=ALL),
    C("flip.default", T(2, 3, 2), [0, 2], dtypes=ALL),
    C("roll.default", T(3, 4), [1, -2], [0, 1], dtypes=ALL),
    C("roll.default", T(3, 4), [5], dtypes=ALL),
    C("gather.default", T(3, 4), 1, T(3, 2, dtype=I64, low=0, high=4), dtypes=ALL),
    # The scatter family: a plain write by positions that do not repeat, reductions by
    # positions that do (folded in torch's order, from self or from the identity).
    C("scatter.src", T(3, 4), 1, T(2, 3, dtype=I64, values=[2, 0, 1, 3, 1, 0]), T(2, 3),
      dtypes=ALL),
    C("scatter.value", T(3, 4), 1, T(3, 4, dtype=I64, values=[2, 0, 2, 1] * 3), 3,
      dtypes=NUMERIC),
    C("scatter_add.default", T(3, 4), -1, T(3, 4, dtype=I64, values=[2, 0, 2, 1] * 3),
      T(3, 4), dtypes=NUMERIC),
    *[C("scatter_reduce.two", T(3, 4), 1, T(3, 4, dtype=I64, values=[2, 0, 2, 2] * 3),
        T(3, 4), reduce, include_self=include_self, dtypes=NUMERIC)
      for reduce in ("sum", "prod", "mean", "amax", "amin") for include_self in (True, False)],
    *[C("scatter.reduce", T(3, 4), 1, T(3, 4, dtype=I64, values=[2, 0, 2, 2] * 3), T(3, 4),
        reduce=reduce, dtypes=NUMERIC) for reduce in ("add", "multiply")],
    C("scatter.value_reduce", T(3, 4), 0, T(2, 4, dtype=I64, values=[2, 0, 2, 1] * 2), 3,
      reduce="multiply", dtypes=NUMERIC),
    C("select_scatter.default", T(3, 4), T(3), 1, -1, dtypes=ALL),
    C("slice_scatter.default", T(4, 3), T(2, 3), 0, 1, 100, 2, dtypes=ALL),
    C("masked_scatter.default", T(3, 4), T(4, dtype=BOOL, values=[True, False, True, True]),
      T(10), dtypes=ALL),
    C("index_add.default", T(3, 4), 1, T(3, dtype=I64, values=[3, 0, 3]), T(3, 3),
      alpha=2, dtypes=NUMERIC),
    C("index_copy.default", T(4, 3), 0, T(2, dtype=I64, values=[3, 1]), T(2, 3), dtypes=ALL),
    C("index_fill.int_Scalar", T(3, 4), -1, T(3, dtype=I64, values=[-1, 0, 3]), 2,
      dtypes=NUMERIC),
    C("index_fill.int_Tensor", T(3, 4), 0, T(2, dtype=I64, values=[2, 2]), T(), dtypes=ALL),
    *[C("index_reduce.default", T(3, 4), 1, T(3, dtype=I64, values=[2, 0, 2]), T(3, 3),
        reduce, include_self=include_self, dtypes=NUMERIC)
      for reduce in ("prod", "mean", "amax", "amin") for include_self in (True, False)],
    C("put.default", T(3, 4), T(3, dtype=I64, values=[-1, 0, 5]), T(3), dtypes=ALL),
    C("put.default", T(3, 4), T(3, dtype=I64, values=[1, 0, 1]), T(3), True, dtypes=NUMERIC),
    C("take.default", T(3, 4), T(2, 2, dtype=I64, values=[-1, 0, 11, 5]), dtypes=ALL),
    C("take_along_dim.default", T(3, 4), T(1, 2, dtype=I64, values=[3, 0]), 1, dtypes=ALL),
    C("take_along_dim.default", T(3, 4), T(2, dtype=I64, values=[7, 1]), dtypes=ALL),
    C("max_unpool2d.default", T(2, 1, 2), T(2, 1, 2, dtype=I64, values=[3, 0, 5, 1]), [2, 3],
      dtypes=(F32,)),
    C("max_unpool3d.default", T(1, 2, 1, 1, 2), T(1, 2, 1, 1, 2, dtype=I64, values=[3, 0, 1, 2]),
      [1, 2, 2], [1, 1, 1], [0, 0, 0], dtypes=(F32,)),
    C("cat.default", [T(2, 3), T(1, 3)], dtypes=ALL),
    C("cat.default", [T(2, 3), T(2, 1)], 1, dtypes=(F32,)),
    C("stack.default", [T(2, 3), T(2, 3)], 1, dtypes=ALL),
    C("meshgrid.default", [T(2), T(3)], dtypes=NUMERIC),
    C("meshgrid.indexing", [T(2), T(3)], indexing="xy", dtypes=NUMERIC),
    C("one_hot.default", T(5, dtype=I64, low=0, high=4), 4),
    C("one_hot.default", T(2, 3, dtype=I64, low=0, high=3), 3),
    C("unfold.default", T(2, 7), 1, 3, 2, dtypes=ALL),
    C("unfold.default", T(), 0, 1, 1, dtypes=ALL),
    C("constant_pad_nd.default", T(2, 3, 4), [1, 2, 0, 1], 2.5, dtypes=NUMERIC),
    C("constant_pad_nd.default", T(2, 3, 4), [-1, 1], dtypes=(F32,)),
    *[C("pad.default", T(1, 2, 4, 5), [2, 1, 1, 2], m) for m in
      ("reflect", "replicate", "circular")],
    C("pad.default", T(1, 2, 4), [1, 2], "constant", -3.0),
    # Negative amounts: circular wraps what the crop leaves, replicate clamps to the input
    # (a crop of a whole axis included), reflect crops then reflects; three padded axes.
    C("pad.default", T(1, 2, 4, 5), [-1, 2, 1, -1], "circular"),
    C("pad.default", T(1, 2, 4, 5), [-5, 3, 2, -4], "replicate"),
    C("pad.default", T(1, 2, 4, 5), [-1, 2, 3, -1], "reflect"),
    *[C("pad.default", T(1, 2, 3, 4, 5), [1, 2, 0, 1, 2, 1], m) for m in
      ("reflect", "replicate", "circular")],
    C("reflection_pad2d.default", T(1, 2, 4, 5), [2, 1, 3, 1]),
    C("replication_pad2d.default", T(1, 2, 4, 5), [2, 1, 3, 1]),
    C("copy_.default", T(2, 3), T(3), dtypes=NUMERIC),
    C("copy.default", T(2, 3), T(3), dtypes=NUMERIC),
    C("reflection_pad1d.default", T(2, 3, 6), [2, 1]),
    C("reflection_pad3d.default", T(1, 2, 4, 4, 5), [1, 2, 0, 1, 2, 1]),
    C("replication_pad1d.default", T(2, 3, 6), [0, 3]),
    C("replication_pad3d.default", T(1, 2, 3, 4, 5), [2, 0, 1, 1, 0, 2]),
    C("_adaptive_avg_pool2d.default", T(1, 2, 5, 7, edges=False), [3, 2]),
    C("_adaptive_avg_pool3d.default", T(1, 2, 5, 7, 3, edges=False), [2, 3, 1]),
    C("atan2.out", T(2, 5), T(2, 5), out=T(2, 5), dtypes=(F32,)),
    *(C("cdist.default", T(2, 4, 3), T(5, 3), p) for p in (0.0, 1.0, 2.0, 1.5, math.inf)),
    C("cdist.default", T(4, 3), T(1, 5, 3), 2.0, 2),
    C("_cdist_forward.default", T(3, 2), T(4, 2), math.inf, None),
    *(C("pdist.default", T(5, 3), p) for p in (0.0, 1.0, 2.0, 0.5, math.inf)),
    C("_pdist_forward.default", T(4, 9), 2.0),
    C("histc.default", T(3, 4), 6, -2, 2.5, dtypes=(F32,)),
    C("histc.default", T(2, 5, edges=False), dtypes=(F32,)),
    C("histc.default", T(3, 3, edges=False), 2, 0.5, 0.5, dtypes=(F32,)),
    C("histogram.bin_ct", T(3, 4, edges=False), 5, dtypes=(F32,)),
    C("histogram.bin_ct", T(3, 4), 6, range=[-2.0, 1.5], density=True, dtypes=(F32,)),
    C("histogram.bin_ct", T(2, 5, edges=False), 4, weight=T(2, 5, edges=False), dtypes=(F32,)),
    C("histogram.bins_tensor", T(3, 4), T(4, values=[-2.0, -0.5, 0.0, 1.5]), dtypes=(F32,)),
    C("histogram.bins_tensor", T(3, 4, edges=False), T(3, values=[-1.0, 0.5, 0.5]),
      density=True, dtypes=(F32,)),
    C("segment_reduce.default", T(2, 6), "max", lengths=T(2, 3, dtype=I64, values=[2, 0, 4] * 2),
      axis=1, dtypes=(F32,)),
    C("segment_reduce.default", T(5, 3), "mean", offsets=T(4, dtype=I64, values=[0, 2, 2, 5]),
      dtypes=(F32,)),
    C("segment_reduce.default", T(4, 2), "prod", lengths=T(2, dtype=I64, values=[1, 3]),
      initial=-1.5, dtypes=(F32,)),
    C("nonzero_static.default", T(3, 4), size=20, dtypes=(F32, I64, BOOL)),
    C("nonzero_static.default", T(2, 3, 2), size=3, fill_value=-7, dtypes=(F32, I64, BOOL)),
    C("empty_strided.default", [2, 3], [3, 1], dtypes=(F32,), unspecified=True),
    C("new_empty_strided.default", T(2, 3), [2, 3], [3, 1], dtypes=NUMERIC, unspecified=True),
    C("_native_batch_norm_legit.default", T(2, 3, 4, edges=False), T(3), T(3), T(3),
      T(3, positive=True), False, 0.1, 1e-5),
    C("native_batch_norm.default", T(2, 3, 4, edges=False), T(3), T(3), T(3),
      T(3, positive=True), False, 0.1, 1e-3),
    C("native_group_norm.default", T(2, 6, 5, edges=False), None, None, 2, 6, 5, 3, 1e-5),
    C("dropout.default", T(2, 3), 0.5, False),
    C("dropout_.default", T(2, 3), 0.3, False),
    *[C(t, T(2, 3, 2), 0.3, False) for t in
      ["feature_dropout.default", "feature_dropout_.default", "alpha_dropout.default",
       "alpha_dropout_.default", "feature_alpha_dropout.default",
       "feature_alpha_dropout_.default"]],
    # In training mode without a mask: p = 0 is the input, p = 1 the input times 0.
    *[C(t, T(2, 3, 2), p, True) for t in ("dropout.default", "feature_alpha_dropout.default")
      for p in (0.0, 1.0)],
    C("fill_.Scalar", T(2, 3), -1.5, dtypes=NUMERIC),
    C("fill.Scalar", T(2, 3), -1.5, dtypes=NUMERIC),
    C("fill_.Tensor", T(2, 3), T(), dtypes=(F32,)),
    C("atan2.default", T(2, 5), T(2, 5), dtypes=(F32,)),
    C("isfinite.default", T(2, 5), dtypes=(F32,)),
    C("clamp_.default", T(2, 5), -1.0, 1.5, dtypes=(F32,)),
    C("clamp_.Tensor", T(2, 3), T(3), T(2, 1), dtypes=(F32,)),
    C("lerp.Scalar", T(2, 5), T(2, 5), 0.3, dtypes=(F32,)),
    C("lerp.Tensor", T(2, 5), T(2, 5), T(2, 5), dtypes=(F32,)),
    # Ported rules of two tensors, broadcast, with the float edges in both.
    *binary(["hypot.default", "logaddexp.default", "logaddexp2.default",
             "heaviside.default", "copysign.Tensor", "fmax.default", "fmin.default",
             "clamp_min.Tensor", "clamp_max.Tensor", "xlogy.Tensor",
             "special_xlog1py.default", "isclose.default"], (F32,)),
    C("isclose.default", T(2, 3), T(3), 0.1, 0.5, True, dtypes=(F32,)),
    C("ldexp.Tensor", T(2, 3), T(3, dtype=I64), dtypes=(F32,)),
    C("broadcast_tensors.default", [T(2, 1), T(3)], dtypes=(F32, I64)),
    # Losses: each reduction (0 none, 1 mean, 2 sum), optional weights given and not.
    *[C(t, T(2, 3, edges=False), T(2, 3, edges=False), r, dtypes=(F32,))
      for t in ("mse_loss.default", "l1_loss.default", "soft_margin_loss.default")
      for r in (0, 1, 2)],
    C("huber_loss.default", T(2, 3), T(2, 3), 0, 0.7, dtypes=(F32,)),
    C("smooth_l1_loss.default", T(2, 3), T(2, 3), 2, 0.0, dtypes=(F32,)),
    C("kl_div.default", T(2, 3), T(2, 3, positive=True), 0, dtypes=(F32,)),
    C("kl_div.default", T(2, 3), T(2, 3), 1, log_target=True, dtypes=(F32,)),
    C("hinge_embedding_loss.default", T(2, 3), T(2, 3, values=[1, -1, 0, 1, -1, 1]),
      0.5, 0, dtypes=(F32,)),
    C("margin_ranking_loss.default", T(2, 3), T(2, 3), T(2, 3, values=[1, -1, 1, 1, -1, 1]),
      0.2, 2, dtypes=(F32,)),
    C("poisson_nll_loss.default", T(2, 3), T(2, 3, positive=True), True, True, 1e-8, 0,
      dtypes=(F32,)),
    C("poisson_nll_loss.default", T(2, 3, positive=True), T(2, 3, positive=True), False,
      False, 1e-8, 1, dtypes=(F32,)),
    C("binary_cross_entropy.default", T(2, 3, values=[0.0, 0.2, 0.5, 0.9, 1.0, 0.3]),
      T(2, 3, values=[1.0, 0.0, 0.5, 0.25, 0.0, 1.0]), T(3, positive=True), 0,
      dtypes=(F32,)),
    C("binary_cross_entropy_with_logits.default", T(2, 3), T(2, 3, positive=True),
      None, T(3, positive=True), 2, dtypes=(F32,)),
    C("binary_cross_entropy_with_logits.default", T(2, 3), T(2, 3, positive=True),
      T(2, 3, positive=True), None, 0, dtypes=(F32,)),
    C("zero_.default", T(2, 3), dtypes=NUMERIC),
    C("cumprod.default", T(3, 4), 1, dtypes=ALL),
    C("cumprod.default", T(4, 2), 0, dtype=F32, dtypes=(I64, BOOL)),
    C("cumprod.default", T(), 0, dtypes=ALL),
    C("diff.default", T(2, 5), dtypes=ALL),
    C("diff.default", T(3, 4), 2, 0, T(1, 4), T(2, 4), dtypes=NUMERIC),
    # n = 0 is self, prepend and append unread.
    C("diff.default", T(3, 4), 0, 0, T(1, 4), dtypes=(F32,)),
    C("logcumsumexp.default", T(3, 6), 1, dtypes=(F32,)),
    C("logcumsumexp.default", T(4, 3, edges=False), 0, dtypes=(F32,)),
    C("trapezoid.dx", T(3, 5), dx=2, dtypes=(F32,)),
    C("trapz.dx", T(3, 5, edges=False), dx=0.5, dim=0, dtypes=(F32,)),
    C("cumulative_trapezoid.dx", T(3, 5), dx=3, dim=0, dtypes=(F32,)),
    C("cumulative_trapezoid.dx", T(3, 5, edges=False), dtypes=(F32,)),
    C("gradient.scalarint", T(3, 5), dtypes=(F32,)),
    C("gradient.scalarint", T(3, 5), spacing=2.0, dim=1, edge_order=2, dtypes=(F32,)),
    C("gradient.scalarrayint", T(3, 4, edges=False), spacing=[1.5, 3.0], dtypes=(F32,)),
    C("gradient.tensorarray", T(3, 4), spacing=[T(4, values=[0.0, 1.0, 3.5, 4.0])], dim=[1],
      dtypes=(F32,)),
    C("gradient.tensorarray", T(3, 4), spacing=[T(3, values=[0.0, 0.5, 2.0]),
                                               T(4, values=[1.0, 2.0, 4.0, 7.0])],
      dim=[0, -1], edge_order=2, dtypes=(F32,)),
    C("gradient.tensorarrayint", T(2, 3), spacing=[T(2, values=[-1.0, 2.0]),
                                                  T(3, values=[0.0, 0.25, 1.0])], dtypes=(F32,)),
    C("gradient.scalarrayarray", T(4, 5), spacing=[2.0, 0.5], dim=[1, 0], edge_order=2,
      dtypes=(F32,)),
    C("triu.default", T(3, 4), 1, dtypes=ALL),
    C("tril.default", T(2, 4, 3), -1, dtypes=ALL),
    C("zeros_like.default", T(2, 3), dtypes=ALL),
    C("ones_like.default", T(2, 3), dtype=F32, dtypes=ALL),
    C("full_like.default", T(2, 3), 2.5, dtypes=(F32, F16)),
    C("full_like.default", T(2, 3), 7, dtypes=(F32, I64)),
    C("empty_like.default", T(2, 3), dtypes=NUMERIC, unspecified=True),
    C("empty.memory_format", [2, 3], dtypes=(F32,), unspecified=True),
    C("new_zeros.default", T(2, 3), [3, 2], dtypes=ALL),
    C("new_ones.default", T(2, 3), [4], dtypes=ALL),
    C("new_full.default", T(2, 3), [2, 2], 3, dtypes=ALL),
    C("new_full.default", T(2, 3), [2, 1], 2.5, dtype=F32, dtypes=NUMERIC),
    C("new_empty.default", T(2, 3), [2, 3], dtypes=NUMERIC, unspecified=True),
    C("new_zeros.default", T(2, 3), [3, 1], dtypes=ALL),
    C("new_ones.default", T(2), [], dtype=BOOL, dtypes=ALL),
    C("new_full.default", T(2), [2, 2], 7, dtypes=NUMERIC),
    C("new_full.default", T(2), [3], -2.5, dtypes=FLOATS),
    # Products and networks' layers.
    C("matmul.default", T(2, 3, 4, edges=False), T(4, 5, edges=False)),
    C("matmul.default", T(4, edges=False), T(2, 4, 3, edges=False)),
    C("linear.default", T(2, 4, edges=False), T(3, 4, edges=False), T(3, edges=False)),
    # Compound ops, folded as the steps torch computes them by.
    *[C(t, T(2, 3, edges=False), T(2, 4, edges=False), T(8, 3, edges=False),
        T(8, 4, edges=False), T(8, edges=False), T(8, edges=False), dtypes=(F32,))
      for t in ("rnn_tanh_cell.default", "rnn_relu_cell.default")],
    # A ReLU RNN layer unrolled: one layer both ways batch-first with biases (its given
    # initial state not zero), and two time-major layers without.
    C("rnn_relu.input", T(2, 5, 3, edges=False), T(2, 2, 4, edges=False),
      [T(4, 3, edges=False), T(4, 4, edges=False), T(4, edges=False), T(4, edges=False)] * 2,
      True, 1, 0.0, False, True, True, dtypes=(F32,)),
    C("rnn_relu.input", T(5, 2, 3, edges=False), T(2, 2, 4, edges=False),
      [T(4, 3, edges=False), T(4, 4, edges=False), T(4, 4, edges=False), T(4, 4, edges=False)],
      False, 2, 0.0, False, False, False, dtypes=(F32,)),
    C("gru_cell.default", T(2, 3, edges=False), T(2, 4, edges=False), T(12, 3, edges=False),
      T(12, 4, edges=False), T(12, edges=False), T(12, edges=False), dtypes=(F32,)),
    C("lstm_cell.default", T(2, 3, edges=False), [T(2, 4, edges=False), T(2, 4, edges=False)],
      T(16, 3, edges=False), T(16, 4, edges=False), dtypes=(F32,)),
    C("bilinear.default", T(2, 3, edges=False), T(2, 4, edges=False), T(5, 3, 4, edges=False),
      T(5, edges=False), dtypes=(F32,)),
    C("cross.default", T(2, 3), T(2, 3), dtypes=(F32, I64)),
    C("linalg_cross.default", T(3, 4), T(1, 4), dim=0, dtypes=(F32,)),
    C("block_diag.default", [T(2, 3), T(4), T()], dtypes=(F32, I64)),
    C("_softmax_backward_data.default", T(2, 5, edges=False), T(2, 5, edges=False), 1, F32,
      dtypes=(F32,)),
    C("native_dropout_backward.default", T(2, 5), T(2, 5, dtype=BOOL), 2.0, dtypes=(F32,)),
    *[C(t, T(3, 5, edges=False), T(5, edges=False), dtypes=(F32,))
      for t in ("trapz.x", "trapezoid.x", "cumulative_trapezoid.x")],
    C("trapezoid.x", T(3, 5, edges=False), T(3, 1, edges=False), dim=0, dtypes=(F32,)),
    C("isin.Tensor_Tensor", T(2, 5), T(3), dtypes=(F32, I64)),
    C("isin.Tensor_Tensor", T(2, 5), T(2, 2), invert=True, dtypes=(I64,)),
    C("diagonal_scatter.default", T(3, 4), T(3), 1, dtypes=ALL),
    C("diagonal_scatter.default", T(2, 3, 4), T(3, 2), -1, 0, 1, dtypes=(F32,)),
    C("bmm.default", T(2, 3, 4, edges=False), T(2, 4, 2, edges=False)),
    C("mm.default", T(3, 4, edges=False), T(4, 2, edges=False)),
    C("outer.default", T(3), T(4)),
    C("mv.default", T(3, 4, edges=False), T(4, edges=False)),
    C("addmv.default", T(3), T(3, 4, edges=False), T(4, edges=False), beta=0.5, alpha=2.0),
    C("addr.default", T(3, 4), T(3), T(4), beta=2.0, alpha=0.5),
    C("addr.default", T(1, 4), T(3), T(4), beta=0),
    C("addbmm.default", T(3, 2), T(2, 3, 4, edges=False), T(2, 4, 2, edges=False),
      beta=0.5, alpha=2.0),
    C("kron.default", T(2, 3), T(3, 2)),
    C("dot.default", T(4, edges=False), T(4, edges=False)),
    C("vdot.default", T(4, edges=False), T(4, edges=False)),
    C("inner.default", T(2, 4, edges=False), T(3, 4, edges=False)),
    C("inner.default", T(), T(2, 3)),
    C("kron.default", T(3), T(2, 2)),
    C("tensordot.default", T(2, 3, 4, edges=False), T(4, 3, 2, edges=False), [2, 1], [0, 1]),
    C("tensordot.default", T(2, 3, edges=False), T(3, 4, edges=False), [], []),
    C("addmm.default", T(2, edges=False), T(3, 4, edges=False), T(4, 2, edges=False)),
    C("addmm.default", T(3, 2), T(3, 4, edges=False), T(4, 2, edges=False), beta=0.5, alpha=2.0),
    C("baddbmm.default", T(2, 3, 2), T(2, 3, 4, edges=False), T(2, 4, 2, edges=False),
      beta=0.5, alpha=2.0),
    C("baddbmm.default", T(1, 2), T(2, 3, 4, edges=False), T(2, 4, 2, edges=False), beta=0),
    C("einsum.default", "bij,bjk->bik", [T(2, 3, 4, edges=False), T(2, 4, 5, edges=False)]),
    C("einsum.default", "ii->i", [T(3, 3)]),
    C("embedding.default", T(5, 3), T(2, 4, dtype=I64, low=0, high=5)),
    # Bags cut by offsets (an empty one, a padding id from the end), per-sample weights,
    # the last offset closing the last bag.
    *[C(t, T(5, 3), T(7, dtype=I64, values=[0, 2, 4, 1, 1, 3, 4]),
        T(4, dtype=I64, values=[0, 3, 3, 5]), False, mode, results=1, **extra)
      for t in ("embedding_bag.default", "embedding_bag.padding_idx")
      for mode in (0, 1, 2)
      for extra in ([{}] if t == "embedding_bag.default" else
                    [dict(sparse=False, per_sample_weights=None, include_last_offset=False,
                          padding_idx=-1)])],
    C("embedding_bag.default", T(5, 3), T(7, dtype=I64, values=[0, 2, 4, 1, 1, 3, 4]),
      T(5, dtype=I64, values=[0, 3, 3, 5, 7]), False, 0, False, T(7, edges=False), True,
      results=1),
    C("embedding_renorm.default", T(5, 3), T(2, 2, dtype=I64, values=[0, 2, 2, 4]), 1.0, 2.0),
    C("embedding_renorm_.default", T(5, 3), T(3, dtype=I64, values=[1, 3, 4]), 0.5, 1.0),
    # Indices clamped into their dimensions (negative ones count from the end); its
    # accumulating put is not evaluated (its step `index_put` is not).
    C("_unsafe_masked_index.default", T(4, 3), T(5, 3, dtype=BOOL),
      [T(5, 1, dtype=I64, values=[0, 3, -2, 7, -9]), T(3, dtype=I64, values=[2, 0, 5])], 2.5,
      dtypes=NUMERIC),
    C("scaled_dot_product_attention.default", T(2, 2, 3, 4, edges=False),
      T(2, 2, 5, 4, edges=False), T(2, 2, 5, 3, edges=False)),
    C("scaled_dot_product_attention.default", T(1, 2, 4, 4, edges=False),
      T(1, 2, 4, 4, edges=False), T(1, 2, 4, 4, edges=False), is_causal=True, scale=0.3),
    C("scaled_dot_product_attention.default", T(1, 4, 3, 4, edges=False),
      T(1, 2, 3, 4, edges=False), T(1, 2, 3, 4, edges=False),
      T(3, 3, dtype=BOOL, values=[1, 0, 0, 1, 1, 0, 1, 1, 1]), enable_gqa=True),
    C("conv1d.default", T(2, 4, 9, edges=False), T(6, 2, 3, edges=False), T(6), [2], [1],
      [2], 2),
    C("conv1d.padding", T(1, 2, 7, edges=False), T(3, 2, 3, edges=False), None, [1], "same"),
    C("conv2d.default", T(1, 2, 5, 6, edges=False), T(4, 2, 3, 2, edges=False), T(4),
      [2, 1], [1, 0]),
    C("conv2d.padding", T(1, 2, 5, 6, edges=False), T(4, 1, 3, 3, edges=False), None,
      [1, 1], "valid", [1, 1], 2),
    C("conv3d.default", T(1, 2, 4, 5, 3, edges=False), T(3, 2, 2, 3, 2, edges=False)),
    C("conv3d.padding", T(1, 2, 4, 5, 3, edges=False), T(3, 2, 3, 3, 1, edges=False), T(3),
      [1, 1, 1], "same"),
    C("convolution.default", T(1, 2, 5, 5, edges=False), T(3, 2, 3, 3, edges=False), T(3),
      [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
    C("convolution.default", T(1, 2, 4, 4, edges=False), T(2, 3, 3, 3, edges=False), None,
      [2, 2], [1, 1], [1, 1], True, [1, 1], 1),
    C("_convolution.default", T(1, 2, 5, 5, edges=False), T(3, 2, 3, 3, edges=False), T(3),
      [1, 1], [1, 1], [1, 1], False, [0, 0], 1, False, False, True, True),
    C("_convolution.default", T(1, 2, 4, 4, edges=False), T(2, 3, 3, 3, edges=False), None,
      [2, 2], [1, 1], [1, 1], True, [1, 1], 1, False, False, True, True),
    C("conv_transpose1d.default", T(1, 4, 5, edges=False), T(4, 3, 3, edges=False), T(6),
      [2], [1], [1], 2),
    C("conv_transpose2d.input", T(1, 2, 3, 4, edges=False), T(2, 3, 3, 2, edges=False), None,
      [2, 1], [1, 0], [1, 0], 1, [1, 2]),
    C("conv_transpose3d.input", T(1, 2, 2, 3, 2, edges=False), T(2, 2, 2, 2, 2, edges=False)),
    C("max_pool1d.default", T(2, 3, 9), [3], [2], [1], [1], True),
    C("max_pool1d_with_indices.default", T(2, 3, 9, edges=False), [2]),
    C("max_pool2d.default", T(1, 2, 5, 6), [3, 2], [2, 2], [1, 1], [1, 2], True),
    C("max_pool2d_with_indices.default", T(1, 2, 5, 6, edges=False), [2, 3], [2, 1], [1, 1]),
    C("max_pool3d.default", T(1, 2, 4, 5, 3), [2, 2, 2]),
    C("max_pool3d_with_indices.default", T(1, 2, 4, 5, 3, edges=False), [2, 3, 2], [1, 2, 1]),
    C("avg_pool1d.default", T(2, 3, 9, edges=False), [3], [2], [1], True, False),
    C("avg_pool2d.default", T(1, 2, 5, 6, edges=False), [3, 3], [2, 2], [1, 1], True, True),
    C("avg_pool2d.default", T(1, 2, 5, 6, edges=False), [2, 2], [], [1, 0], False, False, 3),
    C("avg_pool3d.default", T(1, 2, 4, 5, 3, edges=False), [2, 2, 2], [1, 2, 1]),
    C("adaptive_avg_pool1d.default", T(2, 3, 7, edges=False), [3]),
    C("adaptive_avg_pool2d.default", T(1, 2, 5, 7, edges=False), [3, 2]),
    C("adaptive_avg_pool3d.default", T(1, 2, 4, 5, 3, edges=False), [2, 3, 1]),
    # Adaptive max pooling with its indices: torch's scan (NaN, ±inf among the values).
    C("adaptive_max_pool1d.default", T(2, 3, 7), [3], dtypes=(F32,)),
    C("adaptive_max_pool2d.default", T(1, 2, 5, 7), [3, 2], dtypes=(F32,)),
    C("adaptive_max_pool3d.default", T(1, 2, 4, 5, 3), [2, 3, 1], dtypes=(F32,)),
    # Fractional max pooling by given samples: torch's windows and scan.
    C("fractional_max_pool2d.default", T(2, 2, 7, 6), [2, 2], [3, 4],
      T(2, 2, 2, values=[0.1, 0.9, 0.5, 0.0, 0.99, 0.3, 0.7, 0.25]), dtypes=(F32,)),
    C("fractional_max_pool3d.default", T(2, 5, 4, 6), [2, 1, 3], [3, 4, 2],
      T(1, 2, 3, values=[0.6, 0.2, 0.8, 0.05, 0.5, 0.95]), dtypes=(F32,)),
    # The torch.fft transforms whose result is real, and the shifts.
    C("fft_irfft.default", T(2, 5, edges=False), 8, 1, "ortho", dtypes=(F32,)),
    C("fft_hfft.default", T(2, 5, edges=False), dtypes=(F32,)),
    C("fft_irfft2.default", T(2, 3, 4, edges=False), [3, 6], dtypes=(F32,)),
    C("fft_hfft2.default", T(2, 3, 4, edges=False), None, [0, 2], "forward", dtypes=(F32,)),
    C("fft_irfftn.default", T(2, 3, 4, edges=False), None, [0, 1, 2], dtypes=(F32,)),
    C("fft_hfftn.default", T(2, 3, 4, edges=False), [4, -1], dtypes=(F32,)),
    C("fft_fftshift.default", T(3, 4), dtypes=ALL),
    C("fft_ifftshift.default", T(3, 5), [1], dtypes=ALL),
    # argsort: NaN last ascending, first descending, ties in input order when stable.
    C("argsort.stable", T(3, 6), stable=True, dim=1, dtypes=(F32,)),
    C("argsort.stable", T(3, 6), stable=True, dim=0, descending=True, dtypes=(F32,)),
    C("argsort.default", T(3, 6, edges=False), 1, True, dtypes=(F32,)),
    C("nansum.default", T(2, 5), [1], dtypes=(F32,)),
    C("nanmean.default", T(2, 5), [0, 1], True, dtypes=(F32,)),
    C("batch_norm.default", T(2, 3, 4, edges=False), T(3), T(3), T(3), T(3, positive=True),
      False, 0.1, 1e-5, False),
    C("batch_norm.default", T(2, 3, 4, edges=False), None, None, None, None, True, 0.1, 1e-5,
      False),
    C("_native_batch_norm_legit.no_stats", T(2, 3, 4, edges=False), T(3, edges=False), T(3, edges=False), True, 0.1,
      1e-5),
    C("_native_batch_norm_legit_functional.default", T(2, 3, 4, edges=False), T(3, edges=False), T(3, edges=False),
      T(3, edges=False), T(3, positive=True), True, 0.1, 1e-5),
    C("_native_batch_norm_legit_no_training.default", T(2, 3, 4, edges=False), T(3, edges=False), T(3, edges=False),
      T(3, edges=False), T(3, positive=True), 0.1, 1e-5),
    C("layer_norm.default", T(2, 3, 4, edges=False), [3, 4], T(3, 4, edges=False), T(3, 4, edges=False), 1e-5),
    C("layer_norm.default", T(2, 3, 4, edges=False), [4]),
    C("native_layer_norm.default", T(2, 3, 4, edges=False), [4], T(4, edges=False), T(4, edges=False), 1e-5),
    C("group_norm.default", T(2, 4, 3, edges=False), 2, T(4, edges=False), T(4, edges=False), 1e-5),
    C("instance_norm.default", T(2, 3, 4, edges=False), T(3, edges=False), T(3, edges=False), None, None, True, 0.1,
      1e-5, False),
    C("rms_norm.default", T(2, 3, 4, edges=False), [4], T(4, edges=False), 1e-6),
    C("rms_norm.default", T(2, 3, 4, edges=False), [3, 4]),
    C("_weight_norm.default", T(4, 3, edges=False), T(4, 1, positive=True), 0),
    C("im2col.default", T(1, 2, 5, 4, edges=False), [2, 3], [1, 1], [1, 0], [2, 1]),
    C("col2im.default", T(1, 12, 6, edges=False), [4, 5], [2, 3], [1, 1], [0, 1], [2, 2]),
    C("upsample_nearest1d.vec", T(1, 2, 5, edges=False), [8], None),
    C("upsample_nearest1d.default", T(1, 2, 5, edges=False), [12]),
    C("upsample_nearest2d.vec", T(1, 2, 3, 4, edges=False), None, [2.0, 1.5]),
    C("upsample_nearest2d.default", T(1, 2, 3, 4, edges=False), [5, 7]),
    C("upsample_nearest3d.vec", T(1, 1, 2, 3, 2, edges=False), [3, 5, 4], None),
    C("upsample_nearest3d.default", T(1, 1, 2, 3, 2, edges=False), [4, 6, 4]),
    C("upsample_linear1d.vec", T(1, 2, 5, edges=False), [8], False, None),
    C("upsample_linear1d.default", T(1, 2, 5, edges=False), [3], True),
    C("upsample_bilinear2d.vec", T(1, 2, 3, 4, edges=False), None, False, [2.0, 1.5]),
    C("upsample_bilinear2d.vec", T(1, 2, 3, 4, edges=False), [5, 7], True, None),
    C("upsample_bilinear2d.default", T(1, 2, 3, 4, edges=False), [6, 8], False),
    C("upsample_trilinear3d.vec", T(1, 1, 2, 3, 2, edges=False), [3, 5, 4], False, None),
    C("upsample_trilinear3d.default", T(1, 1, 2, 3, 2, edges=False), [4, 6, 4], True),
    # Grids drawn from randn·2 reach past [-1, 1] on every side.
    C("grid_sampler_2d.default", T(2, 3, 4, 5, edges=False), T(2, 3, 4, 2, edges=False),
      0, 0, False, dtypes=(F32,)),
    C("grid_sampler_2d.default", T(2, 3, 4, 5, edges=False), T(2, 3, 4, 2, edges=False),
      1, 1, True, dtypes=(F32,)),
    C("grid_sampler_2d.default", T(2, 3, 4, 5, edges=False), T(2, 3, 4, 2, edges=False),
      2, 2, False, dtypes=(F32,)),
    C("grid_sampler_2d.default", T(2, 3, 4, 5, edges=False), T(2, 3, 4, 2, edges=False),
      0, 2, True, dtypes=(F32,)),
    C("grid_sampler.default", T(1, 2, 3, 3, edges=False), T(1, 5, 2, 2, edges=False),
      2, 0, True, dtypes=(F32,)),
    C("grid_sampler_3d.default", T(2, 2, 3, 4, 5, edges=False), T(2, 3, 2, 4, 3, edges=False),
      0, 0, False, dtypes=(F32,)),
    C("grid_sampler_3d.default", T(1, 2, 3, 4, 2, edges=False), T(1, 2, 3, 2, 3, edges=False),
      1, 2, True, dtypes=(F32,)),
    C("grid_sampler.default", T(1, 2, 3, 2, 4), T(1, 4, 2, 3, 3), 0, 1, False, dtypes=(F32,)),
    C("upsample_bicubic2d.vec", T(1, 2, 3, 4, edges=False), [6, 9], False, None),
    C("upsample_bicubic2d.vec", T(1, 2, 4, 4, edges=False), None, True, [1.5, 2.0]),
    C("upsample_bicubic2d.default", T(1, 2, 3, 4, edges=False), [5, 5], True),
    # Factors whose products torch floors: sources at 1 / factor, not in / out.
    C("upsample_nearest1d.vec", T(1, 2, 4, edges=False), None, [1.7]),
    C("upsample_bilinear2d.vec", T(1, 2, 4, 4, edges=False), None, False, [1.7, 0.6]),
    C("upsample_bicubic2d.vec", T(1, 2, 4, 4, edges=False), None, False, [0.6, 1.7]),
    C("_upsample_nearest_exact1d.vec", T(1, 2, 4, edges=False), [3], None),
    C("_upsample_nearest_exact1d.default", T(1, 2, 5, edges=False), [7]),
    C("_upsample_nearest_exact2d.vec", T(1, 2, 4, 4, edges=False), None, [0.6, 1.7]),
    C("_upsample_nearest_exact2d.default", T(1, 2, 3, 4, edges=False), [5, 3]),
    C("_upsample_nearest_exact3d.vec", T(1, 1, 4, 3, 5, edges=False), [3, 2, 4], None),
    C("_upsample_nearest_exact3d.default", T(1, 1, 2, 3, 2, edges=False), [4, 6, 3]),
    C("_upsample_bilinear2d_aa.vec", T(1, 2, 3, 4, edges=False), [3, 4], False, None),
    C("_upsample_bicubic2d_aa.vec", T(1, 2, 3, 4, edges=False), [3, 4], False, None),
    C("_upsample_bilinear2d_aa.vec", T(1, 2, 6, 8, edges=False), [3, 5], False, None),
    C("_upsample_bicubic2d_aa.vec", T(1, 2, 6, 8, edges=False), None, True, [0.5, 0.7]),
    C("_upsample_bilinear2d_aa.default", T(1, 2, 6, 8, edges=False), [4, 3], True),
    C("_upsample_bicubic2d_aa.default", T(1, 2, 6, 8, edges=False), [9, 5], False),
    # Factories (no tensor operand).
    C("arange.default", 7, dtypes=(F32,)),
    C("arange.default", 4.5, dtypes=(F32,)),
    C("arange.start", -3, 4, dtype=F32, dtypes=(F32,)),
    C("arange.start_step", 0.0, 1.0, 0.125, dtypes=(F32,)),
    C("arange.start_step", 10, 0, -3, dtypes=(F32,)),
    C("zeros.default", [2, 3], dtypes=(F32,)),
    C("eye.default", 3, dtypes=(F32,)),
    C("eye.m", 2, 4, dtype=I64, dtypes=(F32,)),
    C("eye.m", 4, 0, dtypes=(F32,)),
    C("ones.default", [2, 3], dtype=I64, dtypes=(F32,)),
    C("full.default", [2, 3], -2.5, dtypes=(F32,)),
    C("full.default", [2, 3], 7, dtypes=(F32,)),
    C("full.default", [2], float("-inf"), dtypes=(F32,)),
    C("scalar_tensor.default", 3, dtypes=(F32,)),
    C("scalar_tensor.default", -1.25, dtype=F32, dtypes=(F32,)),
]


def materialise(case, dtype, gen):
    """The case's arguments with buffers for its tensors (`buffers` in order), or None when
    torch refuses the op for this dtype."""
    buffers = []

    def make(a):
        if isinstance(a, T):
            buffers.append(a.make(dtype, gen))
            return ("buffer", len(buffers) - 1)
        if isinstance(a, list):
            return [make(x) for x in a]
        return a

    args = [make(a) for a in case.args]
    kwargs = {k: make(v) for k, v in case.kwargs.items()}
    return args, kwargs, buffers


def resolve(a, bufs):
    if isinstance(a, tuple) and len(a) == 2 and a[0] == "buffer":
        return bufs[a[1]]
    if isinstance(a, list):
        return [resolve(x, bufs) for x in a]
    return a


class Constants(torch.nn.Module):
    """One output per case: `x + op(buffers)` for each of the case's tensor results."""

    def __init__(self, calls):
        super().__init__()
        self.calls = []
        for k, (case, args, kwargs, buffers) in enumerate(calls):
            names = []
            for j, b in enumerate(buffers):
                name = f"c{k}_{j}"
                self.register_buffer(name, b)
                names.append(name)
            self.calls.append((case, args, kwargs, names))

    def results(self):
        out = []
        for case, args, kwargs, names in self.calls:
            bufs = [getattr(self, n) for n in names]
            if case.in_place() and bufs:
                bufs = [bufs[0].clone(), *bufs[1:]]
            y = case.op()(*resolve(args, bufs), **{k: resolve(v, bufs) for k, v in kwargs.items()})
            ys = list(y) if isinstance(y, (tuple, list)) else [y]
            out.append(ys[:case.results] if case.results else ys)
        return out

    def forward(self, x):
        flat = []
        for ys in self.results():
            for y in ys:
                if y.numel():
                    flat.append(x.reshape([-1] + [1] * y.dim()) + y.to(torch.float32))
        return tuple(flat)


def calls_for(cases):
    gen = torch.Generator().manual_seed(2026)
    calls = []
    for case in cases:
        for dtype in case.dtypes:
            args, kwargs, buffers = materialise(case, dtype, gen)
            try:
                Constants([(case, args, kwargs, buffers)]).results()
            except (RuntimeError, TypeError, ValueError, NotImplementedError):
                continue  # torch refuses the op for this dtype
            calls.append((case, args, kwargs, buffers, dtype))
    return calls


def convert(calls, tmp_path, tag):
    model = Constants([c[:4] for c in calls]).eval()
    x = torch.zeros(2)
    program = torch.export.export(model, (x,),
                                  dynamic_shapes=({0: torch.export.Dim("batch")},))
    archive = tmp_path / f"{tag}.pt2"
    torch.export.save(program, str(archive))
    out = tmp_path / f"{tag}.onnx"
    proc = run_ckpt("to-onnx", archive, "-o", out)
    return model, program, proc, out


def check(calls, model, out):
    """The failures among `calls`, comparing onnxruntime at x = 0 with torch."""
    proto = onnx.load(str(out))
    inits = {i.name for i in proto.graph.initializer}
    # Folded: every node reads the input (or a node that does), none only initializers.
    live = {i.name for i in proto.graph.input}
    for node in proto.graph.node:
        if any(i in live for i in node.input):
            live.update(node.output)
        else:
            return [f"{node.op_type}({', '.join(node.input)}) computes from "
                    f"initializers {sorted(set(node.input) & inits)}: not folded"]
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    got = session.run(None, {session.get_inputs()[0].name: np.zeros(1, np.float32)})
    failures = []
    with torch.no_grad():
        results = model.results()
    k = 0
    for (case, _, _, _, dtype), ys in zip(calls, results):
        for y in filter(torch.Tensor.numel, ys):
            ref = y.to(torch.float32).numpy()
            g = got[k].reshape(ref.shape)
            k += 1
            if dtype == F16 or y.dtype == F16:
                # torch accumulates products and sums of float16 in float16 on the CPU.
                rtol, atol = 2e-2, 2e-2
            elif y.dtype.is_floating_point:
                rtol, atol = case.tol or 1e-5, case.tol or 1e-5
            else:
                rtol, atol = 0, 0
            if case.unspecified:
                continue
            if not np.allclose(g, ref, rtol=rtol, atol=atol, equal_nan=True):
                bad = ~np.isclose(g, ref, rtol=rtol, atol=atol, equal_nan=True)
                failures.append(f"{case.target} {dtype} -> {y.dtype}: ckpt {g[bad][:4]} "
                                f"torch {ref[bad][:4]}")
    return failures


def run_group(cases, tmp_path, tag):
    calls = calls_for(cases)
    model, _, proc, out = convert(calls, tmp_path, tag)
    if proc.returncode == 0:
        return check(calls, model, out), len(calls)
    # Case by case, so each failure names its op.
    failures = []
    for i, call in enumerate(calls):
        model, _, proc, out = convert([call], tmp_path, f"{tag}_{i}")
        if proc.returncode != 0:
            failures.append(f"{call[0].target} {call[4]}: {proc.stderr.strip()[:300]}")
        else:
            failures.extend(check([call], model, out))
    return failures, len(calls)


ROWS, NOT_EVALUATED = schema_rows()
GROUPS = 4


def test_every_evaluated_schema_row_has_a_case():
    assert len(ROWS) >= 200, f"only {len(ROWS)} rows read from {DOC}"
    covered = {c.target for c in CASES}
    missing = [r for r in ROWS
               if r not in covered and r not in SIZES_ONLY | DATA_SIZED
               and r not in NOT_EVALUATED]
    assert not missing, f"schema rows without an oracle case: {missing}"


@pytest.mark.parametrize("group", range(GROUPS))
def test_constants_evaluate_as_torch(group, tmp_path):
    cases = CASES[group::GROUPS]
    failures, count = run_group(cases, tmp_path, f"group{group}")
    print(f"group {group}: {count} calls over {len(cases)} cases")
    assert not failures, "\n".join(failures)
