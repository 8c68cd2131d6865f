//! Division as torch rounds it, on float32, each exactly as torch's CPU kernels compute it:
//!
//! - `fmod`: C's `fmod`, the remainder of the truncated quotient (its sign is the
//!   dividend's), exact: ONNX `Mod` with `fmod = 1`. CANN's parser ignores `fmod` and
//!   builds its own `Mod`, which truncates as C does.
//! - `remainder` (Python's `%`): torch moves C's remainder to the divisor's sign,
//!   `r = fmod(a, b)`, plus `b` where `r ≠ 0` and the signs of `r` and `b` differ.
//! - `div` with `rounding_mode='trunc'`: `trunc(a / b)`; with `'floor'` (Python's `//`):
//!   torch's `div_floor_floating`, which floors the exact quotient `(a − fmod(a, b)) / b`
//!   rather than the rounded `a / b` (`3 // 0.1` is 29, where `⌊3 / 0.1⌋` rounds to 30).
//!
//! onnxruntime's `Where` gives `+0` for a chosen `−0`, so no result is chosen by `Where`
//! where its zero's sign matters: choices are added or subtracted, and a zero result gets
//! its sign by a factor of ±1 (`a // b` and `trunc(a / b)` are zeros of the sign of `a / b`).
//! Integer operands are exported for one case, `remainder` of an integer tensor by a
//! nonzero integer number (hashing ids into buckets): see [`Lowering::integer_remainder`].
//! Other integer operands are not exported.

use crate::aten::args::Args;
use crate::aten::program::{Argument, Node};
use crate::onnx::elem::ElemType;
use crate::onnx::graph::{Attr, Value};
use crate::onnx::OnnxError;

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::arg_error;
use super::compound::{sign_bit, typed};
use super::pointwise::{operand, Elementwise, RowOperand};

/// How `div` rounds its quotient (`rounding_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rounding {
    /// `None`: the quotient as IEEE division rounds it.
    Exact,
    /// `'trunc'`: toward zero.
    Trunc,
    /// `'floor'`: toward −∞, of the exact quotient.
    Floor,
}

impl Rounding {
    fn read(args: &Args<'_>) -> Result<Rounding, OnnxError> {
        match args.get("rounding_mode") {
            None | Some(Argument::None) => Ok(Rounding::Exact),
            Some(Argument::String(mode)) if mode == "trunc" => Ok(Rounding::Trunc),
            Some(Argument::String(mode)) if mode == "floor" => Ok(Rounding::Floor),
            Some(other) => Err(arg_error(format!(
                "div with rounding_mode {other:?}: torch's modes are 'trunc' and 'floor'"
            ))),
        }
    }
}

const F32: ElemType = ElemType::Float32;
const BOOL: ElemType = ElemType::Bool;

impl<'p> Lowering<'p, '_> {
    /// `fmod.Tensor` / `fmod.Scalar`: ONNX `Mod` with `fmod = 1`.
    pub(super) fn fmod(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let (a, b) = self.dividend_divisor(args, scope, "fmod")?;
        let r = self.c_remainder(scope, &a, &b.emitted)?;
        self.bind(node, 0, r)
    }

    /// `remainder.Tensor` / `remainder.Scalar`: C's remainder moved to the divisor's sign.
    pub(super) fn remainder(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        if let (Some(Argument::Tensor(t)), Some(&Argument::Int(b))) =
            (args.get("self"), args.get("other"))
        {
            // The element type read without emitting: only the integer path reads `t` here.
            if !self.is_constant(t)
                && matches!(
                    self.tensor(t)?.value().elem(),
                    ElemType::Int64 | ElemType::Int32
                )
            {
                let a = self.any_activation(t)?;
                return self.integer_remainder(node, &a, b, scope);
            }
        }
        let (a, b) = self.dividend_divisor(args, scope, "remainder")?;
        let r = self.c_remainder(scope, &a, &b.emitted)?;
        let moved = self.signs_differ(scope, &r, &b)?;
        // r − (moved ? −b : 0): `r − +0` keeps a −0 remainder, as torch does.
        let minus_b = self.negated(scope, &b)?;
        let zero = self.g.constant_scalar(&format!("{scope}.zero"), 0.0);
        let step = self.choose(scope, &moved, minus_b.operand(), Operand::Constant(&zero))?;
        let y = self.apply(
            scope,
            "Sub",
            Operand::Activation(&r),
            Operand::Activation(&step),
        )?;
        self.bind(node, 0, y)
    }

    /// `remainder.Scalar` of integer activation `a` by integer `b`, as Python's `%`: C's
    /// remainder (ONNX's `Mod` with `fmod = 1`, which is what ATC's Mod computes whatever
    /// `fmod` says) moved to the divisor's sign by a second one, `((a mod b) + b) mod b`,
    /// exact while `2·|b|` fits the type (`|a mod b| < |b|`; a divisor beyond 2⁵³ is refused
    /// too). A zero divisor, for which torch raises, is refused.
    fn integer_remainder(
        &mut self,
        node: &Node,
        a: &Value,
        b: i64,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let elem = a.elem();
        // Half the type's range, and exact as the f64 the constant is written from.
        let limit = if elem == ElemType::Int32 {
            i64::from(i32::MAX) / 2
        } else {
            1 << 53
        };
        if b == 0 || b.checked_abs().is_none_or(|m| m > limit) {
            return Err(arg_error(format!(
                "remainder of integers by {b}: only a nonzero divisor of magnitude at most {limit} is exported (torch raises on zero)"
            )));
        }
        if self.g.opset().version() < 10 {
            return Err(arg_error(
                "a remainder needs ONNX's Mod, from opset 10; pass --opset 11".into(),
            ));
        }
        let divisor = self
            .g
            .typed_scalar(&format!("{scope}.divisor"), b as f64, elem)?;
        let c_mod = |g: &mut crate::onnx::graph::GraphBuilder, x: &Value| {
            emit::single(g.typed_node(
                "Mod",
                scope,
                vec![x.name().to_owned(), divisor.name().to_owned()],
                vec![("fmod", Attr::Int(1))],
                vec![(x.shape().to_vec(), elem)],
            ))
        };
        let r = c_mod(&mut self.g, a);
        let shifted = emit::single(self.g.typed_node(
            "Add",
            scope,
            vec![r.name().to_owned(), divisor.name().to_owned()],
            vec![],
            vec![(r.shape().to_vec(), elem)],
        ));
        let y = c_mod(&mut self.g, &shifted);
        self.bind(node, 0, y)
    }

    /// `div.Tensor_mode` / `div.Scalar_mode`, and `floor_divide` (`floor`: Python's `//`,
    /// which always floors).
    pub(super) fn div_rounding(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        floor: bool,
    ) -> Result<(), OnnxError> {
        let rounding = if floor {
            Rounding::Floor
        } else {
            Rounding::read(args)?
        };
        let (a, b) = self.dividend_divisor(args, scope, "div")?;
        let q = self.apply(scope, "Div", a.operand(), b.emitted.operand())?;
        let y = match rounding {
            Rounding::Exact => q,
            Rounding::Trunc => {
                let negative = self.against_zero_value(scope, "Less", &q);
                let up = self.g.unary("Ceil", scope, &q, vec![]);
                let down = self.g.unary("Floor", scope, &q, vec![]);
                let t = self.choose(
                    scope,
                    &negative,
                    Operand::Activation(&up),
                    Operand::Activation(&down),
                )?;
                self.zero_signed_as(scope, &t, &q)
            }
            Rounding::Floor => self.floor_quotient(scope, &a, &b, &q)?,
        };
        self.bind(node, 0, y)
    }

    /// torch's `div_floor_floating(a, b)`: `a / b` where `b = 0`; else `div = (a − m) / b`
    /// with `m = fmod(a, b)`, less 1 where `m ≠ 0` and the signs of `m` and `b` differ;
    /// then `⌊div⌋`, plus 1 where `div − ⌊div⌋ > ½`; a zero takes the sign of `a / b`.
    fn floor_quotient(
        &mut self,
        scope: &str,
        a: &RowOperand,
        b: &Divisor,
        q: &Value,
    ) -> Result<Value, OnnxError> {
        let m = self.c_remainder(scope, a, &b.emitted)?;
        let whole = self.apply(scope, "Sub", a.operand(), Operand::Activation(&m))?;
        let div = self.apply(
            scope,
            "Div",
            Operand::Activation(&whole),
            b.emitted.operand(),
        )?;
        let one = self.g.constant_scalar(&format!("{scope}.one"), 1.0);
        let zero = self.g.constant_scalar(&format!("{scope}.zero"), 0.0);
        let minus_one = self.g.constant_scalar(&format!("{scope}.minus_one"), -1.0);
        let half = self.g.constant_scalar(&format!("{scope}.half"), 0.5);
        let moved = self.signs_differ(scope, &m, b)?;
        let less = self.choose(
            scope,
            &moved,
            Operand::Constant(&one),
            Operand::Constant(&zero),
        )?;
        let div = self.apply(
            scope,
            "Sub",
            Operand::Activation(&div),
            Operand::Activation(&less),
        )?;
        let floor = self.g.unary("Floor", scope, &div, vec![]);
        let fraction = self.apply(
            scope,
            "Sub",
            Operand::Activation(&div),
            Operand::Activation(&floor),
        )?;
        let round_up = self.apply(
            scope,
            "Greater",
            Operand::Activation(&fraction),
            Operand::Constant(&half),
        )?;
        // ⌊div⌋ − (round_up ? −1 : 0).
        let more = self.choose(
            scope,
            &round_up,
            Operand::Constant(&minus_one),
            Operand::Constant(&zero),
        )?;
        let floored = self.apply(
            scope,
            "Sub",
            Operand::Activation(&floor),
            Operand::Activation(&more),
        )?;
        // Where b = 0, torch returns a / b (±∞ or NaN, never a zero).
        let by_zero = self.against_zero(scope, "Equal", b)?;
        let chosen = self.choose(
            scope,
            &by_zero,
            Operand::Activation(q),
            Operand::Activation(&floored),
        )?;
        Ok(self.zero_signed_as(scope, &chosen, q))
    }

    /// Dividend `self` and divisor `other` in the graph: float32, at least one an activation.
    fn dividend_divisor(
        &mut self,
        args: &Args<'_>,
        scope: &str,
        op: &str,
    ) -> Result<(RowOperand, Divisor), OnnxError> {
        let (dividend, other) = (operand(args, "self")?, operand(args, "other")?);
        self.lift_for_constants(&[dividend, other])?;
        let (a, b) = self.row_pair(dividend, other, scope, op)?;
        let known = match (&b, other) {
            (RowOperand::Activation(_), _) => None,
            (RowOperand::Constant(w), Elementwise::Scalar(v)) => {
                Some((w.dims().to_vec(), vec![v as f32]))
            }
            (RowOperand::Constant(w), Elementwise::Tensor(t)) => {
                let c = self.constant(t)?;
                let values = self.read(&c)?;
                Some((w.dims().to_vec(), values))
            }
        };
        Ok((a, Divisor { emitted: b, known }))
    }

    /// C's `fmod(a, b)`: ONNX `Mod` with `fmod = 1` (from opset 10), exact.
    fn c_remainder(
        &mut self,
        scope: &str,
        a: &RowOperand,
        b: &RowOperand,
    ) -> Result<Value, OnnxError> {
        if self.g.opset().version() < 10 {
            return Err(arg_error(
                "a remainder needs ONNX's Mod, from opset 10; pass --opset 11".into(),
            ));
        }
        let shape = emit::broadcast_shape("fmod", scope, a.operand(), b.operand())?;
        let inputs = vec![a.operand().name().to_owned(), b.operand().name().to_owned()];
        let attrs = vec![("fmod", Attr::Int(1))];
        Ok(emit::single(self.g.typed_node(
            "Mod",
            scope,
            inputs,
            attrs,
            vec![(shape, F32)],
        )))
    }

    /// Bool: `r ≠ 0` and `r < 0` differs from `b < 0` (torch's test for moving a C
    /// remainder to the divisor's sign).
    fn signs_differ(&mut self, scope: &str, r: &Value, b: &Divisor) -> Result<Value, OnnxError> {
        let r_zero = self.against_zero_value(scope, "Equal", r);
        let r_nonzero = self.g.unary("Not", scope, &r_zero, vec![]);
        let r_negative = self.against_zero_value(scope, "Less", r);
        let b_negative = self.against_zero(scope, "Less", b)?;
        let differ = self.apply(
            scope,
            "Xor",
            Operand::Activation(&r_negative),
            b_negative.operand(),
        )?;
        self.apply(
            scope,
            "And",
            Operand::Activation(&r_nonzero),
            Operand::Activation(&differ),
        )
    }

    /// `x op 0` (`Less`, `Equal`) of an activation, as a bool activation.
    fn against_zero_value(&mut self, scope: &str, op: &'static str, x: &Value) -> Value {
        let zero = self.g.constant_scalar(&format!("{scope}.zero"), 0.0);
        typed(
            &mut self.g,
            op,
            scope,
            &[x.name(), zero.name()],
            x.shape(),
            BOOL,
        )
    }

    /// `x op 0` (`Less`, `Equal`) as a bool operand: a node for an activation, computed
    /// here for a constant (ONNX ops of constants alone are not written).
    fn against_zero(
        &mut self,
        scope: &str,
        op: &'static str,
        b: &Divisor,
    ) -> Result<RowOperand, OnnxError> {
        let test = |v: f32| match op {
            "Less" => v < 0.0,
            _ => v == 0.0,
        };
        Ok(match (&b.emitted, &b.known) {
            (RowOperand::Activation(v), _) => {
                RowOperand::Activation(self.against_zero_value(scope, op, v))
            }
            (RowOperand::Constant(_), Some((dims, values))) => {
                let truth: Vec<f64> = values
                    .iter()
                    .map(|&v| f64::from(u8::from(test(v))))
                    .collect();
                RowOperand::Constant(self.g.typed_constant(
                    &format!("{scope}.{}", op.to_lowercase()),
                    dims.clone(),
                    &truth,
                    BOOL,
                )?)
            }
            (RowOperand::Constant(w), None) => {
                return Err(arg_error(format!(
                    "the divisor `{}` has no known values",
                    w.name()
                )))
            }
        })
    }

    /// `−b` as an operand: a `Neg` node for an activation, a negated constant otherwise.
    fn negated(&mut self, scope: &str, b: &Divisor) -> Result<RowOperand, OnnxError> {
        Ok(match (&b.emitted, &b.known) {
            (RowOperand::Activation(v), _) => {
                RowOperand::Activation(self.g.unary("Neg", scope, v, vec![]))
            }
            (RowOperand::Constant(_), Some((dims, values))) => {
                let negated: Vec<f32> = values.iter().map(|v| -v).collect();
                RowOperand::Constant(self.g.folded(
                    &format!("{scope}.negated"),
                    dims.clone(),
                    &negated,
                )?)
            }
            (RowOperand::Constant(w), None) => {
                return Err(arg_error(format!(
                    "the divisor `{}` has no known values",
                    w.name()
                )))
            }
        })
    }

    /// `op(a, b)` broadcast within each sample, typed as [`emit::binary_node`] types it.
    fn apply(
        &mut self,
        scope: &str,
        op: &'static str,
        a: Operand<'_>,
        b: Operand<'_>,
    ) -> Result<Value, OnnxError> {
        emit::binary(&mut self.g, op, scope, a, b)
    }

    /// `Where(condition, x, y)` of float32 operands, broadcast within each sample.
    fn choose(
        &mut self,
        scope: &str,
        condition: &impl AsOperand,
        x: Operand<'_>,
        y: Operand<'_>,
    ) -> Result<Value, OnnxError> {
        let condition = condition.operand();
        // Each pair with an activation in it, broadcast together (two operands may be
        // constants, never all three).
        let mut shape: Option<Vec<u64>> = None;
        for (p, q) in [(x, y), (condition, x), (condition, y)] {
            if let Ok(s) = emit::broadcast_shape("Where", scope, p, q) {
                shape = match shape {
                    None => Some(s),
                    Some(t) => emit::broadcast(&t, &s),
                };
            }
        }
        let shape = shape.ok_or_else(|| {
            arg_error(format!("{scope}: Where of constants alone is not written"))
        })?;
        let inputs = [condition.name(), x.name(), y.name()];
        Ok(typed(&mut self.g, "Where", scope, &inputs, &shape, F32))
    }

    /// `r` with each zero given the sign of `q` (a factor of −1 where they differ).
    fn zero_signed_as(&mut self, scope: &str, r: &Value, q: &Value) -> Value {
        let g = &mut self.g;
        let zero = g.constant_scalar(&format!("{scope}.zero"), 0.0);
        let shape = r.shape().to_vec();
        let is_zero = typed(g, "Equal", scope, &[r.name(), zero.name()], &shape, BOOL);
        let (r_sign, q_sign) = (sign_bit(g, scope, r), sign_bit(g, scope, q));
        let differ = typed(
            g,
            "Xor",
            scope,
            &[r_sign.name(), q_sign.name()],
            &shape,
            BOOL,
        );
        let flip = typed(
            g,
            "And",
            scope,
            &[is_zero.name(), differ.name()],
            &shape,
            BOOL,
        );
        let minus_one = g.constant_scalar(&format!("{scope}.minus_one"), -1.0);
        let one = g.constant_scalar(&format!("{scope}.one"), 1.0);
        let factor = typed(
            g,
            "Where",
            scope,
            &[flip.name(), minus_one.name(), one.name()],
            &shape,
            F32,
        );
        typed(g, "Mul", scope, &[r.name(), factor.name()], &shape, F32)
    }
}

/// The divisor in the graph, with its values when it is a constant (its sign and zeros
/// are then computed here, as ONNX ops of constants alone are not written).
struct Divisor {
    emitted: RowOperand,
    known: Option<(Vec<u64>, Vec<f32>)>,
}

/// A value that is an operand of a node: an activation or a [`RowOperand`].
trait AsOperand {
    fn operand(&self) -> Operand<'_>;
}

impl AsOperand for Value {
    fn operand(&self) -> Operand<'_> {
        Operand::Activation(self)
    }
}

impl AsOperand for RowOperand {
    fn operand(&self) -> Operand<'_> {
        RowOperand::operand(self)
    }
}
