//! `_cdist_forward` (`torch.cdist`): the p-norm distance of every row of `x1` to every row
//! of `x2`, within each sample, as torch's CPU kernel computes it directly
//! (`cdist_impl`): `(Σ |a − b|ᵖ)^(1/p)`, with p = 0 counting the differing entries,
//! p = 1 summing absolute differences, p = 2 the root of the summed squares and p = ∞ the
//! largest absolute difference. For p = 2 on more than 25 rows of either operand (or
//! `compute_mode` 1) torch computes through a matrix product, `|a|² + |b|² − 2a·b`, whose
//! cancellation a graph of the direct differences would not reproduce: refused.

use crate::aten::args::Args;
use crate::aten::program::{Argument, Node};
use crate::onnx::elem::ElemType;
use crate::onnx::OnnxError;

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::{arg_error, OrShape};

/// Rows above which torch's `use_mm_for_euclid_dist_if_necessary` (compute_mode 0 or None)
/// computes p = 2 by a matrix product (`cdist_impl`).
const MM_ROWS: u64 = 25;

impl<'p> Lowering<'p, '_> {
    /// `_cdist_forward(x1, x2, p, compute_mode)` of an activation `x1` `[N, P, M]` and an
    /// activation `[N, R, M]` or a constant `[R, M]`.
    pub(super) fn cdist(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let p = args.float("p").or_shape()?;
        let mode = match args.get("compute_mode") {
            None | Some(Argument::None) => 0,
            Some(_) => args.int("compute_mode").or_shape()?,
        };
        let x1 = self.activation(args.tensor("x1").or_shape()?)?;
        let &[rows1, width] = x1.shape() else {
            return Err(arg_error(format!(
                "cdist of per-sample {:?}: only [rows, features] per sample is exported",
                x1.shape()
            )));
        };
        let x2_name = args.tensor("x2").or_shape()?;
        let (x2, rows2) = if self.is_constant(x2_name) {
            let w = self.constant_weight(x2_name)?;
            let rows2 = match w.dims() {
                [r, m] if *m == width => *r,
                dims => {
                    return Err(arg_error(format!(
                        "cdist of per-sample [{rows1}, {width}] and a constant {dims:?}"
                    )))
                }
            };
            (Operand2::Constant(w), rows2)
        } else {
            let t = self.activation(x2_name)?;
            let rows2 = match t.shape() {
                [r, m] if *m == width => *r,
                shape => {
                    return Err(arg_error(format!(
                        "cdist of per-sample [{rows1}, {width}] and {shape:?}"
                    )))
                }
            };
            let t = self.g.reshape(scope, &t, &[1, rows2, width])?;
            (Operand2::Activation(t), rows2)
        };
        let by_product = p == 2.0 && (mode == 1 || (mode == 0 && rows1.max(rows2) > MM_ROWS));
        if by_product {
            return Err(arg_error(format!(
                "cdist with p = 2 of {rows1} and {rows2} rows: torch computes it as |a|² + |b|² − 2a·b (a matrix product, above {MM_ROWS} rows or with compute_mode 1), whose rounding a graph of the differences would not reproduce; pass compute_mode='donot_use_mm_for_euclid_dist'"
            )));
        }
        if p.is_nan() || p < 0.0 {
            return Err(arg_error(format!("cdist with p = {p}: torch needs p ≥ 0")));
        }
        let a = self.g.reshape(scope, &x1, &[rows1, 1, width])?;
        let b = match &x2 {
            Operand2::Activation(v) => Operand::Activation(v),
            Operand2::Constant(w) => Operand::Constant(w),
        };
        let diff = emit::binary(&mut self.g, "Sub", scope, Operand::Activation(&a), b)?;
        let g = &mut self.g;
        let size = g.unary("Abs", scope, &diff, vec![]);
        let y = if p == 0.0 {
            let zero = g.constant_scalar(&format!("{scope}.zero"), 0.0);
            let same = emit::typed(
                g,
                "Equal",
                scope,
                [size.name(), zero.name()],
                size.shape(),
                ElemType::Bool,
            );
            let differs = g.unary("Not", scope, &same, vec![]);
            let count = emit::cast(g, scope, &differs, ElemType::Float32);
            g.reduce("ReduceSum", scope, &count, &[2], false)?
        } else if p == 1.0 {
            g.reduce("ReduceSum", scope, &size, &[2], false)?
        } else if p == 2.0 {
            let squares = g.mul(scope, &diff, &diff)?;
            let sum = g.reduce("ReduceSum", scope, &squares, &[2], false)?;
            g.sqrt(scope, &sum)
        } else if p.is_infinite() {
            g.reduce("ReduceMax", scope, &size, &[2], false)?
        } else {
            let power = g.constant_scalar(&format!("{scope}.p"), p as f32);
            let root = g.constant_scalar(&format!("{scope}.inverse_p"), (1.0 / p) as f32);
            let powered = emit::typed(
                g,
                "Pow",
                scope,
                [size.name(), power.name()],
                size.shape(),
                ElemType::Float32,
            );
            let sum = g.reduce("ReduceSum", scope, &powered, &[2], false)?;
            emit::typed(
                g,
                "Pow",
                scope,
                [sum.name(), root.name()],
                sum.shape(),
                ElemType::Float32,
            )
        };
        self.bind(node, 0, y)
    }
}

/// The second operand in the graph: an activation viewed as `[1, R, M]` per sample, or a
/// constant `[R, M]`.
enum Operand2 {
    Activation(crate::onnx::graph::Value),
    Constant(crate::onnx::graph::Weight),
}
