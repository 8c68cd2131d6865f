//! `to-onnx` on a checkpoint: state dict → architecture → the aten program torch.export
//! records for it ([`ckpt_import::torchvision`]) → the one lowering every program takes
//! ([`super::program`]), over the checkpoint's tensors, mapped and never all held.

use std::path::Path;

use ckpt_formats::torch::read_tensor::{self, MappedTensor};
use ckpt_formats::torch::{Checkpoint, DType, TensorRef};
use ckpt_import::torchvision::{self, Choice, Source, StateDict, TorchvisionError};

use super::program::{export_with, ProgramOptions, TensorSource};
use super::write::{WriteOptions, Written};
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
/// to-onnx` on a checkpoint): the program torch.export records for its architecture,
/// lowered as [`export_program`](crate::program::export_program) lowers a `.pt2` archive's
/// and [`export_script`](crate::script::export_script) a trace's.
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
    let imported = torchvision::import(&sd, &options.arch, options.input, options.transform_input)?;
    let program_options = ProgramOptions {
        opset: options.opset,
        batch: options.batch.clone(),
        input_name: Some(options.input_name.clone()),
        output_name: options.output_name.clone(),
        fold_bn: options.fold_bn,
        write: options.write,
    };
    let mut tensors = StateDictTensors { ckpt, sd: &sd };
    let report = export_with(&imported.program, &mut tensors, &program_options, out)?;
    Ok(ExportReport {
        arch: imported.arch,
        source: imported.source,
        stripped: sd.stripped.clone(),
        nodes: report.nodes,
        initializers: report.initializers,
        written: report.written,
        notes: imported.notes,
    })
}

/// The state dict's tensors, by key, in the checkpoint they are stored in.
struct StateDictTensors<'a> {
    ckpt: &'a mut Checkpoint,
    sd: &'a StateDict,
}

impl StateDictTensors<'_> {
    fn tensor(&self, key: &str) -> Result<&TensorRef, OnnxError> {
        Ok(self.sd.tensor(key)?)
    }
}

impl TensorSource for StateDictTensors<'_> {
    fn dims(&self, fqn: &str) -> Result<Vec<u64>, OnnxError> {
        Ok(self.tensor(fqn)?.shape.clone())
    }

    fn dtype(&self, fqn: &str) -> Result<DType, OnnxError> {
        Ok(self.tensor(fqn)?.dtype)
    }

    fn read_f32(&mut self, fqn: &str) -> Result<Vec<f32>, OnnxError> {
        let tensor = self.tensor(fqn)?.clone();
        Ok(read_tensor::read_f32(self.ckpt, &tensor)?)
    }

    fn read_i64(&mut self, fqn: &str) -> Result<Vec<i64>, OnnxError> {
        let tensor = self.tensor(fqn)?.clone();
        Ok(read_tensor::read_i64(self.ckpt, &tensor)?)
    }

    fn mapped(&self, fqn: &str) -> Option<MappedTensor> {
        let tensor = self.sd.tensor(fqn).ok()?;
        read_tensor::map_tensor(self.ckpt, tensor).ok().flatten()
    }
}

impl From<TorchvisionError> for OnnxError {
    fn from(e: TorchvisionError) -> Self {
        match e {
            TorchvisionError::Torch(e) => OnnxError::Torch(e),
            TorchvisionError::Transform(e) => OnnxError::Transform(e),
            TorchvisionError::NoStateDict => OnnxError::NoStateDict,
            TorchvisionError::Arch { what } => OnnxError::Arch { what },
            TorchvisionError::Keys { arch, report } => OnnxError::Keys { arch, report },
            TorchvisionError::Shape { what } => OnnxError::Shape { what },
            TorchvisionError::Option { what } => OnnxError::Option { what },
        }
    }
}
