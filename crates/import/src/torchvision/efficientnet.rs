//! torchvision's EfficientNet B0–B7 and EfficientNetV2 S/M/L: a SiLU stem, stages of
//! blocks, a 1×1 SiLU conv, a global average pool and one Linear. B0–B7's blocks are all
//! MBConv (optional 1×1 expand, depthwise conv, squeeze-and-excitation, 1×1 linear
//! projection); V2's first stages are FusedMBConv (one full k×k conv in place of the expand
//! and depthwise convs, then a 1×1 linear projection when it expands, no
//! squeeze-and-excitation). Every conv is followed by a BatchNorm; stochastic depth is the
//! identity in eval mode.
//!
//! A name fixes blocks per stage, which are counted from the keys; every width, kernel size,
//! whether a block expands and whether it is fused come from the checkpoint. Strides and
//! the BatchNorm epsilon are not in the weights: the first block of each stage has
//! torchvision's stride, and the epsilon is torchvision's for the name (1e-3 for B5–B7 and
//! V2, else 1e-5; for a non-standard variant 1e-3 when it has fused blocks, as V2 does).

use super::layers::{cna_keys, linear_keys, se_keys};
use super::{
    count_from, dim_or, Act, Context, Conv2d, Expected, StateDict, TorchvisionError, Value,
};

/// The stride of each stage's first block: every torchvision EfficientNet's stages take
/// these in order (`_efficientnet_conf`; V2-S has six stages, the others seven).
const STRIDES: [u64; 7] = [1, 2, 2, 2, 1, 2, 1];

/// The BatchNorms' epsilon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Eps {
    /// 1e-5, `nn.BatchNorm2d`'s default (B0–B4).
    E5,
    /// `eps=0.001` (B5–B7 and V2).
    E3,
}

impl Eps {
    fn value(self) -> f64 {
        match self {
            Eps::E5 => 1e-5,
            Eps::E3 => 1e-3,
        }
    }
}

/// The width of V2's last 1×1 conv (`last_channel`); B0–B7's is four times its input.
const V2_LAST: u64 = 1280;

/// One torchvision configuration.
struct Row {
    name: &'static str,
    stem: u64,
    /// Blocks per stage.
    blocks: &'static [usize],
    /// Each stage's output width.
    widths: &'static [u64],
    /// How many leading stages are FusedMBConv (V2's), for blocks whose first conv is
    /// missing from the checkpoint.
    fused: usize,
    eps: Eps,
}

const fn row(
    name: &'static str,
    stem: u64,
    blocks: &'static [usize],
    widths: &'static [u64],
    fused: usize,
    eps: Eps,
) -> Row {
    Row {
        name,
        stem,
        blocks,
        widths,
        fused,
        eps,
    }
}

/// `_efficientnet_conf`'s configurations (B0–B7 scaled by their width and depth factors).
#[rustfmt::skip]
const TABLE: [Row; 11] = {
    use Eps::{E3, E5};
    [
        row("efficientnet_b0", 32, &[1, 2, 2, 3, 3, 4, 1], &[16, 24, 40, 80, 112, 192, 320], 0, E5),
        row("efficientnet_b1", 32, &[2, 3, 3, 4, 4, 5, 2], &[16, 24, 40, 80, 112, 192, 320], 0, E5),
        row("efficientnet_b2", 32, &[2, 3, 3, 4, 4, 5, 2], &[16, 24, 48, 88, 120, 208, 352], 0, E5),
        row("efficientnet_b3", 40, &[2, 3, 3, 5, 5, 6, 2], &[24, 32, 48, 96, 136, 232, 384], 0, E5),
        row("efficientnet_b4", 48, &[2, 4, 4, 6, 6, 8, 2], &[24, 32, 56, 112, 160, 272, 448], 0, E5),
        row("efficientnet_b5", 48, &[3, 5, 5, 7, 7, 9, 3], &[24, 40, 64, 128, 176, 304, 512], 0, E3),
        row("efficientnet_b6", 56, &[3, 6, 6, 8, 8, 11, 3], &[32, 40, 72, 144, 200, 344, 576], 0, E3),
        row("efficientnet_b7", 64, &[4, 7, 7, 10, 10, 13, 4], &[32, 48, 80, 160, 224, 384, 640], 0, E3),
        row("efficientnet_v2_s", 24, &[2, 4, 4, 6, 9, 15], &[24, 48, 64, 128, 160, 256], 3, E3),
        row("efficientnet_v2_m", 24, &[3, 5, 5, 7, 14, 18, 5], &[24, 48, 80, 160, 176, 304, 512], 3, E3),
        row("efficientnet_v2_l", 32, &[4, 7, 7, 10, 19, 25, 7], &[32, 64, 96, 192, 224, 384, 640], 3, E3),
    ]
};

/// The names this module builds.
pub const NAMES: [&str; 11] = {
    let mut names = [""; 11];
    let mut i = 0;
    while i < TABLE.len() {
        names[i] = TABLE[i].name;
        i += 1;
    }
    names
};

/// What a block is, by its sub-modules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `MBConv`: optional 1×1 expand (`.0`), depthwise conv, squeeze-and-excitation
    /// squeezing to `squeeze` channels, 1×1 projection.
    MbConv { squeeze: u64 },
    /// `FusedMBConv`: a k×k conv with the stride (`.0`), then a 1×1 projection (`.1`) when
    /// it expands; no squeeze-and-excitation.
    Fused,
}

/// One block's widths.
#[derive(Clone, Debug, PartialEq, Eq)]
struct BlockPlan {
    /// `features.<stage>.<block>.block`.
    prefix: String,
    kind: Kind,
    /// Whether the block expands: MBConv's 1×1 expand conv, FusedMBConv's projection.
    expand: bool,
    input: u64,
    /// Expanded width (MBConv's depthwise width); `output` for a FusedMBConv that does
    /// not expand, `input` for an MBConv that does not.
    hidden: u64,
    output: u64,
    kernel: u64,
    stride: u64,
}

impl BlockPlan {
    /// An MBConv's sub-module indices: expand (if any), depthwise, SE, project.
    fn layout(&self) -> (Option<usize>, usize, usize, usize) {
        let dw = usize::from(self.expand);
        (self.expand.then_some(0), dw, dw + 1, dw + 2)
    }

    fn residual(&self) -> bool {
        self.stride == 1 && self.input == self.output
    }

    /// The k×k conv's hyper-parameters: the block's stride, "same" padding, `groups`.
    fn spatial(&self, groups: u64) -> Conv2d {
        Conv2d::new(self.stride, (self.kernel - 1) / 2).groups(groups)
    }
}

/// An EfficientNet with widths from the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EfficientNet {
    name: String,
    eps: Eps,
    in_channels: u64,
    stem: u64,
    stages: Vec<Vec<BlockPlan>>,
    /// Output width of the last 1×1 conv, the classifier's input.
    last: u64,
    classes: u64,
}

/// The EfficientNet named `name`, or `None` for another family's name.
pub fn from_name(name: &str, sd: &StateDict) -> Result<Option<EfficientNet>, TorchvisionError> {
    let Some(row) = TABLE.iter().find(|row| row.name == name) else {
        return Ok(None);
    };
    Ok(Some(plan(
        row.name.to_owned(),
        row.eps,
        row.blocks,
        row.fused,
        sd,
    )))
}

/// An EfficientNet recognised from `features.1.0.block` and `classifier.1`; it must have as
/// many stages as some name has (its strides are not in the weights), blocks per stage are
/// counted, and the name (hence the epsilon) comes from the stem width, the block counts
/// and the stage widths.
pub fn detect(sd: &StateDict) -> Result<Option<EfficientNet>, TorchvisionError> {
    let block = |s: usize, b: usize| format!("features.{s}.{b}.block.0.0.weight");
    if !(sd.has(&block(1, 0)) && sd.has("classifier.1.weight")) {
        return Ok(None);
    }
    let stages = count_from(sd, 1, |s| block(s, 0));
    if !TABLE.iter().any(|row| row.blocks.len() == stages) {
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
    let mut model = plan(String::new(), Eps::E5, &blocks, 0, sd);
    let widths: Vec<u64> = model
        .stages
        .iter()
        .map(|s| s.last().map_or(0, |b| b.output))
        .collect();
    let row = TABLE.iter().find(|row| {
        row.stem == model.stem && row.blocks == blocks.as_slice() && row.widths == widths.as_slice()
    });
    match row {
        Some(row) => {
            model.name = row.name.to_owned();
            model.eps = row.eps;
        }
        None if model.fused() => {
            model.name = format!("efficientnet_v2 (blocks {blocks:?}, widths {widths:?})");
            model.eps = Eps::E3;
        }
        None => {
            model.name = format!("efficientnet (blocks {blocks:?}, widths {widths:?})");
        }
    }
    Ok(Some(model))
}

/// Reads every width; a missing key takes its predecessor's width so that the strict check
/// afterwards lists every missing key. The first `fused` stages' blocks are FusedMBConv
/// where a block's first conv is missing.
fn plan(name: String, eps: Eps, blocks: &[usize], fused: usize, sd: &StateDict) -> EfficientNet {
    let stem = dim_or(sd, "features.0.0.weight", 0, 32);
    let mut input = stem;
    let mut stages = Vec::new();
    let mut any_fused = false;
    for (s, (&count, &stride)) in blocks.iter().zip(STRIDES.iter()).enumerate() {
        let mut plans = Vec::new();
        for b in 0..count {
            let block = plan_block(
                sd,
                format!("features.{}.{b}.block", s + 1),
                input,
                s < fused,
            );
            let block = BlockPlan {
                stride: if b == 0 { stride } else { 1 },
                ..block
            };
            any_fused |= block.kind == Kind::Fused;
            input = block.output;
            plans.push(block);
        }
        stages.push(plans);
    }
    let last_key = format!("features.{}.0.weight", blocks.len() + 1);
    let last = if any_fused { V2_LAST } else { 4 * input };
    EfficientNet {
        name,
        eps,
        in_channels: dim_or(sd, "features.0.0.weight", 1, 3),
        stem,
        stages,
        last: dim_or(sd, &last_key, 0, last),
        classes: dim_or(sd, "classifier.1.weight", 0, 1000),
    }
}

/// Block `prefix` taking `input` channels (stride 1; the caller sets a stage's first).
/// It is a FusedMBConv when its first conv is neither 1×1 (MBConv's expand) nor depthwise
/// (one input channel per group: MBConv without expand), or, when that conv is missing,
/// when `fused`.
fn plan_block(sd: &StateDict, prefix: String, input: u64, fused: bool) -> BlockPlan {
    let first = sd.shape(&format!("{prefix}.0.0.weight"));
    let fused = first.map_or(fused, |s| {
        s.get(1) != Some(&1) && s.get(2..) != Some(&[1, 1][..])
    });
    let mut block = BlockPlan {
        kind: Kind::Fused,
        expand: false,
        input,
        hidden: input,
        output: input,
        kernel: 3,
        stride: 1,
        prefix,
    };
    let p = &block.prefix;
    if fused {
        block.kernel = dim_or(sd, &format!("{p}.0.0.weight"), 2, 3);
        block.hidden = dim_or(sd, &format!("{p}.0.0.weight"), 0, input);
        block.expand = sd.has(&format!("{p}.1.0.weight"));
        block.output = if block.expand {
            dim_or(sd, &format!("{p}.1.0.weight"), 0, input)
        } else {
            block.hidden
        };
        return block;
    }
    // The first conv is the expand conv iff it is 1×1 (the depthwise one is 3×3 or 5×5).
    block.expand = first.is_none_or(|s| s.get(2..) == Some(&[1, 1][..]));
    let (expand, dw, se, project) = block.layout();
    if let Some(j) = expand {
        block.hidden = dim_or(sd, &format!("{p}.{j}.0.weight"), 0, input);
    }
    block.kernel = dim_or(sd, &format!("{p}.{dw}.0.weight"), 2, 3);
    block.kind = Kind::MbConv {
        squeeze: dim_or(sd, &format!("{p}.{se}.fc1.weight"), 0, block.hidden),
    };
    block.output = dim_or(sd, &format!("{p}.{project}.0.weight"), 0, input);
    block
}

impl EfficientNet {
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// Whether any block is a FusedMBConv (an EfficientNetV2).
    fn fused(&self) -> bool {
        self.stages.iter().flatten().any(|b| b.kind == Kind::Fused)
    }

    fn last_prefix(&self) -> String {
        format!("features.{}", self.stages.len() + 1)
    }

    pub fn expected(&self) -> Vec<Expected> {
        let mut keys = cna_keys("features.0", [self.stem, self.in_channels, 3, 3]);
        let mut width = self.stem;
        for b in self.stages.iter().flatten() {
            keys.extend(block_keys(b));
            width = b.output;
        }
        keys.extend(cna_keys(&self.last_prefix(), [self.last, width, 1, 1]));
        keys.extend(linear_keys("classifier.1", self.classes, self.last));
        keys
    }

    pub fn build(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, TorchvisionError> {
        let mut x = cx.cna(
            input,
            "features.0",
            self.eps.value(),
            Conv2d::new(2, 1),
            Act::Silu,
        )?;
        for b in self.stages.iter().flatten() {
            x = self.block(cx, &x, b)?;
        }
        let x = cx.cna(
            &x,
            &self.last_prefix(),
            self.eps.value(),
            Conv2d::new(1, 0),
            Act::Silu,
        )?;
        let x = cx.pool_flatten("avgpool", &x)?;
        cx.linear(&x, "classifier.1")
    }

    /// Block `b`; the residual's stochastic depth is the identity in eval mode.
    fn block(
        &self,
        cx: &mut Context<'_>,
        x: &Value,
        b: &BlockPlan,
    ) -> Result<Value, TorchvisionError> {
        let p = &b.prefix;
        let eps = self.eps.value();
        let pointwise = Conv2d::new(1, 0);
        let mut y = x.clone();
        match b.kind {
            Kind::MbConv { .. } => {
                let (expand, dw, se, project) = b.layout();
                if let Some(j) = expand {
                    y = cx.cna(&y, &format!("{p}.{j}"), eps, pointwise, Act::Silu)?;
                }
                y = cx.cna(
                    &y,
                    &format!("{p}.{dw}"),
                    eps,
                    b.spatial(b.hidden),
                    Act::Silu,
                )?;
                y = cx.squeeze_excitation(&y, &format!("{p}.{se}"), Act::Silu, Act::Sigmoid)?;
                y = cx.cna(&y, &format!("{p}.{project}"), eps, pointwise, Act::None)?;
            }
            Kind::Fused => {
                y = cx.cna(&y, &format!("{p}.0"), eps, b.spatial(1), Act::Silu)?;
                if b.expand {
                    y = cx.cna(&y, &format!("{p}.1"), eps, pointwise, Act::None)?;
                }
            }
        }
        if b.residual() {
            let scope = p.strip_suffix(".block").unwrap_or(p);
            y = cx.graph.add(scope, &y, x)?;
        }
        Ok(y)
    }
}

/// Every key of block `b`.
fn block_keys(b: &BlockPlan) -> Vec<Expected> {
    let p = &b.prefix;
    let k = b.kernel;
    let mut keys = Vec::new();
    match b.kind {
        Kind::MbConv { squeeze } => {
            let (expand, dw, se, project) = b.layout();
            if let Some(j) = expand {
                keys.extend(cna_keys(&format!("{p}.{j}"), [b.hidden, b.input, 1, 1]));
            }
            keys.extend(cna_keys(&format!("{p}.{dw}"), [b.hidden, 1, k, k]));
            keys.extend(se_keys(&format!("{p}.{se}"), b.hidden, squeeze));
            keys.extend(cna_keys(
                &format!("{p}.{project}"),
                [b.output, b.hidden, 1, 1],
            ));
        }
        Kind::Fused => {
            keys.extend(cna_keys(&format!("{p}.0"), [b.hidden, b.input, k, k]));
            if b.expand {
                keys.extend(cna_keys(&format!("{p}.1"), [b.output, b.hidden, 1, 1]));
            }
        }
    }
    keys
}
