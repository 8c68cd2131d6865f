//! torchvision's DenseNet-BC (densenet121/161/169/201). Each dense layer is pre-activation:
//! its first BatchNorm (`norm1`) follows a concatenation, not a conv (the lowering keeps it
//! a BatchNormalization); `norm0` and `norm2` follow a conv.
//!
//! The growing feature map is kept as a running concatenation: layer `l` reads the Concat of the
//! block input and layers `1..l`, and appends its own output.

use super::layers::linear_keys;
use super::{
    bn_keys, count_from, dim_or, key, Context, Conv2d, Expected, Pool2d, StateDict,
    TorchvisionError, Value,
};

const BN_EPS: f64 = 1e-5;

/// torchvision's names: (name, growth rate, layers per block, stem width).
const TABLE: [(&str, u64, [usize; 4], u64); 4] = [
    ("densenet121", 32, [6, 12, 24, 16], 64),
    ("densenet161", 48, [6, 12, 36, 24], 96),
    ("densenet169", 32, [6, 12, 32, 32], 64),
    ("densenet201", 32, [6, 12, 48, 32], 64),
];

/// The names this module builds.
pub const NAMES: [&str; 4] = [TABLE[0].0, TABLE[1].0, TABLE[2].0, TABLE[3].0];

/// One dense layer's widths.
#[derive(Clone, Debug, PartialEq, Eq)]
struct LayerPlan {
    prefix: String,
    input: u64,
    /// `conv1`'s output (`bn_size · growth`).
    bottleneck: u64,
    growth: u64,
}

/// A transition after a block: BN, ReLU, 1×1 conv, 2×2 average pool.
#[derive(Clone, Debug, PartialEq, Eq)]
struct TransitionPlan {
    prefix: String,
    input: u64,
    output: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct BlockPlan {
    layers: Vec<LayerPlan>,
    transition: Option<TransitionPlan>,
}

/// A DenseNet with widths from the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DenseNet {
    name: String,
    in_channels: u64,
    stem: u64,
    blocks: Vec<BlockPlan>,
    /// Channels after the last block (`norm5`, the classifier's input).
    last: u64,
    classes: u64,
}

/// The DenseNet named `name`, or `None` for another family's name.
pub fn from_name(name: &str, sd: &StateDict) -> Result<Option<DenseNet>, TorchvisionError> {
    let Some(&(name, _, layers, _)) = TABLE.iter().find(|row| row.0 == name) else {
        return Ok(None);
    };
    Ok(Some(plan(name.to_owned(), &layers, sd)))
}

/// A DenseNet recognised from `features.conv0` and `features.denseblock1`; layers per
/// block are counted and the name comes from the topology, growth rate and stem width.
pub fn detect(sd: &StateDict) -> Result<Option<DenseNet>, TorchvisionError> {
    let layer = |b: usize, l: usize| format!("features.denseblock{b}.denselayer{l}.conv1.weight");
    if !(sd.has("features.conv0.weight") && sd.has(&layer(1, 1))) {
        return Ok(None);
    }
    let blocks = count_from(sd, 1, |b| layer(b, 1));
    let layers: Vec<usize> = (1..=blocks)
        .map(|b| count_from(sd, 1, |l| layer(b, l)))
        .collect();
    let mut model = plan(String::new(), &layers, sd);
    let growth = model
        .blocks
        .first()
        .and_then(|b| b.layers.first())
        .map_or(0, |l| l.growth);
    model.name = TABLE
        .iter()
        .find(|row| row.1 == growth && row.2.as_slice() == layers && row.3 == model.stem)
        .map(|row| row.0.to_owned())
        .unwrap_or_else(|| format!("densenet (layers {layers:?}, growth {growth})"));
    Ok(Some(model))
}

/// Reads every width; a missing key takes its predecessor's width so that the strict check
/// afterwards lists every missing key.
fn plan(name: String, layers: &[usize], sd: &StateDict) -> DenseNet {
    let stem = dim_or(sd, "features.conv0.weight", 0, 64);
    let mut width = stem;
    let mut blocks = Vec::new();
    let mut growth = 32;
    let mut bottleneck = 128;
    for (b, &count) in layers.iter().enumerate() {
        let block = format!("features.denseblock{}", b + 1);
        let mut plans = Vec::new();
        for l in 1..=count {
            let prefix = format!("{block}.denselayer{l}");
            bottleneck = dim_or(sd, &format!("{prefix}.conv1.weight"), 0, bottleneck);
            growth = dim_or(sd, &format!("{prefix}.conv2.weight"), 0, growth);
            plans.push(LayerPlan {
                prefix,
                input: width,
                bottleneck,
                growth,
            });
            width += growth;
        }
        let transition = (b + 1 < layers.len()).then(|| {
            let prefix = format!("features.transition{}", b + 1);
            let output = dim_or(sd, &format!("{prefix}.conv.weight"), 0, width / 2);
            let t = TransitionPlan {
                prefix,
                input: width,
                output,
            };
            width = output;
            t
        });
        blocks.push(BlockPlan {
            layers: plans,
            transition,
        });
    }
    DenseNet {
        name,
        in_channels: dim_or(sd, "features.conv0.weight", 1, 3),
        stem,
        blocks,
        last: width,
        classes: dim_or(sd, "classifier.weight", 0, 1000),
    }
}

impl DenseNet {
    pub fn name(&self) -> String {
        self.name.clone()
    }

    pub fn expected(&self) -> Vec<Expected> {
        let mut keys = vec![key(
            "features.conv0.weight".into(),
            vec![self.stem, self.in_channels, 7, 7],
        )];
        keys.extend(bn_keys("features.norm0", self.stem));
        for block in &self.blocks {
            for l in &block.layers {
                let p = &l.prefix;
                keys.extend(bn_keys(&format!("{p}.norm1"), l.input));
                keys.push(key(
                    format!("{p}.conv1.weight"),
                    vec![l.bottleneck, l.input, 1, 1],
                ));
                keys.extend(bn_keys(&format!("{p}.norm2"), l.bottleneck));
                keys.push(key(
                    format!("{p}.conv2.weight"),
                    vec![l.growth, l.bottleneck, 3, 3],
                ));
            }
            if let Some(t) = &block.transition {
                keys.extend(bn_keys(&format!("{}.norm", t.prefix), t.input));
                keys.push(key(
                    format!("{}.conv.weight", t.prefix),
                    vec![t.output, t.input, 1, 1],
                ));
            }
        }
        keys.extend(bn_keys("features.norm5", self.last));
        keys.extend(linear_keys("classifier", self.classes, self.last));
        keys
    }

    pub fn build(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, TorchvisionError> {
        let x = cx.conv_bn(
            input,
            "features.conv0",
            "features.norm0",
            BN_EPS,
            Conv2d::new(2, 3),
        )?;
        let x = cx.graph.relu("features.relu0", &x);
        let mut x = cx
            .graph
            .max_pool("features.pool0", &x, Pool2d::new(3, 2, 1))?;
        for block in &self.blocks {
            for l in &block.layers {
                let new = dense_layer(cx, &x, l)?;
                x = cx.graph.concat(&l.prefix, &[&x, &new], 0)?;
            }
            if let Some(t) = &block.transition {
                x = transition(cx, &x, t)?;
            }
        }
        let x = cx.batch_norm(&x, "features.norm5", BN_EPS)?;
        let x = cx.graph.relu("", &x);
        let x = cx.pool_flatten("", &x)?;
        cx.linear(&x, "classifier")
    }
}

/// `norm1 → relu1 → conv1 (+norm2 folded) → relu2 → conv2`: the layer's `growth` new channels.
fn dense_layer(cx: &mut Context<'_>, x: &Value, l: &LayerPlan) -> Result<Value, TorchvisionError> {
    let sub = |name: &str| format!("{}.{name}", l.prefix);
    let y = cx.batch_norm(x, &sub("norm1"), BN_EPS)?;
    let y = cx.graph.relu(&sub("relu1"), &y);
    let y = cx.conv_bn(&y, &sub("conv1"), &sub("norm2"), BN_EPS, Conv2d::new(1, 0))?;
    let y = cx.graph.relu(&sub("relu2"), &y);
    cx.conv(&y, &sub("conv2"), Conv2d::new(1, 1))
}

fn transition(
    cx: &mut Context<'_>,
    x: &Value,
    t: &TransitionPlan,
) -> Result<Value, TorchvisionError> {
    let sub = |name: &str| format!("{}.{name}", t.prefix);
    let y = cx.batch_norm(x, &sub("norm"), BN_EPS)?;
    let y = cx.graph.relu(&sub("relu"), &y);
    let y = cx.conv(&y, &sub("conv"), Conv2d::new(1, 0))?;
    cx.graph
        .average_pool(&sub("pool"), &y, Pool2d::new(2, 2, 0))
}
