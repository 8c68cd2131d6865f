//! Layers several families share, as torchvision's modules write them: a conv with its
//! BatchNorm (`Conv2dNormActivation` and its relatives), `SqueezeExcitation`, LayerNorm over
//! tokens or over the channels of a feature map, the pool before a classifier, and the
//! state-dict keys of each and of `nn.Linear`.

use super::{bn_keys, key, Act, Context, Conv2d, Expected, TorchvisionError, Value};

/// Keys of a bias-free conv at `conv` of weight sizes `shape` (output channels first) and
/// of the BatchNorm at `bn` over its output channels.
pub fn conv_bn_keys(conv: &str, bn: &str, shape: [u64; 4]) -> Vec<Expected> {
    let mut keys = vec![key(format!("{conv}.weight"), shape.to_vec())];
    keys.extend(bn_keys(bn, shape[0]));
    keys
}

/// Keys of a `Conv2dNormActivation` at `prefix` (conv `.0` without bias, BN `.1`).
pub fn cna_keys(prefix: &str, shape: [u64; 4]) -> Vec<Expected> {
    conv_bn_keys(&format!("{prefix}.0"), &format!("{prefix}.1"), shape)
}

/// Keys of a `SqueezeExcitation` at `prefix` over `width` channels squeezed to `squeeze`:
/// `fc1` and `fc2`, 1×1 convs with bias.
pub fn se_keys(prefix: &str, width: u64, squeeze: u64) -> Vec<Expected> {
    [("fc1", squeeze, width), ("fc2", width, squeeze)]
        .into_iter()
        .flat_map(|(fc, out, inp)| {
            [
                key(format!("{prefix}.{fc}.weight"), vec![out, inp, 1, 1]),
                key(format!("{prefix}.{fc}.bias"), vec![out]),
            ]
        })
        .collect()
}

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
    /// `Conv2dNormActivation` at `prefix`: conv `.0` with BN `.1` (epsilon `eps`), then
    /// `act` (`.2`).
    pub fn cna(
        &mut self,
        x: &Value,
        prefix: &str,
        eps: f64,
        p: Conv2d,
        act: Act,
    ) -> Result<Value, TorchvisionError> {
        let y = self.conv_bn(x, &format!("{prefix}.0"), &format!("{prefix}.1"), eps, p)?;
        Ok(self.graph.activation(&format!("{prefix}.2"), &y, act))
    }

    /// torchvision's `SqueezeExcitation` at `prefix`:
    /// `x · gate(fc2(act(fc1(GlobalAveragePool(x)))))`.
    pub fn squeeze_excitation(
        &mut self,
        x: &Value,
        prefix: &str,
        act: Act,
        gate: Act,
    ) -> Result<Value, TorchvisionError> {
        let sub = |name: &str| format!("{prefix}.{name}");
        let s = self.graph.global_average_pool(&sub("avgpool"), x)?;
        let s = self.conv(&s, &sub("fc1"), Conv2d::new(1, 0))?;
        let s = self.graph.activation(&sub("activation"), &s, act);
        let s = self.conv(&s, &sub("fc2"), Conv2d::new(1, 0))?;
        let gate = self.graph.activation(&sub("scale_activation"), &s, gate);
        self.graph.mul(prefix, x, &gate)
    }

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

    /// The classifier's input: `AdaptiveAvgPool2d(1)` at `scope`, then `torch.flatten(x, 1)`.
    pub fn pool_flatten(&mut self, scope: &str, x: &Value) -> Result<Value, TorchvisionError> {
        let x = self.graph.global_average_pool(scope, x)?;
        self.graph.flatten("", &x)
    }
}
