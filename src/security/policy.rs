//! The one check every command that writes a checkpoint runs first.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::classify::{AllowList, Class};
use super::scan::{scan_open, scan_zip_at, FileScan, Severity, Status};
use ckpt_formats::torch::dcp::{deepspeed, DcpError, Folder, StorageInfo, METADATA_FILE};

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
#[non_exhaustive]
pub enum RefuseError {
    #[error("refusing to rewrite: it references dangerous globals ({list}) that run code when the file is loaded with weights_only=False; nothing was written (`ckpt scan` lists every global)")]
    /// The file names dangerous globals.
    Dangerous {
        /// Them, comma-separated.
        list: String,
    },
    #[error("refusing to rewrite: {what}; nothing was written (`ckpt scan` shows details)")]
    /// The file is built to show a scanner something other than what torch loads.
    Evasion {
        /// What disagrees.
        what: String,
    },
    #[error("refusing to rewrite: it references globals that are not on torch's weights_only allow-list ({list}); pass --allow-unknown-globals to rewrite it anyway (they are copied as names, never imported)")]
    /// The file names globals on no allow-list (and the policy does not allow them).
    Unknown {
        /// Them, comma-separated.
        list: String,
    },
    #[error(
        "refusing to rewrite: part of the file could not be checked ({what}); nothing was written"
    )]
    /// Part of the file could not be read, so it could not be checked.
    Unreadable {
        /// What could not be read.
        what: String,
    },
    /// The file is not a PyTorch checkpoint at all (said before any scan runs).
    #[error(transparent)]
    NotACheckpoint(#[from] ckpt_formats::torch::TorchError),
    /// A DCP folder whose metadata or layout is broken.
    #[error(transparent)]
    Dcp(#[from] ckpt_formats::torch::dcp::DcpError),
    /// One file of a checkpoint folder was refused.
    #[error("`{file}`: {refused}")]
    InFolder {
        /// The file, by its name in the folder.
        file: String,
        /// Why.
        refused: Box<RefuseError>,
    },
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
    let mut file = ckpt_formats::torch::open_input(path)?;
    ckpt_formats::torch::recognise(&mut file)?;
    let scan = scan_open(path, &file, &AllowList::default());
    decide(&scan, policy)?;
    Ok(Checked {
        path: path.to_owned(),
        file,
        scan,
    })
}

/// [`check_rewrite`] for a DCP folder: scans `.metadata`, opens the folder from the scanned
/// bytes, then scans the pickle of every stored item the metadata names (non-tensor values
/// are arbitrary pickles), each range checked against its file first. Refuses on the first
/// file that fails the policy.
pub fn check_dcp(dir: &Path, policy: Policy) -> Result<Folder, RefuseError> {
    let path = dir.join(METADATA_FILE);
    let file = File::open(&path).map_err(|e| RefuseError::Unreadable {
        what: format!("cannot read {METADATA_FILE}: {e}"),
    })?;
    let allowed = AllowList::default();
    decide(&scan_open(&path, &file, &allowed), policy)?;
    let folder = Folder::open(dir, file)?;
    let mut open: std::collections::HashMap<&str, File> = std::collections::HashMap::new();
    let mut items: Vec<(&str, &StorageInfo)> = Vec::new();
    for item in folder.items() {
        let info = item.place.map_err(|what| DcpError::Layout {
            what: format!("`{}`: {what}", item.fqn),
        })?;
        items.push((item.fqn, info));
    }
    for (fqn, info) in items {
        let name = info.relative_path.as_str();
        if !open.contains_key(name) {
            let file = File::open(dir.join(name)).map_err(|e| RefuseError::Unreadable {
                what: format!("cannot read `{name}`: {e}"),
            })?;
            open.insert(name, file);
        }
        let scan = scan_zip_at(
            &dir.join(name),
            &open[name],
            info.offset,
            info.length,
            &format!("{fqn}@{}:", info.offset),
            &allowed,
        );
        decide(&scan, policy)?;
    }
    Ok(folder)
}

/// A DeepSpeed ZeRO folder that passed [`check_deepspeed`].
pub struct CheckedDeepSpeed {
    /// Its files, decoded from the bytes that were scanned.
    pub folder: deepspeed::Folder,
    /// The worst scan status of its files.
    pub scan: Status,
}

/// [`check_rewrite`] for a DeepSpeed ZeRO folder (the tag folder, or the save folder whose
/// `latest` names it): every model and optimizer states file is scanned and decided on, then
/// decoded by the checkpoint reader from the same open file. Refuses on the first file that
/// fails, naming it.
pub fn check_deepspeed(dir: &Path, policy: Policy) -> Result<CheckedDeepSpeed, RefuseError> {
    let tag = deepspeed::find(dir).ok_or_else(|| DcpError::Request {
        what: "not a DeepSpeed checkpoint folder (no *_model_states.pt or *_optim_states.pt, \
               and no `latest` naming a folder that has them)"
            .into(),
    })?;
    let names = deepspeed::Names::list(&tag)?;
    let mut scan = super::Status::Clean;
    let mut open =
        |name: &String| -> Result<(String, ckpt_formats::torch::Checkpoint), RefuseError> {
            let in_folder = |refused: RefuseError| RefuseError::InFolder {
                file: name.clone(),
                refused: Box::new(refused),
            };
            let checked = check_rewrite(&tag.join(name), policy).map_err(in_folder)?;
            scan = scan.max(checked.scan.status());
            let ckpt = ckpt_formats::torch::open_file(&checked.path, checked.file)
                .map_err(|e| in_folder(RefuseError::NotACheckpoint(e)))?;
            Ok((name.clone(), ckpt))
        };
    let model = names
        .model
        .iter()
        .map(&mut open)
        .collect::<Result<_, _>>()?;
    let optim = names
        .optim
        .iter()
        .map(&mut open)
        .collect::<Result<_, _>>()?;
    Ok(CheckedDeepSpeed {
        folder: deepspeed::Folder {
            model,
            optim,
            dir: tag,
        },
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
