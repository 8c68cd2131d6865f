//! Which `.pt2` layout a zip is, if any: the sniff the checkpoint reader uses to name a
//! `.pt2` it does not read, and the first step of the `.pt2` importer (`torch::pt2`), which
//! parses the program and reads the weights.

use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::torch::zip_read::{TorchZip, ZipError};

/// Why a `.pt2` archive could not be read. Each message names the record or tensor.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Pt2Error {
    /// The archive is not a readable zip.
    #[error(transparent)]
    Zip(#[from] ZipError),
    /// Reading the file failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// A record is missing or malformed.
    #[error("`{record}`: {what}")]
    Record {
        /// The record (`models/model.json`).
        record: String,
        /// What is wrong.
        what: String,
    },
    /// A stored tensor does not fit its record or cannot be read.
    #[error("tensor `{name}`: {what}")]
    Tensor {
        /// Its FQN.
        name: String,
        /// What is wrong.
        what: String,
    },
}

/// How the archive's records are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Under one archive folder (torch ≥ 2.8): weights as raw records described by JSON
    /// configs, or (torch 2.8) `torch.save`d into records.
    Archive,
    /// At the zip root, weights `torch.save`d into nested archives (torch 2.1–2.7,
    /// the pt2 importer's `flat` module).
    Flat,
}

impl Layout {
    /// `archive` or `flat`, as reports print it.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Archive => "archive",
            Layout::Flat => "flat",
        }
    }
}

/// The record holding the schema version; torch's loader requires it.
pub const VERSION: &str = "version";
/// The record holding the program.
pub const PROGRAM: &str = "serialized_exported_program.json";

/// Whether a zip opened from its root (`TorchZip::open_flat`) is a flat `.pt2`.
pub fn is_flat(zip: &TorchZip) -> bool {
    zip.has(VERSION) && zip.has(PROGRAM)
}

/// Whether `file` is a `.pt2` archive: a zip whose `archive_format` record says `pt2`
/// (archive layout), or whose root holds the schema `version` and the program (flat
/// layout). Files that are not zips, or other zips, are not.
pub fn is_pt2(file: &File) -> Result<bool, Pt2Error> {
    let mut head = [0u8; 4];
    if file.read_at(&mut head, 0)? < 4 || head != *b"PK\x03\x04" {
        return Ok(false);
    }
    Ok(open_layout(file.try_clone()?)?.is_some())
}

/// The zip and its layout, or `None` for a zip that is no `.pt2` archive. A zip whose
/// entries are not under one folder can only be the flat layout.
pub fn open_layout(file: File) -> Result<Option<(TorchZip, Layout)>, Pt2Error> {
    match TorchZip::open(file.try_clone()?) {
        Ok(mut zip) => Ok(archive_format_is_pt2(&mut zip)?.then_some((zip, Layout::Archive))),
        Err(ZipError::NoFolder(_) | ZipError::MixedFolders { .. }) => {
            let zip = TorchZip::open_flat(file)?;
            Ok(is_flat(&zip).then_some((zip, Layout::Flat)))
        }
        Err(e) => Err(e.into()),
    }
}

fn archive_format_is_pt2(zip: &mut TorchZip) -> Result<bool, Pt2Error> {
    if !zip.has("archive_format") {
        return Ok(false);
    }
    let bytes = zip.read_small("archive_format", 64)?;
    Ok(String::from_utf8_lossy(&bytes).trim() == "pt2")
}
