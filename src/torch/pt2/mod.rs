//! `torch.export.save` archives (`.pt2`) of every layout and schema generation:
//!
//! * the archive layout (torch ≥ 2.8): a zip (any archive folder) holding the serialized
//!   program (`models/model.json`), weight and constant configs
//!   (`data/weights/model_weights_config.json`, `data/constants/model_constants_config.json`)
//!   and raw, unpickled storage records (`data/weights/weight_<i>`, `data/constants/tensor_<i>`);
//! * the flat layout (torch 2.1–2.7, [`flat`]): the program and `torch.save` archives of the
//!   state dict and constants at the zip root.
//!
//! [`Pt2Archive::open`] parses the program, mapping its schema generation onto the current
//! one ([`generations`]), finds every stored tensor and checks that it fits in its record;
//! [`Pt2Archive::read_f32`] reads one tensor by its FQN.

mod archive;
pub mod flat;
pub mod generations;
pub mod summary;
mod sympy_str;

pub use archive::{is_pt2, Layout, Pt2Archive, StoredTensor, TensorLayout, MAX_JSON_BYTES};
pub use generations::SchemaVersion;

/// Why a `.pt2` archive could not be read. Each message names the record or tensor.
#[derive(Debug, thiserror::Error)]
pub enum Pt2Error {
    /// The archive is not a readable zip.
    #[error(transparent)]
    Zip(#[from] super::zip_read::ZipError),
    /// Reading the file failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// A record is missing or malformed.
    #[error("`{record}`: {what}")]
    Record {
        /// The record (`models/model.json`).
        record: String,
        /// What is wrong.
        what: String,
    },
    /// A stored tensor does not fit its record or cannot be read.
    #[error("tensor `{name}`: {what}")]
    Tensor {
        /// Its FQN.
        name: String,
        /// What is wrong.
        what: String,
    },
}
