//! Ops by order along a per-sample axis of a float32 activation: the order statistics
//! (`median`, `nanmedian`, `quantile`, `nanquantile`: [`ckpt_aten::order`]'s plan) and
//! `msort`. The values are sorted by ONNX `TopK` over the whole axis (its size is fixed),
//! NaN put last as torch's `sort` puts it; a statistic reads the sorted values at ranks
//! computed per sample (the count of values that are not NaN decides them), each read as
//! the sum of the one matching position. Along the batch, or over a whole tensor with a
//! batch, they mix samples and are refused.

use crate::elem::ElemType;
use crate::graph::{GraphBuilder, Value};
use crate::program::emit;
use crate::program::lower::Lowering;
use crate::program::tensor::Tensor;
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::eval;
use ckpt_aten::order::{self, Interpolation, Quantile};
use ckpt_aten::program::Node;

use super::select_top::Top;
use super::{arg_error, row_axis, OrShape};

/// `Where(condition, a, b)` broadcast to `shape` (float32).
fn choose(g: &mut GraphBuilder, scope: &str, inputs: [&str; 3], shape: &[u64]) -> Value {
    emit::typed(g, "Where", scope, inputs, shape, ElemType::Float32)
}

/// A float32 activation, or a refusal naming `op`.
pub(super) fn float32(x: &Value, op: &str) -> Result<(), OnnxError> {
    if x.elem() != ElemType::Float32 {
        return Err(arg_error(format!(
            "{op} of a {} tensor is not exported; convert it with `.float()` first",
            x.elem()
        )));
    }
    Ok(())
}

/// `x`'s values sorted along one axis, with what reading them by rank needs.
struct Sorted {
    /// The sorted values, NaN last.
    values: Value,
    /// The count of values that are not NaN along the axis (float32, the axis kept as 1).
    present: Value,
    /// The positions `0 … n − 1` along the axis (float32, size 1 on the axes after it, so
    /// that it broadcasts against the values): the name of that constant.
    positions: String,
    axis: usize,
}

impl Lowering<'_, '_> {
    /// `x` (float32) sorted ascending along per-sample `axis`, NaN last as torch's `sort`
    /// puts it: `TopK` (smallest first, `k` the axis's size) of `x` with each NaN ranked as
    /// +inf, then NaN at the positions from the count of values that are not NaN on.
    fn ascending(&mut self, scope: &str, x: &Value, axis: usize) -> Result<Sorted, OnnxError> {
        let n = x.shape()[axis];
        let shape = x.shape().to_vec();
        let flags = self.g.nan_flags(scope, x);
        let ranked = self.g.fill_where(scope, &flags, f32::INFINITY, x)?;
        let count = self.g.constant_i64(&format!("{scope}.k"), &[n as i64]);
        let (values, _) = self.top_k(
            scope,
            &ranked,
            &Top {
                count: &count,
                k: n,
                axis,
                largest: false,
                sorted: true,
            },
        );
        let g = &mut self.g;
        let one = g.constant_scalar(&format!("{scope}.one"), 1.0);
        let kept = emit::typed(
            g,
            "Sub",
            scope,
            [one.name(), flags.name()],
            &shape,
            ElemType::Float32,
        );
        let present = g.reduce("ReduceSum", scope, &kept, &[axis], true)?;
        let mut dims = vec![n];
        dims.extend(std::iter::repeat_n(1, shape.len() - axis - 1));
        let places: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let positions = g.typed_constant(
            &format!("{scope}.positions"),
            dims,
            &places,
            ElemType::Float32,
        )?;
        let before = emit::typed(
            g,
            "Less",
            scope,
            [positions.name(), present.name()],
            &shape,
            ElemType::Bool,
        );
        let nan = g.constant_scalar(&format!("{scope}.nan"), f32::NAN);
        let values = choose(g, scope, [before.name(), values.name(), nan.name()], &shape);
        Ok(Sorted {
            values,
            present,
            positions: positions.name().to_owned(),
            axis,
        })
    }

    /// The sorted value at position `at` (float32, integral, the axis kept as 1): the
    /// matching position's value summed with −0.0 everywhere else, which leaves every
    /// value (NaN, ±inf, −0.0) as it is.
    fn read_at(&mut self, scope: &str, sorted: &Sorted, at: &Value) -> Result<Value, OnnxError> {
        let g = &mut self.g;
        let shape = sorted.values.shape().to_vec();
        let hit = emit::typed(
            g,
            "Equal",
            scope,
            [&sorted.positions, at.name()],
            &shape,
            ElemType::Bool,
        );
        let zero = g.constant_scalar(&format!("{scope}.zero"), -0.0);
        let picked = choose(
            g,
            scope,
            [hit.name(), sorted.values.name(), zero.name()],
            &shape,
        );
        g.reduce("ReduceSum", scope, &picked, &[sorted.axis], true)
    }

    /// `stat` of the sorted values ([`Quantile::rank`] and [`Quantile::reading`] as ONNX
    /// nodes, per sample): the axis kept as 1.
    fn statistic(
        &mut self,
        scope: &str,
        sorted: &Sorted,
        stat: &Quantile,
    ) -> Result<Value, OnnxError> {
        let n = sorted.values.shape()[sorted.axis];
        let g = &mut self.g;
        let kept = sorted.present.shape().to_vec();
        let rank = if stat.skip_nan {
            // q · (present − 1), below 0 (no value) read as 0.
            let one = g.constant_scalar(&format!("{scope}.one"), 1.0);
            let less = emit::typed(
                g,
                "Sub",
                scope,
                [sorted.present.name(), one.name()],
                &kept,
                ElemType::Float32,
            );
            let q = g.constant_scalar(&format!("{scope}.q"), stat.q);
            let rank = emit::typed(
                g,
                "Mul",
                scope,
                [less.name(), q.name()],
                &kept,
                ElemType::Float32,
            );
            g.unary("Relu", scope, &rank, vec![])
        } else {
            // q · (n − 1), or the last position (a NaN) when a NaN is there.
            let all = g.constant_scalar(&format!("{scope}.n"), n as f32);
            let complete = emit::typed(
                g,
                "Less",
                scope,
                [sorted.present.name(), all.name()],
                &kept,
                ElemType::Bool,
            );
            let last = g.constant_scalar(&format!("{scope}.last"), stat.rank(n, n - 1));
            let rank = g.constant_scalar(&format!("{scope}.rank"), stat.rank(n, n));
            choose(g, scope, [complete.name(), last.name(), rank.name()], &kept)
        };
        let below = match stat.interpolation {
            Interpolation::Higher => g.unary("Ceil", scope, &rank, vec![]),
            Interpolation::Nearest => g.unary("Round", scope, &rank, vec![]),
            Interpolation::Lower | Interpolation::Linear | Interpolation::Midpoint => {
                g.unary("Floor", scope, &rank, vec![])
            }
        };
        let low = self.read_at(scope, sorted, &below)?;
        if !matches!(
            stat.interpolation,
            Interpolation::Linear | Interpolation::Midpoint
        ) {
            return Ok(low);
        }
        let above = self.g.unary("Ceil", scope, &rank, vec![]);
        let high = self.read_at(scope, sorted, &above)?;
        let g = &mut self.g;
        let step = g.sub(scope, &high, &low)?;
        let half = g.constant_scalar(&format!("{scope}.half"), 0.5);
        if stat.interpolation == Interpolation::Midpoint {
            // lerp by 0.5: end − (end − start) · 0.5.
            let part = emit::typed(
                g,
                "Mul",
                scope,
                [step.name(), half.name()],
                &kept,
                ElemType::Float32,
            );
            return g.sub(scope, &high, &part);
        }
        // torch's lerp: start + w·(end − start) for |w| < 0.5, else end − (end − start)·(1 − w).
        let weight = g.sub(scope, &rank, &below)?;
        let size = g.unary("Abs", scope, &weight, vec![]);
        let small = emit::typed(
            g,
            "Less",
            scope,
            [size.name(), half.name()],
            &kept,
            ElemType::Bool,
        );
        let rise = g.mul(scope, &weight, &step)?;
        let from_low = g.add(scope, &low, &rise)?;
        let one = g.constant_scalar(&format!("{scope}.one"), 1.0);
        let rest = emit::typed(
            g,
            "Sub",
            scope,
            [one.name(), weight.name()],
            &kept,
            ElemType::Float32,
        );
        let fall = g.mul(scope, &step, &rest)?;
        let from_high = g.sub(scope, &high, &fall)?;
        Ok(choose(
            g,
            scope,
            [small.name(), from_low.name(), from_high.name()],
            &kept,
        ))
    }

    /// The index along `axis` of the first entry of `x` holding `value` (the axis kept as
    /// 1; NaN holds NaN). With a NaN that makes `median` NaN this is torch's index, the
    /// first NaN's; elsewhere torch names one of the entries holding its value and leaves
    /// which open where several do (its `nth_element`), as `topk` does.
    fn first_holding(
        &mut self,
        scope: &str,
        x: &Value,
        value: &Value,
        axis: usize,
    ) -> Result<Value, OnnxError> {
        let g = &mut self.g;
        let shape = x.shape().to_vec();
        let bool_ = ElemType::Bool;
        let equal = emit::typed(g, "Equal", scope, [x.name(), value.name()], &shape, bool_);
        let is_nan = |g: &mut GraphBuilder, v: &Value| {
            emit::typed(g, "IsNaN", scope, [v.name()], v.shape(), bool_)
        };
        let nan_x = is_nan(g, x);
        let nan_v = is_nan(g, value);
        let both = emit::typed(g, "And", scope, [nan_x.name(), nan_v.name()], &shape, bool_);
        let holds = emit::typed(g, "Or", scope, [equal.name(), both.name()], &shape, bool_);
        let holds = emit::cast(g, scope, &holds, ElemType::Float32);
        self.arg_index("ArgMax", scope, &holds, axis, true)
    }

    /// `median`, `nanmedian` (values, and with `.dim` their int64 indices), `quantile`,
    /// `nanquantile` of `self` along `dim` or, in a static export, over the whole tensor.
    pub(super) fn order_statistic(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        // A tensor `q`: its constant entries, one statistic each ([`order::plan_at`]).
        let qs = if order::of_tensor_q(node) {
            let q = args.tensor("q").or_shape()?;
            if !self.is_constant(q) {
                return Err(arg_error(format!(
                    "quantile at the computed q `{q}`; only a constant q is exported"
                )));
            }
            let q = self.constant_tensor(q)?;
            if q.rank() > 1 || q.to_f32().is_empty() {
                return Err(arg_error(format!(
                    "quantile by a q of sizes {:?} (torch needs 0-d or 1-D; an empty one gives an empty tensor, which ATC does not compile)",
                    q.dims()
                )));
            }
            Some(q)
        } else {
            None
        };
        let stats = match &qs {
            None => vec![order::plan(node).or_shape()?],
            Some(q) => q
                .to_f32()
                .iter()
                .map(|&entry| order::plan_at(node, Some(entry)))
                .collect::<Result<Vec<_>, _>>()
                .or_shape()?,
        };
        let along = stats[0].1;
        let x = self.lifted_any_activation(args.tensor("self").or_shape()?)?;
        float32(&x, &node.target)?;
        let lifted = self.is_lifted();
        let count: u64 = x.shape().iter().product();
        let (x, axis, dims) = match along.dim {
            None if !lifted => {
                return Err(arg_error(
                    "it reduces every dimension, the batch included; only reductions within each sample are exported (give `dim`)".into(),
                ))
            }
            None => {
                let dims = if along.keep {
                    vec![1; x.shape().len()]
                } else {
                    Vec::new()
                };
                (self.g.reshape(scope, &x, &[count])?, 0, dims)
            }
            Some(dim) => {
                let axis = row_axis(dim, &x, lifted)?;
                let mut dims = x.shape().to_vec();
                if along.keep {
                    dims[axis] = 1;
                } else {
                    dims.remove(axis);
                }
                (x, axis, dims)
            }
        };
        if x.shape()[axis] == 0 {
            return Err(arg_error(format!(
                "{} of no values (torch refuses it)",
                node.target
            )));
        }
        let sorted = self.ascending(scope, &x, axis)?;
        if let Some(q) = qs {
            return self.stacked_quantiles(node, scope, &sorted, &stats, &q, &dims, lifted);
        }
        let stat = stats[0].0;
        let value = self.statistic(scope, &sorted, &stat)?;
        if stat.indexed && self.output_name(node, 1).is_ok() {
            let index = self.first_holding(scope, &x, &value, axis)?;
            let index = self.g.reshape(scope, &index, &dims)?;
            let value = self.g.reshape(scope, &value, &dims)?;
            self.bind(node, 0, value)?;
            return self.bind(node, 1, index);
        }
        let value = self.g.reshape(scope, &value, &dims)?;
        self.bind(node, 0, value)
    }

    /// The statistics `stats` of `sorted`, one per entry of the tensor `q`, each of the
    /// reduced sizes `dims`, stacked in front of them as torch's `quantile` stacks them
    /// (none added for a 0-d `q`); with a batch (first in each), the stack is moved in
    /// front of it.
    #[allow(clippy::too_many_arguments)]
    fn stacked_quantiles(
        &mut self,
        node: &Node,
        scope: &str,
        sorted: &Sorted,
        stats: &[(Quantile, order::Along)],
        q: &eval::Tensor,
        dims: &[u64],
        lifted: bool,
    ) -> Result<(), OnnxError> {
        let mut one = vec![1];
        one.extend(dims);
        let mut values = Vec::with_capacity(stats.len());
        for (stat, _) in stats {
            let value = self.statistic(scope, sorted, stat)?;
            values.push(self.g.reshape(scope, &value, &one)?);
        }
        let parts: Vec<&Value> = values.iter().collect();
        let stacked = self.g.concat(scope, &parts, 0)?;
        let mut shape = q.dims().to_vec();
        shape.extend(dims);
        let stacked = self.g.reshape(scope, &stacked, &shape)?;
        if lifted || q.rank() == 0 {
            return self.bind(node, 0, stacked);
        }
        // [N, Q, …] as torch's [Q, N, …]: the batch moves to dimension 1.
        let t = Tensor::from_rows(self.rows_read()?, stacked);
        let mut perm: Vec<usize> = (0..t.rank()).collect();
        perm.swap(0, 1);
        let t = t.transposed(&mut self.g, scope, &perm)?;
        self.bind_tensor(node, 0, t)
    }

    /// `msort(self)`: `sort(self, 0).values`, along torch's first dimension (in a static
    /// export; with a batch that dimension is the batch, and refused).
    pub(super) fn msort(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.lifted_any_activation(args.tensor("self").or_shape()?)?;
        float32(&x, "msort")?;
        let axis = row_axis(0, &x, self.is_lifted())?;
        let sorted = self.ascending(scope, &x, axis)?;
        self.bind(node, 0, sorted.values)
    }
}
