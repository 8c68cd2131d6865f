//! The central directory of a zip, found the way torch's zip reader (miniz, through
//! `PyTorchStreamReader`) finds it, and accepted only in the layouts zip writers produce.
//!
//! miniz takes the last end-record signature with 22 bytes after it (the comment length is
//! not looked at), switches to a zip64 end record whenever a locator sits just before the end
//! record and points at one (whatever the classic record says), reads the directory at the
//! declared offset without looking at what follows it, and takes an entry's 64-bit sizes from
//! its first zip64 extra field; names are looked up ignoring ASCII case. Other readers differ
//! on every one of these points, so a file built on them shows one reader one set of records
//! and torch another. [`read_directory`] therefore
//!
//! * fails with [`ZipError::CorruptDirectory`] (or [`ZipError::LimitExceeded`]) where miniz
//!   fails too, so torch cannot open the file either;
//! * fails with [`ZipError::Ambiguous`] unless the layout is the one writers produce: the end
//!   record at the very end (its comment, normally empty, exactly the bytes after it), a zip64
//!   end record and locator immediately before it when present and agreeing with it, the
//!   central directory immediately before those and exactly filling its declared size, every
//!   entry on disk 0 with well-formed extra fields holding at most one zip64 field of exactly
//!   the values its header defers to it, stored entries whose two sizes agree, directory
//!   entries without data, and no two names equal ignoring ASCII case;
//! * otherwise returns the entries as miniz sees them, in central-directory order.
//!
//! Every count and size is checked against [`MAX_ENTRIES`], [`MAX_CENTRAL_DIRECTORY`] and the
//! file length before anything sized by it is allocated.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};

use super::zip_read::ZipError;

/// The most entries a zip central directory may declare. torch checkpoints hold one record
/// per storage plus a handful; a million covers any real model.
pub const MAX_ENTRIES: u64 = 1_000_000;
/// The largest central directory read (about 4,000 bytes per entry at [`MAX_ENTRIES`] would be
/// absurd; real ones are ~100 bytes per entry).
pub const MAX_CENTRAL_DIRECTORY: u64 = 256 << 20;

const EOCD_SIG: [u8; 4] = *b"PK\x05\x06";
const ZIP64_EOCD_SIG: [u8; 4] = *b"PK\x06\x06";
const ZIP64_LOCATOR_SIG: [u8; 4] = *b"PK\x06\x07";
const CENTRAL_SIG: [u8; 4] = *b"PK\x01\x02";
const EOCD_LEN: u64 = 22;
const ZIP64_EOCD_LEN: u64 = 56;
const ZIP64_LOCATOR_LEN: u64 = 20;
const CENTRAL_LEN: usize = 46;
const LOCAL_LEN: u64 = 30;
/// miniz searches for the end record in the last 69,584 bytes at most: 4 KiB blocks
/// (overlapping by 3 bytes) from the end until one starts 64 KiB + 22 bytes from it.
const EOCD_SEARCH: u64 = 4096 + 16 * 4093;
/// The zip64 extended-information extra field.
const ZIP64_EXTRA_ID: u16 = 0x0001;
/// The MS-DOS directory attribute, which miniz also takes to mean "directory".
const DOS_DIRECTORY: u32 = 0x10;
/// General-purpose flag: the central directory is encrypted (miniz refuses the archive).
const FLAG_MASKED_DIRECTORY: u16 = 0x2000;

/// One central-directory entry, with its 64-bit values resolved as miniz resolves them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CentralEntry {
    /// The raw name bytes (no NUL among them).
    pub name: Vec<u8>,
    /// General-purpose flags (bit 0: encrypted).
    pub flags: u16,
    /// Compression method (0 stored, 8 deflated).
    pub method: u16,
    /// CRC-32 as recorded (never verified: torch does not).
    pub crc32: u32,
    /// Compressed size (equal to `size` for stored entries).
    pub compressed_size: u64,
    /// Uncompressed size.
    pub size: u64,
    /// Absolute offset of the local header, before the central directory.
    pub header_offset: u64,
    /// A directory entry (name ending in `/`): it holds no data.
    pub is_dir: bool,
}

/// The canonical central directory of a zip.
#[derive(Clone, Debug)]
pub struct Directory {
    /// Every entry, in central-directory order (the order torch's index follows). Every
    /// local header lies before the central directory.
    pub entries: Vec<CentralEntry>,
}

impl Directory {
    /// The archive folder as torch takes it: the first entry's name up to its first `/`
    /// (`None` when the first name has no `/`, which torch refuses).
    pub fn prefix(&self) -> Option<&[u8]> {
        let first = &self.entries.first()?.name;
        let slash = first.iter().position(|&b| b == b'/')?;
        Some(&first[..slash])
    }

    /// Whether `torch.load` hands this archive to `torch.jit.load`: exactly when
    /// `constants.pkl` is among the archive's records, i.e. an entry is named
    /// `<folder>/constants.pkl`, byte for byte (torch compares the listed names as strings).
    pub fn is_torchscript(&self) -> bool {
        let Some(prefix) = self.prefix() else {
            return false;
        };
        self.entries.iter().any(|e| {
            e.name.len() == prefix.len() + 1 + CONSTANTS.len()
                && e.name.starts_with(prefix)
                && e.name[prefix.len()] == b'/'
                && e.name.ends_with(CONSTANTS)
        })
    }
}

const CONSTANTS: &[u8] = b"constants.pkl";

/// Reads the central directory of the zip in `r` (`len` bytes), as described in the module
/// docs: torch's view of it, or an error saying why torch cannot read it or why another
/// reader could read it differently.
pub fn read_directory<R: Read + Seek + ?Sized>(r: &mut R, len: u64) -> Result<Directory, ZipError> {
    let end = locate_end(r, len)?;
    let declared = declared_directory(len, &end)?;
    let bytes = read_exact_at(r, declared.offset, declared.size)?;
    let (raw, used) = parse_entries(&bytes, &declared, len)?;
    canonical_end(&end, &declared, len)?;
    if used != declared.size {
        return Err(ambiguous(format!(
            "the central directory's {} entries fill {used} of its {} declared bytes",
            declared.entries, declared.size
        )));
    }
    let entries = canonical_entries(raw, declared.offset)?;
    Ok(Directory { entries })
}

/// The end records as miniz finds them.
struct End {
    /// Offset of the classic end record miniz uses.
    at: u64,
    /// Its 22 bytes.
    record: [u8; EOCD_LEN as usize],
    /// The bytes from `at` to the end of the file.
    after: Vec<u8>,
    /// An earlier end-record signature in the searched tail whose comment length reaches
    /// exactly the end of the file: the record a reader honouring comments would take.
    earlier_complete: Option<u64>,
    /// The locator just before the end record, if its signature is there.
    locator: Option<[u8; ZIP64_LOCATOR_LEN as usize]>,
    /// The zip64 end record the locator points at, when miniz uses it.
    zip64: Option<(u64, [u8; ZIP64_EOCD_LEN as usize])>,
}

fn corrupt(why: String) -> ZipError {
    ZipError::CorruptDirectory(why)
}

fn ambiguous(why: String) -> ZipError {
    ZipError::Ambiguous(why)
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

/// Reads `n` bytes at `at`, which the caller has checked lie inside the file and are bounded.
fn read_exact_at<R: Read + Seek + ?Sized>(r: &mut R, at: u64, n: u64) -> Result<Vec<u8>, ZipError> {
    let n = usize::try_from(n).map_err(|_| corrupt(format!("{n} bytes do not fit in memory")))?;
    let mut buf = vec![0u8; n];
    r.seek(SeekFrom::Start(at))?;
    r.read_exact(&mut buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            corrupt(format!("the file ends inside the {n} bytes at offset {at}"))
        }
        _ => ZipError::Io(e),
    })?;
    Ok(buf)
}

/// miniz's `mz_zip_reader_locate_header_sig` and the zip64 look-up that follows it.
fn locate_end<R: Read + Seek + ?Sized>(r: &mut R, len: u64) -> Result<End, ZipError> {
    if len < EOCD_LEN {
        return Err(corrupt(format!(
            "a {len}-byte file is too short to hold an end-of-central-directory record"
        )));
    }
    let start = len.saturating_sub(EOCD_SEARCH);
    let tail = read_exact_at(r, start, len - start)?;
    let last = tail.len() - EOCD_LEN as usize;
    let Some(pos) = (0..=last).rev().find(|&i| tail[i..].starts_with(&EOCD_SIG)) else {
        return Err(corrupt(
            "no end-of-central-directory record in the last 64 KiB".to_string(),
        ));
    };
    let at = start + pos as u64;
    let mut record = [0u8; EOCD_LEN as usize];
    record.copy_from_slice(&tail[pos..pos + EOCD_LEN as usize]);
    let after = tail[pos..].to_vec();
    let earlier_complete = (0..pos)
        .filter(|&i| tail[i..].starts_with(&EOCD_SIG))
        .find(|&i| usize::from(u16_at(&tail, i + 20)) == tail.len() - i - EOCD_LEN as usize)
        .map(|i| start + i as u64);
    let mut locator = None;
    let mut zip64 = None;
    if at >= ZIP64_LOCATOR_LEN + ZIP64_EOCD_LEN {
        let mut loc = [0u8; ZIP64_LOCATOR_LEN as usize];
        loc.copy_from_slice(&read_exact_at(
            r,
            at - ZIP64_LOCATOR_LEN,
            ZIP64_LOCATOR_LEN,
        )?);
        if loc[..4] == ZIP64_LOCATOR_SIG {
            locator = Some(loc);
            let record_at = u64_at(&loc, 8);
            if record_at > len - ZIP64_EOCD_LEN {
                return Err(corrupt(format!(
                    "the zip64 end record offset {record_at} is outside the {len}-byte file"
                )));
            }
            let mut z = [0u8; ZIP64_EOCD_LEN as usize];
            z.copy_from_slice(&read_exact_at(r, record_at, ZIP64_EOCD_LEN)?);
            if z[..4] == ZIP64_EOCD_SIG {
                zip64 = Some((record_at, z));
            }
        }
    } else if at >= ZIP64_LOCATOR_LEN {
        let loc = read_exact_at(r, at - ZIP64_LOCATOR_LEN, 4)?;
        if loc == ZIP64_LOCATOR_SIG {
            return Err(ambiguous(
                "a zip64 locator precedes an end record too close to the start of the file for torch's reader to use it".to_string(),
            ));
        }
    }
    Ok(End {
        at,
        record,
        after,
        earlier_complete,
        locator,
        zip64,
    })
}

/// What the end records declare, as miniz combines them.
struct Declared {
    entries: u64,
    size: u64,
    offset: u64,
    /// The disk number miniz compares entries' disk numbers with.
    this_disk: u64,
}

/// miniz's checks of the end records (`mz_zip_reader_read_central_dir`), preceded by our
/// limits: a failure here means torch cannot open the file either.
fn declared_directory(len: u64, end: &End) -> Result<Declared, ZipError> {
    let e = &end.record;
    let mut entries = u64::from(u16_at(e, 10));
    let mut on_disk = u64::from(u16_at(e, 8));
    let mut this_disk = u64::from(u16_at(e, 4));
    let mut directory_disk = u64::from(u16_at(e, 6));
    let mut size = u64::from(u32_at(e, 12));
    let mut offset = u64::from(u32_at(e, 16));
    if let (Some((_, z)), Some(loc)) = (&end.zip64, &end.locator) {
        if u64_at(z, 4) < ZIP64_EOCD_LEN - 12 {
            return Err(corrupt(format!(
                "the zip64 end record declares a size of {} bytes",
                u64_at(z, 4)
            )));
        }
        if u32_at(loc, 16) != 1 {
            return Err(corrupt(format!(
                "the zip64 locator declares {} disks (multi-disk archives are not read)",
                u32_at(loc, 16)
            )));
        }
        entries = u64_at(z, 32);
        on_disk = u64_at(z, 24);
        if entries > u64::from(u32::MAX) || on_disk > u64::from(u32::MAX) {
            return Err(over("entries", entries.max(on_disk), MAX_ENTRIES));
        }
        size = u64_at(z, 40);
        if size > u64::from(u32::MAX) {
            return Err(over(
                "bytes of central directory",
                size,
                MAX_CENTRAL_DIRECTORY,
            ));
        }
        this_disk = u64::from(u32_at(z, 16));
        directory_disk = u64::from(u32_at(z, 20));
        offset = u64_at(z, 48);
    }
    if entries > MAX_ENTRIES {
        return Err(over("entries", entries, MAX_ENTRIES));
    }
    if size > MAX_CENTRAL_DIRECTORY {
        return Err(over(
            "bytes of central directory",
            size,
            MAX_CENTRAL_DIRECTORY,
        ));
    }
    if entries != on_disk
        || ((this_disk | directory_disk) != 0 && (this_disk, directory_disk) != (1, 1))
    {
        return Err(corrupt(
            "the end record describes a multi-disk archive".to_string(),
        ));
    }
    if size > len || entries * CENTRAL_LEN as u64 > size {
        return Err(corrupt(format!(
            "the end record declares {entries} entries in a {size}-byte central directory of a {len}-byte file"
        )));
    }
    if offset.checked_add(size).is_none_or(|end| end > len) {
        return Err(corrupt(format!(
            "the central directory at offset {offset} ({size} bytes) runs past the end of the {len}-byte file"
        )));
    }
    if entries == 0 {
        return Err(ZipError::Empty);
    }
    Ok(Declared {
        entries,
        size,
        offset,
        this_disk,
    })
}

fn over(what: &'static str, value: u64, limit: u64) -> ZipError {
    ZipError::LimitExceeded { what, value, limit }
}

/// The layout checks of the end records, once miniz has accepted them.
fn canonical_end(end: &End, declared: &Declared, len: u64) -> Result<(), ZipError> {
    let comment = u64::from(u16_at(&end.record, 20));
    let following = len - end.at - EOCD_LEN;
    if comment != following {
        return Err(ambiguous(format!(
            "the end-of-central-directory record declares a {comment}-byte comment but {following} bytes follow it"
        )));
    }
    if end.after[1..].windows(4).any(|w| w == EOCD_SIG) {
        return Err(ambiguous(
            "a second end-of-central-directory signature follows the end record".to_string(),
        ));
    }
    if let Some(other) = end.earlier_complete {
        return Err(ambiguous(format!(
            "another end-of-central-directory record at offset {other} has a comment reaching the end of the file, and readers differ on which record counts"
        )));
    }
    let e = &end.record;
    if u16_at(e, 4) != 0 || u16_at(e, 6) != 0 {
        return Err(ambiguous(
            "the end record names disks other than 0".to_string(),
        ));
    }
    let directory_end = match (&end.zip64, &end.locator) {
        (Some((record_at, z)), Some(loc)) => {
            let expected = end.at - ZIP64_LOCATOR_LEN - ZIP64_EOCD_LEN;
            if *record_at != expected {
                return Err(ambiguous(format!(
                    "the zip64 end record is at offset {record_at}, not immediately before its locator (offset {expected})"
                )));
            }
            if u64_at(z, 4) != ZIP64_EOCD_LEN - 12 {
                return Err(ambiguous(format!(
                    "the zip64 end record declares a size of {} bytes, not 44",
                    u64_at(z, 4)
                )));
            }
            if u32_at(z, 16) != 0 || u32_at(z, 20) != 0 || u32_at(loc, 4) != 0 {
                return Err(ambiguous(
                    "the zip64 records name disks other than 0".to_string(),
                ));
            }
            let classic = [
                ("entry count", u64::from(u16_at(e, 8)), 0xFFFF, declared.entries),
                ("entry count", u64::from(u16_at(e, 10)), 0xFFFF, declared.entries),
                ("directory size", u64::from(u32_at(e, 12)), 0xFFFF_FFFF, declared.size),
                ("directory offset", u64::from(u32_at(e, 16)), 0xFFFF_FFFF, declared.offset),
            ];
            for (what, value, marker, wide) in classic {
                if value != wide && value != marker {
                    return Err(ambiguous(format!(
                        "the end record's {what} ({value}) disagrees with the zip64 end record's ({wide}), and torch's reader uses the zip64 one"
                    )));
                }
            }
            *record_at
        }
        (None, Some(_)) => {
            return Err(ambiguous(
                "a zip64 locator precedes the end record but points at no zip64 end record, so torch's reader uses the end record alone".to_string(),
            ))
        }
        _ => {
            let markers = u16_at(e, 8) == 0xFFFF
                || u16_at(e, 10) == 0xFFFF
                || u32_at(e, 12) == 0xFFFF_FFFF
                || u32_at(e, 16) == 0xFFFF_FFFF;
            if markers {
                return Err(ambiguous(
                    "the end record defers a value to a zip64 end record that is not there"
                        .to_string(),
                ));
            }
            end.at
        }
    };
    let declared_end = declared.offset + declared.size;
    if declared_end != directory_end {
        return Err(ambiguous(format!(
            "the central directory ends at offset {declared_end}, not where the end records begin (offset {directory_end})"
        )));
    }
    Ok(())
}

/// An entry as parsed, before the layout checks.
struct RawEntry {
    entry: CentralEntry,
    disk: u16,
    external_attributes: u32,
    /// Why its extra fields are not canonical, if they are not.
    extra_problem: Option<String>,
}

/// miniz's walk over the central directory: its failures are torch's. Returns the entries
/// and how many bytes of the directory they fill.
fn parse_entries(
    bytes: &[u8],
    declared: &Declared,
    len: u64,
) -> Result<(Vec<RawEntry>, u64), ZipError> {
    // `entries * 46 <= size`, and `size` bytes are in memory.
    let mut raw = Vec::with_capacity(declared.entries as usize);
    let mut p = 0usize;
    for index in 0..declared.entries {
        let rest = &bytes[p..];
        if rest.len() < CENTRAL_LEN || rest[..4] != CENTRAL_SIG {
            return Err(corrupt(format!(
                "central-directory entry {index} is not where the directory places it"
            )));
        }
        let name_len = usize::from(u16_at(rest, 28));
        let extra_len = usize::from(u16_at(rest, 30));
        let comment_len = usize::from(u16_at(rest, 32));
        let total = CENTRAL_LEN + name_len + extra_len + comment_len;
        if total > rest.len() {
            return Err(corrupt(format!(
                "central-directory entry {index} runs past the end of the directory"
            )));
        }
        let name = rest[CENTRAL_LEN..CENTRAL_LEN + name_len].to_vec();
        let extra = &rest[CENTRAL_LEN + name_len..CENTRAL_LEN + name_len + extra_len];
        let flags = u16_at(rest, 8);
        let method = u16_at(rest, 10);
        let method_and_time = u32_at(rest, 10);
        let mut compressed_size = u64::from(u32_at(rest, 20));
        let mut size = u64::from(u32_at(rest, 24));
        let mut header_offset = u64::from(u32_at(rest, 42));
        let max = u64::from(u32::MAX);
        let deferred = [size == max, compressed_size == max, header_offset == max];
        let extra_problem = extra_problem(extra, deferred);
        if deferred.iter().any(|&d| d) && !extra.is_empty() {
            let values = miniz_zip64_values(extra).ok_or_else(|| {
                corrupt(format!(
                    "central-directory entry {index} has a malformed extra field"
                ))
            })?;
            let mut values = values.into_iter();
            for (slot, wanted) in [&mut size, &mut compressed_size, &mut header_offset]
                .into_iter()
                .zip(deferred)
            {
                if wanted {
                    if let Some(v) = values.next() {
                        *slot = v;
                    }
                }
            }
        }
        if compressed_size != max && size != max {
            let stored_mismatch = method_and_time == 0 && size != compressed_size;
            if stored_mismatch || (size != 0 && compressed_size == 0) {
                return Err(corrupt(format!(
                    "central-directory entry {index} declares {size} bytes compressed to {compressed_size}"
                )));
            }
        }
        let disk = u16_at(rest, 34);
        if disk == u16::MAX || (u64::from(disk) != declared.this_disk && disk != 1) {
            return Err(corrupt(format!(
                "central-directory entry {index} is on disk {disk}"
            )));
        }
        if compressed_size != max
            && header_offset
                .checked_add(LOCAL_LEN)
                .and_then(|n| n.checked_add(compressed_size))
                .is_none_or(|end| end > len)
        {
            return Err(corrupt(format!(
                "central-directory entry {index} places {compressed_size} bytes at offset {header_offset}, past the end of the {len}-byte file"
            )));
        }
        if flags & FLAG_MASKED_DIRECTORY != 0 {
            return Err(corrupt("the central directory is encrypted".to_string()));
        }
        let is_dir = name.last() == Some(&b'/');
        raw.push(RawEntry {
            entry: CentralEntry {
                name,
                flags,
                method,
                crc32: u32_at(rest, 16),
                compressed_size,
                size,
                header_offset,
                is_dir,
            },
            disk,
            external_attributes: u32_at(rest, 38),
            extra_problem,
        });
        p += total;
    }
    Ok((raw, p as u64))
}

/// The 64-bit values miniz's directory walk reads for an entry that defers one to a zip64
/// field: after the first zip64 field's header, up to three 8-byte values from the rest of
/// the extra data. `None` where miniz fails (a field that overruns the extra data).
fn miniz_zip64_values(extra: &[u8]) -> Option<Vec<u64>> {
    let mut rest = extra;
    while !rest.is_empty() {
        if rest.len() < 4 {
            return None;
        }
        let id = u16_at(rest, 0);
        let size = usize::from(u16_at(rest, 2));
        if size + 4 > rest.len() {
            return None;
        }
        if id == ZIP64_EXTRA_ID {
            break;
        }
        rest = &rest[4 + size..];
    }
    let values = rest.get(4..).unwrap_or(&[]);
    Some(
        values
            .chunks_exact(8)
            .take(3)
            .map(|c| u64_at(c, 0))
            .collect(),
    )
}

/// Why an entry's extra fields are not laid out as writers lay them out, if they are not:
/// fields must exactly fill the extra data, and at most one may be a zip64 field, holding
/// exactly the values the header defers to it (`deferred`: size, compressed size and header
/// offset, each deferred when `0xFFFFFFFF`).
fn extra_problem(extra: &[u8], deferred: [bool; 3]) -> Option<String> {
    let mut rest = extra;
    let mut zip64 = Vec::new();
    while !rest.is_empty() {
        let size = match rest {
            [_, _, a, b, ..] => usize::from(u16::from_le_bytes([*a, *b])),
            _ => return Some("its extra fields are malformed".into()),
        };
        if rest.len() < 4 + size {
            return Some("its extra fields are malformed".into());
        }
        if u16_at(rest, 0) == ZIP64_EXTRA_ID {
            zip64.push(size);
        }
        rest = &rest[4 + size..];
    }
    let wanted = deferred.iter().filter(|&&d| d).count();
    match zip64.as_slice() {
        [] if wanted == 0 => None,
        [] => Some("a size or offset of 0xFFFFFFFF has no zip64 extra field".into()),
        [size] if *size == 8 * wanted => None,
        [size] => Some(format!(
            "its zip64 extra field holds {size} bytes where its header defers {wanted} values to it"
        )),
        _ => Some(format!(
            "it has {} zip64 extra fields, and readers differ on which one counts",
            zip64.len()
        )),
    }
}

/// The layout checks of the entries, once miniz has accepted them.
fn canonical_entries(
    raw: Vec<RawEntry>,
    directory_offset: u64,
) -> Result<Vec<CentralEntry>, ZipError> {
    let mut seen: HashMap<Vec<u8>, usize> = HashMap::with_capacity(raw.len());
    let mut entries = Vec::with_capacity(raw.len());
    for item in raw {
        let e = &item.entry;
        let name = String::from_utf8_lossy(&e.name).into_owned();
        let refuse = |why: String| ambiguous(format!("entry `{name}`: {why}"));
        if let Some(why) = item.extra_problem {
            return Err(refuse(why));
        }
        if item.disk != 0 {
            return Err(refuse(format!("it is on disk {}", item.disk)));
        }
        if e.name.contains(&0) {
            return Err(refuse(
                "its name holds a NUL byte, where torch's record list cuts it".into(),
            ));
        }
        if e.method == 0 && e.size != e.compressed_size {
            return Err(refuse(format!(
                "it is stored with size {} but compressed size {}",
                e.size, e.compressed_size
            )));
        }
        let dos_dir = item.external_attributes & DOS_DIRECTORY != 0;
        if (e.is_dir || dos_dir) && (e.size != 0 || e.compressed_size != 0) {
            return Err(refuse(format!(
                "torch's reader takes it for a directory and reads none of its {} bytes",
                e.size
            )));
        }
        if dos_dir && !e.is_dir {
            return Err(refuse(
                "it carries the directory attribute but its name does not end in `/`".into(),
            ));
        }
        if e.header_offset.saturating_add(LOCAL_LEN) > directory_offset {
            return Err(refuse(format!(
                "its local header at offset {} is not before the central directory (offset {directory_offset})",
                e.header_offset
            )));
        }
        let folded = e.name.to_ascii_lowercase();
        if let Some(&other) = seen.get(&folded) {
            let first: &CentralEntry = &entries[other];
            let first = String::from_utf8_lossy(&first.name).into_owned();
            return Err(if first == name {
                refuse("the name appears twice".into())
            } else {
                refuse(format!(
                    "it and `{first}` differ only in letter case, and torch's reader finds names ignoring case"
                ))
            });
        }
        seen.insert(folded, entries.len());
        entries.push(item.entry);
    }
    Ok(entries)
}

#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod testing;

#[cfg(test)]
mod tests {
    use super::testing::{directory, plain, BENIGN};
    use super::*;
    use crate::torch::zip_write::TorchZipWriter;

    #[test]
    fn canonical_archives_are_accepted() {
        let bytes = plain(&[("archive/data.pkl", BENIGN), ("archive/version", b"3\n")]);
        let dir = directory(&bytes).unwrap();
        assert_eq!(dir.entries.len(), 2);
        assert_eq!(dir.prefix(), Some(&b"archive"[..]));
        let mut w = TorchZipWriter::new(Vec::new(), "ck", 64);
        w.add_bytes("data.pkl", BENIGN).unwrap();
        w.add_bytes("data/0", &[1, 2, 3]).unwrap();
        let torch = w.finish().unwrap();
        let dir = directory(&torch).unwrap();
        assert_eq!(dir.entries.len(), 2);
        assert_eq!(dir.entries[1].size, 3);
        // A comment that is exactly the bytes after the end record is canonical.
        let mut commented = bytes[..bytes.len() - 2].to_vec();
        commented.extend_from_slice(&4u16.to_le_bytes());
        commented.extend_from_slice(b"note");
        assert!(directory(&commented).is_ok());
    }

    #[test]
    fn layouts_torch_cannot_open_are_corrupt_not_ambiguous() {
        let bytes = plain(&[("archive/data.pkl", BENIGN)]);
        // No end record at all.
        let cut = &bytes[..bytes.len() - 22];
        assert!(matches!(directory(cut), Err(ZipError::CorruptDirectory(_))));
        // More entries than the directory can hold.
        let mut b = bytes.clone();
        let n = b.len();
        b[n - 14..n - 10].copy_from_slice(&[9, 0, 9, 0]);
        assert!(matches!(directory(&b), Err(ZipError::CorruptDirectory(_))));
        // A directory past the end of the file.
        let mut b = bytes.clone();
        b[n - 6..n - 2].copy_from_slice(&(n as u32).to_le_bytes());
        assert!(matches!(directory(&b), Err(ZipError::CorruptDirectory(_))));
    }
}
