//! torchvision's EfficientNet B0–B7: a SiLU stem, seven stages of MBConv blocks (optional
//! 1×1 expand, depthwise conv, squeeze-and-excitation, 1×1 linear projection), a 1×1 SiLU
//! conv, a global average pool and one Linear. Every conv is followed by a BatchNorm;
//! stochastic depth is the identity in eval mode.
//!
//! The names share one topology except for blocks per stage, which are counted from the
//! keys; every width, kernel size and whether a block expands comes from the checkpoint.
//! Strides and the BatchNorm epsilon are not in the weights: the first block of each stage
//! has torchvision's stride, and the epsilon is torchvision's for the name (1e-3 for B5–B7,
//! else 1e-5, also for a non-standard variant).

use super::layers::{cna_keys, linear_keys, se_keys};
use super::{
    count_from, dim_or, Act, Context, Conv2d, Expected, StateDict, TorchvisionError, Value,
};

/// The stride of each stage's first block (`_efficientnet_conf`).
const STRIDES: [u64; 7] = [1, 2, 2, 2, 1, 2, 1];

/// torchvision's names: (name, stem width, blocks per stage, stage widths, whether its
/// BatchNorms use `eps=0.001`).
type Row = (&'static str, u64, [usize; 7], [u64; 7], bool);

const TABLE: [Row; 8] = [
    (
        "efficientnet_b0",
        32,
        [1, 2, 2, 3, 3, 4, 1],
        [16, 24, 40, 80, 112, 192, 320],
        false,
    ),
    (
        "efficientnet_b1",
        32,
        [2, 3, 3, 4, 4, 5, 2],
        [16, 24, 40, 80, 112, 192, 320],
        false,
    ),
    (
        "efficientnet_b2",
        32,
        [2, 3, 3, 4, 4, 5, 2],
        [16, 24, 48, 88, 120, 208, 352],
        false,
    ),
    (
        "efficientnet_b3",
        40,
        [2, 3, 3, 5, 5, 6, 2],
        [24, 32, 48, 96, 136, 232, 384],
        false,
    ),
    (
        "efficientnet_b4",
        48,
        [2, 4, 4, 6, 6, 8, 2],
        [24, 32, 56, 112, 160, 272, 448],
        false,
    ),
    (
        "efficientnet_b5",
        48,
        [3, 5, 5, 7, 7, 9, 3],
        [24, 40, 64, 128, 176, 304, 512],
        true,
    ),
    (
        "efficientnet_b6",
        56,
        [3, 6, 6, 8, 8, 11, 3],
        [32, 40, 72, 144, 200, 344, 576],
        true,
    ),
    (
        "efficientnet_b7",
        64,
        [4, 7, 7, 10, 10, 13, 4],
        [32, 48, 80, 160, 224, 384, 640],
        true,
    ),
];

/// The names this module builds.
pub const NAMES: [&str; 8] = [
    TABLE[0].0, TABLE[1].0, TABLE[2].0, TABLE[3].0, TABLE[4].0, TABLE[5].0, TABLE[6].0, TABLE[7].0,
];

/// One MBConv block's widths.
#[derive(Clone, Debug, PartialEq, Eq)]
struct BlockPlan {
    /// `features.<stage>.<block>.block`.
    prefix: String,
    /// Whether the block starts with a 1×1 expand conv.
    expand: bool,
    input: u64,
    /// Expanded (depthwise) width; `input` when the block does not expand.
    hidden: u64,
    squeeze: u64,
    output: u64,
    kernel: u64,
    stride: u64,
}

impl BlockPlan {
    /// Sub-module indices: expand (if any), depthwise, SE, project.
    fn layout(&self) -> (Option<usize>, usize, usize, usize) {
        let dw = usize::from(self.expand);
        (self.expand.then_some(0), dw, dw + 1, dw + 2)
    }

    fn residual(&self) -> bool {
        self.stride == 1 && self.input == self.output
    }
}

/// An EfficientNet with widths from the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EfficientNet {
    name: String,
    /// BatchNorm `eps=0.001` (B5–B7) instead of `nn.BatchNorm2d`'s 1e-5.
    eps_1e3: bool,
    in_channels: u64,
    stem: u64,
    stages: Vec<Vec<BlockPlan>>,
    /// Output width of the last 1×1 conv, the classifier's input.
    last: u64,
    classes: u64,
}

/// The EfficientNet named `name`, or `None` for another family's name.
pub fn from_name(name: &str, sd: &StateDict) -> Result<Option<EfficientNet>, TorchvisionError> {
    let Some(&(name, _, blocks, _, eps_1e3)) = TABLE.iter().find(|row| row.0 == name) else {
        return Ok(None);
    };
    Ok(Some(plan(name.to_owned(), eps_1e3, &blocks, sd)))
}

/// An EfficientNet recognised from `features.1.0.block` and `classifier.1`; there must be
/// seven stages, blocks per stage are counted, and the name (hence the epsilon) comes from
/// the stem width, the block counts and the stage widths.
pub fn detect(sd: &StateDict) -> Result<Option<EfficientNet>, TorchvisionError> {
    let block = |s: usize, b: usize| format!("features.{s}.{b}.block.0.0.weight");
    if !(sd.has(&block(1, 0)) && sd.has("classifier.1.weight")) {
        return Ok(None);
    }
    let stages = count_from(sd, 1, |s| block(s, 0));
    if stages != STRIDES.len() {
        return Err(TorchvisionError::Arch {
            what: format!(
                "an EfficientNet with {stages} stages matches none of {}; its strides are not \
                 in the weights",
                NAMES.join(", ")
            ),
        });
    }
    let blocks: Vec<usize> = (1..=stages)
        .map(|s| count_from(sd, 0, |b| block(s, b)))
        .collect();
    let mut model = plan(String::new(), false, &blocks, sd);
    let widths: Vec<u64> = model
        .stages
        .iter()
        .map(|s| s.last().map_or(0, |b| b.output))
        .collect();
    let row = TABLE.iter().find(|row| {
        row.1 == model.stem && row.2.as_slice() == blocks && row.3.as_slice() == widths
    });
    match row {
        Some(row) => {
            model.name = row.0.to_owned();
            model.eps_1e3 = row.4;
        }
        None => {
            model.name = format!("efficientnet (blocks {blocks:?}, widths {widths:?})");
        }
    }
    Ok(Some(model))
}

/// Reads every width; a missing key takes its predecessor's width so that the strict check
/// afterwards lists every missing key.
fn plan(name: String, eps_1e3: bool, blocks: &[usize], sd: &StateDict) -> EfficientNet {
    let stem = dim_or(sd, "features.0.0.weight", 0, 32);
    let mut input = stem;
    let mut stages = Vec::new();
    for (s, (&count, &stride)) in blocks.iter().zip(STRIDES.iter()).enumerate() {
        let mut plans = Vec::new();
        for b in 0..count {
            let prefix = format!("features.{}.{b}.block", s + 1);
            // The first conv is the expand conv iff it is 1×1 (the depthwise one is 3×3 or 5×5).
            let expand = sd
                .shape(&format!("{prefix}.0.0.weight"))
                .is_none_or(|s| s.get(2..) == Some(&[1, 1][..]));
            let mut block = BlockPlan {
                prefix,
                expand,
                input,
                hidden: input,
                squeeze: input,
                output: input,
                kernel: 3,
                stride: if b == 0 { stride } else { 1 },
            };
            let (expand, dw, se, project) = block.layout();
            let p = &block.prefix;
            if let Some(j) = expand {
                block.hidden = dim_or(sd, &format!("{p}.{j}.0.weight"), 0, input);
            }
            block.kernel = dim_or(sd, &format!("{p}.{dw}.0.weight"), 2, 3);
            block.squeeze = dim_or(sd, &format!("{p}.{se}.fc1.weight"), 0, block.hidden);
            block.output = dim_or(sd, &format!("{p}.{project}.0.weight"), 0, input);
            input = block.output;
            plans.push(block);
        }
        stages.push(plans);
    }
    let last_key = format!("features.{}.0.weight", blocks.len() + 1);
    EfficientNet {
        name,
        eps_1e3,
        in_channels: dim_or(sd, "features.0.0.weight", 1, 3),
        stem,
        stages,
        last: dim_or(sd, &last_key, 0, 4 * input),
        classes: dim_or(sd, "classifier.1.weight", 0, 1000),
    }
}

impl EfficientNet {
    pub fn name(&self) -> String {
        self.name.clone()
    }

    fn eps(&self) -> f64 {
        if self.eps_1e3 {
            1e-3
        } else {
            1e-5
        }
    }

    fn last_prefix(&self) -> String {
        format!("features.{}", self.stages.len() + 1)
    }

    pub fn expected(&self) -> Vec<Expected> {
        let mut keys = cna_keys("features.0", [self.stem, self.in_channels, 3, 3]);
        let mut width = self.stem;
        for b in self.stages.iter().flatten() {
            let (expand, dw, se, project) = b.layout();
            let p = &b.prefix;
            if let Some(j) = expand {
                keys.extend(cna_keys(&format!("{p}.{j}"), [b.hidden, b.input, 1, 1]));
            }
            let k = b.kernel;
            keys.extend(cna_keys(&format!("{p}.{dw}"), [b.hidden, 1, k, k]));
            keys.extend(se_keys(&format!("{p}.{se}"), b.hidden, b.squeeze));
            keys.extend(cna_keys(
                &format!("{p}.{project}"),
                [b.output, b.hidden, 1, 1],
            ));
            width = b.output;
        }
        keys.extend(cna_keys(&self.last_prefix(), [self.last, width, 1, 1]));
        keys.extend(linear_keys("classifier.1", self.classes, self.last));
        keys
    }

    pub fn build(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, TorchvisionError> {
        let eps = self.eps();
        let mut x = cx.cna(input, "features.0", eps, Conv2d::new(2, 1), Act::Silu)?;
        for b in self.stages.iter().flatten() {
            x = self.block(cx, &x, b)?;
        }
        let x = cx.cna(&x, &self.last_prefix(), eps, Conv2d::new(1, 0), Act::Silu)?;
        let x = cx.pool_flatten("avgpool", &x)?;
        cx.linear(&x, "classifier.1")
    }

    /// `MBConv` `b`; the residual's stochastic depth is the identity in eval mode.
    fn block(
        &self,
        cx: &mut Context<'_>,
        x: &Value,
        b: &BlockPlan,
    ) -> Result<Value, TorchvisionError> {
        let (expand, dw, se, project) = b.layout();
        let p = &b.prefix;
        let eps = self.eps();
        let mut y = x.clone();
        if let Some(j) = expand {
            y = cx.cna(&y, &format!("{p}.{j}"), eps, Conv2d::new(1, 0), Act::Silu)?;
        }
        let depthwise = Conv2d::new(b.stride, (b.kernel - 1) / 2).groups(b.hidden);
        y = cx.cna(&y, &format!("{p}.{dw}"), eps, depthwise, Act::Silu)?;
        y = cx.squeeze_excitation(&y, &format!("{p}.{se}"), Act::Silu, Act::Sigmoid)?;
        y = cx.cna(
            &y,
            &format!("{p}.{project}"),
            eps,
            Conv2d::new(1, 0),
            Act::None,
        )?;
        if b.residual() {
            let scope = p.strip_suffix(".block").unwrap_or(p);
            y = cx.graph.add(scope, &y, x)?;
        }
        Ok(y)
    }
}
