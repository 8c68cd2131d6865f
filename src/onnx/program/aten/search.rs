//! `searchsorted` of a number in a 1-D sorted sequence (the activation): torch's binary
//! search ([`crate::aten::search`]) unrolled to its fixed number of halvings, each reading
//! the middle entry with `GatherElements`; a finished search stays put. The position is
//! therefore torch's on any input, a NaN or an unsorted sequence included.

use crate::aten::args::Args;
use crate::aten::program::Node;
use crate::aten::search;
use crate::onnx::elem::ElemType;
use crate::onnx::graph::{Attr, GraphBuilder, Value};
use crate::onnx::OnnxError;

use super::super::emit;
use super::super::lower::Lowering;
use super::order::float32;
use super::{arg_error, OrShape};

impl Lowering<'_, '_> {
    /// `searchsorted.Scalar(sorted_sequence, self, out_int32, right, side, sorter)`.
    pub(super) fn searchsorted(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let upper = search::upper(node).map_err(arg_error)?;
        let x = self.lifted_any_activation(args.tensor("sorted_sequence").or_shape()?)?;
        float32(&x, "searchsorted")?;
        if !self.is_lifted() {
            return Err(arg_error(
                "searchsorted of a number searches a 1-D sequence, here the batch itself, which mixes samples".into(),
            ));
        }
        let &[n] = x.shape() else {
            return Err(arg_error(format!(
                "searchsorted of a number in a {}-D sequence (torch needs 1-D)",
                x.shape().len()
            )));
        };
        // torch searches for the number as a float32 (the sequence's type).
        let v = args.float("self").or_shape()? as f32;
        let out = if args.bool("out_int32").or_shape()? {
            ElemType::Int32
        } else {
            ElemType::Int64
        };
        let g = &mut self.g;
        let (f32_, bool_, one) = (ElemType::Float32, ElemType::Bool, [1u64]);
        let target = g.constant_scalar(&format!("{scope}.value"), v);
        let half = g.constant_scalar(&format!("{scope}.half"), 0.5);
        let step = g.constant_scalar(&format!("{scope}.one"), 1.0);
        let last = g.constant_scalar(&format!("{scope}.last"), n.saturating_sub(1) as f32);
        // Whether the search moves right past the middle entry `mid` (float32 index).
        let past = |g: &mut GraphBuilder, mid: &str| -> Value {
            let mid = emit::typed(g, "Min", scope, [mid, last.name()], &one, f32_);
            let index = emit::cast(g, scope, &mid, ElemType::Int64);
            let at = emit::single(g.typed_node(
                "GatherElements",
                scope,
                vec![x.name().to_owned(), index.name().to_owned()],
                vec![("axis", Attr::Int(1))],
                vec![(one.to_vec(), f32_)],
            ));
            let above = emit::typed(g, "Greater", scope, [at.name(), target.name()], &one, bool_);
            let stops = if upper {
                above
            } else {
                let equal = emit::typed(g, "Equal", scope, [at.name(), target.name()], &one, bool_);
                emit::typed(g, "Or", scope, [above.name(), equal.name()], &one, bool_)
            };
            emit::typed(g, "Not", scope, [stops.name()], &one, bool_)
        };
        // The range `[start, end)` still searched, float32 per row.
        let mut range: Option<(Value, Value)> = None;
        for _ in 0..search::steps(n) {
            let next = match &range {
                None => {
                    // The first step's range is the whole axis, its middle a constant.
                    let middle = (n / 2) as f64;
                    // Constants of the per-sample shape `[1]` under the one lifted row.
                    let mid =
                        g.typed_constant(&format!("{scope}.mid"), vec![1, 1], &[middle], f32_)?;
                    let right = past(g, mid.name());
                    let after = g.typed_constant(
                        &format!("{scope}.after"),
                        vec![1, 1],
                        &[middle + 1.0],
                        f32_,
                    )?;
                    let zero =
                        g.typed_constant(&format!("{scope}.zero"), vec![1, 1], &[0.0], f32_)?;
                    let whole =
                        g.typed_constant(&format!("{scope}.n"), vec![1, 1], &[n as f64], f32_)?;
                    let names = [right.name(), after.name(), zero.name()];
                    let s = emit::typed(g, "Where", scope, names, &one, f32_);
                    let names = [right.name(), whole.name(), mid.name()];
                    (s, emit::typed(g, "Where", scope, names, &one, f32_))
                }
                Some((s, e)) => {
                    let active = emit::typed(g, "Less", scope, [s.name(), e.name()], &one, bool_);
                    let sum = emit::typed(g, "Add", scope, [s.name(), e.name()], &one, f32_);
                    let sum = emit::typed(g, "Mul", scope, [sum.name(), half.name()], &one, f32_);
                    let mid = emit::typed(g, "Floor", scope, [sum.name()], &one, f32_);
                    let right = past(g, mid.name());
                    let left = emit::typed(g, "Not", scope, [right.name()], &one, bool_);
                    let right =
                        emit::typed(g, "And", scope, [active.name(), right.name()], &one, bool_);
                    let left =
                        emit::typed(g, "And", scope, [active.name(), left.name()], &one, bool_);
                    let after = emit::typed(g, "Add", scope, [mid.name(), step.name()], &one, f32_);
                    let names = [right.name(), after.name(), s.name()];
                    let s = emit::typed(g, "Where", scope, names, &one, f32_);
                    let names = [left.name(), mid.name(), e.name()];
                    (s, emit::typed(g, "Where", scope, names, &one, f32_))
                }
            };
            range = Some(next);
        }
        let Some((found, _)) = range else {
            return Err(arg_error(
                "searchsorted in an empty sequence, which ATC does not compile".into(),
            ));
        };
        let found = g.reshape(scope, &found, &[])?;
        let found = emit::cast(g, scope, &found, out);
        self.bind(node, 0, found)
    }
}
