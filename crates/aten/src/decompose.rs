//! torch's own decompositions, ported as data: each rule rewrites an aten op into a few
//! element-wise functions the export already computes, as `torch/_refs/__init__.py` and
//! `torch/_decomp/decompositions.py` define the op (each row cites the torch function it
//! ports). One table serves both consumers: the evaluator computes a rule on constants
//! ([`Expr::eval`]), and the ONNX lowering writes it as one node per function
//! (`onnx::program::aten::decompose`), so an op torch can decompose into those functions
//! is never refused for lack of a lowering, and its NaN, ±inf and −0 behaviour is the
//! rule's, the same in both.
//!
//! The functions ([`Fn`]) are IEEE float32 operations whose special values are fixed
//! (no `Min`/`Max`, whose NaN handling runtimes differ on, and no `Sign`, which keeps NaN
//! where torch gives 0); predicates give bools, held as 0/1.

use super::args::Args;
use super::dim::Dim;
use super::eval::{axis, broadcast, element_count, Tensor};
use super::program::{Argument, Node};

/// One element-wise function of a rule, named as its ONNX operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fn {
    Neg,
    Abs,
    Exp,
    Log,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    Erf,
    Sqrt,
    Floor,
    Ceil,
    /// To the nearest integer, ties to even (`Round`).
    Round,
    /// `Elu` with α = 1: `x` for `x ≥ 0` (−0 kept), `eˣ − 1` below.
    Elu,
    Add,
    Sub,
    Mul,
    Div,
    /// `aᵇ` (`Pow`).
    Pow,
    /// Bool `a < b`.
    Less,
    /// Bool `a > b`.
    Greater,
    /// Bool `a == b`.
    Equal,
    /// Bool NaN test.
    IsNan,
    /// Bool `a and b`.
    And,
    /// Bool `a or b`.
    Or,
    /// Bool `not a`.
    Not,
    /// `Where(condition, a, b)`.
    Where,
    /// A bool as float32 0/1 (`Cast`).
    Float,
}

impl Fn {
    /// The ONNX operator computing it.
    pub fn onnx(self) -> &'static str {
        match self {
            Fn::Neg => "Neg",
            Fn::Abs => "Abs",
            Fn::Exp => "Exp",
            Fn::Log => "Log",
            Fn::Sin => "Sin",
            Fn::Cos => "Cos",
            Fn::Tan => "Tan",
            Fn::Asin => "Asin",
            Fn::Acos => "Acos",
            Fn::Atan => "Atan",
            Fn::Sinh => "Sinh",
            Fn::Cosh => "Cosh",
            Fn::Asinh => "Asinh",
            Fn::Acosh => "Acosh",
            Fn::Atanh => "Atanh",
            Fn::Erf => "Erf",
            Fn::Sqrt => "Sqrt",
            Fn::Floor => "Floor",
            Fn::Ceil => "Ceil",
            Fn::Round => "Round",
            Fn::Elu => "Elu",
            Fn::Add => "Add",
            Fn::Sub => "Sub",
            Fn::Mul => "Mul",
            Fn::Div => "Div",
            Fn::Pow => "Pow",
            Fn::Less => "Less",
            Fn::Greater => "Greater",
            Fn::Equal => "Equal",
            Fn::IsNan => "IsNaN",
            Fn::And => "And",
            Fn::Or => "Or",
            Fn::Not => "Not",
            Fn::Where => "Where",
            Fn::Float => "Cast",
        }
    }

    /// Whether the result is a bool.
    pub fn is_predicate(self) -> bool {
        matches!(
            self,
            Fn::Less | Fn::Greater | Fn::Equal | Fn::IsNan | Fn::And | Fn::Or | Fn::Not
        )
    }

    /// The function on values (bools as 0/1), as IEEE arithmetic and ONNX define it;
    /// computed in double precision (a float32 rule rounds each result,
    /// [`Expr::eval`]; a special function keeps double precision, `aten::special`).
    pub fn apply(self, v: &[f64]) -> Result<f64, String> {
        let truth = |b: bool| f64::from(u8::from(b));
        Ok(match (self, v) {
            (Fn::Neg, [x]) => -x,
            (Fn::Abs, [x]) => x.abs(),
            (Fn::Exp, [x]) => x.exp(),
            (Fn::Log, [x]) => x.ln(),
            (Fn::Sin, [x]) => x.sin(),
            (Fn::Cos, [x]) => x.cos(),
            (Fn::Tan, [x]) => x.tan(),
            (Fn::Asin, [x]) => x.asin(),
            (Fn::Acos, [x]) => x.acos(),
            (Fn::Atan, [x]) => x.atan(),
            (Fn::Sinh, [x]) => x.sinh(),
            (Fn::Cosh, [x]) => x.cosh(),
            (Fn::Asinh, [x]) => x.asinh(),
            (Fn::Acosh, [x]) => x.acosh(),
            (Fn::Atanh, [x]) => x.atanh(),
            (Fn::Erf, [x]) => super::eval::erf(*x),
            (Fn::Sqrt, [x]) => x.sqrt(),
            (Fn::Floor, [x]) => x.floor(),
            (Fn::Ceil, [x]) => x.ceil(),
            (Fn::Round, [x]) => x.round_ties_even(),
            (Fn::Elu, [x]) => elu(*x),
            (Fn::Add, [a, b]) => a + b,
            (Fn::Sub, [a, b]) => a - b,
            (Fn::Mul, [a, b]) => a * b,
            (Fn::Div, [a, b]) => a / b,
            (Fn::Pow, [a, b]) => a.powf(*b),
            (Fn::Less, [a, b]) => truth(a < b),
            (Fn::Greater, [a, b]) => truth(a > b),
            (Fn::Equal, [a, b]) => truth(a == b),
            (Fn::IsNan, [x]) => truth(x.is_nan()),
            (Fn::And, [a, b]) => truth(*a != 0.0 && *b != 0.0),
            (Fn::Or, [a, b]) => truth(*a != 0.0 || *b != 0.0),
            (Fn::Not, [a]) => truth(*a == 0.0),
            (Fn::Where, [c, a, b]) => {
                if *c != 0.0 {
                    *a
                } else {
                    *b
                }
            }
            (Fn::Float, [x]) => *x,
            (f, v) => return Err(format!("{f:?} of {} operands", v.len())),
        })
    }
}

/// torch's SELU α and scale (`torch.nn.functional.selu`), as float32.
const SELU_ALPHA: f32 = 1.673_263_2;
const SELU_SCALE: f32 = 1.050_701;

fn elu(x: f64) -> f64 {
    if x >= 0.0 || x.is_nan() {
        x
    } else {
        x.exp_m1()
    }
}

/// An element-wise expression of the op's tensor arguments, broadcast together as
/// numpy broadcasts them.
#[derive(Debug)]
pub enum Expr {
    /// Tensor argument `name` (`self` for most rules: `X`).
    Tensor(&'static str),
    /// A float32 constant.
    Num(f32),
    /// Number argument `name` of the node, `default` when absent or `None`.
    Arg(&'static str, f64),
    /// `copysign(1, name)` of number argument `name`: ±1 by its sign bit.
    SignOf(&'static str),
    /// 1 when optional tensor argument `name` is given, 0 when it is absent or `None`: the
    /// condition of a `Where` whose chosen branch alone reads it.
    Given(&'static str),
    /// A function of the operands.
    F(Fn, &'static [Expr]),
}

use Expr::{Arg, Given, Num, SignOf, F};

/// Argument `self`, the input most rules are a function of.
const X: Expr = Expr::Tensor("self");

impl Expr {
    /// Whether the value is a bool (a predicate, or a `Where` choosing between bools).
    pub fn is_bool(&self) -> bool {
        match self {
            F(f, _) if f.is_predicate() => true,
            F(Fn::Where, [_, a, _]) => a.is_bool(),
            _ => false,
        }
    }

    /// The expression where each tensor argument has the value `at` gives for its name,
    /// numbers read from `node`.
    pub fn eval(&self, node: &Node, at: &dyn std::ops::Fn(&str) -> f32) -> Result<f32, String> {
        match self {
            Expr::Tensor(name) => Ok(at(name)),
            F(f, operands) => {
                let values = operands
                    .iter()
                    .map(|e| e.eval(node, at).map(f64::from))
                    .collect::<Result<Vec<_>, _>>()?;
                // Each function's result is a float32, as the graph's node computes it.
                Ok(f.apply(&values)? as f32)
            }
            constant => constant
                .number(node)?
                .ok_or_else(|| "not a constant".into()),
        }
    }

    /// The value of a constant leaf (`Num`, `Arg`, `SignOf`, `Given`); `None` for tensors and
    /// functions.
    pub fn number(&self, node: &Node) -> Result<Option<f32>, String> {
        let args = Args(node);
        Ok(match self {
            Num(v) => Some(*v),
            Arg(name, default) => Some(match args.get(name) {
                None | Some(Argument::None) => *default,
                // A bool argument (`equal_nan`) as 1 or 0.
                Some(Argument::Bool(b)) => f64::from(u8::from(*b)),
                Some(_) => args.number(name)?,
            } as f32),
            SignOf(name) => Some(1f32.copysign(args.number(name)? as f32)),
            Given(name) => Some(f32::from(u8::from(given(node, name)))),
            Expr::Tensor(_) | F(..) => None,
        })
    }

    /// The tensor arguments the expression reads, each once, in the order they appear.
    pub fn tensors(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        self.collect_tensors(&mut names);
        names
    }

    fn collect_tensors(&self, names: &mut Vec<&'static str>) {
        match self {
            Expr::Tensor(name) if !names.contains(name) => names.push(name),
            F(_, operands) => operands.iter().for_each(|e| e.collect_tensors(names)),
            _ => {}
        }
    }

    /// The expression of the tensors `tensor` gives by argument name, broadcast together
    /// (numpy's rules), as float32 (a bool as 0/1): each function rounded to float32, as
    /// the graph computes it. An optional tensor argument that is not given is not read
    /// (its entries are NaN, in the branch a `Where` of [`Expr::Given`] leaves aside).
    pub fn evaluate(
        &self,
        node: &Node,
        tensor: &dyn std::ops::Fn(&str) -> Result<Tensor, String>,
    ) -> Result<Tensor, String> {
        let names: Vec<&str> = self
            .tensors()
            .into_iter()
            .filter(|name| given(node, name))
            .collect();
        let tensors = names
            .iter()
            .map(|name| tensor(name))
            .collect::<Result<Vec<_>, _>>()?;
        let all: Vec<&[u64]> = tensors.iter().map(Tensor::dims).collect();
        let dims = broadcast(&all)?;
        let values = tensors
            .iter()
            .map(|t| Ok(t.expand(&dims)?.to_f32()))
            .collect::<Result<Vec<_>, String>>()?;
        let count = element_count(&dims)? as usize;
        let out = (0..count)
            .map(|k| {
                let at = |name: &str| {
                    names
                        .iter()
                        .position(|n| *n == name)
                        .map_or(f32::NAN, |i| values[i][k])
                };
                self.eval(node, &at)
            })
            .collect::<Result<Vec<f32>, String>>()?;
        Tensor::f32(dims, out)
    }
}

/// Whether argument `name` of `node` is given (present and not `None`).
pub fn given(node: &Node, name: &str) -> bool {
    !matches!(Args(node).get(name), None | Some(Argument::None))
}

/// One ported decomposition: aten overload `target` computes `expr` of its tensor
/// arguments.
#[derive(Debug)]
pub struct Pointwise {
    pub target: &'static str,
    /// The torch function the rule ports.
    pub port: &'static str,
    pub expr: Expr,
    /// Whether the op is a loss taking torch's `reduction` (0: none, 1: the mean of every
    /// entry, 2: their sum), applied to the rule's element-wise result.
    pub reduces: bool,
}

const fn rule(target: &'static str, port: &'static str, expr: Expr) -> Pointwise {
    Pointwise {
        target,
        port,
        expr,
        reduces: false,
    }
}

/// A loss: `expr` of its tensors, then torch's `reduction` ([`Pointwise::reduces`]).
const fn loss(target: &'static str, port: &'static str, expr: Expr) -> Pointwise {
    Pointwise {
        target,
        port,
        expr,
        reduces: true,
    }
}

/// How a loss reduces its element-wise result: ATen's `Reduction` enum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossReduction {
    None,
    Mean,
    Sum,
}

impl LossReduction {
    /// Argument `reduction` of loss `node`: ATen's 0, 1 or 2 (mean when absent, the
    /// default of every loss).
    pub fn of(node: &Node) -> Result<LossReduction, String> {
        match Args(node).get("reduction") {
            None => Ok(LossReduction::Mean),
            Some(Argument::Int(0)) => Ok(LossReduction::None),
            Some(Argument::Int(1)) => Ok(LossReduction::Mean),
            Some(Argument::Int(2)) => Ok(LossReduction::Sum),
            Some(other) => Err(format!("loss reduction {} is not 0, 1 or 2", other.kind())),
        }
    }
}

/// `expm1(x)`: `eˣ − 1`, ±0 kept.
const EXPM1: Expr = F(
    Fn::Where,
    &[
        F(Fn::Equal, &[X, Num(0.0)]),
        X,
        F(Fn::Sub, &[F(Fn::Exp, &[X]), Num(1.0)]),
    ],
);

/// `trunc(x)`: toward zero, −0 and NaN kept.
const TRUNC: Expr = F(
    Fn::Where,
    &[
        F(Fn::Less, &[X, Num(0.0)]),
        F(Fn::Ceil, &[X]),
        F(Fn::Floor, &[X]),
    ],
);

/// `sign(x)`: `(0 < x) − (x < 0)`, so NaN and −0 give 0.
const SIGN: Expr = F(
    Fn::Sub,
    &[
        F(Fn::Float, &[F(Fn::Greater, &[X, Num(0.0)])]),
        F(Fn::Float, &[F(Fn::Less, &[X, Num(0.0)])]),
    ],
);

/// `x` clamped to `[eps, 1 − eps]`, `eps` −1 when `None` (a clamp to `[−1, 2]`, which
/// changes no logit): `torch._refs.logit`'s clamp, NaN kept.
const LOGIT_CLAMPED: Expr = F(
    Fn::Where,
    &[
        F(Fn::Less, &[X, Arg("eps", -1.0)]),
        Arg("eps", -1.0),
        F(
            Fn::Where,
            &[
                F(Fn::Greater, &[X, F(Fn::Sub, &[Num(1.0), Arg("eps", -1.0)])]),
                F(Fn::Sub, &[Num(1.0), Arg("eps", -1.0)]),
                X,
            ],
        ),
    ],
);

/// Argument `other`, the second operand of most binary rules.
const OTHER: Expr = Expr::Tensor("other");

/// Bool `|x| = ∞`.
const X_INFINITE: Expr = F(Fn::Equal, &[F(Fn::Abs, &[X]), Num(f32::INFINITY)]);

/// Bool `|other| = ∞`.
const OTHER_INFINITE: Expr = F(Fn::Equal, &[F(Fn::Abs, &[OTHER]), Num(f32::INFINITY)]);

/// The larger of `x` and `other` as C's `std::max(x, other)` picks it (`x` unless
/// `x < other`), which a NaN on either side turns to NaN in [`LOGADDEXP`]'s sum.
const LARGER: Expr = F(Fn::Where, &[F(Fn::Less, &[X, OTHER]), OTHER, X]);

/// `−|x − other|`.
const MINUS_DISTANCE: Expr = F(Fn::Neg, &[F(Fn::Abs, &[F(Fn::Sub, &[X, OTHER])])]);

/// ATen's logaddexp kernel: `x` where both are the same infinity, else
/// `max + log1p(exp(−|x − other|))`.
const LOGADDEXP: Expr = F(
    Fn::Where,
    &[
        F(Fn::And, &[X_INFINITE, F(Fn::Equal, &[X, OTHER])]),
        X,
        F(
            Fn::Add,
            &[
                LARGER,
                F(
                    Fn::Log,
                    &[F(Fn::Add, &[F(Fn::Exp, &[MINUS_DISTANCE]), Num(1.0)])],
                ),
            ],
        ),
    ],
);

/// ATen's logaddexp2 kernel: as [`LOGADDEXP`] in base 2,
/// `max + log2(1 + 2^(−|x − other|))`.
const LOGADDEXP2: Expr = F(
    Fn::Where,
    &[
        F(Fn::And, &[X_INFINITE, F(Fn::Equal, &[X, OTHER])]),
        X,
        F(
            Fn::Add,
            &[
                LARGER,
                F(
                    Fn::Mul,
                    &[
                        F(
                            Fn::Log,
                            &[F(
                                Fn::Add,
                                &[
                                    F(
                                        Fn::Exp,
                                        &[F(
                                            Fn::Mul,
                                            &[MINUS_DISTANCE, Num(std::f32::consts::LN_2)],
                                        )],
                                    ),
                                    Num(1.0),
                                ],
                            )],
                        ),
                        Num(std::f32::consts::LOG2_E),
                    ],
                ),
            ],
        ),
    ],
);

/// `1 / x`, whose sign is `x`'s for ±0 too (`1/−0 = −∞`).
const X_INVERSE: Expr = F(Fn::Div, &[Num(1.0), X]);

/// Bool `signbit(x)`: `min(x, 1/x) < 0`, so −0 counts as negative and NaN as positive.
const X_SIGNBIT: Expr = F(
    Fn::Less,
    &[
        F(Fn::Where, &[F(Fn::Less, &[X, X_INVERSE]), X, X_INVERSE]),
        Num(0.0),
    ],
);

/// `1 / other`, whose sign is `other`'s for ±0 too (`1/−0 = −∞`).
const OTHER_INVERSE: Expr = F(Fn::Div, &[Num(1.0), OTHER]);

/// Bool `signbit(other)`: `min(other, 1/other) < 0`, so −0 counts as negative and NaN
/// as positive.
const OTHER_SIGNBIT: Expr = F(
    Fn::Less,
    &[
        F(
            Fn::Where,
            &[F(Fn::Less, &[OTHER, OTHER_INVERSE]), OTHER, OTHER_INVERSE],
        ),
        Num(0.0),
    ],
);

/// `−1` where `other`'s sign bit is set, else 1: a sign taken as a factor, since
/// onnxruntime's `Where` gives +0 for a chosen −0.
const OTHER_SIGN: Expr = F(Fn::Where, &[OTHER_SIGNBIT, Num(-1.0), Num(1.0)]);

/// `atan(|x| / |other|)`, the angle in the first quadrant: 0 where both are zero and π/4
/// where both are infinite (where the ratio is NaN).
const FIRST_QUADRANT: Expr = F(
    Fn::Where,
    &[
        F(Fn::And, &[X_INFINITE, OTHER_INFINITE]),
        Num(std::f32::consts::FRAC_PI_4),
        F(
            Fn::Where,
            &[
                F(
                    Fn::And,
                    &[
                        F(Fn::Equal, &[X, Num(0.0)]),
                        F(Fn::Equal, &[OTHER, Num(0.0)]),
                    ],
                ),
                Num(0.0),
                F(
                    Fn::Atan,
                    &[F(Fn::Div, &[F(Fn::Abs, &[X]), F(Fn::Abs, &[OTHER])])],
                ),
            ],
        ),
    ],
);

/// C's `atan2(x, other)` (`x` the ordinate): [`FIRST_QUADRANT`] reflected to `π − t` where
/// `other`'s sign bit is set (−0 included), times −1 where `x`'s is; so
/// `atan2(±0, −0) = ±π`, `atan2(±0, +0) = ±0`, `atan2(x, ±0) = ±π/2`, NaN propagates.
const ATAN2: Expr = F(
    Fn::Mul,
    &[
        F(
            Fn::Where,
            &[
                OTHER_SIGNBIT,
                F(Fn::Sub, &[Num(std::f32::consts::PI), FIRST_QUADRANT]),
                FIRST_QUADRANT,
            ],
        ),
        F(Fn::Where, &[X_SIGNBIT, Num(-1.0), Num(1.0)]),
    ],
);

/// Argument `target` of a loss.
const TARGET: Expr = Expr::Tensor("target");

/// `self − target`.
const DIFFERENCE: Expr = F(Fn::Sub, &[X, TARGET]);

/// `|self − target|`.
const DISTANCE: Expr = F(Fn::Abs, &[DIFFERENCE]);

/// `xlogy(target, target)`: 0 where target = 0, NaN where it is NaN.
const TARGET_XLOGX: Expr = F(
    Fn::Where,
    &[
        F(Fn::IsNan, &[TARGET]),
        Num(f32::NAN),
        F(
            Fn::Where,
            &[
                F(Fn::Equal, &[TARGET, Num(0.0)]),
                Num(0.0),
                F(Fn::Mul, &[TARGET, F(Fn::Log, &[TARGET])]),
            ],
        ),
    ],
);

/// `max(log(v), −100)` as C's `std::max` picks it (NaN kept): binary_cross_entropy's
/// clamped logarithm, of `1 − self` ([`BCE_LOG_ONE_MINUS`]) and `self` ([`BCE_LOG`]).
const BCE_LOG_ONE_MINUS: Expr = F(
    Fn::Where,
    &[
        F(
            Fn::Less,
            &[F(Fn::Log, &[F(Fn::Sub, &[Num(1.0), X])]), Num(-100.0)],
        ),
        Num(-100.0),
        F(Fn::Log, &[F(Fn::Sub, &[Num(1.0), X])]),
    ],
);
const BCE_LOG: Expr = F(
    Fn::Where,
    &[
        F(Fn::Less, &[F(Fn::Log, &[X]), Num(-100.0)]),
        Num(-100.0),
        F(Fn::Log, &[X]),
    ],
);

/// `binary_cross_entropy` before its weight: `(target − 1)·max(log(1 − x), −100) −
/// target·max(log x, −100)`.
const BCE: Expr = F(
    Fn::Sub,
    &[
        F(
            Fn::Mul,
            &[F(Fn::Sub, &[TARGET, Num(1.0)]), BCE_LOG_ONE_MINUS],
        ),
        F(Fn::Mul, &[TARGET, BCE_LOG]),
    ],
);

/// `log_sigmoid(x)`: `min(x, 0) − log(1 + e^(−|x|))` (torch's `log_sigmoid_forward`).
const LOG_SIGMOID: Expr = F(
    Fn::Sub,
    &[
        F(Fn::Where, &[F(Fn::Less, &[X, Num(0.0)]), X, Num(0.0)]),
        F(
            Fn::Log,
            &[F(
                Fn::Add,
                &[F(Fn::Exp, &[F(Fn::Neg, &[F(Fn::Abs, &[X])])]), Num(1.0)],
            )],
        ),
    ],
);

/// `binary_cross_entropy_with_logits` before its weight: `(1 − target)·x −
/// log_sigmoid(x)·(1 + (pos_weight − 1)·target)`, the last factor only with a
/// `pos_weight`.
const BCE_LOGITS: Expr = F(
    Fn::Sub,
    &[
        F(Fn::Mul, &[F(Fn::Sub, &[Num(1.0), TARGET]), X]),
        F(
            Fn::Where,
            &[
                Given("pos_weight"),
                F(
                    Fn::Mul,
                    &[
                        LOG_SIGMOID,
                        F(
                            Fn::Add,
                            &[
                                F(
                                    Fn::Mul,
                                    &[F(Fn::Sub, &[Expr::Tensor("pos_weight"), Num(1.0)]), TARGET],
                                ),
                                Num(1.0),
                            ],
                        ),
                    ],
                ),
                LOG_SIGMOID,
            ],
        ),
    ],
);

/// `binary_cross_entropy`, times `weight` where it is given.
const BCE_WEIGHTED: Expr = F(
    Fn::Where,
    &[
        Given("weight"),
        F(Fn::Mul, &[BCE, Expr::Tensor("weight")]),
        BCE,
    ],
);

/// `binary_cross_entropy_with_logits`, times `weight` where it is given.
const BCE_LOGITS_WEIGHTED: Expr = F(
    Fn::Where,
    &[
        Given("weight"),
        F(Fn::Mul, &[BCE_LOGITS, Expr::Tensor("weight")]),
        BCE_LOGITS,
    ],
);

/// `log(2π·target)` halved, `target·log(target) − target` before it: poisson_nll_loss's
/// Stirling term, 0 where target ≤ 1.
const STIRLING: Expr = F(
    Fn::Where,
    &[
        F(
            Fn::Or,
            &[
                F(Fn::Less, &[TARGET, Num(1.0)]),
                F(Fn::Equal, &[TARGET, Num(1.0)]),
            ],
        ),
        Num(0.0),
        F(
            Fn::Add,
            &[
                F(
                    Fn::Sub,
                    &[F(Fn::Mul, &[TARGET, F(Fn::Log, &[TARGET])]), TARGET],
                ),
                F(
                    Fn::Mul,
                    &[
                        F(
                            Fn::Log,
                            &[F(Fn::Mul, &[TARGET, Num(2.0 * std::f32::consts::PI)])],
                        ),
                        Num(0.5),
                    ],
                ),
            ],
        ),
    ],
);

/// `−target·(input1 − input2) + margin`.
const MARGIN_RANKING: Expr = F(
    Fn::Add,
    &[
        F(
            Fn::Mul,
            &[
                F(Fn::Neg, &[TARGET]),
                F(Fn::Sub, &[Expr::Tensor("input1"), Expr::Tensor("input2")]),
            ],
        ),
        Arg("margin", 0.0),
    ],
);

/// Argument `input` of `poisson_nll_loss`.
const INPUT: Expr = Expr::Tensor("input");

/// The rules, one per overload.
pub const POINTWISE: &[Pointwise] = &[
    rule("acos.default", "torch._refs.acos", F(Fn::Acos, &[X])),
    rule("asin.default", "torch._refs.asin", F(Fn::Asin, &[X])),
    rule("atan.default", "torch._refs.atan", F(Fn::Atan, &[X])),
    rule("sinh.default", "torch._refs.sinh", F(Fn::Sinh, &[X])),
    rule("cosh.default", "torch._refs.cosh", F(Fn::Cosh, &[X])),
    rule("tan.default", "torch._refs.tan", F(Fn::Tan, &[X])),
    rule("asinh.default", "torch._refs.asinh", F(Fn::Asinh, &[X])),
    rule("acosh.default", "torch._refs.acosh", F(Fn::Acosh, &[X])),
    rule("atanh.default", "torch._refs.atanh", F(Fn::Atanh, &[X])),
    rule("erf.default", "torch._refs.erf", F(Fn::Erf, &[X])),
    rule(
        "erfc.default",
        "torch._refs.erfc (1 − erf)",
        F(Fn::Sub, &[Num(1.0), F(Fn::Erf, &[X])]),
    ),
    rule("sign.default", "torch._refs.sign", SIGN),
    rule(
        "sgn.default",
        "torch._refs.sgn (sign of a real tensor)",
        SIGN,
    ),
    rule(
        "log2.default",
        "torch._refs.log2 (log x / ln 2)",
        F(Fn::Mul, &[F(Fn::Log, &[X]), Num(std::f32::consts::LOG2_E)]),
    ),
    rule(
        "log10.default",
        "torch._refs.log10 (log x / ln 10)",
        F(Fn::Mul, &[F(Fn::Log, &[X]), Num(std::f32::consts::LOG10_E)]),
    ),
    rule(
        "log1p.default",
        "torch._refs.log1p (log(1 + x), ±0 kept)",
        F(
            Fn::Where,
            &[
                F(Fn::Equal, &[X, Num(0.0)]),
                X,
                F(Fn::Log, &[F(Fn::Add, &[X, Num(1.0)])]),
            ],
        ),
    ),
    rule("expm1.default", "torch._refs.expm1", EXPM1),
    rule(
        "exp2.default",
        "torch._refs.exp2 (e^(x·ln 2))",
        F(Fn::Exp, &[F(Fn::Mul, &[X, Num(std::f32::consts::LN_2)])]),
    ),
    rule("square.default", "torch._refs.square", F(Fn::Mul, &[X, X])),
    rule(
        "deg2rad.default",
        "torch._refs.deg2rad",
        F(Fn::Mul, &[X, Num(std::f32::consts::PI / 180.0)]),
    ),
    rule(
        "rad2deg.default",
        "torch._refs.rad2deg",
        F(Fn::Mul, &[X, Num(180.0 / std::f32::consts::PI)]),
    ),
    rule("trunc.default", "torch._refs.trunc", TRUNC),
    rule("frac.default", "torch._refs.frac", F(Fn::Sub, &[X, TRUNC])),
    rule(
        "copysign.Scalar",
        "torch._refs.copysign",
        F(Fn::Mul, &[F(Fn::Abs, &[X]), SignOf("other")]),
    ),
    rule(
        "nan_to_num.default",
        "torch._refs.nan_to_num",
        F(
            Fn::Where,
            &[
                F(Fn::IsNan, &[X]),
                Arg("nan", 0.0),
                F(
                    Fn::Where,
                    &[
                        F(Fn::Equal, &[X, Num(f32::INFINITY)]),
                        Arg("posinf", f32::MAX as f64),
                        F(
                            Fn::Where,
                            &[
                                F(Fn::Equal, &[X, Num(f32::NEG_INFINITY)]),
                                Arg("neginf", f32::MIN as f64),
                                X,
                            ],
                        ),
                    ],
                ),
            ],
        ),
    ),
    rule("positive.default", "torch._refs.positive", X),
    rule("resolve_conj.default", "torch._refs.resolve_conj", X),
    rule("resolve_neg.default", "torch._refs.resolve_neg", X),
    rule("conj_physical.default", "torch._refs.conj_physical", X),
    rule("real.default", "torch._refs.real", X),
    rule(
        "celu.default",
        "torch._refs.nn.functional.celu (α·elu(x/α))",
        F(
            Fn::Mul,
            &[
                F(Fn::Elu, &[F(Fn::Div, &[X, Arg("alpha", 1.0)])]),
                Arg("alpha", 1.0),
            ],
        ),
    ),
    rule(
        "selu.default",
        "torch._refs.nn.functional.selu (scale·x above 0, scale·α·expm1(x) elsewhere)",
        F(
            Fn::Where,
            &[
                F(Fn::Greater, &[X, Num(0.0)]),
                F(Fn::Mul, &[X, Num(SELU_SCALE)]),
                F(Fn::Mul, &[EXPM1, Num(SELU_SCALE * SELU_ALPHA)]),
            ],
        ),
    ),
    rule(
        "log_sigmoid.default",
        "torch._decomp.decompositions.log_sigmoid_forward",
        F(
            Fn::Sub,
            &[
                F(Fn::Where, &[F(Fn::Less, &[X, Num(0.0)]), X, Num(0.0)]),
                F(
                    Fn::Log,
                    &[F(
                        Fn::Add,
                        &[F(Fn::Exp, &[F(Fn::Neg, &[F(Fn::Abs, &[X])])]), Num(1.0)],
                    )],
                ),
            ],
        ),
    ),
    rule(
        "logit.default",
        "torch._refs.logit",
        F(
            Fn::Log,
            &[F(
                Fn::Div,
                &[LOGIT_CLAMPED, F(Fn::Sub, &[Num(1.0), LOGIT_CLAMPED])],
            )],
        ),
    ),
    rule(
        "sinc.default",
        "torch._refs.sinc",
        F(
            Fn::Where,
            &[
                F(Fn::Equal, &[X, Num(0.0)]),
                Num(1.0),
                F(
                    Fn::Div,
                    &[
                        F(Fn::Sin, &[F(Fn::Mul, &[X, Num(std::f32::consts::PI)])]),
                        F(Fn::Mul, &[X, Num(std::f32::consts::PI)]),
                    ],
                ),
            ],
        ),
    ),
    rule(
        "special_ndtr.default",
        "torch._refs.special.ndtr",
        F(
            Fn::Mul,
            &[
                F(
                    Fn::Add,
                    &[
                        F(
                            Fn::Erf,
                            &[F(Fn::Mul, &[X, Num(std::f32::consts::FRAC_1_SQRT_2)])],
                        ),
                        Num(1.0),
                    ],
                ),
                Num(0.5),
            ],
        ),
    ),
    rule(
        "special_entr.default",
        "torch._refs.special.entr",
        F(
            Fn::Where,
            &[
                F(Fn::IsNan, &[X]),
                X,
                F(
                    Fn::Where,
                    &[
                        F(Fn::Greater, &[X, Num(0.0)]),
                        F(Fn::Neg, &[F(Fn::Mul, &[X, F(Fn::Log, &[X])])]),
                        F(
                            Fn::Where,
                            &[
                                F(Fn::Equal, &[X, Num(0.0)]),
                                Num(0.0),
                                Num(f32::NEG_INFINITY),
                            ],
                        ),
                    ],
                ),
            ],
        ),
    ),
    rule("isnan.default", "torch._refs.isnan", F(Fn::IsNan, &[X])),
    // A real tensor's entries are all real: true, NaN included (its NaN flag equals
    // itself; onnxruntime has no `Where` of bools).
    rule(
        "isreal.default",
        "torch._refs.isreal (ones_like of a real tensor)",
        F(
            Fn::Equal,
            &[
                F(Fn::Float, &[F(Fn::IsNan, &[X])]),
                F(Fn::Float, &[F(Fn::IsNan, &[X])]),
            ],
        ),
    ),
    // ATen's angle_impl of a real value: NaN kept, π below 0, 0 otherwise (−0 included).
    rule(
        "angle.default",
        "aten angle_impl (π for x < 0, NaN kept)",
        F(
            Fn::Where,
            &[
                F(Fn::IsNan, &[X]),
                X,
                F(
                    Fn::Where,
                    &[
                        F(Fn::Less, &[X, Num(0.0)]),
                        Num(std::f32::consts::PI),
                        Num(0.0),
                    ],
                ),
            ],
        ),
    ),
    rule(
        "isinf.default",
        "torch._refs.isinf (|x| = inf)",
        F(Fn::Equal, &[F(Fn::Abs, &[X]), Num(f32::INFINITY)]),
    ),
    rule(
        "isposinf.default",
        "torch._refs.isposinf",
        F(Fn::Equal, &[X, Num(f32::INFINITY)]),
    ),
    rule(
        "isneginf.default",
        "torch._refs.isneginf",
        F(Fn::Equal, &[X, Num(f32::NEG_INFINITY)]),
    ),
    rule(
        "hypot.default",
        "C's hypot (√(x² + other²), +inf where either is infinite, NaN beside it included; past 1.8e19 the float32 squares overflow to inf where C's stays finite)",
        F(
            Fn::Where,
            &[
                F(Fn::Or, &[X_INFINITE, OTHER_INFINITE]),
                Num(f32::INFINITY),
                F(
                    Fn::Sqrt,
                    &[F(Fn::Add, &[F(Fn::Mul, &[X, X]), F(Fn::Mul, &[OTHER, OTHER])])],
                ),
            ],
        ),
    ),
    rule("atan2.default", "C's atan2 (from atan and its quadrant rules)", ATAN2),
    rule("atan2.out", "C's atan2 (from atan and its quadrant rules)", ATAN2),
    rule("logaddexp.default", "ATen's logaddexp kernel", LOGADDEXP),
    rule("logaddexp2.default", "ATen's logaddexp2 kernel", LOGADDEXP2),
    rule(
        "heaviside.default",
        "ATen's heaviside kernel (`values` where x = 0, else x > 0; NaN gives 0)",
        F(
            Fn::Where,
            &[
                F(Fn::Equal, &[X, Num(0.0)]),
                Expr::Tensor("values"),
                F(Fn::Float, &[F(Fn::Greater, &[X, Num(0.0)])]),
            ],
        ),
    ),
    rule(
        "copysign.Tensor",
        "torch._refs.copysign (−|x| where other's sign bit is set, −0 included)",
        F(Fn::Mul, &[F(Fn::Abs, &[X]), OTHER_SIGN]),
    ),
    rule(
        "fmax.default",
        "C's fmax (the other operand where one is NaN)",
        F(
            Fn::Where,
            &[
                F(Fn::IsNan, &[X]),
                OTHER,
                F(
                    Fn::Where,
                    &[
                        F(Fn::Or, &[F(Fn::Greater, &[X, OTHER]), F(Fn::IsNan, &[OTHER])]),
                        X,
                        OTHER,
                    ],
                ),
            ],
        ),
    ),
    rule(
        "fmin.default",
        "C's fmin (the other operand where one is NaN)",
        F(
            Fn::Where,
            &[
                F(Fn::IsNan, &[X]),
                OTHER,
                F(
                    Fn::Where,
                    &[
                        F(Fn::Or, &[F(Fn::Less, &[X, OTHER]), F(Fn::IsNan, &[OTHER])]),
                        X,
                        OTHER,
                    ],
                ),
            ],
        ),
    ),
    rule(
        "clamp_min.Tensor",
        "torch._refs.clamp (min where x < min or min is NaN)",
        F(
            Fn::Where,
            &[
                F(
                    Fn::Or,
                    &[
                        F(Fn::Less, &[X, Expr::Tensor("min")]),
                        F(Fn::IsNan, &[Expr::Tensor("min")]),
                    ],
                ),
                Expr::Tensor("min"),
                X,
            ],
        ),
    ),
    rule(
        "clamp_max.Tensor",
        "torch._refs.clamp (max where x > max or max is NaN)",
        F(
            Fn::Where,
            &[
                F(
                    Fn::Or,
                    &[
                        F(Fn::Greater, &[X, Expr::Tensor("max")]),
                        F(Fn::IsNan, &[Expr::Tensor("max")]),
                    ],
                ),
                Expr::Tensor("max"),
                X,
            ],
        ),
    ),
    rule(
        "pow.Tensor_Tensor",
        "torch._refs.pow (C's pow)",
        F(Fn::Pow, &[X, Expr::Tensor("exponent")]),
    ),
    rule(
        "ldexp.Tensor",
        "torch.ldexp (x · 2^other)",
        F(Fn::Mul, &[X, F(Fn::Pow, &[Num(2.0), OTHER])]),
    ),
    rule(
        "xlogy.Tensor",
        "torch._refs.xlogy (0 where x = 0, NaN where other is NaN)",
        F(
            Fn::Where,
            &[
                F(Fn::IsNan, &[OTHER]),
                Num(f32::NAN),
                F(
                    Fn::Where,
                    &[
                        F(Fn::Equal, &[X, Num(0.0)]),
                        Num(0.0),
                        F(Fn::Mul, &[X, F(Fn::Log, &[OTHER])]),
                    ],
                ),
            ],
        ),
    ),
    rule(
        "special_xlog1py.default",
        "torch._refs.special.xlog1py (0 where x = 0, NaN where other is NaN)",
        F(
            Fn::Where,
            &[
                F(Fn::IsNan, &[OTHER]),
                Num(f32::NAN),
                F(
                    Fn::Where,
                    &[
                        F(Fn::Equal, &[X, Num(0.0)]),
                        Num(0.0),
                        F(
                            Fn::Mul,
                            &[
                                X,
                                F(
                                    Fn::Where,
                                    &[
                                        F(Fn::Equal, &[OTHER, Num(0.0)]),
                                        OTHER,
                                        F(Fn::Log, &[F(Fn::Add, &[OTHER, Num(1.0)])]),
                                    ],
                                ),
                            ],
                        ),
                    ],
                ),
            ],
        ),
    ),
    rule(
        "isclose.default",
        "torch._refs.isclose (equal, or a finite |x − other| ≤ atol + |rtol · other|; NaNs equal with equal_nan)",
        F(
            Fn::Or,
            &[
                F(
                    Fn::Where,
                    &[
                        Arg("equal_nan", 0.0),
                        F(
                            Fn::Or,
                            &[
                                F(Fn::Equal, &[X, OTHER]),
                                F(Fn::And, &[F(Fn::IsNan, &[X]), F(Fn::IsNan, &[OTHER])]),
                            ],
                        ),
                        F(Fn::Equal, &[X, OTHER]),
                    ],
                ),
                F(
                    Fn::And,
                    &[
                        F(
                            Fn::Less,
                            &[
                                F(Fn::Abs, &[F(Fn::Sub, &[X, OTHER])]),
                                Num(f32::INFINITY),
                            ],
                        ),
                        F(
                            Fn::Not,
                            &[F(
                                Fn::Greater,
                                &[
                                    F(Fn::Abs, &[F(Fn::Sub, &[X, OTHER])]),
                                    F(
                                        Fn::Add,
                                        &[
                                            Arg("atol", 1e-8),
                                            F(Fn::Abs, &[F(Fn::Mul, &[Arg("rtol", 1e-5), OTHER])]),
                                        ],
                                    ),
                                ],
                            )],
                        ),
                    ],
                ),
            ],
        ),
    ),
    rule(
        "lerp.Tensor",
        "ATen's lerp kernel (x + w·(end − x) for |w| < ½, else end − (end − x)·(1 − w))",
        F(
            Fn::Where,
            &[
                F(Fn::Less, &[F(Fn::Abs, &[Expr::Tensor("weight")]), Num(0.5)]),
                F(
                    Fn::Add,
                    &[
                        X,
                        F(
                            Fn::Mul,
                            &[Expr::Tensor("weight"), F(Fn::Sub, &[Expr::Tensor("end"), X])],
                        ),
                    ],
                ),
                F(
                    Fn::Sub,
                    &[
                        Expr::Tensor("end"),
                        F(
                            Fn::Mul,
                            &[
                                F(Fn::Sub, &[Expr::Tensor("end"), X]),
                                F(Fn::Sub, &[Num(1.0), Expr::Tensor("weight")]),
                            ],
                        ),
                    ],
                ),
            ],
        ),
    ),
    loss("mse_loss.default", "ATen's mse_loss ((x − target)²)", F(Fn::Mul, &[DIFFERENCE, DIFFERENCE])),
    loss("l1_loss.default", "torch._refs.nn.functional.l1_loss (|x − target|)", DISTANCE),
    loss(
        "huber_loss.default",
        "ATen's huber_loss (½z² for z = |x − target| < delta, else delta·(z − ½delta))",
        F(
            Fn::Where,
            &[
                F(Fn::Less, &[DISTANCE, Arg("delta", 1.0)]),
                F(Fn::Mul, &[F(Fn::Mul, &[DISTANCE, DISTANCE]), Num(0.5)]),
                F(
                    Fn::Mul,
                    &[
                        Arg("delta", 1.0),
                        F(Fn::Sub, &[DISTANCE, F(Fn::Mul, &[Arg("delta", 1.0), Num(0.5)])]),
                    ],
                ),
            ],
        ),
    ),
    loss(
        "smooth_l1_loss.default",
        "ATen's smooth_l1_loss (½z²/beta for z = |x − target| < beta, else z − ½beta)",
        F(
            Fn::Where,
            &[
                F(Fn::Less, &[DISTANCE, Arg("beta", 1.0)]),
                F(
                    Fn::Div,
                    &[
                        F(Fn::Mul, &[F(Fn::Mul, &[DISTANCE, DISTANCE]), Num(0.5)]),
                        Arg("beta", 1.0),
                    ],
                ),
                F(Fn::Sub, &[DISTANCE, F(Fn::Mul, &[Arg("beta", 1.0), Num(0.5)])]),
            ],
        ),
    ),
    loss(
        "soft_margin_loss.default",
        "ATen's soft_margin_loss (log(1 + e^(−target·x)))",
        F(
            Fn::Log,
            &[F(
                Fn::Add,
                &[F(Fn::Exp, &[F(Fn::Neg, &[F(Fn::Mul, &[TARGET, X])])]), Num(1.0)],
            )],
        ),
    ),
    loss(
        "kl_div.default",
        "ATen's kl_div (e^target·(target − x) with log_target, else xlogy(target, target) − target·x)",
        F(
            Fn::Where,
            &[
                Arg("log_target", 0.0),
                F(Fn::Mul, &[F(Fn::Exp, &[TARGET]), F(Fn::Sub, &[TARGET, X])]),
                F(Fn::Sub, &[TARGET_XLOGX, F(Fn::Mul, &[TARGET, X])]),
            ],
        ),
    ),
    loss(
        "hinge_embedding_loss.default",
        "ATen's hinge_embedding_loss (max(margin − x, 0) where target ≠ 1, plus x where target ≠ −1)",
        F(
            Fn::Add,
            &[
                F(
                    Fn::Where,
                    &[
                        F(Fn::Equal, &[TARGET, Num(1.0)]),
                        Num(0.0),
                        F(
                            Fn::Where,
                            &[
                                F(Fn::Less, &[F(Fn::Sub, &[Arg("margin", 1.0), X]), Num(0.0)]),
                                Num(0.0),
                                F(Fn::Sub, &[Arg("margin", 1.0), X]),
                            ],
                        ),
                    ],
                ),
                F(Fn::Where, &[F(Fn::Equal, &[TARGET, Num(-1.0)]), Num(0.0), X]),
            ],
        ),
    ),
    loss(
        "margin_ranking_loss.default",
        "ATen's margin_ranking_loss (max(−target·(input1 − input2) + margin, 0))",
        F(
            Fn::Where,
            &[
                F(Fn::Less, &[MARGIN_RANKING, Num(0.0)]),
                Num(0.0),
                MARGIN_RANKING,
            ],
        ),
    ),
    loss(
        "poisson_nll_loss.default",
        "ATen's poisson_nll_loss (e^input − target·input with log_input, else input − target·log(input + eps); plus the Stirling term where target > 1 with full)",
        F(
            Fn::Add,
            &[
                F(
                    Fn::Where,
                    &[
                        Arg("log_input", 0.0),
                        F(Fn::Sub, &[F(Fn::Exp, &[INPUT]), F(Fn::Mul, &[TARGET, INPUT])]),
                        F(
                            Fn::Sub,
                            &[
                                INPUT,
                                F(
                                    Fn::Mul,
                                    &[TARGET, F(Fn::Log, &[F(Fn::Add, &[INPUT, Arg("eps", 1e-8)])])],
                                ),
                            ],
                        ),
                    ],
                ),
                F(Fn::Where, &[Arg("full", 0.0), STIRLING, Num(0.0)]),
            ],
        ),
    ),
    loss(
        "binary_cross_entropy.default",
        "ATen's binary_cross_entropy ((target − 1)·max(log(1 − x), −100) − target·max(log x, −100), times weight)",
        BCE_WEIGHTED,
    ),
    loss(
        "binary_cross_entropy_with_logits.default",
        "ATen's binary_cross_entropy_with_logits ((1 − target)·x − log_sigmoid(x)·(1 + (pos_weight − 1)·target), times weight)",
        BCE_LOGITS_WEIGHTED,
    ),
];

/// The rule for aten overload `target` (without `torch.ops.aten.`).
pub fn pointwise(target: &str) -> Option<&'static Pointwise> {
    POINTWISE.iter().find(|r| r.target == target)
}

/// One step of a ported layout decomposition ([`relayout`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Relayout {
    /// Each of these axes read backwards (`flip`).
    Flip(Vec<usize>),
    /// The axes in this order (`permute`).
    Permute(Vec<usize>),
}

/// The layout ops [`relayout`] decomposes into `flip` and `permute`.
pub const RELAYOUTS: &[&str] = &[
    "fliplr.default",
    "flipud.default",
    "rot90.default",
    "movedim.int",
    "movedim.intlist",
    "numpy_T.default",
    "matrix_H.default",
];

/// The steps torch's decomposition of layout op `op` (one of [`RELAYOUTS`]) takes on
/// argument `self` of rank `rank`, in order; `None` for any other op.
pub fn relayout(node: &Node, op: &str, rank: usize) -> Option<Result<Vec<Relayout>, String>> {
    let args = Args(node);
    let swap = |a: usize, b: usize| {
        let mut order: Vec<usize> = (0..rank).collect();
        order.swap(a, b);
        Relayout::Permute(order)
    };
    let steps = || -> Result<Vec<Relayout>, String> {
        Ok(match op {
            // torch._refs.fliplr / flipud: flip(a, (1,)) of a tensor of rank ≥ 2, (0,) of ≥ 1.
            "fliplr.default" if rank >= 2 => vec![Relayout::Flip(vec![1])],
            "flipud.default" if rank >= 1 => vec![Relayout::Flip(vec![0])],
            // torch._refs.rot90: by k mod 4, flips of `dims` and a transpose of them.
            "rot90.default" => {
                let k = args.int("k")?;
                let dims = args.ints("dims", 2)?;
                let [d0, d1] = dims[..] else {
                    return Err(format!("rot90 dims {dims:?} are not two"));
                };
                let (d0, d1) = (axis(d0, rank)?, axis(d1, rank)?);
                if d0 == d1 || rank < 2 {
                    return Err(format!("rot90 over dims {dims:?} of a rank-{rank} tensor"));
                }
                match k.rem_euclid(4) {
                    1 => vec![Relayout::Flip(vec![d1]), swap(d0, d1)],
                    2 => vec![Relayout::Flip(vec![d0, d1])],
                    3 => vec![Relayout::Flip(vec![d0]), swap(d0, d1)],
                    _ => vec![],
                }
            }
            // torch._refs.movedim: each source axis to its destination, the others in order.
            "movedim.int" | "movedim.intlist" => {
                let list = |name: &str| -> Result<Vec<usize>, String> {
                    let dims = match args.get(name) {
                        Some(Argument::Int(d)) => vec![*d],
                        Some(Argument::Ints(d)) => d.clone(),
                        _ => return Err(format!("argument `{name}` is not a list of ints")),
                    };
                    dims.iter().map(|&d| axis(d, rank)).collect()
                };
                if rank == 0 {
                    // A 0-d tensor's dimension 0 (or −1) moved onto itself.
                    for name in ["source", "destination"] {
                        match args.get(name) {
                            Some(Argument::Int(d)) => Dim::wrap(*d, 0).map(|_| ())?,
                            Some(Argument::Ints(d)) => {
                                d.iter().try_for_each(|&d| Dim::wrap(d, 0).map(|_| ()))?
                            }
                            _ => return Err(format!("argument `{name}` is not a list of ints")),
                        }
                    }
                    return Ok(vec![]);
                }
                let (source, destination) = (list("source")?, list("destination")?);
                let distinct = |v: &[usize]| (1..v.len()).all(|i| !v[..i].contains(&v[i]));
                if source.len() != destination.len()
                    || !distinct(&source)
                    || !distinct(&destination)
                {
                    return Err(format!("movedim from {source:?} to {destination:?}"));
                }
                let mut order = vec![None; rank];
                for (&s, &d) in source.iter().zip(&destination) {
                    order[d] = Some(s);
                }
                let mut rest = (0..rank).filter(|a| !source.contains(a));
                let order = order
                    .into_iter()
                    .map(|o| o.or_else(|| rest.next()))
                    .collect::<Option<Vec<usize>>>()
                    .ok_or("movedim leaves an axis unplaced")?;
                vec![Relayout::Permute(order)]
            }
            // torch._refs.T (numpy_T): every axis reversed.
            "numpy_T.default" => vec![Relayout::Permute((0..rank).rev().collect())],
            // matrix_H of a real matrix: its transpose.
            "matrix_H.default" if rank == 2 => vec![swap(0, 1)],
            _ => return Err(format!("{op} of a rank-{rank} tensor")),
        })
    };
    RELAYOUTS.contains(&op).then(steps)
}

/// What a dropout computes (`dropout`, `feature_dropout`, `alpha_dropout`,
/// `feature_alpha_dropout`, in place or not), as ATen's `_dropout_impl` (Dropout.cpp)
/// decides before drawing any random number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dropout {
    /// Its input: out of training mode, or with probability 0.
    Identity,
    /// Its input times 0 (`multiply(input, zeros({}))`), with probability 1: ±0 by the
    /// input's sign, NaN for NaN and ±inf.
    Zeroed,
}

/// The [`Dropout`] of a dropout `node` (tensor argument `input`, or `self` in place);
/// an error for a probability strictly between 0 and 1 in training mode, whose mask is
/// drawn from torch's generator, or for one outside [0, 1], which torch rejects.
pub fn dropout(node: &Node) -> Result<Dropout, String> {
    let args = Args(node);
    let p = args.float("p")?;
    if !args.bool("train")? || p == 0.0 {
        return Ok(Dropout::Identity);
    }
    if p == 1.0 {
        return Ok(Dropout::Zeroed);
    }
    if !(0.0..=1.0).contains(&p) {
        return Err(format!("dropout probability {p} is outside [0, 1]"));
    }
    Err(format!(
        "dropout with probability {p} is in training mode, so its mask is drawn from torch's generator; export the model after `model.eval()`"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(args: &str) -> Node {
        serde_json::from_str(&format!(
            r#"{{"target": "t", "outputs": [], "inputs": [{args}]}}"#
        ))
        .unwrap()
    }

    fn at(target: &str, x: f32) -> f32 {
        pointwise(target)
            .unwrap()
            .expr
            .eval(&node(""), &|_| x)
            .unwrap()
    }

    #[test]
    fn every_rule_has_a_schema_and_one_row() {
        for (k, r) in POINTWISE.iter().enumerate() {
            assert!(
                super::super::schema::lookup(r.target).is_some(),
                "{}",
                r.target
            );
            assert!(
                POINTWISE[..k].iter().all(|o| o.target != r.target),
                "{} twice",
                r.target
            );
        }
    }

    #[test]
    fn dropout_is_computed_only_when_no_mask_is_drawn() {
        let case = |p: &str, train: bool| {
            dropout(&node(&format!(
                r#"{{"name": "p", "arg": {{"as_float": {p}}}}}, {{"name": "train", "arg": {{"as_bool": {train}}}}}"#
            )))
        };
        assert_eq!(case("0.5", false), Ok(Dropout::Identity));
        assert_eq!(case("0.0", true), Ok(Dropout::Identity));
        assert_eq!(case("1.0", true), Ok(Dropout::Zeroed));
        assert!(case("0.5", true).unwrap_err().contains("generator"));
        assert!(case("1.5", true).unwrap_err().contains("outside"));
    }

    /// The special values torch gives (checked in torch 2.13).
    #[test]
    fn special_values_are_torchs() {
        assert_eq!(at("sign.default", f32::NAN), 0.0);
        assert!(at("sign.default", -0.0).is_sign_positive());
        assert!(at("trunc.default", -0.5).is_sign_negative());
        assert!(at("trunc.default", f32::NAN).is_nan());
        assert!(at("frac.default", f32::INFINITY).is_nan());
        assert!(at("expm1.default", -0.0).is_sign_negative());
        assert!(at("log1p.default", -0.0).is_sign_negative());
        assert_eq!(at("isinf.default", f32::NEG_INFINITY), 1.0);
        assert_eq!(at("isinf.default", f32::NAN), 0.0);
        assert_eq!(at("expm1.default", f32::NEG_INFINITY), -1.0);
        assert_eq!(
            at("log_sigmoid.default", f32::NEG_INFINITY),
            f32::NEG_INFINITY
        );
        assert!(at("log_sigmoid.default", f32::INFINITY).is_sign_positive());
        assert_eq!(at("sinc.default", 0.0), 1.0);
        assert!(at("logit.default", 2.0).is_nan());
        assert_eq!(at("logit.default", 1.0), f32::INFINITY);
        assert_eq!(at("nan_to_num.default", f32::NAN), 0.0);
        assert_eq!(at("nan_to_num.default", f32::NEG_INFINITY), f32::MIN);
        assert_eq!(at("special_entr.default", -1.0), f32::NEG_INFINITY);
        assert_eq!(at("isreal.default", f32::NAN), 1.0);
        assert_eq!(at("angle.default", -0.0), 0.0);
        assert!(at("angle.default", f32::NAN).is_nan());
        assert_eq!(at("angle.default", f32::NEG_INFINITY), std::f32::consts::PI);
        assert_eq!(at("isposinf.default", f32::INFINITY), 1.0);
        assert_eq!(at("isposinf.default", f32::NEG_INFINITY), 0.0);
        assert!(at("celu.default", -0.0).is_sign_negative());
        assert!(at("selu.default", -0.0).is_sign_negative());
        assert_eq!(
            at("selu.default", f32::NEG_INFINITY),
            -SELU_SCALE * SELU_ALPHA
        );
    }

    /// Rule `target` at `self` = `x` and every other tensor argument = `other`.
    fn at2(target: &str, x: f32, other: f32) -> f32 {
        let at = |name: &str| if name == "self" { x } else { other };
        pointwise(target)
            .unwrap()
            .expr
            .eval(&node(""), &at)
            .unwrap()
    }

    /// The special values of the binary rules are torch's (checked in torch 2.13).
    #[test]
    fn binary_special_values_are_torchs() {
        let inf = f32::INFINITY;
        assert_eq!(at2("hypot.default", inf, f32::NAN), inf);
        assert_eq!(at2("hypot.default", 3.0, -4.0), 5.0);
        assert_eq!(at2("logaddexp.default", -inf, -inf), -inf);
        assert_eq!(at2("logaddexp.default", inf, -inf), inf);
        assert!(at2("logaddexp.default", f32::NAN, 1.0).is_nan());
        assert!(at2("logaddexp.default", 1.0, f32::NAN).is_nan());
        assert_eq!(at2("logaddexp2.default", 1.0, 1.0), 2.0);
        assert_eq!(at2("heaviside.default", f32::NAN, 0.5), 0.0);
        assert_eq!(at2("heaviside.default", 0.0, 0.5), 0.5);
        assert_eq!(at2("heaviside.default", -0.0, 0.5), 0.5);
        assert_eq!(at2("copysign.Tensor", 2.0, -0.0), -2.0);
        assert_eq!(at2("copysign.Tensor", -2.0, 0.0), 2.0);
        assert_eq!(at2("fmax.default", f32::NAN, 1.0), 1.0);
        assert_eq!(at2("fmin.default", 1.0, f32::NAN), 1.0);
        assert!(at2("fmax.default", f32::NAN, f32::NAN).is_nan());
        assert!(at2("clamp_min.Tensor", f32::NAN, 0.0).is_nan());
        assert!(at2("clamp_min.Tensor", 1.0, f32::NAN).is_nan());
        assert_eq!(at2("clamp_max.Tensor", 3.0, 2.0), 2.0);
        assert!(at2("xlogy.Tensor", 0.0, f32::NAN).is_nan());
        assert_eq!(at2("xlogy.Tensor", 0.0, 0.0), 0.0);
        assert!(at2("special_xlog1py.default", -0.0, -1.0) == 0.0);
        assert_eq!(at2("ldexp.Tensor", 3.0, -2.0), 0.75);
        let pi = std::f32::consts::PI;
        assert_eq!(at2("atan2.default", 0.0, -0.0), pi);
        assert_eq!(at2("atan2.default", -0.0, -0.0), -pi);
        assert!(at2("atan2.default", -0.0, 0.0).is_sign_negative());
        assert_eq!(at2("atan2.default", -3.0, 0.0), -pi / 2.0);
        assert_eq!(at2("atan2.default", inf, -inf), 3.0 * pi / 4.0);
        assert!(at2("atan2.default", f32::NAN, 1.0).is_nan());
        assert_eq!(at2("atan2.default", 1.0, -1.0), 3.0 * pi / 4.0);
        assert_eq!(at2("isclose.default", inf, inf), 1.0);
        assert_eq!(at2("isclose.default", f32::NAN, f32::NAN), 0.0);
        let equal_nan = node(r#"{"name": "equal_nan", "arg": {"as_bool": true}}"#);
        let isclose = &pointwise("isclose.default").unwrap().expr;
        assert_eq!(isclose.eval(&equal_nan, &|_| f32::NAN).unwrap(), 1.0);
        assert!(isclose.is_bool());
    }

    /// Rule `target` at `self` (or `input`) = `x` and `target` = `t`, other arguments
    /// their defaults.
    fn loss_at(target: &str, x: f32, t: f32, args: &str) -> f32 {
        let at = |name: &str| if name == "target" { t } else { x };
        pointwise(target)
            .unwrap()
            .expr
            .eval(&node(args), &at)
            .unwrap()
    }

    /// The losses' clamps, zero targets and thresholds are torch's (checked in torch 2.13).
    #[test]
    fn loss_edges_are_torchs() {
        let full = r#"{"name": "full", "arg": {"as_bool": true}}, {"name": "log_input", "arg": {"as_bool": true}}"#;
        let poisson = |t: f32| loss_at("poisson_nll_loss.default", 0.5, t, full);
        assert_eq!(loss_at("binary_cross_entropy.default", 0.0, 1.0, ""), 100.0);
        assert_eq!(loss_at("binary_cross_entropy.default", 1.0, 0.25, ""), 75.0);
        assert_eq!(loss_at("kl_div.default", 0.3, 0.0, ""), 0.0);
        assert!((poisson(1.0) - 1.1487213).abs() < 1e-6, "{}", poisson(1.0));
        assert!((poisson(3.0) - 1.9128).abs() < 1e-4, "{}", poisson(3.0));
        assert_eq!(loss_at("hinge_embedding_loss.default", 0.4, -1.0, ""), 0.6);
        assert_eq!(loss_at("hinge_embedding_loss.default", 0.4, 1.0, ""), 0.4);
        assert_eq!(loss_at("hinge_embedding_loss.default", 0.4, 0.0, ""), 1.0);
        let beta = r#"{"name": "beta", "arg": {"as_float": 0.0}}"#;
        assert_eq!(loss_at("smooth_l1_loss.default", 0.2, 0.0, beta), 0.2);
        assert_eq!(
            loss_at("binary_cross_entropy_with_logits.default", -200.0, 1.0, ""),
            200.0
        );
        let sum = node(r#"{"name": "reduction", "arg": {"as_int": 2}}"#);
        assert_eq!(LossReduction::of(&sum), Ok(LossReduction::Sum));
        assert_eq!(LossReduction::of(&node("")), Ok(LossReduction::Mean));
    }

    /// A rule of several tensors broadcasts them as numpy does.
    #[test]
    fn tensors_are_broadcast_together() {
        let rule = &pointwise("hypot.default").unwrap().expr;
        assert_eq!(rule.tensors(), ["self", "other"]);
        let tensors = r#"{"name": "self", "arg": {"as_tensor": {"name": "a"}}}, {"name": "other", "arg": {"as_tensor": {"name": "b"}}}"#;
        let y = rule
            .evaluate(&node(tensors), &|name| match name {
                "self" => Tensor::f32(vec![2, 1], vec![3.0, 6.0]),
                _ => Tensor::f32(vec![3], vec![4.0, 8.0, 0.0]),
            })
            .unwrap();
        assert_eq!(y.dims(), [2, 3]);
        assert_eq!(y.to_f32(), [5.0, 8.5440037, 3.0, 7.2111025, 10.0, 6.0]);
    }

    #[test]
    fn numbers_come_from_the_node() {
        let eps = node(r#"{"name": "eps", "arg": {"as_float": 0.2}}"#);
        let logit = &pointwise("logit.default").unwrap().expr;
        let low = logit.eval(&eps, &|_| -5.0).unwrap();
        assert!((low - (0.2f32 / 0.8).ln()).abs() < 1e-6, "{low}");
        let negative = node(r#"{"name": "other", "arg": {"as_float": -0.0}}"#);
        let copysign = &pointwise("copysign.Scalar").unwrap().expr;
        assert!(copysign
            .eval(&negative, &|_| 0.0)
            .unwrap()
            .is_sign_negative());
        assert_eq!(copysign.eval(&negative, &|_| 2.0).unwrap(), -2.0);
    }

    fn steps(op: &str, args: &str, rank: usize) -> Vec<Relayout> {
        relayout(&node(args), op, rank).unwrap().unwrap()
    }

    /// torch's orders, read from `torch.movedim`/`torch.rot90` on an arange.
    #[test]
    fn layouts_follow_torchs_rules() {
        use Relayout::{Flip, Permute};
        let moved = r#"{"name": "source", "arg": {"as_ints": [0, -1]}}, {"name": "destination", "arg": {"as_ints": [2, 0]}}"#;
        // torch.movedim(x, (0, -1), (2, 0)) of a rank-4 x has sizes (d3, d1, d0, d2).
        assert_eq!(
            steps("movedim.intlist", moved, 4),
            [Permute(vec![3, 1, 0, 2])]
        );
        let once =
            r#"{"name": "k", "arg": {"as_int": -3}}, {"name": "dims", "arg": {"as_ints": [1, 2]}}"#;
        assert_eq!(
            steps("rot90.default", once, 3),
            [Flip(vec![2]), Permute(vec![0, 2, 1])]
        );
        assert_eq!(steps("numpy_T.default", "", 3), [Permute(vec![2, 1, 0])]);
        assert!(relayout(&node(""), "fliplr.default", 1).unwrap().is_err());
        assert!(relayout(&node(""), "flip.default", 2).is_none());
    }

    #[test]
    fn predicates_are_bools() {
        assert!(pointwise("isnan.default").unwrap().expr.is_bool());
        assert!(!pointwise("nan_to_num.default").unwrap().expr.is_bool());
        assert!(!pointwise("sign.default").unwrap().expr.is_bool());
    }
}
