//! The whole export: checkpoint → state dict → architecture → graph → ATC check → file.

use std::path::Path;

use ckpt_formats::torch::Checkpoint;

use super::arch::{self, googlenet, Choice, Context, Source};
use super::atc;
use super::graph::GraphBuilder;
use super::weights::StateDict;
use super::write::{self, WriteOptions, Written};
use super::{Batch, OnnxError, Opset};

/// Everything `to-onnx` can be asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportOptions {
    /// Which architecture to build.
    pub arch: Choice,
    /// The default-domain opset of the file.
    pub opset: Opset,
    /// Per-sample input shape (C, H, W).
    pub input: [u64; 3],
    /// The batch axis: dynamic (named) or a fixed size.
    pub batch: Batch,
    /// The graph input's name.
    pub input_name: String,
    /// The graph output's name.
    pub output_name: String,
    /// Fold BatchNorm into the convolution before it where it can be.
    pub fold_bn: bool,
    /// googlenet only: the model was built with `transform_input=True` (torchvision's
    /// default with pretrained weights), which re-normalises the input inside `forward`.
    pub transform_input: bool,
    /// File layout and memory budget.
    pub write: WriteOptions,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            arch: Choice::Auto,
            opset: Opset::default(),
            input: [3, 224, 224],
            batch: Batch::Dynamic("batch".to_owned()),
            input_name: "input".to_owned(),
            output_name: "output".to_owned(),
            fold_bn: true,
            transform_input: false,
            write: WriteOptions::default(),
        }
    }
}

/// What an export did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportReport {
    /// The architecture built (`resnet50`).
    pub arch: String,
    /// How it was chosen.
    pub source: Source,
    /// Wrapper prefixes removed from the keys.
    pub stripped: Vec<String>,
    /// ONNX nodes written.
    pub nodes: usize,
    /// ONNX initializers (weights) written.
    pub initializers: usize,
    /// The file(s) written.
    pub written: Written,
    /// What the export assumed that the weights do not say, for the user to check.
    pub notes: Vec<String>,
}

/// Exports the torchvision-family model in `ckpt` to `out` as ATC-ready ONNX (`ckpt
/// to-onnx` on a checkpoint). `.pt2` archives and TorchScript traces go through
/// [`export_program`](crate::program::export_program) and
/// [`export_script`](crate::script::export_script) instead.
pub fn export(
    ckpt: &mut Checkpoint,
    options: &ExportOptions,
    out: &Path,
) -> Result<ExportReport, OnnxError> {
    if options.batch == Batch::Static {
        return Err(OnnxError::Option {
            what: "--batch static applies to torch.export (.pt2) and TorchScript programs; a torchvision checkpoint is exported with `--batch dynamic` or a fixed size".into(),
        });
    }
    if options.batch == Batch::Fixed(0) || options.input.contains(&0) {
        return Err(OnnxError::Option {
            what: "the batch and every input dimension must be at least 1".into(),
        });
    }
    let sd = StateDict::locate(ckpt)?;
    let (arch, source) = arch::resolve(&options.arch, &sd)?;
    let name = arch.name();
    let googlenet = matches!(arch, arch::Arch::GoogLeNet(_));
    if options.transform_input && !googlenet {
        return Err(OnnxError::Option {
            what: format!("--transform-input applies to googlenet only, not {name}"),
        });
    }
    sd.check(&name, &arch.expected())?;
    let mut cx = Context {
        graph: GraphBuilder::with_store(
            options.opset,
            options.batch.clone(),
            options.write.store_for(out),
        ),
        ckpt,
        sd: &sd,
        fold_bn: options.fold_bn,
        transform_input: options.transform_input,
    };
    let input = cx
        .graph
        .input(&options.input_name, options.input.to_vec())?;
    let logits = arch.build(&mut cx, &input)?;
    let model = cx.graph.finish(&logits, &options.output_name)?;
    atc::validate(&model, &options.batch)?;
    let written = write::write(&model, out, &options.write)?;
    Ok(ExportReport {
        arch: name,
        source,
        stripped: sd.stripped.clone(),
        nodes: model.graph.node.len(),
        initializers: model.initializers.len(),
        written,
        notes: if googlenet && !options.transform_input {
            vec![googlenet::TRANSFORM_INPUT_NOTE.to_owned()]
        } else {
            Vec::new()
        },
    })
}
