//! Opening a checkpoint: detect the container, decode its pickle, locate its storages.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use memmap2::{Mmap, UncheckedAdvice};

use ckpt_pickle::{self as pickle, Graph, NodeId};

use super::copy;
use super::input;
use super::legacy::{self, LegacyRecord};
use super::tar;
use super::tensor::{scan, Scan, StorageKey};
use super::zip_read::{TorchZip, ZipError};
use super::zip_write::TorchZipWriter;
use super::TorchError;

/// The largest object pickle we decode (`data.pkl`, or the legacy object pickle). Real
/// checkpoints hold a few MiB of structure even for very large models.
pub const MAX_PICKLE_BYTES: u64 = 1 << 30;

/// How the file is packaged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `torch.save` zip (torch ≥ 1.6).
    Zip,
    /// The legacy stream (torch ≤ 1.5, `_use_new_zipfile_serialization=False`).
    Legacy,
    /// A TorchScript archive (`torch.jit.save`): its tensors can be read, not rewritten.
    TorchScript,
    /// The pre-2017 tar format (torch < 0.1.10): read only.
    Tar,
}

impl Format {
    /// The name reports print: `zip`, `legacy`, `tar`, …
    pub fn name(self) -> &'static str {
        match self {
            Format::Zip => "zip",
            Format::Legacy => "legacy",
            Format::TorchScript => "torchscript",
            Format::Tar => "tar",
        }
    }
}

/// The small records of a zip checkpoint, kept so a rewrite can reproduce them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ZipMeta {
    /// The archive folder name.
    pub prefix: String,
    /// `version` (or `.data/version`), trimmed.
    pub version: Option<String>,
    /// `.format_version` (torch ≥ 2.7).
    pub format_version: Option<String>,
    /// `.storage_alignment` (torch ≥ 2.7).
    pub storage_alignment: Option<u64>,
    /// `byteorder` (torch ≥ 2.1): `little` or `big`.
    pub byteorder: Option<String>,
    /// Number of records in the archive.
    pub records: usize,
}

enum Source {
    Zip(TorchZip),
    Legacy {
        file: File,
        records: HashMap<StorageKey, LegacyRecord>,
    },
}

/// An opened checkpoint: its decoded structure and where each storage's bytes are.
///
/// Invariant: every storage the graph references has bytes in the file, at least as many as
/// its persistent id declares, and every tensor fits in its storage (checked by [`open`]).
pub struct Checkpoint {
    /// The file it was opened from; storage bytes are read from it on demand.
    pub path: PathBuf,
    /// Its container format.
    pub format: Format,
    /// The decoded object pickle.
    pub graph: Graph,
    /// What `torch.load` would return.
    pub root: NodeId,
    /// The tensors and storages of `graph`.
    pub scan: Scan,
    /// Zip records kept for rewriting (`None` for legacy files).
    pub zip: Option<ZipMeta>,
    source: Source,
    /// The input file mapped read-only, made on first use ([`Checkpoint::map_storage`]);
    /// `None` inside when the file cannot be mapped.
    mapped: OnceLock<Option<MappedBytes>>,
}

/// The container a file's first bytes announce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Container {
    Zip,
    Tar,
    Legacy,
}

/// Classifies `file` by its first bytes, reading from its start, and rewinds it. The one
/// place that decides whether a file is a PyTorch checkpoint at all: [`open_file`] and
/// [`recognise`] both ask it.
fn sniff(file: &mut File) -> Result<Container, TorchError> {
    let mut head = Vec::new();
    file.seek(SeekFrom::Start(0))?;
    (&mut *file).take(512).read_to_end(&mut head)?;
    file.seek(SeekFrom::Start(0))?;
    if head.starts_with(b"PK\x03\x04") {
        Ok(Container::Zip)
    } else if tar::is_tar(&head) {
        Ok(Container::Tar)
    } else if legacy::is_legacy(&head) {
        Ok(Container::Legacy)
    } else if super::safetensors::looks_like(&head) {
        Err(TorchError::Safetensors)
    } else if head.is_empty() {
        Err(TorchError::Invalid {
            what: "the file is empty".into(),
        })
    } else {
        Err(TorchError::NotACheckpoint)
    }
}

/// Refuses an open file that is not a PyTorch checkpoint container (zip, legacy stream or
/// tar) from its first bytes alone, so a text file gets "not a PyTorch checkpoint" before
/// any deeper check runs. The file is left rewound.
pub fn recognise(file: &mut File) -> Result<(), TorchError> {
    sniff(file).map(|_| ())
}

/// Opens and validates a checkpoint.
pub fn open(path: &Path) -> Result<Checkpoint, TorchError> {
    open_file(path, input::open_input(path)?)
}

/// Validates the checkpoint in the already open `file` (named `path` in messages), reading it
/// from its start: a command that scanned `file` reads the same bytes here.
pub fn open_file(path: &Path, mut file: File) -> Result<Checkpoint, TorchError> {
    let file_len = file.metadata()?.len();
    match sniff(&mut file)? {
        Container::Zip => open_zip(path, file),
        Container::Tar => open_tar(path, file, file_len),
        Container::Legacy => open_legacy(path, file, file_len),
    }
}

fn open_zip(path: &Path, file: File) -> Result<Checkpoint, TorchError> {
    let pt2 = || TorchError::Unsupported {
        what: "torch.export `.pt2` archives".into(),
    };
    let mut zip = match TorchZip::open(file.try_clone()?) {
        // torch 2.1–2.7 wrote `.pt2` archives with records at the zip root.
        Err(e @ (ZipError::NoFolder(_) | ZipError::MixedFolders { .. })) => {
            return Err(match super::pt2_layout::is_pt2(&file) {
                Ok(true) => pt2(),
                _ => e.into(),
            });
        }
        opened => opened?,
    };
    if zip.has("archive_format") || zip.has("models/model.json") {
        return Err(pt2());
    }
    let format = if zip.is_torchscript() {
        Format::TorchScript
    } else {
        Format::Zip
    };
    let small = |zip: &mut TorchZip, name: &str| -> Result<Option<String>, TorchError> {
        if !zip.has(name) {
            return Ok(None);
        }
        let bytes = zip.read_small(name, 4096)?;
        Ok(Some(String::from_utf8_lossy(&bytes).trim().to_owned()))
    };
    let version = match small(&mut zip, "version")? {
        Some(v) => Some(v),
        None => small(&mut zip, ".data/version")?,
    };
    let storage_alignment = match small(&mut zip, ".storage_alignment")? {
        Some(text) => Some(text.parse::<u64>().map_err(|_| TorchError::Invalid {
            what: format!("`.storage_alignment` holds `{text}`, not a number"),
        })?),
        None => None,
    };
    let meta = ZipMeta {
        prefix: zip.prefix().to_owned(),
        version,
        format_version: small(&mut zip, ".format_version")?,
        storage_alignment,
        byteorder: small(&mut zip, "byteorder")?,
        records: zip.len(),
    };
    let pickle_bytes = zip.read_small("data.pkl", MAX_PICKLE_BYTES)?;
    let mut pickle = pickle::read(&pickle_bytes)?;
    pickle.graph.fold_mapping_constructors();
    let scan = scan(&pickle.graph, pickle.root)?;
    for storage in scan.unique_storages() {
        let name = format!("data/{}", storage.key);
        let record = zip.record(&name).map_err(|_| TorchError::Invalid {
            what: format!("storage `{}` has no `{name}` record", storage.key),
        })?;
        check_storage_len(&storage.key, storage.nbytes(), record.size)?;
    }
    Ok(Checkpoint {
        path: path.to_owned(),
        format,
        graph: pickle.graph,
        root: pickle.root,
        scan,
        zip: Some(meta),
        source: Source::Zip(zip),
        mapped: OnceLock::new(),
    })
}

fn open_legacy(path: &Path, file: File, file_len: u64) -> Result<Checkpoint, TorchError> {
    // The pickles come first and their length is not recorded: read a prefix, and grow it
    // while the pickles run past its end.
    let mut want = file_len.min(1 << 20);
    let parsed = loop {
        let len = usize::try_from(want).map_err(|_| TorchError::Invalid {
            what: "file too large for this platform".into(),
        })?;
        let mut head = vec![0u8; len];
        file.read_exact_at(&mut head, 0)?;
        match legacy::parse(&head, &file, file_len, |g, r| Ok(scan(g, r)?.storages)) {
            Err(TorchError::Pickle(pickle::PickleError::Truncated { .. }))
                if want < file_len && want < MAX_PICKLE_BYTES =>
            {
                want = (want * 4).min(file_len).min(MAX_PICKLE_BYTES);
            }
            other => break other?,
        }
    };
    let mut parsed = parsed;
    parsed.object.graph.fold_mapping_constructors();
    let scan = scan(&parsed.object.graph, parsed.object.root)?;
    check_stream_records(&scan, &parsed.records)?;
    Ok(Checkpoint {
        path: path.to_owned(),
        format: Format::Legacy,
        graph: parsed.object.graph,
        root: parsed.object.root,
        scan,
        zip: None,
        source: Source::Legacy {
            file,
            records: parsed.records,
        },
        mapped: OnceLock::new(),
    })
}

fn open_tar(path: &Path, file: File, file_len: u64) -> Result<Checkpoint, TorchError> {
    let mut parsed = tar::parse(&file, file_len)?;
    parsed.graph.fold_mapping_constructors();
    let scan = scan(&parsed.graph, parsed.root)?;
    check_stream_records(&scan, &parsed.records)?;
    Ok(Checkpoint {
        path: path.to_owned(),
        format: Format::Tar,
        graph: parsed.graph,
        root: parsed.root,
        scan,
        zip: None,
        source: Source::Legacy {
            file,
            records: parsed.records,
        },
        mapped: OnceLock::new(),
    })
}

/// Every storage the graph references is in the stream's storage list, with enough bytes.
fn check_stream_records(
    scan: &Scan,
    records: &HashMap<StorageKey, LegacyRecord>,
) -> Result<(), TorchError> {
    for storage in scan.unique_storages() {
        let record = records
            .get(&storage.key)
            .ok_or_else(|| TorchError::Invalid {
                what: format!(
                    "storage `{}` is not in the file's storage list",
                    storage.key
                ),
            })?;
        check_storage_len(&storage.key, storage.nbytes(), record.nbytes)?;
    }
    Ok(())
}

fn check_storage_len(key: &str, declared: Option<u64>, actual: u64) -> Result<(), TorchError> {
    match declared {
        Some(needed) if needed <= actual => Ok(()),
        _ => Err(TorchError::Invalid {
            what: format!(
                "storage `{key}` holds {actual} bytes, fewer than its tensors need ({})",
                declared.map_or("an overflowing size".to_string(), |n| format!("{n} bytes"))
            ),
        }),
    }
}

/// Where a storage's bytes can be read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StorageBytes {
    /// Bytes in the record (may exceed what the persistent id declares; all are kept).
    pub len: u64,
    /// The record's CRC-32 when the container records one (zip).
    pub crc32: Option<u32>,
    /// The element count a legacy file stores before the bytes.
    pub legacy_count: Option<u64>,
}

/// Bytes of a storage in the memory-mapped input file: borrowed from the page cache, never
/// copied into this process. The file is mapped read-only and shared; like `torch.load(...,
/// mmap=True)`, it must not be truncated by another process while it is read.
#[derive(Clone)]
pub struct MappedBytes {
    map: Arc<Mmap>,
    start: usize,
    len: usize,
}

impl std::fmt::Debug for MappedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedBytes")
            .field("start", &self.start)
            .field("len", &self.len)
            .finish()
    }
}

impl MappedBytes {
    /// All of `file`, mapped read-only and shared; `None` when it cannot be mapped.
    pub fn whole_file(file: &File) -> Option<MappedBytes> {
        // SAFETY: a read-only shared mapping of an open input file; see `MappedBytes`.
        let map = Arc::new(unsafe { Mmap::map(file) }.ok()?);
        Some(MappedBytes {
            len: map.len(),
            map,
            start: 0,
        })
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        // `start + len <= map.len()` by construction (`Checkpoint::map_storage`, `range`).
        &self.map[self.start..self.start + self.len]
    }

    /// `len` bytes from `offset` within these, if they are inside.
    pub fn range(&self, offset: u64, len: u64) -> Option<MappedBytes> {
        let offset = usize::try_from(offset).ok()?;
        let len = usize::try_from(len).ok()?;
        (offset.checked_add(len)? <= self.len).then(|| MappedBytes {
            map: Arc::clone(&self.map),
            start: self.start + offset,
            len,
        })
    }

    /// Whether `self` and `other` are the same bytes of the same mapping.
    pub fn same(&self, other: &MappedBytes) -> bool {
        Arc::ptr_eq(&self.map, &other.map) && self.start == other.start && self.len == other.len
    }

    /// Unmaps these bytes' pages from this process (they stay in the page cache, and a later
    /// read maps them again), so that reading a model through the mapping does not make the
    /// process's resident memory grow with the model.
    pub fn release(&self) {
        if self.len == 0 {
            return;
        }
        // SAFETY: the mapping is a shared read-only mapping of a file. `MADV_DONTNEED` there
        // drops this process's page-table entries only; any later access faults the same file
        // pages back in, so slices borrowed from the mapping keep reading the same bytes.
        // A failure only means the pages stay mapped.
        let _ = unsafe {
            self.map
                .unchecked_advise_range(UncheckedAdvice::DontNeed, self.start, self.len)
        };
    }
}

impl Checkpoint {
    /// Storage `key`'s bytes in the mapped input file, when they sit there as they are (a
    /// stored zip record, a legacy or tar storage). `None` for a deflated record or a file
    /// that cannot be mapped: read those with [`Checkpoint::read_storage_range`].
    pub fn map_storage(&self, key: &str) -> Result<Option<MappedBytes>, TorchError> {
        let (offset, len) = match &self.source {
            Source::Zip(zip) => {
                let record = zip.record(&format!("data/{key}"))?;
                if !record.stored {
                    return Ok(None);
                }
                (record.data_offset, record.size)
            }
            Source::Legacy { records, .. } => {
                let record = legacy_record(records, key)?;
                (record.header_offset + 8, record.nbytes)
            }
        };
        let Some(whole) = self
            .mapped
            .get_or_init(|| MappedBytes::whole_file(self.source_file()))
            .as_ref()
        else {
            return Ok(None);
        };
        Ok(whole.range(offset, len))
    }

    /// Facts about the bytes of storage `key`.
    pub fn storage_bytes(&self, key: &str) -> Result<StorageBytes, TorchError> {
        match &self.source {
            Source::Zip(zip) => {
                let record = zip.record(&format!("data/{key}"))?;
                Ok(StorageBytes {
                    len: record.size,
                    crc32: Some(record.crc32),
                    legacy_count: None,
                })
            }
            Source::Legacy { records, .. } => {
                let record = records.get(key).ok_or_else(|| TorchError::Invalid {
                    what: format!("storage `{key}` is not in the file"),
                })?;
                Ok(StorageBytes {
                    len: record.nbytes,
                    crc32: None,
                    legacy_count: Some(record.count),
                })
            }
        }
    }

    /// Where storage `key`'s bytes sit in the input file when they sit there unchanged (a
    /// stored zip record, a legacy storage): the absolute offset of their first byte, and
    /// how many there are. `None` for a deflated record.
    pub fn storage_in_file(&self, key: &str) -> Result<Option<(u64, u64)>, TorchError> {
        match &self.source {
            Source::Zip(zip) => {
                let record = zip.record(&format!("data/{key}"))?;
                Ok(record.stored.then_some((record.data_offset, record.size)))
            }
            Source::Legacy { records, .. } => {
                let record = legacy_record(records, key)?;
                Ok(Some((record.header_offset + 8, record.nbytes)))
            }
        }
    }

    /// The open input file the storages are read from.
    pub fn source_file(&self) -> &File {
        match &self.source {
            Source::Zip(zip) => zip.file(),
            Source::Legacy { file, .. } => file,
        }
    }

    /// Copies storage `key`'s bytes into `writer` as record `name`, without decoding them.
    /// Stored bytes go file to file (the kernel copies them, or clones whole blocks where the
    /// file system shares them), placed at their input offset modulo 64 KiB when the record
    /// affords the padding ([`TorchZipWriter::add_stream_placed`]); deflated records, which
    /// only third-party rewriters produce, are inflated in memory first.
    pub fn copy_storage_to_zip(
        &mut self,
        key: &str,
        writer: &mut TorchZipWriter<File>,
        name: &str,
    ) -> Result<(), TorchError> {
        match &mut self.source {
            Source::Zip(zip) => {
                let record_name = format!("data/{key}");
                let record = zip.record(&record_name)?;
                if record.stored {
                    let (mut reader, info) = zip.stored_reader(&record_name)?;
                    writer.add_stream_placed(
                        name,
                        &mut reader,
                        info.size,
                        info.crc32,
                        info.data_offset,
                    )?;
                } else {
                    let mut spool = inflate_to_spool(zip, &record_name)?;
                    writer.add_stream(name, &mut spool, record.size, record.crc32)?;
                }
            }
            Source::Legacy { file, records } => {
                let record = legacy_record(records, key)?;
                let mut reader = region(file, record.header_offset + 8, record.nbytes)?;
                let mut block = vec![0u8; copy::HASH_BLOCK];
                let crc =
                    copy::crc_of_range(file, record.header_offset + 8, record.nbytes, &mut block)?;
                writer.add_stream_placed(
                    name,
                    &mut reader,
                    record.nbytes,
                    crc,
                    record.header_offset + 8,
                )?;
            }
        }
        Ok(())
    }

    /// Runs `f` on a reader over all of storage `key`'s bytes (the `StorageBytes::len` of
    /// them), for writers that re-encode a storage instead of copying it. Stored records and
    /// legacy storages are read straight from the file; a deflated record is inflated in
    /// memory first, as [`Checkpoint::copy_storage_to_zip`] does.
    pub fn read_storage<T>(
        &mut self,
        key: &str,
        f: impl FnOnce(&mut dyn Read) -> Result<T, TorchError>,
    ) -> Result<T, TorchError> {
        match &mut self.source {
            Source::Zip(zip) => {
                let record_name = format!("data/{key}");
                if zip.record(&record_name)?.stored {
                    let (mut reader, _) = zip.stored_reader(&record_name)?;
                    f(&mut reader)
                } else {
                    let mut spool = inflate_to_spool(zip, &record_name)?;
                    f(&mut spool)
                }
            }
            Source::Legacy { file, records } => {
                let record = legacy_record(records, key)?;
                let mut reader = region(file, record.header_offset + 8, record.nbytes)?;
                f(&mut reader)
            }
        }
    }

    /// Appends storage `key`'s bytes to `out`, without decoding them.
    pub fn copy_storage_to_file(&mut self, key: &str, out: &mut File) -> Result<u64, TorchError> {
        match &mut self.source {
            Source::Zip(zip) => Ok(zip.copy_record(&format!("data/{key}"), out)?),
            Source::Legacy { file, records } => {
                let record = legacy_record(records, key)?;
                let mut reader = region(file, record.header_offset + 8, record.nbytes)?;
                let copied = io::copy(&mut reader, out)?;
                if copied != record.nbytes {
                    return Err(TorchError::Invalid {
                        what: format!("storage `{key}` is truncated"),
                    });
                }
                Ok(copied)
            }
        }
    }

    /// Reads `len` bytes of storage `key` starting `offset` bytes into it. Stored zip records
    /// and legacy files are read in place; a deflated record is inflated first. Fails if the
    /// range runs past the storage's bytes (checked before allocating).
    pub fn read_storage_range(
        &mut self,
        key: &str,
        offset: u64,
        len: u64,
    ) -> Result<Vec<u8>, TorchError> {
        let available = self.storage_bytes(key)?.len;
        let end = offset.checked_add(len).filter(|&end| end <= available);
        let (Some(_), Ok(size)) = (end, usize::try_from(len)) else {
            return Err(TorchError::Invalid {
                what: format!(
                    "storage `{key}` holds {available} bytes; cannot read {len} from byte {offset}"
                ),
            });
        };
        let mut buffer = vec![0u8; size];
        match &mut self.source {
            Source::Zip(zip) => {
                let record_name = format!("data/{key}");
                let record = zip.record(&record_name)?;
                if record.stored {
                    let (reader, info) = zip.stored_reader(&record_name)?;
                    reader
                        .get_ref()
                        .read_exact_at(&mut buffer, info.data_offset + offset)?;
                } else {
                    let spool = inflate_to_spool(zip, &record_name)?;
                    spool
                        .read_exact_at(&mut buffer, offset)
                        .map_err(|_| TorchError::Invalid {
                            what: format!("storage `{key}` is truncated"),
                        })?;
                }
            }
            Source::Legacy { file, records } => {
                let record = legacy_record(records, key)?;
                file.read_exact_at(&mut buffer, record.header_offset + 8 + offset)?;
            }
        }
        Ok(buffer)
    }
}

/// Inflates a deflated record (only third-party rewriters produce them) into an anonymous
/// temporary file and returns it rewound, so memory does not grow with the record's size.
fn inflate_to_spool(zip: &mut TorchZip, name: &str) -> Result<File, TorchError> {
    let mut spool = tempfile::tempfile()?;
    zip.copy_record(name, &mut spool)?;
    spool.seek(SeekFrom::Start(0))?;
    Ok(spool)
}

fn legacy_record(
    records: &HashMap<StorageKey, LegacyRecord>,
    key: &str,
) -> Result<LegacyRecord, TorchError> {
    records
        .get(key)
        .copied()
        .ok_or_else(|| TorchError::Invalid {
            what: format!("storage `{key}` is not in the file"),
        })
}

/// A reader over `len` bytes of `file` from `offset`, in a form std can copy in the kernel.
fn region(file: &File, offset: u64, len: u64) -> io::Result<io::Take<&File>> {
    let mut f = file;
    f.seek(SeekFrom::Start(offset))?;
    Ok(f.take(len))
}
