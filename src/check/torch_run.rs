//! The reference side: libtorch loads a TorchScript archive and runs it in eval mode without
//! gradients, on inputs it draws itself (`torch.randn` after `torch.manual_seed`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tch::{CModule, Device, IValue, Kind, Tensor};

use super::signature::Signature;
use super::torch_outputs::match_outputs;
use super::{Array, CheckError};

/// A loaded TorchScript module, in eval mode.
pub struct TorchModel {
    module: CModule,
    path: PathBuf,
}

impl TorchModel {
    /// Loads `path` on the CPU with libtorch (`torch.jit.load`) and puts it in eval mode.
    pub fn load(path: &Path) -> Result<TorchModel, CheckError> {
        let mut module = CModule::load_on_device(path, Device::Cpu).map_err(|e| {
            CheckError::new(path, format!("libtorch cannot load it: {}", one_line(&e)))
        })?;
        module.set_eval();
        Ok(TorchModel {
            module,
            path: path.to_owned(),
        })
    }

    /// Runs `forward` on `inputs` (a batch of `batch`) without gradients; the outputs in the
    /// order of `names` (the ONNX outputs, see [`match_outputs`]).
    pub fn run(
        &self,
        inputs: &[Tensor],
        batch: u64,
        names: &[String],
    ) -> Result<Vec<Array>, CheckError> {
        let args: Vec<IValue> = inputs
            .iter()
            .map(|t| IValue::Tensor(t.shallow_clone()))
            .collect();
        let returned = tch::no_grad(|| self.module.forward_is(&args)).map_err(|e| {
            CheckError::new(
                &self.path,
                format!(
                    "libtorch failed to run it at batch {batch}: {}",
                    one_line(&e)
                ),
            )
        })?;
        match_outputs(returned, names).map_err(|e| CheckError::new(&self.path, e))
    }
}

/// Serializes use of libtorch's process-wide default generator by [`random_inputs`].
static GENERATOR: Mutex<()> = Mutex::new(());

/// For each batch size in order, one standard-normal float32 tensor `[batch, per_sample…]`
/// per graph input in graph order, drawn after `torch.manual_seed(seed)` (the seed's bits
/// passed on unchanged). libtorch's generator is global: the seeding and every draw happen
/// under one lock, so concurrent checks in one process draw the same inputs.
pub fn random_inputs(
    signature: &Signature,
    batches: &[u64],
    seed: u64,
    model: &Path,
) -> Result<Vec<Vec<Tensor>>, CheckError> {
    let _generator = GENERATOR
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    tch::manual_seed(i64::from_ne_bytes(seed.to_ne_bytes()));
    batches
        .iter()
        .map(|&batch| {
            signature
                .inputs
                .iter()
                .map(|input| draw(&input.name, batch, &input.per_sample, model))
                .collect()
        })
        .collect()
}

/// One `torch.randn(batch, *per_sample)` for the input `name`.
fn draw(name: &str, batch: u64, per_sample: &[usize], model: &Path) -> Result<Tensor, CheckError> {
    let shape = std::iter::once(batch)
        .chain(per_sample.iter().map(|&d| d as u64))
        .map(i64::try_from)
        .collect::<Result<Vec<i64>, _>>()
        .map_err(|_| CheckError::new(model, format!("input `{name}` is too large")))?;
    Tensor::f_randn(shape.as_slice(), (Kind::Float, Device::Cpu)).map_err(|e| {
        CheckError::new(
            model,
            format!("libtorch cannot draw input `{name}`: {}", one_line(&e)),
        )
    })
}

/// A tensor's values as float32 (converted from its own dtype), row-major.
pub fn to_array(tensor: &Tensor) -> Result<Array, String> {
    let shape = tensor
        .size()
        .into_iter()
        .map(usize::try_from)
        .collect::<Result<Vec<usize>, _>>()
        .map_err(|_| "a tensor has a negative size".to_owned())?;
    let flat = tensor
        .f_to_kind(Kind::Float)
        .and_then(|t| t.f_contiguous())
        .and_then(|t| t.f_reshape([-1]))
        .and_then(|t| Vec::<f32>::try_from(&t))
        .map_err(|e| one_line(&e))?;
    Ok(Array { shape, data: flat })
}

/// A libtorch error on one line. C++ exceptions carry a backtrace, and the TorchScript
/// interpreter's ends with the Python exception line (`RuntimeError: …`): that line, with the
/// innermost code record it names, or else the first line.
fn one_line(error: &tch::TchError) -> String {
    summarize(&error.to_string())
}

fn summarize(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let raised = lines.iter().rev().find(|l| is_exception_line(l));
    let place = lines
        .iter()
        .rev()
        .find(|l| l.starts_with("File \"code/"))
        .map(|l| {
            format!(
                " ({})",
                l.trim_end_matches(|c| c != ',').trim_end_matches(',')
            )
        });
    match (raised, lines.first()) {
        (Some(raised), _) => format!("{raised}{}", place.unwrap_or_default()),
        (None, Some(first)) => (*first).to_owned(),
        (None, None) => "unknown libtorch error".to_owned(),
    }
}

/// `RuntimeError: …`, `IndexError: …`: a Python exception type, then the message.
fn is_exception_line(line: &str) -> bool {
    line.split_once(": ").is_some_and(|(kind, _)| {
        kind.ends_with("Error") && kind.chars().all(|c| c.is_ascii_alphanumeric())
    })
}

#[cfg(test)]
mod tests {
    use super::summarize;

    #[test]
    fn an_interpreter_error_becomes_its_exception_line_and_place() {
        let text = "Internal torch error: The following operation failed in the TorchScript \
                    interpreter.\nTraceback of TorchScript, serialized code (most recent call \
                    last):\n  File \"code/__torch__/models.py\", line 17, in forward\n    x0 = \
                    torch.view(_0, [2, -1])\n  File \"code/__torch__/torch/nn/modules/linear.py\", \
                    line 12, in forward\n    _0 = torch.linear(argument_1, weight, bias)\n\n\
                    Traceback of TorchScript, original code (most recent call last):\n\
                    /x/linear.py(134): forward\nRuntimeError: mat1 and mat2 shapes cannot be \
                    multiplied (2x8 and 16x10)\n";
        assert_eq!(
            summarize(text),
            "RuntimeError: mat1 and mat2 shapes cannot be multiplied (2x8 and 16x10) \
             (File \"code/__torch__/torch/nn/modules/linear.py\", line 12)"
        );
    }

    #[test]
    fn another_error_keeps_its_first_line() {
        let text = "Internal torch error: PytorchStreamReader failed reading zip archive\n\
                    Exception raised from valid at ../caffe2/serialize/inline_container.cc:245";
        assert_eq!(
            summarize(text),
            "Internal torch error: PytorchStreamReader failed reading zip archive"
        );
    }
}
