//! torchvision's ConvNeXt (tiny, small, base, large): a 4×4/4 patchify conv with a
//! channel LayerNorm, four stages of CNBlocks separated by LayerNorm + 2×2/2 conv
//! downsampling, a global average pool, and a LayerNorm + Linear head.
//!
//! A CNBlock is a 7×7 depthwise conv, then — between two permutes to channels-last and
//! back — LayerNorm, Linear 4×, GELU, Linear, then a per-channel layer scale and the
//! residual; stochastic depth is the identity in eval mode.
//!
//! Every width and the blocks per stage come from the checkpoint; a name fixes nothing
//! more. The LayerNorm epsilon (1e-6) is torchvision's constant.

use super::layers::{layer_norm_keys, linear_keys};
use super::{
    count_from, dim_or, key, Act, Context, Conv2d, Expected, StateDict, TorchvisionError, Value,
};

/// torchvision's `partial(LayerNorm2d, eps=1e-6)` and CNBlock's `LayerNorm(eps=1e-6)`.
const EPS: f64 = 1e-6;

/// torchvision's names: (name, stem width, blocks per stage).
const TABLE: [(&str, u64, [usize; 4]); 4] = [
    ("convnext_tiny", 96, [3, 3, 9, 3]),
    ("convnext_small", 96, [3, 3, 27, 3]),
    ("convnext_base", 128, [3, 3, 27, 3]),
    ("convnext_large", 192, [3, 3, 27, 3]),
];

/// The names this module builds.
pub const NAMES: [&str; 4] = [TABLE[0].0, TABLE[1].0, TABLE[2].0, TABLE[3].0];

/// A ConvNeXt with widths from the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvNext {
    name: String,
    in_channels: u64,
    /// Per stage: its width and its block count.
    stages: Vec<(u64, usize)>,
    classes: u64,
}

/// The ConvNeXt named `name`, or `None` for another family's name. Block counts are
/// torchvision's for the name, so a checkpoint with fewer blocks fails the key check.
pub fn from_name(name: &str, sd: &StateDict) -> Result<Option<ConvNext>, TorchvisionError> {
    Ok(TABLE
        .iter()
        .find(|row| row.0 == name)
        .map(|&(name, _, blocks)| plan(name.to_owned(), &blocks, sd)))
}

/// A ConvNeXt recognised from `features.1.0.layer_scale` and `classifier.2`, with four
/// stages; blocks per stage are counted from the keys.
pub fn detect(sd: &StateDict) -> Result<Option<ConvNext>, TorchvisionError> {
    let block = |stage: usize, b: usize| format!("features.{stage}.{b}.layer_scale");
    if !(sd.has(&block(1, 0)) && sd.has("classifier.2.weight")) {
        return Ok(None);
    }
    let blocks: Vec<usize> = (0..4)
        .map(|s| count_from(sd, 0, |b| block(2 * s + 1, b)))
        .collect();
    if blocks.contains(&0) {
        return Err(TorchvisionError::Arch {
            what: format!(
                "a ConvNeXt needs four stages of blocks (features.1, .3, .5, .7); found {blocks:?}"
            ),
        });
    }
    let mut model = plan(String::new(), &blocks, sd);
    let stem = model.stages[0].0;
    model.name = TABLE
        .iter()
        .find(|row| row.1 == stem && row.2.as_slice() == blocks)
        .map_or_else(
            || format!("convnext (stem {stem}, blocks {blocks:?})"),
            |row| row.0.to_owned(),
        );
    Ok(Some(model))
}

/// Reads every width; a missing key falls back to a neighbour's width so that the strict
/// check afterwards lists every missing key.
fn plan(name: String, blocks: &[usize], sd: &StateDict) -> ConvNext {
    let mut width = dim_or(sd, "features.0.0.weight", 0, 96);
    let mut stages = Vec::new();
    for (s, &count) in blocks.iter().enumerate() {
        if s > 0 {
            width = dim_or(
                sd,
                &format!("features.{}.1.weight", 2 * s),
                0,
                width.saturating_mul(2),
            );
        }
        stages.push((width, count));
    }
    ConvNext {
        name,
        in_channels: dim_or(sd, "features.0.0.weight", 1, 3),
        stages,
        classes: dim_or(sd, "classifier.2.weight", 0, 1000),
    }
}

impl ConvNext {
    pub fn name(&self) -> String {
        self.name.clone()
    }

    pub fn expected(&self) -> Vec<Expected> {
        let stem = self.stages.first().map_or(0, |s| s.0);
        let mut keys = vec![
            key(
                "features.0.0.weight".into(),
                vec![stem, self.in_channels, 4, 4],
            ),
            key("features.0.0.bias".into(), vec![stem]),
        ];
        keys.extend(layer_norm_keys("features.0.1", stem));
        let mut previous = stem;
        for (s, &(width, count)) in self.stages.iter().enumerate() {
            if s > 0 {
                let down = format!("features.{}", 2 * s);
                keys.extend(layer_norm_keys(&format!("{down}.0"), previous));
                keys.push(key(format!("{down}.1.weight"), vec![width, previous, 2, 2]));
                keys.push(key(format!("{down}.1.bias"), vec![width]));
            }
            for b in 0..count {
                let p = format!("features.{}.{b}", 2 * s + 1);
                keys.push(key(format!("{p}.layer_scale"), vec![width, 1, 1]));
                keys.push(key(format!("{p}.block.0.weight"), vec![width, 1, 7, 7]));
                keys.push(key(format!("{p}.block.0.bias"), vec![width]));
                keys.extend(layer_norm_keys(&format!("{p}.block.2"), width));
                let hidden = width.saturating_mul(4);
                keys.extend(linear_keys(&format!("{p}.block.3"), hidden, width));
                keys.extend(linear_keys(&format!("{p}.block.5"), width, hidden));
            }
            previous = width;
        }
        keys.extend(layer_norm_keys("classifier.0", previous));
        keys.extend(linear_keys("classifier.2", self.classes, previous));
        keys
    }

    pub fn build(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, TorchvisionError> {
        let x = cx.conv(input, "features.0.0", Conv2d::new(4, 0))?;
        let mut x = cx.layer_norm(&x, "features.0.1", 0, EPS)?;
        for (s, &(_, count)) in self.stages.iter().enumerate() {
            if s > 0 {
                let down = format!("features.{}", 2 * s);
                let y = cx.layer_norm(&x, &format!("{down}.0"), 0, EPS)?;
                x = cx.conv(&y, &format!("{down}.1"), Conv2d::new(2, 0))?;
            }
            for b in 0..count {
                x = block(cx, &x, &format!("features.{}.{b}", 2 * s + 1))?;
            }
        }
        let x = cx.graph.global_average_pool("avgpool", &x)?;
        let x = cx.layer_norm(&x, "classifier.0", 0, EPS)?;
        let x = cx.graph.flatten("classifier.1", &x)?;
        cx.linear(&x, "classifier.2")
    }
}

/// `CNBlock` at `prefix`: `x + layer_scale · block(x)`.
fn block(cx: &mut Context<'_>, x: &Value, prefix: &str) -> Result<Value, TorchvisionError> {
    let width = x.shape().first().copied().unwrap_or(0);
    let depthwise = Conv2d::new(1, 3).groups(width);
    let y = cx.conv(x, &format!("{prefix}.block.0"), depthwise)?;
    let y = cx
        .graph
        .permute(&format!("{prefix}.block.1"), &y, &[1, 2, 0])?;
    let y = cx.layer_norm(&y, &format!("{prefix}.block.2"), 2, EPS)?;
    let y = cx.linear(&y, &format!("{prefix}.block.3"))?;
    let y = cx
        .graph
        .activation(&format!("{prefix}.block.4"), &y, Act::Gelu);
    let y = cx.linear(&y, &format!("{prefix}.block.5"))?;
    let y = cx
        .graph
        .permute(&format!("{prefix}.block.6"), &y, &[2, 0, 1])?;
    let scale = cx.weight(&format!("{prefix}.layer_scale"))?;
    let y = cx.graph.mul(prefix, &y, &scale)?;
    cx.graph.add(prefix, &y, x)
}
