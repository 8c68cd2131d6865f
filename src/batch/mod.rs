//! `ckpt batch`: a plan of jobs (inputs, steps, output names) run over many checkpoints in
//! parallel, with a manifest that records every input and output, resumes after a crash,
//! and splits across machines.
//!
//! Inside: `plan` parses the TOML plan; `inputs` expands input patterns; `shard` partitions
//! inputs; `template` names outputs; `execute` runs one input's steps; `staging` keeps
//! unfinished outputs out of sight; `manifest` records, resumes and merges; `progress`
//! reports; [`run()`] ties them together and is the public entry point.

pub(crate) mod execute;
pub(crate) mod fused;
pub(crate) mod inputs;
pub mod manifest;
pub(crate) mod plan;
pub(crate) mod progress;
pub(crate) mod run;
pub(crate) mod sha256;
pub(crate) mod shard;
pub(crate) mod staging;
pub(crate) mod template;

use std::path::PathBuf;

pub use manifest::{hash_folder_reporting, Entry, Manifest, Output, Status};
pub use run::{run, Options, Summary};
pub use shard::Shard;

/// Why a batch could not run (a failing input is not one: it is recorded and reported).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BatchError {
    #[error("plan: {what}")]
    /// The plan is invalid; nothing was run.
    Plan {
        /// What is wrong with it.
        what: String,
    },
    #[error("manifest {}: {what}", path.display())]
    /// A manifest could not be read, or belongs to another plan.
    Manifest {
        /// The manifest.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    #[error("merge: {0}")]
    /// Shard manifests that cannot be merged.
    Merge(String),
    #[error("{what}: {source}")]
    /// A file or folder of the run could not be read or written.
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
}
