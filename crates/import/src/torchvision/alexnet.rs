//! torchvision's AlexNet (the "one weird trick" variant: 64-192-384-256-256 convs).

use super::{dim_or, key, Context, Conv2d, Expected, Pool2d, StateDict, TorchvisionError, Value};

/// The names this module builds.
pub const NAMES: [&str; 1] = ["alexnet"];

/// `features`: (index, kernel, stride, padding) of each conv; a ReLU follows each at
/// `index + 1`, and MaxPool(3, 2) sits at [`POOLS`].
const CONVS: [(usize, u64, u64, u64); 5] = [
    (0, 11, 4, 2),
    (3, 5, 1, 2),
    (6, 3, 1, 1),
    (8, 3, 1, 1),
    (10, 3, 1, 1),
];
const POOLS: [usize; 3] = [2, 5, 12];
/// `nn.AdaptiveAvgPool2d((6, 6))` before the classifier.
const POOLED: u64 = 6;

/// An AlexNet with widths from the checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlexNet {
    in_channels: u64,
    /// Output channels of each conv in [`CONVS`].
    widths: [u64; 5],
    /// Classifier Linear widths (`classifier.1`, `.4`, `.6`): hidden, hidden, classes.
    classifier: [u64; 3],
}

/// AlexNet for the name `alexnet`, or `None` for another family's name.
pub fn from_name(name: &str, sd: &StateDict) -> Result<Option<AlexNet>, TorchvisionError> {
    Ok(NAMES.contains(&name).then(|| plan(sd)))
}

/// AlexNet recognised from an 11×11 `features.0` and Linears at `classifier.1/4/6`.
pub fn detect(sd: &StateDict) -> Result<Option<AlexNet>, TorchvisionError> {
    let stem_11 = sd
        .shape("features.0.weight")
        .is_some_and(|s| s.len() == 4 && s[2..] == [11, 11]);
    let head = [
        "classifier.1.weight",
        "classifier.4.weight",
        "classifier.6.weight",
    ]
    .iter()
    .all(|k| sd.has(k));
    Ok((stem_11 && head).then(|| plan(sd)))
}

/// Reads the widths; a missing key takes torchvision's default so that the strict check
/// afterwards lists every missing key.
fn plan(sd: &StateDict) -> AlexNet {
    let defaults = [64, 192, 384, 256, 256];
    AlexNet {
        in_channels: dim_or(sd, "features.0.weight", 1, 3),
        widths: std::array::from_fn(|i| {
            dim_or(
                sd,
                &format!("features.{}.weight", CONVS[i].0),
                0,
                defaults[i],
            )
        }),
        classifier: [
            dim_or(sd, "classifier.1.weight", 0, 4096),
            dim_or(sd, "classifier.4.weight", 0, 4096),
            dim_or(sd, "classifier.6.weight", 0, 1000),
        ],
    }
}

impl AlexNet {
    pub fn name(&self) -> String {
        NAMES[0].to_owned()
    }

    pub fn expected(&self) -> Vec<Expected> {
        let mut keys = Vec::new();
        let mut input = self.in_channels;
        for (&(index, k, _, _), &output) in CONVS.iter().zip(&self.widths) {
            keys.push(key(
                format!("features.{index}.weight"),
                vec![output, input, k, k],
            ));
            keys.push(key(format!("features.{index}.bias"), vec![output]));
            input = output;
        }
        let [h1, h2, classes] = self.classifier;
        let flat = input * POOLED * POOLED;
        for (index, out, inp) in [(1, h1, flat), (4, h2, h1), (6, classes, h2)] {
            keys.push(key(format!("classifier.{index}.weight"), vec![out, inp]));
            keys.push(key(format!("classifier.{index}.bias"), vec![out]));
        }
        keys
    }

    pub fn build(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, TorchvisionError> {
        let mut x = input.clone();
        for &(index, _, stride, pad) in &CONVS {
            x = cx.conv(&x, &format!("features.{index}"), Conv2d::new(stride, pad))?;
            x = cx.graph.relu(&format!("features.{}", index + 1), &x);
            let pool = index + 2;
            if POOLS.contains(&pool) {
                let scope = format!("features.{pool}");
                x = cx.graph.max_pool(&scope, &x, Pool2d::new(3, 2, 0))?;
            }
        }
        let x = cx.graph.adaptive_average_pool("avgpool", &x, [POOLED; 2])?;
        let x = cx.graph.flatten("", &x)?;
        let x = cx.linear(&x, "classifier.1")?;
        let x = cx.graph.relu("classifier.2", &x);
        let x = cx.linear(&x, "classifier.4")?;
        let x = cx.graph.relu("classifier.5", &x);
        cx.linear(&x, "classifier.6")
    }
}
