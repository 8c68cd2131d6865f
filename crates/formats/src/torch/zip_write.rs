//! Writes zip archives byte-for-byte the way torch 2.13's `PyTorchStreamWriter` (miniz with
//! `MZ_ZIP_FLAG_WRITE_ZIP64`) does.
//!
//! Layout of every record (see `torch-formats.md` §1.3):
//!
//! * local header: version needed 0, flags `0x0808` (data descriptor + UTF-8) or `0x0800` for
//!   an empty record, method 0 (stored), time/date 0, CRC and sizes 0;
//! * extra field: a zip64 block (id 1) only when the record size or the local-header offset is
//!   `>= 0xFFFF_FFFF` (holding `[size, 0]` and/or `[offset]`, as miniz writes it before the data
//!   is known), then always the `"FB"` padding block, sized so the record data starts on a
//!   multiple of the alignment;
//! * the data, stored;
//! * a data descriptor `PK\x07\x08` + CRC + sizes after every non-empty record: 16 bytes, or 24
//!   bytes (64-bit sizes) when a zip64 block was needed;
//! * central directory entries (version made by 0, needed 0, sizes and CRC filled, zip64 extra
//!   only when needed), then always a ZIP64 end-of-central-directory record (made by 0x031E,
//!   needed 45), the ZIP64 locator, and the classic end record with values clamped to
//!   `0xFFFF`/`0xFFFF_FFFF`.
//!
//! The writer tracks its own byte offset, so `W` needs only [`Write`]. It never wraps `W`:
//! [`TorchZipWriter::add_stream`] calls [`std::io::copy`] straight into it, so when `W` is a
//! [`std::fs::File`] and the source a `Take<&File>`, Linux copies in the kernel
//! (`copy_file_range`). Small headers are assembled in a `Vec` and written with one call.
//!
//! [`TorchZipWriter::add_stream_placed`] copies a record from a known offset of another file
//! and, for records large enough to afford it, pads its FB block further so that the data
//! land at the same offset as in the source modulo 64 KiB (or 4 KiB): the copy then moves
//! whole pages (ext4's in-kernel copy costs about a third less than from a shifted offset),
//! and file systems that share blocks (XFS, btrfs: `copy_file_range` tries
//! `remap_file_range` first) can clone the record's whole blocks instead of copying them.
//! Such a record still starts on a multiple of the archive's alignment; only the padding
//! differs from what torch would write.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};

use super::copy::{self, HASH_BLOCK};

const LOCAL_HEADER_SIG: u32 = 0x0403_4b50;
const CENTRAL_HEADER_SIG: u32 = 0x0201_4b50;
const DATA_DESCRIPTOR_SIG: u32 = 0x0807_4b50;
const ZIP64_EOCD_SIG: u32 = 0x0606_4b50;
const ZIP64_LOCATOR_SIG: u32 = 0x0706_4b50;
const EOCD_SIG: u32 = 0x0605_4b50;

const LOCAL_HEADER_LEN: u64 = 30;
const CENTRAL_HEADER_LEN: usize = 46;
/// `MZ_UINT32_MAX`: sizes and offsets at or above this need zip64 fields (miniz uses `>=`).
const U32_LIMIT: u64 = 0xFFFF_FFFF;
const FLAG_DATA_DESCRIPTOR: u16 = 0x0008;
const FLAG_UTF8: u16 = 0x0800;
const ZIP64_EXTRA_ID: u16 = 0x0001;
/// The private padding block id `"FB"` (bytes `F`, `B`).
const FB_EXTRA_ID: [u8; 2] = *b"FB";
/// The largest alignment accepted; keeps the extra field's u16 length from overflowing.
pub const MAX_ALIGNMENT: u64 = 32768;
/// torch's default `storage_alignment`.
pub const DEFAULT_ALIGNMENT: u64 = 64;
/// Granules, largest first, modulo which [`TorchZipWriter::add_stream_placed`] puts a record's
/// data at its source offset: 64 KiB (the in-kernel copy moves source pages whole) and the
/// 4 KiB block size block-sharing file systems clone at.
const PLACEMENT_GRANULES: [u64; 2] = [65536, 4096];
/// A placed record spends at most `size >> PLACEMENT_OVERHEAD_SHIFT` (1/64) on padding.
const PLACEMENT_OVERHEAD_SHIFT: u32 = 6;
/// The block size a clone needs both offsets aligned to: a placed record's first bytes up to
/// this boundary are copied in their own call, so the rest starts on a block in both files.
const CLONE_BLOCK: u64 = 4096;

/// Streams a torch-style zip archive into `W`.
pub struct TorchZipWriter<W: Write> {
    out: W,
    /// Archive folder name followed by `/`.
    prefix: String,
    alignment: u64,
    /// Bytes written to `out` so far.
    offset: u64,
    central: Vec<u8>,
    count: u64,
    names: HashSet<String>,
    /// Set by `new` when the prefix or alignment is unusable; reported by every call.
    config_error: Option<String>,
    /// Set after a failed write: the archive is unusable from then on.
    failed: bool,
    /// The block [`add_pieces`](Self::add_pieces) hashes ranges through, allocated on
    /// first use.
    block: Option<Box<[u8]>>,
}

/// A record being written: its full name, size and header offset, and whether its data
/// were placed at their source offset.
struct Record {
    full: String,
    len: u64,
    header_offset: u64,
    placed: bool,
}

impl Record {
    fn short(&self, copied: u64) -> io::Error {
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "record `{}`: the source ended after {copied} of {} bytes; the archive being written is incomplete",
                self.full, self.len
            ),
        )
    }

    fn long(&self) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "record `{}`: its pieces hold more than its {} bytes; the archive being written is incomplete",
                self.full, self.len
            ),
        )
    }
}

/// One piece of a record written by [`TorchZipWriter::add_pieces`].
#[derive(Clone, Copy, Debug)]
pub enum Piece<'a> {
    /// `len` bytes at `offset` of `file`, with their CRC-32 when it is known.
    Range {
        /// The file holding the bytes.
        file: &'a File,
        /// Where they start in it.
        offset: u64,
        /// How many.
        len: u64,
        /// Their CRC-32, if known (`None` or 0: computed from the bytes).
        crc32: Option<u32>,
    },
    /// Bytes in memory.
    Bytes(&'a [u8]),
}

impl Piece<'_> {
    /// The piece's size in bytes.
    pub fn len(&self) -> u64 {
        match self {
            Piece::Range { len, .. } => *len,
            Piece::Bytes(bytes) => bytes.len() as u64,
        }
    }

    /// Whether the piece holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The pieces of one record, in order, handed out one at a time (a piece may borrow the
/// producer, for example its buffer, until the next is asked for).
pub trait Pieces {
    /// The next piece, or `None` after the last.
    fn next_piece(&mut self) -> io::Result<Option<Piece<'_>>>;
}

/// Pieces listed up front.
impl<'a> Pieces for std::vec::IntoIter<Piece<'a>> {
    fn next_piece(&mut self) -> io::Result<Option<Piece<'_>>> {
        Ok(self.next())
    }
}

impl<W: Write> TorchZipWriter<W> {
    /// Starts an archive whose records live under `prefix/` (a trailing `/` is accepted) and
    /// whose record data start at multiples of `alignment` (torch's default is 64).
    ///
    /// An empty prefix, a prefix containing `/`, or an alignment of 0 or above
    /// [`MAX_ALIGNMENT`] is reported as an `InvalidInput` error by the first
    /// `add_*`/`finish` call.
    pub fn new(out: W, prefix: &str, alignment: u64) -> Self {
        let trimmed = prefix.strip_suffix('/').unwrap_or(prefix);
        let config_error = if trimmed.is_empty() {
            Some("the archive folder name is empty".to_string())
        } else if trimmed.contains('/') {
            Some(format!(
                "the archive folder name `{trimmed}` contains `/`; torch reads the folder up to the first `/`"
            ))
        } else if alignment == 0 || alignment > MAX_ALIGNMENT {
            Some(format!(
                "storage alignment {alignment} is out of range (1..={MAX_ALIGNMENT})"
            ))
        } else {
            None
        };
        TorchZipWriter {
            out,
            prefix: format!("{trimmed}/"),
            alignment,
            offset: 0,
            central: Vec::new(),
            count: 0,
            names: HashSet::new(),
            config_error,
            failed: false,
            block: None,
        }
    }

    /// Bytes written so far (the offset at which the next record's header will start).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Adds a stored record `prefix/name` holding `data`, computing its CRC-32.
    pub fn add_bytes(&mut self, name: &str, data: &[u8]) -> io::Result<()> {
        let crc = crc32fast::hash(data);
        let len = data.len() as u64;
        let mut src = data;
        self.add_stream(name, &mut src, len, crc)
    }

    /// Adds a stored record `prefix/name` by copying exactly `len` bytes from `src` (for
    /// example a `Take<&File>` positioned at a record of another archive) straight into the
    /// output, so the kernel can copy file-to-file. `crc32` is written as given (tensor bytes
    /// are never re-hashed). Fewer than `len` bytes from `src` is an `UnexpectedEof` error,
    /// and the writer is unusable afterwards.
    pub fn add_stream(
        &mut self,
        name: &str,
        src: &mut impl Read,
        len: u64,
        crc32: u32,
    ) -> io::Result<()> {
        self.add_record(name, src, len, |_| crc32).map(|_| ())
    }

    /// [`add_stream`](Self::add_stream) for bytes that sit at `source_offset` in their source
    /// file: when `source_offset` is a multiple of the archive's alignment and the record is
    /// large enough that the padding stays within 1/64 of its size (and within the extra
    /// field's `u16` length), the record's data are placed at an offset congruent to
    /// `source_offset` modulo 64 KiB, or failing that 4 KiB, and the bytes before the first
    /// 4 KiB boundary are copied on their own, so that the kernel can copy whole pages or
    /// clone whole blocks. Otherwise this is exactly [`add_stream`](Self::add_stream).
    pub fn add_stream_placed(
        &mut self,
        name: &str,
        src: &mut impl Read,
        len: u64,
        crc32: u32,
        source_offset: u64,
    ) -> io::Result<()> {
        self.add_record_at(name, src, len, Some(source_offset), |_| crc32)
            .map(|_| ())
    }

    /// [`add_stream`](Self::add_stream) for a source whose CRC-32 is not known: it is computed
    /// from the bytes as they are copied (the local header does not hold it; the data
    /// descriptor after the bytes does), so the source is read once. Returns the CRC-32.
    pub fn add_stream_hashed(
        &mut self,
        name: &str,
        src: &mut impl Read,
        len: u64,
    ) -> io::Result<u32> {
        let mut hashing = CrcReader {
            inner: src,
            hasher: crc32fast::Hasher::new(),
        };
        self.add_record(name, &mut hashing, len, |r| r.hasher.clone().finalize())
    }

    /// Writes record `prefix/name` from exactly `len` bytes of `src`, with the CRC-32 that
    /// `crc32` gives once they are copied; returns that CRC-32.
    fn add_record<R: Read>(
        &mut self,
        name: &str,
        src: &mut R,
        len: u64,
        crc32: impl FnOnce(&R) -> u32,
    ) -> io::Result<u32> {
        self.add_record_at(name, src, len, None, crc32)
    }

    /// [`add_record`](Self::add_record), placing the data as
    /// [`add_stream_placed`](Self::add_stream_placed) says when `source_offset` is given.
    fn add_record_at<R: Read>(
        &mut self,
        name: &str,
        src: &mut R,
        len: u64,
        source_offset: Option<u64>,
        crc32: impl FnOnce(&R) -> u32,
    ) -> io::Result<u32> {
        let record = self.begin_record(name, len, source_offset)?;
        // A placed record's data start at the same offset modulo 4 KiB as its source.
        let copied = copy_blocks(src, &mut self.out, len, self.offset, record.placed)?;
        self.offset = checked_add(self.offset, copied)?;
        if copied != len {
            return Err(record.short(copied));
        }
        let crc32 = crc32(src);
        self.end_record(record, crc32)?;
        Ok(crc32)
    }

    /// Adds a stored record `prefix/name` of `len` bytes made of `pieces` in order: file
    /// ranges, copied file to file (`copy_file_range` on Linux when the output is a file;
    /// otherwise, or when the kernel refuses, through a buffer), and bytes in memory.
    /// Returns the record's CRC-32, combined from the pieces' (a range's CRC-32 given with
    /// it is used as given; one not given, or given as 0, which is what torch writes when
    /// it skips the CRC, is computed by reading the range once before it is copied).
    ///
    /// `source_offset`, when given, places the data as
    /// [`add_stream_placed`](Self::add_stream_placed) does, as if the record were one
    /// range at that offset: pass the source offset a large range would have if the record
    /// started where it does (its file offset minus its offset in the record). Every range
    /// whose file offset is congruent to its destination modulo 4 KiB is copied from its
    /// first block boundary on in its own call, so that block-sharing file systems can
    /// clone it. Pieces that add up to other than `len` bytes are an error, and the writer
    /// is unusable afterwards.
    pub fn add_pieces(
        &mut self,
        name: &str,
        len: u64,
        pieces: &mut impl Pieces,
        source_offset: Option<u64>,
    ) -> io::Result<u32> {
        let record = self.begin_record(name, len, source_offset)?;
        let mut hasher = crc32fast::Hasher::new();
        let mut copied = 0u64;
        while let Some(piece) = pieces.next_piece()? {
            let piece_len = piece.len();
            if piece_len > len - copied {
                return Err(record.long());
            }
            match piece {
                Piece::Bytes(bytes) => {
                    hasher.update(bytes);
                    self.out.write_all(bytes)?;
                }
                Piece::Range {
                    file,
                    offset,
                    len: range_len,
                    crc32,
                } => {
                    let crc = match crc32 {
                        Some(crc) if crc != 0 => crc,
                        _ => {
                            let block = self
                                .block
                                .get_or_insert_with(|| vec![0; HASH_BLOCK].into_boxed_slice());
                            copy::crc_of_range(file, offset, range_len, block)?
                        }
                    };
                    hasher.combine(&crc32fast::Hasher::new_with_initial_len(crc, range_len));
                    let congruent = offset % CLONE_BLOCK == self.offset % CLONE_BLOCK;
                    let mut source = file;
                    source.seek(SeekFrom::Start(offset))?;
                    let mut take = source.take(range_len);
                    let n =
                        copy_blocks(&mut take, &mut self.out, range_len, self.offset, congruent)?;
                    if n != range_len {
                        self.offset = checked_add(self.offset, n)?;
                        return Err(record.short(copied + n));
                    }
                }
            }
            self.offset = checked_add(self.offset, piece_len)?;
            copied += piece_len;
        }
        if copied != len {
            return Err(record.short(copied));
        }
        let crc32 = hasher.finalize();
        self.end_record(record, crc32)?;
        Ok(crc32)
    }

    /// Checks the name, writes the local header (placed when `source_offset` allows) and
    /// marks the writer failed until [`end_record`](Self::end_record).
    fn begin_record(
        &mut self,
        name: &str,
        len: u64,
        source_offset: Option<u64>,
    ) -> io::Result<Record> {
        self.check_usable()?;
        let full = self.full_name(name)?;
        let header_offset = self.offset;
        let name_len = full.len() as u64;
        let placed = source_offset.and_then(|source| {
            placed_padding(header_offset, name_len, len, self.alignment, source)
        });
        let pad =
            placed.unwrap_or_else(|| fb_padding(header_offset, name_len, len, self.alignment));
        let header = local_header(full.as_bytes(), len, header_offset, pad)?;
        self.names.insert(name.to_string());
        self.failed = true; // cleared once the record is complete
        self.write_tracked(&header)?;
        Ok(Record {
            full,
            len,
            header_offset,
            placed: placed.is_some(),
        })
    }

    /// Writes the data descriptor and the central entry of a record whose bytes are written.
    fn end_record(&mut self, record: Record, crc32: u32) -> io::Result<()> {
        let descriptor = data_descriptor(crc32, record.len, record.header_offset);
        self.write_tracked(&descriptor)?;
        central_entry(
            &mut self.central,
            record.full.as_bytes(),
            record.len,
            crc32,
            record.header_offset,
        )?;
        self.count += 1;
        self.failed = false;
        Ok(())
    }

    /// Writes the central directory and end records, flushes, and returns the output.
    pub fn finish(mut self) -> io::Result<W> {
        self.check_usable()?;
        let cd_size = self.central.len() as u64;
        let cd_offset = if self.count == 0 { 0 } else { self.offset };
        let central = std::mem::take(&mut self.central);
        self.failed = true;
        self.write_tracked(&central)?;
        let tail = end_records(self.count, cd_offset, cd_size, self.offset);
        self.write_tracked(&tail)?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn check_usable(&self) -> io::Result<()> {
        if let Some(msg) = &self.config_error {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, msg.clone()));
        }
        if self.failed {
            return Err(io::Error::other(
                "an earlier write to this archive failed; the archive is incomplete",
            ));
        }
        Ok(())
    }

    fn full_name(&self, name: &str) -> io::Result<String> {
        if name.is_empty() || name.ends_with('/') {
            return Err(invalid_input(format!(
                "record name `{name}` is empty or ends with `/` (a folder, not a record)"
            )));
        }
        if self.names.contains(name) {
            return Err(invalid_input(format!(
                "record `{name}` was already written to this archive"
            )));
        }
        let full = format!("{}{name}", self.prefix);
        if full.len() > usize::from(u16::MAX) {
            return Err(invalid_input(format!(
                "record name `{name}` is longer than a zip entry name can be"
            )));
        }
        Ok(full)
    }

    fn write_tracked(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.offset = checked_add(self.offset, bytes.len() as u64)?;
        Ok(())
    }
}

/// Copies up to `len` bytes of `src` into `out`, whose next byte lands at archive offset
/// `dest`; returns how many were copied (fewer only when `src` ends). When `split`, the bytes
/// up to `dest`'s next 4 KiB boundary go in their own call first: a source congruent to
/// `dest` modulo 4 KiB then continues on a block boundary in both files, which lets the
/// kernel clone whole blocks (XFS, btrfs) instead of copying them.
fn copy_blocks<R: Read, W: Write>(
    src: &mut R,
    out: &mut W,
    len: u64,
    dest: u64,
    split: bool,
) -> io::Result<u64> {
    let head = if split {
        ((CLONE_BLOCK - dest % CLONE_BLOCK) % CLONE_BLOCK).min(len)
    } else {
        0
    };
    let mut copied = io::copy(&mut (&mut *src).take(head), out)?;
    if copied == head {
        copied += io::copy(&mut (&mut *src).take(len - head), out)?;
    }
    Ok(copied)
}

fn invalid_input(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

fn checked_add(a: u64, b: u64) -> io::Result<u64> {
    a.checked_add(b)
        .ok_or_else(|| io::Error::other("archive offset overflows u64"))
}

/// Whether a record of `size` bytes whose local header starts at `header_offset` needs zip64
/// fields (an extra block in both headers and a 24-byte data descriptor).
fn needs_zip64(size: u64, header_offset: u64) -> bool {
    size >= U32_LIMIT || header_offset >= U32_LIMIT
}

/// Length of the zip64 extra block miniz puts in the local header (0 when none).
fn local_zip64_extra_len(size: u64, header_offset: u64) -> u64 {
    if !needs_zip64(size, header_offset) {
        return 0;
    }
    let mut len = 4;
    if size >= U32_LIMIT {
        len += 16;
    }
    if header_offset >= U32_LIMIT {
        len += 8;
    }
    len
}

/// Number of `'Z'` bytes in the FB block: torch's `detail::getPadding`. The record data then
/// starts at `cursor + 30 + name_len + zip64 extra + 4 + pad`, a multiple of `alignment`.
fn fb_padding(cursor: u64, name_len: u64, size: u64, alignment: u64) -> u64 {
    let start = cursor
        .wrapping_add(LOCAL_HEADER_LEN)
        .wrapping_add(name_len)
        .wrapping_add(4)
        .wrapping_add(local_zip64_extra_len(size, cursor));
    match start.checked_rem(alignment) {
        Some(0) | None => 0,
        Some(rem) => alignment - rem,
    }
}

/// Padding (the `'Z'` bytes of the FB block) that puts the data of a record of `size` bytes,
/// whose header starts at `cursor`, at an offset congruent to `source_offset` modulo the
/// largest of [`PLACEMENT_GRANULES`] that the size affords (padding at most 1/64 of it) and
/// the extra field's `u16` length allows. `None` when no granule fits, or when
/// `source_offset` is not a multiple of `alignment` (the data must stay aligned): the caller
/// then pads as torch does ([`fb_padding`]).
fn placed_padding(
    cursor: u64,
    name_len: u64,
    size: u64,
    alignment: u64,
    source_offset: u64,
) -> Option<u64> {
    if source_offset.checked_rem(alignment)? != 0 {
        return None;
    }
    let zip64_len = local_zip64_extra_len(size, cursor);
    let start = cursor.checked_add(LOCAL_HEADER_LEN + name_len + 4 + zip64_len)?;
    let max_pad = (u64::from(u16::MAX) - 4 - zip64_len).min(size >> PLACEMENT_OVERHEAD_SHIFT);
    PLACEMENT_GRANULES
        .into_iter()
        .filter(|granule| granule % alignment == 0)
        .map(|granule| (source_offset % granule + granule - start % granule) % granule)
        .find(|&pad| pad <= max_pad)
}

/// The zip64 extended-information block (id 1) with the given fields, in miniz's order.
fn zip64_extra(out: &mut Vec<u8>, sizes: Option<(u64, u64)>, header_offset: Option<u64>) {
    let mut len: u16 = 0;
    if sizes.is_some() {
        len += 16;
    }
    if header_offset.is_some() {
        len += 8;
    }
    put16(out, ZIP64_EXTRA_ID);
    put16(out, len);
    if let Some((uncompressed, compressed)) = sizes {
        put64(out, uncompressed);
        put64(out, compressed);
    }
    if let Some(ofs) = header_offset {
        put64(out, ofs);
    }
}

fn record_flags(size: u64) -> u16 {
    if size == 0 {
        FLAG_UTF8
    } else {
        FLAG_UTF8 | FLAG_DATA_DESCRIPTOR
    }
}

/// A reader that hashes (CRC-32) every byte it passes on.
struct CrcReader<'a, R> {
    inner: &'a mut R,
    hasher: crc32fast::Hasher,
}

impl<R: Read> Read for CrcReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

/// The complete local header (fixed part, name, zip64 extra if needed, FB block with `pad`
/// `'Z'` bytes) of a record of `size` bytes whose header starts at `header_offset`.
fn local_header(full_name: &[u8], size: u64, header_offset: u64, pad: u64) -> io::Result<Vec<u8>> {
    let name_len = u16::try_from(full_name.len())
        .map_err(|_| invalid_input("record name is too long for a zip entry".to_string()))?;
    let zip64_len = local_zip64_extra_len(size, header_offset);
    let too_much = || {
        invalid_input(format!(
            "{pad} bytes of padding do not fit a zip extra field"
        ))
    };
    let extra_len = u16::try_from(zip64_len + 4 + pad).map_err(|_| too_much())?;
    let pad16 = u16::try_from(pad).map_err(|_| too_much())?;
    let mut h = Vec::with_capacity(30 + full_name.len() + usize::from(extra_len));
    put32(&mut h, LOCAL_HEADER_SIG);
    put16(&mut h, 0); // version needed
    put16(&mut h, record_flags(size));
    put16(&mut h, 0); // method: stored
    put16(&mut h, 0); // time
    put16(&mut h, 0); // date
    put32(&mut h, 0); // crc (in the descriptor)
    put32(&mut h, 0); // compressed size
    put32(&mut h, 0); // uncompressed size
    put16(&mut h, name_len);
    put16(&mut h, extra_len);
    h.extend_from_slice(full_name);
    if zip64_len > 0 {
        // miniz writes the zip64 block before the data exists: compressed size is still 0.
        let sizes = (size >= U32_LIMIT).then_some((size, 0));
        let ofs = (header_offset >= U32_LIMIT).then_some(header_offset);
        zip64_extra(&mut h, sizes, ofs);
    }
    h.extend_from_slice(&FB_EXTRA_ID);
    put16(&mut h, pad16);
    h.resize(h.len() + usize::from(pad16), b'Z');
    Ok(h)
}

/// The data descriptor written after a record's data; empty for an empty record.
fn data_descriptor(crc32: u32, size: u64, header_offset: u64) -> Vec<u8> {
    let mut d = Vec::with_capacity(24);
    if size == 0 {
        return d;
    }
    put32(&mut d, DATA_DESCRIPTOR_SIG);
    put32(&mut d, crc32);
    if needs_zip64(size, header_offset) {
        put64(&mut d, size);
        put64(&mut d, size);
    } else {
        // Both fit: size < 0xFFFF_FFFF here.
        put32(&mut d, clamp32(size));
        put32(&mut d, clamp32(size));
    }
    d
}

/// Appends a central-directory entry for a stored record.
fn central_entry(
    cd: &mut Vec<u8>,
    full_name: &[u8],
    size: u64,
    crc32: u32,
    header_offset: u64,
) -> io::Result<()> {
    let name_len = u16::try_from(full_name.len())
        .map_err(|_| invalid_input("record name is too long for a zip entry".to_string()))?;
    let mut extra = Vec::new();
    if needs_zip64(size, header_offset) {
        let sizes = (size >= U32_LIMIT).then_some((size, size));
        let ofs = (header_offset >= U32_LIMIT).then_some(header_offset);
        zip64_extra(&mut extra, sizes, ofs);
    }
    cd.reserve(CENTRAL_HEADER_LEN + full_name.len() + extra.len());
    put32(cd, CENTRAL_HEADER_SIG);
    put16(cd, 0); // version made by
    put16(cd, 0); // version needed
    put16(cd, record_flags(size));
    put16(cd, 0); // method
    put16(cd, 0); // time
    put16(cd, 0); // date
    put32(cd, crc32);
    put32(cd, clamp32(size));
    put32(cd, clamp32(size));
    put16(cd, name_len);
    put16(cd, extra.len() as u16); // at most 28
    put16(cd, 0); // comment length
    put16(cd, 0); // disk number
    put16(cd, 0); // internal attributes
    put32(cd, 0); // external attributes
    put32(cd, clamp32(header_offset));
    cd.extend_from_slice(full_name);
    cd.extend_from_slice(&extra);
    Ok(())
}

/// ZIP64 end record, ZIP64 locator and classic end record, as miniz's
/// `mz_zip_writer_finalize_archive` writes them. `zip64_eocd_offset` is where they start.
fn end_records(count: u64, cd_offset: u64, cd_size: u64, zip64_eocd_offset: u64) -> Vec<u8> {
    let mut e = Vec::with_capacity(56 + 20 + 22);
    put32(&mut e, ZIP64_EOCD_SIG);
    put64(&mut e, 44); // size of the remaining record
    put16(&mut e, 0x031E); // version made by (miniz: "always Unix", 3.0)
    put16(&mut e, 45); // version needed
    put32(&mut e, 0); // this disk
    put32(&mut e, 0); // disk with the central directory
    put64(&mut e, count);
    put64(&mut e, count);
    put64(&mut e, cd_size);
    put64(&mut e, cd_offset);

    put32(&mut e, ZIP64_LOCATOR_SIG);
    put32(&mut e, 0); // disk with the zip64 end record
    put64(&mut e, zip64_eocd_offset);
    put32(&mut e, 1); // total disks

    put32(&mut e, EOCD_SIG);
    put16(&mut e, 0); // this disk
    put16(&mut e, 0); // disk with the central directory
    let entries = u16::try_from(count).unwrap_or(u16::MAX);
    put16(&mut e, entries);
    put16(&mut e, entries);
    put32(&mut e, clamp32(cd_size));
    put32(&mut e, clamp32(cd_offset));
    put16(&mut e, 0); // comment length
    e
}

fn clamp32(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

fn put16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_le_bytes());
}

fn put32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_le_bytes());
}

fn put64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Seek, SeekFrom};

    fn le16(b: &[u8], at: usize) -> u16 {
        u16::from_le_bytes([b[at], b[at + 1]])
    }

    fn le32(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
    }

    fn le64(b: &[u8], at: usize) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[at..at + 8]);
        u64::from_le_bytes(a)
    }

    fn sample_records() -> Vec<(&'static str, Vec<u8>)> {
        vec![
            ("data.pkl", b"\x80\x02}q\x00.".to_vec()),
            (".format_version", b"1".to_vec()),
            (".storage_alignment", b"64".to_vec()),
            ("byteorder", b"little".to_vec()),
            ("data/0", (0..120u8).collect()),
            ("data/1", (0..800u32).map(|i| (i * 7) as u8).collect()),
            ("data/2", Vec::new()),
            ("version", b"3\n".to_vec()),
            (".data/serialization_id", b"0123456789".repeat(4)),
        ]
    }

    fn build(prefix: &str, alignment: u64) -> Vec<u8> {
        let mut w = TorchZipWriter::new(Vec::new(), prefix, alignment);
        for (name, data) in sample_records() {
            w.add_bytes(name, &data).unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn torch_worked_example_padding() {
        // §1.3: `ckpt/data.pkl` at offset 0 gives start 47, pad 17, extra length 21.
        assert_eq!(fb_padding(0, 13, 310, 64), 17);
        let h = local_header(b"ckpt/data.pkl", 310, 0, 17).unwrap();
        assert_eq!(le16(&h, 28), 21);
        assert_eq!(h.len(), 64);
        assert_eq!(&h[43..45], b"FB");
        assert_eq!(le16(&h, 45), 17);
        assert!(h[47..].iter().all(|&b| b == b'Z'));
    }

    #[test]
    fn padding_zero_still_has_fb_block() {
        // start = 30 + 30 + 4 = 64: no padding, but the 4-byte FB block is present.
        let name = [b'n'; 30];
        assert_eq!(fb_padding(0, 30, 5, 64), 0);
        let h = local_header(&name, 5, 0, 0).unwrap();
        assert_eq!(h.len(), 64);
        assert_eq!(le16(&h, 28), 4);
        assert_eq!(&h[60..62], b"FB");
        assert_eq!(le16(&h, 62), 0);
    }

    #[test]
    fn zip64_padding_math() {
        let big = 0xFFFF_FFFFu64;
        // Size alone: +4 +16.
        assert_eq!(local_zip64_extra_len(big, 0), 20);
        assert_eq!(local_zip64_extra_len(big - 1, 0), 0);
        // Offset alone: +4 +8.
        assert_eq!(local_zip64_extra_len(10, big), 12);
        assert_eq!(local_zip64_extra_len(10, big - 1), 0);
        // Both.
        assert_eq!(local_zip64_extra_len(big, big + 5), 28);
        for &(cursor, size) in &[
            (0u64, big),
            (big, 1),
            (big + 12_345, big * 3),
            (0x1_0000_0040, 0),
            (big - 1, big - 1),
        ] {
            for &align in &[1u64, 64, 4096, 32768] {
                let name = b"archive/data/12345";
                let pad = fb_padding(cursor, name.len() as u64, size, align);
                let h = local_header(name, size, cursor, pad).unwrap();
                let data_start = cursor + h.len() as u64;
                assert_eq!(
                    data_start % align,
                    0,
                    "cursor {cursor} size {size} align {align}"
                );
                let extra_len = usize::from(le16(&h, 28));
                assert_eq!(h.len(), 30 + name.len() + extra_len);
                let extra = &h[30 + name.len()..];
                let z64 = local_zip64_extra_len(size, cursor) as usize;
                if z64 > 0 {
                    assert_eq!(le16(extra, 0), 1);
                    assert_eq!(usize::from(le16(extra, 2)), z64 - 4);
                    let mut at = 4;
                    if size >= big {
                        assert_eq!(le64(extra, at), size);
                        assert_eq!(le64(extra, at + 8), 0);
                        at += 16;
                    }
                    if cursor >= big {
                        assert_eq!(le64(extra, at), cursor);
                    }
                }
                assert_eq!(&extra[z64..z64 + 2], b"FB");
                assert_eq!(usize::from(le16(extra, z64 + 2)), extra_len - z64 - 4);
                // The local header carries no CRC or sizes.
                assert_eq!(&h[14..26], &[0u8; 12]);
            }
        }
    }

    #[test]
    fn descriptor_sizes() {
        let big = 0xFFFF_FFFFu64;
        assert!(data_descriptor(1, 0, 0).is_empty());
        assert!(data_descriptor(1, 0, big).is_empty());
        let d = data_descriptor(0xDEAD_BEEF, 10, 0);
        assert_eq!(d.len(), 16);
        assert_eq!(le32(&d, 0), DATA_DESCRIPTOR_SIG);
        assert_eq!(le32(&d, 4), 0xDEAD_BEEF);
        assert_eq!((le32(&d, 8), le32(&d, 12)), (10, 10));
        assert_eq!(data_descriptor(0, big - 1, big - 1).len(), 16);
        let d = data_descriptor(7, big, 0);
        assert_eq!(d.len(), 24);
        assert_eq!((le64(&d, 8), le64(&d, 16)), (big, big));
        // A large offset alone also switches to 64-bit sizes.
        let d = data_descriptor(7, 5, big);
        assert_eq!(d.len(), 24);
        assert_eq!((le64(&d, 8), le64(&d, 16)), (5, 5));
    }

    #[test]
    fn central_entry_zip64_fields() {
        let big = 0xFFFF_FFFFu64;
        let mut cd = Vec::new();
        central_entry(&mut cd, b"a/x", 3, 9, 100).unwrap();
        assert_eq!(cd.len(), 46 + 3);
        assert_eq!(le16(&cd, 8), 0x0808);
        assert_eq!(le16(&cd, 30), 0);
        assert_eq!(le32(&cd, 42), 100);

        let mut cd = Vec::new();
        central_entry(&mut cd, b"a/x", big + 1, 9, big + 7).unwrap();
        assert_eq!(le32(&cd, 20), u32::MAX);
        assert_eq!(le32(&cd, 24), u32::MAX);
        assert_eq!(le32(&cd, 42), u32::MAX);
        assert_eq!(le16(&cd, 30), 28);
        let extra = &cd[49..];
        assert_eq!((le16(extra, 0), le16(extra, 2)), (1, 24));
        assert_eq!(
            (le64(extra, 4), le64(extra, 12), le64(extra, 20)),
            (big + 1, big + 1, big + 7)
        );

        let mut cd = Vec::new();
        central_entry(&mut cd, b"a/x", 0, 0, big).unwrap();
        assert_eq!(le16(&cd, 8), 0x0800);
        assert_eq!(le16(&cd, 30), 12);
        assert_eq!(le64(&cd, 49 + 4), big);
    }

    #[test]
    fn end_records_clamp_only_overflowing_values() {
        let e = end_records(9, 0x878, 0x22c, 0xaa4);
        assert_eq!(e.len(), 98);
        assert_eq!(le32(&e, 0), ZIP64_EOCD_SIG);
        assert_eq!(le64(&e, 4), 44);
        assert_eq!((le16(&e, 12), le16(&e, 14)), (798, 45));
        assert_eq!((le64(&e, 24), le64(&e, 32)), (9, 9));
        assert_eq!((le64(&e, 40), le64(&e, 48)), (0x22c, 0x878));
        assert_eq!(le32(&e, 56), ZIP64_LOCATOR_SIG);
        assert_eq!(le64(&e, 64), 0xaa4);
        assert_eq!(le32(&e, 72), 1);
        assert_eq!(le32(&e, 76), EOCD_SIG);
        assert_eq!((le16(&e, 84), le16(&e, 86)), (9, 9));
        assert_eq!((le32(&e, 88), le32(&e, 92)), (0x22c, 0x878));

        let e = end_records(70_000, 0x1_0000_0000, 5, 0x1_0000_0005);
        assert_eq!((le16(&e, 84), le16(&e, 86)), (u16::MAX, u16::MAX));
        assert_eq!((le32(&e, 88), le32(&e, 92)), (5, u32::MAX));
        assert_eq!(le64(&e, 48), 0x1_0000_0000);
    }

    #[test]
    fn records_aligned_and_readable_by_zip_crate() {
        for &align in &[64u64, 4096] {
            let bytes = build("ck", align);
            let mut z = zip::ZipArchive::new(Cursor::new(bytes.clone())).unwrap();
            assert_eq!(z.len(), sample_records().len());
            for (i, (name, data)) in sample_records().into_iter().enumerate() {
                let mut f = z.by_index(i).unwrap();
                assert_eq!(f.name().unwrap(), format!("ck/{name}"));
                assert_eq!(f.compression(), zip::CompressionMethod::Stored);
                assert_eq!(f.crc32(), crc32fast::hash(&data));
                let start = f.data_start().unwrap();
                assert_eq!(start % align, 0, "{name} at {start}");
                let mut got = Vec::new();
                f.read_to_end(&mut got).unwrap(); // the zip crate checks the CRC here
                assert_eq!(got, data);
            }
        }
    }

    #[test]
    fn byte_layout_matches_torch() {
        let bytes = build("ckpt", 64);
        // First record: data.pkl at 0 with 17 bytes of padding, data at 64.
        assert_eq!(le32(&bytes, 0), LOCAL_HEADER_SIG);
        assert_eq!(le16(&bytes, 4), 0);
        assert_eq!(le16(&bytes, 6), 0x0808);
        assert_eq!(&bytes[8..26], &[0u8; 18]);
        assert_eq!(le16(&bytes, 28), 21);
        // Data descriptor right after data.pkl's 6 bytes.
        assert_eq!(le32(&bytes, 70), DATA_DESCRIPTOR_SIG);
        assert_eq!(le32(&bytes, 74), crc32fast::hash(b"\x80\x02}q\x00."));
        assert_eq!((le32(&bytes, 78), le32(&bytes, 82)), (6, 6));
        // The tail: zip64 EOCD (56) + locator (20) + EOCD (22).
        let n = bytes.len();
        let eocd = &bytes[n - 22..];
        assert_eq!(le32(eocd, 0), EOCD_SIG);
        let cd_size = u64::from(le32(eocd, 12));
        let cd_ofs = u64::from(le32(eocd, 16));
        assert_eq!(cd_ofs + cd_size, (n - 98) as u64);
        let loc = &bytes[n - 42..n - 22];
        assert_eq!(le64(loc, 8), (n - 98) as u64);
        // Empty record: flags 0x0800 and no descriptor.
        let mut z = zip::ZipArchive::new(Cursor::new(bytes.clone())).unwrap();
        let empty = z.by_name("ckpt/data/2").unwrap();
        let hs = empty.header_start() as usize;
        assert_eq!(le16(&bytes, hs + 6), 0x0800);
        let cs = empty.central_header_start() as usize;
        assert_eq!(le16(&bytes, cs + 8), 0x0800);
        assert_eq!(le16(&bytes, cs + 4), 0);
        assert_eq!(le16(&bytes, cs + 6), 0);
        let empty_end = empty.data_start().unwrap();
        drop(empty);
        let next = z.by_name("ckpt/version").unwrap();
        assert_eq!(next.header_start(), empty_end);
    }

    #[test]
    fn stream_copies_and_uses_given_crc() {
        let mut src = tempfile::tempfile().unwrap();
        let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        src.write_all(b"skipme").unwrap();
        src.write_all(&payload).unwrap();
        src.seek(SeekFrom::Start(6)).unwrap();
        let out = tempfile::tempfile().unwrap();
        let mut w = TorchZipWriter::new(out, "ck", 4096);
        w.add_bytes("data.pkl", b"pickle").unwrap();
        let crc = crc32fast::hash(&payload);
        let mut take = (&src).take(payload.len() as u64);
        w.add_stream("data/0", &mut take, payload.len() as u64, crc)
            .unwrap();
        w.add_stream("data/1", &mut &b"abc"[..], 3, 0).unwrap(); // CRC 0 as torch writes it
        let mut out = w.finish().unwrap();
        out.seek(SeekFrom::Start(0)).unwrap();
        let mut z = zip::ZipArchive::new(out).unwrap();
        let mut f = z.by_name("ck/data/0").unwrap();
        assert_eq!(f.data_start().unwrap() % 4096, 0);
        let mut got = Vec::new();
        f.read_to_end(&mut got).unwrap();
        assert_eq!(got, payload);
        drop(f);
        assert_eq!(z.by_name("ck/data/1").unwrap().crc32(), 0);
    }

    #[test]
    fn placement_padding_matches_the_source_offset_when_affordable() {
        // 10 MiB record, header at 1000, name 20: 64 KiB granule.
        let big = 10 << 20;
        let pad = placed_padding(1000, 20, big, 64, 3 * 65536 + 640).unwrap();
        assert_eq!((1000 + 30 + 20 + 4 + pad) % 65536, 640);
        // 1 MiB affords 16 KiB of padding: the 4 KiB granule when 64 KiB would cost more.
        let pad = placed_padding(0, 20, 1 << 20, 64, 40_000 + 64).unwrap();
        assert!(pad <= (1 << 20) >> 6, "{pad}");
        assert_eq!((30 + 20 + 4 + pad) % 4096, (40_000 + 64) % 4096);
        // Small records, unaligned sources and alignments no granule is a multiple of: none.
        assert_eq!(placed_padding(0, 20, 100_000, 64, 8192 + 1000), None);
        assert_eq!(placed_padding(0, 20, big, 64, 65536 + 3), None);
        assert_eq!(placed_padding(0, 20, big, 100, 65536 * 25), None);
        // A zip64 header leaves less room in the extra field, and the pad still fits.
        let cursor = 0x1_0000_0000;
        let name = b"archive/data/1234567";
        let pad = placed_padding(cursor, name.len() as u64, big, 64, 65536 - 64).unwrap();
        assert!(pad <= u64::from(u16::MAX) - 4 - 12);
        let h = local_header(name, big, cursor, pad).unwrap();
        assert_eq!((cursor + h.len() as u64) % 65536, 65536 - 64);
    }

    #[test]
    fn placed_records_keep_alignment_bytes_and_source_offsets() {
        let mut src = tempfile::tempfile().unwrap();
        let payload: Vec<u8> = (0..(5u32 << 20)).map(|i| (i % 251) as u8).collect();
        let source_offset = 3 * 4096 + 192;
        src.write_all(&vec![0u8; source_offset as usize]).unwrap();
        src.write_all(&payload).unwrap();
        let out = tempfile::tempfile().unwrap();
        let mut w = TorchZipWriter::new(out, "ck", 64);
        w.add_bytes("data.pkl", b"pickle").unwrap();
        src.seek(SeekFrom::Start(source_offset)).unwrap();
        let crc = crc32fast::hash(&payload);
        let mut take = (&src).take(payload.len() as u64);
        w.add_stream_placed(
            "data/0",
            &mut take,
            payload.len() as u64,
            crc,
            source_offset,
        )
        .unwrap();
        // Too small to be worth padding: laid out as torch would.
        w.add_stream_placed("data/1", &mut &b"abcdef"[..], 6, 7, 4096 + 64)
            .unwrap();
        let mut out = w.finish().unwrap();
        out.seek(SeekFrom::Start(0)).unwrap();
        let mut z = zip::ZipArchive::new(out).unwrap();
        let mut f = z.by_name("ck/data/0").unwrap();
        let start = f.data_start().unwrap();
        assert_eq!(start % 65536, source_offset % 65536);
        assert_eq!(start % 64, 0);
        let mut got = Vec::new();
        f.read_to_end(&mut got).unwrap(); // the zip crate checks the CRC here
        assert_eq!(got, payload);
        drop(f);
        let f = z.by_name_raw(b"ck/data/1").unwrap();
        let header = f.header_start();
        let start = f.data_start().unwrap();
        assert!(start - header < 30 + 9 + 4 + 64, "{header} {start}");
    }

    /// A record from file ranges (CRC-32 given, not given, given as 0, in two files, one of
    /// them unaligned) and bytes in memory: the bytes in order, the combined CRC-32 (the zip
    /// crate checks it on reading), data aligned, and placed when the hint allows.
    #[test]
    fn pieces_make_one_record_with_the_combined_crc() {
        let mut a = tempfile::tempfile().unwrap();
        let mut b = tempfile::tempfile().unwrap();
        let a_bytes: Vec<u8> = (0..(3u32 << 20)).map(|i| (i % 251) as u8).collect();
        let b_bytes: Vec<u8> = (0..(2u32 << 20)).map(|i| (i % 241) as u8).collect();
        a.write_all(&a_bytes).unwrap();
        b.write_all(&b_bytes).unwrap();
        let memory = b"in memory".repeat(1000);
        let range = |file, offset: usize, len: usize, crc32| Piece::Range {
            file,
            offset: offset as u64,
            len: len as u64,
            crc32,
        };
        let crc_a = crc32fast::hash(&a_bytes[65536..(65536 + (2 << 20))]);
        let pieces = vec![
            range(&a, 65536, 2 << 20, Some(crc_a)),
            Piece::Bytes(&memory),
            range(&b, 1000, 1 << 20, None),
            range(&a, 7, 100_001, Some(0)),
            Piece::Bytes(&[]),
            range(&b, 0, 3, None),
        ];
        let mut expected = a_bytes[65536..(65536 + (2 << 20))].to_vec();
        expected.extend_from_slice(&memory);
        expected.extend_from_slice(&b_bytes[1000..1000 + (1 << 20)]);
        expected.extend_from_slice(&a_bytes[7..100_008]);
        expected.extend_from_slice(&b_bytes[..3]);
        let len = pieces.iter().map(Piece::len).sum::<u64>();
        assert_eq!(len, expected.len() as u64);

        let out = tempfile::tempfile().unwrap();
        let mut w = TorchZipWriter::new(&out, "ck", 64);
        w.add_bytes("data.pkl", b"pickle").unwrap();
        // Placed as if the record started where its first range does in `a`.
        let crc = w
            .add_pieces("data/0", len, &mut pieces.into_iter(), Some(65536))
            .unwrap();
        assert_eq!(crc, crc32fast::hash(&expected));
        // Unplaceable hint (not a multiple of the alignment): laid out as torch would.
        let small = vec![Piece::Bytes(b"abc"), range(&a, 0, 5, None)];
        w.add_pieces("data/1", 8, &mut small.into_iter(), Some(3))
            .unwrap();
        w.add_pieces("data/2", 0, &mut Vec::new().into_iter(), None)
            .unwrap();
        w.finish().unwrap();

        let mut file = &out;
        file.seek(SeekFrom::Start(0)).unwrap();
        let mut z = zip::ZipArchive::new(file).unwrap();
        let mut f = z.by_name("ck/data/0").unwrap();
        let start = f.data_start().unwrap();
        // 64 KiB of padding is more than 1/64 of the record: placed modulo 4 KiB.
        assert_eq!(start % 4096, 0, "placed at its first range's offset");
        assert_eq!(f.crc32(), crc32fast::hash(&expected));
        let mut got = Vec::new();
        f.read_to_end(&mut got).unwrap(); // the zip crate checks the CRC here
        assert_eq!(got, expected);
        drop(f);
        let mut f = z.by_name("ck/data/1").unwrap();
        assert_eq!(f.data_start().unwrap() % 64, 0);
        let mut got = Vec::new();
        f.read_to_end(&mut got).unwrap();
        assert_eq!(got, [b"abc".as_slice(), &a_bytes[..5]].concat());
        drop(f);
        assert_eq!(z.by_name("ck/data/2").unwrap().size(), 0);
    }

    /// Pieces that do not add up to the record's size, or a range past its file's end, are
    /// errors that leave the writer unusable.
    #[test]
    fn pieces_of_the_wrong_size_are_errors() {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&[1u8; 100]).unwrap();
        let range = |offset, len| Piece::Range {
            file: &file,
            offset,
            len,
            crc32: Some(5),
        };
        for (pieces, len, kind) in [
            (vec![range(0, 10)], 11, io::ErrorKind::UnexpectedEof),
            (
                vec![range(0, 10), range(0, 2)],
                11,
                io::ErrorKind::InvalidData,
            ),
            (vec![Piece::Bytes(b"abc")], 2, io::ErrorKind::InvalidData),
            (vec![range(90, 20)], 20, io::ErrorKind::UnexpectedEof),
        ] {
            let mut w = TorchZipWriter::new(Vec::new(), "ck", 64);
            let err = w
                .add_pieces("data/0", len, &mut pieces.into_iter(), None)
                .unwrap_err();
            assert_eq!(err.kind(), kind);
            assert!(w.add_bytes("data/1", b"x").is_err());
            assert!(w.finish().is_err());
        }
    }

    #[test]
    fn short_source_is_an_error_and_poisons() {
        let mut w = TorchZipWriter::new(Vec::new(), "ck", 64);
        let err = w.add_stream("data/0", &mut &b"abc"[..], 10, 0).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert!(w.add_bytes("data/1", b"x").is_err());
        assert!(w.finish().is_err());
    }

    #[test]
    fn bad_configuration_and_names() {
        for (prefix, align) in [("", 64), ("a/b", 64), ("ck", 0), ("ck", 65536)] {
            let mut w = TorchZipWriter::new(Vec::new(), prefix, align);
            let err = w.add_bytes("x", b"1").unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        }
        let mut w = TorchZipWriter::new(Vec::new(), "ck/", 64);
        w.add_bytes("x", b"1").unwrap();
        assert!(w.add_bytes("x", b"2").is_err());
        assert!(w.add_bytes("", b"2").is_err());
        assert!(w.add_bytes("data/", b"").is_err());
        assert!(w.add_bytes(&"n".repeat(70_000), b"2").is_err());
        w.add_bytes("y", b"2").unwrap();
        let bytes = w.finish().unwrap();
        let z = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
        let names: Vec<_> = z.file_names().map(|n| n.unwrap().into_owned()).collect();
        assert_eq!(names, ["ck/x", "ck/y"]);
    }

    #[test]
    fn empty_archive_matches_miniz() {
        let bytes = TorchZipWriter::new(Vec::new(), "ck", 64).finish().unwrap();
        assert_eq!(bytes.len(), 98);
        assert_eq!(le64(&bytes, 48), 0); // central directory offset 0, as miniz writes
        assert!(zip::ZipArchive::new(Cursor::new(bytes)).unwrap().is_empty());
    }

    #[test]
    fn alignment_one_and_odd_values() {
        for align in [1u64, 3, 100, 32768] {
            let bytes = build("x", align);
            let mut z = zip::ZipArchive::new(Cursor::new(bytes)).unwrap();
            for i in 0..z.len() {
                let f = z.by_index_raw(i).unwrap();
                assert_eq!(f.data_start().unwrap() % align, 0);
            }
        }
    }
}
