//! TorchScript archives made by `torch.jit.trace` + `torch.jit.save`, read as programs.
//!
//! Data flows one way: `archive` opens the zip (the module objects in `data.pkl`, the
//! example input's shape in `traced_inputs.pkl`, scalar constants in `constants.pkl`) and
//! parses code records on demand (`token` → [`parse`]); `inline` runs the top module's
//! `forward` through every submodule call into one flat list of `torch.*` calls, each with
//! its source location; [`convert()`] turns that list into the aten program form of
//! `ckpt_aten::program` (argument names from `ckpt_aten::schema`, shapes
//! propagated by `ckpt_aten::shape`, traced batch sizes rewritten to follow the batch), so that one lowering
//! (`crate::onnx::program`) serves `.pt2` and TorchScript alike.
//!
//! Nothing is executed: code is parsed as data, and only straight-line traced code is
//! run (a scripted method the traced code calls is an error naming the file and line of
//! its control flow; one it does not call, such as a `@torch.jit.export` method, is left).

#[doc(hidden)]
pub mod archive;
pub mod convert;
mod dtypes;
mod given;
pub(crate) mod inline;
mod ops;
pub mod parse;
pub(crate) mod token;

pub use archive::{is_torchscript, ScriptArchive};
pub use convert::{convert, Converted};
pub use given::{image_shape, GivenInput, GivenSize, DEFAULT_IMAGE_SHAPE};
pub use ops::targets as traced_targets;

/// Why a TorchScript archive could not be read as a program. Each message says where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptError {
    /// A problem at a line of a code record (`code/__torch__/…py`).
    #[error("`{file}` line {line}: {what}")]
    At {
        /// The code record.
        file: String,
        /// The line, from 1.
        line: usize,
        /// What is wrong.
        what: String,
    },
    /// A problem with the archive as a whole (its records or module objects).
    #[error("{what}")]
    Archive {
        /// What is wrong.
        what: String,
    },
    /// The archive's `data.pkl` could not be read as a checkpoint.
    #[error(transparent)]
    Torch(#[from] ckpt_formats::torch::TorchError),
    /// The archive is not a readable zip.
    #[error(transparent)]
    Zip(#[from] ckpt_formats::torch::zip_read::ZipError),
    /// A pickle of the archive could not be decoded.
    #[error(transparent)]
    Pickle(#[from] ckpt_pickle::PickleError),
    /// Reading the file failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl ScriptError {
    /// A problem at `line` of code record `file`.
    pub fn at(file: &str, line: usize, what: impl Into<String>) -> ScriptError {
        ScriptError::At {
            file: file.to_owned(),
            line,
            what: what.into(),
        }
    }

    /// A problem with the archive as a whole.
    pub fn archive(what: impl Into<String>) -> ScriptError {
        ScriptError::Archive { what: what.into() }
    }
}
