//! Ops along one sample axis of an activation: the running sum (`cumsum`, ONNX CumSum, in
//! CANN's opset-11 table) and the first difference (`diff`: two Slices and a Sub), and the
//! `*_like` factories of an activation, which are the same for every sample.

use crate::aten::args::Args;
use crate::aten::program::{Argument, Node};
use crate::onnx::graph::Attr;
use crate::onnx::program::emit::{self, Operand};
use crate::onnx::program::lower::Lowering;
use crate::onnx::program::tensor;
use crate::onnx::OnnxError;

use super::{arg_error, OrShape};

impl Lowering<'_, '_> {
    /// `cumsum(x, dim)`: a CumSum along a sample axis, in the type torch records for the result.
    pub(super) fn cumsum(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        if self.g.opset().version() < 11 {
            return Err(arg_error(
                "cumsum of an activation needs CumSum, from opset 11; export with --opset 11 or later".into(),
            ));
        }
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let dim = args
            .optional_int("dim")
            .or_shape()?
            .ok_or_else(|| arg_error("cumsum without `dim`".into()))?;
        let axis = tensor::axis(dim, x.rank())?;
        x.sample_axis(axis, "cumsum")?;
        // torch sums in the result's type: `dtype` when given, else int64 for integer and
        // bool inputs (`cumsum(mask.int(), 1)` is int64), else the input's.
        let elem = self.recorded_elem(self.output_name(node, 0)?)?;
        let x = x.with_value(emit::cast(&mut self.g, scope, x.value(), elem))?;
        let at = self.g.typed_scalar(
            "cumsum.axis",
            axis as f64,
            crate::onnx::elem::ElemType::Int64,
        )?;
        let inputs = vec![x.value().name().to_owned(), at.name().to_owned()];
        let shape = x.value().shape().to_vec();
        let y = self.g.node(
            "CumSum",
            scope,
            inputs,
            Vec::<(&'static str, Attr)>::new(),
            vec![shape],
        );
        let y = emit::single(y);
        self.bind_tensor(node, 0, x.with_value(y)?)
    }

    /// `diff(x, n, dim)` without `prepend`/`append`: `x[1:] − x[:-1]` along `dim`, `n` times.
    pub(super) fn diff(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        for extra in ["prepend", "append"] {
            if !matches!(args.get(extra), None | Some(Argument::None)) {
                return Err(arg_error(format!("diff with `{extra}` is not exported")));
            }
        }
        let mut x = self.tensor(args.tensor("self").or_shape()?)?;
        let axis = tensor::axis(args.int_or("dim", -1).or_shape()?, x.rank())?;
        let n = args.int_or("n", 1).or_shape()?;
        if n < 1 {
            return Err(arg_error(format!("diff with n = {n}")));
        }
        for _ in 0..n {
            let at = x.sample_axis(axis, "diff")?;
            let size = x.value().shape()[at];
            if size < 2 {
                return Err(arg_error(
                    "diff of an axis of fewer than two entries".into(),
                ));
            }
            let later = x.sliced(&mut self.g, scope, "diff", axis, 1..size)?;
            let earlier = x.sliced(&mut self.g, scope, "diff", axis, 0..size - 1)?;
            let y = emit::binary(
                &mut self.g,
                "Sub",
                scope,
                Operand::Activation(later.value()),
                Operand::Activation(earlier.value()),
            )?;
            x = later.with_value(y)?;
        }
        self.bind_tensor(node, 0, x)
    }

    /// `zeros_like`, `ones_like`, `full_like`, `empty_like` of an activation: the same
    /// value for every sample, bound with size 1 on the batch axis (made an activation
    /// where one is needed, as a factory sized by the batch). `empty_like` is zeros.
    pub(super) fn like(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        fill: Option<f64>,
    ) -> Result<(), OnnxError> {
        if !matches!(args.get("dtype"), None | Some(Argument::None)) {
            return Err(arg_error(
                "a *_like factory with another dtype is not exported".into(),
            ));
        }
        let value = match fill {
            Some(v) => v,
            None => args.number("fill_value").or_shape()?,
        };
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        if x.factor() != 1 {
            return Err(arg_error(
                "a *_like factory of a tensor whose batch is folded into a dimension".into(),
            ));
        }
        let mut dims = x.value().shape().to_vec();
        dims.insert(x.batch_axis(), 1);
        let tensor = self.filled(node, dims, value)?;
        self.bind_uniform(node, 0, tensor)
    }
}
