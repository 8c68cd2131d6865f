//! torchvision's Vision Transformer (vit_b_16, vit_b_32, vit_l_16, vit_l_32) at opsets
//! 9–13, which torch's own exporter cannot do (`aten::unflatten` and SDPA need 13/14).
//!
//! Patches come from a P×P/P conv, are flattened to tokens (`[S, D]` per sample), a class
//! token is put first, the position embedding added, then pre-norm encoder blocks:
//! `x + Attention(LN(x))`, then `x + MLP(LN(x))`. The head reads the class token after a
//! final LayerNorm.
//!
//! - Attention is decomposed: Q, K and V are MatMuls by the transposed slices of
//!   `in_proj_weight` (the 1/√d scale folded into Q), Reshape/Transpose to heads, MatMul,
//!   Softmax over the last axis, MatMul, back to tokens, the output projection.
//! - The class token is per sample, yet no op may compute the batch size: it is built as
//!   `0 · (first patch token) + class_token`, which carries the batch dimension. It is
//!   exactly the class token for finite inputs; a non-finite patch makes the output NaN in
//!   torch too, through attention.
//! - LayerNorm is decomposed and GELU is exact through `Erf` (see `layers`).
//!
//! Widths, depth, patch size, MLP width, sequence length and classes come from the
//! checkpoint. The head count is not in the weights: it is torchvision's convention of
//! 64-wide heads (768 → 12, 1024 → 16), except 1280 → 16 (vit_h_14's 80-wide heads); a
//! width that is not a multiple of 64 is an error.

use super::layers::{layer_norm_keys, linear_keys};
use super::{count_from, dim_or, key, Context};
use crate::attention;
use crate::graph::{Value, Weight};
use crate::ops::Conv2d;
use crate::store::Transform;
use crate::weights::{Expected, StateDict};
use crate::OnnxError;

/// torchvision's `partial(nn.LayerNorm, eps=1e-6)`.
const EPS: f32 = 1e-6;

/// torchvision's names: (name, patch size, layers, hidden width, MLP width).
const TABLE: [(&str, u64, usize, u64, u64); 4] = [
    ("vit_b_16", 16, 12, 768, 3072),
    ("vit_b_32", 32, 12, 768, 3072),
    ("vit_l_16", 16, 24, 1024, 4096),
    ("vit_l_32", 32, 24, 1024, 4096),
];

/// The names this module builds.
pub const NAMES: [&str; 4] = [TABLE[0].0, TABLE[1].0, TABLE[2].0, TABLE[3].0];

/// Attention heads for a hidden width, as torchvision's builders set them: 64-wide heads,
/// except vit_h_14's 16 heads of 80.
fn heads_for(hidden: u64) -> Option<u64> {
    match hidden {
        1280 => Some(16),
        0 => None,
        _ if hidden.is_multiple_of(64) => Some(hidden / 64),
        _ => None,
    }
}

/// A Vision Transformer with sizes from the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VisionTransformer {
    name: String,
    in_channels: u64,
    patch: u64,
    hidden: u64,
    mlp: u64,
    heads: u64,
    layers: usize,
    /// Tokens per sample: patches plus the class token.
    sequence: u64,
    classes: u64,
}

/// The ViT named `name`, or `None` for another family's name.
pub fn from_name(name: &str, sd: &StateDict) -> Result<Option<VisionTransformer>, OnnxError> {
    let Some(&(name, _, layers, hidden, _)) = TABLE.iter().find(|row| row.0 == name) else {
        return Ok(None);
    };
    plan(name.to_owned(), layers, sd, hidden).map(Some)
}

/// A ViT recognised from `conv_proj`, `class_token` and `encoder.pos_embedding`; layers
/// are counted from the keys.
pub fn detect(sd: &StateDict) -> Result<Option<VisionTransformer>, OnnxError> {
    let layer = |i: usize| format!("encoder.layers.encoder_layer_{i}.ln_1.weight");
    if !(sd.has("conv_proj.weight") && sd.has("class_token") && sd.has(&layer(0))) {
        return Ok(None);
    }
    let layers = count_from(sd, 0, layer);
    let hidden = dim_or(sd, "conv_proj.weight", 0, 0);
    let mut model = plan(String::new(), layers, sd, hidden)?;
    let row = TABLE
        .iter()
        .find(|row| (row.1, row.2, row.3, row.4) == (model.patch, layers, model.hidden, model.mlp));
    model.name = row.map_or_else(
        || {
            format!(
                "vit (patch {}, {layers} layers, width {}, mlp {})",
                model.patch, model.hidden, model.mlp
            )
        },
        |row| row.0.to_owned(),
    );
    Ok(Some(model))
}

fn plan(
    name: String,
    layers: usize,
    sd: &StateDict,
    hidden_fallback: u64,
) -> Result<VisionTransformer, OnnxError> {
    let hidden = dim_or(sd, "conv_proj.weight", 0, hidden_fallback);
    let heads = heads_for(hidden).ok_or_else(|| OnnxError::Arch {
        what: format!(
            "a ViT of hidden width {hidden}: its attention head count is not in the weights, \
             and the width is not a multiple of torchvision's 64-wide heads"
        ),
    })?;
    Ok(VisionTransformer {
        name,
        in_channels: dim_or(sd, "conv_proj.weight", 1, 3),
        patch: dim_or(sd, "conv_proj.weight", 2, 16),
        hidden,
        mlp: dim_or(
            sd,
            "encoder.layers.encoder_layer_0.mlp.0.weight",
            0,
            hidden.saturating_mul(4),
        ),
        heads,
        layers,
        sequence: dim_or(sd, "encoder.pos_embedding", 1, 197),
        classes: dim_or(sd, "heads.head.weight", 0, 1000),
    })
}

fn layer_prefix(i: usize) -> String {
    format!("encoder.layers.encoder_layer_{i}")
}

impl VisionTransformer {
    pub fn name(&self) -> String {
        self.name.clone()
    }

    pub fn expected(&self) -> Vec<Expected> {
        let (d, p) = (self.hidden, self.patch);
        let mut keys = vec![
            key("conv_proj.weight".into(), vec![d, self.in_channels, p, p]),
            key("conv_proj.bias".into(), vec![d]),
            key("class_token".into(), vec![1, 1, d]),
            key("encoder.pos_embedding".into(), vec![1, self.sequence, d]),
        ];
        for i in 0..self.layers {
            let l = layer_prefix(i);
            keys.extend(layer_norm_keys(&format!("{l}.ln_1"), d));
            let a = format!("{l}.self_attention");
            keys.push(key(
                format!("{a}.in_proj_weight"),
                vec![d.saturating_mul(3), d],
            ));
            keys.push(key(format!("{a}.in_proj_bias"), vec![d.saturating_mul(3)]));
            keys.extend(linear_keys(&format!("{a}.out_proj"), d, d));
            keys.extend(layer_norm_keys(&format!("{l}.ln_2"), d));
            keys.extend(linear_keys(&format!("{l}.mlp.0"), self.mlp, d));
            keys.extend(linear_keys(&format!("{l}.mlp.3"), d, self.mlp));
        }
        keys.extend(layer_norm_keys("encoder.ln", d));
        keys.extend(linear_keys("heads.head", self.classes, d));
        keys
    }

    pub fn build(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, OnnxError> {
        let x = self.tokens(cx, input)?;
        let mut x = self.prepend_class_token(cx, &x)?;
        let position = cx.weight("encoder.pos_embedding")?;
        x = cx.graph.add_constant("encoder", &x, &position)?;
        for i in 0..self.layers {
            x = self.encoder_block(cx, &x, &layer_prefix(i))?;
        }
        let x = cx.layer_norm(&x, "encoder.ln", 1, EPS)?;
        let class = cx.graph.slice("heads", &x, 0, 0..1)?;
        let class = cx.graph.flatten("heads", &class);
        cx.linear(&class, "heads.head")
    }

    /// `_process_input`: the patch conv, flattened to `[patches, D]`. As in torchvision,
    /// the input must be the square image the position embedding was made for.
    fn tokens(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, OnnxError> {
        // The patches form a square: n² = tokens − 1, and the image side is n · patch.
        let per_side = self
            .sequence
            .checked_sub(1)
            .map(u64::isqrt)
            .filter(|n| n * n + 1 == self.sequence);
        let side = per_side.and_then(|n| n.checked_mul(self.patch));
        let &[_, h, w] = input.shape() else {
            return Err(OnnxError::Shape {
                what: format!(
                    "{}: expected a C×H×W input, got {:?}",
                    self.name,
                    input.shape()
                ),
            });
        };
        if side.is_none_or(|side| [h, w] != [side, side]) {
            return Err(OnnxError::Option {
                what: format!(
                    "{}: its position embedding has {} tokens, made for a square image of {} \
                     patches of {}×{}; an input of {h}×{w} does not give that (pass \
                     --input-shape 3,S,S with the model's image size S, e.g. 3,224,224)",
                    self.name,
                    self.sequence,
                    self.sequence.saturating_sub(1),
                    self.patch,
                    self.patch
                ),
            });
        }
        let patches = self.sequence - 1;
        let x = cx.conv(input, "conv_proj", Conv2d::new(self.patch, 0))?;
        let x = cx.graph.reshape("", &x, &[self.hidden, patches])?;
        cx.graph.transpose("", &x, &[1, 0])
    }

    /// `cat([class_token.expand(n, -1, -1), x], dim=1)` with no op computing the batch.
    fn prepend_class_token(&self, cx: &mut Context<'_>, x: &Value) -> Result<Value, OnnxError> {
        let first = cx.graph.slice("class_token", x, 0, 0..1)?;
        let zero = cx.graph.constant_scalar("class_token.zero", 0.0);
        let zeros = cx.graph.mul_constant("class_token", &first, &zero)?;
        let token = cx.weight("class_token")?;
        let class = cx.graph.add_constant("class_token", &zeros, &token)?;
        cx.graph.concat("", &[&class, x], 0)
    }

    /// `EncoderBlock` at `prefix` (pre-norm; dropouts are the identity in eval mode).
    fn encoder_block(
        &self,
        cx: &mut Context<'_>,
        x: &Value,
        prefix: &str,
    ) -> Result<Value, OnnxError> {
        let y = cx.layer_norm(x, &format!("{prefix}.ln_1"), 1, EPS)?;
        let y = self.attention(cx, &y, &format!("{prefix}.self_attention"))?;
        let x = cx.graph.add(prefix, &y, x)?;
        let y = cx.layer_norm(&x, &format!("{prefix}.ln_2"), 1, EPS)?;
        let y = cx.token_linear(&y, &format!("{prefix}.mlp.0"))?;
        let y = cx.gelu(&format!("{prefix}.mlp.1"), &y)?;
        let y = cx.token_linear(&y, &format!("{prefix}.mlp.3"))?;
        cx.graph.add(prefix, &x, &y)
    }

    /// `nn.MultiheadAttention(x, x, x)` at `prefix` in eval mode, decomposed
    /// ([`attention::self_attention`]).
    fn attention(&self, cx: &mut Context<'_>, x: &Value, prefix: &str) -> Result<Value, OnnxError> {
        let head = self.hidden / self.heads;
        let scale = 1.0 / (head as f32).sqrt();
        let [q, k, v] = self.in_projections(cx, prefix, scale)?;
        let y = attention::self_attention(&mut cx.graph, prefix, x, [&q, &k, &v], self.heads)?;
        cx.token_linear(&y, &format!("{prefix}.out_proj"))
    }

    /// Q, K and V as (transposed weight `[D, D]`, bias `[D]`), sliced from
    /// `in_proj_weight`/`in_proj_bias` and named `<key>.q|k|v`; Q carries `q_scale`.
    fn in_projections(
        &self,
        cx: &mut Context<'_>,
        prefix: &str,
        q_scale: f32,
    ) -> Result<[[Weight; 2]; 3], OnnxError> {
        let d = self.hidden;
        let weight_key = format!("{prefix}.in_proj_weight");
        let bias_key = format!("{prefix}.in_proj_bias");
        let bias = cx.sd.read(cx.ckpt, &bias_key)?;
        let sized = || OnnxError::Shape {
            what: format!("`{weight_key}` or `{bias_key}` is not sized for width {d}"),
        };
        let width = usize::try_from(d).map_err(|_| sized())?;
        let rows = d.checked_mul(3).ok_or_else(sized)?;
        if cx.sd.require(&weight_key)? != [rows, d] || Some(bias.len()) != width.checked_mul(3) {
            return Err(sized());
        }
        // As `attention::split_in_projection`: rows `i·d..(i+1)·d` of the weight, transposed
        // and multiplied by the part's scale, and the bias's `i`-th third likewise scaled.
        let mut part = |i: usize, scale: f32, name: &str| -> Result<[Weight; 2], OnnxError> {
            let transpose = Transform::Transpose {
                rows: width,
                cols: width,
                scale: Some(scale),
            };
            let rows = Some((i as u64 * d, d));
            let name_w = format!("{weight_key}.{name}");
            let w = cx.transformed_weight(&weight_key, rows, transpose, &name_w, vec![d, d])?;
            let b: Vec<f32> = bias[i * width..(i + 1) * width]
                .iter()
                .map(|v| v * scale)
                .collect();
            let b = cx
                .graph
                .weight(&format!("{bias_key}.{name}"), vec![d], &b)?;
            Ok([w, b])
        };
        Ok([
            part(0, q_scale, "q")?,
            part(1, 1.0, "k")?,
            part(2, 1.0, "v")?,
        ])
    }
}
