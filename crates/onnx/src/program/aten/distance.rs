//! `_cdist_forward` (`torch.cdist`) and `_pdist_forward` (`torch.pdist`): the distance
//! of rows, each pair's norm of differences ([`ckpt_aten::distance`]), computed directly
//! as torch's CPU kernels do. `cdist` works within each sample; `pdist` pairs the rows of
//! a static tensor. `cdist`'s matrix-product branch is refused.

use crate::elem::ElemType;
use crate::graph::{Attr, GraphBuilder, Value};
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::distance::{self, NanInMax, Norm};
use ckpt_aten::program::{Argument, Node};

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::{arg_error, OrShape};

impl<'p> Lowering<'p, '_> {
    /// `_cdist_forward(x1, x2, p, compute_mode)` of an activation `x1` `[N, P, M]` and an
    /// activation `[N, R, M]` or a constant `[R, M]`.
    pub(super) fn cdist(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let norm = Norm::of_p("cdist", args.float("p").or_shape()?).map_err(arg_error)?;
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
        distance::cdist_directly(norm, mode, rows1, rows2).map_err(arg_error)?;
        let a = self.g.reshape(scope, &x1, &[rows1, 1, width])?;
        let b = match &x2 {
            Operand2::Activation(v) => Operand::Activation(v),
            Operand2::Constant(w) => Operand::Constant(w),
        };
        let diff = emit::binary(&mut self.g, "Sub", scope, Operand::Activation(&a), b)?;
        let y = p_norm(&mut self.g, scope, &diff, norm, NanInMax::Skipped, 2)?;
        self.bind(node, 0, y)
    }

    /// `_pdist_forward(self, p)` (`torch.pdist`, `F.pdist`): the p-norm distance of every
    /// pair of rows `i < j` of a 2-D tensor, in torch's order (row 0 with rows 1, 2, …,
    /// then row 1 with rows 2, …), computed directly as torch's CPU kernel does
    /// (`pdist_calc`; it has no matrix-product branch). Exported static: under a dynamic
    /// batch the rows are the samples, and every distance mixes two of them.
    pub(super) fn pdist(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let norm = Norm::of_p("pdist", args.float("p").or_shape()?).map_err(arg_error)?;
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        if !self.is_lifted() {
            return Err(arg_error(PAIRS_SAMPLES.into()));
        }
        let &[rows, width] = x.shape() else {
            return Err(arg_error(format!(
                "pdist of {:?}: torch takes a 2-D tensor",
                x.shape()
            )));
        };
        // Row i against row j at [i, j] of every difference, then the pairs i < j read
        // from the flattened distances (a Gather reads only constant tables in ATC).
        let pairs: Vec<f64> = distance::pairs(rows)
            .map(|(i, j)| (i * rows + j) as f64)
            .collect();
        if pairs.is_empty() {
            return Err(arg_error(format!(
                "pdist of {rows} row: it has no pair, so its result is empty, which ATC does not compile"
            )));
        }
        if self.g.opset().version() < 11 {
            return Err(arg_error(
                "pdist reads its pairs with GatherElements from opset 11; pass --opset 11".into(),
            ));
        }
        let a = self.g.reshape(scope, &x, &[rows, 1, width])?;
        let b = self.g.reshape(scope, &x, &[1, rows, width])?;
        let diff = emit::binary(
            &mut self.g,
            "Sub",
            scope,
            Operand::Activation(&a),
            Operand::Activation(&b),
        )?;
        let all = p_norm(&mut self.g, scope, &diff, norm, NanInMax::Kept, 2)?;
        let all = self.g.reshape(scope, &all, &[rows * rows])?;
        let count = pairs.len() as u64;
        // The lifted row is the index's first dimension, as GatherElements needs its rank.
        let index = self.g.typed_constant(
            &format!("{scope}.pairs"),
            vec![1, count],
            &pairs,
            ElemType::Int64,
        )?;
        let y = emit::single(self.g.node(
            "GatherElements",
            scope,
            vec![all.name().to_owned(), index.name().to_owned()],
            vec![("axis", Attr::Int(1))],
            vec![vec![count]],
        ));
        self.bind(node, 0, y)
    }
}

/// Why `pdist` is refused under a dynamic batch.
const PAIRS_SAMPLES: &str = "it pairs every row of its 2-D input with every other row, and the rows are the samples under a dynamic batch, so each result mixes two samples; export the program at a fixed batch (`--batch static`)";

/// `norm` of the differences `diff` along per-sample `axis`, NaN as
/// [`Norm::distance`] makes it.
fn p_norm(
    g: &mut GraphBuilder,
    scope: &str,
    diff: &Value,
    norm: Norm,
    nan: NanInMax,
    axis: usize,
) -> Result<Value, OnnxError> {
    let size = g.unary("Abs", scope, diff, vec![]);
    Ok(match norm {
        Norm::Count => {
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
            let count = g.reduce("ReduceSum", scope, &count, &[axis], false)?;
            let held = g.any_nan(scope, &size, &[axis], false)?;
            g.nan_where(scope, &held, &count)?
        }
        Norm::Sum => g.reduce("ReduceSum", scope, &size, &[axis], false)?,
        Norm::Euclidean => {
            let squares = g.mul(scope, diff, diff)?;
            let sum = g.reduce("ReduceSum", scope, &squares, &[axis], false)?;
            g.sqrt(scope, &sum)
        }
        Norm::Max => {
            let size = match nan {
                NanInMax::Kept => size,
                NanInMax::Skipped => {
                    let flags = g.nan_flags(scope, &size);
                    g.fill_where(scope, &flags, 0.0, &size)?
                }
            };
            // `reduce` returns NaN where one was among the values, which are NaN-free
            // when skipped.
            g.reduce("ReduceMax", scope, &size, &[axis], false)?
        }
        Norm::Power(p) => {
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
            let sum = g.reduce("ReduceSum", scope, &powered, &[axis], false)?;
            emit::typed(
                g,
                "Pow",
                scope,
                [sum.name(), root.name()],
                sum.shape(),
                ElemType::Float32,
            )
        }
    })
}

/// The second operand in the graph: an activation viewed as `[1, R, M]` per sample, or a
/// constant `[R, M]`.
enum Operand2 {
    Activation(Value),
    Constant(crate::graph::Weight),
}
