//! Layers the transformer-era families share, spelled in operators ATC takes at opsets
//! 9–13: LayerNorm (an opset-17 op) decomposed as torch's opset-11 exporter does, exact
//! GELU through `Erf`, and `nn.Linear` over the last axis of a token sequence or over the
//! channels of a feature map.

use super::{key, Context};
use crate::graph::{Value, Weight};
use crate::ops::Conv2d;
use crate::store::Transform;
use crate::weights::Expected;
use crate::OnnxError;

/// Keys of an `nn.LayerNorm` (or torchvision's `LayerNorm2d`) over `width` features.
pub fn layer_norm_keys(prefix: &str, width: u64) -> Vec<Expected> {
    vec![
        key(format!("{prefix}.weight"), vec![width]),
        key(format!("{prefix}.bias"), vec![width]),
    ]
}

/// Keys of an `nn.Linear` from `inputs` to `outputs` features, with bias.
pub fn linear_keys(prefix: &str, outputs: u64, inputs: u64) -> Vec<Expected> {
    vec![
        key(format!("{prefix}.weight"), vec![outputs, inputs]),
        key(format!("{prefix}.bias"), vec![outputs]),
    ]
}

impl Context<'_> {
    /// The state-dict tensor `key` declared with `dims` (same element count, e.g. a `[C]`
    /// affine weight as `[C, 1, 1]` so that it broadcasts over a feature map). Keeps the
    /// state-dict name.
    pub fn weight_as(&mut self, key: &str, dims: Vec<u64>) -> Result<Weight, OnnxError> {
        self.transformed_weight(key, None, Transform::Copy, key, dims)
    }

    /// `nn.LayerNorm` at `prefix` normalising per-sample `axis` of `x` (the last axis for
    /// tokens, the channel axis 0 for torchvision's `LayerNorm2d`), as
    /// ReduceMean → Sub → Mul → ReduceMean → Add ε → Sqrt → Div → Mul γ → Add β.
    pub fn layer_norm(
        &mut self,
        x: &Value,
        prefix: &str,
        axis: usize,
        eps: f32,
    ) -> Result<Value, OnnxError> {
        let width = x
            .shape()
            .get(axis)
            .copied()
            .ok_or_else(|| OnnxError::Shape {
                what: format!("{prefix}: LayerNorm axis {axis} of {:?}", x.shape()),
            })?;
        // γ and β broadcast along `axis`: `[C]` followed by one 1 per later axis.
        let mut dims = vec![width];
        dims.resize(x.shape().len() - axis, 1);
        let gamma = self.weight_as(&format!("{prefix}.weight"), dims.clone())?;
        let beta = self.weight_as(&format!("{prefix}.bias"), dims)?;
        self.graph
            .layer_norm(prefix, x, axis, [Some(&gamma), Some(&beta)], eps)
    }

    /// Exact `nn.GELU()`: `x · ½ · (1 + erf(x / √2))`, as torch's exporter writes it.
    pub fn gelu(&mut self, scope: &str, x: &Value) -> Result<Value, OnnxError> {
        self.graph.gelu(scope, x)
    }

    /// `nn.Linear` at `linear` over the last axis of `x` (`[…, K]` → `[…, N]`): MatMul by
    /// the transposed weight (an initializer `<linear>.weight.transposed`), then Add bias.
    pub fn token_linear(&mut self, x: &Value, linear: &str) -> Result<Value, OnnxError> {
        let weight_key = format!("{linear}.weight");
        let dims = self.sd.require(&weight_key)?.to_vec();
        let &[n, k] = dims.as_slice() else {
            return Err(OnnxError::Shape {
                what: format!("`{weight_key}` {dims:?} is not a 2-D linear weight"),
            });
        };
        let (Ok(rows), Ok(cols)) = (usize::try_from(n), usize::try_from(k)) else {
            return Err(OnnxError::Shape {
                what: format!("`{weight_key}` {dims:?} is too large"),
            });
        };
        let transpose = Transform::Transpose {
            rows,
            cols,
            scale: None,
        };
        let name = format!("{weight_key}.transposed");
        let w = self.transformed_weight(&weight_key, None, transpose, &name, vec![k, n])?;
        let y = self.graph.matmul(linear, x, &w)?;
        let b = self.weight(&format!("{linear}.bias"))?;
        self.graph.add_constant(linear, &y, &b)
    }

    /// `nn.Linear` at `linear` applied to the channels of a C×H×W map, as a 1×1 Conv whose
    /// weight is the linear weight `[N, K]` declared `[N, K, 1, 1]` (same bytes, same name):
    /// what a channels-last Linear between two permutes computes, with no Transpose.
    pub fn pointwise_linear(&mut self, x: &Value, linear: &str) -> Result<Value, OnnxError> {
        let weight_key = format!("{linear}.weight");
        let dims = self.sd.require(&weight_key)?.to_vec();
        let &[n, k] = dims.as_slice() else {
            return Err(OnnxError::Shape {
                what: format!("`{weight_key}` {dims:?} is not a 2-D linear weight"),
            });
        };
        let w = self.weight_as(&weight_key, vec![n, k, 1, 1])?;
        let b = self.weight(&format!("{linear}.bias"))?;
        self.graph.conv(linear, x, &w, Some(&b), Conv2d::new(1, 0))
    }
}
