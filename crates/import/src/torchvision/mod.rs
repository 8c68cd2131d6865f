//! torchvision checkpoints as aten programs: which architecture a state dict holds, the
//! keys and shapes it must have, and the program torch.export records for that module in
//! eval mode, which the ONNX lowering exports as it exports any `.pt2` program. Each
//! family module derives every width, class count and group count from the tensor shapes;
//! a name fixes only the topology (block types and counts).

pub(crate) mod alexnet;
pub(crate) mod convnext;
pub(crate) mod densenet;
pub(crate) mod efficientnet;
mod error;
pub(crate) mod googlenet;
mod layers;
pub(crate) mod mnasnet;
pub(crate) mod mobilenet;
mod program;
pub(crate) mod regnet;
pub(crate) mod resnet;
pub(crate) mod shufflenet;
pub(crate) mod squeezenet;
mod state_dict;
pub(crate) mod vgg;
pub(crate) mod vit;

use std::fmt;

use ckpt_aten::program::ExportedProgram;

pub use error::TorchvisionError;
pub(crate) use program::{Act, Builder, Conv2d, Pool2d, Value};
pub use state_dict::{Expected, StateDict, CONTAINER_KEYS};

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
pub(crate) enum Arch {
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

    /// Writes the eval-mode program from `input` and returns its logits.
    pub fn build(&self, cx: &mut Context<'_>, input: &Value) -> Result<Value, TorchvisionError> {
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

/// Each family's torchvision names, in the order detection tries them.
const FAMILIES: [(&str, &[&str]); 13] = [
    ("ResNet, ResNeXt, Wide ResNet", &resnet::NAMES),
    ("VGG", &vgg::NAMES),
    ("AlexNet", &alexnet::NAMES),
    ("SqueezeNet", &squeezenet::NAMES),
    ("MobileNet", &mobilenet::NAMES),
    ("ShuffleNet v2", &shufflenet::NAMES),
    ("DenseNet", &densenet::NAMES),
    ("MNASNet", &mnasnet::NAMES),
    ("EfficientNet", &efficientnet::NAMES),
    ("RegNet", &regnet::NAMES),
    ("GoogLeNet", &googlenet::NAMES),
    ("ConvNeXt", &convnext::NAMES),
    ("Vision Transformer", &vit::NAMES),
];

/// Every name `--arch` accepts.
pub fn names() -> Vec<&'static str> {
    FAMILIES
        .iter()
        .flat_map(|(_, names)| names.iter().copied())
        .collect()
}

/// `docs/torchvision.md`: every family and name, from the families' own tables.
pub fn document() -> String {
    let mut doc = String::from(
        "# torchvision architectures\n\n\
         Generated from the families' name tables (`crates/import/src/torchvision/`); \
         regenerate with\n`CKPT_BLESS=1 cargo test --release --workspace --lib \
         torchvision_document`.\n\n\
         `ckpt to-onnx CKPT` recognises a plain state dict of these torchvision models from \
         its keys and shapes,\nor takes one by `--arch NAME`. Every width, group count and \
         class count comes from the tensor\nshapes; a name fixes only the topology, so a \
         model of the same family with other widths or\nclasses exports too (named by \
         what it is).\n\n\
         | family | names |\n|---|---|\n",
    );
    for (family, names) in FAMILIES {
        let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
        doc.push_str(&format!("| {family} | {} |\n", names.join(", ")));
    }
    doc
}

/// Picks the architecture for `sd`: `--arch`, else a known `arch` field, else the keys.
pub(crate) fn resolve(choice: &Choice, sd: &StateDict) -> Result<(Arch, Source), TorchvisionError> {
    if let Choice::Named(name) = choice {
        return match named(name, sd)? {
            Some(arch) => Ok((arch, Source::Flag)),
            None => Err(TorchvisionError::Arch {
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
    Err(TorchvisionError::Arch {
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

fn named(name: &str, sd: &StateDict) -> Result<Option<Arch>, TorchvisionError> {
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
pub(crate) fn bn_keys(prefix: &str, channels: u64) -> Vec<Expected> {
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
pub(crate) fn key(name: String, shape: Vec<u64>) -> Expected {
    Expected {
        key: name,
        shape,
        optional: false,
    }
}

/// Dimension `axis` of `key`'s shape, or `fallback` when the key is absent or too short.
/// Planning with fallbacks lets a strict check report every missing key at once.
pub(crate) fn dim_or(sd: &StateDict, key: &str, axis: usize, fallback: u64) -> u64 {
    sd.shape(key)
        .and_then(|s| s.get(axis).copied())
        .unwrap_or(fallback)
}

/// How many consecutive indices from `start` have a key: `key(start)`, `key(start + 1)`, …
pub(crate) fn count_from(sd: &StateDict, start: usize, key: impl Fn(usize) -> String) -> usize {
    (start..).take_while(|&i| sd.has(&key(i))).count()
}

/// What writing a program needs: the builder and the (already checked) state dict.
pub(crate) struct Context<'a> {
    pub graph: Builder,
    pub sd: &'a StateDict,
    /// googlenet's `transform_input` (see [`googlenet`]).
    pub transform_input: bool,
}

impl Context<'_> {
    /// The state-dict tensor `key` as a parameter of the program.
    pub fn weight(&mut self, key: &str) -> Result<Value, TorchvisionError> {
        let dims = self.sd.require(key)?.to_vec();
        Ok(self.graph.stored(key, &dims))
    }

    /// The state-dict tensor `key` if present.
    pub fn optional_weight(&mut self, key: &str) -> Result<Option<Value>, TorchvisionError> {
        if self.sd.has(key) {
            self.weight(key).map(Some)
        } else {
            Ok(None)
        }
    }

    /// `nn.Conv2d` at `conv` (weight, optional bias).
    pub fn conv(&mut self, x: &Value, conv: &str, p: Conv2d) -> Result<Value, TorchvisionError> {
        let w = self.weight(&format!("{conv}.weight"))?;
        let b = self.optional_weight(&format!("{conv}.bias"))?;
        self.graph.conv(conv, x, &w, b.as_ref(), p)
    }

    /// `nn.Conv2d` at `conv` then eval-mode `nn.BatchNorm2d` at `bn` (epsilon `eps`); the
    /// lowering folds the BatchNorm into the convolution unless told not to.
    pub fn conv_bn(
        &mut self,
        x: &Value,
        conv: &str,
        bn: &str,
        eps: f64,
        p: Conv2d,
    ) -> Result<Value, TorchvisionError> {
        let y = self.conv(x, conv, p)?;
        self.batch_norm(&y, bn, eps)
    }

    /// Eval-mode `nn.BatchNorm2d` at `bn`.
    pub fn batch_norm(&mut self, x: &Value, bn: &str, eps: f64) -> Result<Value, TorchvisionError> {
        let [w, b, m, v] = ["weight", "bias", "running_mean", "running_var"]
            .map(|name| self.weight(&format!("{bn}.{name}")));
        self.graph.batch_norm(bn, x, [&w?, &b?, &m?, &v?], eps)
    }

    /// `nn.Linear` at `linear` over the last axis of `x`.
    pub fn linear(&mut self, x: &Value, linear: &str) -> Result<Value, TorchvisionError> {
        let w = self.weight(&format!("{linear}.weight"))?;
        let b = self.optional_weight(&format!("{linear}.bias"))?;
        self.graph.linear(linear, x, &w, b.as_ref())
    }
}

/// A torchvision model read from a state dict, as a program.
pub struct Imported {
    /// The program, reading the state dict's tensors by key.
    pub program: ExportedProgram,
    /// The architecture (`resnet50`, or a description of a non-standard variant).
    pub arch: String,
    /// How it was chosen.
    pub source: Source,
    /// What the import assumed that the weights do not say, for the user to check.
    pub notes: Vec<String>,
}

/// The model in `sd` (chosen by `choice`) as the program torch.export records for it, for
/// an input of per-sample `input` sizes (C, H, W); `transform_input` is googlenet's. The
/// state dict's keys and shapes are checked strictly first.
pub fn import(
    sd: &StateDict,
    choice: &Choice,
    input: [u64; 3],
    transform_input: bool,
) -> Result<Imported, TorchvisionError> {
    let (arch, source) = resolve(choice, sd)?;
    let name = arch.name();
    let googlenet = matches!(arch, Arch::GoogLeNet(_));
    if transform_input && !googlenet {
        return Err(TorchvisionError::Option {
            what: format!("--transform-input applies to googlenet only, not {name}"),
        });
    }
    sd.check(&name, &arch.expected())?;
    let mut cx = Context {
        graph: Builder::default(),
        sd,
        transform_input,
    };
    let x = cx.graph.input(input.to_vec())?;
    let logits = arch.build(&mut cx, &x)?;
    Ok(Imported {
        program: cx.graph.finish(&logits),
        arch: name,
        source,
        notes: if googlenet && !transform_input {
            vec![googlenet::TRANSFORM_INPUT_NOTE.to_owned()]
        } else {
            Vec::new()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::{names, unrecognised};

    #[test]
    fn torchvision_document() {
        ckpt_base::generated_docs::assert_current(
            "torchvision.md",
            &super::document(),
            "torchvision_document",
        );
    }

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
}
