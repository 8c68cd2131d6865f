//! Element-wise ops that are a few ONNX ops each: `remainder` (Python's sign rule, as
//! `a − ⌊a / b⌋ · b`), `addcmul`/`addcdiv` (`self + value · t1 ∘ t2`), and `stack` (each
//! input given the new axis, then one Concat).

use crate::aten::program::Node;
use crate::onnx::OnnxError;

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::super::tensor::{self, Size, Tensor};
use super::pointwise::{operand, Elementwise, Emitted};
use super::{arg_error, OrShape};
use crate::aten::args::Args;

impl<'p> Lowering<'p, '_> {
    /// Both operands in the graph; at least one must be an activation.
    fn emitted_pair(
        &mut self,
        a: Elementwise<'_>,
        b: Elementwise<'_>,
        scope: &str,
        op: &str,
    ) -> Result<(Emitted, Emitted), OnnxError> {
        let a = self.batch_first_operand(&a, scope)?;
        let b = self.batch_first_operand(&b, scope)?;
        if matches!((&a, &b), (Emitted::Constant(_), Emitted::Constant(_))) {
            return Err(arg_error(format!(
                "{op} of constants alone is not exported"
            )));
        }
        Ok((a, b))
    }

    /// `e` in the graph; an activation must be float32 with its batch first, as
    /// [`Lowering::bind`] takes these ops' results.
    fn batch_first_operand(
        &mut self,
        e: &Elementwise<'_>,
        scope: &str,
    ) -> Result<Emitted, OnnxError> {
        if let Elementwise::Tensor(t) = e {
            if !self.is_constant(t) {
                self.activation(t)?;
            }
        }
        self.emitted_operand(e, scope)
    }

    /// `remainder.Tensor` / `remainder.Scalar`: `a − ⌊a / b⌋ · b`, whose sign follows `b`
    /// as Python's `%` does (ONNX `Mod` takes floats only as C's `fmod`).
    pub(super) fn remainder(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
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
        let base = self.batch_first_operand(&operand(args, "self")?, scope)?;
        let y = emit::binary(
            &mut self.g,
            "Add",
            scope,
            base.operand(),
            Operand::Activation(&term),
        )?;
        self.bind(node, 0, y)
    }

    /// `stack(tensors, dim)`: activations of one layout, each given a size-1 axis at `dim`,
    /// concatenated along it.
    pub(super) fn stack(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let names = args.tensors("tensors").or_shape()?;
        let xs = names
            .iter()
            .map(|t| self.tensor(t))
            .collect::<Result<Vec<_>, _>>()?;
        let Some(first) = xs.first() else {
            return Err(arg_error("stack of no tensors".into()));
        };
        // The output has one dimension more than each input.
        let axis = tensor::axis(args.int_or("dim", 0).or_shape()?, first.rank() + 1)?;
        let mut lifted = Vec::with_capacity(xs.len());
        for x in xs {
            let mut sizes = x.sizes();
            sizes.insert(axis, Size::fixed(1));
            lifted.push(x.reshaped(&mut self.g, scope, &sizes)?);
        }
        let y = Tensor::concat(&mut self.g, scope, &lifted, axis)?;
        self.bind_tensor(node, 0, y)
    }
}
