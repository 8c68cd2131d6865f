//! Activations that zero or replace a band of values, each by the rule of torch's kernel,
//! NaN included: `hardshrink` (zero inside `[−λ, λ]`), `softshrink` (moved toward zero by
//! λ, zero inside), `threshold` (`value` wherever `x ≤ threshold`; NaN is kept).

use crate::elem::ElemType;
use crate::graph::Value;
use crate::OnnxError;
use ckpt_aten::program::Node;

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::super::tensor::Tensor;
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

impl<'p> Lowering<'p, '_> {
    /// Argument `self` as a float32 tensor (`op` names the refusal otherwise).
    fn float_tensor(&self, args: &Args<'_>, op: &str) -> Result<Tensor, OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        if x.value().elem() != ElemType::Float32 {
            return Err(arg_error(format!(
                "{op} of a {} tensor is not exported (float32 only)",
                x.value().elem()
            )));
        }
        Ok(x)
    }

    /// Bool `x op value` (`Greater`, `Less`) against a float32 scalar.
    fn against(&mut self, scope: &str, op: &'static str, x: &Value, value: f32) -> Value {
        let bound = self.g.constant_scalar(&format!("{scope}.bound"), value);
        let mut out = self.g.typed_node(
            op,
            scope,
            vec![x.name().to_owned(), bound.name().to_owned()],
            vec![],
            vec![(x.shape().to_vec(), ElemType::Bool)],
        );
        out.swap_remove(0)
    }

    /// `hardshrink(self, lambd)`: `x · (|x| > λ)`, the mask as 0/1 floats, so that NaN
    /// (outside every band in torch's kernel) stays NaN.
    pub(super) fn hardshrink(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.float_tensor(args, "hardshrink")?;
        let lambd = args.float("lambd").or_shape()? as f32;
        let abs = self.g.unary("Abs", scope, x.value(), vec![]);
        let outside = self.against(scope, "Greater", &abs, lambd);
        let keep = emit::cast(&mut self.g, scope, &outside, ElemType::Float32);
        let y = emit::binary(
            &mut self.g,
            "Mul",
            scope,
            Operand::Activation(x.value()),
            Operand::Activation(&keep),
        )?;
        self.bind_tensor(node, 0, x.with_value(y)?)
    }

    /// `softshrink(self, lambd)`: `x − clamp(x, −λ, λ)`, which is `x ∓ λ` outside the band,
    /// zero inside and NaN for NaN, as torch's kernel gives.
    pub(super) fn softshrink(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.float_tensor(args, "softshrink")?;
        let lambd = args.float("lambd").or_shape()? as f32;
        if lambd < 0.0 {
            return Err(arg_error(format!(
                "softshrink with a negative lambd ({lambd}) is not exported (torch requires it to be at least 0)"
            )));
        }
        let band = self.g.clip(scope, x.value(), -lambd, lambd);
        let y = self.g.sub(scope, x.value(), &band)?;
        self.bind_tensor(node, 0, x.with_value(y)?)
    }

    /// `threshold(self, threshold, value)`: `x` where `x > threshold` or `x` is NaN, else
    /// `value`.
    pub(super) fn threshold(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.float_tensor(args, "threshold")?;
        let threshold = args.number("threshold").or_shape()? as f32;
        let value = args.number("value").or_shape()? as f32;
        let above = self.against(scope, "Greater", x.value(), threshold);
        let nan = self.g.nan_flags(scope, x.value());
        let nan = self.g.flags_set(scope, &nan);
        let mut kept = self.g.typed_node(
            "Or",
            scope,
            vec![above.name().to_owned(), nan.name().to_owned()],
            vec![],
            vec![(above.shape().to_vec(), ElemType::Bool)],
        );
        let kept = kept.swap_remove(0);
        let fill = self.g.constant_scalar(&format!("{scope}.value"), value);
        let mut out = self.g.typed_node(
            "Where",
            scope,
            vec![
                kept.name().to_owned(),
                x.value().name().to_owned(),
                fill.name().to_owned(),
            ],
            vec![],
            vec![(x.value().shape().to_vec(), ElemType::Float32)],
        );
        let y = out.swap_remove(0);
        self.bind_tensor(node, 0, x.with_value(y)?)
    }
}
