//! `searchsorted` of a number, or of constant values, in a static sorted sequence (the
//! activation, searched row by row, through a constant `sorter` when given): torch's binary
//! search ([`ckpt_aten::search`]) unrolled to its fixed number of halvings, each reading
//! the middle entry of every value's row with `GatherElements`; a finished search stays
//! put. The position is therefore torch's on any input, a NaN or an unsorted sequence
//! included.
//!
//! `bucketize` of an activation in constant boundaries: where the boundaries are sorted and
//! hold no NaN, torch's search finds the count of boundaries it moves right past
//! ([`search::past`]: `!(b >= v)`, or `!(b > v)` for the upper bound), so each entry is
//! compared with every boundary and the hits summed; other boundaries are refused.

use crate::elem::ElemType;
use crate::graph::{Attr, GraphBuilder, Value};
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::eval;
use ckpt_aten::program::{Argument, Node};
use ckpt_aten::search;

use super::super::emit;
use super::super::lower::Lowering;
use super::order::float32;
use super::{arg_error, OrShape};

impl Lowering<'_, '_> {
    /// `searchsorted.Scalar(sorted_sequence, self, out_int32, right, side, sorter)` and
    /// `searchsorted.Tensor` of constant values, in a static sequence searched row by row
    /// ([`search::rows`]), read through a constant `sorter` when given.
    pub(super) fn searchsorted(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let upper = search::upper(node).map_err(arg_error)?;
        let sequence = args.tensor("sorted_sequence").or_shape()?;
        let values = match args.get("self") {
            Some(Argument::Tensor(v)) => {
                if !self.is_constant(v) {
                    return Err(arg_error(format!(
                        "searchsorted of the computed values `{v}`; only constant values are exported"
                    )));
                }
                self.constant_tensor(v)?
            }
            _ => {
                // torch searches for the number as a float32 (the sequence's type).
                let v = args.float("self").or_shape()? as f32;
                eval::Tensor::f32(Vec::new(), vec![v]).map_err(arg_error)?
            }
        };
        let sorter =
            match args.get("sorter") {
                None | Some(Argument::None) => None,
                Some(Argument::Tensor(s)) if self.is_constant(s) => Some(self.constant_tensor(s)?),
                Some(_) => return Err(arg_error(
                    "searchsorted through a computed sorter; only a constant sorter is exported"
                        .into(),
                )),
            };
        let x = self.lifted_any_activation(sequence)?;
        float32(&x, "searchsorted")?;
        if !self.is_lifted() {
            return Err(arg_error(
                "searchsorted searches the sequence's last dimension for fixed values, the same for every row; with a batch those rows are the samples, and fixed values per row treat samples by their place in the batch, which mixes samples (export with --batch static)".into(),
            ));
        }
        let seq_dims = x.shape().to_vec();
        if args
            .get("self")
            .is_some_and(|v| !matches!(v, Argument::Tensor(_)))
            && seq_dims.len() != 1
        {
            return Err(arg_error(format!(
                "searchsorted of a number in a {}-D sequence (torch needs 1-D)",
                seq_dims.len()
            )));
        }
        let (r, n, m) = search::rows(&seq_dims, values.dims()).map_err(arg_error)?;
        if n == 0 || r * m == 0 {
            return Err(arg_error(
                "searchsorted in an empty sequence or of no values: a dimension of size 0 (an empty tensor), which ATC does not compile".into(),
            ));
        }
        let (r, n, m) = (r as u64, n as u64, m as u64);
        let out = if args.bool("out_int32").or_shape()? {
            ElemType::Int32
        } else {
            ElemType::Int64
        };
        let g = &mut self.g;
        let (f32_, bool_, rm) = (ElemType::Float32, ElemType::Bool, [r, m]);
        let x = g.reshape(scope, &x, &[r, n])?;
        let x = match sorter {
            None => x,
            Some(sorter) => {
                let at = sorter.to_i64().map_err(arg_error)?;
                let at =
                    search::sorter_positions(&seq_dims, sorter.dims(), &at).map_err(arg_error)?;
                let at: Vec<f64> = at.iter().map(|&i| i as f64).collect();
                let index = g.typed_constant(
                    &format!("{scope}.sorter"),
                    vec![1, r, n],
                    &at,
                    ElemType::Int64,
                )?;
                emit::single(g.typed_node(
                    "GatherElements",
                    scope,
                    vec![x.name().to_owned(), index.name().to_owned()],
                    vec![("axis", Attr::Int(2))],
                    vec![(vec![r, n], f32_)],
                ))
            }
        };
        let searched: Vec<f64> = values.to_f32().iter().map(|&v| f64::from(v)).collect();
        let target =
            g.typed_constant(&format!("{scope}.values"), vec![1, r, m], &searched, f32_)?;
        let scalar = |g: &mut GraphBuilder, hint: &str, v: f64| {
            g.typed_constant(&format!("{scope}.{hint}"), vec![1, 1, 1], &[v], f32_)
        };
        let half = scalar(g, "half", 0.5)?;
        let step = scalar(g, "one", 1.0)?;
        let last = scalar(g, "last", n.saturating_sub(1) as f64)?;
        // Whether the search moves right past the middle entry `mid` (float32 index).
        let past = |g: &mut GraphBuilder, mid: &str| -> Value {
            let mid = emit::typed(g, "Min", scope, [mid, last.name()], &rm, f32_);
            let index = emit::cast(g, scope, &mid, ElemType::Int64);
            let at = emit::single(g.typed_node(
                "GatherElements",
                scope,
                vec![x.name().to_owned(), index.name().to_owned()],
                vec![("axis", Attr::Int(2))],
                vec![(rm.to_vec(), f32_)],
            ));
            let above = emit::typed(g, "Greater", scope, [at.name(), target.name()], &rm, bool_);
            let stops = if upper {
                above
            } else {
                let equal = emit::typed(g, "Equal", scope, [at.name(), target.name()], &rm, bool_);
                emit::typed(g, "Or", scope, [above.name(), equal.name()], &rm, bool_)
            };
            emit::typed(g, "Not", scope, [stops.name()], &rm, bool_)
        };
        // The range `[start, end)` still searched, float32 per value.
        let mut range: Option<(Value, Value)> = None;
        for _ in 0..search::steps(n) {
            let next = match &range {
                None => {
                    // The first step's range is the whole axis, its middle a constant of
                    // the values' shape (GatherElements reads one entry per index).
                    let middle = (n / 2) as f64;
                    let mids = vec![middle; (r * m) as usize];
                    let mid =
                        g.typed_constant(&format!("{scope}.mid"), vec![1, r, m], &mids, f32_)?;
                    let right = past(g, mid.name());
                    let after = scalar(g, "after", middle + 1.0)?;
                    let zero = scalar(g, "zero", 0.0)?;
                    let whole = scalar(g, "n", n as f64)?;
                    let names = [right.name(), after.name(), zero.name()];
                    let s = emit::typed(g, "Where", scope, names, &rm, f32_);
                    let names = [right.name(), whole.name(), mid.name()];
                    (s, emit::typed(g, "Where", scope, names, &rm, f32_))
                }
                Some((s, e)) => {
                    let active = emit::typed(g, "Less", scope, [s.name(), e.name()], &rm, bool_);
                    let sum = emit::typed(g, "Add", scope, [s.name(), e.name()], &rm, f32_);
                    let sum = emit::typed(g, "Mul", scope, [sum.name(), half.name()], &rm, f32_);
                    let mid = emit::typed(g, "Floor", scope, [sum.name()], &rm, f32_);
                    let right = past(g, mid.name());
                    let left = emit::typed(g, "Not", scope, [right.name()], &rm, bool_);
                    let right =
                        emit::typed(g, "And", scope, [active.name(), right.name()], &rm, bool_);
                    let left =
                        emit::typed(g, "And", scope, [active.name(), left.name()], &rm, bool_);
                    let after = emit::typed(g, "Add", scope, [mid.name(), step.name()], &rm, f32_);
                    let names = [right.name(), after.name(), s.name()];
                    let s = emit::typed(g, "Where", scope, names, &rm, f32_);
                    let names = [left.name(), mid.name(), e.name()];
                    (s, emit::typed(g, "Where", scope, names, &rm, f32_))
                }
            };
            range = Some(next);
        }
        let Some((found, _)) = range else {
            return Err(arg_error(
                "searchsorted in an empty sequence, which ATC does not compile".into(),
            ));
        };
        let found = g.reshape(scope, &found, values.dims())?;
        let found = emit::cast(g, scope, &found, out);
        self.bind(node, 0, found)
    }

    /// `bucketize.Tensor(self, boundaries, out_int32, right)` by constant 1-D boundaries,
    /// sorted and free of NaN.
    pub(super) fn bucketize(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let upper = args.bool("right").or_shape()?;
        let edges_name = args.tensor("boundaries").or_shape()?;
        if !self.is_constant(edges_name) {
            return Err(arg_error(format!(
                "bucketize in the computed boundaries `{edges_name}`; only constant boundaries are exported (ONNX has no search in a computed sequence but by its unrolled steps)"
            )));
        }
        let edges = self.constant_tensor(edges_name)?;
        let edges = sorted_edges(&edges).map_err(arg_error)?;
        let x = self.lifted_any_activation(args.tensor("self").or_shape()?)?;
        float32(&x, "bucketize")?;
        let out = if args.bool("out_int32").or_shape()? {
            ElemType::Int32
        } else {
            ElemType::Int64
        };
        let k = edges.len() as u64;
        let dims = x.shape().to_vec();
        let mut column = dims.clone();
        column.push(1);
        let mut compared = dims.clone();
        compared.push(k);
        let g = &mut self.g;
        let values: Vec<f64> = edges.iter().map(|&e| f64::from(e)).collect();
        let edges = g.typed_constant(
            &format!("{scope}.boundaries"),
            vec![k],
            &values,
            ElemType::Float32,
        )?;
        let v = g.reshape(scope, &x, &column)?;
        let bool_ = ElemType::Bool;
        // `b > v`, or `b >= v` for the lower bound: the searches that stop at `b`.
        let above = emit::typed(g, "Less", scope, [v.name(), edges.name()], &compared, bool_);
        let stops = if upper {
            above
        } else {
            let equal = emit::typed(
                g,
                "Equal",
                scope,
                [v.name(), edges.name()],
                &compared,
                bool_,
            );
            emit::typed(
                g,
                "Or",
                scope,
                [above.name(), equal.name()],
                &compared,
                bool_,
            )
        };
        let past = emit::typed(g, "Not", scope, [stops.name()], &compared, bool_);
        let past = emit::cast(g, scope, &past, ElemType::Float32);
        let count = g.reduce("ReduceSum", scope, &past, &[dims.len()], false)?;
        let count = emit::cast(g, scope, &count, out);
        self.bind(node, 0, count)
    }
}

/// Constant `boundaries` as float32, when torch's search over them finds the count of those
/// it moves past: 1-D, sorted, no NaN.
fn sorted_edges(boundaries: &eval::Tensor) -> Result<Vec<f32>, String> {
    if boundaries.rank() != 1 {
        return Err(format!(
            "bucketize in boundaries of sizes {:?}; torch takes 1-D ones",
            boundaries.dims()
        ));
    }
    let edges = boundaries.to_f32();
    if edges.is_empty() {
        return Err("bucketize in empty boundaries puts every entry in bucket 0, a result with no activation, which the export does not write".into());
    }
    if edges.iter().any(|e| e.is_nan()) || edges.windows(2).any(|w| w[0] > w[1]) {
        return Err("bucketize in boundaries that are not sorted or hold a NaN: torch's binary search then finds a position its path decides, not a count of the boundaries passed, and the export writes the count; sort the boundaries".into());
    }
    Ok(edges)
}
