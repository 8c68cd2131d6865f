//! The way into the library: open a checkpoint safely, or inspect one.
//!
//! [`open`] runs the same check as every rewriting command of the CLI before it decodes
//! anything: the file must be a PyTorch checkpoint, every pickle in it is scanned, and a file
//! naming dangerous globals (`os.system`, `eval`, …), hiding a pickle, or naming globals on no
//! allow-list is refused. [`OpenOptions::allow_unknown_globals`] lets the last kind through;
//! dangerous globals never pass. Nothing is ever executed either way: globals are names.

use std::path::Path;

use crate::report::{self, InspectReport};
use crate::security::{
    check_rewrite, scan_open, AllowList, Checked, FileScan, Policy, RefuseError,
};
use ckpt_formats::torch::{self, Checkpoint, TorchError};
use ckpt_import::pt2::{is_pt2, Pt2Archive, Pt2Error};
use ckpt_import::script::{is_torchscript, ScriptArchive, ScriptError};

/// Why a checkpoint was not opened. Displays as the CLI's message for the same failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The safety check refused the file (or it is not a PyTorch checkpoint).
    #[error(transparent)]
    Refused(#[from] RefuseError),
    /// The file passed the check but could not be read as a checkpoint.
    #[error(transparent)]
    Unreadable(#[from] TorchError),
    /// The file could not be opened at all.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The file is a `torch.export` archive that could not be read.
    #[error(transparent)]
    Program(#[from] Pt2Error),
    /// The file is a TorchScript archive that could not be read.
    #[error(transparent)]
    Trace(#[from] ScriptError),
}

/// How [`OpenOptions::open`] treats the file's pickle globals. The default is the safe one:
/// only globals on an allow-list pass.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenOptions {
    /// Accept globals that are on no allow-list (pickled `torch.nn` modules, a training
    /// script's config class). They stay names, are never imported, and a rewrite copies them
    /// to its output. Dangerous globals are refused regardless.
    pub allow_unknown_globals: bool,
}

impl OpenOptions {
    /// The policy these options select.
    pub fn policy(&self) -> Policy {
        if self.allow_unknown_globals {
            Policy::AllowUnknown
        } else {
            Policy::SafeOnly
        }
    }

    /// Opens `path` once and scans it; refuses it as [`open`] describes. The returned file is
    /// the one that was scanned: read it with [`Checked::open`].
    pub fn check(&self, path: &Path) -> Result<Checked, RefuseError> {
        check_rewrite(path, self.policy())
    }

    /// Checks `path` (see [`OpenOptions::check`]), then decodes it from the same open file.
    pub fn open(&self, path: &Path) -> Result<Opened, OpenError> {
        Ok(self.check(path)?.open()?)
    }
}

/// Opens `path` with the default, safe [`OpenOptions`].
///
/// ```
/// let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/zip_train_ckpt.pth");
/// let opened = ckpt::open(&path)?;
/// let report = opened.inspect()?;
/// assert_eq!(report.format, "zip");
/// println!("{}", serde_json::to_string(&report)?);
///
/// // A pickled module names globals on no allow-list: refused unless asked for.
/// let module = path.with_file_name("unsafe_module.pth");
/// assert!(ckpt::open(&module).is_err());
/// let options = ckpt::OpenOptions { allow_unknown_globals: true };
/// assert!(options.open(&module).is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open(path: &Path) -> Result<Opened, OpenError> {
    OpenOptions::default().open(path)
}

/// A checkpoint that passed the safety check, with the scan of the same bytes.
pub struct Opened {
    /// The decoded checkpoint.
    pub checkpoint: Checkpoint,
    /// The scan of every pickle in the file.
    pub scan: FileScan,
}

impl Opened {
    /// The `ckpt inspect` report of this checkpoint.
    pub fn inspect(&self) -> Result<InspectReport, TorchError> {
        report::inspect(&self.checkpoint, &self.scan)
    }
}

impl Checked {
    /// Decodes the checked file (the same open file, not the path again).
    pub fn open(self) -> Result<Opened, TorchError> {
        let checkpoint = torch::open_file(&self.path, self.file)?;
        Ok(Opened {
            checkpoint,
            scan: self.scan,
        })
    }
}

/// What a checked file holds, as `to-onnx` reads it: a model's own program, or a
/// checkpoint of weights.
pub enum Model {
    /// A `torch.export` archive (`.pt2`): the program and its weights.
    Program(Pt2Archive),
    /// A TorchScript archive from `torch.jit.trace`: its code and weights.
    Trace(ScriptArchive),
    /// Any other checkpoint.
    Checkpoint(Opened),
}

impl Checked {
    /// Reads the checked file (the same open file) as the model it holds. A file that
    /// cannot be opened as a zip is left to the checkpoint reader, which says why.
    pub fn model(self) -> Result<Model, OpenError> {
        if is_pt2(&self.file).unwrap_or(false) {
            return Ok(Model::Program(Pt2Archive::from_file(self.file)?));
        }
        if is_torchscript(&self.file).unwrap_or(false) {
            return Ok(Model::Trace(ScriptArchive::from_file(
                &self.path, self.file,
            )?));
        }
        Ok(Model::Checkpoint(self.open()?))
    }
}

/// The `ckpt inspect` report of the checkpoint at `path`. Inspecting refuses nothing: it
/// reports dangerous and unknown globals (in [`InspectReport::scan`]) rather than stopping at
/// them, since reading names executes nothing. The globals listed are those of the bytes
/// inspected (one open file).
///
/// ```
/// let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/unsafe_module.pth");
/// let report = ckpt::inspect(&path)?;
/// assert_eq!(report.scan.status, "unknown");
/// assert!(!report.unsafe_globals.is_empty());
/// print!("{}", ckpt::report::render_text(&report));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn inspect(path: &Path) -> Result<InspectReport, OpenError> {
    let file = torch::open_input(path)?;
    let scan = scan_open(path, &file, &AllowList::default());
    let checkpoint = torch::open_file(path, file)?;
    Ok(report::inspect(&checkpoint, &scan)?)
}
