//! Architectures: which one a checkpoint holds, the keys and shapes it must have, and its
//! eval-mode graph. Each family module derives every width, class count and group count
//! from the tensor shapes; a name fixes only the topology (block types and counts).

pub(crate) mod alexnet;
pub(crate) mod convnext;
pub(crate) mod densenet;
pub(crate) mod efficientnet;
pub(crate) mod googlenet;
mod layers;
pub(crate) mod mnasnet;
pub(crate) mod mobilenet;
pub(crate) mod regnet;
pub(crate) mod resnet;
pub(crate) mod shufflenet;
pub(crate) mod squeezenet;
pub(crate) mod vgg;
pub(crate) mod vit;

use std::fmt;

use ckpt_formats::torch::Checkpoint;

use super::fold::{folded_bias, scales, BatchNorm};
use super::graph::{GraphBuilder, Value, Weight};
use super::ops::{Conv2d, Pool2d};
use super::store::{Deferred, Transform};
use super::weights::{Expected, StateDict};
use super::OnnxError;

/// How the architecture was chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// From the checkpoint's `arch` field, else from key names and shapes.
    Auto,
    /// A torchvision model name (`--arch resnet50`).
    Named(String),
}

/// Where the architecture came from, for the report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Named by the caller ([`Choice::Named`]).
    Flag,
    /// The checkpoint's `arch` field.
    ArchField,
    /// Detected from key names and shapes.
    Keys,
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Source::Flag => "--arch",
            Source::ArchField => "the checkpoint's `arch` field",
            Source::Keys => "key names and shapes",
        })
    }
}

/// A resolved architecture, ready to check and build.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arch {
    ResNet(resnet::ResNet),
    Vgg(vgg::Vgg),
    AlexNet(alexnet::AlexNet),
    SqueezeNet(squeezenet::SqueezeNet),
    MobileNet(mobilenet::MobileNet),
    ShuffleNet(shufflenet::ShuffleNet),
    DenseNet(densenet::DenseNet),
    MnasNet(mnasnet::MnasNet),
    EfficientNet(efficientnet::EfficientNet),
    RegNet(regnet::RegNet),
    GoogLeNet(googlenet::GoogLeNet),
    ConvNext(convnext::ConvNext),
    VisionTransformer(vit::VisionTransformer),
}

impl Arch {
    /// The torchvision name, or a description for a non-standard variant.
    pub fn name(&self) -> String {
        match self {
            Arch::ResNet(a) => a.name(),
            Arch::Vgg(a) => a.name(),
            Arch::AlexNet(a) => a.name(),
            Arch::SqueezeNet(a) => a.name(),
            Arch::MobileNet(a) => a.name(),
            Arch::ShuffleNet(a) => a.name(),
            Arch::DenseNet(a) => a.name(),
            Arch::MnasNet(a) => a.name(),
            Arch::EfficientNet(a) => a.name(),
            Arch::RegNet(a) => a.name(),
            Arch::GoogLeNet(a) => a.name(),
            Arch::ConvNext(a) => a.name(),
            Arch::VisionTransformer(a) => a.name(),
        }
    }

    /// Every state-dict key this architecture has, with its shape.
    pub fn expected(&self) -> Vec<Expected> {
        match self {
            Arch::ResNet(a) => a.expected(),
            Arch::Vgg(a) => a.expected(),
            Arch::AlexNet(a) => a.expected(),
            Arch::SqueezeNet(a) => a.expected(),
            Arch::MobileNet(a) => a.expected(),
            Arch::ShuffleNet(a) => a.expected(),
            Arch::DenseNet(a) => a.expected(),
            Arch::MnasNet(a) => a.expected(),
            Arch::EfficientNet(a) => a.expected(),
            Arch::RegNet(a) => a.expected(),
            Arch::GoogLeNet(a) => a.expected(),
            Arch::ConvNext(a) => a.expected(),
            Arch::VisionTransformer(a) => a.expected(),
        }
    }

    /// Builds the eval-mode graph from `input` and returns its logits.
    pub fn build(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, OnnxError> {
        match self {
            Arch::ResNet(a) => a.build(cx, input),
            Arch::Vgg(a) => a.build(cx, input),
            Arch::AlexNet(a) => a.build(cx, input),
            Arch::SqueezeNet(a) => a.build(cx, input),
            Arch::MobileNet(a) => a.build(cx, input),
            Arch::ShuffleNet(a) => a.build(cx, input),
            Arch::DenseNet(a) => a.build(cx, input),
            Arch::MnasNet(a) => a.build(cx, input),
            Arch::EfficientNet(a) => a.build(cx, input),
            Arch::RegNet(a) => a.build(cx, input),
            Arch::GoogLeNet(a) => a.build(cx, input),
            Arch::ConvNext(a) => a.build(cx, input),
            Arch::VisionTransformer(a) => a.build(cx, input),
        }
    }
}

/// Every name `--arch` accepts.
pub fn names() -> Vec<&'static str> {
    resnet::NAMES
        .iter()
        .chain(vgg::NAMES.iter())
        .chain(alexnet::NAMES.iter())
        .chain(squeezenet::NAMES.iter())
        .chain(mobilenet::NAMES.iter())
        .chain(shufflenet::NAMES.iter())
        .chain(densenet::NAMES.iter())
        .chain(mnasnet::NAMES.iter())
        .chain(efficientnet::NAMES.iter())
        .chain(regnet::NAMES.iter())
        .chain(googlenet::NAMES.iter())
        .chain(convnext::NAMES.iter())
        .chain(vit::NAMES.iter())
        .copied()
        .collect()
}

/// Picks the architecture for `sd`: `--arch`, else a known `arch` field, else the keys.
pub fn resolve(choice: &Choice, sd: &StateDict) -> Result<(Arch, Source), OnnxError> {
    if let Choice::Named(name) = choice {
        return match named(name, sd)? {
            Some(arch) => Ok((arch, Source::Flag)),
            None => Err(OnnxError::Arch {
                what: format!(
                    "unknown architecture `{name}`; supported: {}",
                    names().join(", ")
                ),
            }),
        };
    }
    if let Some(field) = &sd.arch_field {
        if let Some(arch) = named(field, sd)? {
            return Ok((arch, Source::ArchField));
        }
    }
    if let Some(arch) = resnet::detect(sd)? {
        return Ok((Arch::ResNet(arch), Source::Keys));
    }
    // Before VGG: AlexNet's `classifier.6` would otherwise pass VGG's first test.
    if let Some(arch) = alexnet::detect(sd)? {
        return Ok((Arch::AlexNet(arch), Source::Keys));
    }
    if let Some(arch) = vgg::detect(sd)? {
        return Ok((Arch::Vgg(arch), Source::Keys));
    }
    if let Some(arch) = squeezenet::detect(sd)? {
        return Ok((Arch::SqueezeNet(arch), Source::Keys));
    }
    if let Some(arch) = mobilenet::detect(sd)? {
        return Ok((Arch::MobileNet(arch), Source::Keys));
    }
    if let Some(arch) = shufflenet::detect(sd)? {
        return Ok((Arch::ShuffleNet(arch), Source::Keys));
    }
    if let Some(arch) = densenet::detect(sd)? {
        return Ok((Arch::DenseNet(arch), Source::Keys));
    }
    if let Some(arch) = mnasnet::detect(sd)? {
        return Ok((Arch::MnasNet(arch), Source::Keys));
    }
    if let Some(arch) = efficientnet::detect(sd)? {
        return Ok((Arch::EfficientNet(arch), Source::Keys));
    }
    if let Some(arch) = regnet::detect(sd)? {
        return Ok((Arch::RegNet(arch), Source::Keys));
    }
    if let Some(arch) = googlenet::detect(sd)? {
        return Ok((Arch::GoogLeNet(arch), Source::Keys));
    }
    if let Some(arch) = convnext::detect(sd)? {
        return Ok((Arch::ConvNext(arch), Source::Keys));
    }
    if let Some(arch) = vit::detect(sd)? {
        return Ok((Arch::VisionTransformer(arch), Source::Keys));
    }
    let sample: Vec<&str> = sd.keys().take(4).collect();
    Err(OnnxError::Arch {
        what: unrecognised(&sample, names().len()),
    })
}

/// The error for a state dict of no torchvision architecture: most often the user's own
/// model, whose code a state dict does not hold, so it says how that exports first.
fn unrecognised(sample: &[&str], known: usize) -> String {
    format!(
        "no torchvision architecture matches these keys ({}…). A state dict holds weights, not \
         the model's code: export your own model from Python as a torch.export archive \
         (torch.export.save(torch.export.export(model, (x,)), \"model.pt2\")) or a trace \
         (torch.jit.trace(model, x).save(\"model.pt\")) and run `ckpt to-onnx model.pt2 -o model.onnx`; \
         for a torchvision model saved under other keys, pass --arch NAME (one of {known}, \
         e.g. resnet50, vit_b_16; listed in the ONNX guide)",
        sample.join(", ")
    )
}

fn named(name: &str, sd: &StateDict) -> Result<Option<Arch>, OnnxError> {
    if let Some(a) = resnet::from_name(name, sd)? {
        return Ok(Some(Arch::ResNet(a)));
    }
    if let Some(a) = vgg::from_name(name, sd)? {
        return Ok(Some(Arch::Vgg(a)));
    }
    if let Some(a) = alexnet::from_name(name, sd)? {
        return Ok(Some(Arch::AlexNet(a)));
    }
    if let Some(a) = squeezenet::from_name(name, sd)? {
        return Ok(Some(Arch::SqueezeNet(a)));
    }
    if let Some(a) = mobilenet::from_name(name, sd)? {
        return Ok(Some(Arch::MobileNet(a)));
    }
    if let Some(a) = shufflenet::from_name(name, sd)? {
        return Ok(Some(Arch::ShuffleNet(a)));
    }
    if let Some(a) = densenet::from_name(name, sd)? {
        return Ok(Some(Arch::DenseNet(a)));
    }
    if let Some(a) = mnasnet::from_name(name, sd)? {
        return Ok(Some(Arch::MnasNet(a)));
    }
    if let Some(a) = efficientnet::from_name(name, sd)? {
        return Ok(Some(Arch::EfficientNet(a)));
    }
    if let Some(a) = regnet::from_name(name, sd)? {
        return Ok(Some(Arch::RegNet(a)));
    }
    if let Some(a) = googlenet::from_name(name, sd)? {
        return Ok(Some(Arch::GoogLeNet(a)));
    }
    if let Some(a) = convnext::from_name(name, sd)? {
        return Ok(Some(Arch::ConvNext(a)));
    }
    Ok(vit::from_name(name, sd)?.map(Arch::VisionTransformer))
}

/// BatchNorm state-dict entries under `prefix` for `channels` channels.
pub fn bn_keys(prefix: &str, channels: u64) -> Vec<Expected> {
    let mut keys: Vec<Expected> = ["weight", "bias", "running_mean", "running_var"]
        .iter()
        .map(|p| Expected {
            key: format!("{prefix}.{p}"),
            shape: vec![channels],
            optional: false,
        })
        .collect();
    keys.push(Expected {
        key: format!("{prefix}.num_batches_tracked"),
        shape: Vec::new(),
        optional: true,
    });
    keys
}

/// A required key of a given shape.
pub fn key(name: String, shape: Vec<u64>) -> Expected {
    Expected {
        key: name,
        shape,
        optional: false,
    }
}

/// Dimension `axis` of `key`'s shape, or `fallback` when the key is absent or too short.
/// Planning with fallbacks lets a strict check report every missing key at once.
pub fn dim_or(sd: &StateDict, key: &str, axis: usize, fallback: u64) -> u64 {
    sd.shape(key)
        .and_then(|s| s.get(axis).copied())
        .unwrap_or(fallback)
}

/// How many consecutive indices from `start` have a key: `key(start)`, `key(start + 1)`, …
pub fn count_from(sd: &StateDict, start: usize, key: impl Fn(usize) -> String) -> usize {
    (start..).take_while(|&i| sd.has(&key(i))).count()
}

/// `nn.AdaptiveAvgPool2d(out)` on a fixed-size feature map: nothing when the map already
/// has that size, else one AveragePool when torch's windows (`⌊i·H/out⌋ .. ⌈(i+1)·H/out⌉`)
/// all have one size and one stride, which covers multiples of `out` and, e.g., 13 → 6.
/// Other sizes are an error naming the feature map, since no ATC-safe op computes them.
pub fn adaptive_average_pool(
    cx: &mut Context<'_>,
    scope: &str,
    x: &Value,
    out: [u64; 2],
) -> Result<Value, OnnxError> {
    let &[_, h, w] = x.shape() else {
        return Err(OnnxError::Shape {
            what: format!("{scope}: expected a C×H×W feature map, got {:?}", x.shape()),
        });
    };
    if [h, w] == out {
        return Ok(x.clone());
    }
    let (Some((kh, sh)), Some((kw, sw))) = (uniform_windows(h, out[0]), uniform_windows(w, out[1]))
    else {
        return Err(OnnxError::Option {
            what: format!(
                "{scope}: AdaptiveAvgPool2d({}, {}) on a {h}×{w} feature map has uneven windows;                  choose an --input-shape that gives a multiple of {}×{}, such as 3,224,224",
                out[0], out[1], out[0], out[1]
            ),
        });
    };
    let pool = Pool2d {
        kernel: [kh, kw],
        stride: [sh, sw],
        pad: [0, 0],
        ceil: false,
    };
    cx.graph.average_pool(scope, x, pool)
}

/// torch's adaptive windows of `size` into `out` as (kernel, stride) when every window
/// has the same length and consecutive windows start the same distance apart.
fn uniform_windows(size: u64, out: u64) -> Option<(u64, u64)> {
    if out == 0 || size < out {
        return None;
    }
    let window = |i: u64| (i * size / out, ((i + 1) * size).div_ceil(out));
    let (start, end) = window(0);
    let kernel = end - start;
    let stride = if out > 1 { window(1).0 } else { 1 };
    let uniform = (0..out).all(|i| window(i) == (i * stride, i * stride + kernel));
    uniform.then_some((kernel, stride))
}

/// What building a graph needs: the builder, the checkpoint to read weights from, its
/// (already checked) state dict, and whether to fold BatchNorm.
pub struct Context<'a> {
    pub graph: GraphBuilder,
    pub ckpt: &'a mut Checkpoint,
    pub sd: &'a StateDict,
    pub fold_bn: bool,
    /// googlenet's `transform_input` (see [`googlenet`]).
    pub transform_input: bool,
}

impl Context<'_> {
    /// The state-dict tensor `key` as an initializer of the same name.
    pub fn weight(&mut self, key: &str) -> Result<Weight, OnnxError> {
        let dims = self.sd.require(key)?.to_vec();
        self.transformed_weight(key, None, Transform::Copy, key, dims)
    }

    /// Initializer `name` of shape `dims`: the state-dict tensor `key` (only rows
    /// `first..first + count` of its first axis when `rows` is given) with `transform`
    /// applied. When the checkpoint's bytes are mapped, nothing is read now: the writer
    /// computes the bytes (or copies them as they are) when it writes them. Otherwise the
    /// tensor is read and transformed here, with the same arithmetic.
    pub fn transformed_weight(
        &mut self,
        key: &str,
        rows: Option<(u64, u64)>,
        transform: Transform,
        name: &str,
        dims: Vec<u64>,
    ) -> Result<Weight, OnnxError> {
        if let Some(mapped) = self.sd.map(self.ckpt, key)? {
            let source = match rows {
                Some((first, count)) => mapped.rows(first, count),
                None => Some(mapped),
            };
            if let Some(deferred) = source.and_then(|s| Deferred::new(s, transform.clone())) {
                return self.graph.deferred_weight(name, dims, deferred);
            }
        }
        let values = self.sd.read(self.ckpt, key)?;
        let shape_error = || OnnxError::Shape {
            what: format!("`{key}` does not have the shape {name} needs"),
        };
        let values = match rows {
            None => &values[..],
            Some((first, count)) => {
                let all = self.sd.require(key)?.first().copied().unwrap_or(0);
                let per_row = (values.len() as u64).checked_div(all).unwrap_or(0);
                let range = first
                    .checked_add(count)
                    .filter(|&end| end <= all)
                    .map(|end| (first * per_row) as usize..(end * per_row) as usize)
                    .ok_or_else(shape_error)?;
                &values[range]
            }
        };
        if transform == Transform::Copy {
            return self.graph.weight(name, dims, values);
        }
        if !transform.fits(values.len()) {
            return Err(shape_error());
        }
        let src: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut out = Vec::new();
        transform.apply(&src, &mut out);
        let values: Vec<f32> = out
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        self.graph.weight(name, dims, &values)
    }

    /// The state-dict tensor `key` if present.
    pub fn optional_weight(&mut self, key: &str) -> Result<Option<Weight>, OnnxError> {
        if self.sd.has(key) {
            self.weight(key).map(Some)
        } else {
            Ok(None)
        }
    }

    /// `nn.Conv2d` at `conv` (weight, optional bias).
    pub fn conv(&mut self, x: &Value, conv: &str, p: Conv2d) -> Result<Value, OnnxError> {
        let w = self.weight(&format!("{conv}.weight"))?;
        let b = self.optional_weight(&format!("{conv}.bias"))?;
        self.graph.conv(conv, x, &w, b.as_ref(), p)
    }

    /// `nn.Conv2d` at `conv` then eval-mode `nn.BatchNorm2d` at `bn` (epsilon `eps`): one
    /// Conv with folded weights (named `<conv>.weight.fused_bn`, `<conv>.bias.fused_bn`)
    /// unless folding is off, then a Conv and a BatchNormalization on state-dict names.
    pub fn conv_bn(
        &mut self,
        x: &Value,
        conv: &str,
        bn: &str,
        eps: f64,
        p: Conv2d,
    ) -> Result<Value, OnnxError> {
        if !self.fold_bn {
            let y = self.conv(x, conv, p)?;
            return self.batch_norm(&y, bn, eps);
        }
        let weight_key = format!("{conv}.weight");
        let bias_key = format!("{conv}.bias");
        let dims = self.sd.require(&weight_key)?.to_vec();
        let out_channels = dims.first().copied().unwrap_or(0);
        let too_large = || OnnxError::Shape {
            what: format!("`{weight_key}` is too large"),
        };
        let weights = usize::try_from(dims.iter().product::<u64>()).map_err(|_| too_large())?;
        let bias = if self.sd.has(&bias_key) {
            Some(self.sd.read(self.ckpt, &bias_key)?)
        } else {
            None
        };
        let mut read = |name: &str| self.sd.read(self.ckpt, &format!("{bn}.{name}"));
        let norm = BatchNorm {
            weight: read("weight")?,
            bias: read("bias")?,
            running_mean: read("running_mean")?,
            running_var: read("running_var")?,
            eps,
        };
        let channels = usize::try_from(out_channels).map_err(|_| too_large())?;
        let scale = scales(&norm, channels, weights, bias.as_ref().map(Vec::len))?;
        let folded_bias = folded_bias(bias.as_deref(), &norm, &scale);
        let w = self.transformed_weight(
            &weight_key,
            None,
            Transform::ScaleRows(scale.into()),
            &format!("{weight_key}.fused_bn"),
            dims,
        )?;
        let b = self.graph.weight(
            &format!("{bias_key}.fused_bn"),
            vec![out_channels],
            &folded_bias,
        )?;
        self.graph.conv(conv, x, &w, Some(&b), p)
    }

    /// Eval-mode `nn.BatchNorm2d` at `bn` as a BatchNormalization on its state-dict names
    /// (for a BatchNorm no Conv precedes, or when folding is off).
    pub fn batch_norm(&mut self, x: &Value, bn: &str, eps: f64) -> Result<Value, OnnxError> {
        let params = ["weight", "bias", "running_mean", "running_var"]
            .map(|name| self.weight(&format!("{bn}.{name}")));
        let [w, b, m, v] = params;
        self.graph
            .batch_norm(bn, x, [&w?, &b?, &m?, &v?], eps as f32)
    }

    /// `nn.Linear` at `linear` as Gemm.
    pub fn linear(&mut self, x: &Value, linear: &str) -> Result<Value, OnnxError> {
        let w = self.weight(&format!("{linear}.weight"))?;
        let b = self.optional_weight(&format!("{linear}.bias"))?;
        self.graph.gemm(linear, x, &w, b.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::{names, uniform_windows, unrecognised};

    #[test]
    fn an_unrecognised_state_dict_is_told_how_to_export_its_own_model_not_given_a_list() {
        let message = unrecognised(&["encoder.0.weight", "head.bias"], names().len());
        assert!(message.contains("torch.export.save"), "{message}");
        assert!(message.contains("torch.jit.trace"), "{message}");
        assert!(message.contains("ckpt to-onnx model.pt2"), "{message}");
        assert!(
            message.contains(&format!("one of {}", names().len())),
            "{message}"
        );
        assert!(!message.contains("mobilenet_v3_small"), "{message}");
    }

    #[test]
    fn adaptive_windows_that_one_average_pool_expresses() {
        // alexnet: AdaptiveAvgPool2d(6) on 13×13 (a 447-pixel input) is a 3/2 window.
        assert_eq!(uniform_windows(13, 6), Some((3, 2)));
        assert_eq!(uniform_windows(12, 6), Some((2, 2)));
        assert_eq!(uniform_windows(6, 6), Some((1, 1)));
        assert_eq!(uniform_windows(9, 1), Some((9, 1)));
        assert_eq!(uniform_windows(14, 6), None);
        assert_eq!(uniform_windows(5, 6), None);
    }
}
