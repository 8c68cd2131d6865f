//! Ops that pick elements along a per-sample axis and return where they were: `argmax`,
//! `argmin`, `max.dim`/`min.dim` (values and int64 indices), and `topk` (ONNX `TopK` with
//! `K` as a constant input, opset 11 for `largest`/`sorted`). Along the batch they are
//! refused, like every op that mixes samples.

use crate::aten::program::{Argument, Node};
use crate::onnx::elem::ElemType;
use crate::onnx::graph::{Attr, Value};
use crate::onnx::OnnxError;

use super::super::lower::Lowering;
use super::{arg_error, per_sample_axis, OrShape};
use crate::aten::args::Args;

/// The per-sample axis of argument `dim` (required: `None` means the whole tensor, the
/// batch included).
fn axis_of(args: &Args<'_>, x: &Value) -> Result<usize, OnnxError> {
    let dim = args.optional_int("dim").or_shape()?.ok_or_else(|| {
        arg_error(
            "it works over the whole tensor, the batch included; give `dim` so that each sample is treated alone".into(),
        )
    })?;
    per_sample_axis(dim, x.shape().len() + 1)
}

/// `x`'s shape with `axis` set to `size`, or dropped when `size` is `None`.
fn with_axis(x: &Value, axis: usize, size: Option<u64>) -> Vec<u64> {
    let mut shape = x.shape().to_vec();
    match size {
        Some(size) => shape[axis] = size,
        None => {
            shape.remove(axis);
        }
    }
    shape
}

/// Refuses bool tensors, which ONNX's ArgMax/ReduceMax/TopK do not take.
fn numeric(x: &Value, op: &str) -> Result<(), OnnxError> {
    if x.elem() == ElemType::Bool {
        return Err(arg_error(format!(
            "{op} of a bool tensor is not exported; convert it with `.int()` first"
        )));
    }
    Ok(())
}

impl<'p> Lowering<'p, '_> {
    /// `ArgMax`/`ArgMin` (`onnx`) of `x` along per-sample `axis`: int64 indices. ATC's
    /// parser puts a kept axis back at position 1 whatever `axis` was, so `keepdims=1` is
    /// written only there; elsewhere the axis is dropped and restored by a `Reshape`.
    fn arg_extreme(
        &mut self,
        onnx: &'static str,
        scope: &str,
        x: &Value,
        axis: usize,
        keep: bool,
    ) -> Result<Value, OnnxError> {
        let keep_here = keep && axis == 0;
        let attrs = vec![
            ("axis", Attr::Int(axis as i64 + 1)),
            ("keepdims", Attr::Int(i64::from(keep_here))),
        ];
        let mut out = self.g.typed_node(
            onnx,
            scope,
            vec![x.name().to_owned()],
            attrs,
            vec![(with_axis(x, axis, keep_here.then_some(1)), ElemType::Int64)],
        );
        let indices = out.swap_remove(0);
        if keep && !keep_here {
            self.g
                .reshape(scope, &indices, &with_axis(x, axis, Some(1)))
        } else {
            Ok(indices)
        }
    }

    /// `argmax`/`argmin(self, dim, keepdim)` (`onnx`: `ArgMax`/`ArgMin`).
    pub(super) fn argmax(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        onnx: &'static str,
    ) -> Result<(), OnnxError> {
        let x = self.any_activation(args.tensor("self").or_shape()?)?;
        numeric(&x, onnx)?;
        let axis = axis_of(args, &x)?;
        let keep = args.bool_or("keepdim", false).or_shape()?;
        let y = self.arg_extreme(onnx, scope, &x, axis, keep)?;
        self.bind(node, 0, y)
    }

    /// `max.dim`/`min.dim(self, dim, keepdim)`: the values (`ReduceMax`/`ReduceMin`,
    /// `reduce`) and their int64 indices (`ArgMax`/`ArgMin`, `arg`).
    pub(super) fn extreme_along(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        [reduce, arg]: [&'static str; 2],
    ) -> Result<(), OnnxError> {
        let x = self.any_activation(args.tensor("self").or_shape()?)?;
        numeric(&x, reduce)?;
        let dim = args.int_or("dim", 0).or_shape()?;
        let axis = per_sample_axis(dim, x.shape().len() + 1)?;
        let keep = args.bool_or("keepdim", false).or_shape()?;
        let values = self.g.reduce(reduce, scope, &x, &[axis], keep)?;
        self.bind(node, 0, values)?;
        if self.output_name(node, 1).is_ok() {
            let indices = self.arg_extreme(arg, scope, &x, axis, keep)?;
            self.bind(node, 1, indices)?;
        }
        Ok(())
    }

    /// `topk(self, k, dim, largest, sorted)`: `TopK` with `K` a constant input; values
    /// and int64 indices.
    pub(super) fn topk(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        if self.g.opset().version() < 11 {
            return Err(arg_error(
                "topk needs TopK's `largest` and `sorted` from opset 11; pass --opset 11".into(),
            ));
        }
        let x = self.any_activation(args.tensor("self").or_shape()?)?;
        numeric(&x, "TopK")?;
        let axis = per_sample_axis(args.int_or("dim", -1).or_shape()?, x.shape().len() + 1)?;
        let k = match args.get("k") {
            Some(Argument::Int(k)) => u64::try_from(*k).ok(),
            _ => None,
        }
        .filter(|&k| k <= x.shape()[axis])
        .ok_or_else(|| {
            arg_error(format!(
                "topk's `k` must be a fixed count up to the size {} of dimension {}",
                x.shape()[axis],
                axis + 1
            ))
        })?;
        let largest = args.bool_or("largest", true).or_shape()?;
        let sorted = args.bool_or("sorted", true).or_shape()?;
        let count = self.g.constant_i64(&format!("{scope}.k"), &[k as i64]);
        let shape = with_axis(&x, axis, Some(k));
        let attrs = vec![
            ("axis", Attr::Int(axis as i64 + 1)),
            ("largest", Attr::Int(i64::from(largest))),
            ("sorted", Attr::Int(i64::from(sorted))),
        ];
        let mut out = self.g.typed_node(
            "TopK",
            scope,
            vec![x.name().to_owned(), count.name().to_owned()],
            attrs,
            vec![(shape.clone(), x.elem()), (shape, ElemType::Int64)],
        );
        let indices = out.swap_remove(1);
        let values = out.swap_remove(0);
        self.bind(node, 0, values)?;
        if self.output_name(node, 1).is_ok() {
            self.bind(node, 1, indices)?;
        }
        Ok(())
    }
}
