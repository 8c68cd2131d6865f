//! `torch.export.save` archives (`.pt2`): a zip (any archive folder) holding the serialized
//! program (`models/model.json`), weight and constant configs
//! (`data/weights/model_weights_config.json`, `data/constants/model_constants_config.json`)
//! and raw, unpickled storage records (`data/weights/weight_<i>`, `data/constants/tensor_<i>`).
//!
//! [`Pt2Archive::open`] parses the program and the configs and checks that every stored
//! tensor fits in its record; [`Pt2Archive::read_f32`] reads one tensor by its FQN.

mod archive;
pub mod summary;

pub use archive::{is_pt2, Pt2Archive, StoredTensor, TensorLayout, MAX_JSON_BYTES};

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
