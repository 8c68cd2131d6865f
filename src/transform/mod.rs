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
    /// Stripping a prefix would merge two keys into one.
    Collision {
        /// The first key.
        first: String,
        /// The second key.
        second: String,
        /// The key both would become.
        renamed: String,
    },
    #[error("{0}")]
    /// The request does not fit the checkpoint (a rule that matches nothing, no AMP state, …).
    Request(String),
    #[error(transparent)]
    /// The checkpoint's structure could not be read.
    Torch(#[from] crate::torch::TorchError),
}
