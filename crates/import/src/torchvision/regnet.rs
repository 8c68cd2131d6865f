//! torchvision's RegNet family: RegNetX (no squeeze-and-excitation) and RegNetY (with it).
//! A `SimpleStemIN` (3×3 stride-2 conv, BN, ReLU), stages of `ResBottleneckBlock`s, a
//! global average pool and one Linear. A block is `ReLU(shortcut(x) + f(x))` with
//! `f = a (1×1, BN, ReLU) → b (grouped 3×3, BN, ReLU) → [se] → c (1×1, BN)` and the
//! shortcut a 1×1 conv + BN (`proj`) when the block changes width or stride, else `x`.
//! Every BatchNorm follows a conv and folds into it.
//!
//! A name fixes the topology: blocks per stage and whether blocks have SE. Every width
//! (stem, stage, bottleneck, SE squeeze), every group count (the bottleneck width over the
//! 3×3 weight's input channels) and the class count come from the checkpoint. Strides are
//! not in the weights: the first block of every stage has stride 2, as torchvision's
//! `BlockParams.from_init_params` gives every RegNet.

use super::layers::{cna_keys, linear_keys, se_keys};
use super::{
    count_from, dim_or, Act, Context, Conv2d, Expected, StateDict, TorchvisionError, Value,
};

/// `nn.BatchNorm2d`'s default epsilon, which `_regnet` passes explicitly.
const BN_EPS: f64 = 1e-5;
/// The stride of each stage's first block.
const STAGE_STRIDE: u64 = 2;
/// torchvision's `stem_width` for every named RegNet.
const STEM: u64 = 32;

/// A torchvision RegNet: its name, whether its blocks have SE (Y) or not (X), blocks per
/// stage, stage (output) widths and group widths (channels per group of the 3×3 conv).
struct Standard {
    name: &'static str,
    se: bool,
    depths: [usize; 4],
    widths: [u64; 4],
    group_widths: [u64; 4],
}

const fn x(name: &'static str, depths: [usize; 4], widths: [u64; 4], gw: u64) -> Standard {
    Standard {
        name,
        se: false,
        depths,
        widths,
        group_widths: [gw; 4],
    }
}

const fn y(name: &'static str, depths: [usize; 4], widths: [u64; 4], gw: u64) -> Standard {
    Standard {
        se: true,
        ..x(name, depths, widths, gw)
    }
}

/// What torchvision 0.28's `regnet_*` builders compute from their `from_init_params`
/// arguments (regnet_x_8gf's first stage is narrower than its group width, so its group
/// width there is the stage width).
const TABLE: [Standard; 15] = [
    x("regnet_x_400mf", [1, 2, 7, 12], [32, 64, 160, 400], 16),
    x("regnet_x_800mf", [1, 3, 7, 5], [64, 128, 288, 672], 16),
    x("regnet_x_1_6gf", [2, 4, 10, 2], [72, 168, 408, 912], 24),
    x("regnet_x_3_2gf", [2, 6, 15, 2], [96, 192, 432, 1008], 48),
    Standard {
        group_widths: [80, 120, 120, 120],
        ..x("regnet_x_8gf", [2, 5, 15, 1], [80, 240, 720, 1920], 120)
    },
    x("regnet_x_16gf", [2, 6, 13, 1], [256, 512, 896, 2048], 128),
    x("regnet_x_32gf", [2, 7, 13, 1], [336, 672, 1344, 2520], 168),
    y("regnet_y_400mf", [1, 3, 6, 6], [48, 104, 208, 440], 8),
    y("regnet_y_800mf", [1, 3, 8, 2], [64, 144, 320, 784], 16),
    y("regnet_y_1_6gf", [2, 6, 17, 2], [48, 120, 336, 888], 24),
    y("regnet_y_3_2gf", [2, 5, 13, 1], [72, 216, 576, 1512], 24),
    y("regnet_y_8gf", [2, 4, 10, 1], [224, 448, 896, 2016], 56),
    y("regnet_y_16gf", [2, 4, 11, 1], [224, 448, 1232, 3024], 112),
    y("regnet_y_32gf", [2, 5, 12, 1], [232, 696, 1392, 3712], 232),
    y(
        "regnet_y_128gf",
        [2, 7, 17, 1],
        [528, 1056, 2904, 7392],
        264,
    ),
];

/// The names this module builds.
pub const NAMES: [&str; 15] = [
    TABLE[0].name,
    TABLE[1].name,
    TABLE[2].name,
    TABLE[3].name,
    TABLE[4].name,
    TABLE[5].name,
    TABLE[6].name,
    TABLE[7].name,
    TABLE[8].name,
    TABLE[9].name,
    TABLE[10].name,
    TABLE[11].name,
    TABLE[12].name,
    TABLE[13].name,
    TABLE[14].name,
];

/// One `ResBottleneckBlock`'s channel plan.
#[derive(Clone, Debug, PartialEq, Eq)]
struct BlockPlan {
    /// `trunk_output.block<s>.block<s>-<i>`.
    prefix: String,
    input: u64,
    /// Width of `f.a`, `f.b` and the SE gate (`width_out · bottleneck_multiplier`).
    bottleneck: u64,
    /// Groups of the 3×3 conv `f.b`; divides `bottleneck`.
    groups: u64,
    /// SE squeeze width (`fc1`'s outputs), for RegNetY.
    squeeze: Option<u64>,
    output: u64,
    stride: u64,
}

impl BlockPlan {
    /// Whether the shortcut is `proj` (torchvision: width or stride changes).
    fn projects(&self) -> bool {
        self.input != self.output || self.stride != 1
    }
}

/// A RegNet with every width and group count taken from the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegNet {
    name: String,
    in_channels: u64,
    stem: u64,
    /// Blocks stage by stage; every stage has at least one.
    stages: Vec<Vec<BlockPlan>>,
    classes: u64,
}

/// The RegNet named `name` (blocks per stage and SE from the name, widths from `sd`), or
/// `None` for another family's name.
pub fn from_name(name: &str, sd: &StateDict) -> Result<Option<RegNet>, TorchvisionError> {
    let Some(row) = TABLE.iter().find(|row| row.name == name) else {
        return Ok(None);
    };
    plan(row.name.to_owned(), &row.depths, row.se, sd).map(Some)
}

/// Key of block `i` of stage `s` (both as torchvision numbers them: stages from 1).
fn block_prefix(s: usize, i: usize) -> String {
    format!("trunk_output.block{s}.block{s}-{i}")
}

/// A RegNet recognised from `stem.0`, `trunk_output.block1.block1-0` and `fc`, or `None`.
/// Stages and blocks per stage are counted from the keys and SE is present iff the first
/// block has `f.se`; the name is torchvision's when the topology, stem, stage widths and
/// group widths all match one, else a description.
pub fn detect(sd: &StateDict) -> Result<Option<RegNet>, TorchvisionError> {
    let first_conv = |s: usize, i: usize| format!("{}.f.a.0.weight", block_prefix(s, i));
    let looks_like = sd.has("stem.0.weight") && sd.has(&first_conv(1, 0)) && sd.has("fc.weight");
    if !looks_like {
        return Ok(None);
    }
    let se = sd.has(&format!("{}.f.se.fc1.weight", block_prefix(1, 0)));
    let stages = count_from(sd, 1, |s| first_conv(s, 0));
    let depths: Vec<usize> = (1..=stages)
        .map(|s| count_from(sd, 0, |i| first_conv(s, i)))
        .collect();
    let mut model = plan(String::new(), &depths, se, sd)?;
    model.name = match TABLE.iter().find(|row| model.is_standard(row)) {
        Some(row) => row.name.to_owned(),
        None => {
            let kind = if se { 'y' } else { 'x' };
            let widths: Vec<u64> = model.stage_outputs().collect();
            format!("regnet_{kind} (depths {depths:?}, widths {widths:?})")
        }
    };
    Ok(Some(model))
}

/// Reads every width and group count from `sd` for the given topology. A missing key takes
/// its predecessor's width, so that the strict check afterwards lists every missing key
/// instead of stopping at the first; a 3×3 weight whose input channels do not divide the
/// bottleneck width is an error.
fn plan(
    name: String,
    depths: &[usize],
    se: bool,
    sd: &StateDict,
) -> Result<RegNet, TorchvisionError> {
    let stem = dim_or(sd, "stem.0.weight", 0, STEM);
    let mut input = stem;
    let mut stages = Vec::with_capacity(depths.len());
    for (s, &depth) in depths.iter().enumerate() {
        let mut blocks: Vec<BlockPlan> = Vec::with_capacity(depth);
        for i in 0..depth {
            let block = plan_block(sd, block_prefix(s + 1, i), input, blocks.last(), se)?;
            input = block.output;
            blocks.push(block);
        }
        stages.push(blocks);
    }
    Ok(RegNet {
        name,
        in_channels: dim_or(sd, "stem.0.weight", 1, 3),
        stem,
        stages,
        classes: dim_or(sd, "fc.weight", 0, 1000),
    })
}

/// Block `prefix` taking `input` channels; `previous` is the block before it in the same
/// stage (none for a stage's first block, which has the stage stride).
fn plan_block(
    sd: &StateDict,
    prefix: String,
    input: u64,
    previous: Option<&BlockPlan>,
    se: bool,
) -> Result<BlockPlan, TorchvisionError> {
    let p = &prefix;
    let bottleneck = dim_or(
        sd,
        &format!("{p}.f.a.0.weight"),
        0,
        previous.map_or(input, |b| b.bottleneck),
    );
    let per_group = dim_or(sd, &format!("{p}.f.b.0.weight"), 1, bottleneck);
    // At least one group: a zero-width bottleneck would make every group count zero.
    if per_group == 0 || bottleneck < per_group || !bottleneck.is_multiple_of(per_group) {
        return Err(TorchvisionError::Shape {
            what: format!(
                "`{p}.f.b.0.weight` has {per_group} input channels per group, which does not \
                 divide the bottleneck width {bottleneck} into groups"
            ),
        });
    }
    let squeeze = se.then(|| {
        let fallback = previous
            .and_then(|b| b.squeeze)
            .unwrap_or(input.div_ceil(4));
        dim_or(sd, &format!("{p}.f.se.fc1.weight"), 0, fallback)
    });
    let output = dim_or(
        sd,
        &format!("{p}.f.c.0.weight"),
        0,
        previous.map_or(bottleneck, |b| b.output),
    );
    Ok(BlockPlan {
        groups: bottleneck / per_group,
        stride: if previous.is_some() { 1 } else { STAGE_STRIDE },
        prefix,
        input,
        bottleneck,
        squeeze,
        output,
    })
}

impl RegNet {
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// Each stage's output width.
    fn stage_outputs(&self) -> impl Iterator<Item = u64> + '_ {
        self.stages
            .iter()
            .map(|blocks| blocks.last().map_or(0, |b| b.output))
    }

    /// Whether this model is torchvision's `row`: same SE, stem, blocks per stage, stage
    /// widths, group widths, and a bottleneck multiplier of 1.
    fn is_standard(&self, row: &Standard) -> bool {
        let se = self.blocks().all(|b| b.squeeze.is_some() == row.se);
        let bottleneck = self.blocks().all(|b| b.bottleneck == b.output);
        let depths = self.stages.iter().map(Vec::len).eq(row.depths);
        let widths = self.stage_outputs().eq(row.widths);
        let group_widths = self
            .stages
            .iter()
            .map(|blocks| blocks.first().map_or(0, |b| b.bottleneck / b.groups))
            .eq(row.group_widths);
        se && bottleneck && depths && widths && group_widths && self.stem == STEM
    }

    fn blocks(&self) -> impl Iterator<Item = &BlockPlan> {
        self.stages.iter().flatten()
    }

    pub fn expected(&self) -> Vec<Expected> {
        let mut keys = cna_keys("stem", [self.stem, self.in_channels, 3, 3]);
        for b in self.blocks() {
            keys.extend(block_keys(b));
        }
        let last = self.blocks().last().map_or(self.stem, |b| b.output);
        keys.extend(linear_keys("fc", self.classes, last));
        keys
    }

    pub fn build(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, TorchvisionError> {
        let mut x = cx.cna(input, "stem", BN_EPS, Conv2d::new(2, 1), Act::Relu)?;
        for b in self.blocks() {
            x = block(cx, &x, b)?;
        }
        let x = cx.pool_flatten("avgpool", &x)?;
        cx.linear(&x, "fc")
    }
}

/// Every key of block `b`: `proj` when it projects, `f.a`, `f.b`, `f.se` for RegNetY, `f.c`.
fn block_keys(b: &BlockPlan) -> Vec<Expected> {
    let p = &b.prefix;
    let mut keys = Vec::new();
    if b.projects() {
        keys.extend(cna_keys(&format!("{p}.proj"), [b.output, b.input, 1, 1]));
    }
    keys.extend(cna_keys(&format!("{p}.f.a"), [b.bottleneck, b.input, 1, 1]));
    let per_group = b.bottleneck / b.groups;
    keys.extend(cna_keys(
        &format!("{p}.f.b"),
        [b.bottleneck, per_group, 3, 3],
    ));
    if let Some(squeeze) = b.squeeze {
        keys.extend(se_keys(&format!("{p}.f.se"), b.bottleneck, squeeze));
    }
    keys.extend(cna_keys(
        &format!("{p}.f.c"),
        [b.output, b.bottleneck, 1, 1],
    ));
    keys
}

/// `ResBottleneckBlock` `b`: `ReLU(shortcut(x) + f(x))`.
fn block(cx: &mut Context<'_>, x: &Value, b: &BlockPlan) -> Result<Value, TorchvisionError> {
    let p = &b.prefix;
    let f = |name: &str| format!("{p}.f.{name}");
    let y = cx.cna(x, &f("a"), BN_EPS, Conv2d::new(1, 0), Act::Relu)?;
    let grouped = Conv2d::new(b.stride, 1).groups(b.groups);
    let mut y = cx.cna(&y, &f("b"), BN_EPS, grouped, Act::Relu)?;
    if b.squeeze.is_some() {
        y = cx.squeeze_excitation(&y, &f("se"), Act::Relu, Act::Sigmoid)?;
    }
    let y = cx.cna(&y, &f("c"), BN_EPS, Conv2d::new(1, 0), Act::None)?;
    let shortcut = if b.projects() {
        let proj = format!("{p}.proj");
        cx.cna(x, &proj, BN_EPS, Conv2d::new(b.stride, 0), Act::None)?
    } else {
        x.clone()
    };
    let sum = cx.graph.add(p, &shortcut, &y)?;
    Ok(cx.graph.relu(&format!("{p}.activation"), &sum))
}

#[cfg(test)]
mod tests {
    use super::TABLE;

    #[test]
    fn table_names_are_unique_and_x_has_no_se() {
        for (i, row) in TABLE.iter().enumerate() {
            assert!(TABLE[..i].iter().all(|other| other.name != row.name));
            assert_eq!(row.se, row.name.starts_with("regnet_y"), "{}", row.name);
        }
    }
}
