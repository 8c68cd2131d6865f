//! Why a state dict could not be read as a torchvision model.

/// Why the torchvision importer refused a state dict. Messages say what to change.
#[derive(Debug, thiserror::Error)]
pub enum TorchvisionError {
    /// The checkpoint could not be read.
    #[error(transparent)]
    Torch(#[from] ckpt_formats::torch::TorchError),
    /// Its state dict could not be prepared (prefix stripping).
    #[error(transparent)]
    Transform(#[from] ckpt_formats::transform::TransformError),
    /// No mapping of parameter names to tensors was found.
    #[error("no state dict found: expected a mapping of parameter names to tensors at the top level or under `state_dict`, `model`, `net`, …")]
    NoStateDict,
    /// The architecture is unknown or could not be detected.
    #[error("{what}")]
    Arch {
        /// What to do.
        what: String,
    },
    /// The state dict's keys or shapes are not the architecture's.
    #[error("the checkpoint does not match {arch}:\n{report}")]
    Keys {
        /// The architecture.
        arch: String,
        /// What differs.
        report: String,
    },
    /// A tensor or input shape the model cannot be built with.
    #[error("{what}")]
    Shape {
        /// Which, and why.
        what: String,
    },
    /// An option does not fit the model.
    #[error("{what}")]
    Option {
        /// What to change.
        what: String,
    },
}
