//! Running one job's steps on one input, writing its outputs into a staging folder.

use std::path::{Path, PathBuf};

use crate::pipeline::{output_format, Rewrite};
use crate::safetensors;
use crate::security::{check_dcp, check_deepspeed, check_rewrite, Policy};
use crate::sharded::{consolidate, deepspeed, OutputKind as DcpOutput};
use crate::Model;
use ckpt_formats::torch::dcp::is_deepspeed_only;
use ckpt_formats::torch::{self, Checkpoint, OutputFormat};
use ckpt_import::script::image_shape;
use ckpt_onnx::program::{export_program, ProgramOptions, ProgramReport};
use ckpt_onnx::script::export_script;
use ckpt_onnx::Choice;
use ckpt_onnx::{self as onnx, ExportOptions};

use super::fused::{self, InputHash, InputRest};
use super::plan::{plain_before_writes, OnnxStep, OutputKind, Step};

/// Why an input failed: the step, and what went wrong there.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{step}: {message}")]
pub struct StepFailed {
    /// The step's plan name, or `open` for reading the input.
    pub step: &'static str,
    pub message: String,
}

/// One file an input produced, in the staging folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Staged {
    /// `checkpoint`, `onnx`, `onnx-data` or `safetensors`.
    pub kind: &'static str,
    pub path: PathBuf,
    /// SHA-256 (hex) and size, when the writer hashed the file as it wrote it.
    pub hash: Option<(String, u64)>,
}

/// What [`run`] did: the files it staged, and the input's hash to finish.
pub struct Ran {
    pub staged: Vec<Staged>,
    pub input: Option<InputRest>,
}

/// The steps a job runs: its own, plus a final `format` when none of them writes a file (a
/// chain of rewrites alone writes the rewritten checkpoint).
pub fn effective_steps(steps: &[Step]) -> Vec<Step> {
    let mut steps = steps.to_vec();
    if steps.iter().all(|s| s.output().is_none()) {
        steps.push(Step::Format(None));
    }
    steps
}

/// The file name an output step writes for base name `base`.
pub fn file_name(base: &str, kind: OutputKind) -> String {
    format!("{base}.{}", kind.extension())
}

/// Runs `steps` (see [`effective_steps`]) on `input`, writing each output as
/// `slot/<base>.<ext>`, after the input passed the rewrite check under `policy`. `on_step` is
/// told each step's name as it starts. When the first step is `consolidate`, `input` is a DCP
/// folder (checked by [`check_dcp`]) or a DeepSpeed ZeRO folder (checked by
/// [`check_deepspeed`]) consolidated into the slot as a zip checkpoint, which the other steps
/// then work on.
///
/// With `hash_input` (called with the size of each piece read), [`Ran::input`] is the input
/// file's hash, still to be finished: the first `to-safetensors` step that reads the input
/// itself (no consolidation or dtype cast before it) hashes it in the same pass as far as
/// its output goes; otherwise nothing of it is hashed yet. It is the file that was scanned
/// and read, never the path opened again; `None` only for a consolidated folder.
pub fn run(
    input: &Path,
    steps: &[Step],
    slot: &Path,
    base: &str,
    policy: Policy,
    on_step: &dyn Fn(&'static str),
    mut hash_input: Option<&dyn Fn(u64)>,
) -> Result<Ran, StepFailed> {
    let failed = |step: &'static str| {
        move |e: &dyn std::fmt::Display| StepFailed {
            step,
            message: e.to_string(),
        }
    };
    let policy = if plain_before_writes(steps) {
        Policy::AllowUnknown
    } else {
        policy
    };
    on_step("scan");
    let (mut ckpt, steps, input_file) = match steps.split_first() {
        Some((Step::Consolidate(selection), rest)) => {
            let path = slot.join(".consolidated.pth");
            let consolidating = failed("consolidate");
            if is_deepspeed_only(input) {
                let checked = check_deepspeed(input, policy).map_err(|e| failed("scan")(&e))?;
                on_step("consolidate");
                deepspeed::consolidate(&checked.folder, selection, DcpOutput::Pth, &path)
                    .map_err(|e| consolidating(&e))?;
            } else {
                let folder = check_dcp(input, policy).map_err(|e| failed("scan")(&e))?;
                on_step("consolidate");
                consolidate(&folder, selection, DcpOutput::Pth, &path)
                    .map_err(|e| consolidating(&e))?;
            }
            // A zip checkpoint written by ckpt (holding only the globals `torch.save` of
            // tensors uses): the checkpoint read from now on, not the input.
            let ckpt = torch::open(&path).map_err(|e| consolidating(&e))?;
            hash_input = None;
            (ckpt, rest, None)
        }
        _ => {
            let checked = check_rewrite(input, policy).map_err(|e| failed("scan")(&e))?;
            on_step("open");
            // The scanned file, kept to be hashed (a cast below reads a rewritten copy).
            let input_file = match hash_input {
                Some(_) => Some(checked.file.try_clone().map_err(|e| failed("open")(&e))?),
                None => None,
            };
            match checked.model().map_err(|e| failed("open")(&e))? {
                Model::Checkpoint(opened) => (opened.checkpoint, steps, input_file),
                Model::Program(mut archive) => {
                    let staged = run_program(
                        steps,
                        slot,
                        base,
                        "a torch.export archive (.pt2)",
                        on_step,
                        |step, out| {
                            for (option, given) in [
                                ("arch", step.arch.is_some()),
                                ("input-shape", !step.input_shape.is_empty()),
                            ] {
                                if given {
                                    return Err(format!("`{option}` does not apply to a torch.export (.pt2) archive: its program fixes the graph and the input shape"));
                                }
                            }
                            export_program(&mut archive, &program_options(step), out)
                                .map_err(|e| e.to_string())
                        },
                    )?;
                    return ran(staged, None, input_file);
                }
                Model::Trace(mut archive) => {
                    let staged = run_program(
                        steps,
                        slot,
                        base,
                        "a TorchScript archive",
                        on_step,
                        |step, out| {
                            if step.arch.is_some() {
                                return Err("`arch` does not apply to a TorchScript archive: its code fixes the graph".into());
                            }
                            export_script(
                                &mut archive,
                                &step.input_shape,
                                &program_options(step),
                                out,
                            )
                            .map(|report| report.program)
                            .map_err(|e| e.to_string())
                        },
                    )?;
                    return ran(staged, None, input_file);
                }
            }
        }
    };
    let mut rewrite = Rewrite::new(&ckpt);
    let mut staged = Vec::new();
    let mut input_hash = None;
    for step in steps {
        let name = step.name();
        on_step(name);
        let fail = failed(name);
        match step {
            Step::Consolidate(_) => {
                return Err(fail(&"a DCP folder is consolidated only as the first step"));
            }
            Step::StripModule(rule) => {
                rewrite.strip_module(rule).map_err(|e| fail(&e))?;
            }
            Step::Remap(map) => {
                rewrite.relocate(map).map_err(|e| fail(&e))?;
            }
            Step::Amp { to, scaler } => {
                rewrite.amp(*to, *scaler).map_err(|e| fail(&e))?;
            }
            Step::Dtype { to, scope } => {
                rewrite.cast(*to, *scope).map_err(|e| fail(&e))?;
            }
            Step::DropOptimizer => {
                rewrite.drop_optimizer().map_err(|e| fail(&e))?;
            }
            Step::Extract(key) => rewrite.extract(key).map_err(|e| fail(&e))?,
            Step::Plain => {
                rewrite.plain().map_err(|e| fail(&e))?;
            }
            Step::Format(container) => {
                let format =
                    output_format(container.as_deref(), ckpt.format).map_err(|e| fail(&e))?;
                let path = slot.join(file_name(base, OutputKind::Checkpoint));
                rewrite
                    .save(&mut ckpt, format, &path)
                    .map_err(|e| fail(&e))?;
                staged.push(Staged {
                    kind: "checkpoint",
                    path,
                    hash: None,
                });
            }
            Step::ToOnnx(options) => {
                if !rewrite.plan.is_empty() {
                    hash_input = None;
                }
                materialize(&mut ckpt, &mut rewrite, slot).map_err(|e| fail(&e))?;
                let path = slot.join(file_name(base, OutputKind::Onnx));
                let options = export_options(options).map_err(|e| fail(&e))?;
                let report = rewrite
                    .view(&mut ckpt, |c| onnx::export(c, &options, &path))
                    .map_err(|e| fail(&e))?
                    .map_err(|e| fail(&e))?;
                staged.extend(staged_onnx(path, report.written.external));
            }
            Step::ToSafetensors { key } => {
                // After a cast the tensors are read from a rewritten copy, not the input.
                if !rewrite.plan.is_empty() {
                    hash_input = None;
                }
                let on_read = hash_input;
                materialize(&mut ckpt, &mut rewrite, slot).map_err(|e| fail(&e))?;
                let path = slot.join(file_name(base, OutputKind::Safetensors));
                let hashed = rewrite
                    .view(&mut ckpt, |c| {
                        let prepared = safetensors::prepare(c, key.as_deref())?;
                        let input = match on_read {
                            Some(on_read) => Some(InputHash {
                                file: c.source_file().try_clone()?,
                                on_read,
                            }),
                            None => None,
                        };
                        fused::write(c, &prepared, &path, input)
                    })
                    .map_err(|e| fail(&e))?
                    .map_err(|e| fail(&e))?;
                if hashed.input.is_some() {
                    input_hash = hashed.input;
                    hash_input = None;
                }
                staged.push(Staged {
                    kind: "safetensors",
                    path,
                    hash: Some(hashed.output),
                });
            }
        }
    }
    ran(staged, input_hash, input_file)
}

/// The files an ONNX export at `path` staged: the model, then its external data if any.
fn staged_onnx(path: PathBuf, external: Option<PathBuf>) -> impl Iterator<Item = Staged> {
    let data = external.map(|path| Staged {
        kind: "onnx-data",
        path,
        hash: None,
    });
    std::iter::once(Staged {
        kind: "onnx",
        path,
        hash: None,
    })
    .chain(data)
}

/// What a run staged, with the input's hash from where a step left it (`input_hash`), else
/// from the start of the scanned file.
fn ran(
    staged: Vec<Staged>,
    input_hash: Option<InputRest>,
    input_file: Option<std::fs::File>,
) -> Result<Ran, StepFailed> {
    let input = match (input_hash, input_file) {
        (Some(rest), _) => Some(rest),
        (None, Some(file)) => Some(InputRest::start(file).map_err(|e| StepFailed {
            step: "open",
            message: e.to_string(),
        })?),
        (None, None) => None,
    };
    Ok(Ran { staged, input })
}

/// Runs a job's steps on a model's own program (`kind`: a `.pt2` or TorchScript archive),
/// exporting with `export`. Only `to-onnx` reads a program; every other step works on
/// checkpoints and fails naming the input's kind.
fn run_program(
    steps: &[Step],
    slot: &Path,
    base: &str,
    kind: &str,
    on_step: &dyn Fn(&'static str),
    mut export: impl FnMut(&OnnxStep, &Path) -> Result<ProgramReport, String>,
) -> Result<Vec<Staged>, StepFailed> {
    let mut staged = Vec::new();
    for step in steps {
        let name = step.name();
        on_step(name);
        let fail = |message: String| StepFailed {
            step: name,
            message,
        };
        let Step::ToOnnx(options) = step else {
            return Err(fail(format!(
                "works on checkpoints, and the input is {kind}, which only `to-onnx` reads"
            )));
        };
        let path = slot.join(file_name(base, OutputKind::Onnx));
        let report = export(options, &path).map_err(fail)?;
        staged.extend(staged_onnx(path, report.written.external));
    }
    Ok(staged)
}

/// Carries out a planned dtype cast before a step that reads tensor values: writes the
/// rewritten checkpoint into the slot and continues from it. Nothing to do without a cast.
fn materialize(
    ckpt: &mut Checkpoint,
    rewrite: &mut Rewrite,
    slot: &Path,
) -> Result<(), torch::TorchError> {
    if rewrite.plan.is_empty() {
        return Ok(());
    }
    let path = slot.join(".cast.pth");
    rewrite.save(ckpt, OutputFormat::Zip, &path)?;
    *ckpt = torch::open(&path)?;
    *rewrite = Rewrite::new(ckpt);
    Ok(())
}

/// A checkpoint's export options from its `to-onnx` step.
fn export_options(step: &OnnxStep) -> Result<ExportOptions, String> {
    Ok(ExportOptions {
        arch: match &step.arch {
            Some(name) => Choice::Named(name.clone()),
            None => Choice::Auto,
        },
        opset: step.opset,
        input: image_shape(&step.input_shape).map_err(|e| format!("`input-shape`: {e}"))?,
        batch: step.batch.clone(),
        fold_bn: step.fold_bn,
        ..ExportOptions::default()
    })
}

/// A `.pt2` or TorchScript archive's export options from its `to-onnx` step.
fn program_options(step: &OnnxStep) -> ProgramOptions {
    ProgramOptions {
        opset: step.opset,
        batch: step.batch.clone(),
        fold_bn: step.fold_bn,
        ..ProgramOptions::default()
    }
}
