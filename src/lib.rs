//! `ckpt`: read, rewrite and export PyTorch checkpoints without Python, without executing
//! pickle code, and without decoding tensor bytes that only need copying.
//!
//! # Entry points
//!
//! | task | call |
//! |---|---|
//! | open a checkpoint, refusing unsafe files | [`open`], [`OpenOptions`] |
//! | inspect one (`ckpt inspect`) | [`inspect`] → [`InspectReport`] |
//! | rewrite one (`strip-module`, `remap`, `amp --to`, `convert`) | [`Rewrite`] |
//! | export to ONNX (`to-onnx`) | [`to_onnx`], [`ExportOptions`] |
//! | export to safetensors (`to-safetensors`) | [`to_safetensors`] |
//! | scan any file's pickles (`ckpt scan`) | [`scan_file`] → [`FileScan`] |
//!
//! [`open`] runs the check every rewriting command of the CLI runs: the file must be a
//! PyTorch checkpoint, and a file naming dangerous globals, or globals on no allow-list
//! (unless [`OpenOptions::allow_unknown_globals`]), is refused before anything is decoded.
//! Nothing in a pickle is ever executed or imported: globals are names.
//!
//! The `ckpt` binary's command line is built on this public API only.
//!
//! Layers, data flowing one way: [`pickle`] (bytes ↔ value graph) → `torch` (containers and
//! the meaning of the graph: tensors, storages, locations) → `transform` (graph → graph) →
//! `torch` writers (graph + storage plan → file). [`security`] scans and classifies globals;
//! [`report`] builds the inspect report; [`onnx`] exports.

#![warn(missing_docs)]

#[cfg(not(unix))]
compile_error!(
    "ckpt builds on Unix (Linux, macOS): it reads checkpoints with positioned reads (std::os::unix::fs::FileExt)"
);

pub mod atomic_dir;
pub mod batch;
pub mod check;
mod open;
pub mod pipeline;
pub mod report;
pub mod safetensors;
pub mod security;
pub mod sharded;
pub mod torch {
    //! PyTorch's containers and the meaning of their pickles ([`ckpt_formats::torch`]), with
    //! the importers of users' models: [`pt2`] (torch.export archives) and [`script`]
    //! (TorchScript code), which produce aten programs.

    pub use ckpt_formats::torch::*;
    pub use ckpt_import::{pt2, script};
}

pub use ckpt_base::{atomic_file, interrupt, progress};
pub use ckpt_formats::transform;
pub use ckpt_onnx as onnx;
pub use ckpt_pickle as pickle;

/// ```
/// use ckpt::{ExportOptions, Opset};
///
/// let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
/// let mut opened = ckpt::open(&fixtures.join("onnx/resnet18_narrow.pth"))?;
/// let options = ExportOptions {
///     opset: Opset::new(11)?,
///     ..ExportOptions::default()
/// };
/// let out = std::env::temp_dir().join("ckpt-doctest-resnet18.onnx");
/// let report = ckpt::to_onnx(&mut opened.checkpoint, &options, &out)?;
/// assert!(report.nodes > 0);
/// # std::fs::remove_file(&out)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use onnx::export as to_onnx;
pub use onnx::{Batch, ExportOptions, ExportReport, OnnxError, Opset};
pub use open::{inspect, open, Model, OpenError, OpenOptions, Opened};
pub use pipeline::{Rewrite, Stripped};
pub use report::InspectReport;
pub use safetensors::{export as to_safetensors, SafetensorsError, Written as SafetensorsWritten};
pub use security::{scan_file, AllowList, FileScan, Status};
pub use torch::{Checkpoint, DType, Format, Location, LocationMap, OutputFormat, TorchError};
pub use transform::{AmpKind, CastScope, Plain, PlainKind, PrefixRule, TransformError};
