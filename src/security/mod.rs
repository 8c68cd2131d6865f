//! Hostile-input defences: classifying pickle globals, scanning every pickle in a file, and
//! the check every rewriting command runs before it writes.
//!
//! Nothing here executes or imports anything: globals are names read by the non-executing
//! pickle reader. Data flows [`scan::scan_open`] → [`scan::FileScan`] → [`check_rewrite`] (for
//! rewriting commands, which then read the same open file) or a report (`ckpt scan`,
//! `ckpt inspect`). Verdicts are by allow-list (`classify`) over names resolved the way
//! Python resolves them (`resolve`).

pub mod agreement;
pub(crate) mod classify;
pub mod policy;
pub mod render;
pub(crate) mod resolve;
pub(crate) mod rules;
pub(crate) mod scan;
pub(crate) mod scan_dcp;
pub(crate) mod scan_tree;
mod source;
#[cfg(test)]
mod tar_layouts;
#[cfg(test)]
mod zip_layouts;

pub use classify::{classify, AllowError, AllowList, Class, Context, Verdict};
pub use policy::{
    check_dcp, check_deepspeed, check_rewrite, Checked, CheckedDeepSpeed, Policy, RefuseError,
};
pub use rules::DANGEROUS;
pub use scan::{
    scan_file, scan_open, scan_zip_at, FileScan, GlobalUse, Issue, PickleScan, Severity, Status,
};
pub use scan_dcp::{scan_dcp, scan_dcp_member};
pub use scan_tree::{scan_tree, TreeScan, CHECKPOINT_EXTENSIONS};
