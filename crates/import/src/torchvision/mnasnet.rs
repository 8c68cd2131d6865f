//! torchvision's MNASNet (mnasnet0_5/0_75/1_0/1_3, the B1 variant): a stem of conv,
//! depthwise conv and 1×1 projection, six stacks of inverted residuals (1×1 expand,
//! depthwise, 1×1 linear projection, ReLU after the first two), a 1×1 conv to the head
//! width, a global mean and one Linear. Every conv is followed by a BatchNorm that folds
//! into it.
//!
//! The four names share one topology; every width (including the stem, which version-1
//! checkpoints keep at 32/16 for every `alpha`), every expansion and every kernel size comes
//! from the checkpoint. Strides are not in the weights: the first block of each stack has
//! torchvision's stride.

use super::layers::{conv_bn_keys, linear_keys};
use super::{count_from, dim_or, Context, Conv2d, Expected, StateDict, TorchvisionError, Value};

const BN_EPS: f64 = 1e-5;

/// The stride of each stack's first block, from torchvision's `_stack` calls.
const STRIDES: [u64; 6] = [2, 2, 2, 1, 2, 1];

/// torchvision's blocks per stack.
const REPEATS: [usize; 6] = [3, 3, 3, 2, 4, 1];

/// torchvision's names with each stack's output width (`_get_depths(alpha)[2..]`).
const TABLE: [(&str, [u64; 6]); 4] = [
    ("mnasnet0_5", [16, 24, 48, 48, 96, 160]),
    ("mnasnet0_75", [24, 32, 64, 72, 144, 240]),
    ("mnasnet1_0", [24, 40, 80, 96, 192, 320]),
    ("mnasnet1_3", [32, 56, 104, 128, 248, 416]),
];

/// The names this module builds.
pub const NAMES: [&str; 4] = [TABLE[0].0, TABLE[1].0, TABLE[2].0, TABLE[3].0];

/// The `nn.Sequential` index of the first stack inside `layers`.
const FIRST_STACK: usize = 8;

/// One inverted residual's widths.
#[derive(Clone, Debug, PartialEq, Eq)]
struct BlockPlan {
    /// `layers.<stack>.<block>`.
    prefix: String,
    input: u64,
    /// Expanded (depthwise) width.
    hidden: u64,
    output: u64,
    kernel: u64,
    stride: u64,
}

impl BlockPlan {
    fn residual(&self) -> bool {
        self.stride == 1 && self.input == self.output
    }
}

/// An MNASNet with widths from the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MnasNet {
    name: String,
    in_channels: u64,
    /// Output width of the stem's first conv (and of its depthwise conv).
    stem: u64,
    /// Output width of the stem's 1×1 projection.
    stem_out: u64,
    stacks: Vec<Vec<BlockPlan>>,
    /// Output width of the last 1×1 conv (`layers.<n>`), the classifier's input.
    last: u64,
    classes: u64,
}

/// The MNASNet named `name`, or `None` for another family's name.
pub fn from_name(name: &str, sd: &StateDict) -> Result<Option<MnasNet>, TorchvisionError> {
    let Some(&(name, _)) = TABLE.iter().find(|row| row.0 == name) else {
        return Ok(None);
    };
    Ok(Some(plan(name.to_owned(), &REPEATS, sd)))
}

/// An MNASNet recognised from `layers.8.0.layers.0` and `classifier.1`; blocks per stack
/// are counted, there must be six stacks, and the name comes from the stack widths.
pub fn detect(sd: &StateDict) -> Result<Option<MnasNet>, TorchvisionError> {
    let block = |s: usize, b: usize| format!("layers.{s}.{b}.layers.0.weight");
    if !(sd.has(&block(FIRST_STACK, 0)) && sd.has("classifier.1.weight")) {
        return Ok(None);
    }
    let stacks = count_from(sd, FIRST_STACK, |s| block(s, 0));
    if stacks != STRIDES.len() {
        return Err(TorchvisionError::Arch {
            what: format!(
                "an MNASNet with {stacks} stacks matches none of {}; its strides are not in \
                 the weights",
                NAMES.join(", ")
            ),
        });
    }
    let repeats: Vec<usize> = (0..stacks)
        .map(|s| count_from(sd, 0, |b| block(FIRST_STACK + s, b)))
        .collect();
    let mut model = plan(String::new(), &repeats, sd);
    let widths: Vec<u64> = model
        .stacks
        .iter()
        .map(|s| s.last().map_or(0, |b| b.output))
        .collect();
    model.name = TABLE
        .iter()
        .find(|row| row.1.as_slice() == widths && repeats == REPEATS && model.last == 1280)
        .map(|row| row.0.to_owned())
        .unwrap_or_else(|| format!("mnasnet (blocks {repeats:?}, widths {widths:?})"));
    Ok(Some(model))
}

/// Reads every width; a missing key takes its predecessor's width so that the strict check
/// afterwards lists every missing key.
fn plan(name: String, repeats: &[usize], sd: &StateDict) -> MnasNet {
    let stem = dim_or(sd, "layers.0.weight", 0, 32);
    let stem_out = dim_or(sd, "layers.6.weight", 0, 16);
    let mut input = stem_out;
    let mut stacks = Vec::new();
    for (s, (&count, &stride)) in repeats.iter().zip(STRIDES.iter()).enumerate() {
        let mut blocks = Vec::new();
        for b in 0..count {
            let prefix = format!("layers.{}.{b}", FIRST_STACK + s);
            let hidden = dim_or(sd, &format!("{prefix}.layers.0.weight"), 0, input);
            let kernel = dim_or(sd, &format!("{prefix}.layers.3.weight"), 2, 3);
            let output = dim_or(sd, &format!("{prefix}.layers.6.weight"), 0, input);
            blocks.push(BlockPlan {
                prefix,
                input,
                hidden,
                output,
                kernel,
                stride: if b == 0 { stride } else { 1 },
            });
            input = output;
        }
        stacks.push(blocks);
    }
    let last_key = format!("layers.{}.weight", FIRST_STACK + repeats.len());
    MnasNet {
        name,
        in_channels: dim_or(sd, "layers.0.weight", 1, 3),
        stem,
        stem_out,
        stacks,
        last: dim_or(sd, &last_key, 0, 1280),
        classes: dim_or(sd, "classifier.1.weight", 0, 1000),
    }
}

/// A bias-free conv at `layers.<conv>` and its BatchNorm at `layers.<conv + 1>`.
fn layer_keys(prefix: &str, conv: usize, shape: [u64; 4]) -> Vec<Expected> {
    conv_bn_keys(
        &format!("{prefix}.{conv}"),
        &format!("{prefix}.{}", conv + 1),
        shape,
    )
}

impl MnasNet {
    pub fn name(&self) -> String {
        self.name.clone()
    }

    fn last_index(&self) -> usize {
        FIRST_STACK + self.stacks.len()
    }

    pub fn expected(&self) -> Vec<Expected> {
        let mut keys = layer_keys("layers", 0, [self.stem, self.in_channels, 3, 3]);
        keys.extend(layer_keys("layers", 3, [self.stem, 1, 3, 3]));
        keys.extend(layer_keys("layers", 6, [self.stem_out, self.stem, 1, 1]));
        let mut width = self.stem_out;
        for b in self.stacks.iter().flatten() {
            let p = format!("{}.layers", b.prefix);
            let k = b.kernel;
            keys.extend(layer_keys(&p, 0, [b.hidden, b.input, 1, 1]));
            keys.extend(layer_keys(&p, 3, [b.hidden, 1, k, k]));
            keys.extend(layer_keys(&p, 6, [b.output, b.hidden, 1, 1]));
            width = b.output;
        }
        keys.extend(layer_keys(
            "layers",
            self.last_index(),
            [self.last, width, 1, 1],
        ));
        keys.extend(linear_keys("classifier.1", self.classes, self.last));
        keys
    }

    pub fn build(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, TorchvisionError> {
        let x = conv_bn(cx, input, "layers", 0, Conv2d::new(2, 1))?;
        let x = cx.graph.relu("layers.2", &x);
        let x = conv_bn(cx, &x, "layers", 3, Conv2d::new(1, 1).groups(self.stem))?;
        let x = cx.graph.relu("layers.5", &x);
        let mut x = conv_bn(cx, &x, "layers", 6, Conv2d::new(1, 0))?;
        for b in self.stacks.iter().flatten() {
            x = block(cx, &x, b)?;
        }
        let last = self.last_index();
        let x = conv_bn(cx, &x, "layers", last, Conv2d::new(1, 0))?;
        let x = cx.graph.relu(&format!("layers.{}", last + 2), &x);
        // `x.mean([2, 3])`.
        let x = cx.pool_flatten("mean", &x)?;
        cx.linear(&x, "classifier.1")
    }
}

/// `_InvertedResidual` `b`: expand + ReLU, depthwise + ReLU, projection, then the skip.
fn block(cx: &mut Context<'_>, x: &Value, b: &BlockPlan) -> Result<Value, TorchvisionError> {
    let p = format!("{}.layers", b.prefix);
    let y = conv_bn(cx, x, &p, 0, Conv2d::new(1, 0))?;
    let y = cx.graph.relu(&format!("{p}.2"), &y);
    let depthwise = Conv2d::new(b.stride, b.kernel / 2).groups(b.hidden);
    let y = conv_bn(cx, &y, &p, 3, depthwise)?;
    let y = cx.graph.relu(&format!("{p}.5"), &y);
    let y = conv_bn(cx, &y, &p, 6, Conv2d::new(1, 0))?;
    if b.residual() {
        cx.graph.add(&b.prefix, &y, x)
    } else {
        Ok(y)
    }
}

/// Conv `<prefix>.<conv>` with BatchNorm `<prefix>.<conv + 1>` folded in.
fn conv_bn(
    cx: &mut Context<'_>,
    x: &Value,
    prefix: &str,
    conv: usize,
    p: Conv2d,
) -> Result<Value, TorchvisionError> {
    let (c, bn) = (format!("{prefix}.{conv}"), format!("{prefix}.{}", conv + 1));
    cx.conv_bn(x, &c, &bn, BN_EPS, p)
}
