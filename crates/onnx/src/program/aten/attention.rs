//! `scaled_dot_product_attention`, decomposed as multi-head attention is
//! (`crate::attention`): the scale folded into a Mul on Q, `MatMul(Q, Kᵀ)`, an
//! additive mask, Softmax over the last axis, `MatMul(·, V)`. No op reads a shape. A boolean
//! mask computed per sample (transformers' padding masks) selects the scores before the
//! softmax and the weights after it, and an additive mask that may hide a whole row goes
//! through the safe softmax, as torch's math path gives zeros for such a row.

use crate::elem::ElemType;
use crate::graph::Value;
use crate::OnnxError;
use ckpt_aten::program::{Argument, Node};

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::pointwise::Elementwise;
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

/// The additive causal mask `[rows, cols]`: 0 where column ≤ row, −∞ above (torch's
/// `is_causal`, a lower-triangular `ones(L, S)`).
fn causal_mask(rows: u64, cols: u64) -> Vec<f32> {
    (0..rows)
        .flat_map(|i| (0..cols).map(move |j| if j <= i { 0.0 } else { f32::NEG_INFINITY }))
        .collect()
}

impl<'p> Lowering<'p, '_> {
    pub(super) fn scaled_dot_product_attention(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        if args.float("dropout_p").or_shape()? != 0.0 {
            return Err(arg_error(
                "attention dropout is on; export the model after `model.eval()`".into(),
            ));
        }
        if args.bool("enable_gqa").or_shape()? {
            return Err(arg_error(
                "grouped-query attention (enable_gqa=True) is not exported".into(),
            ));
        }
        let query = args.tensor("query").or_shape()?;
        if let Some(mask) = args.optional_tensor("attn_mask").or_shape()? {
            // A static program's constant mask with more dimensions than the queries' rows
            // (its own batch of 2 beside queries of 2 samples) is broadcast within one row.
            self.lift_for_constants(&[Elementwise::Tensor(query), Elementwise::Tensor(mask)])?;
        }
        let q = self.activation(query)?;
        let k = self.activation(args.tensor("key").or_shape()?)?;
        let v = self.activation(args.tensor("value").or_shape()?)?;
        let (Some((&width, _)), rank) = (q.shape().split_last(), q.shape().len()) else {
            return Err(arg_error(
                "attention on tensors without a feature axis".into(),
            ));
        };
        if rank < 2 || k.shape().len() != rank || v.shape().len() != rank {
            return Err(arg_error(format!(
                "attention of query {:?}, key {:?}, value {:?}: equal ranks of at least 3 (with the batch) are exported",
                q.shape(),
                k.shape(),
                v.shape()
            )));
        }
        let scale = match args.get("scale") {
            None | Some(Argument::None) => 1.0 / (width as f64).sqrt(),
            Some(Argument::Float(s)) => *s,
            Some(other) => return Err(arg_error(format!("argument `scale` is {}", other.kind()))),
        };
        let factor = self
            .g
            .constant_scalar(&format!("{scope}.scale"), scale as f32);
        let q = self.g.mul_constant(scope, &q, &factor)?;
        let mut perm: Vec<usize> = (0..rank).collect();
        perm.swap(rank - 2, rank - 1);
        let kt = self.g.transpose(scope, &k, &perm)?;
        let mut scores = self.g.matmul_activations(scope, &q, &kt)?;
        let (rows, cols) = (scores.shape()[rank - 2], scores.shape()[rank - 1]);
        let causal = args.bool("is_causal").or_shape()?;
        let mask = args.optional_tensor("attn_mask").or_shape()?;
        if causal && mask.is_some() {
            return Err(arg_error(
                "attention with both a mask and is_causal (torch refuses it too)".into(),
            ));
        }
        if causal {
            let m = self.g.weight(
                &format!("{scope}.causal_mask"),
                vec![rows, cols],
                &causal_mask(rows, cols),
            )?;
            scores = self.g.add_constant(scope, &scores, &m)?;
        }
        // A boolean mask computed per sample, applied again after the softmax; an additive
        // mask that may hide a whole row, through torch's safe softmax.
        let mut keep = None;
        let mut may_hide_a_row = false;
        if let Some(mask) = mask {
            if self.recorded_elem(mask)? == ElemType::Bool && !self.is_constant(mask) {
                let m = self.any_activation(mask)?;
                scores = self.mask_select(&m, &scores, f32::NEG_INFINITY, scope)?;
                keep = Some(m);
            } else {
                (scores, may_hide_a_row) = self.masked(scores, mask, scope)?;
            }
        }
        let mut weights = if may_hide_a_row {
            self.g.safe_softmax(scope, &scores)?
        } else {
            self.g.softmax(scope, &scores)
        };
        if let Some(m) = keep {
            weights = self.mask_select(&m, &weights, 0.0, scope)?;
        }
        let y = self.g.matmul_activations(scope, &weights, &v)?;
        self.bind(node, 0, y)
    }

    /// `Where(mask, x, fill)` for a boolean mask computed per sample (true: attend), which
    /// must broadcast to `x` (the scores, or the weights after the softmax). Before the
    /// softmax with −∞ it is torch's additive form of the mask; after it with 0 it gives
    /// torch's result for a row that masks every key (torch's safe softmax: zeros, where
    /// the plain softmax of −∞ alone is NaN) and changes no other weight, each masked one
    /// being exp(−∞) = 0 already.
    fn mask_select(
        &mut self,
        mask: &Value,
        x: &Value,
        fill: f32,
        scope: &str,
    ) -> Result<Value, OnnxError> {
        let shape = emit::broadcast_shape("Where", scope, Operand::Activation(x), Operand::Activation(mask))
            .ok()
            .filter(|s| s == x.shape())
            .ok_or_else(|| {
                arg_error(format!(
                    "a boolean attention mask of per-sample sizes {:?} for scores {:?}; only a mask that broadcasts to the scores is exported",
                    mask.shape(),
                    x.shape()
                ))
            })?;
        let fill = self.g.constant_scalar(&format!("{scope}.masked"), fill);
        let inputs = vec![
            mask.name().to_owned(),
            x.name().to_owned(),
            fill.name().to_owned(),
        ];
        let mut out = self.g.typed_node(
            "Where",
            scope,
            inputs,
            vec![],
            vec![(shape, ElemType::Float32)],
        );
        Ok(out.swap_remove(0))
    }

    /// `scores + mask` for a float mask: a constant (a buffer, or computed from constants
    /// alone like a relative position bias) or an activation laid out like the scores
    /// (SAM's decomposed relative positions, computed from each sample's queries). A
    /// constant boolean mask (true: attend) becomes an additive one (0 or −∞); a mask that
    /// adds nothing (all true, all zeros, as a padding mask without padding folds to) is
    /// left out. A boolean mask computed by the graph is applied by [`Lowering::mask_select`].
    /// Also says whether the mask may hide every key of a row (a computed mask, or a
    /// constant with a row of −∞ alone), where torch's softmax gives zeros, not NaN.
    fn masked(
        &mut self,
        scores: Value,
        mask: &str,
        scope: &str,
    ) -> Result<(Value, bool), OnnxError> {
        let boolean = self.recorded_elem(mask)? == ElemType::Bool;
        if !self.is_constant(mask) {
            let m = self.activation(mask).map_err(|e| {
                arg_error(format!(
                    "the attention mask computed by the graph: {e}; a float mask with the batch first is exported"
                ))
            })?;
            let scores = emit::binary(
                &mut self.g,
                "Add",
                scope,
                Operand::Activation(&scores),
                Operand::Activation(&m),
            )?;
            return Ok((scores, true));
        }
        let constant = self.constant(mask)?;
        let (dims, values) = self.constant_values(mask)?;
        let additive: Vec<f32> = if boolean {
            values
                .iter()
                .map(|&v| if v != 0.0 { 0.0 } else { f32::NEG_INFINITY })
                .collect()
        } else {
            values
        };
        if additive.iter().all(|&v| v == 0.0) {
            return Ok((scores, false));
        }
        let row = dims.last().map_or(1, |&d| d as usize).max(1);
        let hides_a_row = additive
            .chunks(row)
            .any(|r| r.iter().all(|&v| v == f32::NEG_INFINITY));
        let m = if boolean {
            self.g
                .folded(&format!("{scope}.additive_mask"), dims, &additive)?
        } else {
            self.weight(&constant)?
        };
        let scores = emit::binary(
            &mut self.g,
            "Add",
            scope,
            Operand::Activation(&scores),
            Operand::Constant(&m),
        )?;
        Ok((scores, hides_a_row))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causal_mask_hides_later_columns() {
        let m = causal_mask(2, 3);
        assert_eq!(m[..3], [0.0, f32::NEG_INFINITY, f32::NEG_INFINITY]);
        assert_eq!(m[3..], [0.0, 0.0, f32::NEG_INFINITY]);
    }
}
