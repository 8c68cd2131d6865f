//! Pure graph-to-graph transforms. Each touches exactly what it names; storage bytes are never
//! read here.

pub(crate) mod amp;
pub(crate) mod dtype;
pub(crate) mod location;
pub(crate) mod plain;
#[doc(hidden)]
pub mod prefix;
#[doc(hidden)]
pub mod select;

pub use amp::{convert_amp, AmpConverted, AmpKind};
pub use dtype::{cast_floating, CastDone, CastScope};
pub use location::{remap, Remapped};
pub use plain::{make_plain, weights_only_blockers, Found, Plain, PlainKind};
pub use prefix::{strip_state_dict, PrefixRule};
pub use select::TRAINING_STATE_KEYS;

/// Why a transform could not be applied.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
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
    #[error("cannot make it load with weights_only=True: `{path}` is a `{class}` object ({why}){}; nothing was written (`ckpt inspect` lists every such object)", if *others > 0 { format!(", and {others} more objects cannot be made plain") } else { String::new() })]
    /// The plain rewrite met an object it cannot represent as plain data.
    NotPlain {
        /// Its key path from the root.
        path: String,
        /// Its class, as the pickle names it.
        class: String,
        /// Why it cannot be made plain.
        why: String,
        /// How many other objects cannot be made plain either.
        others: usize,
    },
    #[error(transparent)]
    /// The checkpoint's structure could not be read.
    Torch(#[from] crate::torch::TorchError),
}
