//! torchvision's GoogLeNet (Inception v1): `BasicConv2d` (conv, BatchNorm with
//! `eps=0.001` folded into it, ReLU) stem, nine Inception modules (four branches — 1×1;
//! 1×1 then 3×3; 1×1 then 3×3; ceil-mode 3×3 max pool then 1×1 — joined by a Concat),
//! ceil-mode max pools between stages, a global average pool and `fc`.
//!
//! The auxiliary heads (`aux1`, `aux2`) only run in training, so they are not in the eval
//! graph; a checkpoint may hold their weights (torchvision builds them unless
//! `aux_logits=False`), and those keys are accepted and ignored. `transform_input` is not
//! in the weights: the graph follows torchvision's default without pretrained weights
//! (`False`, the input is used as is) unless told otherwise (`--transform-input`, the
//! default when torchvision builds it with pretrained weights, which a fine-tuned model
//! keeps): then each channel is re-normalised first, `x·(std/0.5) + (mean−0.5)/0.5`.

use super::layers::{conv_bn_keys, linear_keys};
use super::{dim_or, Context, Conv2d, Expected, Pool2d, StateDict, TorchvisionError, Value};

const BN_EPS: f64 = 1e-3;

/// What an export says when it assumed `transform_input=False`.
pub const TRANSFORM_INPUT_NOTE: &str = "googlenet: transform_input is not in the weights; \
     assumed False (torchvision's default without pretrained weights). If the model was built \
     from pretrained weights (torchvision then sets it True), export with --transform-input";

/// `_transform_input`'s ImageNet statistics, per RGB channel.
const IMAGENET_MEAN: [f64; 3] = [0.485, 0.456, 0.406];
const IMAGENET_STD: [f64; 3] = [0.229, 0.224, 0.225];

/// The names this module builds.
pub const NAMES: [&str; 1] = ["googlenet"];

/// The Inception modules in order, with the ceil-mode max pool (name, kernel; stride 2) that
/// follows some of them.
type Pool = Option<(&'static str, u64)>;

const INCEPTIONS: [(&str, Pool); 9] = [
    ("inception3a", None),
    ("inception3b", Some(("maxpool3", 3))),
    ("inception4a", None),
    ("inception4b", None),
    ("inception4c", None),
    ("inception4d", None),
    ("inception4e", Some(("maxpool4", 2))),
    ("inception5a", None),
    ("inception5b", None),
];

/// The auxiliary heads' prefixes, accepted and ignored.
const AUX: [&str; 2] = ["aux1.", "aux2."];

/// One Inception module's widths.
#[derive(Clone, Debug, PartialEq, Eq)]
struct InceptionPlan {
    name: &'static str,
    input: u64,
    ch1x1: u64,
    ch3x3red: u64,
    ch3x3: u64,
    ch5x5red: u64,
    ch5x5: u64,
    pool_proj: u64,
    /// The ceil-mode max pool after this module (name, kernel), if any.
    pool_after: Pool,
}

impl InceptionPlan {
    fn output(&self) -> u64 {
        self.ch1x1 + self.ch3x3 + self.ch5x5 + self.pool_proj
    }
}

/// A GoogLeNet with widths from the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoogLeNet {
    in_channels: u64,
    conv1: u64,
    conv2: u64,
    conv3: u64,
    inceptions: Vec<InceptionPlan>,
    classes: u64,
    /// The checkpoint's `aux1.*`/`aux2.*` keys with their shapes, accepted as they are.
    aux: Vec<(String, Vec<u64>)>,
}

/// The GoogLeNet named `name`, or `None` for another family's name.
pub fn from_name(name: &str, sd: &StateDict) -> Result<Option<GoogLeNet>, TorchvisionError> {
    Ok((name == NAMES[0]).then(|| plan(sd)))
}

/// A GoogLeNet recognised from `conv1.conv` and `inception3a.branch1.conv`.
pub fn detect(sd: &StateDict) -> Result<Option<GoogLeNet>, TorchvisionError> {
    let found = sd.has("conv1.conv.weight") && sd.has("inception3a.branch1.conv.weight");
    Ok(found.then(|| plan(sd)))
}

/// Reads every width; a missing key takes a default width so that the strict check
/// afterwards lists every missing key.
fn plan(sd: &StateDict) -> GoogLeNet {
    let conv1 = dim_or(sd, "conv1.conv.weight", 0, 64);
    let conv2 = dim_or(sd, "conv2.conv.weight", 0, 64);
    let conv3 = dim_or(sd, "conv3.conv.weight", 0, 192);
    let mut input = conv3;
    let mut inceptions = Vec::new();
    for &(name, pool_after) in &INCEPTIONS {
        let width = |branch: &str| dim_or(sd, &format!("{name}.{branch}.conv.weight"), 0, input);
        let plan = InceptionPlan {
            name,
            input,
            ch1x1: width("branch1"),
            ch3x3red: width("branch2.0"),
            ch3x3: width("branch2.1"),
            ch5x5red: width("branch3.0"),
            ch5x5: width("branch3.1"),
            pool_proj: width("branch4.1"),
            pool_after,
        };
        input = plan.output();
        inceptions.push(plan);
    }
    let aux = sd
        .keys()
        .filter(|k| AUX.iter().any(|p| k.starts_with(p)))
        .map(|k| (k.to_owned(), sd.shape(k).unwrap_or_default().to_vec()))
        .collect();
    GoogLeNet {
        in_channels: dim_or(sd, "conv1.conv.weight", 1, 3),
        conv1,
        conv2,
        conv3,
        inceptions,
        classes: dim_or(sd, "fc.weight", 0, 1000),
        aux,
    }
}

/// Keys of a `BasicConv2d` at `prefix` (`.conv` without bias, `.bn`).
fn basic_keys(prefix: &str, shape: [u64; 4]) -> Vec<Expected> {
    conv_bn_keys(&format!("{prefix}.conv"), &format!("{prefix}.bn"), shape)
}

impl GoogLeNet {
    pub fn name(&self) -> String {
        NAMES[0].to_owned()
    }

    pub fn expected(&self) -> Vec<Expected> {
        let mut keys = basic_keys("conv1", [self.conv1, self.in_channels, 7, 7]);
        keys.extend(basic_keys("conv2", [self.conv2, self.conv1, 1, 1]));
        keys.extend(basic_keys("conv3", [self.conv3, self.conv2, 3, 3]));
        for m in &self.inceptions {
            let n = m.name;
            let branches = [
                ("branch1", [m.ch1x1, m.input, 1, 1]),
                ("branch2.0", [m.ch3x3red, m.input, 1, 1]),
                ("branch2.1", [m.ch3x3, m.ch3x3red, 3, 3]),
                ("branch3.0", [m.ch5x5red, m.input, 1, 1]),
                ("branch3.1", [m.ch5x5, m.ch5x5red, 3, 3]),
                ("branch4.1", [m.pool_proj, m.input, 1, 1]),
            ];
            for (branch, shape) in branches {
                keys.extend(basic_keys(&format!("{n}.{branch}"), shape));
            }
        }
        let last = self.inceptions.last().map_or(self.conv3, |m| m.output());
        keys.extend(linear_keys("fc", self.classes, last));
        keys.extend(self.aux.iter().map(|(k, shape)| Expected {
            key: k.clone(),
            shape: shape.clone(),
            optional: true,
        }));
        keys
    }

    pub fn build(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, TorchvisionError> {
        let transformed;
        let input = if cx.transform_input {
            transformed = transform_input(cx, input)?;
            &transformed
        } else {
            input
        };
        let x = basic(cx, input, "conv1", Conv2d::new(2, 3))?;
        let x = cx
            .graph
            .max_pool("maxpool1", &x, Pool2d::new(3, 2, 0).ceil_mode())?;
        let x = basic(cx, &x, "conv2", Conv2d::new(1, 0))?;
        let x = basic(cx, &x, "conv3", Conv2d::new(1, 1))?;
        let mut x = cx
            .graph
            .max_pool("maxpool2", &x, Pool2d::new(3, 2, 0).ceil_mode())?;
        for m in &self.inceptions {
            x = inception(cx, &x, m.name)?;
            if let Some((scope, k)) = m.pool_after {
                x = cx
                    .graph
                    .max_pool(scope, &x, Pool2d::new(k, 2, 0).ceil_mode())?;
            }
        }
        let x = cx.pool_flatten("avgpool", &x)?;
        cx.linear(&x, "fc")
    }
}

/// `_transform_input`: each channel `x[:, c]·(std_c/0.5) + (mean_c−0.5)/0.5`, unsqueezed
/// and concatenated, as torchvision computes it.
fn transform_input(cx: &mut Context<'_>, x: &Value) -> Result<Value, TorchvisionError> {
    if x.shape().first() != Some(&3) {
        return Err(TorchvisionError::Option {
            what: format!(
                "--transform-input re-normalises 3 RGB channels; the input has shape {:?}",
                x.shape()
            ),
        });
    }
    let scope = "transform_input";
    let mut channels = Vec::with_capacity(3);
    for (c, (mean, std)) in IMAGENET_MEAN.iter().zip(IMAGENET_STD).enumerate() {
        let y = cx.graph.select(scope, x, 0, c as u64)?;
        let y = cx.graph.unsqueeze(scope, &y, 0)?;
        channels.push(cx.graph.affine(scope, &y, std / 0.5, (mean - 0.5) / 0.5)?);
    }
    cx.graph
        .concat(scope, &[&channels[0], &channels[1], &channels[2]], 0)
}

/// `Inception` at `name`: the four branches joined by a Concat on channels.
fn inception(cx: &mut Context<'_>, x: &Value, name: &str) -> Result<Value, TorchvisionError> {
    let sub = |branch: &str| format!("{name}.{branch}");
    let b1 = basic(cx, x, &sub("branch1"), Conv2d::new(1, 0))?;
    let b2 = basic(cx, x, &sub("branch2.0"), Conv2d::new(1, 0))?;
    let b2 = basic(cx, &b2, &sub("branch2.1"), Conv2d::new(1, 1))?;
    let b3 = basic(cx, x, &sub("branch3.0"), Conv2d::new(1, 0))?;
    let b3 = basic(cx, &b3, &sub("branch3.1"), Conv2d::new(1, 1))?;
    let pool = Pool2d::new(3, 1, 1).ceil_mode();
    let b4 = cx.graph.max_pool(&sub("branch4.0"), x, pool)?;
    let b4 = basic(cx, &b4, &sub("branch4.1"), Conv2d::new(1, 0))?;
    cx.graph.concat(name, &[&b1, &b2, &b3, &b4], 0)
}

/// `BasicConv2d` at `prefix`: conv with BatchNorm (eps 0.001) folded in, then ReLU.
fn basic(
    cx: &mut Context<'_>,
    x: &Value,
    prefix: &str,
    p: Conv2d,
) -> Result<Value, TorchvisionError> {
    let y = cx.conv_bn(
        x,
        &format!("{prefix}.conv"),
        &format!("{prefix}.bn"),
        BN_EPS,
        p,
    )?;
    Ok(cx.graph.relu(prefix, &y))
}
