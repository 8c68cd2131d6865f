//! `histc` (`torch.histc`) of a static tensor: each entry's bin as torch's kernel finds
//! it ([`crate::aten::histogram`]: one float32 division from the outer edges, truncated),
//! compared with every bin's number, the hits counted per bin. Under a dynamic batch the
//! counts would add up every sample's entries: refused.

use crate::aten::args::Args;
use crate::aten::histogram;
use crate::aten::program::Node;
use crate::onnx::elem::ElemType;
use crate::onnx::graph::{Value, Weight};
use crate::onnx::OnnxError;

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::{arg_error, OrShape};

impl Lowering<'_, '_> {
    /// `histc(self, bins, min, max)`: `[bins]` float32 counts.
    pub(super) fn histc(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let bins = histogram::check_bins(args.int("bins").or_shape()?).map_err(arg_error)?;
        let (min, max) = (args.float("min").or_shape()?, args.float("max").or_shape()?);
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        if !self.is_lifted() {
            return Err(arg_error(
                "it counts the entries of the whole tensor, every sample's together, so its counts mix samples; export the program at a fixed batch (`--batch static`)".into(),
            ));
        }
        if self.g.opset().version() < 11 {
            return Err(arg_error(
                "histc compares float32 bins with Equal, which takes floats from opset 11; pass --opset 11".into(),
            ));
        }
        let count: u64 = x.shape().iter().product();
        let g = &mut self.g;
        let flat = g.reshape(scope, &x, &[count, 1])?;
        let (left, right, width) = if histogram::edges_from_input(min, max) {
            // The input's extrema, widened by 1 each way when they are equal.
            let low = g.reduce("ReduceMin", scope, &flat, &[0, 1], true)?;
            let high = g.reduce("ReduceMax", scope, &flat, &[0, 1], true)?;
            let same = emit::binary(g, "Equal", scope, activation(&low), activation(&high))?;
            let widen = emit::cast(g, scope, &same, ElemType::Float32);
            let left = g.sub(scope, &low, &widen)?;
            let right = emit::binary(g, "Add", scope, activation(&high), activation(&widen))?;
            let width = g.sub(scope, &right, &left)?;
            (
                Edge::Computed(left),
                Edge::Computed(right),
                Edge::Computed(width),
            )
        } else {
            let (l, r) = histogram::outer_edges(min, max, None).map_err(arg_error)?;
            let mut edge = |hint: &str, v: f32| {
                Edge::Constant(g.constant_scalar(&format!("{scope}.{hint}"), v))
            };
            (edge("left", l), edge("right", r), edge("width", r - l))
        };
        let g = &mut self.g;
        let from_left = emit::binary(g, "Sub", scope, activation(&flat), left.operand())?;
        let bins_number = g.constant_scalar(&format!("{scope}.bins"), bins as f32);
        let scaled = g.mul_constant(scope, &from_left, &bins_number)?;
        let at = emit::binary(g, "Div", scope, activation(&scaled), width.operand())?;
        let at = g.unary("Floor", scope, &at, vec![]);
        let last = g.constant_scalar(&format!("{scope}.last"), (bins - 1) as f32);
        let bin = emit::binary(g, "Min", scope, activation(&at), Operand::Constant(&last))?;
        // Inside [left, right], NaN outside: every comparison with a NaN is false.
        let below = emit::binary(g, "Less", scope, activation(&flat), left.operand())?;
        let above = emit::binary(g, "Greater", scope, activation(&flat), right.operand())?;
        let outside = emit::binary(g, "Or", scope, activation(&below), activation(&above))?;
        let nan = emit::typed(
            g,
            "IsNaN",
            scope,
            [flat.name()],
            flat.shape(),
            ElemType::Bool,
        );
        let outside = emit::binary(g, "Or", scope, activation(&outside), activation(&nan))?;
        let inside = g.unary("Not", scope, &outside, vec![]);
        let numbers: Vec<f64> = (0..bins).map(|b| b as f64).collect();
        let numbers = g.typed_constant(
            &format!("{scope}.numbers"),
            vec![bins],
            &numbers,
            ElemType::Float32,
        )?;
        let hits = emit::binary(
            g,
            "Equal",
            scope,
            activation(&bin),
            Operand::Constant(&numbers),
        )?;
        let hits = emit::binary(g, "And", scope, activation(&hits), activation(&inside))?;
        let hits = emit::cast(g, scope, &hits, ElemType::Float32);
        let counts = g.reduce("ReduceSum", scope, &hits, &[0], false)?;
        self.bind(node, 0, counts)
    }
}

/// An outer edge of the bins, or their width: a number known at export, or computed from
/// the input's extrema (`[1, 1]`).
enum Edge {
    Constant(Weight),
    Computed(Value),
}

impl Edge {
    fn operand(&self) -> Operand<'_> {
        match self {
            Edge::Constant(w) => Operand::Constant(w),
            Edge::Computed(v) => Operand::Activation(v),
        }
    }
}

fn activation(v: &Value) -> Operand<'_> {
    Operand::Activation(v)
}
