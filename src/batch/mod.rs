//! `ckpt batch`: a plan of jobs (inputs, steps, output names) run over many checkpoints in
//! parallel, with a manifest that records every input and output, resumes after a crash,
//! and splits across machines.
//!
//! [`plan`] parses the TOML plan; [`inputs`] expands input patterns; [`shard`] partitions
//! inputs; [`template`] names outputs; [`execute`] runs one input's steps; [`staging`] keeps
//! unfinished outputs out of sight; [`manifest`] records, resumes and merges; [`progress`]
//! reports; [`run()`] ties them together.

pub(crate) mod execute;
pub(crate) mod inputs;
pub mod manifest;
pub(crate) mod plan;
pub(crate) mod progress;
pub(crate) mod run;
pub(crate) mod shard;
pub(crate) mod staging;
pub(crate) mod template;

use std::path::PathBuf;

pub use manifest::{Entry, Manifest, Status};
pub use plan::{Job, Plan, Step};
pub use run::{run, Options, Summary};
pub use shard::Shard;

/// Why a batch could not run (a failing input is not one: it is recorded and reported).
#[derive(Debug, thiserror::Error)]
pub enum BatchError {
    #[error("plan: {what}")]
    Plan { what: String },
    #[error("manifest {}: {what}", path.display())]
    Manifest { path: PathBuf, what: String },
    #[error("merge: {0}")]
    Merge(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}
