//! `diag_embed(self, offset, dim1, dim2)` (and `diag` of a 1-D tensor, `diagflat`) by
//! torch's reference ([`DiagEmbed`]): a `Pad` of
//! the last dimension with zeros, a Reshape and a Transpose that put it at `dim2` with a
//! size-1 dimension at `dim1`, and one `Where` with the constant diagonal mask, so that a
//! NaN or an infinity off the diagonal becomes zero as in torch (a product with a 0/1 mask
//! would keep NaN).
//!
//! `diagonal` as torch's view reads it ([`Diagonal`]): the two dimensions moved last and
//! merged by a Transpose and a Reshape, and one Slice with step `cols + 1`, so each entry
//! is copied, never computed.

use crate::elem::ElemType;
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::diag::{DiagEmbed, Diagonal};
use ckpt_aten::program::Node;

use super::super::lower::Lowering;
use super::super::tensor::{self, Size, Tensor};
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
        let offset = args.int("offset").or_shape()?;
        let dim1 = args.int("dim1").or_shape()?;
        let dim2 = args.int("dim2").or_shape()?;
        self.embed_diagonal(node, x, (offset, dim1, dim2), scope)
    }

    /// `diag_embed` of activation `x` at `(offset, dim1, dim2)`.
    fn embed_diagonal(
        &mut self,
        node: &Node,
        x: Tensor,
        (offset, dim1, dim2): (i64, i64, i64),
        scope: &str,
    ) -> Result<(), OnnxError> {
        let rank = x.rank();
        if x.batch_axis().is_some_and(|a| a + 1 == rank) {
            return Err(arg_error(format!(
                "diag_embed of {}: its last dimension, which becomes the diagonal, carries the batch; only a batch outside it is exported",
                tensor::show(&x.sizes())
            )));
        }
        let sizes = x.sizes();
        let last = sizes[rank - 1].count;
        let plan = DiagEmbed::plan(rank, last, offset, dim1, dim2).map_err(arg_error)?;
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
        let at = plan.dim1 - usize::from(x.batch_axis().is_some_and(|a| a < plan.dim1));
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

impl Lowering<'_, '_> {
    /// `diagonal(self, offset, dim1, dim2)` and `linalg_diagonal(A, *, offset, dim1, dim2)`
    /// (`tensor` names the input; `dim1` and `dim2` default as each row of the schema table
    /// says), read as torch's view
    /// ([`Diagonal`]): a Transpose putting `dim1` and `dim2` last, a Reshape merging them and
    /// one Slice with step `cols + 1`.
    pub(super) fn diagonal(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        tensor: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor(tensor).or_shape()?)?;
        let offset = args.int("offset").or_shape()?;
        let dim1 = args.int("dim1").or_shape()?;
        let dim2 = args.int("dim2").or_shape()?;
        self.read_diagonal(node, x, (offset, dim1, dim2), scope)
    }

    /// `diag(self, diagonal)`: a 1-D input embedded as the diagonal of a matrix
    /// (`diag_embed` over dimensions 0 and 1), a 2-D one's diagonal read (`diagonal`).
    pub(super) fn diag(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let offset = args.int("diagonal").or_shape()?;
        match x.rank() {
            1 => self.embed_diagonal(node, x, (offset, 0, 1), scope),
            2 => self.read_diagonal(node, x, (offset, 0, 1), scope),
            r => Err(arg_error(format!(
                "diag of a rank-{r} tensor (torch takes 1-D or 2-D)"
            ))),
        }
    }

    /// `diagflat(self, offset)`: ATen's `self.contiguous().view(-1).diag(offset)`, the
    /// flattened input embedded as a matrix's diagonal; a batch would spread over it.
    pub(super) fn diagflat(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        if let Some(batch) = x.batch_axis() {
            return Err(tensor::mixes_samples("diagflat", batch, &x.sizes()));
        }
        let count = x.sizes().iter().map(|s| s.count).product::<u64>();
        let flat = x.reshaped(&mut self.g, scope, &[Size::fixed(count)])?;
        let offset = args.int("offset").or_shape()?;
        self.embed_diagonal(node, flat, (offset, 0, 1), scope)
    }

    /// The diagonal of activation `x` at `(offset, dim1, dim2)`.
    fn read_diagonal(
        &mut self,
        node: &Node,
        x: Tensor,
        (offset, dim1, dim2): (i64, i64, i64),
        scope: &str,
    ) -> Result<(), OnnxError> {
        let sizes: Vec<u64> = x.sizes().iter().map(|s| s.count).collect();
        let plan = Diagonal::plan(&sizes, offset, dim1, dim2).map_err(arg_error)?;
        if x.batch_axis()
            .is_some_and(|a| [plan.dim1, plan.dim2].contains(&a))
        {
            return Err(across_batch(&x.sizes()));
        }
        if plan.len == 0 {
            return Err(arg_error(format!(
                "the diagonal of {} at this offset is empty, which ATC does not compile",
                tensor::show(&x.sizes())
            )));
        }
        if self.g.opset().version() < 10 {
            return Err(arg_error(
                "a diagonal needs Slice's steps from opset 10; export at opset 11".into(),
            ));
        }
        let moved = x.transposed(&mut self.g, scope, &plan.order)?;
        let mut merged = moved.sizes();
        merged.truncate(merged.len() - 2);
        merged.push(Size::fixed(plan.rows * plan.cols));
        let flat = moved.reshaped(&mut self.g, scope, &merged)?;
        let last = merged.len() - 1;
        let constant = |g: &mut crate::graph::GraphBuilder, what: &str, v: u64| {
            g.constant_i64(&format!("{scope}.{what}"), &[v as i64])
        };
        let starts = constant(&mut self.g, "starts", plan.start);
        let ends = constant(&mut self.g, "ends", plan.end());
        let axes = constant(&mut self.g, "axes", last as u64);
        let steps = constant(&mut self.g, "steps", plan.step);
        let mut shape = flat.value().shape().to_vec();
        if let Some(end) = shape.last_mut() {
            *end = plan.len;
        }
        let inputs = [
            flat.value().name(),
            starts.name(),
            ends.name(),
            axes.name(),
            steps.name(),
        ]
        .map(str::to_owned)
        .to_vec();
        let y = self
            .g
            .node("Slice", scope, inputs, vec![], vec![shape])
            .swap_remove(0);
        self.bind_tensor(node, 0, flat.with_value(y)?)
    }
}

/// The refusal of a diagonal that would run across the batch of a tensor of `sizes`: entry
/// `i` would come from sample `i` (and the length be the least of the batch and another
/// size), which no layout with one batch dimension holds.
fn across_batch(sizes: &[Size]) -> OnnxError {
    arg_error(format!(
        "a diagonal of {} runs across the dimension that carries the batch: its entries would come from different samples and its length depend on the batch; only a diagonal of two other dimensions is exported",
        tensor::show(sizes)
    ))
}
