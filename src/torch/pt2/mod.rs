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
    #[error(transparent)]
    Zip(#[from] super::zip_read::ZipError),
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("`{record}`: {what}")]
    Record { record: String, what: String },
    #[error("tensor `{name}`: {what}")]
    Tensor { name: String, what: String },
}
