//! `_native_multi_head_attention`: `nn.MultiheadAttention`'s fused kernel, which
//! `torch.jit.trace` records in eval mode under `torch.no_grad()` (as torchvision's ViT
//! blocks call it), decomposed into the checkpoint ViT's attention
//! ([`crate::attention`]) and the output projection. Only self-attention (one tensor
//! as query, key and value) without a mask and without the attention weights is exported.

use crate::attention;
use crate::OnnxError;
use ckpt_aten::program::{Argument, Node};

use super::super::lower::Lowering;
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

impl<'p> Lowering<'p, '_> {
    /// Output 0 is the projected attention `[tokens, width]` per sample; output 1 (the
    /// weights) is marked unproduced, so a reader of it is an error naming this node.
    pub(super) fn multi_head_attention(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let query = args.tensor("query").or_shape()?;
        if args.tensor("key").or_shape()? != query || args.tensor("value").or_shape()? != query {
            return Err(arg_error(
                "fused attention with a key or value other than the query is not exported; only self-attention (attention(x, x, x)) is".into(),
            ));
        }
        if args.optional_tensor("mask").or_shape()?.is_some()
            || !matches!(args.get("mask_type"), None | Some(Argument::None))
        {
            return Err(arg_error(
                "fused attention with a mask is not exported; call it without attn_mask/key_padding_mask".into(),
            ));
        }
        if args.bool("need_weights").or_shape()? {
            return Err(arg_error(
                "the attention weights (need_weights=True) are not exported; call nn.MultiheadAttention with need_weights=False".into(),
            ));
        }
        // `average_attn_weights` only shapes the weights, which are not computed.
        args.bool("average_attn_weights").or_shape()?;
        let (x, width, heads) = self.attention_input(args, "query", "num_head")?;
        let [q, k, v] = self.in_projections(args, width, heads)?;
        let proj = self.constant(args.tensor("proj_weight").or_shape()?)?;
        let proj_bias = self.constant(args.tensor("proj_bias").or_shape()?)?;
        let a = attention::self_attention(&mut self.g, scope, &x, [&q, &k, &v], heads)?;
        let y = self.linear_value(&a, &proj, Some(&proj_bias), &format!("{scope}.out_proj"))?;
        self.unproduced_from(node, 1);
        self.bind(node, 0, y)
    }
}
