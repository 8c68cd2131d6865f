//! `tril`/`triu`: the lower or upper triangle of the last two dimensions (torch's rule:
//! element (i, j) is kept when `j − i ≤ diagonal`, resp. `≥`), the rest zero. One `Where`
//! with a constant mask, so that a NaN or infinity outside the triangle becomes zero as in
//! torch (a product with a 0/1 mask would keep NaN).

use crate::OnnxError;
use ckpt_aten::program::Node;

use super::super::lower::Lowering;
use super::{arg_error, OrShape};
use crate::elem::ElemType;
use ckpt_aten::args::Args;

/// Whether torch keeps element (`i`, `j`) (`lower`: `tril`).
fn kept(i: u64, j: u64, diagonal: i64, lower: bool) -> bool {
    let offset = j as i64 - i as i64;
    if lower {
        offset <= diagonal
    } else {
        offset >= diagonal
    }
}

impl<'p> Lowering<'p, '_> {
    /// `tril` (`lower`) or `triu` `(self, diagonal)`; neither of the last two dimensions may
    /// carry the batch (what is kept would depend on a sample's place in the batch).
    pub(super) fn triangle(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        lower: bool,
    ) -> Result<(), OnnxError> {
        let op = if lower { "tril" } else { "triu" };
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let rank = x.rank();
        if rank < 2 {
            return Err(arg_error(format!(
                "{op} of a rank-{rank} tensor (torch needs at least 2-D)"
            )));
        }
        if let Some(batch) = x.batch_axis().filter(|&a| a >= rank - 2) {
            return Err(arg_error(format!(
                "{op} over dimension {batch}, which carries the batch, keeps what depends on each sample's place in the batch; only a batch outside the last two dimensions is exported"
            )));
        }
        let diagonal = args.int("diagonal").or_shape()?;
        let shape = x.value().shape().to_vec();
        let (rows, cols) = (shape.len() - 2, shape.len() - 1);
        // The mask has the tensor's rank: its value's, and the batch's axis if it has one.
        let lead = x.rank() - shape.len();
        let mut dims = vec![1u64; x.rank()];
        dims[rows + lead] = shape[rows];
        dims[cols + lead] = shape[cols];
        let mask: Vec<f64> = (0..shape[rows])
            .flat_map(|i| {
                (0..shape[cols]).map(move |j| f64::from(u8::from(kept(i, j, diagonal, lower))))
            })
            .collect();
        let mask = self
            .g
            .typed_constant(&format!("{scope}.{op}"), dims, &mask, ElemType::Bool)?;
        let zero = self
            .g
            .typed_scalar(&format!("{scope}.zero"), 0.0, x.value().elem())?;
        let mut out = self.g.typed_node(
            "Where",
            scope,
            vec![
                mask.name().to_owned(),
                x.value().name().to_owned(),
                zero.name().to_owned(),
            ],
            vec![],
            vec![(shape, x.value().elem())],
        );
        let y = out.swap_remove(0);
        self.bind_tensor(node, 0, x.with_value(y)?)
    }
}

#[cfg(test)]
mod tests {
    use super::kept;

    #[test]
    fn triangles_follow_torchs_offset_rule() {
        // tril(diagonal=0) keeps the diagonal and below; triu(1) strictly above.
        assert!(kept(2, 2, 0, true) && kept(2, 0, 0, true) && !kept(0, 1, 0, true));
        assert!(kept(0, 1, 1, false) && !kept(1, 1, 1, false));
        assert!(kept(0, 2, -1, false) && kept(1, 0, -1, true) && !kept(1, 1, -1, true));
    }
}
