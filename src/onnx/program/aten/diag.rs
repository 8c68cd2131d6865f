//! `diag_embed(self, offset, dim1, dim2)` by torch's reference ([`DiagEmbed`]): a `Pad` of
//! the last dimension with zeros, a Reshape and a Transpose that put it at `dim2` with a
//! size-1 dimension at `dim1`, and one `Where` with the constant diagonal mask, so that a
//! NaN or an infinity off the diagonal becomes zero as in torch (a product with a 0/1 mask
//! would keep NaN).

use crate::aten::args::Args;
use crate::aten::diag::DiagEmbed;
use crate::aten::program::Node;
use crate::onnx::elem::ElemType;
use crate::onnx::OnnxError;

use super::super::lower::Lowering;
use super::super::tensor::{self, Size};
use super::{arg_error, OrShape};

impl<'p> Lowering<'p, '_> {
    /// `diag_embed`: the last dimension, which spreads over the diagonal, may not carry
    /// the batch (each sample would land at its own place in the batch).
    pub(super) fn diag_embed(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let rank = x.rank();
        if x.batch_axis() + 1 == rank {
            return Err(arg_error(format!(
                "diag_embed of {}: its last dimension, which becomes the diagonal, carries the batch; only a batch outside it is exported",
                tensor::show(&x.sizes())
            )));
        }
        let sizes = x.sizes();
        let last = sizes[rank - 1].count;
        let plan = DiagEmbed::plan(
            rank,
            last,
            args.int_or("offset", 0).or_shape()?,
            args.int_or("dim1", -2).or_shape()?,
            args.int_or("dim2", -1).or_shape()?,
        )
        .map_err(arg_error)?;
        let mut x = x;
        if plan.pad_before + plan.pad_after > 0 {
            let mut pads = vec![0i64; 2 * rank];
            pads[rank - 1] = plan.pad_before as i64;
            pads[2 * rank - 1] = plan.pad_after as i64;
            let mut out = x.value().shape().to_vec();
            if let Some(end) = out.last_mut() {
                *end = plan.size;
            }
            let padded = self.emit_pad(scope, x.value(), pads, out, "constant", 0.0);
            x = x.with_value(padded)?;
        }
        // The padded input with a size-1 dimension appended, then permuted into place.
        let mut grown = x.sizes();
        grown.push(Size::fixed(1));
        let x = x.reshaped(&mut self.g, scope, &grown)?;
        let x = x.transposed(&mut self.g, scope, &plan.order(rank))?;
        let mut dims = vec![1u64; rank + 1];
        dims[plan.dim1] = plan.size;
        dims[plan.dim2] = plan.size;
        let mask: Vec<f64> = plan
            .mask()
            .into_iter()
            .map(|k| f64::from(u8::from(k)))
            .collect();
        let mask =
            self.g
                .typed_constant(&format!("{scope}.diagonal"), dims, &mask, ElemType::Bool)?;
        let zero = self
            .g
            .typed_scalar(&format!("{scope}.zero"), 0.0, x.value().elem())?;
        // The result: every dimension of the permuted input, with the size-1 one at `dim1`
        // broadcast to the diagonal's size.
        let mut shape = x.value().shape().to_vec();
        let at = plan.dim1 - usize::from(x.batch_axis() < plan.dim1);
        shape[at] = plan.size;
        let y = self
            .g
            .typed_node(
                "Where",
                scope,
                vec![
                    mask.name().to_owned(),
                    x.value().name().to_owned(),
                    zero.name().to_owned(),
                ],
                vec![],
                vec![(shape, x.value().elem())],
            )
            .swap_remove(0);
        self.bind_tensor(node, 0, x.with_value(y)?)
    }
}
