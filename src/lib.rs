//! `ckpt`: read, rewrite and export PyTorch checkpoints without Python, without executing
//! pickle code, and without decoding tensor bytes that only need copying.
//!
//! Layers, data flowing one way: [`pickle`] (bytes ↔ value graph) → [`torch`] (containers and
//! the meaning of the graph: tensors, storages, locations) → [`transform`] (graph → graph) →
//! [`torch`] writers (graph + storage plan → file).

pub mod atomic_file;
pub mod batch;
#[cfg(feature = "libtorch")]
pub mod check;
pub mod onnx;
pub mod pickle;
pub mod pipeline;
pub mod progress;
pub mod report;
pub mod safetensors;
pub mod security;
pub mod torch;
pub mod transform;
