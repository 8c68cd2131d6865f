//! Hostile-input defences: classifying pickle globals, scanning every pickle in a file, and
//! the check every rewriting command runs before it writes.
//!
//! Nothing here executes or imports anything: globals are names read by the non-executing
//! pickle reader. Data flows [`scan::scan_file`] → [`scan::FileScan`] → [`check_rewrite`] (for
//! rewriting commands) or a report (`ckpt scan`).

pub mod classify;
pub mod policy;
pub mod render;
pub mod scan;
mod source;

pub use classify::{classify, Class, Context, Verdict, DANGEROUS};
pub use policy::{check_rewrite, Policy, RefuseError};
pub use scan::{scan_file, FileScan, GlobalUse, Issue, PickleScan, Severity, Status};
