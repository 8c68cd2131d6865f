//! Reductions along per-sample axes: `sum`, `amax`/`amin` (and `max()`/`min()`, `aminmax`),
//! `var`/`std`, the vector norms and `renorm`. Reducing the batch is refused, as for
//! `mean`: each sample must stay independent.

use crate::elem::ElemType;
use crate::graph::Value;
use crate::OnnxError;
use ckpt_aten::program::{Argument, Node};

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::super::tensor::{self, Placement, Tensor};
use super::{arg_error, per_sample_axis, OrShape};
use ckpt_aten::args::Args;

/// The per-sample axes of a reduction's `dim` argument (`None` or empty: every axis, which
/// includes the batch and is refused), sorted and distinct. A `lifted` operand
/// ([`Lowering::lifted_activation`]: a static tensor, whose per-sample axes are torch's)
/// may be reduced along any of them, or all.
pub(super) fn reduction_axes(
    args: &Args<'_>,
    x: &Value,
    lifted: bool,
) -> Result<Vec<usize>, OnnxError> {
    let dims = match args.get("dim") {
        None | Some(Argument::None) => vec![],
        Some(Argument::Ints(d)) => d.clone(),
        Some(Argument::Int(d)) => vec![*d],
        Some(other) => return Err(arg_error(format!("argument `dim` is {}", other.kind()))),
    };
    if lifted {
        let rank = x.shape().len();
        if dims.is_empty() {
            return Ok((0..rank).collect());
        }
        let mut axes = dims
            .iter()
            .map(|&d| tensor::axis(d, rank))
            .collect::<Result<Vec<_>, _>>()?;
        axes.sort_unstable();
        axes.dedup();
        return Ok(axes);
    }
    let rank = x.shape().len() + 1;
    if dims.is_empty() {
        return Err(arg_error(
            "it reduces every dimension, the batch included; only reductions within each sample are exported (give `dim`)".into(),
        ));
    }
    let mut axes = dims
        .iter()
        .map(|&d| per_sample_axis(d, rank))
        .collect::<Result<Vec<_>, _>>()?;
    axes.sort_unstable();
    axes.dedup();
    Ok(axes)
}

impl<'p> Lowering<'p, '_> {
    /// `sum.dim_IntList`, `amax`, `amin` (`op`: `ReduceSum`, `ReduceMax`, `ReduceMin`), of
    /// float32, integer and bool tensors ([`Lowering::reduced_operand`]).
    pub(super) fn reduce(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        op: &'static str,
    ) -> Result<(), OnnxError> {
        let input = self.tensor(args.tensor("self").or_shape()?)?;
        if input.value().elem() == ElemType::Float32 {
            self.same_dtype(node, args, op)?;
        }
        self.reduce_as(node, args, scope, op, 0)
    }

    /// `aminmax(self, dim, keepdim)`: `amin` and `amax` over `dim` (every dimension
    /// without it), the two outputs of torch's op.
    pub(super) fn aminmax(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        self.reduce_as(node, args, scope, "ReduceMin", 0)?;
        if self.output_name(node, 1).is_ok() {
            self.reduce_as(node, args, scope, "ReduceMax", 1)?;
        }
        Ok(())
    }

    /// ONNX reduction `op` of argument `self` over `dim` (`keepdim`), bound to output
    /// `output`. A 0-d tensor (static) is its own sum, mean, product, largest and smallest
    /// value, over dimension 0 or −1 or none.
    fn reduce_as(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        op: &'static str,
        output: usize,
    ) -> Result<(), OnnxError> {
        let input = args.tensor("self").or_shape()?;
        if self.tensor(input)?.batch_axis().is_some_and(|a| a != 0) {
            return self.reduce_moved_batch(node, args, scope, op, output);
        }
        let recorded = self.recorded_elem(self.output_name(node, output)?)?;
        let x = self.lifted_any_activation(input)?;
        let x = self.reduced_operand(scope, op, x, recorded)?;
        let keep = args.bool_or("keepdim", false).or_shape()?;
        let axes = reduction_axes(args, &x, self.is_lifted())?;
        let y = self.g.reduce(op, scope, &x, &axes, keep)?;
        let y = emit::cast(&mut self.g, scope, &y, recorded);
        self.bind(node, output, y)
    }

    /// `x` in the element type reduction `op` computes torch's output (of type `recorded`) in: float32
    /// as it is; an integer or bool tensor in the output's type when `op` sums or
    /// multiplies (torch sums them in int64, or in `dtype` when given, after casting to
    /// it), as it is when `op` picks an integer's largest or smallest entry, and as int32
    /// for a bool's (cast back by the caller).
    fn reduced_operand(
        &mut self,
        scope: &str,
        op: &'static str,
        x: Value,
        recorded: ElemType,
    ) -> Result<Value, OnnxError> {
        let elem = x.elem();
        match (op, elem) {
            (_, ElemType::Float32) => Ok(x),
            ("ReduceSum" | "ReduceProd", ElemType::Bool | ElemType::Int32 | ElemType::Int64) => {
                Ok(emit::cast(&mut self.g, scope, &x, recorded))
            }
            ("ReduceMax" | "ReduceMin", ElemType::Int32 | ElemType::Int64) => Ok(x),
            ("ReduceMax" | "ReduceMin", ElemType::Bool) => {
                Ok(emit::cast(&mut self.g, scope, &x, ElemType::Int32))
            }
            _ => Err(arg_error(format!(
                "{op} of a {elem} tensor is not exported (float32, and sums, products, largest and smallest entries of integer and bool tensors, are)"
            ))),
        }
    }

    /// ONNX reduction `op` (`ReduceMean`, …) of argument `self`, whose batch is not on its
    /// first dimension (`torch.stack(heads).mean(0)` in front of the batch), over `dim`:
    /// the batch moved first, the reduction with kept axes, the axes moved back, then a
    /// Reshape to torch's recorded sizes (dropping the reduced axes unless `keepdim`).
    pub(super) fn reduce_moved_batch(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        op: &'static str,
        output: usize,
    ) -> Result<(), OnnxError> {
        let t = self.tensor(args.tensor("self").or_shape()?)?;
        let rank = t.rank();
        let Placement::Batch {
            axis: batch,
            factor,
        } = t.placement()
        else {
            return Err(arg_error(
                "a reduction with the batch moved, of a tensor without one".into(),
            ));
        };
        let dims = match args.get("dim") {
            Some(Argument::Ints(d)) if !d.is_empty() => d.clone(),
            Some(Argument::Int(d)) => vec![*d],
            _ => {
                return Err(arg_error(
                    "it reduces every dimension, the batch included; only reductions within each sample are exported (give `dim`)".into(),
                ))
            }
        };
        let mut order: Vec<usize> = (0..rank).filter(|&a| a != batch).collect();
        order.insert(0, batch);
        let mut axes = Vec::with_capacity(dims.len());
        for d in dims {
            let a = tensor::axis(d, rank)?;
            if a == batch {
                return Err(tensor::mixes_samples(op, a, &t.sizes()));
            }
            // Torch axis `a` sits at `order` position p after the move, per-sample p − 1.
            let p = order.iter().position(|&o| o == a).unwrap_or(0);
            axes.push(p - 1);
        }
        axes.sort_unstable();
        axes.dedup();
        let moved = t.transposed(&mut self.g, scope, &order)?;
        let reduced = self.g.reduce(op, scope, moved.value(), &axes, true)?;
        let mut back = vec![0; rank];
        for (p, &a) in order.iter().enumerate() {
            back[a] = p;
        }
        let y = Tensor::rows(reduced, factor).transposed(&mut self.g, scope, &back)?;
        let target = self.recorded_sizes(node, output)?;
        let y = y.reshaped(&mut self.g, scope, &target)?;
        self.bind_tensor(node, output, y)
    }

    /// `linalg_vector_norm` over `dim`: `ord` 2 (ReduceL2) and 1 (ReduceL1), as
    /// `F.normalize` computes it; the others by `torch._refs.linalg.vector_norm`: ±inf the
    /// largest or smallest `|x|`, 0 the count of nonzero values, any other `p` the sum of
    /// `|x|^p` to the power `1/p` (batch first for those).
    pub(super) fn vector_norm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        self.same_dtype(node, args, "linalg_vector_norm")?;
        let ord = args.float("ord").or_shape()?;
        match ord {
            2.0 => return self.reduce_as(node, args, scope, "ReduceL2", 0),
            1.0 => return self.reduce_as(node, args, scope, "ReduceL1", 0),
            _ => {}
        }
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        let axes = reduction_axes(args, &x, self.is_lifted())?;
        let keep = args.bool("keepdim").or_shape()?;
        let y = self.norm_over(scope, &x, ord, &axes, keep)?;
        self.bind(node, 0, y)
    }

    /// The vector norm of order `ord` of `x` over per-sample `axes`, as
    /// `torch._refs.linalg.vector_norm` computes it: 2 and 1 `ReduceL2`/`ReduceL1`, ±inf
    /// the largest or smallest `|x|`, 0 the count of nonzero values, any other `p` the sum
    /// of `|x|^p` to the power `1/p`.
    pub(super) fn norm_over(
        &mut self,
        scope: &str,
        x: &Value,
        ord: f64,
        axes: &[usize],
        keep: bool,
    ) -> Result<Value, OnnxError> {
        let g = &mut self.g;
        let op = match ord {
            2.0 => return g.reduce("ReduceL2", scope, x, axes, keep),
            1.0 => return g.reduce("ReduceL1", scope, x, axes, keep),
            f64::INFINITY => "ReduceMax",
            f64::NEG_INFINITY => "ReduceMin",
            _ if ord.is_nan() => return Err(arg_error("a vector norm of order NaN".into())),
            _ => "ReduceSum",
        };
        if ord == 0.0 {
            let flags = super::decompose::nonzero_flags(g, scope, x);
            g.reduce(op, scope, &flags, axes, keep)
        } else if ord.is_infinite() {
            let abs = g.unary("Abs", scope, x, vec![]);
            g.reduce(op, scope, &abs, axes, keep)
        } else {
            let abs = g.unary("Abs", scope, x, vec![]);
            let p = g.constant_scalar(&format!("{scope}.ord"), ord as f32);
            let powered = emit::binary(
                g,
                "Pow",
                scope,
                Operand::Activation(&abs),
                Operand::Constant(&p),
            )?;
            let sum = g.reduce(op, scope, &powered, axes, keep)?;
            let root = g.constant_scalar(&format!("{scope}.root"), (1.0 / ord) as f32);
            emit::binary(
                g,
                "Pow",
                scope,
                Operand::Activation(&sum),
                Operand::Constant(&root),
            )
        }
    }

    /// `renorm(self, p, dim, maxnorm)` as torch's kernel computes it: each slice along
    /// `dim` scaled by `maxnorm / (norm + 1e-7)` where its `p`-norm (over every other
    /// dimension) exceeds `maxnorm`, else kept (float32 throughout, NaN norms kept). With a
    /// batch, only slices along the batch are within one sample.
    pub(super) fn renorm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        let p = args.float("p").or_shape()?;
        let maxnorm = args.float("maxnorm").or_shape()? as f32;
        let dim = args.int("dim").or_shape()?;
        let rank = x.shape().len();
        let axes: Vec<usize> = if self.is_lifted() {
            let axis = tensor::axis(dim, rank)?;
            (0..rank).filter(|&a| a != axis).collect()
        } else if dim == 0 || dim == -(rank as i64 + 1) {
            (0..rank).collect()
        } else {
            return Err(arg_error(format!(
                "renorm along dimension {dim} takes norms over the batch, which mixes samples; only renorm along the batch (dimension 0) is exported"
            )));
        };
        if axes.is_empty() {
            return Err(arg_error(
                "renorm of a tensor of fewer than 2 dimensions (torch needs 2)".into(),
            ));
        }
        let norm = self.norm_over(scope, &x, p, &axes, true)?;
        let g = &mut self.g;
        let shape = norm.shape().to_vec();
        let (f32_, bool_) = (ElemType::Float32, ElemType::Bool);
        let limit = g.constant_scalar(&format!("{scope}.maxnorm"), maxnorm);
        let eps = g.constant_scalar(&format!("{scope}.eps"), 1e-7);
        let one = g.constant_scalar(&format!("{scope}.one"), 1.0);
        let over = emit::typed(
            g,
            "Greater",
            scope,
            [norm.name(), limit.name()],
            &shape,
            bool_,
        );
        let padded = emit::typed(g, "Add", scope, [norm.name(), eps.name()], &shape, f32_);
        let scale = emit::typed(g, "Div", scope, [limit.name(), padded.name()], &shape, f32_);
        let factor = emit::typed(
            g,
            "Where",
            scope,
            [over.name(), scale.name(), one.name()],
            &shape,
            f32_,
        );
        let y = emit::typed(g, "Mul", scope, [x.name(), factor.name()], x.shape(), f32_);
        self.bind(node, 0, y)
    }

    /// `var`/`std` (`root`) `.correction` or `.dim` (`unbiased`: correction 1 or 0): the
    /// mean squared deviation over the axes, times `n / (n − correction)`, and its square
    /// root for `std`.
    pub(super) fn variance(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        root: bool,
    ) -> Result<(), OnnxError> {
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        let axes = reduction_axes(args, &x, self.is_lifted())?;
        let keep = args.bool_or("keepdim", false).or_shape()?;
        let correction = match args.get("correction") {
            None | Some(Argument::None) => {
                f64::from(u8::from(args.bool_or("unbiased", true).or_shape()?))
            }
            Some(_) => args.number("correction").or_shape()?,
        };
        let n: u64 = axes.iter().map(|&a| x.shape()[a]).product();
        if n as f64 <= correction {
            return Err(arg_error(format!(
                "a variance of {n} values with correction {correction} divides by zero or less"
            )));
        }
        let mean = self.g.reduce_mean(scope, &x, &axes, true)?;
        let centred = self.g.sub(scope, &x, &mean)?;
        let squared = emit::binary(
            &mut self.g,
            "Mul",
            scope,
            Operand::Activation(&centred),
            Operand::Activation(&centred),
        )?;
        let biased = self.g.reduce_mean(scope, &squared, &axes, keep)?;
        let scale = self.g.constant_scalar(
            &format!("{scope}.correction"),
            (n as f64 / (n as f64 - correction)) as f32,
        );
        let mut y = self.g.mul_constant(scope, &biased, &scale)?;
        if root {
            y = self.g.sqrt(scope, &y);
        }
        self.bind(node, 0, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::GraphBuilder;
    use crate::{Batch, Opset};

    fn node(dim: &str) -> Node {
        serde_json::from_str(&format!(
            r#"{{"target": "t", "outputs": [], "inputs": [{{"name": "dim", "arg": {dim}}}]}}"#
        ))
        .unwrap()
    }

    #[test]
    fn reductions_stay_within_a_sample() {
        let mut g = GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()));
        let x = g.input("x", vec![4, 5, 6]).unwrap();
        let axes = |dim: &str| reduction_axes(&Args(&node(dim)), &x, false);
        assert_eq!(axes(r#"{"as_ints": [3, -1, 2]}"#).unwrap(), [1, 2]);
        assert_eq!(axes(r#"{"as_int": 1}"#).unwrap(), [0]);
        let batch = axes(r#"{"as_ints": [0, 1]}"#).unwrap_err().to_string();
        assert!(batch.contains("the batch"), "{batch}");
        let every = axes(r#"{"as_ints": []}"#).unwrap_err().to_string();
        assert!(every.contains("every dimension"), "{every}");
        assert!(axes(r#"{"as_ints": [4]}"#).is_err());
    }
}
