//! The one check every command that writes a checkpoint runs first.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::classify::{AllowList, Class};
use super::scan::{scan_open, FileScan, Severity, Status};

/// What a rewrite accepts besides safe globals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Only safe globals (torch's weights_only allow-list, torch_npu names, the documented
    /// benign classes).
    SafeOnly,
    /// Unknown globals too (`--allow-unknown-globals`). Dangerous ones never pass.
    AllowUnknown,
}

/// Why a rewrite was refused. Nothing has been written when this is returned.
#[derive(Debug, thiserror::Error)]
pub enum RefuseError {
    #[error("refusing to rewrite: it references dangerous globals ({list}) that run code when the file is loaded with weights_only=False; nothing was written (`ckpt scan` lists every global)")]
    Dangerous { list: String },
    #[error("refusing to rewrite: {what}; nothing was written (`ckpt scan` shows details)")]
    Evasion { what: String },
    #[error("refusing to rewrite: it references globals that are not on torch's weights_only allow-list ({list}); pass --allow-unknown-globals to rewrite it anyway (they are copied as names, never imported)")]
    Unknown { list: String },
    #[error(
        "refusing to rewrite: part of the file could not be checked ({what}); nothing was written"
    )]
    Unreadable { what: String },
    /// The file is not a PyTorch checkpoint at all (said before any scan runs).
    #[error(transparent)]
    NotACheckpoint(#[from] crate::torch::TorchError),
}

/// A file that passed [`check_rewrite`], still open: the command reads its input from
/// `file`, so it converts exactly the bytes that were scanned (no second open by name).
#[derive(Debug)]
pub struct Checked {
    /// The path the file was opened from.
    pub path: PathBuf,
    /// The open file, positioned at its start.
    pub file: File,
    /// The scan of every pickle in the file.
    pub scan: FileScan,
}

/// Opens `path` once, scans it and decides whether a rewriting command may go on. Every
/// rewriting command (strip-module, remap, amp --to, convert, and batch/to-safetensors) calls
/// this before it opens its output and reads its input from the returned file; on `Err` it
/// must write nothing.
pub fn check_rewrite(path: &Path, policy: Policy) -> Result<Checked, RefuseError> {
    let mut file = File::open(path).map_err(|e| RefuseError::Unreadable {
        what: format!("cannot read the file: {e}"),
    })?;
    crate::torch::recognise(&mut file)?;
    let scan = scan_open(path, &file, &AllowList::default());
    decide(&scan, policy)?;
    Ok(Checked {
        path: path.to_owned(),
        file,
        scan,
    })
}

/// The decision for an existing scan (see [`check_rewrite`]).
pub fn decide(scan: &FileScan, policy: Policy) -> Result<(), RefuseError> {
    let dangerous = scan.paths_of(Class::Dangerous);
    if !dangerous.is_empty() {
        return Err(RefuseError::Dangerous {
            list: dangerous.join(", "),
        });
    }
    if let Some(issue) = scan.issues.iter().find(|i| i.severity == Severity::Evasion) {
        return Err(RefuseError::Evasion {
            what: format!("record `{}`: {}", issue.location, issue.message),
        });
    }
    if scan.status() == Status::Unreadable {
        let what = scan
            .issues
            .iter()
            .map(|i| match i.location.as_str() {
                "" => i.message.clone(),
                at => format!("`{at}`: {}", i.message),
            })
            .collect::<Vec<_>>()
            .join("; ");
        return Err(RefuseError::Unreadable { what });
    }
    let unknown = scan.paths_of(Class::Unknown);
    if policy == Policy::SafeOnly && !unknown.is_empty() {
        return Err(RefuseError::Unknown {
            list: unknown.join(", "),
        });
    }
    Ok(())
}
