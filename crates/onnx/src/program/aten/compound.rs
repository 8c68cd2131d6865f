//! Element-wise ops that are a few ONNX ops each: `addcmul`/`addcdiv`
//! (`self + value · t1 ∘ t2`), `lerp`,
//! `isfinite`, and `stack` (each input given the new axis, then one Concat).

use crate::elem::ElemType;
use crate::graph::{GraphBuilder, Value};
use crate::OnnxError;
use ckpt_aten::program::Node;

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::super::tensor::{self, Size, Tensor};
use super::pointwise::{operand, Elementwise, Emitted, RowOperand};
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

impl<'p> Lowering<'p, '_> {
    /// Both operands in the graph; at least one must be an activation.
    pub(super) fn row_pair(
        &mut self,
        a: Elementwise<'_>,
        b: Elementwise<'_>,
        scope: &str,
        op: &str,
    ) -> Result<(RowOperand, RowOperand), OnnxError> {
        let a = self.row_operand(&a, scope)?;
        let b = self.row_operand(&b, scope)?;
        if matches!((&a, &b), (RowOperand::Constant(_), RowOperand::Constant(_))) {
            return Err(arg_error(format!(
                "{op} of constants alone is not exported"
            )));
        }
        Ok((a, b))
    }

    /// `e` in the graph as [`Lowering::bind`] takes these ops' results: an activation read
    /// by rows (float32), a constant or number as a float32 initializer.
    fn row_operand(&mut self, e: &Elementwise<'_>, scope: &str) -> Result<RowOperand, OnnxError> {
        Ok(match e {
            Elementwise::Tensor(t) if self.is_constant(t) => {
                RowOperand::Constant(self.constant_weight(t)?)
            }
            Elementwise::Tensor(t) => RowOperand::Activation(self.activation(t)?),
            Elementwise::Scalar(v) => RowOperand::Constant(
                self.g
                    .constant_scalar(&format!("{scope}.scalar"), *v as f32),
            ),
        })
    }

    /// `addcmul` (`op` = `Mul`) and `addcdiv` (`Div`): `self + value · (tensor1 op tensor2)`.
    pub(super) fn add_scaled(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        op: &'static str,
    ) -> Result<(), OnnxError> {
        let value = args.float("value").or_shape()? as f32;
        let [base, t1, t2] = [
            operand(args, "self")?,
            operand(args, "tensor1")?,
            operand(args, "tensor2")?,
        ];
        self.lift_for_constants(&[base, t1, t2])?;
        let (t1, t2) = self.row_pair(t1, t2, scope, op)?;
        let mut term = emit::binary(&mut self.g, op, scope, t1.operand(), t2.operand())?;
        if value != 1.0 {
            let c = self.g.constant_scalar(&format!("{scope}.value"), value);
            term = self.g.mul_constant(scope, &term, &c)?;
        }
        let base = self.row_operand(&base, scope)?;
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
        let axis = tensor::axis(args.int("dim").or_shape()?, first.rank() + 1)?;
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

/// One node `op` reading `inputs` (names), with one output of per-sample `shape` and
/// element type `elem`.
pub(super) fn typed(
    g: &mut GraphBuilder,
    op: &'static str,
    scope: &str,
    inputs: &[&str],
    shape: &[u64],
    elem: ElemType,
) -> Value {
    let inputs = inputs.iter().map(|&n| n.to_owned()).collect();
    g.typed_node(op, scope, inputs, vec![], vec![(shape.to_vec(), elem)])
        .swap_remove(0)
}

/// Whether each element of float `x` has its sign bit set (`-0.0` included, NaN
/// aside): `min(x, 1/x) < 0`, as `1/−0 = −∞` and `1/−∞ = −0`.
pub(super) fn sign_bit(g: &mut GraphBuilder, scope: &str, x: &Value) -> Value {
    let zero = g.constant_scalar(&format!("{scope}.zero"), 0.0);
    let inverse = g.unary("Reciprocal", scope, x, vec![]);
    let low = typed(
        g,
        "Min",
        scope,
        &[x.name(), inverse.name()],
        x.shape(),
        ElemType::Float32,
    );
    typed(
        g,
        "Less",
        scope,
        &[low.name(), zero.name()],
        x.shape(),
        ElemType::Bool,
    )
}

impl<'p> Lowering<'p, '_> {
    /// `isfinite(self)`: `|x| < ∞` for floats (false for NaN and both infinities; ATC
    /// has no `IsInf` at every opset); every integer or bool is finite (`x == x`).
    pub(super) fn isfinite(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let v = x.value();
        let shape = v.shape();
        let y = if v.elem() == ElemType::Float32 {
            let size = self.g.unary("Abs", scope, v, vec![]);
            let inf = self
                .g
                .constant_scalar(&format!("{scope}.infinity"), f32::INFINITY);
            typed(
                &mut self.g,
                "Less",
                scope,
                &[size.name(), inf.name()],
                shape,
                ElemType::Bool,
            )
        } else {
            typed(
                &mut self.g,
                "Equal",
                scope,
                &[v.name(), v.name()],
                shape,
                ElemType::Bool,
            )
        };
        self.bind_tensor(node, 0, x.with_value(y)?)
    }

    /// `lerp.Scalar(self, end, weight)` by torch's kernel: `self + w·(end − self)` for
    /// `|w| < ½`, else `end − (end − self)·(1 − w)` (the weight is known at export, so
    /// the branch is chosen there).
    pub(super) fn lerp(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let weight = args.number("weight").or_shape()? as f32;
        let (start, end) = (operand(args, "self")?, operand(args, "end")?);
        let elem = self.recorded_elem(self.output_name(node, 0)?)?;
        let start = self.operand_at(&start, scope, elem)?;
        let end = self.operand_at(&end, scope, elem)?;
        let step = self.elementwise(scope, "Sub", &end, &start)?;
        let (factor, base, op) = if weight.abs() < 0.5 {
            (weight, &start, "Add")
        } else {
            (1.0 - weight, &end, "Sub")
        };
        let c = Emitted::Constant(self.g.constant_scalar(&format!("{scope}.weight"), factor));
        let moved = self.elementwise(scope, "Mul", &step, &c)?;
        match self.elementwise(scope, op, base, &moved)? {
            Emitted::Activation(y) => self.bind_tensor(node, 0, y),
            Emitted::Constant(_) => Err(arg_error("lerp of constants is folded".into())),
        }
    }
}
