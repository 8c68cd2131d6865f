//! torchvision's ResNet family: resnet18–152, ResNeXt and Wide ResNet (v1.5: the stride of a
//! Bottleneck sits on its 3×3 conv).

use super::layers::{conv_bn_keys, linear_keys};
use super::{dim_or, Context, Conv2d, Expected, Pool2d, StateDict, TorchvisionError, Value};

/// `nn.BatchNorm2d`'s default epsilon, which torchvision's ResNets use.
const BN_EPS: f64 = 1e-5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    Basic,
    Bottleneck,
}

/// torchvision's names: (name, block, blocks per stage, groups, width per group).
const TABLE: [(&str, Block, [usize; 4], u64, u64); 10] = [
    ("resnet18", Block::Basic, [2, 2, 2, 2], 1, 64),
    ("resnet34", Block::Basic, [3, 4, 6, 3], 1, 64),
    ("resnet50", Block::Bottleneck, [3, 4, 6, 3], 1, 64),
    ("resnet101", Block::Bottleneck, [3, 4, 23, 3], 1, 64),
    ("resnet152", Block::Bottleneck, [3, 8, 36, 3], 1, 64),
    ("resnext50_32x4d", Block::Bottleneck, [3, 4, 6, 3], 32, 4),
    ("resnext101_32x8d", Block::Bottleneck, [3, 4, 23, 3], 32, 8),
    ("resnext101_64x4d", Block::Bottleneck, [3, 4, 23, 3], 64, 4),
    ("wide_resnet50_2", Block::Bottleneck, [3, 4, 6, 3], 1, 128),
    ("wide_resnet101_2", Block::Bottleneck, [3, 4, 23, 3], 1, 128),
];

/// The names this module builds.
pub const NAMES: [&str; 10] = [
    TABLE[0].0, TABLE[1].0, TABLE[2].0, TABLE[3].0, TABLE[4].0, TABLE[5].0, TABLE[6].0, TABLE[7].0,
    TABLE[8].0, TABLE[9].0,
];

/// One residual block's channel plan.
#[derive(Clone, Debug, PartialEq, Eq)]
struct BlockPlan {
    prefix: String,
    input: u64,
    /// Output channels of the first conv (Bottleneck: its 3×3 width).
    width: u64,
    output: u64,
    stride: u64,
    groups: u64,
    downsample: bool,
}

/// A ResNet-family model with every width taken from the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResNet {
    name: String,
    block: Block,
    in_channels: u64,
    stem: u64,
    blocks: Vec<BlockPlan>,
    classes: u64,
}

/// The ResNet named `name` (topology from the name, widths from `sd`), or `None` for
/// another family's name.
pub fn from_name(name: &str, sd: &StateDict) -> Result<Option<ResNet>, TorchvisionError> {
    let Some(&(name, block, layers, _, _)) = TABLE.iter().find(|row| row.0 == name) else {
        return Ok(None);
    };
    plan(name.to_owned(), block, layers, sd).map(Some)
}

/// A ResNet recognised from its keys (`conv1`, `layer1.0.conv1`, `fc`), or `None`.
pub fn detect(sd: &StateDict) -> Result<Option<ResNet>, TorchvisionError> {
    let looks_like = [
        "conv1.weight",
        "layer1.0.conv1.weight",
        "layer4.0.conv1.weight",
        "fc.weight",
    ]
    .iter()
    .all(|k| sd.has(k));
    if !looks_like {
        return Ok(None);
    }
    let block = if sd.has("layer1.0.conv3.weight") {
        Block::Bottleneck
    } else {
        Block::Basic
    };
    let mut layers = [0usize; 4];
    for (i, count) in layers.iter_mut().enumerate() {
        while sd.has(&format!("layer{}.{}.conv1.weight", i + 1, *count)) {
            *count += 1;
        }
    }
    let mut model = plan(String::new(), block, layers, sd)?;
    model.name = standard_name(&model).unwrap_or_else(|| {
        let kind = match block {
            Block::Basic => "BasicBlock",
            Block::Bottleneck => "Bottleneck",
        };
        let groups = model.blocks.first().map_or(1, |b| b.groups);
        format!("resnet ({kind} {layers:?}, groups {groups})")
    });
    Ok(Some(model))
}

/// The torchvision name whose topology, groups and width per group `model` has.
fn standard_name(model: &ResNet) -> Option<String> {
    let first = model.blocks.first()?;
    let expansion = match model.block {
        Block::Basic => 1,
        Block::Bottleneck => 4,
    };
    let planes = first.output / expansion;
    let per_group = (first.width / first.groups * 64).checked_div(planes)?;
    let layers = count_layers(&model.blocks);
    TABLE
        .iter()
        .find(|row| {
            row.1 == model.block && row.2 == layers && row.3 == first.groups && row.4 == per_group
        })
        .map(|row| row.0.to_owned())
}

fn count_layers(blocks: &[BlockPlan]) -> [usize; 4] {
    let mut layers = [0; 4];
    for (i, count) in layers.iter_mut().enumerate() {
        let stage = format!("layer{}.", i + 1);
        *count = blocks
            .iter()
            .filter(|b| b.prefix.starts_with(&stage))
            .count();
    }
    layers
}

/// Reads every width from `sd` for the given topology. A missing key takes its
/// predecessor's width (torchvision's defaults for the stem and head), so that the strict
/// check afterwards lists every missing key instead of stopping at the first.
fn plan(
    name: String,
    block: Block,
    layers: [usize; 4],
    sd: &StateDict,
) -> Result<ResNet, TorchvisionError> {
    let stem = dim_or(sd, "conv1.weight", 0, 64);
    let in_channels = dim_or(sd, "conv1.weight", 1, 3);
    let expansion = match block {
        Block::Basic => 1,
        Block::Bottleneck => 4,
    };
    let mut blocks: Vec<BlockPlan> = Vec::new();
    let mut input = stem;
    for (stage, &count) in layers.iter().enumerate() {
        for index in 0..count {
            let prefix = format!("layer{}.{index}", stage + 1);
            let stride = if stage > 0 && index == 0 { 2 } else { 1 };
            let previous = blocks.last().filter(|_| index > 0);
            let width = dim_or(
                sd,
                &format!("{prefix}.conv1.weight"),
                0,
                previous.map_or(input, |b| b.width),
            );
            let (output, groups) = match block {
                Block::Basic => (dim_or(sd, &format!("{prefix}.conv2.weight"), 0, width), 1),
                Block::Bottleneck => {
                    let per_group = dim_or(sd, &format!("{prefix}.conv2.weight"), 1, width);
                    if per_group == 0 || !width.is_multiple_of(per_group) {
                        return Err(TorchvisionError::Shape {
                            what: format!("`{prefix}.conv2.weight` does not divide {width} channels into groups"),
                        });
                    }
                    let output =
                        dim_or(sd, &format!("{prefix}.conv3.weight"), 0, width * expansion);
                    (output, width / per_group)
                }
            };
            blocks.push(BlockPlan {
                prefix,
                input,
                width,
                output,
                stride,
                groups,
                downsample: index == 0 && (stride != 1 || input != output),
            });
            input = output;
        }
    }
    Ok(ResNet {
        name,
        block,
        in_channels,
        stem,
        blocks,
        classes: dim_or(sd, "fc.weight", 0, 1000),
    })
}

impl ResNet {
    pub fn name(&self) -> String {
        self.name.clone()
    }

    pub fn expected(&self) -> Vec<Expected> {
        let mut keys = conv_bn_keys("conv1", "bn1", [self.stem, self.in_channels, 7, 7]);
        for b in &self.blocks {
            let p = &b.prefix;
            let mut layer = |conv: &str, bn: &str, shape: [u64; 4]| {
                keys.extend(conv_bn_keys(
                    &format!("{p}.{conv}"),
                    &format!("{p}.{bn}"),
                    shape,
                ));
            };
            match self.block {
                Block::Basic => {
                    layer("conv1", "bn1", [b.width, b.input, 3, 3]);
                    layer("conv2", "bn2", [b.output, b.width, 3, 3]);
                }
                Block::Bottleneck => {
                    let per_group = b.width / b.groups;
                    layer("conv1", "bn1", [b.width, b.input, 1, 1]);
                    layer("conv2", "bn2", [b.width, per_group, 3, 3]);
                    layer("conv3", "bn3", [b.output, b.width, 1, 1]);
                }
            }
            if b.downsample {
                layer("downsample.0", "downsample.1", [b.output, b.input, 1, 1]);
            }
        }
        let last = self.blocks.last().map_or(self.stem, |b| b.output);
        keys.extend(linear_keys("fc", self.classes, last));
        keys
    }

    pub fn build(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, TorchvisionError> {
        let x = cx.conv_bn(input, "conv1", "bn1", BN_EPS, Conv2d::new(2, 3))?;
        let x = cx.graph.relu("relu", &x);
        let mut x = cx.graph.max_pool("maxpool", &x, Pool2d::new(3, 2, 1))?;
        for b in &self.blocks {
            x = self.block(cx, &x, b)?;
        }
        let x = cx.pool_flatten("avgpool", &x)?;
        cx.linear(&x, "fc")
    }

    fn block(
        &self,
        cx: &mut Context<'_>,
        x: &Value,
        b: &BlockPlan,
    ) -> Result<Value, TorchvisionError> {
        let p = &b.prefix;
        let sub = |name: &str| format!("{p}.{name}");
        let out = match self.block {
            Block::Basic => {
                let y = cx.conv_bn(
                    x,
                    &sub("conv1"),
                    &sub("bn1"),
                    BN_EPS,
                    Conv2d::new(b.stride, 1),
                )?;
                let y = cx.graph.relu(&sub("relu"), &y);
                cx.conv_bn(&y, &sub("conv2"), &sub("bn2"), BN_EPS, Conv2d::new(1, 1))?
            }
            Block::Bottleneck => {
                let y = cx.conv_bn(x, &sub("conv1"), &sub("bn1"), BN_EPS, Conv2d::new(1, 0))?;
                let y = cx.graph.relu(&sub("relu"), &y);
                let conv2 = Conv2d::new(b.stride, 1).groups(b.groups);
                let y = cx.conv_bn(&y, &sub("conv2"), &sub("bn2"), BN_EPS, conv2)?;
                let y = cx.graph.relu(&sub("relu"), &y);
                cx.conv_bn(&y, &sub("conv3"), &sub("bn3"), BN_EPS, Conv2d::new(1, 0))?
            }
        };
        let identity = if b.downsample {
            let ds = Conv2d::new(b.stride, 0);
            cx.conv_bn(x, &sub("downsample.0"), &sub("downsample.1"), BN_EPS, ds)?
        } else {
            x.clone()
        };
        let sum = cx.graph.add(p, &out, &identity)?;
        Ok(cx.graph.relu(&sub("relu"), &sum))
    }
}
