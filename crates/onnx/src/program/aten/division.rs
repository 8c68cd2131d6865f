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
//! Of integers (torch's result an integer type: ids hashed into buckets, positions
//! halved), every rounding is exact in ONNX's integer `Mod` and `Div` written so that no
//! node's result depends on how it rounds: see [`Lowering::integer_division`].

use crate::elem::ElemType;
use crate::graph::Value;
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::program::{Argument, Node};

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::arg_error;
use super::compound::{sign_bit, typed};
use super::pointwise::{operand, Elementwise, Emitted, RowOperand};

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

/// What [`Lowering::integer_division`] computes.
#[derive(Clone, Copy, Debug)]
enum IntegerDivision {
    /// `fmod`: the remainder of the truncated quotient.
    CRemainder,
    /// `remainder`: the remainder of the floored quotient.
    Remainder,
    /// `div` with `rounding_mode='trunc'`.
    TruncatedQuotient,
    /// `div` with `rounding_mode='floor'`, `floor_divide`.
    FlooredQuotient,
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
        if self.integer_division(node, args, scope, IntegerDivision::CRemainder)? {
            return Ok(());
        }
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
        if self.integer_division(node, args, scope, IntegerDivision::Remainder)? {
            return Ok(());
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

    /// `node` computed on integers when torch's result is an integer type (`true`; `false`
    /// leaves it to the float32 lowering): operands at that type (a narrower activation
    /// cast, constants written exactly), `m = a mod b` as C's `fmod` (ONNX `Mod` with
    /// `fmod = 1`, what ATC's Mod computes whatever `fmod` says), then
    ///
    /// - `fmod`: `m`;
    /// - `remainder` (Python's `%`): `(m + b) mod b`, exact while `2·|b|` fits the type;
    /// - `div` rounding `'trunc'`: `(a − m) / b`; `'floor'` (Python's `//`): `(a − r) / b`
    ///   with `r` the remainder: both divisions are exact, so no rounding of ONNX's
    ///   integer `Div` is relied on.
    ///
    /// A constant divisor with a zero, for which torch raises, is refused (an activation's
    /// zeros are torch's error too); so is a number divisor beyond half the type's range.
    fn integer_division(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        division: IntegerDivision,
    ) -> Result<bool, OnnxError> {
        let elem = self.recorded_elem(self.output_name(node, 0)?)?;
        if !elem.is_integer() {
            return Ok(false);
        }
        if self.g.opset().version() < 10 {
            return Err(arg_error(
                "an integer division needs ONNX's Mod, from opset 10; pass --opset 11".into(),
            ));
        }
        let (dividend, divisor) = (operand(args, "self")?, operand(args, "other")?);
        self.check_integer_divisor(divisor, elem)?;
        let a = self.operand_at(&dividend, scope, elem)?;
        let b = self.operand_at(&divisor, scope, elem)?;
        let m = self.elementwise(scope, "Mod", &a, &b)?;
        // The remainder a quotient is exact after: C's for 'trunc', Python's for 'floor'.
        let remainder = match division {
            IntegerDivision::CRemainder | IntegerDivision::TruncatedQuotient => m,
            IntegerDivision::Remainder | IntegerDivision::FlooredQuotient => {
                let shifted = self.elementwise(scope, "Add", &m, &b)?;
                self.elementwise(scope, "Mod", &shifted, &b)?
            }
        };
        let y = match division {
            IntegerDivision::CRemainder | IntegerDivision::Remainder => remainder,
            IntegerDivision::TruncatedQuotient | IntegerDivision::FlooredQuotient => {
                let whole = self.elementwise(scope, "Sub", &a, &remainder)?;
                self.elementwise(scope, "Div", &whole, &b)?
            }
        };
        match y {
            Emitted::Activation(y) => self.bind_tensor(node, 0, y).map(|()| true),
            Emitted::Constant(_) => Err(arg_error(
                "a division of constants alone is folded, not emitted".into(),
            )),
        }
    }

    /// Refuses a constant integer divisor torch raises on (a zero) or whose remainder
    /// `(m + b)` could overflow `elem` (beyond half its range; a number beyond 2⁵³ is not
    /// exact as the f64 it is written from either).
    fn check_integer_divisor(
        &mut self,
        divisor: Elementwise<'_>,
        elem: ElemType,
    ) -> Result<(), OnnxError> {
        let limit = if elem == ElemType::Int32 {
            i64::from(i32::MAX) / 2
        } else {
            1 << 53
        };
        let values = match divisor {
            Elementwise::Scalar(v) => vec![v as i64],
            Elementwise::Tensor(t) if self.is_constant(t) => self
                .constant_tensor(t)?
                .to_i64()
                .map_err(|what| arg_error(format!("the divisor `{t}`: {what}")))?,
            Elementwise::Tensor(_) => return Ok(()),
        };
        match values.iter().find(|&&b| b == 0 || b.checked_abs().is_none_or(|m| m > limit)) {
            Some(b) => Err(arg_error(format!(
                "integer division by {b}: only nonzero divisors of magnitude at most {limit} are exported (torch raises on zero)"
            ))),
            None => Ok(()),
        }
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
        let integer = match rounding {
            Rounding::Exact => None,
            Rounding::Trunc => Some(IntegerDivision::TruncatedQuotient),
            Rounding::Floor => Some(IntegerDivision::FlooredQuotient),
        };
        if let Some(division) = integer {
            if self.integer_division(node, args, scope, division)? {
                return Ok(());
            }
        }
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
        self.apply(scope, "Mod", a.operand(), b.operand())
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
