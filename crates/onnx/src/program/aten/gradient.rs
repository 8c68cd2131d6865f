//! `gradient` at constant sample points (`gradient.tensorarray`, `gradient.tensorarrayint`:
//! one 1-D tensor of coordinates per dimension) as torch's `gradient_helper` computes it:
//! each dimension's weights found at export ([`ckpt_aten::gradient::stencil`]), the
//! interior `a·x[:-2] + b·x[1:-1] + c·x[2:]` with `a`, `b`, `c` constants along the
//! dimension, the ends by first- or second-order differences, joined along a sample axis
//! (with a batch, every dimension but the first).

use crate::elem::ElemType;
use crate::graph::{GraphBuilder, Value, Weight};
use crate::program::emit;
use crate::program::lower::Lowering;
use crate::program::tensor;
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::gradient::{self, Ends};
use ckpt_aten::program::Node;

use super::{arg_error, row_axis, OrShape};

impl Lowering<'_, '_> {
    /// `gradient(self, spacing: Tensor[], dim, edge_order)` at constant sample points.
    pub(super) fn gradient_at_points(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let names = args.tensors("spacing").or_shape()?;
        let mut points = Vec::with_capacity(names.len());
        for name in names {
            if !self.is_constant(name) {
                return Err(arg_error(format!(
                    "gradient at the computed sample points `{name}`; only constant sample points are exported"
                )));
            }
            points.push(self.constant_tensor(name)?);
        }
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        let lifted = self.is_lifted();
        let mut sizes = x.shape().to_vec();
        if !lifted {
            // The batch: any size; asked for, it is refused below.
            sizes.insert(0, u64::MAX);
        }
        let (dims, edge_order) = gradient::directions(node, &sizes).or_shape()?;
        if points.len() != dims.len() {
            return Err(arg_error(format!(
                "gradient with {} spacings for {} dimensions",
                points.len(),
                dims.len()
            )));
        }
        let rows = self.rows_read()?;
        let mut outputs = Vec::with_capacity(dims.len());
        for (dim, points) in dims.into_iter().zip(points) {
            let axis = row_axis(dim as i64, &x, lifted)?;
            let n = x.shape()[axis];
            if points.dims() != [n] {
                return Err(arg_error(format!(
                    "gradient at sample points of sizes {:?} along a dimension of {n} entries",
                    points.dims()
                )));
            }
            let s = gradient::stencil(&points.to_f32(), edge_order);
            let g = &mut self.g;
            let (first, last) = match s.ends {
                Ends::First { first, last } => (
                    difference(g, scope, &x, axis, 0, first)?,
                    difference(g, scope, &x, axis, n - 2, last)?,
                ),
                Ends::Second { start, end } => {
                    let weights = |g: &mut GraphBuilder, w: [f32; 3]| {
                        w.map(|w| g.constant_scalar(&format!("{scope}.weight"), w))
                    };
                    let start = weights(g, start);
                    let end = weights(g, end);
                    (
                        weighted(g, scope, &x, axis, 0, 1, &start)?,
                        weighted(g, scope, &x, axis, n - 3, 1, &end)?,
                    )
                }
            };
            let mut parts = vec![first];
            if n > 2 {
                let rank = x.shape().len();
                let mut along = |w: &[f32]| {
                    let mut dims = vec![1; rank - axis];
                    dims[0] = w.len() as u64;
                    let values: Vec<f64> = w.iter().map(|&v| f64::from(v)).collect();
                    g.typed_constant(
                        &format!("{scope}.weights"),
                        dims,
                        &values,
                        ElemType::Float32,
                    )
                };
                let [a, b, c] = &s.interior;
                let weights = [along(a)?, along(b)?, along(c)?];
                parts.push(weighted(g, scope, &x, axis, 0, n - 2, &weights)?);
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
}

/// `(x[from + 1] − x[from]) / h` along `axis` (one entry).
fn difference(
    g: &mut GraphBuilder,
    scope: &str,
    x: &Value,
    axis: usize,
    from: u64,
    h: f32,
) -> Result<Value, OnnxError> {
    let later = g.slice(scope, x, axis, from + 1..from + 2)?;
    let earlier = g.slice(scope, x, axis, from..from + 1)?;
    let shape = later.shape().to_vec();
    let step = float_node(g, "Sub", scope, [later.name(), earlier.name()], &shape);
    let h = g.constant_scalar(&format!("{scope}.spacing"), h);
    Ok(float_node(g, "Div", scope, [step.name(), h.name()], &shape))
}

/// `w₀·x[from : from + len] + w₁·x[from + 1 : …] + w₂·x[from + 2 : …]` along `axis`,
/// summed in that order.
fn weighted(
    g: &mut GraphBuilder,
    scope: &str,
    x: &Value,
    axis: usize,
    from: u64,
    len: u64,
    weights: &[Weight; 3],
) -> Result<Value, OnnxError> {
    let mut sum: Option<Value> = None;
    for (k, w) in (0u64..).zip(weights) {
        let at = from + k;
        let entries = g.slice(scope, x, axis, at..at + len)?;
        let shape = entries.shape().to_vec();
        let term = float_node(g, "Mul", scope, [w.name(), entries.name()], &shape);
        sum = Some(match sum {
            None => term,
            Some(s) => float_node(g, "Add", scope, [s.name(), term.name()], &shape),
        });
    }
    sum.ok_or_else(|| arg_error("gradient without weights".into()))
}

fn float_node(
    g: &mut GraphBuilder,
    op: &'static str,
    scope: &str,
    operands: [&str; 2],
    shape: &[u64],
) -> Value {
    emit::typed(g, op, scope, operands, shape, ElemType::Float32)
}
