//! ONNX export: torchvision-family checkpoints → ATC-ready ONNX files.
//!
//! Data flows one way: [`weights`] (the checkpoint's state dict, strictly checked) →
//! [`arch`] (one module per torchvision family: detection, expected keys, graph) built on
//! [`graph`] and [`ops`] (a typed graph builder) with [`fold`] (BatchNorm folding) →
//! [`atc`] (the rules Ascend's ATC needs, checked on every export) → [`mod@write`] (protobuf,
//! atomically, with external data past 2 GiB). [`export()`] runs the whole pipeline.

pub mod arch;
pub(crate) mod atc;
pub(crate) mod attention;
pub(crate) mod elem;
pub mod export;
pub(crate) mod fold;
pub(crate) mod graph;
pub(crate) mod ops;
pub mod program;
pub mod proto;
pub mod script;
pub(crate) mod store;
pub(crate) mod weights;
pub mod write;

use std::fmt;

pub use export::{export, ExportOptions, ExportReport};

/// An ONNX default-domain operator set version that ATC accepts: 9 to 13 inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Opset(u8);

impl Opset {
    pub const MIN: i64 = 9;
    pub const MAX: i64 = 13;

    /// Validates `version` into an opset.
    pub fn new(version: i64) -> Result<Opset, OnnxError> {
        match u8::try_from(version) {
            Ok(v) if (Self::MIN..=Self::MAX).contains(&version) => Ok(Opset(v)),
            _ => Err(OnnxError::Option {
                what: format!(
                    "opset {version} is not supported: ATC takes opsets {}–{}",
                    Self::MIN,
                    Self::MAX
                ),
            }),
        }
    }

    pub fn version(self) -> i64 {
        i64::from(self.0)
    }

    /// The IR version torch's exporter (and `onnx.helper.find_min_ir_version_for`) pairs with
    /// this opset: 9→4, 10→5, 11→6, 12→7, 13→7.
    pub fn ir_version(self) -> i64 {
        match self.0 {
            9 => 4,
            10 => 5,
            11 => 6,
            _ => 7,
        }
    }
}

impl Default for Opset {
    fn default() -> Self {
        Opset(11)
    }
}

impl fmt::Display for Opset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The batch dimension of the graph's input and output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Batch {
    /// A symbolic dimension (`dim_param`) with this name.
    Dynamic(String),
    /// A fixed size (`dim_value`), at least 1.
    Fixed(u64),
}

/// Why an export failed. Messages say what to change.
#[derive(Debug, thiserror::Error)]
pub enum OnnxError {
    #[error(transparent)]
    Torch(#[from] crate::torch::TorchError),
    #[error(transparent)]
    Transform(#[from] crate::transform::TransformError),
    #[error("{what}")]
    Option { what: String },
    #[error("no state dict found: expected a mapping of parameter names to tensors at the top level or under `state_dict`, `model`, `net`, …")]
    NoStateDict,
    #[error("{what}")]
    Arch { what: String },
    #[error("the checkpoint does not match {arch}:\n{report}")]
    Keys { arch: String, report: String },
    #[error("{what}")]
    Shape { what: String },
    #[error("the graph breaks ATC rules:\n  {}", violations.join("\n  "))]
    Atc { violations: Vec<String> },
    #[error("{what}")]
    Output { what: String },
    #[error(transparent)]
    Pt2(#[from] crate::torch::pt2::Pt2Error),
    #[error(transparent)]
    Script(#[from] crate::torch::script::ScriptError),
    #[error("{what}")]
    Program { what: String },
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}
