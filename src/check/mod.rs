//! `ckpt check` (cargo feature `libtorch`; without it only [`DEFAULT_TOLERANCE`], which the
//! command's arguments name): runs an ONNX export in tract and the TorchScript
//! model it came from in libtorch on the same seeded random inputs, at several batch sizes, and
//! measures how far each ONNX output is from torch's.
//!
//! - `signature`: the ONNX graph's inputs (per-sample shapes, batch dimension) and outputs.
//! - `torch_run`: libtorch loads the TorchScript archive (eval mode, no grad), draws the
//!   inputs and runs the model; `torch_outputs` matches what it returns to the ONNX outputs.
//! - `tract_run`: tract runs the ONNX file.
//! - `compare`: the difference figures and the tolerance rule.
//!
//! Inputs are drawn by libtorch, so they can be reproduced in Python:
//! `torch.manual_seed(seed)`, then for each batch size in order and each ONNX input in order,
//! `torch.randn(batch, *per_sample_shape)`.

#[cfg(feature = "libtorch")]
pub mod compare;
#[cfg(feature = "libtorch")]
mod run;
#[cfg(feature = "libtorch")]
pub mod signature;
#[cfg(feature = "libtorch")]
pub mod torch_outputs;
#[cfg(feature = "libtorch")]
pub mod torch_run;
#[cfg(feature = "libtorch")]
pub mod tract_run;

#[cfg(feature = "libtorch")]
pub use run::*;

/// The default tolerance of the comparison (`rel <= tolerance`, see `compare`): the interop
/// tier's `max|diff| <= 1e-4 · max(1, max|ref|)`.
pub const DEFAULT_TOLERANCE: f64 = 1e-4;
