//! torchvision's VGG: vgg11/13/16/19 and their `_bn` forms.

use super::{
    bn_keys, dim_or, key, Context, Conv2d, Expected, Pool2d, StateDict, TorchvisionError, Value,
};

const BN_EPS: f64 = 1e-5;
/// `nn.AdaptiveAvgPool2d((7, 7))` before the classifier.
const POOLED: u64 = 7;

/// torchvision's configurations as convs per stage (a max-pool ends each stage).
const TABLE: [(&str, [usize; 5]); 4] = [
    ("vgg11", [1, 1, 2, 2, 2]),
    ("vgg13", [2, 2, 2, 2, 2]),
    ("vgg16", [2, 2, 3, 3, 3]),
    ("vgg19", [2, 2, 4, 4, 4]),
];

/// The names this module builds.
pub const NAMES: [&str; 8] = [
    "vgg11", "vgg13", "vgg16", "vgg19", "vgg11_bn", "vgg13_bn", "vgg16_bn", "vgg19_bn",
];

/// One item of `features`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Layer {
    /// A 3×3 conv at `features.<index>` (then BatchNorm at `index + 1` if `bn`, then ReLU).
    Conv {
        index: usize,
        input: u64,
        output: u64,
    },
    MaxPool,
}

/// A VGG with widths from the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vgg {
    name: String,
    bn: bool,
    layers: Vec<Layer>,
    /// Classifier Linear widths: hidden, hidden, classes.
    classifier: [u64; 3],
}

/// The VGG named `name`, or `None` for another family's name.
pub fn from_name(name: &str, sd: &StateDict) -> Result<Option<Vgg>, TorchvisionError> {
    let (base, bn) = match name.strip_suffix("_bn") {
        Some(base) => (base, true),
        None => (name, false),
    };
    let Some(&(_, stages)) = TABLE.iter().find(|row| row.0 == base) else {
        return Ok(None);
    };
    Ok(Some(plan(name.to_owned(), bn, &stages, sd)))
}

/// A VGG recognised from `features.<i>` convs and a three-Linear `classifier`, or `None`.
pub fn detect(sd: &StateDict) -> Result<Option<Vgg>, TorchvisionError> {
    if !(sd.has("features.0.weight") && sd.has("classifier.6.weight")) {
        return Ok(None);
    }
    let bn = sd.has("features.1.running_mean");
    let last = sd
        .keys()
        .filter_map(|k| {
            k.strip_prefix("features.")?
                .split('.')
                .next()?
                .parse::<usize>()
                .ok()
        })
        .max()
        .unwrap_or(0);
    // Walk the indices: conv (+BN) + ReLU take 2 (3) slots; a slot without weights is a pool.
    let mut stages = vec![0usize];
    let mut index = 0;
    while index <= last {
        if sd
            .shape(&format!("features.{index}.weight"))
            .is_some_and(|s| s.len() == 4)
        {
            if let Some(n) = stages.last_mut() {
                *n += 1;
            }
            index += if bn { 3 } else { 2 };
        } else {
            stages.push(0);
            index += 1;
        }
    }
    let name = TABLE
        .iter()
        .find(|row| row.1.as_slice() == stages.as_slice())
        .map(|row| format!("{}{}", row.0, if bn { "_bn" } else { "" }))
        .unwrap_or_else(|| format!("vgg (convs per stage {stages:?}, batch norm {bn})"));
    Ok(Some(plan(name, bn, &stages, sd)))
}

fn plan(name: String, bn: bool, stages: &[usize], sd: &StateDict) -> Vgg {
    let step = if bn { 3 } else { 2 };
    let mut layers = Vec::new();
    let mut index = 0;
    // A missing key takes its predecessor's width, so the strict check lists them all.
    let mut input = dim_or(sd, "features.0.weight", 1, 3);
    for &convs in stages {
        for _ in 0..convs {
            let output = dim_or(sd, &format!("features.{index}.weight"), 0, input);
            layers.push(Layer::Conv {
                index,
                input,
                output,
            });
            input = output;
            index += step;
        }
        layers.push(Layer::MaxPool);
        index += 1;
    }
    Vgg {
        name,
        bn,
        layers,
        classifier: [
            dim_or(sd, "classifier.0.weight", 0, 4096),
            dim_or(sd, "classifier.3.weight", 0, 4096),
            dim_or(sd, "classifier.6.weight", 0, 1000),
        ],
    }
}

impl Vgg {
    pub fn name(&self) -> String {
        self.name.clone()
    }

    fn last_channels(&self) -> u64 {
        self.layers
            .iter()
            .rev()
            .find_map(|l| match l {
                Layer::Conv { output, .. } => Some(*output),
                Layer::MaxPool => None,
            })
            .unwrap_or(0)
    }

    pub fn expected(&self) -> Vec<Expected> {
        let mut keys = Vec::new();
        for layer in &self.layers {
            if let Layer::Conv {
                index,
                input,
                output,
            } = *layer
            {
                keys.push(key(
                    format!("features.{index}.weight"),
                    vec![output, input, 3, 3],
                ));
                keys.push(key(format!("features.{index}.bias"), vec![output]));
                if self.bn {
                    keys.extend(bn_keys(&format!("features.{}", index + 1), output));
                }
            }
        }
        let [h1, h2, classes] = self.classifier;
        let flat = self.last_channels() * POOLED * POOLED;
        for (i, (out, inp)) in [(h1, flat), (h2, h1), (classes, h2)]
            .into_iter()
            .enumerate()
        {
            keys.push(key(format!("classifier.{}.weight", 3 * i), vec![out, inp]));
            keys.push(key(format!("classifier.{}.bias", 3 * i), vec![out]));
        }
        keys
    }

    pub fn build(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, TorchvisionError> {
        let mut x = input.clone();
        let mut slot = 0;
        for layer in &self.layers {
            match *layer {
                Layer::Conv { index, .. } => {
                    let conv = format!("features.{index}");
                    x = if self.bn {
                        let bn = format!("features.{}", index + 1);
                        cx.conv_bn(&x, &conv, &bn, BN_EPS, Conv2d::new(1, 1))?
                    } else {
                        cx.conv(&x, &conv, Conv2d::new(1, 1))?
                    };
                    let relu = index + if self.bn { 2 } else { 1 };
                    x = cx.graph.relu(&format!("features.{relu}"), &x);
                    slot = relu + 1;
                }
                Layer::MaxPool => {
                    x = cx
                        .graph
                        .max_pool(&format!("features.{slot}"), &x, Pool2d::new(2, 2, 0))?;
                    slot += 1;
                }
            }
        }
        let x = cx.graph.adaptive_average_pool("avgpool", &x, [POOLED; 2])?;
        let x = cx.graph.flatten("", &x)?;
        let x = cx.linear(&x, "classifier.0")?;
        let x = cx.graph.relu("classifier.1", &x);
        let x = cx.linear(&x, "classifier.3")?;
        let x = cx.graph.relu("classifier.4", &x);
        cx.linear(&x, "classifier.6")
    }
}
