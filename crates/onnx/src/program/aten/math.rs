//! Element-wise math and the activations beyond the basic ones: one-input ONNX ops (`Exp`,
//! `Log`, `Sqrt`, `Neg`, `Abs`, `Reciprocal`; `rsqrt` as Sqrt → Reciprocal), `pow` by a
//! scalar, `clamp`, `maximum`/`minimum`, `rsub` and the `.Scalar` arithmetic overloads,
//! `elu`, `leaky_relu`, `softplus`, `prelu`, `mish` and tanh-approximated `gelu`.

use crate::elem::ElemType;
use crate::graph::{Attr, GraphBuilder, Value};
use crate::OnnxError;
use ckpt_aten::program::{Argument, Node};

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::pointwise::{operand, Elementwise, Emitted};
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

/// `x · c` for a scalar `c`.
fn scaled(g: &mut GraphBuilder, scope: &str, x: &Value, c: f32) -> Result<Value, OnnxError> {
    let c = g.constant_scalar(&format!("{scope}.scale"), c);
    g.mul_constant(scope, x, &c)
}

/// `a · b` of two activations of the same shape.
fn product(g: &mut GraphBuilder, scope: &str, a: &Value, b: &Value) -> Result<Value, OnnxError> {
    emit::binary(
        g,
        "Mul",
        scope,
        Operand::Activation(a),
        Operand::Activation(b),
    )
}

impl<'p> Lowering<'p, '_> {
    /// A one-input op with fixed attributes, on argument `self`.
    pub(super) fn elementwise_unary(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        op: &'static str,
    ) -> Result<(), OnnxError> {
        self.unary(node, args, |g, x| g.unary(op, scope, x, vec![]))
    }

    /// `rsqrt`: `1 / √x`.
    pub(super) fn rsqrt(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        self.unary(node, args, |g, x| {
            let root = g.sqrt(scope, x);
            g.unary("Reciprocal", scope, &root, vec![])
        })
    }

    /// `a op b` for the `.Tensor`/`.Scalar` overloads of add/sub/mul/div and for
    /// `maximum`/`minimum` (`Max`/`Min`); `reversed` computes `b op a` (`rsub`).
    pub(super) fn scalar_arithmetic(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        op: &'static str,
        reversed: bool,
    ) -> Result<(), OnnxError> {
        if args.float_or("alpha", 1.0).or_shape()? != 1.0 {
            return Err(arg_error(format!("{op} with alpha ≠ 1 is not exported")));
        }
        let a = operand(args, "self")?;
        let b = operand(args, "other")?;
        let (a, b) = if reversed { (b, a) } else { (a, b) };
        self.arithmetic(node, scope, op, a, b)
    }

    /// `pow.Tensor_Scalar`: `Pow` by a constant exponent; an integer tensor to a whole
    /// exponent is multiplied out ([`Lowering::integer_power`]).
    pub(super) fn pow(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let exponent = args.number("exponent").or_shape()?;
        let name = args.tensor("self").or_shape()?;
        // torch computes in the result's type: an integer one for an integer tensor to a
        // whole exponent given as an int (a float exponent promotes to float32).
        let recorded = self.recorded_elem(self.output_name(node, 0)?)?;
        if !self.is_constant(name) && matches!(recorded, ElemType::Int32 | ElemType::Int64) {
            return self.integer_power(node, scope, name, exponent);
        }
        self.arithmetic(
            node,
            scope,
            "Pow",
            operand(args, "self")?,
            Elementwise::Scalar(exponent),
        )
    }

    /// Integer activation `name` to the whole power `exponent`, as torch computes it in
    /// its own type (wrapping on overflow): products by squaring, since opset 11's `Pow`
    /// takes floats only. torch refuses negative exponents of integers.
    fn integer_power(
        &mut self,
        node: &Node,
        scope: &str,
        name: &str,
        exponent: f64,
    ) -> Result<(), OnnxError> {
        if exponent.fract() != 0.0 || !(0.0..=f64::from(u32::MAX)).contains(&exponent) {
            return Err(arg_error(format!(
                "an integer tensor to the power {exponent} (torch takes whole exponents from 0)"
            )));
        }
        let x = self.any_activation(name)?;
        let (shape, elem) = (x.shape().to_vec(), x.elem());
        let mut remaining = exponent as u64;
        let mut square = x.clone();
        let mut product: Option<Value> = None;
        while remaining > 0 {
            if remaining & 1 == 1 {
                product = Some(match product {
                    None => square.clone(),
                    Some(p) => emit::typed(
                        &mut self.g,
                        "Mul",
                        scope,
                        [p.name(), square.name()],
                        &shape,
                        elem,
                    ),
                });
            }
            remaining >>= 1;
            if remaining > 0 {
                square = emit::typed(
                    &mut self.g,
                    "Mul",
                    scope,
                    [square.name(), square.name()],
                    &shape,
                    elem,
                );
            }
        }
        let y = match product {
            Some(p) => p,
            None => {
                // x⁰ = 1 for every x, 0 included.
                let zero = self.g.typed_scalar(&format!("{scope}.zero"), 0.0, elem)?;
                let one = self.g.typed_scalar(&format!("{scope}.one"), 1.0, elem)?;
                let nothing = emit::typed(
                    &mut self.g,
                    "Mul",
                    scope,
                    [x.name(), zero.name()],
                    &shape,
                    elem,
                );
                emit::typed(
                    &mut self.g,
                    "Add",
                    scope,
                    [nothing.name(), one.name()],
                    &shape,
                    elem,
                )
            }
        };
        self.bind(node, 0, y)
    }

    /// `clamp`, `clamp_min`, `clamp_max`, `clamp.Tensor`: `Clip` with constant bounds (an
    /// absent one is an infinity, so that an infinite input stays infinite as in torch); a
    /// bound tensor of several values (one per element) is a `Max`/`Min` with it. An
    /// integer result is `Max` with the lower bound, then `Min` with the upper (ONNX's
    /// `Clip` takes integers only from opset 12).
    pub(super) fn clamp(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let elem = self.recorded_elem(self.output_name(node, 0)?)?;
        if elem != ElemType::Float32 {
            return self.clamp_integer(node, args, scope, elem);
        }
        let tensors: Vec<Elementwise<'_>> = ["self", "min", "max"]
            .into_iter()
            .filter_map(|name| match args.get(name) {
                Some(Argument::Tensor(t)) => Some(Elementwise::Tensor(t)),
                _ => None,
            })
            .collect();
        self.lift_for_constants(&tensors)?;
        let mut x = self.activation(args.tensor("self").or_shape()?)?;
        let mut bounds = [f32::NEG_INFINITY, f32::INFINITY];
        for (k, name) in ["min", "max"].into_iter().enumerate() {
            match args.get(name) {
                None | Some(Argument::None) => {}
                Some(Argument::Int(_) | Argument::Float(_)) => {
                    bounds[k] = args.number(name).or_shape()? as f32;
                }
                // `clamp.Tensor`: a constant bound, one value or one per element.
                Some(Argument::Tensor(bound)) if self.is_constant(bound) => {
                    let (_, values) = self.constant_values(bound)?;
                    if let [value] = values.as_slice() {
                        bounds[k] = *value;
                    } else {
                        let w = self.weight(&self.constant(bound)?)?;
                        let op = if k == 0 { "Max" } else { "Min" };
                        x = emit::binary(
                            &mut self.g,
                            op,
                            scope,
                            Operand::Activation(&x),
                            Operand::Constant(&w),
                        )?;
                    }
                }
                Some(other) => {
                    return Err(arg_error(format!(
                        "clamp's `{name}` is {}; only constant bounds are exported",
                        other.kind()
                    )))
                }
            }
        }
        let y = if bounds == [f32::NEG_INFINITY, f32::INFINITY] {
            x
        } else {
            self.g.clip(scope, &x, bounds[0], bounds[1])
        };
        self.bind(node, 0, y)
    }

    /// `clamp` of an integer tensor (torch's result type is the input's: the bounds are
    /// integers): `Max(x, min)`, then `Min(·, max)`, each bound at the tensor's type.
    fn clamp_integer(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        elem: ElemType,
    ) -> Result<(), OnnxError> {
        let mut y = self.operand_at(&operand(args, "self")?, scope, elem)?;
        for (name, op) in [("min", "Max"), ("max", "Min")] {
            if matches!(args.get(name), None | Some(Argument::None)) {
                continue;
            }
            let bound = self.operand_at(&operand(args, name)?, scope, elem)?;
            y = self.elementwise(scope, op, &y, &bound)?;
        }
        match y {
            Emitted::Activation(t) => self.bind_tensor(node, 0, t),
            Emitted::Constant(_) => Err(arg_error(
                "clamp of a constant is folded, not emitted".into(),
            )),
        }
    }

    /// `elu` (`scale` and `input_scale` must be 1: that is `F.elu`, not selu/celu).
    pub(super) fn elu(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let alpha = args.float("alpha").or_shape()? as f32;
        for name in ["scale", "input_scale"] {
            if args.float(name).or_shape()? != 1.0 {
                return Err(arg_error(format!("elu with {name} ≠ 1 is not exported")));
            }
        }
        self.unary_alpha(node, args, scope, "Elu", alpha)
    }

    /// `leaky_relu`: `LeakyRelu(alpha = negative_slope)`.
    pub(super) fn leaky_relu(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let slope = args.float("negative_slope").or_shape()? as f32;
        self.unary_alpha(node, args, scope, "LeakyRelu", slope)
    }

    /// Binds output 0 of `node` to ONNX `op` of activation `self` with attribute `alpha`.
    fn unary_alpha(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        op: &'static str,
        alpha: f32,
    ) -> Result<(), OnnxError> {
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let y = self
            .g
            .unary(op, scope, &x, vec![("alpha", Attr::Float(alpha))]);
        self.bind(node, 0, y)
    }

    /// `softplus`, torch's formula (`softplus_kernel`): `x` where `β·x > threshold`, else
    /// `Softplus(β·x) / β`; a threshold of 15 or more leaves the switch out (there Softplus
    /// differs from `x` by `log(1 + e^−threshold)/β`, 2e-9 at the default 20).
    pub(super) fn softplus(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let beta = args.float("beta").or_shape()?;
        let threshold = args.float("threshold").or_shape()?;
        if beta <= 0.0 {
            return Err(arg_error(format!(
                "softplus with beta {beta} is not exported (beta > 0 is)"
            )));
        }
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let bx = if beta == 1.0 {
            x.clone()
        } else {
            scaled(&mut self.g, scope, &x, beta as f32)?
        };
        let s = self.g.unary("Softplus", scope, &bx, vec![]);
        let soft = if beta == 1.0 {
            s
        } else {
            scaled(&mut self.g, scope, &s, (1.0 / beta) as f32)?
        };
        // Above 15, log1p(exp(βx))/β is x in float32 (the gap is below 3e-7·x), so only a
        // lower threshold needs torch's switch to x written out.
        let y = if threshold >= 15.0 {
            soft
        } else {
            let limit = self
                .g
                .constant_scalar(&format!("{scope}.threshold"), threshold as f32);
            let shape = x.shape().to_vec();
            let above = emit::typed(
                &mut self.g,
                "Greater",
                scope,
                [bx.name(), limit.name()],
                &shape,
                ElemType::Bool,
            );
            emit::typed(
                &mut self.g,
                "Where",
                scope,
                [above.name(), x.name(), soft.name()],
                &shape,
                ElemType::Float32,
            )
        };
        self.bind(node, 0, y)
    }

    /// `mish`: `x · tanh(softplus(x))`.
    pub(super) fn mish(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let s = self.g.unary("Softplus", scope, &x, vec![]);
        let t = emit::tanh(&mut self.g, scope, &s);
        let y = product(&mut self.g, scope, &x, &t)?;
        self.bind(node, 0, y)
    }

    /// tanh-approximated gelu: `½·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
    pub(super) fn gelu_tanh(
        &mut self,
        node: &Node,
        x: &Value,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let g = &mut self.g;
        let square = product(g, scope, x, x)?;
        let cube = product(g, scope, &square, x)?;
        let cube = scaled(g, scope, &cube, 0.044715)?;
        let inner = emit::binary(
            g,
            "Add",
            scope,
            Operand::Activation(x),
            Operand::Activation(&cube),
        )?;
        let inner = scaled(g, scope, &inner, (2.0 / std::f64::consts::PI).sqrt() as f32)?;
        let t = emit::tanh(g, scope, &inner);
        let one = g.constant_scalar(&format!("{scope}.one"), 1.0);
        let t = g.add_constant(scope, &t, &one)?;
        let y = product(g, scope, x, &t)?;
        let y = scaled(g, scope, &y, 0.5)?;
        self.bind(node, 0, y)
    }

    /// `prelu`: `PRelu` with the slope (one per channel, or one for all) shaped to
    /// broadcast along the channel axis, written once as `<weight>.prelu`.
    pub(super) fn prelu(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let weight = self.constant(args.tensor("weight").or_shape()?)?;
        let values = self.read(&weight)?;
        let channels = x.shape().first().copied().unwrap_or(1);
        let dims: Vec<u64> = match values.len() as u64 {
            1 => vec![1],
            n if n == channels && !x.shape().is_empty() => std::iter::once(n)
                .chain(x.shape()[1..].iter().map(|_| 1))
                .collect(),
            n => {
                return Err(arg_error(format!(
                "prelu with {n} slopes for per-sample {:?} (one, or one per channel, is exported)",
                x.shape()
            )))
            }
        };
        let slope = self.g.weight(&format!("{weight}.prelu"), dims, &values)?;
        let y = emit::binary(
            &mut self.g,
            "PRelu",
            scope,
            Operand::Activation(&x),
            Operand::Constant(&slope),
        )?;
        self.bind(node, 0, y)
    }
}
