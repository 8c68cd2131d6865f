//! torchvision's ShuffleNetV2 (x0_5, x1_0, x1_5, x2_0). The channel shuffle is torchvision's
//! view to `[N, 2, C/2, H, W]`, transpose and view back; the channel split is its
//! `chunk(2, dim=1)`.

use super::layers::{conv_bn_keys, linear_keys};
use super::{
    count_from, dim_or, Context, Conv2d, Expected, Pool2d, StateDict, TorchvisionError, Value,
};

const BN_EPS: f64 = 1e-5;

/// torchvision's names: blocks per stage [4, 8, 4] and `stages_out_channels`.
const TABLE: [(&str, [u64; 5]); 4] = [
    ("shufflenet_v2_x0_5", [24, 48, 96, 192, 1024]),
    ("shufflenet_v2_x1_0", [24, 116, 232, 464, 1024]),
    ("shufflenet_v2_x1_5", [24, 176, 352, 704, 1024]),
    ("shufflenet_v2_x2_0", [24, 244, 488, 976, 2048]),
];
const REPEATS: [usize; 3] = [4, 8, 4];

/// The names this module builds.
pub const NAMES: [&str; 4] = [TABLE[0].0, TABLE[1].0, TABLE[2].0, TABLE[3].0];

/// One block: the first of a stage downsamples through two branches; the others split the
/// channels in half and transform the second half.
#[derive(Clone, Debug, PartialEq, Eq)]
struct BlockPlan {
    prefix: String,
    input: u64,
    /// Each branch's width (half the block's output).
    branch: u64,
    downsample: bool,
}

/// A ShuffleNetV2 with widths from the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShuffleNet {
    name: String,
    in_channels: u64,
    stem: u64,
    blocks: Vec<BlockPlan>,
    /// Output channels of `conv5`.
    last: u64,
    classes: u64,
}

/// The ShuffleNetV2 named `name`, or `None` for another family's name.
pub fn from_name(name: &str, sd: &StateDict) -> Result<Option<ShuffleNet>, TorchvisionError> {
    if !NAMES.contains(&name) {
        return Ok(None);
    }
    Ok(Some(plan(name.to_owned(), REPEATS, sd)))
}

/// A ShuffleNetV2 recognised from `stage2.0.branch1` and `conv5`; blocks per stage are
/// counted and the name comes from the widths.
pub fn detect(sd: &StateDict) -> Result<Option<ShuffleNet>, TorchvisionError> {
    if !(sd.has("stage2.0.branch1.0.weight") && sd.has("conv5.0.weight")) {
        return Ok(None);
    }
    let repeats: [usize; 3] = std::array::from_fn(|s| {
        count_from(sd, 0, |i| format!("stage{}.{i}.branch2.0.weight", s + 2))
    });
    let mut model = plan(String::new(), repeats, sd);
    let widths = model.widths();
    model.name = TABLE
        .iter()
        .find(|row| repeats == REPEATS && row.1 == widths)
        .map(|row| row.0.to_owned())
        .unwrap_or_else(|| format!("shufflenet_v2 (blocks {repeats:?}, widths {widths:?})"));
    Ok(Some(model))
}

/// Reads every width; a missing key takes its predecessor's width so that the strict check
/// afterwards lists every missing key.
fn plan(name: String, repeats: [usize; 3], sd: &StateDict) -> ShuffleNet {
    let stem = dim_or(sd, "conv1.0.weight", 0, 24);
    let mut blocks: Vec<BlockPlan> = Vec::new();
    let mut input = stem;
    for (s, &count) in repeats.iter().enumerate() {
        for i in 0..count {
            let prefix = format!("stage{}.{i}", s + 2);
            let branch = dim_or(sd, &format!("{prefix}.branch2.0.weight"), 0, input / 2);
            blocks.push(BlockPlan {
                prefix,
                input,
                branch,
                downsample: i == 0,
            });
            input = 2 * branch;
        }
    }
    ShuffleNet {
        name,
        in_channels: dim_or(sd, "conv1.0.weight", 1, 3),
        stem,
        blocks,
        last: dim_or(sd, "conv5.0.weight", 0, input),
        classes: dim_or(sd, "fc.weight", 0, 1000),
    }
}

impl ShuffleNet {
    pub fn name(&self) -> String {
        self.name.clone()
    }

    /// `stages_out_channels`: the stem, each stage's output, `conv5`.
    fn widths(&self) -> [u64; 5] {
        let mut widths = [self.stem, 0, 0, 0, self.last];
        let firsts = self.blocks.iter().filter(|b| b.downsample);
        for (w, b) in widths[1..4].iter_mut().zip(firsts) {
            *w = 2 * b.branch;
        }
        widths
    }

    pub fn expected(&self) -> Vec<Expected> {
        let mut keys = conv_bn_keys("conv1.0", "conv1.1", [self.stem, self.in_channels, 3, 3]);
        for b in &self.blocks {
            let p = &b.prefix;
            let (i, f) = (b.input, b.branch);
            let layer = |branch: &str, conv: usize, shape: [u64; 4]| {
                conv_bn_keys(
                    &format!("{p}.{branch}.{conv}"),
                    &format!("{p}.{branch}.{}", conv + 1),
                    shape,
                )
            };
            let branch2_in = if b.downsample { i } else { i / 2 };
            if b.downsample {
                keys.extend(layer("branch1", 0, [i, 1, 3, 3]));
                keys.extend(layer("branch1", 2, [f, i, 1, 1]));
            }
            keys.extend(layer("branch2", 0, [f, branch2_in, 1, 1]));
            keys.extend(layer("branch2", 3, [f, 1, 3, 3]));
            keys.extend(layer("branch2", 5, [f, f, 1, 1]));
        }
        let penultimate = self.blocks.last().map_or(self.stem, |b| 2 * b.branch);
        keys.extend(conv_bn_keys(
            "conv5.0",
            "conv5.1",
            [self.last, penultimate, 1, 1],
        ));
        keys.extend(linear_keys("fc", self.classes, self.last));
        keys
    }

    pub fn build(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, TorchvisionError> {
        let x = cx.conv_bn(input, "conv1.0", "conv1.1", BN_EPS, Conv2d::new(2, 1))?;
        let x = cx.graph.relu("conv1.2", &x);
        let mut x = cx.graph.max_pool("maxpool", &x, Pool2d::new(3, 2, 1))?;
        for b in &self.blocks {
            x = block(cx, &x, b)?;
        }
        let x = cx.conv_bn(&x, "conv5.0", "conv5.1", BN_EPS, Conv2d::new(1, 0))?;
        let x = cx.graph.relu("conv5.2", &x);
        let x = cx.graph.mean_spatial("", &x)?;
        cx.linear(&x, "fc")
    }
}

/// One `InvertedResidual`: two branches (downsampling) or a split with the second half
/// transformed, concatenated, then shuffled.
fn block(cx: &mut Context<'_>, x: &Value, b: &BlockPlan) -> Result<Value, TorchvisionError> {
    let p = &b.prefix;
    let stride = if b.downsample { 2 } else { 1 };
    let (left, right) = if b.downsample {
        let dw = Conv2d::new(stride, 1).groups(b.input);
        let sub = |i: usize| format!("{p}.branch1.{i}");
        let y = cx.conv_bn(x, &sub(0), &sub(1), BN_EPS, dw)?;
        let y = cx.conv_bn(&y, &sub(2), &sub(3), BN_EPS, Conv2d::new(1, 0))?;
        (cx.graph.relu(&sub(4), &y), x.clone())
    } else {
        let halves = cx.graph.chunk(p, x, 2, 0)?;
        let [first, second]: [Value; 2] =
            halves.try_into().map_err(|_| TorchvisionError::Shape {
                what: format!("{p}: the channel split did not give two halves"),
            })?;
        (first, second)
    };
    let sub = |i: usize| format!("{p}.branch2.{i}");
    let y = cx.conv_bn(&right, &sub(0), &sub(1), BN_EPS, Conv2d::new(1, 0))?;
    let y = cx.graph.relu(&sub(2), &y);
    let dw = Conv2d::new(stride, 1).groups(b.branch);
    let y = cx.conv_bn(&y, &sub(3), &sub(4), BN_EPS, dw)?;
    let y = cx.conv_bn(&y, &sub(5), &sub(6), BN_EPS, Conv2d::new(1, 0))?;
    let y = cx.graph.relu(&sub(7), &y);
    let out = cx.graph.concat(p, &[&left, &y], 0)?;
    cx.graph.channel_shuffle(p, &out, 2)
}
