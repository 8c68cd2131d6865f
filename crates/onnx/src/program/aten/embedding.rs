//! `embedding` (`nn.Embedding`): a lookup of token ids in the weight table, written as ONNX
//! `Gather` on the weight initializer along axis 0 (a constant table lookup, which ATC
//! parses; never a Gather on a computed shape). Indices that are constants (the positions
//! `torch.arange(L)` of a position embedding) are looked up at export and written as a
//! constant instead. `gather` from a constant row by computed indices is the same lookup;
//! `gather` from an activation is ONNX's `GatherElements`.

use crate::graph::Attr;
use crate::OnnxError;
use ckpt_aten::eval::MAX_ELEMENTS;
use ckpt_aten::program::Node;

use super::super::lower::Lowering;
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

/// Rows `indices` of a row-major `rows × width` table, concatenated. Each index must be a
/// whole number below `rows` (torch refuses negative ids too).
fn lookup(table: &[f32], rows: u64, width: u64, indices: &[f32]) -> Result<Vec<f32>, String> {
    if (indices.len() as u64).saturating_mul(width) > MAX_ELEMENTS {
        return Err(format!(
            "looking up {} constant ids gives more than {MAX_ELEMENTS} values",
            indices.len()
        ));
    }
    let width = width as usize;
    let mut out = Vec::with_capacity(indices.len() * width);
    for &i in indices {
        if i.fract() != 0.0 || i < 0.0 || i as u64 >= rows {
            return Err(format!("id {i} is not a row of the {rows}-row table"));
        }
        let start = i as usize * width;
        let row = table
            .get(start..start + width)
            .ok_or_else(|| format!("the table holds fewer than {rows} rows of {width}"))?;
        out.extend_from_slice(row);
    }
    Ok(out)
}

impl<'p> Lowering<'p, '_> {
    /// `embedding(weight, indices, padding_idx, scale_grad_by_freq, sparse)`: the last
    /// three only change the gradient. A table the program computes is picked from as
    /// `index.Tensor` ([`crate::aten::expand`]).
    pub(super) fn embedding(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let weight = args.tensor("weight").or_shape()?;
        if !self.is_constant(weight) {
            // A table the program computes: its rows picked as `weight[indices]`.
            return self.expanded_node(node);
        }
        let fqn = self.constant(weight)?;
        let dims = self.constant_dims(&fqn)?;
        let &[rows, width] = dims.as_slice() else {
            return Err(arg_error(format!(
                "the table `{fqn}` has sizes {dims:?}; an embedding table is 2-D"
            )));
        };
        let indices = args.tensor("indices").or_shape()?;
        if self.is_constant(indices) {
            let (mut out_dims, ids) = self.constant_values(indices)?;
            let table = self.read(&fqn)?;
            let values = lookup(&table, rows, width, &ids).map_err(arg_error)?;
            out_dims.push(width);
            let looked_up = ckpt_aten::eval::Tensor::f32(out_dims, values).map_err(arg_error)?;
            // Uniform: the same ids for every sample (BERT's token types expanded over the
            // batch).
            let uniform = self.uniform_axis(indices).is_some();
            return self.bind_computed(node, 0, looked_up, uniform);
        }
        // Each id is looked up alone, so the batch may be on any dimension of the ids
        // (XLNet's `[seq, batch]`); it stays there, the width appended after.
        let ids = self.tensor(indices)?;
        let elem = ids.value().elem();
        if !elem.is_integer() {
            return Err(arg_error(format!(
                "the ids `{indices}` are a {elem} tensor; an embedding looks up int64 or int32 ids"
            )));
        }
        let table = self.weight(&fqn)?;
        let mut shape = ids.value().shape().to_vec();
        shape.push(width);
        let mut out = self.g.node(
            "Gather",
            scope,
            vec![table.name().to_owned(), ids.value().name().to_owned()],
            vec![("axis", Attr::Int(0))],
            vec![shape],
        );
        let looked_up = ids.with_axis_appended(out.swap_remove(0))?;
        self.bind_tensor(node, 0, looked_up)
    }

    /// `gather(self, dim, index)` from a constant `self` that holds one row along `dim`
    /// (every other axis of size 1, or the batch over which it is the same), by indices
    /// computed per sample: then `out[…, i, …] = row[index[…, i, …]]`, a lookup of the
    /// indices in that row, written as `Gather` on an initializer like an embedding
    /// (RoBERTa's token types: `gather(buffer.expand(B, -1), 1, position_ids)`). A
    /// gather from a computed tensor, or from a table that varies along another axis, is
    /// refused.
    pub(super) fn gather(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let data = args.tensor("self").or_shape()?;
        let index = args.tensor("index").or_shape()?;
        if !self.is_constant(data) {
            return self.gather_elements_within(node, args, data, index, scope);
        }
        let idx = self.tensor(index)?;
        if !idx.value().elem().is_integer() {
            return Err(arg_error(format!(
                "the indices `{index}` are a {} tensor",
                idx.value().elem()
            )));
        }
        let table = self.constant_tensor(data)?;
        let dims = table.dims().to_vec();
        let dim = args
            .optional_int("dim")
            .or_shape()?
            .ok_or_else(|| arg_error("gather without `dim`".into()))?;
        let dim = super::super::tensor::axis(dim, dims.len())?;
        let batch_matches = match self.uniform_axis(data) {
            Some(axis) => Some(axis) == idx.batch_axis(),
            None => false,
        };
        let one_row = dims.iter().enumerate().all(|(a, &d)| a == dim || d == 1);
        if !one_row || !batch_matches || Some(dim) == idx.batch_axis() || idx.rank() != dims.len() {
            return Err(arg_error(format!(
                "gather along dimension {dim} of `{data}` (per sample {dims:?}) by computed indices is exported only when the table is the same for every sample and holds one row along that dimension"
            )));
        }
        let elem = self.recorded_elem(self.output_name(node, 0)?)?;
        let row: Vec<f64> = match table.to_i64() {
            Ok(v) if elem.is_integer() => v.into_iter().map(|v| v as f64).collect(),
            _ => table.to_f32().into_iter().map(f64::from).collect(),
        };
        let lookup = self
            .g
            .typed_constant(data, vec![row.len() as u64], &row, elem)?;
        let shape = idx.value().shape().to_vec();
        let out = self.g.node(
            "Gather",
            scope,
            vec![lookup.name().to_owned(), idx.value().name().to_owned()],
            vec![("axis", Attr::Int(0))],
            vec![shape],
        );
        let y = super::super::emit::single(out);
        self.bind_tensor(node, 0, idx.with_value(y)?)
    }
}

impl<'p> Lowering<'p, '_> {
    /// `gather(self, dim, index)` of an activation by an index with the same batch layout
    /// and, but along `dim` (never the batch), the same sizes: `GatherElements` (opset 11),
    /// torch's `gather` exactly (DeBERTa's relative-position scores, read at the positions
    /// of a constant index table tiled over the batch).
    fn gather_elements_within(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        data: &str,
        index: &str,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(data)?;
        let idx = self.tensor(index)?;
        let dim = args
            .optional_int("dim")
            .or_shape()?
            .ok_or_else(|| arg_error("gather without `dim`".into()))?;
        if x.rank() == 0 {
            // torch reads a 0-d tensor along its dimension 0 (or −1), whose only index is 0:
            // the result is its value, in the index's sizes (one entry).
            ckpt_aten::dim::Dim::wrap(dim, 0).map_err(arg_error)?;
            if idx.sizes().iter().any(|s| s.batch || s.count != 1) {
                return Err(arg_error(format!(
                    "gather from the 0-d `{data}` by `{index}` {}: torch takes one index, 0",
                    super::super::tensor::show(&idx.sizes())
                )));
            }
            let y = x.reshaped(&mut self.g, scope, &idx.sizes())?;
            return self.bind_tensor(node, 0, y);
        }
        let dim = super::super::tensor::axis(dim, x.rank())?;
        let at = x.sample_axis(dim, "gather")?;
        let same_elsewhere = x.same_batch(&idx)
            && x.value()
                .shape()
                .iter()
                .zip(idx.value().shape())
                .enumerate()
                .all(|(i, (a, b))| i == at || a == b);
        if !same_elsewhere || !idx.value().elem().is_integer() {
            return Err(arg_error(format!(
                "gather from `{data}` {} by `{index}` {}: a computed tensor is gathered from only by an integer index of its sizes but along `dim`, the batch alike",
                super::super::tensor::show(&x.sizes()),
                super::super::tensor::show(&idx.sizes())
            )));
        }
        if self.g.opset().version() < 11 {
            return Err(arg_error(
                "a gather from a computed tensor needs GatherElements from opset 11; pass --opset 11".into(),
            ));
        }
        let out = self.g.node(
            "GatherElements",
            scope,
            vec![x.value().name().to_owned(), idx.value().name().to_owned()],
            vec![("axis", Attr::Int(dim as i64))],
            vec![idx.value().shape().to_vec()],
        );
        let y = super::super::emit::single(out);
        self.bind_tensor(node, 0, idx.with_value(y)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_ids_select_rows_and_out_of_range_ids_are_refused() {
        let table = [0.0, 1.0, 10.0, 11.0, 20.0, 21.0];
        assert_eq!(
            lookup(&table, 3, 2, &[2.0, 0.0]),
            Ok(vec![20.0, 21.0, 0.0, 1.0])
        );
        assert!(lookup(&table, 3, 2, &[3.0]).unwrap_err().contains("id 3"));
        assert!(lookup(&table, 3, 2, &[-1.0]).is_err());
        assert!(lookup(&table, 3, 2, &[0.5]).is_err());
    }
}
