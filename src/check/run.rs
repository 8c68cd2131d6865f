//! The check itself: both runtimes on the same inputs, every output compared.

use std::fmt;
use std::fs::File;
use std::path::{Path, PathBuf};

use ckpt_import::pt2::is_pt2;
use ckpt_import::script::is_torchscript;

use super::{compare, torch_run, tract_run};

pub use super::compare::Outcome;
pub use super::signature::Signature;

/// A dense float32 array in row-major order; `data.len()` is the product of `shape`.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    /// The sizes.
    pub shape: Vec<usize>,
    /// The elements, row-major.
    pub data: Vec<f32>,
}

/// What to run: batch sizes (each at least 1, in this order), the seed of the inputs, and the
/// largest relative difference ([`compare::Difference::rel`]) that passes.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckOptions {
    /// Batch sizes, in order.
    pub batches: Vec<u64>,
    /// The seed libtorch draws the inputs with.
    pub seed: u64,
    /// The largest relative difference that passes.
    pub tolerance: f64,
}

/// One output at one batch size; `shape` is torch's.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The batch size.
    pub batch: u64,
    /// The ONNX output's name.
    pub output: String,
    /// torch's shape of it.
    pub shape: Vec<usize>,
    /// How far apart the two are.
    pub outcome: Outcome,
}

/// Every comparison made, batch-major, outputs in ONNX order, and the tolerance they are
/// judged by.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The tolerance the comparisons are judged by.
    pub tolerance: f64,
    /// Every comparison made.
    pub comparisons: Vec<Comparison>,
}

impl Report {
    /// The comparisons that do not pass (see [`Outcome::passes`]).
    pub fn failures(&self) -> Vec<&Comparison> {
        self.comparisons
            .iter()
            .filter(|c| !c.outcome.passes(self.tolerance))
            .collect()
    }
}

/// A check that could not be made: the file it concerns and why, on one line.
#[derive(Debug, PartialEq)]
pub struct CheckError {
    /// The file it concerns.
    pub file: PathBuf,
    /// Why, on one line.
    pub message: String,
}

impl CheckError {
    /// An error about `file`.
    pub fn new(file: &Path, message: impl fmt::Display) -> Self {
        CheckError {
            file: file.to_owned(),
            message: message.to_string(),
        }
    }
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.message)
    }
}

impl std::error::Error for CheckError {}

/// Runs `onnx` (tract) and `model` (a `torch.jit.trace` + `torch.jit.save` archive, libtorch)
/// on the same random inputs at every batch size of `options` and compares every output.
/// A difference beyond the tolerance is a [`Report`] entry, not an error; errors are what
/// stops the check (unreadable files, a `.pt2` archive, outputs that cannot be matched).
pub fn check(onnx: &Path, model: &Path, options: &CheckOptions) -> Result<Report, CheckError> {
    refuse_non_torchscript(model)?;
    let signature = Signature::read(onnx)?;
    signature.accept_batches(&options.batches, onnx)?;
    let torch = torch_run::TorchModel::load(model)?;
    let tract = tract_run::OnnxModel::load(onnx)?;
    let drawn = torch_run::random_inputs(&signature, &options.batches, options.seed, model)?;
    let mut comparisons = Vec::new();
    for (&batch, inputs) in options.batches.iter().zip(&drawn) {
        let references = torch.run(inputs, batch, &signature.outputs)?;
        let arrays = inputs
            .iter()
            .map(|t| torch_run::to_array(t).map_err(|e| CheckError::new(model, e)))
            .collect::<Result<Vec<_>, _>>()?;
        let got = tract.run(&arrays)?;
        if got.len() != references.len() {
            return Err(CheckError::new(
                onnx,
                format!(
                    "tract returned {} outputs for a graph that declares {}",
                    got.len(),
                    references.len()
                ),
            ));
        }
        for ((name, reference), onnx_out) in signature.outputs.iter().zip(&references).zip(&got) {
            comparisons.push(Comparison {
                batch,
                output: name.clone(),
                shape: reference.shape.clone(),
                outcome: compare::compare(reference, onnx_out),
            });
        }
    }
    Ok(Report {
        tolerance: options.tolerance,
        comparisons,
    })
}

/// libtorch's C++ API runs TorchScript only: a `.pt2` archive (and anything else) is refused
/// before libtorch sees it.
fn refuse_non_torchscript(model: &Path) -> Result<(), CheckError> {
    let file = File::open(model).map_err(|e| CheckError::new(model, e))?;
    if is_pt2(&file).map_err(|e| CheckError::new(model, e))? {
        return Err(CheckError::new(
            model,
            "a torch.export (.pt2) archive cannot be run by libtorch's C++ API; check against \
             a torch.jit.trace + torch.jit.save archive of the same model",
        ));
    }
    if !is_torchscript(&file).map_err(|e| CheckError::new(model, e))? {
        return Err(CheckError::new(
            model,
            "not a TorchScript archive: --against takes what torch.jit.save wrote",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckpt_import::script::ScriptArchive;
    use ckpt_onnx::program::ProgramOptions;
    use ckpt_onnx::script::export_script;

    fn fixture(path: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(path)
    }

    fn options(batches: &[u64]) -> CheckOptions {
        CheckOptions {
            batches: batches.to_vec(),
            seed: 7,
            tolerance: crate::check::DEFAULT_TOLERANCE,
        }
    }

    /// `fixtures/script/<name>.pt` exported with the default options into `dir`.
    fn export(name: &str, dir: &Path) -> PathBuf {
        let out = dir.join(format!("{name}.onnx"));
        export_script(
            &mut ScriptArchive::open(&fixture(&format!("script/{name}.pt"))).unwrap(),
            &[],
            &ProgramOptions::default(),
            &out,
        )
        .unwrap();
        out
    }

    #[test]
    fn a_trace_matches_its_own_export_at_every_batch() {
        let dir = tempfile::tempdir().unwrap();
        let onnx = export("tiny_unet", dir.path());
        let model = fixture("script/tiny_unet.pt");
        let report = check(&onnx, &model, &options(&[1, 3])).unwrap();
        assert_eq!(report.comparisons.len(), 2);
        for c in &report.comparisons {
            assert_eq!(c.shape, [c.batch as usize, 1, 16, 16]);
            let Outcome::Measured(d) = &c.outcome else {
                panic!("{c:?}")
            };
            assert!(
                d.max_ref > 0.0 && d.rel <= crate::check::DEFAULT_TOLERANCE,
                "{c:?}"
            );
        }
        assert!(report.failures().is_empty());
        // The same seed draws the same inputs.
        assert_eq!(check(&onnx, &model, &options(&[1, 3])).unwrap(), report);
    }

    #[test]
    fn another_model_fails() {
        let dir = tempfile::tempdir().unwrap();
        let onnx = export("tiny_unet", dir.path());
        let report = check(&onnx, &fixture("script/narrow_cnn.pt"), &options(&[2])).unwrap();
        assert_eq!(report.failures().len(), 1, "{report:?}");
        assert!(
            matches!(report.comparisons[0].outcome, Outcome::ShapeDiffers { .. }),
            "{report:?}"
        );
    }

    #[test]
    fn a_trace_that_cannot_run_at_a_batch_is_an_error_naming_it() {
        // narrow_cnn's trace has `view(2, -1)`: libtorch cannot run it at batch 3.
        let dir = tempfile::tempdir().unwrap();
        let onnx = export("narrow_cnn", dir.path());
        let model = fixture("script/narrow_cnn.pt");
        assert!(check(&onnx, &model, &options(&[2])).is_ok());
        let e = check(&onnx, &model, &options(&[2, 3])).unwrap_err();
        assert_eq!(e.file, model);
        assert!(
            e.message
                .starts_with("libtorch failed to run it at batch 3: RuntimeError: ")
                && !e.message.contains('\n'),
            "{e}"
        );
    }

    #[test]
    fn pt2_and_plain_checkpoints_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let onnx = export("narrow_cnn", dir.path());
        let pt2 = fixture("pt2/classifier.pt2");
        let e = check(&onnx, &pt2, &options(&[1])).unwrap_err();
        assert_eq!(e.file, pt2);
        assert!(e.message.contains("torch.export (.pt2)"), "{e}");
        let plain = fixture("cuda0_train_ckpt.pth");
        let e = check(&onnx, &plain, &options(&[1])).unwrap_err();
        assert!(e.message.contains("not a TorchScript archive"), "{e}");
    }
}
