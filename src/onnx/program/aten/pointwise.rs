//! Element-wise ops: activations, broadcasting arithmetic, softmax, gelu and layer_norm.

use crate::onnx::graph::Value;
use crate::onnx::OnnxError;
use crate::torch::pt2::schema::{Argument, Node};

use super::super::args::Args;
use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::{arg_error, per_sample_axis, reject_extra, OrShape};

impl<'p> Lowering<'p, '_> {
    pub(super) fn unary(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        emit: impl FnOnce(&mut crate::onnx::graph::GraphBuilder, &Value) -> Value,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self"])?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let y = emit(&mut self.g, &x);
        self.bind(node, 0, y)
    }

    /// `x · gate(x)`: silu (Sigmoid) and hardswish (HardSigmoid).
    pub(super) fn gated(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        gate: impl FnOnce(&mut crate::onnx::graph::GraphBuilder, &Value) -> Value,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self"])?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let s = gate(&mut self.g, &x);
        let y = emit::binary(
            &mut self.g,
            "Mul",
            scope,
            Operand::Activation(&x),
            Operand::Activation(&s),
        )?;
        self.bind(node, 0, y)
    }

    pub(super) fn hardtanh(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "min_val", "max_val"])?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let lo = args.float_or("min_val", -1.0).or_shape()? as f32;
        let hi = args.float_or("max_val", 1.0).or_shape()? as f32;
        let y = self.g.clip(scope, &x, lo, hi);
        self.bind(node, 0, y)
    }

    /// `softmax` over `dim`: ONNX Softmax over the last axis (exact at every opset), with
    /// `dim` swapped to the last axis and back when it is another one.
    pub(super) fn softmax(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "dim", "dtype", "half_to_float"])?;
        let converts = !matches!(args.get("dtype"), None | Some(Argument::None))
            || args.bool_or("half_to_float", false).or_shape()?;
        if converts {
            return Err(arg_error(
                "softmax with a dtype change is not exported".into(),
            ));
        }
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let axis = per_sample_axis(args.int_or("dim", -1).or_shape()?, x.shape().len() + 1)?;
        let last = x.shape().len() - 1;
        let y = if axis == last {
            self.g.softmax(scope, &x)
        } else {
            let mut perm: Vec<usize> = (0..=last).collect();
            perm.swap(axis, last);
            let moved = self.g.transpose(scope, &x, &perm)?;
            let y = self.g.softmax(scope, &moved);
            self.g.transpose(scope, &y, &perm)?
        };
        self.bind(node, 0, y)
    }

    /// Exact `gelu` (`approximate='none'`); the tanh approximation is refused.
    pub(super) fn gelu(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "approximate"])?;
        match args.get("approximate") {
            None => {}
            Some(Argument::String(mode)) if mode == "none" => {}
            Some(other) => {
                return Err(arg_error(format!(
                    "gelu with approximate={other:?} is not exported (only the exact form)"
                )))
            }
        }
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let y = self.g.gelu(scope, &x)?;
        self.bind(node, 0, y)
    }

    /// `layer_norm` over the last axis (a one-element `normalized_shape`), decomposed.
    pub(super) fn layer_norm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(
            args,
            &[
                "input",
                "normalized_shape",
                "weight",
                "bias",
                "eps",
                "cudnn_enable",
            ],
        )?;
        let x = self.activation(args.tensor("input").or_shape()?)?;
        let Some(&width) = x.shape().last() else {
            return Err(arg_error(
                "layer_norm of a tensor with only a batch axis".into(),
            ));
        };
        let normalized = args.ints_or("normalized_shape", 1, &[]).or_shape()?;
        if normalized != [width as i64] {
            return Err(arg_error(format!(
                "layer_norm over {normalized:?} of per-sample {:?}: only the last axis is exported",
                x.shape()
            )));
        }
        let mut affine = [None, None];
        for (slot, name) in affine.iter_mut().zip(["weight", "bias"]) {
            if let Some(t) = args.optional_tensor(name).or_shape()? {
                *slot = Some(self.weight(&self.stored(t)?)?);
            }
        }
        let eps = args.float_or("eps", 1e-5).or_shape()? as f32;
        let axis = x.shape().len() - 1;
        let [gamma, beta] = &affine;
        let y = self
            .g
            .layer_norm(scope, &x, axis, [gamma.as_ref(), beta.as_ref()], eps)?;
        self.bind(node, 0, y)
    }

    pub(super) fn binary(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        op: &'static str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "other", "alpha"])?;
        if args.float_or("alpha", 1.0).or_shape()? != 1.0 {
            return Err(arg_error("add/sub with alpha ≠ 1 is not exported".into()));
        }
        let a = self.elementwise(args, "self", scope)?;
        let b = self.elementwise(args, "other", scope)?;
        if matches!(
            (&a, &b),
            (Elementwise::Constant(_), Elementwise::Constant(_))
        ) {
            return Err(arg_error(
                "both operands are constants; ops on constants alone are not exported".into(),
            ));
        }
        let y = emit::binary(&mut self.g, op, scope, a.operand(), b.operand())?;
        self.bind(node, 0, y)
    }

    /// An element-wise operand: an activation, a stored tensor or a scalar.
    fn elementwise(
        &mut self,
        args: &Args<'_>,
        name: &str,
        scope: &str,
    ) -> Result<Elementwise, OnnxError> {
        match args.get(name) {
            Some(Argument::Tensor(t)) if self.is_stored(t) => {
                Ok(Elementwise::Constant(self.weight(&self.stored(t)?)?))
            }
            Some(Argument::Tensor(t)) => Ok(Elementwise::Activation(self.activation(t)?)),
            Some(Argument::Int(i)) => Ok(Elementwise::Constant(
                self.g
                    .constant_scalar(&format!("{scope}.scalar"), *i as f32),
            )),
            Some(Argument::Float(f)) => Ok(Elementwise::Constant(
                self.g
                    .constant_scalar(&format!("{scope}.scalar"), *f as f32),
            )),
            Some(other) => Err(arg_error(format!("argument `{name}` is {}", other.kind()))),
            None => Err(arg_error(format!("argument `{name}` is missing"))),
        }
    }
}

/// An operand of an element-wise op, owned.
enum Elementwise {
    Activation(Value),
    Constant(crate::onnx::graph::Weight),
}

impl Elementwise {
    fn operand(&self) -> Operand<'_> {
        match self {
            Elementwise::Activation(v) => Operand::Activation(v),
            Elementwise::Constant(w) => Operand::Constant(w),
        }
    }
}
