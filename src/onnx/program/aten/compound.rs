//! Element-wise ops that are a few ONNX ops each: `remainder` (Python's sign rule, as
//! `a − ⌊a / b⌋ · b`), `addcmul`/`addcdiv` (`self + value · t1 ∘ t2`), and `stack` (each
//! input given the new axis, then one Concat).

use crate::onnx::graph::Value;
use crate::onnx::OnnxError;
use crate::torch::pt2::schema::Node;

use super::super::args::Args;
use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::pointwise::{operand, Elementwise, Emitted};
use super::{arg_error, per_sample_axis, reject_extra, OrShape};

impl<'p> Lowering<'p, '_> {
    /// Both operands in the graph; at least one must be an activation.
    fn emitted_pair(
        &mut self,
        a: Elementwise<'_>,
        b: Elementwise<'_>,
        scope: &str,
        op: &str,
    ) -> Result<(Emitted, Emitted), OnnxError> {
        let a = self.emitted_operand(&a, scope)?;
        let b = self.emitted_operand(&b, scope)?;
        if matches!((&a, &b), (Emitted::Constant(_), Emitted::Constant(_))) {
            return Err(arg_error(format!(
                "{op} of constants alone is not exported"
            )));
        }
        Ok((a, b))
    }

    /// `remainder.Tensor` / `remainder.Scalar`: `a − ⌊a / b⌋ · b`, whose sign follows `b`
    /// as Python's `%` does (ONNX `Mod` takes floats only as C's `fmod`).
    pub(super) fn remainder(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "other"])?;
        let (a, b) = self.emitted_pair(
            operand(args, "self")?,
            operand(args, "other")?,
            scope,
            "remainder",
        )?;
        let quotient = emit::binary(&mut self.g, "Div", scope, a.operand(), b.operand())?;
        let floored = self.g.unary("Floor", scope, &quotient, vec![]);
        let multiple = emit::binary(
            &mut self.g,
            "Mul",
            scope,
            Operand::Activation(&floored),
            b.operand(),
        )?;
        let y = emit::binary(
            &mut self.g,
            "Sub",
            scope,
            a.operand(),
            Operand::Activation(&multiple),
        )?;
        self.bind(node, 0, y)
    }

    /// `addcmul` (`op` = `Mul`) and `addcdiv` (`Div`): `self + value · (tensor1 op tensor2)`.
    pub(super) fn add_scaled(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        op: &'static str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "tensor1", "tensor2", "value"])?;
        let value = args.float_or("value", 1.0).or_shape()? as f32;
        let (t1, t2) = self.emitted_pair(
            operand(args, "tensor1")?,
            operand(args, "tensor2")?,
            scope,
            op,
        )?;
        let mut term = emit::binary(&mut self.g, op, scope, t1.operand(), t2.operand())?;
        if value != 1.0 {
            let c = self.g.constant_scalar(&format!("{scope}.value"), value);
            term = self.g.mul_constant(scope, &term, &c)?;
        }
        let base = self.emitted_operand(&operand(args, "self")?, scope)?;
        let y = emit::binary(
            &mut self.g,
            "Add",
            scope,
            base.operand(),
            Operand::Activation(&term),
        )?;
        self.bind(node, 0, y)
    }

    /// `stack(tensors, dim)`: activations of one shape, each given a size-1 axis at `dim`,
    /// concatenated along it.
    pub(super) fn stack(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["tensors", "dim"])?;
        let names = args.tensors("tensors").or_shape()?;
        let xs = names
            .iter()
            .map(|t| self.activation(t))
            .collect::<Result<Vec<_>, _>>()?;
        let Some(first) = xs.first() else {
            return Err(arg_error("stack of no tensors".into()));
        };
        if xs.iter().any(|x| x.shape() != first.shape()) {
            let shapes: Vec<&[u64]> = xs.iter().map(Value::shape).collect();
            return Err(arg_error(format!(
                "stack of per-sample shapes {shapes:?}, which differ"
            )));
        }
        // The output has one dimension more than each input (batch included).
        let axis = per_sample_axis(args.int_or("dim", 0).or_shape()?, first.shape().len() + 2)?;
        let mut shape = first.shape().to_vec();
        shape.insert(axis, 1);
        let lifted = xs
            .iter()
            .map(|x| self.g.reshape(scope, x, &shape))
            .collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<&Value> = lifted.iter().collect();
        let y = self.g.concat(scope, &refs, axis)?;
        self.bind(node, 0, y)
    }
}
