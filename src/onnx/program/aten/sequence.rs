//! Ops along one sample axis of an activation: the running sum (`cumsum`, ONNX CumSum, in
//! CANN's opset-11 table), the running product (`cumprod`: opset 11 has no CumProd, so
//! entry by entry in torch's order), the first difference (`diff`: two Slices and a Sub), and the
//! `*_like` factories of an activation, which are the same for every sample.

use crate::aten::args::Args;
use crate::aten::program::{Argument, Node};
use crate::onnx::graph::Attr;
use crate::onnx::program::emit::{self, Operand};
use crate::onnx::program::lower::Lowering;
use crate::onnx::program::tensor::{self, Placement};
use crate::onnx::OnnxError;

use super::{arg_error, OrShape};

/// The longest axis `cumprod` is written along, one Slice and one Mul per entry.
const CUMPROD_ENTRIES: u64 = 256;

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

    /// `cumprod(x, dim)`: the running product along a sample axis in the type torch records
    /// for the result (after `dtype`'s cast; int64 for integer and bool inputs), entry by
    /// entry as torch's kernel multiplies, `y₀ = x₀`, `yₖ = yₖ₋₁ · xₖ` (Slices, Muls and
    /// one Concat), so a NaN, an infinity or a zero reaches every later entry as in torch.
    /// torch accumulates float32 in float64 on the CPU; here each product is float32, as
    /// ckpt's `cumsum` sums in float32. Axes longer than [`CUMPROD_ENTRIES`] are refused.
    pub(super) fn cumprod(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let dim = args
            .optional_int("dim")
            .or_shape()?
            .ok_or_else(|| arg_error("cumprod without `dim`".into()))?;
        let axis = tensor::axis(dim, x.rank())?;
        let at = x.sample_axis(axis, "cumprod")?;
        let elem = self.recorded_elem(self.output_name(node, 0)?)?;
        let x = x.with_value(emit::cast(&mut self.g, scope, x.value(), elem))?;
        let n = x.value().shape()[at];
        if n == 0 || n > CUMPROD_ENTRIES {
            return Err(arg_error(format!(
                "cumprod along a dimension of {n} entries: it is written entry by entry, for 1 to {CUMPROD_ENTRIES}"
            )));
        }
        if n == 1 {
            return self.bind_tensor(node, 0, x);
        }
        let mut parts: Vec<tensor::Tensor> = Vec::with_capacity(n as usize);
        for k in 0..n {
            let entry = x.sliced(&mut self.g, scope, "cumprod", axis, k..k + 1)?;
            let product = match parts.last() {
                None => entry,
                Some(before) => {
                    let y = emit::binary(
                        &mut self.g,
                        "Mul",
                        scope,
                        Operand::Activation(before.value()),
                        Operand::Activation(entry.value()),
                    )?;
                    entry.with_value(y)?
                }
            };
            parts.push(product);
        }
        let y = tensor::Tensor::concat(&mut self.g, scope, &parts, axis)?;
        self.bind_tensor(node, 0, y)
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
        let axis = tensor::axis(args.int("dim").or_shape()?, x.rank())?;
        let n = args.int("n").or_shape()?;
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
    /// where one is needed, as a factory sized by the batch). `empty_like` is zeros. A
    /// `dtype` argument is the element type torch recorded for the result, which the
    /// constant is made in (a dtype the export does not handle is refused there).
    pub(super) fn like(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        fill: Option<f64>,
    ) -> Result<(), OnnxError> {
        let value = match fill {
            Some(v) => v,
            None => args.number("fill_value").or_shape()?,
        };
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        match x.placement() {
            Placement::Batch { axis, factor: 1 } => {
                let mut dims = x.value().shape().to_vec();
                dims.insert(axis, 1);
                let tensor = self.filled(node, dims, value)?;
                self.bind_uniform(node, 0, tensor)
            }
            Placement::Batch { .. } => Err(arg_error(
                "a *_like factory of a tensor whose batch is folded into a dimension".into(),
            )),
            // Without a batch, the result is a constant.
            Placement::Static => {
                let tensor = self.filled(node, x.value().shape().to_vec(), value)?;
                self.bind_folded(node, 0, tensor)
            }
        }
    }
}
