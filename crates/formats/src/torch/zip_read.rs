//! Reads the zip container of a torch checkpoint (`torch.save` ≥ 1.6, TorchScript, `.pt2`).
//!
//! Follows torch's reader (`PyTorchStreamReader`, miniz), not a strict zip validator:
//!
//! * the central directory is found as miniz finds it, and only in the layout zip writers
//!   produce ([`zip_dir::read_directory`]): anything another reader could read differently is
//!   refused as [`ZipError::Ambiguous`];
//! * the archive folder ("prefix") is the first central-directory entry's name up to its first
//!   `/`, and every entry must share it; record names are relative to it. The one exception,
//!   [`TorchZip::open_flat`], is the `.pt2` layout torch 2.1–2.7 wrote with Python's
//!   `zipfile` (records at the root, read by name);
//! * an archive stored as a record of another (the `torch.save` archives inside those
//!   `.pt2` files) is read in place, [`TorchZip::open_nested`];
//! * CRC-32 values are never verified (torch does not check them, and files saved with
//!   `set_crc32_options(False)` carry CRC 0);
//! * zip64 archives and any folder name work; stored and deflated records can be read.
//!
//! Every size and offset taken from the file is checked against the file length before it is
//! used, and no buffer is sized by a field that has not been checked against a caller's limit.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

use flate2::read::DeflateDecoder;

use super::zip_dir;

const LOCAL_HEADER_SIG: [u8; 4] = *b"PK\x03\x04";
const LOCAL_HEADER_LEN: u64 = 30;
/// General-purpose flag bit 0: the record is encrypted.
const FLAG_ENCRYPTED: u16 = 0x1;
const METHOD_STORED: u16 = 0;
const METHOD_DEFLATED: u16 = 8;

/// Errors from reading a checkpoint's zip container.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ZipError {
    #[error("not a zip archive (the file does not start with a zip local header)")]
    NotZip,
    #[error("corrupt zip central directory: {0} (the file may be truncated or damaged)")]
    CorruptDirectory(String),
    #[error("ambiguous zip layout: {0}; torch's zip reader (miniz) could read other records than another reader, so the file is refused")]
    Ambiguous(String),
    #[error("corrupt zip record `{name}`: {reason}")]
    CorruptRecord { name: String, reason: String },
    #[error("record `{0}` is missing")]
    Missing(String),
    #[error("the zip archive has no entries")]
    Empty,
    #[error("entry `{0}` is not inside an archive folder (torch expects every entry under one folder, e.g. `archive/data.pkl`)")]
    NoFolder(String),
    #[error("entries are not all under one archive folder (`{first}/` vs `{other}`)")]
    MixedFolders { first: String, other: String },
    #[error("entry name {0:?} is not valid UTF-8")]
    BadName(String),
    #[error("record `{0}` appears more than once in the zip central directory")]
    Duplicate(String),
    #[error("record `{0}` is encrypted; torch checkpoints are never encrypted")]
    Encrypted(String),
    #[error("record `{name}` uses unsupported compression method {method}; only stored and deflated records can be read")]
    UnsupportedCompression { name: String, method: String },
    #[error("record `{0}` is deflated, so its bytes cannot be used in place (torch.load(mmap=True) would read garbage); rewrite the checkpoint with stored records")]
    Deflated(String),
    #[error("record `{name}` is {size} bytes, more than the {limit}-byte limit for this record")]
    TooLarge { name: String, size: u64, limit: u64 },
    #[error("record `{name}` is truncated: expected {expected} bytes, got {got}")]
    Truncated {
        name: String,
        expected: u64,
        got: u64,
    },
    #[error("record `{name}`: {detail}; no zip writer produces this, it hides the record's real content from tools that read local headers")]
    LocalHeaderMismatch { name: String, detail: String },
    #[error("the zip archive declares {value} {what}, more than the limit of {limit}")]
    LimitExceeded {
        what: &'static str,
        value: u64,
        limit: u64,
    },
    #[error("record `{name}` inflates from {compressed} to {size} bytes, a ratio above {MAX_INFLATE_RATIO}:1 (a decompression bomb); refusing to inflate it into memory")]
    Bomb {
        name: String,
        size: u64,
        compressed: u64,
    },
    #[error("I/O error while reading the zip archive: {0}")]
    Io(#[from] io::Error),
}

/// Where a record's bytes are and what the central directory says about them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordInfo {
    /// Name relative to the archive folder, e.g. `data/0`.
    pub name: String,
    /// Uncompressed size.
    pub size: u64,
    /// Size of the bytes in the file (equal to `size` for stored records).
    pub compressed_size: u64,
    /// CRC-32 from the central directory (may be 0 or wrong; never verified).
    pub crc32: u32,
    /// True for stored (method 0) records.
    pub stored: bool,
    /// Absolute file offset of the record's bytes (the compressed stream for deflated ones).
    pub data_offset: u64,
    /// Absolute file offset of the record's local header.
    pub header_offset: u64,
}

/// Buffer of the reader of local headers, which are spread over the file: one read each.
const HEADER_BUFFER: usize = 4 << 10;

/// A `Read + Seek` over `len` bytes of a file from offset `base` (a whole file, or a zip
/// stored as a record of another) by positioned reads (`pread`) through a buffer: a seek
/// costs no system call, and the many small reads of parsing a central directory or a local
/// header are served by one large read. Reads at least as large as the buffer bypass it;
/// no read goes past `len`.
struct Positioned {
    file: File,
    base: u64,
    len: u64,
    pos: u64,
    buffer: Vec<u8>,
    /// `buffer[..filled]` holds the file's bytes from `start`.
    start: u64,
    filled: usize,
}

impl Positioned {
    fn new(file: File, base: u64, len: u64, capacity: usize) -> Positioned {
        Positioned {
            file,
            base,
            len,
            pos: 0,
            buffer: vec![0; capacity],
            start: 0,
            filled: 0,
        }
    }
}

impl Read for Positioned {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        use std::os::unix::fs::FileExt;
        let left = usize::try_from(self.len.saturating_sub(self.pos)).unwrap_or(usize::MAX);
        let out_len = out.len().min(left);
        let out = &mut out[..out_len];
        if out.is_empty() {
            return Ok(0);
        }
        let buffered = self.pos >= self.start && self.pos - self.start < self.filled as u64;
        if !buffered {
            // `pos < len`, and `base + len` is within the file (checked by the opener).
            let at = self.base + self.pos;
            if out.len() >= self.buffer.len() {
                let n = self.file.read_at(out, at)?;
                self.pos += n as u64;
                return Ok(n);
            }
            let room = self.buffer.len().min(left);
            self.filled = self.file.read_at(&mut self.buffer[..room], at)?;
            self.start = self.pos;
            if self.filled == 0 {
                return Ok(0);
            }
        }
        // `pos - start < filled <= buffer.len()`, so the index fits.
        let at = (self.pos - self.start) as usize;
        let n = out.len().min(self.filled - at);
        out[..n].copy_from_slice(&self.buffer[at..at + n]);
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for Positioned {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        self.pos = target.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start of the file",
            )
        })?;
        Ok(self.pos)
    }

    fn stream_position(&mut self) -> io::Result<u64> {
        Ok(self.pos)
    }
}

/// Where a zip's records are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Folder {
    /// Every entry under one folder, as torch's `PyTorchStreamReader` requires.
    One,
    /// Entries named from the root (Python `zipfile` archives).
    Root,
}

/// An opened torch zip archive.
///
/// Invariant: its central directory is canonical ([`zip_dir::read_directory`]), every entry is
/// under one folder (unless opened by [`TorchZip::open_flat`]), and every record's local
/// header agrees with its entry. Record offsets are offsets in the file, also for an archive
/// nested in another.
pub struct TorchZip {
    /// The open archive file.
    file: File,
    prefix: String,
    entries: Vec<RecordInfo>,
    by_name: HashMap<String, usize>,
    /// Whether `torch.load` would hand the file to `torch.jit.load`.
    torchscript: bool,
}

impl std::fmt::Debug for TorchZip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TorchZip")
            .field("prefix", &self.prefix)
            .field("records", &self.entries.len())
            .finish()
    }
}

impl TorchZip {
    /// Parses the central directory and every record's local header; every entry must be
    /// under one archive folder, as torch requires.
    pub fn open(file: File) -> Result<Self, ZipError> {
        let len = file.metadata()?.len();
        TorchZip::open_in(file, 0, len, Folder::One)
    }

    /// Like [`TorchZip::open`] for an archive whose records sit at the root and are named
    /// in full (`serialized_exported_program.json`, `extra_files/notes.txt`): the `.pt2`
    /// layout torch 2.1–2.7 wrote with Python's `zipfile`. [`TorchZip::prefix`] is empty.
    pub fn open_flat(file: File) -> Result<Self, ZipError> {
        let len = file.metadata()?.len();
        TorchZip::open_in(file, 0, len, Folder::Root)
    }

    /// The torch archive stored as record `name` of this one (a `torch.save` zip written
    /// into a `.pt2` file), read in place with the rules of [`TorchZip::open`]. Its record
    /// offsets are offsets in the file. A deflated record is refused
    /// ([`ZipError::Deflated`]): its bytes are not in the file.
    pub fn open_nested(&self, name: &str) -> Result<TorchZip, ZipError> {
        let info = self.stored_record(name)?;
        TorchZip::open_in(
            self.file.try_clone()?,
            info.data_offset,
            info.size,
            Folder::One,
        )
    }

    /// Opens the archive in the `file_len` bytes of `file` from offset `base`; the caller
    /// has checked that they are in the file.
    fn open_in(file: File, base: u64, file_len: u64, folder: Folder) -> Result<Self, ZipError> {
        let mut magic = [0u8; 4];
        match Positioned::new(file.try_clone()?, base, file_len, 4).read_exact(&mut magic) {
            Ok(()) if magic == LOCAL_HEADER_SIG => {}
            Ok(()) => return Err(ZipError::NotZip),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(ZipError::NotZip),
            Err(e) => return Err(e.into()),
        }
        let directory = {
            let mut reader = Positioned::new(file.try_clone()?, base, file_len, HEADER_BUFFER);
            zip_dir::read_directory(&mut reader, file_len)?
        };
        let mut prefix: Option<String> = None;
        let mut headers = Positioned::new(file.try_clone()?, base, file_len, HEADER_BUFFER);
        let mut entries = Vec::with_capacity(directory.entries.len());
        let mut by_name = HashMap::with_capacity(directory.entries.len());
        for entry in &directory.entries {
            let raw = entry.name.as_slice();
            let full = std::str::from_utf8(raw)
                .map_err(|_| ZipError::BadName(String::from_utf8_lossy(raw).into_owned()))?
                .to_string();
            let (folder, rel) = match (folder, full.split_once('/')) {
                (Folder::Root, _) => ("", full.as_str()),
                (Folder::One, Some(split)) => split,
                (Folder::One, None) => return Err(ZipError::NoFolder(full)),
            };
            match &prefix {
                None => prefix = Some(folder.to_string()),
                Some(p) if p == folder => {}
                Some(p) => {
                    return Err(ZipError::MixedFolders {
                        first: p.clone(),
                        other: full,
                    })
                }
            }
            // Directory entries (e.g. `archive/` from Python's zipfile) hold no record.
            if rel.is_empty() || entry.is_dir {
                continue;
            }
            let rel = rel.to_string();
            if entry.flags & FLAG_ENCRYPTED != 0 {
                return Err(ZipError::Encrypted(rel));
            }
            let stored = match entry.method {
                METHOD_STORED => true,
                METHOD_DEFLATED => false,
                other => {
                    return Err(ZipError::UnsupportedCompression {
                        name: rel,
                        method: other.to_string(),
                    })
                }
            };
            // Equal for stored entries (the directory is canonical).
            let (size, compressed_size) = (entry.size, entry.compressed_size);
            let header_offset = entry.header_offset;
            let local = read_local_header(&mut headers, header_offset, file_len)
                .map_err(|reason| corrupt(&rel, reason))?;
            if let Some(detail) = local_mismatch(&local, raw, size, compressed_size) {
                return Err(ZipError::LocalHeaderMismatch { name: full, detail });
            }
            let data_offset = local.data_offset;
            match data_offset.checked_add(compressed_size) {
                Some(end) if end <= file_len => {}
                _ => {
                    return Err(corrupt(
                        &rel,
                        format!(
                            "its {compressed_size} bytes at offset {data_offset} run past the end of the {file_len}-byte file (truncated file?)"
                        ),
                    ))
                }
            }
            // Both are below `file_len`, and `base + file_len` is within the file.
            let info = RecordInfo {
                name: rel.clone(),
                size,
                compressed_size,
                crc32: entry.crc32,
                stored,
                data_offset: base + data_offset,
                header_offset: base + header_offset,
            };
            if by_name.insert(rel.clone(), entries.len()).is_some() {
                return Err(ZipError::Duplicate(rel));
            }
            entries.push(info);
        }
        let prefix = prefix.unwrap_or_default();
        Ok(TorchZip {
            file,
            prefix,
            entries,
            by_name,
            torchscript: directory.is_torchscript(),
        })
    }

    /// Whether `torch.load` hands this archive to `torch.jit.load`: a record named exactly
    /// `constants.pkl` directly in the archive folder ([`zip_dir::Directory::is_torchscript`]).
    pub fn is_torchscript(&self) -> bool {
        self.torchscript
    }

    /// The archive folder name without the trailing `/`, e.g. `ckpt`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Whether a record exists; `name` is relative to the folder, e.g. `data.pkl`.
    pub fn has(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// Number of records.
    #[allow(
        clippy::len_without_is_empty,
        reason = "an archive that opened has records"
    )]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The open archive file (for comparing it with an output path).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The central-directory facts and data offset of a record.
    pub fn record(&self, name: &str) -> Result<RecordInfo, ZipError> {
        Ok(self.entry(name)?.clone())
    }

    /// Like [`TorchZip::record`], but fails with [`ZipError::Deflated`] unless the record is
    /// stored, i.e. its bytes sit unchanged at `data_offset` (what `mmap` loading needs).
    pub fn stored_record(&self, name: &str) -> Result<RecordInfo, ZipError> {
        let info = self.record(name)?;
        if !info.stored {
            return Err(ZipError::Deflated(info.name));
        }
        Ok(info)
    }

    /// A reader over a stored record's bytes, straight from the file (no CRC check, no
    /// buffering): feed it to `TorchZipWriter::add_stream` with the record's `size` and
    /// `crc32` to copy a tensor without decoding it (the kernel copies when both ends are
    /// files). Fails with [`ZipError::Deflated`] for a deflated record. The reader shares the
    /// file position with this archive, so finish with it before the next call.
    pub fn stored_reader(&self, name: &str) -> Result<(io::Take<&File>, RecordInfo), ZipError> {
        let info = self.stored_record(name)?;
        let mut f = &self.file;
        f.seek(SeekFrom::Start(info.data_offset))?;
        Ok((f.take(info.size), info))
    }

    /// Reads a whole record into memory, inflating it if deflated. Fails with
    /// [`ZipError::TooLarge`] if its declared size exceeds `limit` (checked before
    /// allocating), and with an error if the bytes do not match the declared size.
    pub fn read_small(&mut self, name: &str, limit: u64) -> Result<Vec<u8>, ZipError> {
        let info = self.entry(name)?.clone();
        if info.size > limit {
            return Err(ZipError::TooLarge {
                name: info.name,
                size: info.size,
                limit,
            });
        }
        check_ratio(&info)?;
        // `size <= limit` from here on; the capacity is a hint and also capped.
        let capacity = usize::try_from(info.size.min(1 << 26)).unwrap_or(0);
        let mut buf = Vec::with_capacity(capacity);
        if info.stored {
            let mut f = &self.file;
            f.seek(SeekFrom::Start(info.data_offset))?;
            f.take(info.size).read_to_end(&mut buf)?;
        } else {
            let mut reader = self.inflater(&info)?;
            (&mut reader)
                .take(info.size.saturating_add(1))
                .read_to_end(&mut buf)
                .map_err(|e| corrupt_io(&info.name, e))?;
        }
        let got = buf.len() as u64;
        check_len(&info, got)?;
        Ok(buf)
    }

    /// Streams a record's uncompressed bytes into `out` without holding the record in memory.
    /// A stored record is copied straight from the file (`Take<&File>`), so with `out` a
    /// `File` Linux copies in the kernel; a deflated one is inflated. Returns the number of
    /// bytes copied, which always equals the record's size (otherwise it is an error).
    pub fn copy_record<W: Write>(&mut self, name: &str, out: &mut W) -> Result<u64, ZipError> {
        let info = self.entry(name)?.clone();
        let copied = if info.stored {
            let mut f = &self.file;
            f.seek(SeekFrom::Start(info.data_offset))?;
            io::copy(&mut f.take(info.size), out)?
        } else {
            let mut reader = self.inflater(&info)?;
            let n = io::copy(&mut (&mut reader).take(info.size), out)
                .map_err(|e| corrupt_io(&info.name, e))?;
            if n == info.size {
                let mut extra = [0u8; 1];
                let more = reader
                    .read(&mut extra)
                    .map_err(|e| corrupt_io(&info.name, e))?;
                if more > 0 {
                    return Err(corrupt(
                        &info.name,
                        format!("it inflates larger than its declared {} bytes", info.size),
                    ));
                }
            }
            n
        };
        check_len(&info, copied)?;
        Ok(copied)
    }

    fn entry(&self, name: &str) -> Result<&RecordInfo, ZipError> {
        self.by_name
            .get(name)
            .and_then(|&i| self.entries.get(i))
            .ok_or_else(|| ZipError::Missing(name.to_string()))
    }

    /// An inflating reader over a deflated record's compressed bytes (no CRC check, as
    /// torch). It shares the file position with this archive.
    fn inflater(&self, info: &RecordInfo) -> Result<impl Read + '_, ZipError> {
        let mut f = &self.file;
        f.seek(SeekFrom::Start(info.data_offset))?;
        Ok(DeflateDecoder::new(f.take(info.compressed_size)))
    }
}

fn corrupt(name: &str, reason: String) -> ZipError {
    ZipError::CorruptRecord {
        name: name.to_string(),
        reason,
    }
}

fn corrupt_io(name: &str, e: io::Error) -> ZipError {
    match e.kind() {
        io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput | io::ErrorKind::Other => {
            corrupt(name, e.to_string())
        }
        _ => ZipError::Io(e),
    }
}

fn check_len(info: &RecordInfo, got: u64) -> Result<(), ZipError> {
    if got < info.size {
        return Err(ZipError::Truncated {
            name: info.name.clone(),
            expected: info.size,
            got,
        });
    }
    if got > info.size {
        return Err(corrupt(
            &info.name,
            format!("it is larger than its declared {} bytes", info.size),
        ));
    }
    Ok(())
}

/// What a record's local header says. Readers that walk local headers (many scanners) see
/// these values; torch sees the central directory's. [`local_mismatch`] compares them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalHeader {
    /// General-purpose flags (bit 3: sizes are in a data descriptor after the data).
    pub flags: u16,
    /// Compressed size, from the zip64 extra field when the 32-bit field is `0xFFFFFFFF`.
    /// `None` when the header defers it (data descriptor) or the zip64 field is missing.
    pub compressed_size: Option<u64>,
    /// Uncompressed size, resolved the same way.
    pub size: Option<u64>,
    /// The raw name bytes.
    pub name: Vec<u8>,
    /// Absolute file offset of the record's data.
    pub data_offset: u64,
}

/// Reads the local header at `header_offset`, checking every length against `file_len`
/// before reading (the name and extra field are at most 64 KiB each).
pub fn read_local_header<R: Read + Seek + ?Sized>(
    r: &mut R,
    header_offset: u64,
    file_len: u64,
) -> Result<LocalHeader, String> {
    let fixed_end = header_offset
        .checked_add(LOCAL_HEADER_LEN)
        .filter(|&end| end <= file_len)
        .ok_or_else(|| {
            format!("its local header at offset {header_offset} is past the end of the file")
        })?;
    let mut header = [0u8; LOCAL_HEADER_LEN as usize];
    r.seek(SeekFrom::Start(header_offset))
        .and_then(|_| r.read_exact(&mut header))
        .map_err(|e| format!("cannot read its local header at offset {header_offset}: {e}"))?;
    let u16_at = |i: usize| u16::from_le_bytes([header[i], header[i + 1]]);
    let u32_at =
        |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
    if header[..4] != LOCAL_HEADER_SIG {
        return Err(format!(
            "no local header signature at offset {header_offset}"
        ));
    }
    let flags = u16_at(6);
    let (compressed32, size32) = (u32_at(18), u32_at(22));
    let name_len = u64::from(u16_at(26));
    let extra_len = u64::from(u16_at(28));
    let data_offset = fixed_end
        .checked_add(name_len + extra_len)
        .filter(|&end| end <= file_len)
        .ok_or_else(|| {
            format!("its local header at offset {header_offset} runs past the end of the file")
        })?;
    // Both lengths are u16 values checked against the file above.
    let mut tail = vec![0u8; (name_len + extra_len) as usize];
    r.read_exact(&mut tail)
        .map_err(|e| format!("cannot read its local header at offset {header_offset}: {e}"))?;
    let extra = tail.split_off(name_len as usize);
    let zip64 = zip64_sizes(&extra);
    let deferred = flags & 0x8 != 0 && compressed32 == 0 && size32 == 0;
    let resolve = |field: u32, wide: Option<u64>| match field {
        _ if deferred => None,
        u32::MAX => wide,
        n => Some(u64::from(n)),
    };
    Ok(LocalHeader {
        flags,
        size: resolve(size32, zip64.map(|(size, _)| size)),
        compressed_size: resolve(compressed32, zip64.and_then(|(_, c)| c)),
        name: tail,
        data_offset,
    })
}

/// The zip64 extra field's (uncompressed, compressed) sizes, if the field is present.
fn zip64_sizes(mut extra: &[u8]) -> Option<(u64, Option<u64>)> {
    while extra.len() >= 4 {
        let id = u16::from_le_bytes([extra[0], extra[1]]);
        let len = usize::from(u16::from_le_bytes([extra[2], extra[3]]));
        let body = extra.get(4..4 + len)?;
        if id == 0x0001 {
            let u64_at = |i: usize| {
                body.get(i..i + 8)
                    .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            };
            return u64_at(0).map(|size| (size, u64_at(8)));
        }
        extra = &extra[4 + len..];
    }
    None
}

/// How a local header disagrees with its central-directory entry (name, or sizes the local
/// header states), or `None`. No writer produces a disagreement; it is how a file shows a
/// local-header-reading scanner something other than what torch loads.
pub fn local_mismatch(
    local: &LocalHeader,
    central_name: &[u8],
    size: u64,
    compressed_size: u64,
) -> Option<String> {
    if local.name != central_name {
        return Some(format!(
            "its local header names it {:?}",
            String::from_utf8_lossy(&local.name)
        ));
    }
    let pairs = [
        ("uncompressed size", local.size, size),
        ("compressed size", local.compressed_size, compressed_size),
    ];
    pairs
        .iter()
        .find_map(|&(what, local, central)| match local {
            Some(l) if l != central => Some(format!(
                "its local header gives {what} {l}, the central directory {central}"
            )),
            _ => None,
        })
}

/// A deflated record read into memory may be at most this many times its compressed size
/// once it is larger than [`RATIO_FLOOR`]: deflate tops out near 1032:1, pickles and text
/// compress 3–20:1, and a higher ratio is a decompression bomb aimed at memory.
pub const MAX_INFLATE_RATIO: u64 = 200;
/// Below this many bytes no ratio is enforced.
pub const RATIO_FLOOR: u64 = 16 << 20;

/// Refuses to inflate `info` into memory if its declared ratio marks it as a bomb.
fn check_ratio(info: &RecordInfo) -> Result<(), ZipError> {
    if info.stored || info.size <= RATIO_FLOOR {
        return Ok(());
    }
    if info.size / info.compressed_size.max(1) > MAX_INFLATE_RATIO {
        return Err(ZipError::Bomb {
            name: info.name.clone(),
            size: info.size,
            compressed: info.compressed_size,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::zip_write::TorchZipWriter;
    use super::*;
    use std::io::Cursor;

    fn sample_records() -> Vec<(&'static str, Vec<u8>)> {
        vec![
            ("data.pkl", b"\x80\x02}q\x00.".to_vec()),
            (".format_version", b"1".to_vec()),
            ("byteorder", b"little".to_vec()),
            ("data/0", (0..120u8).collect()),
            ("data/1", (0..5000u32).map(|i| (i * 7) as u8).collect()),
            ("data/2", Vec::new()),
            ("version", b"3\n".to_vec()),
            (".data/serialization_id", b"0123456789".repeat(4)),
        ]
    }

    fn write_torch(prefix: &str, alignment: u64) -> Vec<u8> {
        let mut w = TorchZipWriter::new(Vec::new(), prefix, alignment);
        for (name, data) in sample_records() {
            w.add_bytes(name, &data).unwrap();
        }
        w.finish().unwrap()
    }

    fn file_with(bytes: &[u8]) -> File {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(bytes).unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        f
    }

    fn open_bytes(bytes: &[u8]) -> Result<TorchZip, ZipError> {
        TorchZip::open(file_with(bytes))
    }

    fn names(z: &TorchZip) -> Vec<String> {
        z.entries.iter().map(|e| e.name.clone()).collect()
    }

    /// Where the central directory starts, from the (zip64) end record.
    fn central_directory_start(bytes: &[u8]) -> usize {
        let eocd = bytes.len() - 22;
        assert_eq!(&bytes[eocd..eocd + 4], b"PK\x05\x06");
        let at = |i: usize, n: usize| {
            let mut a = [0u8; 8];
            a[..n].copy_from_slice(&bytes[i..i + n]);
            u64::from_le_bytes(a) as usize
        };
        if bytes[eocd - 20..eocd - 16] == *b"PK\x06\x07" {
            at(eocd - 76 + 48, 8)
        } else {
            at(eocd + 16, 4)
        }
    }

    /// An archive written by the zip crate's own writer.
    fn write_with_zip_crate(
        entries: &[(&str, &[u8], zip::CompressionMethod)],
        zip64: bool,
    ) -> Vec<u8> {
        let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, data, method) in entries {
            let opts = zip::write::SimpleFileOptions::default()
                .compression_method(*method)
                .large_file(zip64);
            w.start_file(*name, opts).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap().into_inner()
    }

    #[test]
    fn reads_back_writer_output() {
        for &align in &[64u64, 4096] {
            let bytes = write_torch("ck", align);
            let mut z = open_bytes(&bytes).unwrap();
            assert_eq!(z.prefix(), "ck");
            let want: Vec<_> = sample_records().iter().map(|r| r.0).collect();
            assert_eq!(names(&z), want);
            assert!(z.has("data.pkl") && z.has(".data/serialization_id"));
            assert!(!z.has("ck/data.pkl") && !z.has("constants.pkl"));
            for (name, data) in sample_records() {
                let info = z.record(name).unwrap();
                assert!(info.stored);
                assert_eq!(info.size, data.len() as u64);
                assert_eq!(info.crc32, crc32fast::hash(&data));
                assert_eq!(info.data_offset % align, 0);
                let slice = bytes
                    .get(info.data_offset as usize..(info.data_offset + info.size) as usize)
                    .unwrap();
                assert_eq!(slice, &data[..]);
                assert_eq!(z.read_small(name, 1 << 20).unwrap(), data);
                let mut out = tempfile::tempfile().unwrap();
                assert_eq!(z.copy_record(name, &mut out).unwrap(), data.len() as u64);
                out.seek(SeekFrom::Start(0)).unwrap();
                let mut got = Vec::new();
                out.read_to_end(&mut got).unwrap();
                assert_eq!(got, data);
            }
        }
    }

    #[test]
    fn rewrite_through_stored_reader_is_byte_identical() {
        let bytes = write_torch("ck", 64);
        let z = open_bytes(&bytes).unwrap();
        let mut w = TorchZipWriter::new(tempfile::tempfile().unwrap(), z.prefix(), 64);
        for name in &names(&z) {
            let (mut r, info) = z.stored_reader(name).unwrap();
            w.add_stream(name, &mut r, info.size, info.crc32).unwrap();
        }
        let mut out = w.finish().unwrap();
        out.seek(SeekFrom::Start(0)).unwrap();
        let mut again = Vec::new();
        out.read_to_end(&mut again).unwrap();
        assert_eq!(again, bytes);
    }

    #[test]
    fn missing_and_limit() {
        let mut z = open_bytes(&write_torch("ck", 64)).unwrap();
        let err = z.read_small("data/3", 10).unwrap_err();
        assert_eq!(err.to_string(), "record `data/3` is missing");
        let err = z.read_small("data/1", 4999).unwrap_err();
        assert!(
            matches!(err, ZipError::TooLarge { size: 5000, .. }),
            "{err}"
        );
        assert_eq!(z.read_small("data/1", 5000).unwrap().len(), 5000);
        assert!(matches!(z.record("nope"), Err(ZipError::Missing(_))));
    }

    #[test]
    fn any_folder_name_and_mixed_folders() {
        let z = open_bytes(&write_torch("whatever.pth", 64)).unwrap();
        assert_eq!(z.prefix(), "whatever.pth");
        let s = zip::CompressionMethod::Stored;
        let mixed = write_with_zip_crate(&[("a/data.pkl", b"x", s), ("b/data/0", b"y", s)], false);
        let err = open_bytes(&mixed).unwrap_err();
        assert_eq!(
            err.to_string(),
            "entries are not all under one archive folder (`a/` vs `b/data/0`)"
        );
        let flat = write_with_zip_crate(&[("data.pkl", b"x", s)], false);
        assert!(matches!(open_bytes(&flat), Err(ZipError::NoFolder(n)) if n == "data.pkl"));
    }

    #[test]
    fn crc_zero_and_wrong_crc_are_readable() {
        let mut w = TorchZipWriter::new(Vec::new(), "ck", 64);
        w.add_stream("data.pkl", &mut &b"pickle"[..], 6, 0).unwrap();
        w.add_stream("data/0", &mut &b"tensor bytes"[..], 12, 0x1234_5678)
            .unwrap();
        let bytes = w.finish().unwrap();
        // The zip crate's checked reader rejects it...
        let mut zc = zip::ZipArchive::new(Cursor::new(bytes.clone())).unwrap();
        let mut v = Vec::new();
        assert!(zc
            .by_name("ck/data.pkl")
            .unwrap()
            .read_to_end(&mut v)
            .is_err());
        // ...but torch and we do not care.
        let mut z = open_bytes(&bytes).unwrap();
        assert_eq!(z.record("data.pkl").unwrap().crc32, 0);
        assert_eq!(z.read_small("data.pkl", 100).unwrap(), b"pickle");
        let mut out = Vec::new();
        z.copy_record("data/0", &mut out).unwrap();
        assert_eq!(out, b"tensor bytes");
    }

    #[test]
    fn deflated_records_readable_even_with_bad_crc() {
        let d = zip::CompressionMethod::Deflated;
        let s = zip::CompressionMethod::Stored;
        let code = "def forward(self, x):\n    return x\n".repeat(50);
        let mut bytes = write_with_zip_crate(
            &[
                ("m/code/__torch__.py", code.as_bytes(), d),
                ("m/data/0", b"abcd", s),
            ],
            false,
        );
        let mut z = open_bytes(&bytes).unwrap();
        let info = z.record("code/__torch__.py").unwrap();
        assert!(!info.stored);
        assert!(info.compressed_size < info.size);
        assert!(matches!(
            z.stored_record("code/__torch__.py"),
            Err(ZipError::Deflated(_))
        ));
        assert!(z.stored_record("data/0").is_ok());
        assert_eq!(
            z.read_small("code/__torch__.py", 1 << 20).unwrap(),
            code.as_bytes()
        );
        let mut out = Vec::new();
        assert_eq!(
            z.copy_record("code/__torch__.py", &mut out).unwrap(),
            code.len() as u64
        );
        assert_eq!(out, code.as_bytes());
        // Zero the CRC in the central directory: still readable.
        drop(z);
        let cd = central_directory_start(&bytes);
        assert_eq!(&bytes[cd..cd + 4], b"PK\x01\x02");
        bytes[cd + 16..cd + 20].copy_from_slice(&[0; 4]);
        let mut z = open_bytes(&bytes).unwrap();
        assert_eq!(z.record("code/__torch__.py").unwrap().crc32, 0);
        assert_eq!(
            z.read_small("code/__torch__.py", 1 << 20).unwrap(),
            code.as_bytes()
        );
    }

    #[test]
    fn deflated_size_lies_are_errors() {
        let d = zip::CompressionMethod::Deflated;
        let text = "x".repeat(1000);
        let mut bytes = write_with_zip_crate(&[("m/a.py", text.as_bytes(), d)], false);
        let cd = central_directory_start(&bytes);
        // Declared uncompressed size smaller than the real one, in the central directory
        // alone: the local header disagrees, which is itself refused.
        bytes[cd + 24..cd + 28].copy_from_slice(&10u32.to_le_bytes());
        let err = open_bytes(&bytes).unwrap_err();
        assert!(
            matches!(&err, ZipError::LocalHeaderMismatch { name, .. } if name == "m/a.py"),
            "{err}"
        );
        // The same lie in both headers (the only local header starts at byte 0).
        bytes[22..26].copy_from_slice(&10u32.to_le_bytes());
        let mut z = open_bytes(&bytes).unwrap();
        assert!(z.read_small("a.py", 1 << 20).is_err());
        assert!(z.copy_record("a.py", &mut Vec::new()).is_err());
        // Larger than the real one.
        bytes[cd + 24..cd + 28].copy_from_slice(&5000u32.to_le_bytes());
        bytes[22..26].copy_from_slice(&5000u32.to_le_bytes());
        let mut z = open_bytes(&bytes).unwrap();
        let err = z.read_small("a.py", 1 << 20).unwrap_err();
        assert!(
            matches!(err, ZipError::Truncated { got: 1000, .. }),
            "{err}"
        );
        assert!(z.copy_record("a.py", &mut Vec::new()).is_err());
    }

    #[test]
    fn local_name_disagreeing_with_the_central_directory_is_refused() {
        let bytes = write_torch("ck", 64);
        let at = bytes.windows(11).position(|w| w == b"ck/data.pkl").unwrap();
        let mut b = bytes.clone();
        b[at + 3] = b'z';
        let err = open_bytes(&b).unwrap_err();
        assert!(
            matches!(&err, ZipError::LocalHeaderMismatch { detail, .. } if detail.contains("zata.pkl")),
            "{err}"
        );
    }

    #[test]
    fn entry_count_and_directory_size_are_capped_before_parsing() {
        let bytes = write_torch("ck", 64);
        // The writer ends with a zip64 end record (56 bytes), its locator (20) and the classic
        // end record (22): torch's reader takes the counts from the zip64 one.
        let zip64 = bytes.len() - 22 - 20 - 56;
        assert_eq!(&bytes[zip64..zip64 + 4], b"PK\x06\x06");
        let mut b = bytes.clone();
        b[zip64 + 24..zip64 + 40].copy_from_slice(&[[0xFE, 0xFF, 0, 0, 0, 0, 0, 0]; 2].concat());
        let err = open_bytes(&b).unwrap_err();
        assert!(err.to_string().contains("65534 entries"), "{err}");
        let mut b = bytes.clone();
        b[zip64 + 40..zip64 + 48]
            .copy_from_slice(&(zip_dir::MAX_CENTRAL_DIRECTORY + 1).to_le_bytes());
        let err = open_bytes(&b).unwrap_err();
        assert!(matches!(err, ZipError::LimitExceeded { .. }), "{err}");
    }

    #[test]
    fn high_ratio_deflated_records_are_not_inflated_into_memory() {
        let d = zip::CompressionMethod::Deflated;
        let zeros = vec![0u8; (RATIO_FLOOR + 1) as usize];
        let bytes = write_with_zip_crate(&[("m/data.pkl", &zeros, d)], false);
        let mut z = open_bytes(&bytes).unwrap();
        let err = z.read_small("data.pkl", u64::MAX).unwrap_err();
        assert!(matches!(err, ZipError::Bomb { .. }), "{err}");
    }

    #[test]
    fn zip64_archive_from_zip_crate() {
        let s = zip::CompressionMethod::Stored;
        let d = zip::CompressionMethod::Deflated;
        let bytes = write_with_zip_crate(
            &[
                ("archive/data.pkl", b"pkl", s),
                ("archive/data/0", &[7u8; 300], d),
                ("archive/version", b"3\n", s),
            ],
            true,
        );
        let mut z = open_bytes(&bytes).unwrap();
        assert_eq!(z.prefix(), "archive");
        assert_eq!(z.read_small("data.pkl", 10).unwrap(), b"pkl");
        assert_eq!(z.read_small("data/0", 1000).unwrap(), vec![7u8; 300]);
        assert_eq!(z.read_small("version", 10).unwrap(), b"3\n");
    }

    #[test]
    fn zip_crate_reads_our_archives() {
        let bytes = write_torch("ck", 4096);
        let mut zc = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        for (name, data) in sample_records() {
            let mut f = zc.by_name(&format!("ck/{name}")).unwrap();
            let mut got = Vec::new();
            f.read_to_end(&mut got).unwrap();
            assert_eq!(got, data);
        }
    }

    #[test]
    fn not_a_zip() {
        for bytes in [
            &b""[..],
            b"PK",
            b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.",
            b"PK\x05\x06",
        ] {
            assert!(
                matches!(open_bytes(bytes), Err(ZipError::NotZip)),
                "{bytes:?}"
            );
        }
        let err = open_bytes(b"PK\x03\x04 and then garbage").unwrap_err();
        assert!(matches!(err, ZipError::CorruptDirectory(_)), "{err}");
    }

    #[test]
    fn truncated_archives_error_without_panic() {
        let bytes = write_torch("ck", 64);
        for cut in 0..bytes.len() {
            let res = open_bytes(&bytes[..cut]);
            if let Ok(mut z) = res {
                // Anything that opens must only yield correct bytes or errors.
                for (name, data) in sample_records() {
                    if let Ok(got) = z.read_small(name, 1 << 20) {
                        assert_eq!(got, data, "cut at {cut}");
                    }
                }
            }
        }
        assert!(open_bytes(&bytes).is_ok());
    }

    #[test]
    fn corrupted_central_directory_never_panics() {
        let bytes = write_torch("ck", 64);
        let start = central_directory_start(&bytes);
        let mut opened = 0;
        for pos in start..bytes.len() {
            for val in [0x00u8, 0xFF, 0x7F, 0x80, 0x01] {
                let mut b = bytes.clone();
                if b[pos] == val {
                    continue;
                }
                b[pos] = val;
                if let Ok(mut z) = open_bytes(&b) {
                    opened += 1;
                    for name in names(&z) {
                        let _ = z.read_small(&name, 1 << 16);
                        let _ = z.copy_record(&name, &mut io::sink());
                    }
                }
            }
        }
        assert!(opened > 0); // e.g. CRC bytes do not matter
    }

    #[test]
    fn record_declared_bigger_than_file() {
        let bytes = write_torch("ck", 64);
        let cd = central_directory_start(&bytes);
        // The first central entry is data.pkl: set both sizes to 1 MiB. torch's reader
        // refuses the whole archive when it indexes the directory.
        let mut b = bytes.clone();
        b[cd + 20..cd + 24].copy_from_slice(&(1u32 << 20).to_le_bytes());
        b[cd + 24..cd + 28].copy_from_slice(&(1u32 << 20).to_le_bytes());
        let err = open_bytes(&b).unwrap_err();
        assert!(matches!(&err, ZipError::CorruptDirectory(_)), "{err}");
        assert!(err.to_string().contains("past the end"), "{err}");
    }

    #[test]
    fn local_header_pointing_nowhere() {
        let bytes = write_torch("ck", 64);
        let z = open_bytes(&bytes).unwrap();
        drop(z);
        let cd = central_directory_start(&bytes);
        let mut b = bytes.clone();
        b[cd + 42..cd + 46].copy_from_slice(&5u32.to_le_bytes());
        let err = open_bytes(&b).unwrap_err();
        assert!(err.to_string().contains("local header"), "{err}");
    }

    #[test]
    fn truncated_after_open_is_reported() {
        let bytes = write_torch("ck", 64);
        let file = file_with(&bytes);
        let mut z = TorchZip::open(file.try_clone().unwrap()).unwrap();
        let info = z.record("data/1").unwrap();
        file.set_len(info.data_offset + 100).unwrap();
        let err = z.copy_record("data/1", &mut io::sink()).unwrap_err();
        assert!(
            matches!(
                err,
                ZipError::Truncated {
                    expected: 5000,
                    got: 100,
                    ..
                }
            ),
            "{err}"
        );
        let err = z.read_small("data/1", 1 << 20).unwrap_err();
        assert!(matches!(err, ZipError::Truncated { .. }), "{err}");
    }

    /// A `.pt2` written by torch 2.3: records at the root, `torch.save` archives inside.
    fn flat_fixture() -> File {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/pt2/generations/cnn-2.3.1.pt2");
        File::open(path).unwrap()
    }

    #[test]
    fn flat_archives_open_from_the_root_and_only_so() {
        let err = TorchZip::open(flat_fixture()).unwrap_err();
        assert!(matches!(err, ZipError::NoFolder(_)), "{err}");
        let zip = TorchZip::open_flat(flat_fixture()).unwrap();
        assert_eq!(zip.prefix(), "");
        assert!(zip.has("version") && zip.has("serialized_state_dict.pt"));
    }

    #[test]
    fn nested_archives_are_read_in_place_at_file_offsets() {
        let outer = TorchZip::open_flat(flat_fixture()).unwrap();
        let record = outer.record("serialized_state_dict.pt").unwrap();
        let mut nested = outer.open_nested("serialized_state_dict.pt").unwrap();
        assert_eq!(nested.prefix(), "archive");
        let pickle = nested.read_small("data.pkl", 1 << 20).unwrap();
        assert_eq!(pickle[0], 0x80);
        let inner = nested.record("data.pkl").unwrap();
        assert!(inner.data_offset > record.data_offset);
        assert!(inner.data_offset + inner.size <= record.data_offset + record.size);
        // A record that is not a zip is refused, not read past.
        let err = outer.open_nested("version").unwrap_err();
        assert!(matches!(err, ZipError::NotZip), "{err}");
    }
}
