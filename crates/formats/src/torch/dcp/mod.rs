//! Sharded training checkpoints written by `torch.distributed.checkpoint` (DCP): a folder
//! of `__<rank>_<n>.distcp` files and a pickled `.metadata`.
//!
//! [`Folder::open`] reads the metadata through the non-executing pickle reader
//! (`metadata`) and records every file's size; [`Folder::problems`] checks, before any
//! stored item is read, that every tensor's chunks tile it exactly (`tiling`) and every
//! storage range lies inside its file; `item` reads a stored item (a chunk's bytes, a value's
//! pickle) and `gather` streams a tensor's bytes from its chunks, with memory for one buffer.
//! The writers are `item_write` (one stored item) and `write_metadata` (`.metadata`).
//! [`deepspeed`] reads DeepSpeed ZeRO folders. The pipelines over these (consolidate, shard)
//! are a layer below, in the tool.

pub mod deepspeed;
#[doc(hidden)]
pub mod gather;
#[doc(hidden)]
pub mod item;
#[doc(hidden)]
pub mod item_write;
#[doc(hidden)]
pub mod metadata;
#[doc(hidden)]
pub mod tiling;
#[doc(hidden)]
pub mod write_metadata;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

pub use metadata::{ChunkBox, Entry, EntryKind, Metadata, PathKey, StorageInfo};

/// The metadata file's name inside the folder.
pub const METADATA_FILE: &str = ".metadata";

/// The largest `.metadata` read: it grows with the number of chunks (about 300 bytes each).
pub const MAX_METADATA_BYTES: u64 = 1 << 30;

/// Why a DCP folder could not be read or consolidated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DcpError {
    /// `.metadata` is not DCP metadata ckpt can read.
    #[error("{METADATA_FILE}: {what}")]
    Metadata {
        /// What is wrong with it.
        what: String,
    },
    /// The chunks of a tensor do not tile it (missing, overlapping or out of bounds).
    #[error("{what}")]
    Layout {
        /// Which entry and how.
        what: String,
    },
    /// A stored item is missing, truncated or not what the metadata says.
    #[error("{what}")]
    Item {
        /// Which item and how.
        what: String,
    },
    /// Something the folder uses that ckpt does not read (a storage transform, a dtype).
    #[error("{what} is not supported")]
    Unsupported {
        /// What it is.
        what: String,
    },
    /// A request that does not fit the folder (an `--extract` prefix naming nothing).
    #[error("{what}")]
    Request {
        /// What was asked and why it cannot be done.
        what: String,
    },
    /// A file of a DeepSpeed ZeRO checkpoint folder is not what DeepSpeed writes (missing,
    /// truncated, or its pickled layout does not match its tensors).
    #[error("`{file}`: {what}")]
    DeepSpeed {
        /// The file (or folder) at fault.
        file: String,
        /// What is wrong with it.
        what: String,
    },
    /// The checkpoint given to `shard` cannot be written as a DCP folder.
    #[error("{what}")]
    Input {
        /// Which value and why.
        what: String,
    },
    /// A checkpoint (an item, or `shard`'s input) could not be read or written.
    #[error(transparent)]
    Torch(#[from] crate::torch::TorchError),
    /// A pickle (`.metadata`, an item's) could not be decoded.
    #[error(transparent)]
    Pickle(#[from] ckpt_pickle::PickleError),
    /// A safetensors output's header could not be written.
    #[error(transparent)]
    Safetensors(#[from] crate::torch::safetensors::WriteError),
    /// Reading or writing a file failed.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl DcpError {
    /// The same error, said about entry `fqn`.
    pub fn about(self, fqn: &str) -> DcpError {
        match self {
            DcpError::Metadata { what } => DcpError::Metadata {
                what: format!("`{fqn}`: {what}"),
            },
            DcpError::Item { what } => DcpError::Item {
                what: format!("`{fqn}`: {what}"),
            },
            DcpError::Unsupported { what } => DcpError::Unsupported {
                what: format!("`{fqn}`: {what}"),
            },
            other => other,
        }
    }
}

/// Whether `path` is a folder holding a DCP `.metadata` file.
pub fn is_dcp(path: &Path) -> bool {
    path.is_dir() && path.join(METADATA_FILE).is_file()
}

/// Whether `path` is a DeepSpeed ZeRO folder ([`deepspeed::find`]) that is not also a DCP
/// folder: how `consolidate` and `inspect` decide which reader a folder gets.
pub fn is_deepspeed_only(path: &Path) -> bool {
    !is_dcp(path) && deepspeed::is_deepspeed(path)
}

/// Whether `path` is a checkpoint folder `consolidate` reads: DCP or DeepSpeed ZeRO.
pub fn is_checkpoint_folder(path: &Path) -> bool {
    is_dcp(path) || deepspeed::is_deepspeed(path)
}

/// An opened DCP folder: its metadata and the size of every file it names.
#[derive(Debug)]
pub struct Folder {
    /// The folder.
    pub dir: PathBuf,
    /// Its decoded `.metadata`.
    pub metadata: Metadata,
    /// Bytes of `.metadata`.
    pub metadata_bytes: u64,
    /// Every `relative_path` the storage data names, with its size (`None`: missing).
    pub files: BTreeMap<String, Option<u64>>,
}

/// One stored item of a folder (see [`Folder::items`]).
#[derive(Debug)]
pub struct StoredItem<'a> {
    /// The entry it belongs to.
    pub fqn: &'a str,
    /// The folder's file it is stored in, when the metadata names one that is a plain name.
    pub file: Option<&'a str>,
    /// Its checked place, or why it cannot be read.
    pub place: Result<&'a StorageInfo, String>,
}

/// One thing wrong with a folder, about one entry (or the folder when `fqn` is empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The entry (empty: the folder).
    pub fqn: String,
    /// What is wrong.
    pub what: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.fqn.is_empty() {
            f.write_str(&self.what)
        } else {
            write!(f, "`{}`: {}", self.fqn, self.what)
        }
    }
}

impl Folder {
    /// Reads `.metadata` from an open file (already scanned by the caller) and sizes the
    /// files it names. Nothing else is read.
    pub fn open(dir: &Path, mut metadata_file: File) -> Result<Folder, DcpError> {
        let metadata_bytes = metadata_file.metadata()?.len();
        if metadata_bytes > MAX_METADATA_BYTES {
            return Err(DcpError::Metadata {
                what: format!(
                    "{metadata_bytes} bytes, more than the {MAX_METADATA_BYTES}-byte limit"
                ),
            });
        }
        let mut bytes = Vec::with_capacity(metadata_bytes as usize);
        metadata_file.seek(SeekFrom::Start(0))?;
        (&mut metadata_file)
            .take(MAX_METADATA_BYTES)
            .read_to_end(&mut bytes)?;
        let decoded = ckpt_pickle::read(&bytes).map_err(|e| DcpError::Metadata {
            what: e.to_string(),
        })?;
        let metadata = metadata::parse(&decoded.graph, decoded.root)?;
        let mut files = BTreeMap::new();
        for info in metadata.storage.values() {
            if files.contains_key(&info.relative_path) {
                continue;
            }
            let size = if is_plain_name(&info.relative_path) {
                std::fs::metadata(dir.join(&info.relative_path))
                    .ok()
                    .filter(|m| m.is_file())
                    .map(|m| m.len())
            } else {
                None
            };
            files.insert(info.relative_path.clone(), size);
        }
        Ok(Folder {
            dir: dir.to_owned(),
            metadata,
            metadata_bytes,
            files,
        })
    }

    /// The ranks that wrote files, from the `__<rank>_<n>.distcp` names.
    pub fn ranks(&self) -> Vec<u64> {
        let mut ranks: Vec<u64> = self
            .files
            .keys()
            .filter_map(|name| name.strip_prefix("__")?.split('_').next()?.parse().ok())
            .collect();
        ranks.sort_unstable();
        ranks.dedup();
        ranks
    }

    /// Where an entry's item (a chunk at `offsets`, or a value) is stored, checked: the
    /// metadata lists it, its file is a plain name in the folder that exists, its range lies
    /// inside the file, and no storage extension transformed it.
    pub fn stored(&self, fqn: &str, offsets: Option<&[u64]>) -> Result<&StorageInfo, String> {
        let key = (fqn.to_owned(), offsets.map(<[u64]>::to_vec));
        let info = self
            .metadata
            .storage
            .get(&key)
            .ok_or_else(|| match offsets {
                Some(o) => format!("the chunk at {o:?} has no storage_data entry"),
                None => "it has no storage_data entry".to_owned(),
            })?;
        if !is_plain_name(&info.relative_path) {
            return Err(format!(
                "its storage file `{}` is not a plain file name in the folder",
                info.relative_path
            ));
        }
        let size = self
            .files
            .get(&info.relative_path)
            .copied()
            .flatten()
            .ok_or_else(|| format!("its storage file `{}` is missing", info.relative_path))?;
        if info
            .offset
            .checked_add(info.length)
            .is_none_or(|end| end > size)
        {
            return Err(format!(
                "its {} bytes at offset {} run past the end of `{}` ({size} bytes; truncated?)",
                info.length, info.offset, info.relative_path
            ));
        }
        if !info.transforms.is_empty() {
            return Err(format!(
                "its bytes went through storage extensions ({}), which ckpt does not undo",
                info.transforms.join(", ")
            ));
        }
        Ok(info)
    }

    /// Every stored item the metadata names, in entry order: each value, and each chunk of
    /// every tensor (replicated copies included), with where it is stored, checked by
    /// [`Folder::stored`]. This is everything a reader of the folder reads besides
    /// `.metadata`; the security check and `scan` go through it.
    pub fn items(&self) -> Vec<StoredItem<'_>> {
        let mut items = Vec::new();
        for entry in &self.metadata.entries {
            let offsets: Vec<Option<&[u64]>> = match &entry.kind {
                EntryKind::Bytes => vec![None],
                EntryKind::Tensor { chunks, .. } => {
                    chunks.iter().map(|c| Some(c.offsets.as_slice())).collect()
                }
            };
            for offsets in offsets {
                let key = (entry.fqn.clone(), offsets.map(<[u64]>::to_vec));
                items.push(StoredItem {
                    fqn: &entry.fqn,
                    file: self
                        .metadata
                        .storage
                        .get(&key)
                        .map(|info| info.relative_path.as_str())
                        .filter(|name| is_plain_name(name)),
                    place: self.stored(&entry.fqn, offsets),
                });
            }
        }
        items
    }

    /// Everything wrong with the folder's layout, found from the metadata and file sizes
    /// alone: chunks that do not tile their tensor, items missing or outside their files.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        for entry in &self.metadata.entries {
            let mut say = |what: String| {
                problems.push(Problem {
                    fqn: entry.fqn.clone(),
                    what,
                })
            };
            match &entry.kind {
                EntryKind::Bytes => {
                    if let Err(what) = self.stored(&entry.fqn, None) {
                        say(what);
                    }
                }
                EntryKind::Tensor { size, chunks, .. } => match tiling::tile(size, chunks) {
                    Err(problem) => say(problem.to_string()),
                    Ok(tiling) => {
                        for &i in &tiling.kept {
                            if let Err(what) = self.stored(&entry.fqn, Some(&chunks[i].offsets)) {
                                say(what);
                            }
                        }
                    }
                },
            }
        }
        problems
    }
}

/// A file name with no folder part, not `.` or `..`.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}
