//! `nonzero_static` of a static tensor ([`ckpt_aten::nonzero`]): each entry's place
//! among the nonzero ones (a running count, `CumSum`), a one-hot pick of the entry each
//! result row names, and its coordinates read by a `MatMul` with the table of every
//! entry's coordinates (exact in float32: one 1 per row, coordinates below 2²⁴). Under a
//! dynamic batch the rows would list every sample's entries together: refused.

use crate::elem::ElemType;
use crate::graph::Attr;
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::nonzero;
use ckpt_aten::program::Node;

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::{arg_error, OrShape};

/// Entries above which float32 no longer counts or indexes exactly.
const EXACT_ENTRIES: u64 = 1 << 24;

impl Lowering<'_, '_> {
    /// `nonzero_static(self, size, fill_value)`: `[size, rank]` int64 coordinates.
    pub(super) fn nonzero_static(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let name = args.tensor("self").or_shape()?;
        let size = u64::try_from(args.int("size").or_shape()?)
            .map_err(|_| arg_error("nonzero_static with a negative size".into()))?;
        let fill = args.int("fill_value").or_shape()?;
        if self.tensor(name)?.sizes().is_empty() || size == 0 {
            return Err(arg_error(format!(
                "nonzero_static to {size} rows of no coordinates each: its result is empty, which ATC does not compile"
            )));
        }
        let x = self.lifted_any_activation(name)?;
        if !self.is_lifted() {
            return Err(arg_error(
                "it lists the nonzero entries of the whole tensor, every sample's together, so its rows mix samples; export the program at a fixed batch (`--batch static`)".into(),
            ));
        }
        let dims = x.shape().to_vec();
        let count: u64 = dims.iter().product();
        if count >= EXACT_ENTRIES || size >= EXACT_ENTRIES || fill.unsigned_abs() >= EXACT_ENTRIES {
            return Err(arg_error(format!(
                "nonzero_static of {count} entries to {size} rows, filled with {fill}: the picks count in float32, exact below {EXACT_ENTRIES}"
            )));
        }
        let rank = dims.len() as u64;
        let g = &mut self.g;
        let flat = g.reshape(scope, &x, &[1, count])?;
        let zero = g.typed_scalar(&format!("{scope}.zero"), 0.0, flat.elem())?;
        let zero_entry = emit::typed(
            g,
            "Equal",
            scope,
            [flat.name(), zero.name()],
            flat.shape(),
            ElemType::Bool,
        );
        let nonzero = g.unary("Not", scope, &zero_entry, vec![]);
        let ones = emit::cast(g, scope, &nonzero, ElemType::Float32);
        let axis = g.typed_scalar(&format!("{scope}.axis"), 2.0, ElemType::Int64)?;
        let place = emit::single(g.node(
            "CumSum",
            scope,
            vec![ones.name().to_owned(), axis.name().to_owned()],
            Vec::<(&'static str, Attr)>::new(),
            vec![vec![1, count]],
        ));
        let rows: Vec<f64> = (1..=size).map(|r| r as f64).collect();
        let rows = g.typed_constant(
            &format!("{scope}.rows"),
            vec![size, 1],
            &rows,
            ElemType::Float32,
        )?;
        let picked = emit::binary(
            g,
            "Equal",
            scope,
            Operand::Activation(&place),
            Operand::Constant(&rows),
        )?;
        let picked = emit::binary(
            g,
            "And",
            scope,
            Operand::Activation(&picked),
            Operand::Activation(&nonzero),
        )?;
        let picked = emit::cast(g, scope, &picked, ElemType::Float32);
        let table: Vec<f64> = nonzero::coordinates(&dims)
            .flatten()
            .map(|c| c as f64)
            .collect();
        let table = g.typed_constant(
            &format!("{scope}.coordinates"),
            vec![count, rank],
            &table,
            ElemType::Float32,
        )?;
        let at = g.matmul(scope, &picked, &table)?;
        let found = g.reduce("ReduceSum", scope, &picked, &[1], true)?;
        let found = emit::cast(g, scope, &found, ElemType::Bool);
        let fill = g.typed_scalar(&format!("{scope}.fill"), fill as f64, ElemType::Float32)?;
        let y = emit::typed(
            g,
            "Where",
            scope,
            [found.name(), at.name(), fill.name()],
            &[size, rank],
            ElemType::Float32,
        );
        let y = emit::cast(g, scope, &y, ElemType::Int64);
        self.bind(node, 0, y)
    }
}
