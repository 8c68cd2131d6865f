//! `_transformer_encoder_layer_fwd`: the fused `nn.TransformerEncoderLayer` (batch first)
//! that `torch.jit.trace` records in eval mode under `torch.no_grad()`, decomposed into
//! the checkpoint ViT's attention ([`crate::attention`]), the output projection, the
//! residuals, LayerNorm and the ReLU or exact-GELU feed-forward. No op reads a shape.

use crate::attention;
use crate::graph::{Value, Weight};
use crate::OnnxError;
use ckpt_aten::program::{Argument, Node};

use super::super::lower::{Constant, Lowering};
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

impl<'p> Lowering<'p, '_> {
    pub(super) fn transformer_encoder_layer(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        if args.optional_tensor("mask").or_shape()?.is_some()
            || !matches!(args.get("mask_type"), None | Some(Argument::None))
        {
            return Err(arg_error(
                "a fused encoder layer with an attention mask is not exported; trace the model without a src_mask/src_key_padding_mask".into(),
            ));
        }
        let (x, width, heads) = self.attention_input(args, "src", "num_heads")?;
        let qkv = self.in_projections(args, width, heads)?;
        let constant = |name: &str| -> Result<Constant, OnnxError> {
            self.constant(args.tensor(name).or_shape()?)
        };
        let (proj, proj_bias) = (constant("proj_weight")?, constant("proj_bias")?);
        let norms = [
            [constant("norm_weight_1")?, constant("norm_bias_1")?],
            [constant("norm_weight_2")?, constant("norm_bias_2")?],
        ];
        let ffn = [
            [constant("ffn_weight_1")?, constant("ffn_bias_1")?],
            [constant("ffn_weight_2")?, constant("ffn_bias_2")?],
        ];
        let gelu = args.bool("use_gelu").or_shape()?;
        let eps = args.float("eps").or_shape()? as f32;
        let attend = |me: &mut Self, y: &Value| -> Result<Value, OnnxError> {
            let scope = format!("{scope}.self_attn");
            let [q, k, v] = &qkv;
            let a = attention::self_attention(&mut me.g, &scope, y, [q, k, v], heads)?;
            me.linear_value(&a, &proj, Some(&proj_bias), &format!("{scope}.out_proj"))
        };
        let feed_forward = |me: &mut Self, y: &Value| -> Result<Value, OnnxError> {
            let [[w1, b1], [w2, b2]] = &ffn;
            let h = me.linear_value(y, w1, Some(b1), &format!("{scope}.linear1"))?;
            let h = if gelu {
                me.g.gelu(scope, &h)?
            } else {
                me.g.relu(scope, &h)
            };
            me.linear_value(&h, w2, Some(b2), &format!("{scope}.linear2"))
        };
        let y = if args.bool("norm_first").or_shape()? {
            let a = self.norm(&x, &norms[0], eps, &format!("{scope}.norm1"))?;
            let a = attend(self, &a)?;
            let x = self.g.add(scope, &x, &a)?;
            let f = self.norm(&x, &norms[1], eps, &format!("{scope}.norm2"))?;
            let f = feed_forward(self, &f)?;
            self.g.add(scope, &x, &f)?
        } else {
            let a = attend(self, &x)?;
            let x = self.g.add(scope, &x, &a)?;
            let x = self.norm(&x, &norms[0], eps, &format!("{scope}.norm1"))?;
            let f = feed_forward(self, &x)?;
            let x = self.g.add(scope, &x, &f)?;
            self.norm(&x, &norms[1], eps, &format!("{scope}.norm2"))?
        };
        self.bind(node, 0, y)
    }

    /// The tokens a fused attention op reads (argument `input`: per-sample [tokens, width],
    /// batch first), their width, and the head count (argument `heads`), which with
    /// `embed_dim` must fit that width.
    pub(super) fn attention_input(
        &mut self,
        args: &Args<'_>,
        input: &str,
        heads: &str,
    ) -> Result<(Value, u64, u64), OnnxError> {
        let x = self.activation(args.tensor(input).or_shape()?)?;
        let &[_, width] = x.shape() else {
            return Err(arg_error(format!(
                "attention input of per-sample {:?}: [tokens, width] (batch_first=True) is exported",
                x.shape()
            )));
        };
        let embed = args.int("embed_dim").or_shape()?;
        let count = args.int(heads).or_shape()?;
        let count = u64::try_from(count)
            .ok()
            .filter(|&h| embed == width as i64 && h > 0 && width % h == 0)
            .ok_or_else(|| {
                arg_error(format!(
                    "embed_dim {embed} with {count} heads does not fit tokens of width {width}"
                ))
            })?;
        Ok((x, width, count))
    }

    /// Q, K and V (transposed weight, bias) from the constants `qkv_weight`/`qkv_bias`, the
    /// 1/√(head width) scale folded into Q; named `<fqn>.q|k|v`.
    pub(super) fn in_projections(
        &mut self,
        args: &Args<'_>,
        width: u64,
        heads: u64,
    ) -> Result<[[Weight; 2]; 3], OnnxError> {
        let weight = self.constant(args.tensor("qkv_weight").or_shape()?)?;
        let bias = self.constant(args.tensor("qkv_bias").or_shape()?)?;
        let scale = 1.0 / ((width / heads) as f32).sqrt();
        let (w, b) = (self.read(&weight)?, self.read(&bias)?);
        let [q, k, v] =
            attention::split_in_projection(&w, &b, width as usize, scale).ok_or_else(|| {
                arg_error(format!(
                    "`{weight}` or `{bias}` is not a packed Q/K/V projection of width {width}"
                ))
            })?;
        let mut part = |p: attention::Projection, name: &str| -> Result<[Weight; 2], OnnxError> {
            Ok([
                self.g
                    .weight(&format!("{weight}.{name}"), vec![width, width], &p.weight)?,
                self.g
                    .weight(&format!("{bias}.{name}"), vec![width], &p.bias)?,
            ])
        };
        Ok([part(q, "q")?, part(k, "k")?, part(v, "v")?])
    }

    /// LayerNorm over the last axis with constant `[weight, bias]`.
    fn norm(
        &mut self,
        x: &Value,
        [weight, bias]: &[Constant; 2],
        eps: f32,
        scope: &str,
    ) -> Result<Value, OnnxError> {
        let gamma = self.weight(weight)?;
        let beta = self.weight(bias)?;
        let axis = x.shape().len() - 1;
        self.g
            .layer_norm(scope, x, axis, [Some(&gamma), Some(&beta)], eps)
    }
}
