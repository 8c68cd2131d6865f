//! `segment_reduce` by constant lengths or offsets ([`ckpt_aten::segment`]): the data
//! viewed `[outer, L, inner]` and padded with one more entry along the axis, torch's
//! starting value (`initial`, or the reduction's identity); for every segment a constant
//! mask picks its entries and that one, `Where` fills the rest with the identity, and one
//! `ReduceSum`/`ReduceMax`/`ReduceMin`/`ReduceProd` folds each segment (a NaN taken up by
//! max and min, as torch's kernel does); a mean is then divided by each segment's length,
//! an empty one without `initial` made NaN. Under a dynamic batch it is refused: along the
//! batch it mixes samples, along another dimension the lengths have a row per sample of
//! the batch the program was exported at.

use crate::elem::ElemType;
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::program::{Argument, Node};
use ckpt_aten::segment::{self, Given, Reduce, Segments};

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::{arg_error, row_axis, OrShape};

impl Lowering<'_, '_> {
    /// `segment_reduce(data, reduce, lengths, indices, offsets, axis, unsafe, initial)` by
    /// constant `lengths` or `offsets`.
    pub(super) fn segment_reduce(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        if !matches!(args.get("indices"), None | Some(Argument::None)) {
            return Err(arg_error(
                "segment_reduce by indices, which torch does not implement".into(),
            ));
        }
        let how = match args.get("reduce") {
            Some(Argument::String(name)) => Reduce::named(name).map_err(arg_error)?,
            other => {
                let kind = other.map_or("missing", Argument::kind);
                return Err(arg_error(format!("segment_reduce's reduction is {kind}")));
            }
        };
        let given = |name: &str| !matches!(args.get(name), None | Some(Argument::None));
        let (given, name) = match (given("lengths"), given("offsets")) {
            (true, false) => (Given::Lengths, args.tensor("lengths").or_shape()?),
            (false, true) => (Given::Offsets, args.tensor("offsets").or_shape()?),
            _ => {
                return Err(arg_error(
                    "segment_reduce needs either lengths or offsets".into(),
                ))
            }
        };
        if !self.is_constant(name) {
            return Err(arg_error(format!(
                "segment_reduce by the computed lengths `{name}`; only constant lengths or offsets are exported"
            )));
        }
        let table = self.constant_tensor(name)?;
        let initial = match args.get("initial") {
            None | Some(Argument::None) => None,
            Some(_) => Some(args.number("initial").or_shape()?),
        };
        let x = self.lifted_activation(args.tensor("data").or_shape()?)?;
        if !self.is_lifted() {
            // Along the batch the segments mix samples; along another dimension the
            // lengths have a row per sample of the export's batch, past which torch reads
            // at any other.
            row_axis(args.int("axis").or_shape()?, &x, false)?;
            let rows = table.dims().first().copied().unwrap_or(1);
            return Err(arg_error(format!(
                "its lengths hold a row for each of the {rows} samples of the batch it was exported at, and at another batch torch reads past them: the program holds at that batch only; export it at a fixed batch (`--batch static`)"
            )));
        }
        let dims = x.shape().to_vec();
        let at = segment::axis(args.int("axis").or_shape()?, dims.len(), table.rank())
            .map_err(arg_error)?;
        let table_values = table.to_i64().map_err(arg_error)?;
        let segments =
            Segments::new(given, table.dims(), &table_values, &dims, at).map_err(arg_error)?;
        let outer: u64 = dims[..at].iter().product();
        let length = dims[at];
        let inner: u64 = dims[at + 1..].iter().product();
        let count = segments.count as u64;
        if outer * count * inner == 0 {
            return Err(arg_error(
                "segment_reduce to no entries: a dimension of size 0 (an empty tensor), which ATC does not compile".into(),
            ));
        }
        let x = self.g.reshape(scope, &x, &[outer, length, inner])?;
        // The starting value as one more entry of every row, which every segment takes.
        let padded = self.emit_pad(
            scope,
            &x,
            vec![0, 0, 0, 0, 0, 0, 1, 0],
            vec![outer, length + 1, inner],
            "constant",
            how.start(initial),
        );
        let padded = self
            .g
            .reshape(scope, &padded, &[outer, 1, length + 1, inner])?;
        let g = &mut self.g;
        let mut picks = Vec::with_capacity((outer * count * (length + 1)) as usize);
        for row in 0..segments.rows {
            for s in 0..segments.count {
                let (start, end) = segments.bound(row, s);
                picks.extend(
                    (0..=length).map(|j| f64::from(u8::from(j >= start && j < end || j == length))),
                );
            }
        }
        let mask = g.typed_constant(
            &format!("{scope}.segments"),
            vec![outer, count, length + 1, 1],
            &picks,
            ElemType::Bool,
        )?;
        let identity = g.constant_scalar(&format!("{scope}.identity"), how.start(None));
        let spread = vec![outer, count, length + 1, inner];
        let picked = emit::typed(
            g,
            "Where",
            scope,
            [mask.name(), padded.name(), identity.name()],
            &spread,
            ElemType::Float32,
        );
        let op = match how {
            Reduce::Max => "ReduceMax",
            Reduce::Min => "ReduceMin",
            Reduce::Sum | Reduce::Mean => "ReduceSum",
            Reduce::Prod => "ReduceProd",
        };
        let mut y = g.reduce(op, scope, &picked, &[2], false)?;
        if how == Reduce::Mean {
            let lengths: Vec<u64> = segments.bounds.iter().map(|(s, e)| e - s).collect();
            let divisors: Vec<f64> = lengths.iter().map(|&n| n.max(1) as f64).collect();
            let divisors = g.typed_constant(
                &format!("{scope}.lengths"),
                vec![outer, count, 1],
                &divisors,
                ElemType::Float32,
            )?;
            y = g.div_constant(scope, &y, &divisors)?;
            if initial.is_none() && lengths.contains(&0) {
                // An empty segment's mean without `initial` is NaN.
                let nan: Vec<f64> = lengths
                    .iter()
                    .map(|&n| if n == 0 { f64::NAN } else { 0.0 })
                    .collect();
                let nan = g.typed_constant(
                    &format!("{scope}.empty"),
                    vec![outer, count, 1],
                    &nan,
                    ElemType::Float32,
                )?;
                y = emit::binary(
                    g,
                    "Add",
                    scope,
                    Operand::Activation(&y),
                    Operand::Constant(&nan),
                )?;
            }
        }
        let mut out = dims;
        out[at] = count;
        let y = g.reshape(scope, &y, &out)?;
        self.bind(node, 0, y)
    }
}
