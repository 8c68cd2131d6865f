//! torchvision's MobileNetV2 and MobileNetV3 (small, large): inverted residuals of an
//! optional 1×1 expand, a depthwise conv and a 1×1 linear projection, every conv followed
//! by a BatchNorm that folds into it. V3 adds squeeze-and-excitation and Hardswish.
//!
//! The name fixes the topology (block count, strides, kernels, activations, which blocks
//! have SE); every width comes from the checkpoint, and so does whether a block expands:
//! torchvision drops the expand conv when the expanded width equals the input width, which
//! narrow `width_mult`s cause in blocks that expand at full width.

use super::layers::{cna_keys, conv_bn_keys, linear_keys, se_keys};
use super::{
    count_from, dim_or, Act, Context, Conv2d, Expected, StateDict, TorchvisionError, Value,
};

/// The names this module builds.
pub const NAMES: [&str; 3] = ["mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large"];

/// One inverted residual of a standard configuration. `expand` is its full-width form,
/// the fallback when the checkpoint lacks the block's first conv.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Spec {
    kernel: u64,
    stride: u64,
    expand: bool,
    se: bool,
    act: Act,
}

const fn spec(kernel: u64, stride: u64, expand: bool, se: bool, act: Act) -> Spec {
    Spec {
        kernel,
        stride,
        expand,
        se,
        act,
    }
}

/// MobileNetV2's 17 blocks: torchvision's (t, c, n, s) rows [1,16,1,1], [6,24,2,2],
/// [6,32,3,2], [6,64,4,2], [6,96,3,1], [6,160,3,2], [6,320,1,1]; t = 1 means no expand.
const V2: [Spec; 17] = {
    let first = spec(3, 1, false, false, Act::Relu6);
    let down = spec(3, 2, true, false, Act::Relu6);
    let same = spec(3, 1, true, false, Act::Relu6);
    [
        first, down, same, down, same, same, down, same, same, same, same, same, same, down, same,
        same, same,
    ]
};

/// MobileNetV3-Small's 11 blocks (torchvision's `_mobilenet_v3_conf`).
const V3_SMALL: [Spec; 11] = {
    let hs5 = spec(5, 1, true, true, Act::Hardswish);
    [
        spec(3, 2, false, true, Act::Relu),
        spec(3, 2, true, false, Act::Relu),
        spec(3, 1, true, false, Act::Relu),
        spec(5, 2, true, true, Act::Hardswish),
        hs5,
        hs5,
        hs5,
        hs5,
        spec(5, 2, true, true, Act::Hardswish),
        hs5,
        hs5,
    ]
};

/// MobileNetV3-Large's 15 blocks (torchvision's `_mobilenet_v3_conf`).
const V3_LARGE: [Spec; 15] = {
    let re5 = spec(5, 1, true, true, Act::Relu);
    let hs3 = spec(3, 1, true, false, Act::Hardswish);
    let hs3_se = spec(3, 1, true, true, Act::Hardswish);
    let hs5 = spec(5, 1, true, true, Act::Hardswish);
    [
        spec(3, 1, false, false, Act::Relu),
        spec(3, 2, true, false, Act::Relu),
        spec(3, 1, true, false, Act::Relu),
        spec(5, 2, true, true, Act::Relu),
        re5,
        re5,
        spec(3, 2, true, false, Act::Hardswish),
        hs3,
        hs3,
        hs3,
        hs3_se,
        hs3_se,
        spec(5, 2, true, true, Act::Hardswish),
        hs5,
        hs5,
    ]
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    V2,
    V3Small,
    V3Large,
}

impl Version {
    fn name(self) -> &'static str {
        match self {
            Version::V2 => NAMES[0],
            Version::V3Small => NAMES[1],
            Version::V3Large => NAMES[2],
        }
    }

    fn specs(self) -> &'static [Spec] {
        match self {
            Version::V2 => &V2,
            Version::V3Small => &V3_SMALL,
            Version::V3Large => &V3_LARGE,
        }
    }

    /// `nn.BatchNorm2d`'s default for V2; V3 builds its norms with `eps=0.001`.
    fn eps(self) -> f64 {
        match self {
            Version::V2 => 1e-5,
            _ => 1e-3,
        }
    }

    /// The activation of the stem and of the last conv.
    fn edge_act(self) -> Act {
        match self {
            Version::V2 => Act::Relu6,
            _ => Act::Hardswish,
        }
    }

    /// The Sequential inside a block: `conv` (V2) or `block` (V3).
    fn body(self) -> &'static str {
        match self {
            Version::V2 => "conv",
            _ => "block",
        }
    }
}

/// One block's widths.
#[derive(Clone, Debug, PartialEq, Eq)]
struct BlockPlan {
    /// `features.<i>.conv` or `features.<i>.block`.
    prefix: String,
    spec: Spec,
    /// Whether the block starts with a 1×1 expand conv.
    expand: bool,
    input: u64,
    /// Expanded (depthwise) width; `input` when the block does not expand.
    hidden: u64,
    /// SE squeeze width.
    squeeze: u64,
    output: u64,
}

impl BlockPlan {
    /// Sub-module indices inside the body: expand (if any), depthwise, SE (if any), project.
    fn layout(&self) -> (Option<usize>, usize, Option<usize>, usize) {
        let dw = usize::from(self.expand);
        let se = self.spec.se.then_some(dw + 1);
        (
            self.expand.then_some(0),
            dw,
            se,
            dw + 1 + usize::from(self.spec.se),
        )
    }

    fn residual(&self) -> bool {
        self.spec.stride == 1 && self.input == self.output
    }
}

/// A MobileNet with widths from the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MobileNet {
    version: Version,
    in_channels: u64,
    stem: u64,
    blocks: Vec<BlockPlan>,
    /// Output channels of the last 1×1 conv.
    last: u64,
    /// V3's hidden Linear width (`classifier.0`); unused by V2.
    hidden: u64,
    classes: u64,
}

/// The MobileNet named `name`, or `None` for another family's name.
pub fn from_name(name: &str, sd: &StateDict) -> Result<Option<MobileNet>, TorchvisionError> {
    let version = [Version::V2, Version::V3Small, Version::V3Large]
        .into_iter()
        .find(|v| v.name() == name);
    Ok(version.map(|v| plan(v, sd)))
}

/// A MobileNet recognised from `features.1.conv` (V2) or `features.1.block` (V3); the
/// number of blocks must be torchvision's (V2 17, V3-Small 11, V3-Large 15), since the
/// strides and activations are not in the weights.
pub fn detect(sd: &StateDict) -> Result<Option<MobileNet>, TorchvisionError> {
    let body = if sd.has("features.1.conv.0.0.weight") && sd.has("classifier.1.weight") {
        "conv"
    } else if sd.has("features.1.block.0.0.weight") && sd.has("classifier.3.weight") {
        "block"
    } else {
        return Ok(None);
    };
    let blocks = count_from(sd, 1, |i| format!("features.{i}.{body}.0.0.weight"));
    let version = [Version::V2, Version::V3Small, Version::V3Large]
        .into_iter()
        .find(|v| v.body() == body && v.specs().len() == blocks);
    match version {
        Some(v) => Ok(Some(plan(v, sd))),
        None => Err(TorchvisionError::Arch {
            what: format!(
                "a MobileNet with {blocks} `{body}` blocks matches none of {}; its strides and \
                 activations are not in the weights",
                NAMES.join(", ")
            ),
        }),
    }
}

/// Reads every width; a missing key takes a neighbour's width so that the strict check
/// afterwards lists every missing key.
fn plan(version: Version, sd: &StateDict) -> MobileNet {
    let body = version.body();
    let stem = dim_or(sd, "features.0.0.weight", 0, 16);
    let mut input = stem;
    let mut blocks: Vec<BlockPlan> = Vec::new();
    for (i, &spec) in version.specs().iter().enumerate() {
        let prefix = format!("features.{}.{body}", i + 1);
        // The first conv is the expand conv iff it is 1×1 (the depthwise one is 3×3 or 5×5).
        let expand = sd
            .shape(&format!("{prefix}.0.0.weight"))
            .map_or(spec.expand, |s| s.get(2..) == Some(&[1, 1][..]));
        let mut block = BlockPlan {
            prefix,
            spec,
            expand,
            input,
            hidden: input,
            squeeze: input,
            output: input,
        };
        let (expand, _, se, project) = block.layout();
        let p = &block.prefix;
        if let Some(j) = expand {
            block.hidden = dim_or(sd, &format!("{p}.{j}.0.weight"), 0, input);
        }
        if let Some(j) = se {
            block.squeeze = dim_or(sd, &format!("{p}.{j}.fc1.weight"), 0, block.hidden);
        }
        let project = match version {
            Version::V2 => format!("{p}.{project}.weight"),
            _ => format!("{p}.{project}.0.weight"),
        };
        block.output = dim_or(sd, &project, 0, input);
        input = block.output;
        blocks.push(block);
    }
    let last_key = format!("features.{}.0.weight", blocks.len() + 1);
    let last = dim_or(sd, &last_key, 0, input);
    let (hidden, classes) = match version {
        Version::V2 => (last, dim_or(sd, "classifier.1.weight", 0, 1000)),
        _ => (
            dim_or(sd, "classifier.0.weight", 0, last),
            dim_or(sd, "classifier.3.weight", 0, 1000),
        ),
    };
    MobileNet {
        version,
        in_channels: dim_or(sd, "features.0.0.weight", 1, 3),
        stem,
        blocks,
        last,
        hidden,
        classes,
    }
}

impl MobileNet {
    pub fn name(&self) -> String {
        self.version.name().to_owned()
    }

    pub fn expected(&self) -> Vec<Expected> {
        let mut keys = cna_keys("features.0", [self.stem, self.in_channels, 3, 3]);
        for b in &self.blocks {
            let (expand, dw, se, project) = b.layout();
            let p = &b.prefix;
            if let Some(j) = expand {
                keys.extend(cna_keys(&format!("{p}.{j}"), [b.hidden, b.input, 1, 1]));
            }
            let k = b.spec.kernel;
            keys.extend(cna_keys(&format!("{p}.{dw}"), [b.hidden, 1, k, k]));
            if let Some(j) = se {
                keys.extend(se_keys(&format!("{p}.{j}"), b.hidden, b.squeeze));
            }
            match self.version {
                Version::V2 => keys.extend(conv_bn_keys(
                    &format!("{p}.{project}"),
                    &format!("{p}.{}", project + 1),
                    [b.output, b.hidden, 1, 1],
                )),
                _ => keys.extend(cna_keys(
                    &format!("{p}.{project}"),
                    [b.output, b.hidden, 1, 1],
                )),
            }
        }
        let penultimate = self.blocks.last().map_or(self.stem, |b| b.output);
        let last = format!("features.{}", self.blocks.len() + 1);
        keys.extend(cna_keys(&last, [self.last, penultimate, 1, 1]));
        match self.version {
            Version::V2 => keys.extend(linear_keys("classifier.1", self.classes, self.last)),
            _ => {
                keys.extend(linear_keys("classifier.0", self.hidden, self.last));
                keys.extend(linear_keys("classifier.3", self.classes, self.hidden));
            }
        }
        keys
    }

    pub fn build(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, TorchvisionError> {
        let eps = self.version.eps();
        let edge = self.version.edge_act();
        let mut x = cx.cna(input, "features.0", eps, Conv2d::new(2, 1), edge)?;
        for b in &self.blocks {
            x = self.block(cx, &x, b)?;
        }
        let last = format!("features.{}", self.blocks.len() + 1);
        let x = cx.cna(&x, &last, eps, Conv2d::new(1, 0), edge)?;
        let x = cx.pool_flatten("avgpool", &x)?;
        match self.version {
            Version::V2 => cx.linear(&x, "classifier.1"),
            _ => {
                let x = cx.linear(&x, "classifier.0")?;
                let x = cx.graph.activation("classifier.1", &x, Act::Hardswish);
                cx.linear(&x, "classifier.3")
            }
        }
    }

    fn block(
        &self,
        cx: &mut Context<'_>,
        x: &Value,
        b: &BlockPlan,
    ) -> Result<Value, TorchvisionError> {
        let eps = self.version.eps();
        let (expand, dw, se, project) = b.layout();
        let p = &b.prefix;
        let act = b.spec.act;
        let mut y = x.clone();
        if let Some(j) = expand {
            y = cx.cna(&y, &format!("{p}.{j}"), eps, Conv2d::new(1, 0), act)?;
        }
        let depthwise = Conv2d::new(b.spec.stride, (b.spec.kernel - 1) / 2).groups(b.hidden);
        y = cx.cna(&y, &format!("{p}.{dw}"), eps, depthwise, act)?;
        if let Some(j) = se {
            y = cx.squeeze_excitation(&y, &format!("{p}.{j}"), Act::Relu, Act::Hardsigmoid)?;
        }
        y = match self.version {
            Version::V2 => {
                let (conv, bn) = (format!("{p}.{project}"), format!("{p}.{}", project + 1));
                cx.conv_bn(&y, &conv, &bn, eps, Conv2d::new(1, 0))?
            }
            _ => cx.cna(
                &y,
                &format!("{p}.{project}"),
                eps,
                Conv2d::new(1, 0),
                Act::None,
            )?,
        };
        if b.residual() {
            let scope = p.rsplit_once('.').map_or(p.as_str(), |(block, _)| block);
            y = cx.graph.add(scope, x, &y)?;
        }
        Ok(y)
    }
}
