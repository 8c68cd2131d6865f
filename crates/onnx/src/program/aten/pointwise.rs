//! Element-wise ops: activations, broadcasting arithmetic, softmax, gelu and layer_norm,
//! wherever the batch is (softmax and layer_norm not along it).

use crate::elem::ElemType;
use crate::graph::Value;
use crate::OnnxError;
use ckpt_aten::program::{Argument, Node};

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::super::tensor::{self, Placement, Tensor};
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

impl<'p> Lowering<'p, '_> {
    pub(super) fn unary(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        emit: impl FnOnce(&mut crate::graph::GraphBuilder, &Value) -> Value,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let y = emit(&mut self.g, x.value());
        self.bind_tensor(node, 0, x.with_value(y)?)
    }

    /// `x · gate(x)`: silu (Sigmoid) and hardswish (HardSigmoid).
    pub(super) fn gated(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        gate: impl FnOnce(&mut crate::graph::GraphBuilder, &Value) -> Value,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let s = gate(&mut self.g, x.value());
        self.bind_gated(node, scope, &x, &s)
    }

    /// Binds output 0 of `node` to `x · gate`, `gate` an activation of `x`'s sizes, placed
    /// as `x` is.
    fn bind_gated(
        &mut self,
        node: &Node,
        scope: &str,
        x: &Tensor,
        gate: &Value,
    ) -> Result<(), OnnxError> {
        let y = emit::binary(
            &mut self.g,
            "Mul",
            scope,
            Operand::Activation(x.value()),
            Operand::Activation(gate),
        )?;
        self.bind_tensor(node, 0, x.with_value(y)?)
    }

    /// `glu(self, dim)`: the first half of `dim` times the sigmoid of the second (torch's
    /// rule; `dim` must be even and never the batch).
    pub(super) fn glu(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let dim = tensor::axis(args.int("dim").or_shape()?, x.rank())?;
        let size = x.value().shape()[x.sample_axis(dim, "glu")?];
        if size % 2 != 0 {
            return Err(arg_error(format!(
                "glu halves dimension {dim}, of odd size {size} (torch refuses it too)"
            )));
        }
        let halves = x.split(&mut self.g, scope, "glu", dim, &[size / 2, size / 2])?;
        let [first, second] = halves.as_slice() else {
            return Err(arg_error("glu: the split did not give two halves".into()));
        };
        let gate = self.g.sigmoid(scope, second.value());
        self.bind_gated(node, scope, first, &gate)
    }

    /// `round(self, *, decimals)`: torch's kernel, `Round(x · 10^d) / 10^d`, or
    /// `Round(x / 10^−d) · 10^−d` for `d ≤ 0` (ONNX's Round, like torch's, rounds half to
    /// even), in float32.
    pub(super) fn round_decimals(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        if x.value().elem() != crate::elem::ElemType::Float32 {
            return Err(arg_error(format!(
                "round with decimals of a {} tensor is not exported (float32 only)",
                x.value().elem()
            )));
        }
        let decimals = args.int("decimals").or_shape()?;
        let power = i32::try_from(decimals.unsigned_abs())
            .ok()
            .filter(|&p| p <= 38)
            .ok_or_else(|| {
                arg_error(format!(
                    "round to {decimals} decimals is out of float32's range"
                ))
            })?;
        let scale = self
            .g
            .constant_scalar(&format!("{scope}.scale"), 10f64.powi(power) as f32);
        let y = if decimals > 0 {
            let up = self.g.mul_constant(scope, x.value(), &scale)?;
            let rounded = self.g.unary("Round", scope, &up, vec![]);
            self.g.div_constant(scope, &rounded, &scale)?
        } else {
            let down = self.g.div_constant(scope, x.value(), &scale)?;
            let rounded = self.g.unary("Round", scope, &down, vec![]);
            self.g.mul_constant(scope, &rounded, &scale)?
        };
        self.bind_tensor(node, 0, x.with_value(y)?)
    }

    pub(super) fn hardtanh(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let lo = args.float("min_val").or_shape()? as f32;
        let hi = args.float("max_val").or_shape()? as f32;
        let y = self.g.clip(scope, x.value(), lo, hi);
        self.bind_tensor(node, 0, x.with_value(y)?)
    }

    /// `softmax` (`op` Softmax) or `log_softmax` (LogSoftmax) over `dim`: the ONNX op over
    /// the last axis (exact at every opset), with `dim` swapped to the last axis and back
    /// when it is another one; a 0-d tensor's over its one-entry view, as torch's
    /// `host_softmax` computes it (1, or 0 for LogSoftmax, and NaN for NaN and ±inf).
    pub(super) fn softmax(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        op: &'static str,
    ) -> Result<(), OnnxError> {
        self.same_dtype(node, args, op)?;
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let dim = tensor::dim(args.int("dim").or_shape()?, x.rank())?;
        let x = self.view_along(x, dim, scope)?;
        let y = x.softmax(&mut self.g, scope, op, dim.view_axis())?;
        self.bind_along(node, 0, dim, y)
    }

    /// `gelu`, exact (`approximate='none'`) or tanh-approximated.
    pub(super) fn gelu(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let input = args.tensor("self").or_shape()?;
        match args.get("approximate") {
            None => {}
            Some(Argument::String(mode)) if mode == "none" => {}
            Some(Argument::String(mode)) if mode == "tanh" => {
                let x = self.activation(input)?;
                return self.gelu_tanh(node, &x, scope);
            }
            Some(other) => {
                return Err(arg_error(format!(
                    "gelu with approximate={other:?} is not exported (only 'none' and 'tanh')"
                )))
            }
        }
        let x = self.tensor(input)?;
        let y = self.g.gelu(scope, x.value())?;
        self.bind_tensor(node, 0, x.with_value(y)?)
    }

    /// The input of a normalisation over the trailing dimensions `normalized_shape` names
    /// (`layer_norm`, `rms_norm`), as rows, and the per-sample axes it normalises; the
    /// batch among them is refused (it would mix samples).
    pub(super) fn trailing_norm_input(
        &mut self,
        args: &Args<'_>,
        op: &str,
        scope: &str,
    ) -> Result<(Tensor, Value, Vec<usize>), OnnxError> {
        let t = self.tensor(args.tensor("input").or_shape()?)?;
        let normalized = args
            .optional_ints("normalized_shape")
            .or_shape()?
            .unwrap_or_default()
            .to_vec();
        let k = normalized.len();
        if k == 0 || k > t.rank() {
            return Err(arg_error(format!(
                "{op} over {normalized:?} of a rank-{} tensor",
                t.rank()
            )));
        }
        for axis in t.rank() - k..t.rank() {
            t.sample_axis(axis, op)?;
        }
        let x = self.rows_input(&t, scope)?;
        let rank = x.shape().len();
        let trailing = rank.checked_sub(k).map(|first| &x.shape()[first..]);
        if trailing.is_none_or(|sizes| sizes.iter().zip(&normalized).any(|(&s, &n)| s as i64 != n))
        {
            return Err(arg_error(format!(
                "{op} over {normalized:?} of per-sample {:?}: torch normalises the trailing dimensions of those sizes",
                x.shape()
            )));
        }
        Ok((t, x, (rank - k..rank).collect()))
    }

    /// `rms_norm` over the last axis, decomposed; `eps` None is float32's machine epsilon,
    /// as torch uses.
    pub(super) fn rms_norm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let (t, x, axes) = self.trailing_norm_input(args, "rms_norm", scope)?;
        let gamma = match args.optional_tensor("weight").or_shape()? {
            Some(w) => Some(self.weight(&self.constant(w)?)?),
            None => None,
        };
        let eps = match args.get("eps") {
            None | Some(Argument::None) => f32::EPSILON,
            Some(_) => args.number("eps").or_shape()? as f32,
        };
        let y = self.g.rms_norm(scope, &x, &axes, gamma.as_ref(), eps)?;
        let y = self.rows_result(&t, y, scope)?;
        self.bind_tensor(node, 0, y)
    }

    /// `layer_norm` and `native_layer_norm` over the trailing dimensions
    /// `normalized_shape` names, decomposed; `native_layer_norm`'s mean and reciprocal
    /// standard deviation `1 / √(variance + ε)` too (the normalised axes kept as 1), as
    /// torch's kernel returns them.
    pub(super) fn layer_norm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let (t, x, axes) = self.trailing_norm_input(args, "layer_norm", scope)?;
        let mut affine = [None, None];
        for (slot, name) in affine.iter_mut().zip(["weight", "bias"]) {
            if let Some(t) = args.optional_tensor(name).or_shape()? {
                *slot = Some(self.weight(&self.constant(t)?)?);
            }
        }
        let eps = args.float("eps").or_shape()? as f32;
        let [gamma, beta] = &affine;
        let [y, mean, deviation] =
            self.g
                .layer_norm_over(scope, &x, &axes, [gamma.as_ref(), beta.as_ref()], eps)?;
        let y = self.rows_result(&t, y, scope)?;
        self.bind_tensor(node, 0, y)?;
        for (k, stat) in [(1, Some(mean)), (2, None)] {
            if self.output_name(node, k).is_err() {
                continue;
            }
            let stat = match stat {
                Some(mean) => mean,
                None => self.g.unary("Reciprocal", scope, &deviation, vec![]),
            };
            let stat = self.rows_result(&t, stat, scope)?;
            self.bind_tensor(node, k, stat)?;
        }
        Ok(())
    }

    pub(super) fn binary(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        op: &'static str,
    ) -> Result<(), OnnxError> {
        if args.float_or("alpha", 1.0).or_shape()? != 1.0 {
            return Err(arg_error("add/sub with alpha ≠ 1 is not exported".into()));
        }
        let a = operand(args, "self")?;
        let b = operand(args, "other")?;
        self.arithmetic(node, scope, op, a, b)
    }

    /// `a op b` for `op` an ONNX broadcasting binary op, an operand an activation (an op
    /// on constants alone was folded before it reached the lowering).
    pub(super) fn arithmetic(
        &mut self,
        node: &Node,
        scope: &str,
        op: &'static str,
        a: Elementwise<'_>,
        b: Elementwise<'_>,
    ) -> Result<(), OnnxError> {
        // torch's promoted result type: every operand is computed at it.
        let elem = self.recorded_elem(self.output_name(node, 0)?)?;
        // Of bools, torch's product is their `and` and its sum their `or` (1 + 1 is true).
        let op = match (elem, op) {
            (ElemType::Bool, "Mul") => "And",
            (ElemType::Bool, "Add") => "Or",
            (ElemType::Bool, _) => {
                return Err(arg_error(format!(
                    "{op} of bool tensors is not exported (ONNX's {op} takes numbers)"
                )))
            }
            _ => op,
        };
        let a = self.operand_at(&a, scope, elem)?;
        let b = self.operand_at(&b, scope, elem)?;
        match self.elementwise(scope, op, &a, &b)? {
            Emitted::Activation(y) => self.bind_tensor(node, 0, y),
            Emitted::Constant(_) => Err(arg_error(format!(
                "{op} of two constants is folded, not emitted"
            ))),
        }
    }

    /// `a op b` for `op` an ONNX broadcasting binary op on operands in the graph, at
    /// least one an activation: two activations must carry the batch alike.
    pub(super) fn elementwise(
        &mut self,
        scope: &str,
        op: &'static str,
        a: &Emitted,
        b: &Emitted,
    ) -> Result<Emitted, OnnxError> {
        let y = match (a, b) {
            (Emitted::Activation(x), Emitted::Activation(y)) => {
                if !x.same_batch(y) {
                    return Err(arg_error(format!(
                        "{op} of {} and {}: the batch must be on the same dimension of both, the same number of times",
                        tensor::show(&x.sizes()),
                        tensor::show(&y.sizes())
                    )));
                }
                let v = emit::binary(
                    &mut self.g,
                    op,
                    scope,
                    Operand::Activation(x.value()),
                    Operand::Activation(y.value()),
                )?;
                x.with_value(v)?
            }
            (Emitted::Activation(x), Emitted::Constant(c)) => {
                x.with_constant(&mut self.g, scope, op, c, false)?
            }
            (Emitted::Constant(c), Emitted::Activation(x)) => {
                x.with_constant(&mut self.g, scope, op, c, true)?
            }
            (Emitted::Constant(_), Emitted::Constant(_)) => {
                return Err(arg_error(format!(
                    "{op} of two constants is folded, not emitted"
                )))
            }
        };
        Ok(Emitted::Activation(y))
    }

    /// `e` in the graph at element type `elem`, the type torch computes the op at: an
    /// activation of a narrower type is cast (an int64 timestep times a float32 constant
    /// computes in float32), a constant or number is written at `elem` (refused where a
    /// value is not exact in it). A float activation is never narrowed to an integer
    /// type: torch's promotion never does that.
    pub(super) fn operand_at(
        &mut self,
        e: &Elementwise<'_>,
        scope: &str,
        elem: ElemType,
    ) -> Result<Emitted, OnnxError> {
        if elem == ElemType::Float32 {
            let emitted = self.emitted_operand(e, scope)?;
            return Ok(match emitted {
                Emitted::Activation(x) => {
                    let cast = emit::cast(&mut self.g, scope, x.value(), elem);
                    Emitted::Activation(x.with_value(cast)?)
                }
                constant => constant,
            });
        }
        Ok(match e {
            Elementwise::Tensor(t) if self.is_constant(t) => {
                Emitted::Constant(self.constant_weight_as(t, elem)?)
            }
            Elementwise::Tensor(t) => {
                let x = self.tensor(t)?;
                let from = x.value().elem();
                if from == ElemType::Float32 {
                    return Err(arg_error(format!(
                        "`{t}` is float32 but torch computes this op in {elem}"
                    )));
                }
                let cast = emit::cast(&mut self.g, scope, x.value(), elem);
                Emitted::Activation(x.with_value(cast)?)
            }
            Elementwise::Scalar(v) => {
                Emitted::Constant(self.g.typed_scalar(&format!("{scope}.scalar"), *v, elem)?)
            }
        })
    }

    /// Prepares a node that reads `operands` by rows ([`Lowering::any_activation`]) and
    /// binds its result by rows ([`Lowering::bind`]) to broadcast them as torch does: in a
    /// static export, when a constant operand has more dimensions than an activation's
    /// rows (a `[3, 4]` mask beside a `[3, 4]` input, whose rows are `[4]`), beyond a
    /// leading 1 every row shares, every activation is read lifted to the widest operand's
    /// rank ([`Lowering::lift_to`]), so the constant broadcasts within the one row. With a
    /// batch nothing changes: [`emit::broadcast_shape`] refuses a constant that meets it.
    pub(super) fn lift_for_constants(
        &mut self,
        operands: &[Elementwise<'_>],
    ) -> Result<(), OnnxError> {
        let mut ranks = Vec::new();
        let mut constants = Vec::new();
        for e in operands {
            let Elementwise::Tensor(t) = e else { continue };
            if self.is_constant(t) {
                constants.push(self.recorded_name_sizes(t)?);
            } else {
                let x = self.tensor(t)?;
                if x.placement() != Placement::Static {
                    return Ok(());
                }
                ranks.push(x.rank());
            }
        }
        // A 0-d tensor is read as its one-entry view, a row of one axis.
        let Some(rows) = ranks.iter().min().map(|&r| r.max(2) - 1) else {
            return Ok(());
        };
        let wide = constants.iter().any(|c| {
            c.len() > rows + 1 || (c.len() == rows + 1 && c.first().is_some_and(|d| d.count != 1))
        });
        if wide {
            let rank = constants
                .iter()
                .map(Vec::len)
                .chain(ranks)
                .max()
                .unwrap_or(0);
            self.lift_to(rank)?;
        }
        Ok(())
    }

    /// `e` in the graph: an activation, or a constant written as an initializer.
    pub(super) fn emitted_operand(
        &mut self,
        e: &Elementwise<'_>,
        scope: &str,
    ) -> Result<Emitted, OnnxError> {
        Ok(match e {
            Elementwise::Tensor(t) if self.is_constant(t) => {
                Emitted::Constant(self.constant_weight(t)?)
            }
            Elementwise::Tensor(t) => Emitted::Activation(self.tensor(t)?),
            Elementwise::Scalar(v) => Emitted::Constant(
                self.g
                    .constant_scalar(&format!("{scope}.scalar"), *v as f32),
            ),
        })
    }
}

/// An element-wise operand as the program gives it: a tensor value or a number.
#[derive(Clone, Copy, Debug)]
pub(super) enum Elementwise<'a> {
    Tensor(&'a str),
    /// A number, exactly as the program gives it (an int64 operand beyond float32's 2^24
    /// stays exact); written at the element type the op computes in.
    Scalar(f64),
}

/// Argument `name` as an element-wise operand.
pub(super) fn operand<'a>(args: &Args<'a>, name: &str) -> Result<Elementwise<'a>, OnnxError> {
    match args.get(name) {
        Some(Argument::Tensor(t)) => Ok(Elementwise::Tensor(t)),
        Some(Argument::Int(i)) => Ok(Elementwise::Scalar(*i as f64)),
        Some(Argument::Float(f)) => Ok(Elementwise::Scalar(*f)),
        // torch reads a bool number as 0 or 1 (`mask & True`).
        Some(Argument::Bool(b)) => Ok(Elementwise::Scalar(f64::from(u8::from(*b)))),
        Some(other) => Err(arg_error(format!("argument `{name}` is {}", other.kind()))),
        None => Err(arg_error(format!("argument `{name}` is missing"))),
    }
}

/// An operand of a node whose result is bound by rows ([`Lowering::bind`]): an activation
/// as [`Lowering::any_activation`] reads it (its rows left out of its shape), or a
/// constant.
pub(super) enum RowOperand {
    Activation(Value),
    Constant(crate::graph::Weight),
}

impl RowOperand {
    pub(super) fn operand(&self) -> Operand<'_> {
        match self {
            RowOperand::Activation(v) => Operand::Activation(v),
            RowOperand::Constant(w) => Operand::Constant(w),
        }
    }
}

/// An element-wise operand in the graph, owned.
pub(super) enum Emitted {
    Activation(Tensor),
    Constant(crate::graph::Weight),
}
