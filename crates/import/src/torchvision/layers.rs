//! Layers the transformer-era families share: LayerNorm over tokens or over the channels
//! of a feature map, and the keys of it and of `nn.Linear`.

use super::{key, Context, Expected, TorchvisionError, Value};

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
    /// `nn.LayerNorm` at `prefix` normalising per-sample `axis` of `x`: the last axis for
    /// tokens; the channel axis 0 for torchvision's `LayerNorm2d`, which permutes the
    /// channels last, normalises and permutes them back.
    pub fn layer_norm(
        &mut self,
        x: &Value,
        prefix: &str,
        axis: usize,
        eps: f64,
    ) -> Result<Value, TorchvisionError> {
        let rank = x.shape().len();
        let gamma = self.weight(&format!("{prefix}.weight"))?;
        let beta = self.weight(&format!("{prefix}.bias"))?;
        if axis + 1 == rank {
            return self.graph.layer_norm(prefix, x, [&gamma, &beta], eps);
        }
        if axis != 0 || rank != 3 {
            return Err(TorchvisionError::Shape {
                what: format!("{prefix}: LayerNorm axis {axis} of {:?}", x.shape()),
            });
        }
        let y = self.graph.permute(prefix, x, &[1, 2, 0])?;
        let y = self.graph.layer_norm(prefix, &y, [&gamma, &beta], eps)?;
        self.graph.permute(prefix, &y, &[2, 0, 1])
    }
}
