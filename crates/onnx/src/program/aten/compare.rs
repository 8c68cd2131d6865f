//! The ops that make and consume bool masks and integer tensors: comparisons
//! (`eq`/`ne`/`lt`/`le`/`gt`/`ge`, `.Tensor` and `.Scalar`), logical and bitwise ops on
//! bools, `where` and `masked_fill` (ONNX `Where`), and dtype conversions (`to`,
//! `_to_copy`: `Cast`).
//!
//! Operands follow torch's type promotion (bool < int32 < int64 < float32): the lower is
//! cast up, and a constant or number is written at the promoted type. Opset 11 has `Equal`,
//! `Less` and `Greater` only (`LessOrEqual`/`GreaterOrEqual` come at 12), so `ne` is the
//! `Not` of `Equal`, and `ge`/`le` the `Or` of `Greater`/`Less` and `Equal`: false with NaN,
//! as torch's ([`Comparison`]).

use crate::elem::ElemType;
use crate::graph::Value;
use crate::OnnxError;
use ckpt_aten::eval;
use ckpt_aten::program::Node;

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::super::tensor::{self, Tensor};
use super::pointwise::{operand, Elementwise, Emitted, RowOperand};
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

/// The ONNX comparison for aten op `op` (`lt.Scalar`), and whether its result is negated.
pub(super) fn comparison(op: &str) -> Option<Comparison> {
    Some(match op.split('.').next()? {
        "eq" => Comparison::Is("Equal"),
        "ne" => Comparison::Not("Equal"),
        "lt" => Comparison::Is("Less"),
        "gt" => Comparison::Is("Greater"),
        "ge" => Comparison::OrEqual("Greater"),
        "le" => Comparison::OrEqual("Less"),
        _ => return None,
    })
}

/// A torch comparison in opset-11 ops, which has `Equal`, `Less` and `Greater` only
/// (`LessOrEqual`/`GreaterOrEqual` come at 12). Every comparison with NaN is false but
/// `ne`, as in torch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Comparison {
    /// One ONNX op: `eq`, `lt`, `gt`.
    Is(&'static str),
    /// The `Not` of one: `ne` (true with NaN, as torch's).
    Not(&'static str),
    /// The `Or` of an ordering and `Equal`: `ge`, `le` (false with NaN, where the `Not` of
    /// `Less` or `Greater` would be true).
    OrEqual(&'static str),
}

impl Comparison {
    /// The ONNX ops computed on the two operands, each a bool tensor.
    fn ops(self) -> Vec<&'static str> {
        match self {
            Comparison::Is(op) | Comparison::Not(op) => vec![op],
            Comparison::OrEqual(op) => vec![op, "Equal"],
        }
    }
}

/// torch's promotion order of the element types the export handles.
fn promotion(elem: ElemType) -> u8 {
    match elem {
        ElemType::Bool => 0,
        ElemType::Int32 => 1,
        ElemType::Int64 => 2,
        ElemType::Float32 => 3,
    }
}

/// The type two operands of types `a` and `b` are computed at.
fn promoted(a: ElemType, b: ElemType) -> ElemType {
    if promotion(a) >= promotion(b) {
        a
    } else {
        b
    }
}

impl<'p> Lowering<'p, '_> {
    /// The element type of an operand when it is computed from the input (`None` for
    /// constants and numbers, which take their partner's type).
    fn computed_elem(&self, e: &Elementwise<'_>) -> Result<Option<ElemType>, OnnxError> {
        match e {
            Elementwise::Tensor(t) if !self.is_constant(t) => {
                Ok(Some(self.tensor(t)?.value().elem()))
            }
            _ => Ok(None),
        }
    }

    /// The type a set of operands is computed at: the promoted type of the computed ones,
    /// float32 when a number has a fraction (`ids < 0.5`). At least one must be computed.
    fn common_elem(&self, operands: &[Elementwise<'_>]) -> Result<ElemType, OnnxError> {
        let mut common = None;
        for e in operands {
            if let Some(elem) = self.computed_elem(e)? {
                common = Some(common.map_or(elem, |c| promoted(c, elem)));
            }
        }
        let Some(mut common) = common else {
            return Err(arg_error(
                "every operand is a constant; comparisons and selections of constants alone are not folded".into(),
            ));
        };
        let fractional = operands
            .iter()
            .any(|e| matches!(e, Elementwise::Scalar(v) if v.fract() != 0.0 || !v.is_finite()));
        if fractional && common != ElemType::Float32 {
            common = ElemType::Float32;
        }
        Ok(common)
    }

    /// Operand `e` in the graph at type `elem`: an activation cast if needed, a constant
    /// or number written at `elem`.
    fn typed(
        &mut self,
        e: &Elementwise<'_>,
        elem: ElemType,
        scope: &str,
    ) -> Result<RowOperand, OnnxError> {
        Ok(match e {
            Elementwise::Tensor(t) if self.is_constant(t) => {
                RowOperand::Constant(self.constant_weight_as(t, elem)?)
            }
            Elementwise::Tensor(t) => {
                let x = self.any_activation(t)?;
                RowOperand::Activation(emit::cast(&mut self.g, scope, &x, elem))
            }
            Elementwise::Scalar(v) => {
                RowOperand::Constant(self.g.typed_scalar(&format!("{scope}.scalar"), *v, elem)?)
            }
        })
    }

    /// `eq`/`ne`/`lt`/`le`/`gt`/`ge` (`.Tensor` and `.Scalar`): a bool tensor.
    pub(super) fn compare(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        op: &str,
    ) -> Result<(), OnnxError> {
        let Some(how) = comparison(op) else {
            return Err(arg_error(format!("`{op}` is not a comparison")));
        };
        let sides = [operand(args, "self")?, operand(args, "other")?];
        let mut elem = self.common_elem(&sides)?;
        if elem == ElemType::Bool && how.ops() != ["Equal"] {
            // ONNX orders numbers only; false < true as 0 < 1.
            elem = ElemType::Int32;
        }
        if self.batch_apart(&sides)? {
            // The batch on another dimension than the first (XLNet's `[seq, batch]`
            // masks): the comparison keeps every axis where it is.
            let a = self.operand_at(&sides[0], scope, elem)?;
            let b = self.operand_at(&sides[1], scope, elem)?;
            let mut parts = Vec::with_capacity(2);
            for onnx in how.ops() {
                let Emitted::Activation(y) = self.elementwise(scope, onnx, &a, &b)? else {
                    return Err(arg_error(format!("{onnx} of two constants is folded")));
                };
                parts.push(y);
            }
            let values: Vec<Value> = parts.iter().map(|t| t.value().clone()).collect();
            let y = self.combined(how, scope, values)?;
            let y = parts[0].with_value(y)?;
            return self.bind_tensor(node, 0, y);
        }
        let values = self.bool_nodes(&how.ops(), scope, sides, elem)?;
        let y = self.combined(how, scope, values)?;
        self.bind(node, 0, y)
    }

    /// The result of comparison `how` from the bool tensors of its [`Comparison::ops`].
    fn combined(
        &mut self,
        how: Comparison,
        scope: &str,
        values: Vec<Value>,
    ) -> Result<Value, OnnxError> {
        match (how, values.as_slice()) {
            (Comparison::Is(_), [y]) => Ok(y.clone()),
            (Comparison::Not(_), [y]) => Ok(self.g.unary("Not", scope, y, vec![])),
            (Comparison::OrEqual(_), [ordered, equal]) => Ok(emit::typed(
                &mut self.g,
                "Or",
                scope,
                [ordered.name(), equal.name()],
                ordered.shape(),
                ElemType::Bool,
            )),
            _ => Err(arg_error(format!(
                "{how:?} of {} bool tensors",
                values.len()
            ))),
        }
    }

    /// Whether an operand computed from the input has no rows to work on: its batch on a
    /// dimension other than the first.
    fn batch_apart(&self, operands: &[Elementwise<'_>]) -> Result<bool, OnnxError> {
        for e in operands {
            if let Elementwise::Tensor(t) = e {
                if !self.is_constant(t) {
                    let x = self.tensor(t)?;
                    if x.batch_axis().is_some_and(|axis| axis != 0) {
                        return Ok(true);
                    }
                }
            }
        }
        Ok(false)
    }

    /// `logical_not`, and `bitwise_not` of a bool tensor (`~mask`): `Not`.
    pub(super) fn logical_not(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        bitwise: bool,
    ) -> Result<(), OnnxError> {
        let name = args.tensor("self").or_shape()?;
        let x = self.any_activation(name)?;
        if bitwise && x.elem() != ElemType::Bool {
            return Err(arg_error(format!(
                "bitwise_not of a {} tensor is not exported; only of bool masks",
                x.elem()
            )));
        }
        let x = self.as_bool(&x, scope);
        let y = self.g.unary("Not", scope, &x, vec![]);
        self.bind(node, 0, y)
    }

    /// `logical_and`/`logical_or`, and `bitwise_and`/`bitwise_or` of bool tensors
    /// (`a & b`): `And`/`Or` (`onnx`).
    pub(super) fn logical(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        onnx: &'static str,
        bitwise: bool,
    ) -> Result<(), OnnxError> {
        let sides = [operand(args, "self")?, operand(args, "other")?];
        if bitwise && self.common_elem(&sides)? != ElemType::Bool {
            return Err(arg_error(
                "a bitwise operator on integers is not exported: opset 11 has none (BitwiseAnd, BitwiseOr and BitwiseXor arrived in opset 18); only of bool masks".into(),
            ));
        }
        let mut y = self.bool_nodes(&[onnx], scope, sides, ElemType::Bool)?;
        self.bind(node, 0, y.swap_remove(0))
    }

    /// Each of `ops` (comparisons, `And`, `Or`) of the same two operands, written once at
    /// type `elem`: bool tensors of their broadcast shape.
    fn bool_nodes(
        &mut self,
        ops: &[&'static str],
        scope: &str,
        sides: [Elementwise<'_>; 2],
        elem: ElemType,
    ) -> Result<Vec<Value>, OnnxError> {
        self.lift_for_constants(&sides)?;
        let [a, b] = [
            self.typed(&sides[0], elem, scope)?,
            self.typed(&sides[1], elem, scope)?,
        ];
        let mut out = Vec::with_capacity(ops.len());
        for &onnx in ops {
            let shape = emit::broadcast_shape(onnx, scope, a.operand(), b.operand())?;
            out.push(emit::typed(
                &mut self.g,
                onnx,
                scope,
                [a.operand().name(), b.operand().name()],
                &shape,
                ElemType::Bool,
            ));
        }
        Ok(out)
    }

    /// `x != 0` as a bool tensor (`x` itself when it is one).
    fn as_bool(&mut self, x: &Value, scope: &str) -> Value {
        emit::cast(&mut self.g, scope, x, ElemType::Bool)
    }

    /// `where.self(condition, self, other)` and its `.Scalar*` overloads.
    pub(super) fn where_(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let condition = operand(args, "condition")?;
        let (x, y) = (operand(args, "self")?, operand(args, "other")?);
        self.where_typed(node, scope, condition, x, y)
    }

    /// `masked_fill.Scalar(self, mask, value)` / `.Tensor` with a constant 0-d value:
    /// `where(mask, value, self)`.
    pub(super) fn masked_fill(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let value = match operand(args, "value")? {
            Elementwise::Tensor(t) if self.is_constant(t) => match self.constant_tensor(t)? {
                c if c.dims().iter().all(|&d| d == 1) => {
                    // Exactly: an int64 fill beyond float32's 2^24 stays itself.
                    let exact = Self::initializer_values(&c, ElemType::Int64);
                    Elementwise::Scalar(exact[0])
                }
                c => {
                    let dims = c.dims();
                    return Err(arg_error(format!(
                    "masked_fill with a value of sizes {dims:?}; only a single value is exported"
                )));
                }
            },
            Elementwise::Tensor(t) => {
                return Err(arg_error(format!(
                    "masked_fill with the computed value `{t}`; only a constant value is exported"
                )))
            }
            scalar => scalar,
        };
        let (mask, x) = (operand(args, "mask")?, operand(args, "self")?);
        self.where_typed(node, scope, mask, value, x)
    }

    /// `Where(condition, x, y)` at the element type torch recorded for the result, of the
    /// shape its operands broadcast to within each sample (a `[N, 1, S, S]` padding mask
    /// selecting from a `[1, H, S, S]` position bias gives `[N, H, S, S]`).
    fn where_typed(
        &mut self,
        node: &Node,
        scope: &str,
        condition: Elementwise<'_>,
        x: Elementwise<'_>,
        y: Elementwise<'_>,
    ) -> Result<(), OnnxError> {
        // Some operand must be computed from the input (a constant result is not folded).
        self.common_elem(&[condition, x, y])?;
        let elem = self.recorded_elem(self.output_name(node, 0)?)?;
        if self.batch_apart(&[condition, x, y])? {
            let y = self.where_apart(scope, [(condition, ElemType::Bool), (x, elem), (y, elem)])?;
            return self.bind_tensor(node, 0, y);
        }
        self.lift_for_constants(&[condition, x, y])?;
        let typed = [
            self.typed(&condition, ElemType::Bool, scope)?,
            self.typed(&x, elem, scope)?,
            self.typed(&y, elem, scope)?,
        ];
        let widest = typed
            .iter()
            .filter_map(|t| match t {
                RowOperand::Activation(v) => Some(v),
                RowOperand::Constant(_) => None,
            })
            .max_by_key(|v| v.shape().iter().product::<u64>())
            .cloned()
            .ok_or_else(|| arg_error("where of constants alone is not folded".into()))?;
        let mut shape = widest.shape().to_vec();
        for t in &typed {
            let with =
                emit::broadcast_shape("Where", scope, Operand::Activation(&widest), t.operand())?;
            shape = emit::broadcast(&shape, &with).ok_or_else(|| {
                arg_error(format!(
                    "where of operands of per-sample sizes {shape:?} and {with:?}, which do not broadcast"
                ))
            })?;
        }
        let inputs = typed
            .iter()
            .map(|t| t.operand().name().to_owned())
            .collect();
        let mut out = self
            .g
            .typed_node("Where", scope, inputs, vec![], vec![(shape, elem)]);
        self.bind(node, 0, out.swap_remove(0))
    }

    /// `Where` of operands at their types when the batch is on a dimension other than the
    /// first: every activation of one rank with the batch on one dimension (torch aligns
    /// them from the right, so the batch meets the batch), every constant of size 1 there;
    /// the result keeps that layout.
    fn where_apart(
        &mut self,
        scope: &str,
        operands: [(Elementwise<'_>, ElemType); 3],
    ) -> Result<Tensor, OnnxError> {
        let mut layout: Option<Tensor> = None;
        let mut names = Vec::new();
        let mut constants = Vec::new();
        let mut activations: Vec<Vec<u64>> = Vec::new();
        for (e, elem) in &operands {
            match e {
                Elementwise::Tensor(t) if !self.is_constant(t) => {
                    let x = self.tensor(t)?;
                    if layout.as_ref().is_some_and(|l| !l.same_batch(&x)) {
                        return Err(arg_error(format!(
                            "where of {} and {}: the batch must be on the same dimension of both, the same number of times",
                            tensor::show(&layout.as_ref().map_or_else(Vec::new, Tensor::sizes)),
                            tensor::show(&x.sizes())
                        )));
                    }
                    let cast = emit::cast(&mut self.g, scope, x.value(), *elem);
                    names.push(cast.name().to_owned());
                    activations.push(cast.shape().to_vec());
                    layout = Some(x.with_value(cast)?);
                }
                e => {
                    let RowOperand::Constant(w) = self.typed(e, *elem, scope)? else {
                        return Err(arg_error("a constant operand was computed".into()));
                    };
                    names.push(w.name().to_owned());
                    constants.push(w);
                }
            }
        }
        let layout =
            layout.ok_or_else(|| arg_error("where of constants alone is not folded".into()))?;
        let sizes = layout.sizes();
        let mut shape: Vec<u64> = layout.value().shape().to_vec();
        for other in &activations {
            shape = emit::broadcast(&shape, other).ok_or_else(|| {
                arg_error(format!("where of per-sample sizes {shape:?} and {other:?}"))
            })?;
        }
        for w in &constants {
            let dims = w.dims();
            let offset = sizes.len().checked_sub(dims.len());
            let mut widened = sizes.clone();
            let fits = offset.is_some_and(|offset| {
                dims.iter().enumerate().all(|(i, &d)| {
                    let s = &mut widened[offset + i];
                    let fits = d == 1 || (!s.batch && (d == s.count || s.count == 1));
                    if fits && !s.batch && s.count == 1 {
                        s.count = d;
                    }
                    fits
                })
            });
            if !fits {
                return Err(arg_error(format!(
                    "where of {} and `{}` {dims:?}: the constant must broadcast to the tensor, with size 1 on the batch dimension",
                    tensor::show(&sizes),
                    w.name()
                )));
            }
            let per_sample: Vec<u64> = widened
                .iter()
                .filter(|s| !s.batch)
                .map(|s| s.count)
                .collect();
            shape = emit::broadcast(&shape, &per_sample).ok_or_else(|| {
                arg_error(format!(
                    "where of per-sample sizes {shape:?} and {per_sample:?}"
                ))
            })?;
        }
        let elem = operands[1].1;
        let mut out = self
            .g
            .typed_node("Where", scope, names, vec![], vec![(shape, elem)]);
        layout.with_value(out.swap_remove(0))
    }

    /// `to.dtype`, `to.dtype_layout`, `to.device`, `_to_copy`, `type_as` (whose `other`
    /// gives only the type): a `Cast` to the type torch
    /// recorded for the result (nothing when it is the same; the device does not change
    /// the values); a constant is converted at export (toward zero for integers, `!= 0`
    /// for bool).
    pub(super) fn convert(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let name = args.tensor("self").or_shape()?;
        let to = self.recorded_elem(self.output_name(node, 0)?)?;
        if self.is_constant(name) {
            let (dims, values) = self.constant_values(name)?;
            let values = values
                .into_iter()
                .map(|v| match to {
                    ElemType::Float32 => v,
                    ElemType::Bool => f32::from(u8::from(v != 0.0)),
                    ElemType::Int64 | ElemType::Int32 => v.trunc(),
                })
                .collect();
            let tensor =
                eval::Tensor::f32(dims, values).map_err(|what| OnnxError::Shape { what })?;
            return match self.uniform_axis(name) {
                Some(_) => self.bind_uniform(node, 0, tensor),
                None => self.bind_folded(node, 0, tensor),
            };
        }
        let x = self.tensor(name)?;
        let y = emit::cast(&mut self.g, scope, x.value(), to);
        self.bind_tensor(node, 0, x.with_value(y)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_map_to_opset_11_ops() {
        assert_eq!(comparison("eq.Scalar"), Some(Comparison::Is("Equal")));
        assert_eq!(comparison("ne.Tensor"), Some(Comparison::Not("Equal")));
        assert_eq!(comparison("le.Scalar"), Some(Comparison::OrEqual("Less")));
        assert_eq!(
            comparison("ge.Tensor"),
            Some(Comparison::OrEqual("Greater"))
        );
        assert_eq!(Comparison::OrEqual("Less").ops(), ["Less", "Equal"]);
        assert_eq!(comparison("add.Tensor"), None);
    }

    #[test]
    fn promotion_follows_torch() {
        assert_eq!(promoted(ElemType::Bool, ElemType::Int64), ElemType::Int64);
        assert_eq!(
            promoted(ElemType::Float32, ElemType::Int32),
            ElemType::Float32
        );
        assert_eq!(promoted(ElemType::Int32, ElemType::Int64), ElemType::Int64);
    }
}
