//! torchvision's SqueezeNet 1.0 and 1.1: Fire modules (a 1×1 squeeze, then 1×1 and 3×3
//! expands concatenated), ceil-mode max-pools, and a 1×1 conv classifier.

use super::{dim_or, key, Context, Conv2d, Expected, Pool2d, StateDict, TorchvisionError, Value};

/// One item of `features` after the stem conv and its ReLU (`features.0`, `.1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Item {
    /// `MaxPool2d(3, 2, ceil_mode=True)`.
    Pool,
    Fire,
}

use Item::{Fire, Pool};

/// A version's topology: stem kernel and stride, then `features.2…12`.
struct Version {
    name: &'static str,
    stem: (u64, u64),
    items: [Item; 11],
}

const VERSIONS: [Version; 2] = [
    Version {
        name: "squeezenet1_0",
        stem: (7, 2),
        items: [
            Pool, Fire, Fire, Fire, Pool, Fire, Fire, Fire, Fire, Pool, Fire,
        ],
    },
    Version {
        name: "squeezenet1_1",
        stem: (3, 2),
        items: [
            Pool, Fire, Fire, Pool, Fire, Fire, Pool, Fire, Fire, Fire, Fire,
        ],
    },
];

/// The names this module builds.
pub const NAMES: [&str; 2] = [VERSIONS[0].name, VERSIONS[1].name];

/// One Fire module's widths.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FirePlan {
    index: usize,
    input: u64,
    squeeze: u64,
    expand1x1: u64,
    expand3x3: u64,
}

impl FirePlan {
    fn output(&self) -> u64 {
        self.expand1x1 + self.expand3x3
    }
}

/// A SqueezeNet with widths from the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqueezeNet {
    version: usize,
    in_channels: u64,
    stem: u64,
    fires: Vec<FirePlan>,
    classes: u64,
}

/// The SqueezeNet named `name`, or `None` for another family's name.
pub fn from_name(name: &str, sd: &StateDict) -> Result<Option<SqueezeNet>, TorchvisionError> {
    Ok(VERSIONS
        .iter()
        .position(|v| v.name == name)
        .map(|version| plan(version, sd)))
}

/// A SqueezeNet recognised from `features.3.squeeze` and a conv `classifier.1`; the stem
/// kernel (7 or 3) tells the versions apart.
pub fn detect(sd: &StateDict) -> Result<Option<SqueezeNet>, TorchvisionError> {
    let conv_head = sd
        .shape("classifier.1.weight")
        .is_some_and(|s| s.len() == 4);
    if !(conv_head && sd.has("features.3.squeeze.weight")) {
        return Ok(None);
    }
    let kernel = sd
        .shape("features.0.weight")
        .and_then(|s| s.get(2).copied());
    Ok(VERSIONS
        .iter()
        .position(|v| Some(v.stem.0) == kernel)
        .map(|version| plan(version, sd)))
}

/// Reads the widths; a missing key takes its predecessor's width so that the strict check
/// afterwards lists every missing key.
fn plan(version: usize, sd: &StateDict) -> SqueezeNet {
    let stem = dim_or(sd, "features.0.weight", 0, 64);
    let mut fires: Vec<FirePlan> = Vec::new();
    let mut input = stem;
    for (offset, item) in VERSIONS[version].items.iter().enumerate() {
        if *item == Fire {
            let index = offset + 2;
            let width = |conv: &str, fallback| {
                dim_or(sd, &format!("features.{index}.{conv}.weight"), 0, fallback)
            };
            let squeeze = width("squeeze", input);
            let fire = FirePlan {
                index,
                input,
                squeeze,
                expand1x1: width("expand1x1", squeeze),
                expand3x3: width("expand3x3", squeeze),
            };
            input = fire.output();
            fires.push(fire);
        }
    }
    SqueezeNet {
        version,
        in_channels: dim_or(sd, "features.0.weight", 1, 3),
        stem,
        fires,
        classes: dim_or(sd, "classifier.1.weight", 0, 1000),
    }
}

impl SqueezeNet {
    pub fn name(&self) -> String {
        VERSIONS[self.version].name.to_owned()
    }

    pub fn expected(&self) -> Vec<Expected> {
        let k = VERSIONS[self.version].stem.0;
        let mut keys = vec![
            key(
                "features.0.weight".into(),
                vec![self.stem, self.in_channels, k, k],
            ),
            key("features.0.bias".into(), vec![self.stem]),
        ];
        for f in &self.fires {
            for (conv, out, inp, k) in [
                ("squeeze", f.squeeze, f.input, 1),
                ("expand1x1", f.expand1x1, f.squeeze, 1),
                ("expand3x3", f.expand3x3, f.squeeze, 3),
            ] {
                let prefix = format!("features.{}.{conv}", f.index);
                keys.push(key(format!("{prefix}.weight"), vec![out, inp, k, k]));
                keys.push(key(format!("{prefix}.bias"), vec![out]));
            }
        }
        let last = self.fires.last().map_or(self.stem, FirePlan::output);
        keys.push(key(
            "classifier.1.weight".into(),
            vec![self.classes, last, 1, 1],
        ));
        keys.push(key("classifier.1.bias".into(), vec![self.classes]));
        keys
    }

    pub fn build(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, TorchvisionError> {
        let version = &VERSIONS[self.version];
        let (_, stride) = version.stem;
        let x = cx.conv(input, "features.0", Conv2d::new(stride, 0))?;
        let mut x = cx.graph.relu("features.1", &x);
        for (offset, item) in version.items.iter().enumerate() {
            let index = offset + 2;
            x = match item {
                Pool => {
                    let pool = Pool2d::new(3, 2, 0).ceil_mode();
                    cx.graph.max_pool(&format!("features.{index}"), &x, pool)?
                }
                Fire => fire(cx, &x, index)?,
            };
        }
        let x = cx.conv(&x, "classifier.1", Conv2d::new(1, 0))?;
        let x = cx.graph.relu("classifier.2", &x);
        cx.pool_flatten("classifier.3", &x)
    }
}

/// `Fire` at `features.<index>`: squeeze + ReLU, then Concat(ReLU(expand1x1), ReLU(expand3x3)).
fn fire(cx: &mut Context<'_>, x: &Value, index: usize) -> Result<Value, TorchvisionError> {
    let scope = format!("features.{index}");
    let sub = |name: &str| format!("{scope}.{name}");
    let s = cx.conv(x, &sub("squeeze"), Conv2d::new(1, 0))?;
    let s = cx.graph.relu(&sub("squeeze_activation"), &s);
    let e1 = cx.conv(&s, &sub("expand1x1"), Conv2d::new(1, 0))?;
    let e1 = cx.graph.relu(&sub("expand1x1_activation"), &e1);
    let e3 = cx.conv(&s, &sub("expand3x3"), Conv2d::new(1, 1))?;
    let e3 = cx.graph.relu(&sub("expand3x3_activation"), &e3);
    cx.graph.concat(&scope, &[&e1, &e3], 0)
}
