//! ONNX export: aten programs → ATC-ready ONNX files.
//!
//! Every input kind is an aten program first (`ckpt_import`: a `.pt2` archive's, a
//! trace's, or the one torch.export records for a torchvision checkpoint's architecture),
//! and one lowering writes it ([`program`]): `graph` and `ops` (a typed graph builder) with
//! `fold` (BatchNorm folding) → `atc` (the rules Ascend's ATC needs, checked on every
//! export) → `write` (protobuf, atomically, with external data past 2 GiB).
//!
//! Public: [`export()`] with [`ExportOptions`] (torchvision checkpoints),
//! [`program::export_program`] (`.pt2` archives), [`script::export_script`] (TorchScript
//! archives), and [`proto`], the ONNX protobuf types, for reading what was written.

pub(crate) mod atc;
pub mod atc_check;
pub(crate) mod attention;
pub mod cann;
pub mod device_reading;
pub(crate) mod elem;
pub(crate) mod export;
pub(crate) mod fold;
pub(crate) mod graph;
pub(crate) mod ops;
pub mod program;
pub mod proto;
pub mod script;
pub(crate) mod store;
pub(crate) mod typing;
pub(crate) mod write;

use std::fmt;

pub use atc::AtcCommand;
pub use ckpt_import::torchvision::{Choice, Source};
pub use export::{export, ExportOptions, ExportReport};
pub use write::{WriteOptions, Written};

/// An ONNX default-domain operator set version that ATC accepts: 9 to 13 inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Opset(u8);

impl Opset {
    /// The lowest opset ATC takes.
    pub const MIN: i64 = 9;
    /// The highest opset ATC takes.
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

    /// The version number, `MIN..=MAX`.
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
    /// No batch at all (`--batch static`, aten programs only): every dimension of every
    /// input and output is the size the program records, none is the batch, and ops may
    /// work along any axis. For compilers that take a fully static graph (ATC without
    /// dynamic profiles).
    Static,
}

impl std::str::FromStr for Batch {
    type Err = String;

    /// `dynamic` (named `batch`), `static`, or a positive size.
    fn from_str(text: &str) -> Result<Batch, String> {
        match text {
            "dynamic" => Ok(Batch::Dynamic("batch".to_owned())),
            "static" => Ok(Batch::Static),
            _ => match text.parse::<u64>() {
                Ok(n) if n > 0 => Ok(Batch::Fixed(n)),
                _ => Err(format!(
                    "`{text}` is neither `dynamic`, `static` nor a positive batch size"
                )),
            },
        }
    }
}

/// One dimension of a graph input or output after the batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Extent {
    /// A fixed size (`dim_value`).
    Fixed(u64),
    /// A dynamic dimension other than the batch (a sequence length): the `dim_param` it is
    /// written as (torch's symbol for it, `s27`) and the sizes torch.export declared for it.
    Dynamic {
        /// The `dim_param`.
        name: String,
        /// The smallest size declared.
        min: u64,
        /// `None` when no maximum was declared.
        max: Option<u64>,
    },
}

impl Extent {
    /// Fixed sizes as extents.
    pub fn all_fixed(shape: &[u64]) -> Vec<Extent> {
        shape.iter().map(|&d| Extent::Fixed(d)).collect()
    }
}

impl fmt::Display for Extent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Extent::Fixed(n) => write!(f, "{n}"),
            Extent::Dynamic {
                name,
                min,
                max: Some(max),
            } => write!(f, "{name} ({min}..={max})"),
            Extent::Dynamic {
                name,
                min,
                max: None,
            } => write!(f, "{name} (≥ {min})"),
        }
    }
}

/// Why an export failed. Messages say what to change.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OnnxError {
    #[error(transparent)]
    /// The checkpoint could not be read.
    Torch(#[from] ckpt_formats::torch::TorchError),
    #[error(transparent)]
    /// Its state dict could not be prepared (prefix stripping).
    Transform(#[from] ckpt_formats::transform::TransformError),
    #[error("{what}")]
    /// An option is out of range or does not fit the model.
    Option {
        /// What to change.
        what: String,
    },
    #[error("no state dict found: expected a mapping of parameter names to tensors at the top level or under `state_dict`, `model`, `net`, …")]
    /// No mapping of parameter names to tensors was found.
    NoStateDict,
    #[error("{what}")]
    /// The architecture is unknown or could not be detected.
    Arch {
        /// What to do.
        what: String,
    },
    #[error("the checkpoint does not match {arch}:\n{report}")]
    /// The state dict's keys or shapes are not the architecture's.
    Keys {
        /// The architecture.
        arch: String,
        /// What differs.
        report: String,
    },
    #[error("{what}")]
    /// A tensor or option shape the model cannot be built with.
    Shape {
        /// Which, and why.
        what: String,
    },
    #[error("the graph breaks ATC rules:\n  {}", violations.join("\n  "))]
    /// The built graph breaks rules Ascend's ATC needs; nothing was written.
    Atc {
        /// One line per broken rule.
        violations: Vec<String>,
    },
    #[error("the graph would break ONNX's type rules (a ckpt defect: please report it; nothing was written):\n  {}", violations.join("\n  "))]
    /// The built graph gives an op inputs of element types ONNX does not allow together;
    /// nothing was written.
    Typing {
        /// One line per broken rule, naming the node.
        violations: Vec<String>,
    },
    #[error("{what}")]
    /// The output could not be written.
    Output {
        /// Why.
        what: String,
    },
    #[error(transparent)]
    /// The `.pt2` archive could not be read.
    Pt2(#[from] ckpt_import::pt2::Pt2Error),
    #[error(transparent)]
    /// The TorchScript archive could not be read or converted.
    Script(#[from] ckpt_import::script::ScriptError),
    #[error("{what}")]
    /// An aten program (`.pt2` or trace) uses something the lowering does not support.
    Program {
        /// What, and where.
        what: String,
    },
    #[error("I/O error: {0}")]
    /// Reading or writing failed.
    Io(#[from] std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::Batch;

    #[test]
    fn the_batch_is_dynamic_a_size_or_static() {
        assert_eq!("dynamic".parse(), Ok(Batch::Dynamic("batch".into())));
        assert_eq!("4".parse(), Ok(Batch::Fixed(4)));
        assert_eq!("static".parse(), Ok(Batch::Static));
        for bad in ["0", "-1", "Static", ""] {
            let err = bad.parse::<Batch>().unwrap_err();
            assert!(err.contains("`static`"), "{err}");
        }
    }
}
