//! Ops along one sample axis of an activation: the running sum (`cumsum`, ONNX CumSum, in
//! CANN's opset-11 table), the running product (`cumprod`: opset 11 has no CumProd) and
//! the running log-sum-exp (`logcumsumexp`) as a scan in ⌈log₂ n⌉ steps ([`scan`]), the first difference (`diff`: two Slices and a Sub), the
//! trapezoid rule at a constant spacing (`trapezoid`/`trapz`, `cumulative_trapezoid`),
//! `gradient` at scalar spacings (torch's differences, [`ckpt_aten::gradient`]),
//! and the `*_like` factories of an activation, which are the same for every sample.

use crate::elem::ElemType;
use crate::graph::{Attr, GraphBuilder, Value};
use crate::program::emit::{self, Operand};
use crate::program::lower::Lowering;
use crate::program::tensor::{self, Placement};
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::gradient::{self, Direction};
use ckpt_aten::program::{Argument, Node};

use super::{arg_error, row_axis, OrShape};

/// The inclusive scan of `x` along `axis` of its shape, ONNX axis `onnx_axis` (one on when
/// the value is seen without its rows), under an associative `combine` whose identity is
/// `identity` (Hillis and Steele): at the step of distance `d` (1, 2, 4, … below the axis's
/// `n` entries) each entry is combined, as `combine(entry, earlier)`, with the one `d`
/// before it, or with `identity` before the start (a Slice and a constant Pad), so entry
/// `k` ends as `x₀ ∘ … ∘ xₖ` after ⌈log₂ n⌉ steps, for any `n`, a dynamic batch included.
/// The order of the combinations differs from a running loop's; with an exact identity
/// (`1·x`, `log_add_exp(−∞, x)`) a NaN, an infinity or a zero reaches every later entry
/// as it does in torch's loop.
fn scan(
    g: &mut GraphBuilder,
    scope: &str,
    x: Value,
    (axis, onnx_axis): (usize, usize),
    identity: f64,
    combine: impl Fn(&mut GraphBuilder, &Value, &Value) -> Result<Value, OnnxError>,
) -> Result<Value, OnnxError> {
    let n = x.shape()[axis];
    let onnx_rank = x.shape().len() + (onnx_axis - axis);
    let fill = g.typed_scalar(&format!("{scope}.identity"), identity, x.elem())?;
    let mut y = x;
    let mut distance = 1u64;
    while distance < n {
        let mut shape = y.shape().to_vec();
        shape[axis] = n - distance;
        let kept = g.slice_onnx(scope, y.name(), onnx_axis, 0..n - distance, shape);
        let mut pads = vec![0i64; 2 * onnx_rank];
        pads[onnx_axis] = distance as i64;
        let pads = g.constant_i64(&format!("{scope}.pads"), &pads);
        let inputs = vec![
            kept.name().to_owned(),
            pads.name().to_owned(),
            fill.name().to_owned(),
        ];
        let attrs = vec![("mode", Attr::Str("constant"))];
        let earlier = emit::single(g.typed_node(
            "Pad",
            scope,
            inputs,
            attrs,
            vec![(y.shape().to_vec(), y.elem())],
        ));
        y = combine(g, &y, &earlier)?;
        distance *= 2;
    }
    Ok(y)
}

/// `op(a, b)` of two float32 values (either may be a constant's name) broadcast to `shape`.
fn float_node(
    g: &mut GraphBuilder,
    op: &'static str,
    scope: &str,
    operands: [&str; 2],
    shape: &[u64],
) -> Value {
    emit::typed(g, op, scope, operands, shape, ElemType::Float32)
}

/// torch's `_log_add_exp_helper(x, y)` (the step of its `logcumsumexp` kernel) on two
/// float32 values of one shape: `log1p(exp(min − max)) + max`, NaN from either operand
/// propagated, and `x` itself where both are the same infinity (`min − max` would be NaN).
/// The minimum and maximum are picked by `Less`, never by ONNX `Min`/`Max`, whose NaN
/// rule ONNX leaves open; `log1p(e)` is `Log(1 + e)`, which ONNX's opset 11 has.
fn log_add_exp(g: &mut GraphBuilder, scope: &str, x: &Value, y: &Value) -> Value {
    let shape = x.shape().to_vec();
    let pick = |g: &mut GraphBuilder, c: &Value, a: &Value, b: &Value| {
        let inputs = [c.name(), a.name(), b.name()];
        emit::typed(g, "Where", scope, inputs, &shape, ElemType::Float32)
    };
    let below = emit::typed(
        g,
        "Less",
        scope,
        [y.name(), x.name()],
        &shape,
        ElemType::Bool,
    );
    // NaN on either side leaves `below` false: the minimum is x, the maximum y.
    let low = pick(g, &below, y, x);
    let high = pick(g, &below, x, y);
    let gap = float_node(g, "Sub", scope, [low.name(), high.name()], &shape);
    let exp = g.unary("Exp", scope, &gap, vec![]);
    let one = g.constant_scalar(&format!("{scope}.one"), 1.0);
    let plus = float_node(g, "Add", scope, [exp.name(), one.name()], &shape);
    let log = g.unary("Log", scope, &plus, vec![]);
    let sum = float_node(g, "Add", scope, [log.name(), high.name()], &shape);
    let bool_node = |g: &mut GraphBuilder, op: &'static str, inputs: [&str; 2]| {
        emit::single(g.typed_node(
            op,
            scope,
            inputs.iter().map(|&n| n.to_owned()).collect(),
            vec![],
            vec![(shape.clone(), ElemType::Bool)],
        ))
    };
    let same = bool_node(g, "Equal", [low.name(), high.name()]);
    let undefined = emit::typed(g, "IsNaN", scope, [gap.name()], &shape, ElemType::Bool);
    let infinite = bool_node(g, "And", [same.name(), undefined.name()]);
    pick(g, &infinite, x, &sum)
}

impl Lowering<'_, '_> {
    /// `cumsum(x, dim)`: a CumSum along a sample axis, in the type torch records for the
    /// result; a 0-d tensor's along its one-entry view (itself, cast).
    pub(super) fn cumsum(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        if self.g.opset().version() < 11 {
            return Err(arg_error(
                "cumsum of an activation needs CumSum, from opset 11; export with --opset 11 or later".into(),
            ));
        }
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let dim = args
            .optional_int("dim")
            .or_shape()?
            .ok_or_else(|| arg_error("cumsum without `dim`".into()))?;
        let dim = tensor::dim(dim, x.rank())?;
        let x = self.view_along(x, dim, scope)?;
        let axis = dim.view_axis();
        x.sample_axis(axis, "cumsum")?;
        // torch sums in the result's type: `dtype` when given, else int64 for integer and
        // bool inputs (`cumsum(mask.int(), 1)` is int64), else the input's.
        let elem = self.recorded_elem(self.output_name(node, 0)?)?;
        let x = x.with_value(emit::cast(&mut self.g, scope, x.value(), elem))?;
        let at = self
            .g
            .typed_scalar("cumsum.axis", axis as f64, crate::elem::ElemType::Int64)?;
        let inputs = vec![x.value().name().to_owned(), at.name().to_owned()];
        let shape = x.value().shape().to_vec();
        let y = self.g.node(
            "CumSum",
            scope,
            inputs,
            Vec::<(&'static str, Attr)>::new(),
            vec![shape],
        );
        let y = emit::single(y);
        self.bind_along(node, 0, dim, x.with_value(y)?)
    }

    /// `cumprod(x, dim)`: the running product along a sample axis in the type torch records
    /// for the result (after `dtype`'s cast; int64 for integer and bool inputs), a [`scan`]
    /// of Muls, so a NaN, an infinity or a zero reaches every later entry as in torch.
    /// torch accumulates float32 in float64 on the CPU; here each product is float32, as
    /// ckpt's `cumsum` sums in float32. A 0-d tensor's runs along its one-entry view
    /// (itself, cast).
    pub(super) fn cumprod(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let dim = args
            .optional_int("dim")
            .or_shape()?
            .ok_or_else(|| arg_error("cumprod without `dim`".into()))?;
        let dim = tensor::dim(dim, x.rank())?;
        let x = self.view_along(x, dim, scope)?;
        let axis = dim.view_axis();
        let at = x.sample_axis(axis, "cumprod")?;
        let elem = self.recorded_elem(self.output_name(node, 0)?)?;
        let x = x.with_value(emit::cast(&mut self.g, scope, x.value(), elem))?;
        if x.value().shape()[at] == 0 {
            return Err(arg_error(
                "cumprod along a dimension of 0 entries: its result is empty, which ATC does not compile".into(),
            ));
        }
        let product = scan(
            &mut self.g,
            scope,
            x.value().clone(),
            (at, axis),
            1.0,
            |g, a, b| {
                emit::binary(
                    g,
                    "Mul",
                    scope,
                    Operand::Activation(a),
                    Operand::Activation(b),
                )
            },
        )?;
        let y = x.with_value(product)?;
        self.bind_along(node, 0, dim, y)
    }

    /// `logcumsumexp(x, dim)`: the running log-sum-exp along a sample axis, torch's CPU
    /// kernel's step `log_add_exp(xₖ, yₖ₋₁)` ([`log_add_exp`]) as a [`scan`] from −∞, in
    /// float32 (torch accumulates in float64).
    pub(super) fn logcumsumexp(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        let axis = self.dim_axis(args, &x)?;
        if x.shape()[axis] == 0 {
            return Err(arg_error(
                "logcumsumexp along a dimension of 0 entries: its result is empty, which ATC does not compile".into(),
            ));
        }
        let y = scan(
            &mut self.g,
            scope,
            x,
            (axis, axis + 1),
            f64::NEG_INFINITY,
            |g, a, b| Ok(log_add_exp(g, scope, a, b)),
        )?;
        self.bind(node, 0, y)
    }

    /// `gradient` at scalar spacings ([`gradient::plan`]): for each dimension asked for,
    /// the one-sided differences at its ends and the central ones between, joined; each
    /// along a sample axis (with a batch, every dimension but the first).
    pub(super) fn gradient(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        let lifted = self.is_lifted();
        let mut sizes = x.shape().to_vec();
        if !lifted {
            // The batch: any size; asked for, it is refused below.
            sizes.insert(0, u64::MAX);
        }
        let (directions, edge_order) = gradient::plan(node, &sizes).or_shape()?;
        let rows = self.rows_read()?;
        let mut outputs = Vec::with_capacity(directions.len());
        for Direction { dim, spacing } in directions {
            let axis = row_axis(dim as i64, &x, lifted)?;
            let n = x.shape()[axis];
            let g = &mut self.g;
            let h = g.constant_scalar(&format!("{scope}.spacing"), spacing as f32);
            let edge = |g: &mut GraphBuilder, at_end: bool| -> Result<Value, OnnxError> {
                let weights = gradient::edge_weights(edge_order, at_end);
                let count = weights.len() as u64;
                let start = if at_end { n - count } else { 0 };
                let mut sum: Option<Value> = None;
                for (k, &w) in weights.iter().enumerate() {
                    let at = start + k as u64;
                    let entry = g.slice(scope, &x, axis, at..at + 1)?;
                    let shape = entry.shape().to_vec();
                    let w = g.constant_scalar(&format!("{scope}.weight"), w);
                    let term = float_node(g, "Mul", scope, [w.name(), entry.name()], &shape);
                    sum = Some(match sum {
                        None => term,
                        Some(s) => float_node(g, "Add", scope, [s.name(), term.name()], &shape),
                    });
                }
                let sum = sum.ok_or_else(|| arg_error("gradient without edge weights".into()))?;
                let shape = sum.shape().to_vec();
                Ok(float_node(g, "Div", scope, [sum.name(), h.name()], &shape))
            };
            let first = edge(g, false)?;
            let last = edge(g, true)?;
            let mut parts = vec![first];
            if n > 2 {
                let later = g.slice(scope, &x, axis, 2..n)?;
                let earlier = g.slice(scope, &x, axis, 0..n - 2)?;
                let shape = later.shape().to_vec();
                let step = float_node(g, "Sub", scope, [later.name(), earlier.name()], &shape);
                let step = float_node(g, "Div", scope, [step.name(), h.name()], &shape);
                let two = g.constant_scalar(&format!("{scope}.two"), 2.0);
                parts.push(float_node(
                    g,
                    "Div",
                    scope,
                    [step.name(), two.name()],
                    &shape,
                ));
            }
            parts.push(last);
            let parts: Vec<&Value> = parts.iter().collect();
            let y = g.concat(scope, &parts, axis)?;
            outputs.push(match rows {
                tensor::Rows::Lifted { .. } => self.unlift(y, scope)?,
                rows => tensor::Tensor::from_rows(rows, y),
            });
        }
        self.bind_list(node, outputs)
    }

    /// `trapezoid.dx`/`trapz.dx(y, dx, dim)`: torch's `do_trapezoid` at a constant spacing,
    /// `(Σ y − (y₀ + yₙ₋₁)·0.5)·dx` along a sample axis.
    pub(super) fn trapezoid(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let y = self.lifted_activation(args.tensor("y").or_shape()?)?;
        let axis = self.dim_axis(args, &y)?;
        let dx = args.float("dx").or_shape()?;
        let n = y.shape()[axis];
        if n == 0 {
            return Err(arg_error(
                "trapezoid along a dimension of no entries (torch's result is zeros that no input reaches)".into(),
            ));
        }
        let g = &mut self.g;
        let total = g.reduce("ReduceSum", scope, &y, &[axis], true)?;
        let first = g.slice(scope, &y, axis, 0..1)?;
        let last = g.slice(scope, &y, axis, n - 1..n)?;
        let shape = first.shape().to_vec();
        let ends = float_node(g, "Add", scope, [first.name(), last.name()], &shape);
        let half = g.constant_scalar(&format!("{scope}.half"), 0.5);
        let ends = float_node(g, "Mul", scope, [ends.name(), half.name()], &shape);
        let inner = float_node(g, "Sub", scope, [total.name(), ends.name()], &shape);
        let dx = g.constant_scalar(&format!("{scope}.dx"), dx as f32);
        let area = float_node(g, "Mul", scope, [inner.name(), dx.name()], &shape);
        let mut dims = shape;
        dims.remove(axis);
        let area = g.reshape(scope, &area, &dims)?;
        self.bind(node, 0, area)
    }

    /// `cumulative_trapezoid.dx(y, dx, dim)`: torch's `do_cumulative_trapezoid` at a
    /// constant spacing, `cumsum(dx / 2 · (y[:-1] + y[1:]))` along a sample axis (`dx / 2`
    /// in double, then float32, as torch scales a float32 tensor by a double).
    pub(super) fn cumulative_trapezoid(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let y = self.lifted_activation(args.tensor("y").or_shape()?)?;
        let axis = self.dim_axis(args, &y)?;
        let dx = args.float("dx").or_shape()?;
        let n = y.shape()[axis];
        if n < 2 {
            return Err(arg_error(format!(
                "cumulative_trapezoid along a dimension of {n} entries: its result has none, which ATC cannot compile"
            )));
        }
        let g = &mut self.g;
        let left = g.slice(scope, &y, axis, 0..n - 1)?;
        let right = g.slice(scope, &y, axis, 1..n)?;
        let shape = left.shape().to_vec();
        let sum = float_node(g, "Add", scope, [left.name(), right.name()], &shape);
        let step = g.constant_scalar(&format!("{scope}.step"), (dx / 2.0) as f32);
        let parts = float_node(g, "Mul", scope, [step.name(), sum.name()], &shape);
        let at = g.typed_scalar("cumsum.axis", (axis + 1) as f64, ElemType::Int64)?;
        let running = emit::single(g.node(
            "CumSum",
            scope,
            vec![parts.name().to_owned(), at.name().to_owned()],
            Vec::<(&'static str, Attr)>::new(),
            vec![shape],
        ));
        self.bind(node, 0, running)
    }

    /// `diff(x, n, dim)` without `prepend`/`append`: `x[1:] − x[:-1]` along `dim`, `n` times
    /// (torch's `diff`: `n = 0` is `x` itself, `prepend` and `append` unread).
    pub(super) fn diff(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        if args.int("n").or_shape()? == 0 {
            let x = self.tensor(args.tensor("self").or_shape()?)?;
            return self.bind_tensor(node, 0, x);
        }
        for extra in ["prepend", "append"] {
            if !matches!(args.get(extra), None | Some(Argument::None)) {
                return Err(arg_error(format!("diff with `{extra}` is not exported")));
            }
        }
        let mut x = self.tensor(args.tensor("self").or_shape()?)?;
        let axis = tensor::axis(args.int("dim").or_shape()?, x.rank())?;
        let n = args.int("n").or_shape()?;
        if n < 1 {
            return Err(arg_error(format!("diff with n = {n} (torch needs n ≥ 0)")));
        }
        for _ in 0..n {
            let at = x.sample_axis(axis, "diff")?;
            let size = x.value().shape()[at];
            if size < 2 {
                return Err(arg_error(
                    "diff of an axis of fewer than two entries".into(),
                ));
            }
            let later = x.sliced(&mut self.g, scope, "diff", axis, 1..size)?;
            let earlier = x.sliced(&mut self.g, scope, "diff", axis, 0..size - 1)?;
            let y = emit::binary(
                &mut self.g,
                "Sub",
                scope,
                Operand::Activation(later.value()),
                Operand::Activation(earlier.value()),
            )?;
            x = later.with_value(y)?;
        }
        self.bind_tensor(node, 0, x)
    }

    /// `zeros_like`, `ones_like`, `full_like`, `empty_like` of an activation: the same
    /// value for every sample, bound with size 1 on the batch axis (made an activation
    /// where one is needed, as a factory sized by the batch). `empty_like` is zeros. A
    /// `dtype` argument is the element type torch recorded for the result, which the
    /// constant is made in (a dtype the export does not handle is refused there).
    pub(super) fn like(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        fill: Option<f64>,
    ) -> Result<(), OnnxError> {
        let value = match fill {
            Some(v) => v,
            None => args.number("fill_value").or_shape()?,
        };
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        match x.placement() {
            Placement::Batch { axis, factor: 1 } => {
                let mut dims = x.value().shape().to_vec();
                dims.insert(axis, 1);
                let tensor = self.filled(node, dims, value)?;
                self.bind_uniform(node, 0, tensor)
            }
            Placement::Batch { .. } => Err(arg_error(
                "a *_like factory of a tensor whose batch is folded into a dimension".into(),
            )),
            // Without a batch, the result is a constant.
            Placement::Static => {
                let tensor = self.filled(node, x.value().shape().to_vec(), value)?;
                self.bind_folded(node, 0, tensor)
            }
        }
    }
}
