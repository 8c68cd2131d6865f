//! torchvision's Vision Transformer (vit_b_16, vit_b_32, vit_l_16, vit_l_32).
//!
//! Patches come from a P×P/P conv, are flattened to tokens (`[S, D]` per sample), a class
//! token is put first, the position embedding added, then pre-norm encoder blocks:
//! `x + Attention(LN(x))`, then `x + MLP(LN(x))`. The head reads the class token after a
//! final LayerNorm. Attention is written as `nn.MultiheadAttention` computes it in eval
//! mode: the input projection, the heads split off, scaled dot-product attention, the
//! output projection.
//!
//! Widths, depth, patch size, MLP width, sequence length and classes come from the
//! checkpoint. The head count is not in the weights: it is torchvision's convention of
//! 64-wide heads (768 → 12, 1024 → 16), except 1280 → 16 (vit_h_14's 80-wide heads); a
//! width that is not a multiple of 64 is an error.

use super::layers::{layer_norm_keys, linear_keys};
use super::{
    count_from, dim_or, key, Act, Context, Conv2d, Expected, StateDict, TorchvisionError, Value,
};

/// torchvision's `partial(nn.LayerNorm, eps=1e-6)`.
const EPS: f64 = 1e-6;

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
pub fn from_name(
    name: &str,
    sd: &StateDict,
) -> Result<Option<VisionTransformer>, TorchvisionError> {
    let Some(&(name, _, layers, hidden, _)) = TABLE.iter().find(|row| row.0 == name) else {
        return Ok(None);
    };
    plan(name.to_owned(), layers, sd, hidden).map(Some)
}

/// A ViT recognised from `conv_proj`, `class_token` and `encoder.pos_embedding`; layers
/// are counted from the keys.
pub fn detect(sd: &StateDict) -> Result<Option<VisionTransformer>, TorchvisionError> {
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
) -> Result<VisionTransformer, TorchvisionError> {
    let hidden = dim_or(sd, "conv_proj.weight", 0, hidden_fallback);
    let heads = heads_for(hidden).ok_or_else(|| TorchvisionError::Arch {
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

    pub fn build(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, TorchvisionError> {
        let x = self.tokens(cx, input)?;
        let mut x = self.prepend_class_token(cx, &x)?;
        let position = cx.weight("encoder.pos_embedding")?;
        x = cx.graph.add("encoder", &x, &position)?;
        for i in 0..self.layers {
            x = self.encoder_block(cx, &x, &layer_prefix(i))?;
        }
        let x = cx.layer_norm(&x, "encoder.ln", 1, EPS)?;
        let class = cx.graph.select("heads", &x, 0, 0)?;
        cx.linear(&class, "heads.head")
    }

    /// `_process_input`: the patch conv, flattened to `[patches, D]`. As in torchvision,
    /// the input must be the square image the position embedding was made for.
    fn tokens(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, TorchvisionError> {
        // The patches form a square: n² = tokens − 1, and the image side is n · patch.
        let per_side = self
            .sequence
            .checked_sub(1)
            .map(u64::isqrt)
            .filter(|n| n * n + 1 == self.sequence);
        let side = per_side.and_then(|n| n.checked_mul(self.patch));
        let &[_, h, w] = input.shape() else {
            return Err(TorchvisionError::Shape {
                what: format!(
                    "{}: expected a C×H×W input, got {:?}",
                    self.name,
                    input.shape()
                ),
            });
        };
        if side.is_none_or(|side| [h, w] != [side, side]) {
            return Err(TorchvisionError::Option {
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
        cx.graph.permute("", &x, &[1, 0])
    }

    /// `cat([class_token.expand(n, -1, -1), x], dim=1)`.
    fn prepend_class_token(
        &self,
        cx: &mut Context<'_>,
        x: &Value,
    ) -> Result<Value, TorchvisionError> {
        let token = cx.weight("class_token")?;
        let class = cx.graph.expand_over_batch("class_token", &token)?;
        cx.graph.concat("", &[&class, x], 0)
    }

    /// `EncoderBlock` at `prefix` (pre-norm; dropouts are the identity in eval mode).
    fn encoder_block(
        &self,
        cx: &mut Context<'_>,
        x: &Value,
        prefix: &str,
    ) -> Result<Value, TorchvisionError> {
        let y = cx.layer_norm(x, &format!("{prefix}.ln_1"), 1, EPS)?;
        let y = self.attention(cx, &y, &format!("{prefix}.self_attention"))?;
        let x = cx.graph.add(prefix, &y, x)?;
        let y = cx.layer_norm(&x, &format!("{prefix}.ln_2"), 1, EPS)?;
        let y = cx.linear(&y, &format!("{prefix}.mlp.0"))?;
        let y = cx
            .graph
            .activation(&format!("{prefix}.mlp.1"), &y, Act::Gelu);
        let y = cx.linear(&y, &format!("{prefix}.mlp.3"))?;
        cx.graph.add(prefix, &x, &y)
    }

    /// `nn.MultiheadAttention` at `prefix` (self-attention, batch first, no weights
    /// returned) as torch computes it: one input projection, split into queries, keys and
    /// values of `heads` heads, scaled dot-product attention, the output projection.
    fn attention(
        &self,
        cx: &mut Context<'_>,
        x: &Value,
        prefix: &str,
    ) -> Result<Value, TorchvisionError> {
        let (d, heads) = (self.hidden, self.heads);
        let &[tokens, _] = x.shape() else {
            return Err(TorchvisionError::Shape {
                what: format!("{prefix}: attention over per-sample {:?}", x.shape()),
            });
        };
        let w = cx.weight(&format!("{prefix}.in_proj_weight"))?;
        let b = cx.weight(&format!("{prefix}.in_proj_bias"))?;
        let qkv = cx.graph.linear(prefix, x, &w, Some(&b))?;
        let mut parts = Vec::with_capacity(3);
        for i in 0..3 {
            let part = cx.graph.slice(prefix, &qkv, 1, i * d..(i + 1) * d)?;
            let part = cx
                .graph
                .reshape(prefix, &part, &[tokens, heads, d / heads])?;
            parts.push(cx.graph.transpose(prefix, &part, 0, 1)?);
        }
        let y = cx
            .graph
            .attention(prefix, [&parts[0], &parts[1], &parts[2]])?;
        let y = cx.graph.transpose(prefix, &y, 0, 1)?;
        let y = cx.graph.reshape(prefix, &y, &[tokens, d])?;
        cx.linear(&y, &format!("{prefix}.out_proj"))
    }
}
