//! Pure graph-to-graph transforms. Each touches exactly what it names; storage bytes are never
//! read here.

pub(crate) mod amp;
pub(crate) mod dtype;
pub(crate) mod location;
pub(crate) mod prefix;
pub(crate) mod select;

pub use amp::{convert_amp, AmpConverted, AmpKind};
pub use dtype::{cast_floating, CastDone, CastScope};
pub use location::{remap, Remapped};
pub use prefix::{strip_state_dict, PrefixRule};

/// Why a transform could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum TransformError {
    #[error("keys `{first}` and `{second}` would both become `{renamed}` after stripping")]
    Collision {
        first: String,
        second: String,
        renamed: String,
    },
    #[error("{0}")]
    Request(String),
    #[error(transparent)]
    Torch(#[from] crate::torch::TorchError),
}
