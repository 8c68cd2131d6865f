//! `embedding` (`nn.Embedding`): a lookup of token ids in the weight table, written as ONNX
//! `Gather` on the weight initializer along axis 0 (a constant table lookup, which ATC
//! parses; never a Gather on a computed shape). Indices that are constants (the positions
//! `torch.arange(L)` of a position embedding) are looked up at export and written as a
//! constant instead.

use crate::aten::eval::MAX_ELEMENTS;
use crate::aten::program::Node;
use crate::onnx::graph::Attr;
use crate::onnx::OnnxError;

use super::super::lower::Lowering;
use super::{arg_error, OrShape};
use crate::aten::args::Args;

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
    /// three only change the gradient.
    pub(super) fn embedding(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let fqn = self.constant(args.tensor("weight").or_shape()?)?;
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
            if self.uniform_axis(indices).is_some() {
                // The same ids for every sample (BERT's token types expanded over the batch).
                let looked_up =
                    crate::aten::eval::Tensor::f32(out_dims, values).map_err(arg_error)?;
                return self.bind_uniform(node, 0, looked_up);
            }
            return self.bind_folded_f32(node, 0, out_dims, values);
        }
        let ids = self.any_activation(indices)?;
        if !ids.elem().is_integer() {
            return Err(arg_error(format!(
                "the ids `{indices}` are a {} tensor; an embedding looks up int64 or int32 ids",
                ids.elem()
            )));
        }
        let table = self.weight(&fqn)?;
        let mut shape = ids.shape().to_vec();
        shape.push(width);
        let mut out = self.g.node(
            "Gather",
            scope,
            vec![table.name().to_owned(), ids.name().to_owned()],
            vec![("axis", Attr::Int(0))],
            vec![shape],
        );
        self.bind(node, 0, out.swap_remove(0))
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
