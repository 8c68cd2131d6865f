//! The pre-2017 tar checkpoint format (torch before 0.1.10), read only.
//!
//! The file is a ustar/PAX tar with four members (torch-formats.md §2.3; the reference reader
//! is torch 2.13's `_legacy_load.legacy_load`):
//!
//! - `sys_info`: a pickled dict. torch never reads it; the scanner reports it anyway.
//! - `storages`: a pickled count; per storage a pickled `(key, location, storage_type)`, an
//!   int64 LE element count and the raw bytes; then a pickled list of views
//!   `(view_key, root_key, offset, numel)`, each aliasing part of an earlier storage.
//! - `tensors`: a pickled count; per tensor a pickled `(key, storage_key, tensor_type)`, an
//!   int32 `ndim`, 4 padding bytes, `ndim` int64 sizes, `ndim` int64 strides and an int64
//!   storage offset (all LE).
//! - `pickle`: the object pickle. Its persistent ids are strings `str(key)` naming a tensor or
//!   a storage (torch resolves them with `int(key)`), or `(Class, source_file, source)` tuples
//!   for pickled modules.
//!
//! # Canonical or refuse
//!
//! torch opens every non-zip file with Python's `tarfile` first and reads a legacy stream
//! from byte 0 when `tarfile` raises. `tarfile` is lenient in ways that change between Python
//! versions (PAX and GNU header precedence, Python's `int()` on number fields, links, sparse
//! and unknown member types, which member of a name wins), so this reader does not emulate it:
//! [`walk`] accepts exactly the layout torch's writer produced (`tarfile` in PAX format,
//! `tar.add` of four temporary files), on which every Python version lists the same members,
//! and calls anything else [`Fault::Ambiguous`]:
//!
//! - every header has a valid checksum, plain octal number fields and no ustar name prefix;
//! - a member is a regular file (type `0`) named `sys_info`, `pickle`, `tensors` or
//!   `storages`, each at most once;
//! - a member may follow one PAX extended header (type `x`, named `././@PaxHeader`) whose
//!   records are framed exactly, fill its declared size, leave its padding zero, and are among
//!   those Python writes for such a file (`mtime`, `uid`, `gid`, `uname`, `gname`, a decimal
//!   `size`, and a leading `hdrcharset=BINARY`);
//! - the last member is followed by a zero block, or by the end of the file.
//!
//! On such a file `tarfile` never raises, so torch never falls back to a legacy stream; and
//! that fallback would read nothing anyway, since a pickle read from byte 0 would start at a
//! header name (`s`, `p`, `t`, `.`), an opcode that fails on an empty stack. [`is_tar`], which
//! decides between the two, takes at least every first block `tarfile` takes.
//!
//! Inside the members, [`walk`] reads what torch reads, in torch's order: every pickle of
//! `storages` and `tensors` with the raw bytes between them, then `pickle`; each pickle goes to
//! a visitor (the scanner) before its values steer the walk. A value torch's writer never
//! writes (a count computed by a global, a negative view offset, a key defined twice) is
//! ambiguous too; what torch itself could not read (a member that ends early) is
//! [`Fault::Unreadable`].
//!
//! [`parse`] translates the side tables into the graph form a modern checkpoint has: every
//! key persistent id becomes a `_rebuild_tensor_v2(PersistentId(('storage', …)), …)` call or a
//! bare storage persistent id, so the rest of the crate handles the file as a legacy-stream
//! checkpoint whose storages sit in the `storages` member ([`LegacyRecord`]s).

use std::collections::{HashMap, HashSet};
use std::fmt::Display;
use std::fs::File;
use std::os::unix::fs::FileExt;

use ckpt_pickle::{
    self as pickle, Constructor, Global, Graph, Limits, NodeId, Object, Partial, Pickle,
    PickleError, Value,
};

use super::checkpoint::MAX_PICKLE_BYTES;
use super::dtype::DType;
use super::legacy::LegacyRecord;
use super::tensor::StorageKey;
use super::TorchError;

/// The tar block size: headers are one block, member data is padded to whole blocks.
const BLOCK: u64 = 512;
/// The largest PAX extended header we read. Python writes a few short records.
const MAX_EXTENDED_HEADER: u64 = 64 << 10;
/// The first window a pickle is decoded from; it grows eightfold while the pickle runs on.
const FIRST_WINDOW: u64 = 4 << 10;
/// The most storages, or tensors, one side table may list: a real file has hundreds, and
/// both tables' pickles stay under the scanner's pickle limit.
const MAX_RECORDS: u64 = 40_000;
/// The member names torch's writer used, in the order it wrote them.
const NAMES: [&str; 4] = ["sys_info", "pickle", "tensors", "storages"];
/// Indices into [`NAMES`].
const SYS_INFO: usize = 0;
const PICKLE: usize = 1;
const TENSORS: usize = 2;
const STORAGES: usize = 3;
/// The name Python's `tarfile` gives every PAX extended header it writes.
const PAX_HEADER_NAME: &str = "././@PaxHeader";

/// A tar checkpoint translated to the modern graph form.
///
/// Invariant: `graph` references storages only by `('storage', torch <Name>Storage, key,
/// location, numel[, view])` persistent ids whose key is in `records`, and each record lies
/// inside the file.
#[derive(Debug)]
pub struct TarCheckpoint {
    pub graph: Graph,
    pub root: NodeId,
    /// Where each root storage's element count and bytes are, keyed by `str(key)`.
    pub records: HashMap<StorageKey, LegacyRecord>,
}

/// Why a tar checkpoint could not be read (to the end).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A layout torch's writer never produced, on which `tarfile` or torch may read other
    /// bytes than this reader: the scanner reports it as an evasion.
    Ambiguous(String),
    /// Something torch could not read either: a member missing or ending early, a broken
    /// pickle.
    Unreadable(String),
}

impl Fault {
    /// The one-line reason.
    pub fn message(&self) -> &str {
        match self {
            Fault::Ambiguous(m) | Fault::Unreadable(m) => m,
        }
    }
}

impl From<Fault> for TorchError {
    fn from(fault: Fault) -> Self {
        let what = match fault {
            Fault::Ambiguous(m) => format!("ambiguous tar checkpoint (refused): {m}"),
            Fault::Unreadable(m) => format!("tar format: {m}"),
        };
        TorchError::Invalid { what }
    }
}

fn ambiguous(what: impl Display) -> Fault {
    Fault::Ambiguous(what.to_string())
}

fn unreadable(what: impl Display) -> Fault {
    Fault::Unreadable(what.to_string())
}

fn read_at(file: &File, buf: &mut [u8], offset: u64) -> Result<(), Fault> {
    file.read_exact_at(buf, offset).map_err(|e| {
        unreadable(format_args!(
            "cannot read {} bytes at byte {offset}: {e}",
            buf.len()
        ))
    })
}

fn to_usize(n: u64) -> Result<usize, Fault> {
    usize::try_from(n).map_err(|_| unreadable("member too large for this platform"))
}

/// Whether torch would try the file as a tar: its first block is one `tarfile.open` takes
/// for a header (non-zero, and a checksum field that Python's `int(field, 8)` reads as the
/// block's signed or unsigned sum). This errs towards "tar": a block `tarfile` then rejects
/// (a malformed number field) is refused by [`walk`] as ambiguous, never read as a legacy
/// stream only. Neither `ustar` at byte 257 nor its absence decides it: a v7 header has no
/// magic.
pub fn is_tar(head: &[u8]) -> bool {
    let Some(block) = head.get(..BLOCK as usize) else {
        return false;
    };
    block.iter().any(|&b| b != 0)
        && tarfile_number(&block[148..156]).is_some_and(|stored| checksums(block).contains(&stored))
}

/// Reads a tar checkpoint for loading. `file_len` is the file's length; nothing past it is
/// read, and no buffer is sized by a field before that field is checked against it. Any
/// [`Fault`] is an error: an ambiguous file is refused.
pub fn parse(file: &File, file_len: u64) -> Result<TarCheckpoint, TorchError> {
    let mut walked = walk(file, file_len, true, &mut |_| {})?;
    if let Some(fault) = walked.faults.first() {
        return Err(fault.clone().into());
    }
    let Some(Pickle {
        mut graph, root, ..
    }) = walked.object.take()
    else {
        return Err(unreadable("the `pickle` member holds no pickle").into());
    };
    translate(&mut graph, root, &walked.entries)?;
    Ok(TarCheckpoint {
        graph,
        root,
        records: walked.records,
    })
}

// ---------------------------------------------------------------------------------------------
// The tar container.

/// One member's data: `size` bytes from `offset`. Invariant: `offset + size`, padded to a
/// block, is at most the file's length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    pub offset: u64,
    pub size: u64,
}

/// The members found, by index into [`NAMES`].
#[derive(Debug, Default)]
struct Members([Option<Member>; 4]);

/// What a header block is.
#[derive(Debug)]
enum Kind {
    /// A PAX extended header for the member after it.
    Pax,
    /// A member, by index into [`NAMES`].
    Member(usize),
}

/// One canonical header block.
#[derive(Debug)]
struct Header {
    kind: Kind,
    size: u64,
}

/// Lists the members of a canonical tar (see the module documentation), or says why the
/// file is not one.
fn members(file: &File, file_len: u64) -> Result<Members, Fault> {
    let mut found = Members::default();
    let mut pos = 0u64;
    // After a PAX header: the size it gives the next member, if it gives one.
    let mut pax: Option<Option<u64>> = None;
    loop {
        let n = file_len.saturating_sub(pos).min(BLOCK);
        let mut block = [0u8; BLOCK as usize];
        read_at(file, &mut block[..n as usize], pos)?;
        if block.iter().all(|&b| b == 0) {
            if pax.is_some() {
                return Err(ambiguous(format_args!(
                    "the PAX header before byte {pos} is followed by no member"
                )));
            }
            // A zero block, a short zero tail or the end of the file: `tarfile` stops here.
            return Ok(found);
        }
        if n < BLOCK {
            return Err(ambiguous(format_args!(
                "{n} stray bytes at byte {pos}, where a header or the end of the archive belongs"
            )));
        }
        let header = header(&block, pos)?;
        match header.kind {
            Kind::Pax => {
                if pax.is_some() {
                    return Err(ambiguous(format_args!(
                        "a second PAX header in a row at byte {pos}"
                    )));
                }
                let data = extended_data(file, pos, header.size, file_len)?;
                pax = Some(pax_size(&data, header.size, pos)?);
                pos = after_data(pos, header.size, file_len)?;
            }
            Kind::Member(index) => {
                let size = pax.take().flatten().unwrap_or(header.size);
                let next = after_data(pos, size, file_len)?;
                let slot = &mut found.0[index];
                if slot.is_some() {
                    return Err(ambiguous(format_args!(
                        "a second `{}` member at byte {pos} (`tarfile` would take the last; torch wrote one)",
                        NAMES[index]
                    )));
                }
                *slot = Some(Member {
                    offset: pos + BLOCK,
                    size,
                });
                pos = next;
            }
        }
    }
}

/// Checks one header block against what Python's `tarfile` writes for torch's members.
fn header(block: &[u8; BLOCK as usize], at: u64) -> Result<Header, Fault> {
    let not = |what: String| {
        ambiguous(format_args!(
            "the header at byte {at} {what}, which torch's writer never produced"
        ))
    };
    let number = |range: std::ops::Range<usize>, field: &str| {
        canonical_number(&block[range.clone()]).ok_or_else(|| {
            not(format!(
                "has a `{field}` field that is not plain octal (`{}`)",
                block[range].escape_ascii()
            ))
        })
    };
    let checksum = number(148..156, "chksum")?;
    if !checksums(block).contains(&i128::from(checksum)) {
        return Err(not("has a wrong checksum".into()));
    }
    for (range, field) in [
        (100..108, "mode"),
        (108..116, "uid"),
        (116..124, "gid"),
        (136..148, "mtime"),
    ] {
        number(range, field)?;
    }
    // Python 3 leaves the device fields of a non-device member empty (`nti` reads 0).
    for (range, field) in [(329..337, "devmajor"), (337..345, "devminor")] {
        if block[range.clone()].iter().any(|&b| b != 0) {
            number(range, field)?;
        }
    }
    let size = number(124..136, "size")?;
    if block[345..500].iter().any(|&b| b != 0) {
        return Err(not("has a ustar name prefix".into()));
    }
    let name = &block[..100];
    let kind = match block[156] {
        b'x' if is_named(name, PAX_HEADER_NAME) => Kind::Pax,
        b'0' => match NAMES.iter().position(|n| is_named(name, n)) {
            Some(index) => Kind::Member(index),
            None => {
                return Err(not(format!(
                    "names a member `{}`",
                    nul_terminated(name).escape_ascii()
                )))
            }
        },
        b'x' => return Err(not("is a PAX header under another name".into())),
        other => {
            return Err(not(format!(
                "is of type `{}` (torch wrote regular files, type `0`)",
                [other].escape_ascii()
            )))
        }
    };
    Ok(Header { kind, size })
}

/// Whether a name field holds exactly `name`, padded with NULs.
fn is_named(field: &[u8], name: &str) -> bool {
    field.starts_with(name.as_bytes()) && field[name.len()..].iter().all(|&b| b == 0)
}

/// The bytes up to the first NUL (`tarfile.nts`).
fn nul_terminated(field: &[u8]) -> &[u8] {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    &field[..end]
}

/// Where the next header starts after a header at `pos` with `size` data bytes, padded to a
/// block. When that is past the end of the file, `tarfile` raises "unexpected end of data"
/// and torch cannot read the archive.
fn after_data(pos: u64, size: u64, file_len: u64) -> Result<u64, Fault> {
    let padded = size
        .checked_add(BLOCK - 1)
        .map(|s| s / BLOCK * BLOCK)
        .and_then(|s| s.checked_add(pos + BLOCK));
    match padded {
        Some(next) if next <= file_len => Ok(next),
        _ => Err(unreadable(format_args!(
            "the member at byte {pos} declares {size} bytes but the file ends at {file_len} (truncated?)"
        ))),
    }
}

/// The data of the PAX header at `pos`, with its block padding, bounded.
fn extended_data(file: &File, pos: u64, size: u64, file_len: u64) -> Result<Vec<u8>, Fault> {
    if size > MAX_EXTENDED_HEADER {
        return Err(ambiguous(format_args!(
            "the PAX header at byte {pos} is {size} bytes (Python writes a few short records)"
        )));
    }
    let next = after_data(pos, size, file_len)?;
    let mut data = vec![0u8; to_usize(next - pos - BLOCK)?];
    read_at(file, &mut data, pos + BLOCK)?;
    Ok(data)
}

/// The `size` a PAX header's records give the member after it, once they are checked to be
/// records Python's `tarfile` writes, framed so that every Python version parses them alike:
/// `"<len> <keyword>=<value>\n"` with `len` the record's exact length, filling the declared
/// `size`, the block padding after them zero.
fn pax_size(data: &[u8], size: u64, at: u64) -> Result<Option<u64>, Fault> {
    let not = |what: String| {
        ambiguous(format_args!(
            "the PAX header at byte {at} {what}, which Python's tarfile never writes"
        ))
    };
    let (records, padding) = data.split_at(size as usize);
    if padding.iter().any(|&b| b != 0) {
        return Err(not("has bytes in its block padding".into()));
    }
    let mut seen: Vec<&[u8]> = Vec::new();
    let mut binary = false;
    let mut member_size = None;
    let mut pos = 0usize;
    while pos < records.len() {
        let rest = &records[pos..];
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let length = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|s| s.parse::<usize>().ok())
            .filter(|&n| rest[0] != b'0' && (5..=rest.len()).contains(&n));
        let Some(length) = length.filter(|&n| rest[digits] == b' ' && rest[n - 1] == b'\n') else {
            return Err(not(format!("has a malformed record at offset {pos}")));
        };
        let body = &rest[digits + 1..length - 1];
        let Some(eq) = body.iter().position(|&b| b == b'=').filter(|&eq| eq > 0) else {
            return Err(not(format!("has a malformed record at offset {pos}")));
        };
        let (keyword, value) = (&body[..eq], &body[eq + 1..]);
        if seen.contains(&keyword) {
            return Err(not(format!("repeats `{}`", keyword.escape_ascii())));
        }
        match keyword {
            b"hdrcharset" if seen.is_empty() && value == b"BINARY" => binary = true,
            b"size" => {
                let n = std::str::from_utf8(value)
                    .ok()
                    .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|v| v.parse::<u64>().ok());
                let Some(n) = n else {
                    return Err(not(format!(
                        "gives a size `{}` that is not plain decimal",
                        value.escape_ascii()
                    )));
                };
                member_size = Some(n);
            }
            b"mtime" | b"uid" | b"gid" | b"uname" | b"gname" => {
                if !binary && std::str::from_utf8(value).is_err() {
                    return Err(not(format!(
                        "has a `{}` that is not UTF-8",
                        keyword.escape_ascii()
                    )));
                }
            }
            other => return Err(not(format!("has a `{}` record", other.escape_ascii()))),
        }
        seen.push(keyword);
        pos += length;
    }
    Ok(member_size)
}

/// The header checksums `tarfile` accepts: the sum of all bytes with the checksum field read
/// as spaces, unsigned or (old Sun tars) signed.
fn checksums(block: &[u8]) -> [i128; 2] {
    let (mut unsigned, mut signed) = (256i128, 256i128);
    for (i, &b) in block.iter().enumerate().take(BLOCK as usize) {
        if !(148..156).contains(&i) {
            unsigned += i128::from(b);
            signed += i128::from(b as i8);
        }
    }
    [unsigned, signed]
}

/// A number field as torch's writer wrote it: octal digits, optionally after spaces, then
/// only NULs and spaces. Python's `tarfile.nti` reads such a field to the same value.
fn canonical_number(field: &[u8]) -> Option<u64> {
    let start = field.iter().position(|&b| b != b' ')?;
    let digits = field[start..]
        .iter()
        .take_while(|b| (b'0'..=b'7').contains(b))
        .count();
    let rest = &field[start + digits..];
    if digits == 0 || rest.iter().any(|&b| b != 0 && b != b' ') {
        return None;
    }
    let text = std::str::from_utf8(&field[start..start + digits]).ok()?;
    u64::from_str_radix(text, 8).ok()
}

/// A number field as `tarfile.nti` reads it: GNU base-256 when the first byte is 0x80 or
/// 0xff; otherwise the ASCII text before the first NUL, stripped of Python whitespace, read by
/// Python's `int(text or "0", 8)` (a sign, a `0o` prefix, single underscores between digits).
/// `None` where `nti` raises.
fn tarfile_number(field: &[u8]) -> Option<i128> {
    match field.first() {
        Some(&lead @ (0x80 | 0xff)) => {
            let rest = &field[1..];
            // Fields hold at most 11 bytes after the lead: i128 cannot overflow.
            let n = rest.iter().fold(0i128, |n, &b| (n << 8) | i128::from(b));
            Some(if lead == 0xff {
                n - (1i128 << (8 * rest.len()))
            } else {
                n
            })
        }
        _ => {
            let text = nul_terminated(field);
            if !text.is_ascii() {
                return None;
            }
            let is_space = |b: &u8| matches!(b, b' ' | b'\t'..=b'\r' | 0x1c..=0x1f);
            let start = text.iter().position(|b| !is_space(b));
            let end = text.iter().rposition(|b| !is_space(b));
            match (start, end) {
                (Some(start), Some(end)) => python_octal(&text[start..=end]),
                _ => Some(0),
            }
        }
    }
}

/// Python's `int(text, 8)` for stripped ASCII `text`.
fn python_octal(text: &[u8]) -> Option<i128> {
    let (negative, mut s) = match text {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, text),
    };
    if let [b'0', b'o' | b'O', rest @ ..] = s {
        s = rest.strip_prefix(b"_").unwrap_or(rest);
    }
    let mut n = 0i128;
    let mut previous = b'_';
    for &b in s {
        match b {
            b'0'..=b'7' => n = n.checked_mul(8)?.checked_add(i128::from(b - b'0'))?,
            b'_' if previous != b'_' => {}
            _ => return None,
        }
        previous = b;
    }
    if previous == b'_' {
        // Empty, or a trailing underscore.
        return None;
    }
    Some(if negative { -n } else { n })
}

// ---------------------------------------------------------------------------------------------
// The walk through the members.

/// One pickle met by [`walk`], handed to its visitor before its values steer the walk.
#[derive(Debug)]
pub struct Visit {
    /// `tar:storages#2` (the second pickle of `storages`), `tar:pickle`, `tar:sys_info`.
    pub location: String,
    /// False for `sys_info`, which torch never unpickles.
    pub read_by_torch: bool,
    /// The pickle as the lenient reader recovered it, up to `STOP` or the point it broke.
    pub partial: Partial,
}

/// What [`walk`] gathered from a canonical container.
#[derive(Debug, Default)]
pub struct Walk {
    /// Why parts of the members could not be read, in the order met. A member's walk stops
    /// at its first fault; the other members are still walked.
    pub faults: Vec<Fault>,
    /// What each key names (torch's `deserialized_objects`).
    entries: HashMap<i64, Entry>,
    /// Where each root storage's bytes are.
    records: HashMap<StorageKey, LegacyRecord>,
    /// The object pickle, when asked for.
    object: Option<Pickle>,
}

/// Walks a tar checkpoint as torch's `legacy_load` reads it: `sys_info` first (torch skips
/// it; it is visited for the report), then every pickle of `storages` (the count, each
/// storage's header, the view list) with the raw storage bytes between them, every pickle of
/// `tensors` (the count, each tensor's header) with the raw geometry between them, then
/// `pickle`, decoded into `Walk::object` when `object` is set. `visit` sees each pickle
/// before the walk uses it. The scanner and [`parse`] both read tar files through this walk,
/// so they judge the same bytes.
///
/// An `Err` is a container that is not canonical (nothing was visited); member-level faults
/// are in [`Walk::faults`].
pub fn walk(
    file: &File,
    file_len: u64,
    object: bool,
    visit: &mut dyn FnMut(Visit),
) -> Result<Walk, Fault> {
    let members = members(file, file_len)?;
    let mut walked = Walk::default();
    let missing = |index: usize| {
        unreadable(format_args!(
            "the archive has no `{}` member (torch stops there)",
            NAMES[index]
        ))
    };
    if let Some(member) = members.0[SYS_INFO] {
        // Whatever breaks in it, torch never reads it: no fault.
        let _ = Region::new(file, member, SYS_INFO).pickle("sys_info", false, visit);
    }
    let mut storages_read = false;
    match members.0[STORAGES] {
        Some(member) => {
            let mut region = Region::new(file, member, STORAGES);
            match read_storages(&mut region, &mut walked, visit) {
                Ok(()) => storages_read = true,
                Err(fault) => walked.faults.push(fault),
            }
        }
        None => walked.faults.push(missing(STORAGES)),
    }
    match members.0[TENSORS] {
        Some(member) => {
            let mut region = Region::new(file, member, TENSORS);
            if let Err(fault) = read_tensors(&mut region, &mut walked, storages_read, visit) {
                walked.faults.push(fault);
            }
        }
        None => walked.faults.push(missing(TENSORS)),
    }
    match members.0[PICKLE] {
        Some(member) => {
            let mut region = Region::new(file, member, PICKLE);
            match region.pickle("object", object, visit) {
                Ok(read) => walked.object = read.map(|(pickle, _)| pickle),
                Err(fault) => walked.faults.push(fault),
            }
        }
        None => walked.faults.push(missing(PICKLE)),
    }
    Ok(walked)
}

/// A member's bytes read front to back, as torch reads the extracted file. Invariant:
/// `pos <= end`, and `end` is within the file.
struct Region<'a> {
    file: &'a File,
    pos: u64,
    end: u64,
    /// Index into [`NAMES`].
    member: usize,
    /// Pickles read so far.
    pickles: usize,
}

/// A decoded pickle and the globals it names (in order), for checking that its values are
/// literals.
type Values = (Pickle, Vec<Global>);

impl<'a> Region<'a> {
    fn new(file: &'a File, member: Member, index: usize) -> Self {
        Region {
            file,
            pos: member.offset,
            end: member.offset + member.size,
            member: index,
            pickles: 0,
        }
    }

    fn name(&self) -> &'static str {
        NAMES[self.member]
    }

    fn remaining(&self) -> u64 {
        self.end - self.pos
    }

    /// Reads `n` bytes, after checking that the member holds them (torch's short read fails).
    fn bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>, Fault> {
        self.skip(n, what)?;
        let mut buf = vec![0u8; to_usize(n)?];
        read_at(self.file, &mut buf, self.pos - n)?;
        Ok(buf)
    }

    /// Steps over `n` bytes, after checking that the member holds them.
    fn skip(&mut self, n: u64, what: &str) -> Result<(), Fault> {
        if n > self.remaining() {
            return Err(unreadable(format_args!(
                "`{}` member ends inside {what} ({n} bytes needed, {} left)",
                self.name(),
                self.remaining()
            )));
        }
        self.pos += n;
        Ok(())
    }

    fn i64(&mut self, what: &str) -> Result<i64, Fault> {
        let bytes = self.bytes(8, what)?;
        let mut le = [0u8; 8];
        le.copy_from_slice(&bytes);
        Ok(i64::from_le_bytes(le))
    }

    fn i32(&mut self, what: &str) -> Result<i32, Fault> {
        let bytes = self.bytes(4, what)?;
        let mut le = [0u8; 4];
        le.copy_from_slice(&bytes);
        Ok(i32::from_le_bytes(le))
    }

    /// Decodes the pickle that starts here, hands it to `visit`, and steps past its `STOP`.
    /// Its length is not recorded: a window is decoded and grown while the pickle runs past
    /// its end, up to the member's end or [`MAX_PICKLE_BYTES`]. With `values`, the pickle is
    /// also decoded strictly and returned with the globals it names.
    fn pickle(
        &mut self,
        what: &str,
        values: bool,
        visit: &mut dyn FnMut(Visit),
    ) -> Result<Option<Values>, Fault> {
        self.pickles += 1;
        let location = match self.member {
            STORAGES | TENSORS => format!("tar:{}#{}", self.name(), self.pickles),
            _ => format!("tar:{}", self.name()),
        };
        let cap = self.remaining().min(MAX_PICKLE_BYTES);
        let mut window = cap.min(FIRST_WINDOW);
        let (buf, partial) = loop {
            let mut buf = vec![0u8; to_usize(window)?];
            read_at(self.file, &mut buf, self.pos)?;
            let partial = pickle::read_lenient(&buf, Limits::default());
            if matches!(partial.end, Err(PickleError::Truncated { .. })) && window < cap {
                window = window.saturating_mul(8).min(cap);
                continue;
            }
            break (buf, partial);
        };
        let end = match &partial.end {
            Ok(n) => Ok(*n),
            Err(PickleError::Truncated { .. }) if cap < self.remaining() => Err(unreadable(
                format_args!("`{location}`: the pickled {what} runs past the {MAX_PICKLE_BYTES}-byte limit"),
            )),
            Err(PickleError::Truncated { .. }) => Err(unreadable(format_args!(
                "`{location}`: the member ends inside the pickled {what}"
            ))),
            // torch's writer pickled side tables with plain protocol-2 opcodes, which this
            // reader reads as Python does; one it cannot read there is one Python's unpickler
            // may read otherwise.
            Err(e) if matches!(self.member, STORAGES | TENSORS) => Err(ambiguous(format_args!(
                "`{location}`: the pickled {what} cannot be read ({e}), where torch wrote a plain protocol-2 pickle"
            ))),
            Err(e) => Err(unreadable(format_args!(
                "`{location}`: the pickled {what} cannot be read: {e}"
            ))),
        };
        let globals: Vec<Global> = partial
            .globals
            .iter()
            .filter_map(|&id| partial.graph.global(id).cloned())
            .collect();
        visit(Visit {
            location: location.clone(),
            read_by_torch: self.member != SYS_INFO,
            partial,
        });
        let n = end?;
        if matches!(self.member, STORAGES | TENSORS) {
            if let Some((opcode, at)) = unplain_opcode(&buf[..n]) {
                return Err(ambiguous(format_args!(
                    "`{location}`: the pickled {what} holds opcode 0x{opcode:02x} at byte {at}, which torch's protocol-2 side tables never hold (a frame could move where Python's unpickler stops)"
                )));
            }
        }
        self.pos += n as u64;
        if !values {
            return Ok(None);
        }
        let decoded =
            pickle::read(&buf[..n]).map_err(|e| unreadable(format_args!("`{location}`: {e}")))?;
        Ok(Some((decoded, globals)))
    }

    /// A pickle whose values the walk needs.
    fn values(&mut self, what: &str, visit: &mut dyn FnMut(Visit)) -> Result<Values, Fault> {
        self.pickle(what, true, visit)?
            .ok_or_else(|| unreadable(format_args!("the pickled {what} holds no value")))
    }

    /// A pickled record count: a non-negative integer literal, as torch's writer wrote
    /// `len(...)`. A count computed by a global, or of another type, is ambiguous: torch
    /// would go on with whatever `range()` makes of it.
    fn count(&mut self, what: &str, visit: &mut dyn FnMut(Visit)) -> Result<u64, Fault> {
        let location_index = self.pickles + 1;
        let (p, globals) = self.values(what, visit)?;
        let name = self.name();
        let not = |why: String| {
            ambiguous(format_args!(
                "`tar:{name}#{location_index}`: the {what} {why}, where torch writes a number"
            ))
        };
        if let Some(global) = globals.first() {
            return Err(not(format!(
                "is computed by `{global}` (the rest of the member cannot be located)"
            )));
        }
        let n = p
            .graph
            .int(p.root)
            .ok_or_else(|| not(format!("is a {}", p.graph.get(p.root).kind())))?;
        let n = u64::try_from(n).map_err(|_| not(format!("is {n}")))?;
        if n > MAX_RECORDS {
            return Err(unreadable(format_args!(
                "`tar:{name}#{location_index}`: the {what} is {n}, more than the {MAX_RECORDS} ckpt reads"
            )));
        }
        Ok(n)
    }
}

/// The first opcode (and its offset) of a side-table pickle that is not one of the plain
/// protocol-2 opcodes torch's writer produced there (ints, strings, a class, tuples, a list,
/// memo puts and gets); `None` when every opcode is plain and `STOP` ends `bytes`. Where the
/// unpickler stops then depends on `STOP` alone: a `FRAME`, which Python's unpickler reads
/// whole, could carry its position past `STOP` into bytes this walk would take for the next
/// record.
fn unplain_opcode(bytes: &[u8]) -> Option<(u8, usize)> {
    let mut pos = 0usize;
    let le = |at: usize, n: usize| -> Option<usize> {
        let b = bytes.get(at..at + n)?;
        Some(
            b.iter()
                .rev()
                .fold(0usize, |v, &x| (v << 8) | usize::from(x)),
        )
    };
    let line_end = |from: usize| {
        bytes[from.min(bytes.len())..]
            .iter()
            .position(|&b| b == b'\n')
            .map(|i| from + i + 1)
    };
    while let Some(&opcode) = bytes.get(pos) {
        let arg = pos + 1;
        let next = match opcode {
            b'.' => return (arg != bytes.len()).then_some((opcode, pos)),
            b'(' | b't' | 0x85 | 0x86 | 0x87 | b')' | b']' | b'a' | b'e' | b'N' | 0x88 | 0x89 => {
                Some(arg)
            }
            0x80 | b'K' | b'q' | b'h' => Some(arg + 1),
            b'M' => Some(arg + 2),
            b'J' | b'r' | b'j' => Some(arg + 4),
            0x8a | b'U' => le(arg, 1).map(|n| arg + 1 + n),
            0x8b | b'X' | b'T' => le(arg, 4).map(|n| arg + 4 + n),
            b'c' => line_end(arg).and_then(line_end),
            _ => None,
        };
        match next {
            Some(next) if next <= bytes.len() => pos = next,
            _ => return Some((opcode, pos)),
        }
    }
    Some((
        bytes.last().copied().unwrap_or(0),
        bytes.len().saturating_sub(1),
    ))
}

/// A storage, or a view of part of one, as the `storages` member defines it.
#[derive(Clone, Debug)]
struct StorageEntry {
    /// `str(key)` of the root storage that holds the bytes.
    root_key: StorageKey,
    /// Elements in the root storage.
    root_numel: u64,
    /// The typed storage class name (`FloatStorage`); torch's class of the same name.
    class: &'static str,
    location: String,
    /// For a view: its own key, and where it starts in the root (elements).
    view: Option<(StorageKey, u64)>,
    /// First element of this storage within the root storage.
    offset: u64,
    /// Elements of this storage (of the view, for a view).
    numel: u64,
}

/// A tensor from the `tensors` member. Invariant: it fits in its storage (view).
#[derive(Clone, Debug)]
struct TensorEntry {
    storage: StorageEntry,
    /// Storage offset within the root storage (the view's offset added).
    offset: u64,
    size: Vec<i64>,
    stride: Vec<i64>,
}

/// What a key resolves to (torch's `deserialized_objects`).
#[derive(Clone, Debug)]
enum Entry {
    Storage(StorageEntry),
    Tensor(TensorEntry),
}

/// Adds `entry` under `key`. torch lets a later record replace an earlier one; no writer
/// produces two records with one key (keys are `id()`s of live objects), so it is ambiguous.
fn insert(entries: &mut HashMap<i64, Entry>, key: i64, entry: Entry) -> Result<(), Fault> {
    if entries.insert(key, entry).is_some() {
        return Err(ambiguous(format_args!(
            "key {key} is defined twice (torch keeps the last; its writer wrote each once)"
        )));
    }
    Ok(())
}

/// The `storages` member: the root storages (with their records) and the views.
fn read_storages(
    region: &mut Region<'_>,
    walked: &mut Walk,
    visit: &mut dyn FnMut(Visit),
) -> Result<(), Fault> {
    let count = region.count("storage count", visit)?;
    for _ in 0..count {
        let header = region.values("storage header", visit)?;
        let (key, location, (class, dtype)) = storage_header(&header)?;
        let header_offset = region.pos;
        let numel = region.i64("a storage's element count")?;
        let numel = u64::try_from(numel)
            .map_err(|_| ambiguous(format_args!("storage {key} has a negative element count")))?;
        let nbytes = numel
            .checked_mul(dtype.element_size() as u64)
            .ok_or_else(|| unreadable(format_args!("storage {key}'s size overflows")))?;
        region.skip(nbytes, &format!("storage {key}'s {nbytes} bytes"))?;
        let root_key = key.to_string();
        walked.records.insert(
            root_key.clone(),
            LegacyRecord {
                header_offset,
                count: numel,
                nbytes,
            },
        );
        let entry = StorageEntry {
            root_key,
            root_numel: numel,
            class,
            location,
            view: None,
            offset: 0,
            numel,
        };
        insert(&mut walked.entries, key, Entry::Storage(entry))?;
    }
    let views = region.values("storage view list", visit)?;
    for (view_key, root_key, offset, numel) in view_list(&views)? {
        let root = match walked.entries.get(&root_key) {
            Some(Entry::Storage(root)) => root.clone(),
            _ => {
                return Err(unreadable(format_args!(
                    "view {view_key} is of unknown storage {root_key}"
                )))
            }
        };
        let (Ok(offset), Ok(numel)) = (u64::try_from(offset), u64::try_from(numel)) else {
            return Err(ambiguous(format_args!(
                "view {view_key} has a negative offset or size"
            )));
        };
        // torch slices the root's bytes; Python slicing clamps to the root's end.
        let start = offset.min(root.numel);
        let numel = numel.min(root.numel - start);
        let absolute = root.offset + start;
        let entry = StorageEntry {
            view: Some((view_key.to_string(), absolute)),
            offset: absolute,
            numel,
            ..root
        };
        insert(&mut walked.entries, view_key, Entry::Storage(entry))?;
    }
    Ok(())
}

/// The fields of a side-table header pickle: a tuple of literals and classes only, the
/// classes being the only globals the pickle names (torch's writer pickled the tuple
/// directly). `None` when it is anything else.
fn header_fields(p: &Values, arity: usize) -> Option<Vec<&Value>> {
    let (pickle, globals) = p;
    let g = &pickle.graph;
    let items = g.tuple(pickle.root)?;
    let classes: Vec<&Global> = items.iter().filter_map(|&i| g.global(i)).collect();
    let only_classes =
        globals.len() == classes.len() && globals.iter().all(|c| classes.contains(&c));
    (items.len() == arity && only_classes).then(|| items.iter().map(|&i| g.get(i)).collect())
}

/// `(key, location, storage_type)`: an int key, a location string, a typed storage class.
fn storage_header(p: &Values) -> Result<(i64, String, (&'static str, DType)), Fault> {
    let not = || {
        ambiguous(
            "a storage header is not a (key, location, storage class) tuple of literals as torch writes it",
        )
    };
    let fields = header_fields(p, 3).ok_or_else(not)?;
    let [Value::Int(key), location, Value::Global(class)] = fields[..] else {
        return Err(not());
    };
    let location = match location {
        Value::Str(s) => s.clone(),
        _ => return Err(not()),
    };
    Ok((*key, location, typed_storage(class)?))
}

/// A `torch.<Name>Storage` or `torch.cuda.<Name>Storage` class: its canonical name and dtype.
fn typed_storage(class: &Global) -> Result<(&'static str, DType), Fault> {
    let known = (class.module == "torch" || class.module == "torch.cuda")
        .then(|| DType::from_storage_class(&class.name))
        .flatten()
        .and_then(|d| d.storage_class().map(|name| (name, d)))
        .filter(|(name, _)| *name == class.name);
    known.ok_or_else(|| ambiguous(format_args!("unknown storage type `{class}`")))
}

/// The `[(view_key, root_key, offset, numel), …]` list, all integer literals.
fn view_list(p: &Values) -> Result<Vec<(i64, i64, i64, i64)>, Fault> {
    let (pickle, globals) = p;
    let g = &pickle.graph;
    let not = || {
        ambiguous("the storage view list is not a list of (view key, root key, offset, size) integer tuples")
    };
    let items = match g.get(pickle.root) {
        Value::List(items) if globals.is_empty() => items,
        _ => return Err(not()),
    };
    items
        .iter()
        .map(|&item| {
            let fields = g
                .tuple(item)
                .and_then(|f| f.iter().map(|&x| g.int(x)).collect::<Option<Vec<_>>>());
            match fields.as_deref() {
                Some(&[view, root, offset, numel]) => Ok((view, root, offset, numel)),
                _ => Err(not()),
            }
        })
        .collect()
}

/// The `tensors` member: every tensor's storage and geometry. With `validate`, each tensor
/// is checked against the storages read (skipped when `storages` could not be read).
fn read_tensors(
    region: &mut Region<'_>,
    walked: &mut Walk,
    validate: bool,
    visit: &mut dyn FnMut(Visit),
) -> Result<(), Fault> {
    let count = region.count("tensor count", visit)?;
    for _ in 0..count {
        let header = region.values("tensor header", visit)?;
        let (key, storage_key) = tensor_header(&header)?;
        // torch: `struct.unpack("<i", ...)`, then a negative count fails `"<{ndim}q"`.
        let ndim = u64::try_from(region.i32("a tensor's dimension count")?)
            .map_err(|_| unreadable(format_args!("tensor {key} has a negative dimension count")))?;
        region.skip(4, "a tensor's padding")?;
        let geometry = ndim
            .checked_mul(16)
            .and_then(|n| n.checked_add(8))
            .filter(|&n| n <= region.remaining())
            .ok_or_else(|| {
                unreadable(format_args!(
                    "`tensors` member ends inside tensor {key}'s {ndim} dimensions"
                ))
            })?;
        let bytes = region.bytes(geometry, "a tensor's sizes and strides")?;
        if !validate {
            continue;
        }
        let storage = match walked.entries.get(&storage_key) {
            Some(Entry::Storage(s)) => s.clone(),
            _ => {
                return Err(unreadable(format_args!(
                    "tensor {key} refers to storage {storage_key}, which is not in `storages`"
                )))
            }
        };
        let ints: Vec<i64> = bytes
            .chunks_exact(8)
            .map(|c| {
                let mut le = [0u8; 8];
                le.copy_from_slice(c);
                i64::from_le_bytes(le)
            })
            .collect();
        let n = ints.len() / 2;
        let (size, stride, offset) = (&ints[..n], &ints[n..2 * n], ints[2 * n]);
        let tensor = tensor_entry(key, storage, size, stride, offset)?;
        insert(&mut walked.entries, key, Entry::Tensor(tensor))?;
    }
    Ok(())
}

/// `(key, storage_key, tensor_type)`: the two keys, and a `torch` tensor class, which torch
/// unpickles and ignores (it takes the dtype from the storage).
fn tensor_header(p: &Values) -> Result<(i64, i64), Fault> {
    let not = || {
        ambiguous("a tensor header is not a (key, storage key, tensor class) tuple of literals as torch writes it")
    };
    let fields = header_fields(p, 3).ok_or_else(not)?;
    match fields[..] {
        [Value::Int(key), Value::Int(storage), Value::Global(class)]
            if (class.module == "torch" || class.module == "torch.cuda")
                && class.name.ends_with("Tensor") =>
        {
            Ok((*key, *storage))
        }
        _ => Err(not()),
    }
}

/// Checks a tensor's geometry the way `Tensor.set_` does (non-negative sizes, strides and
/// offset; a non-empty view ends inside its storage) and makes its offset root-relative.
fn tensor_entry(
    key: i64,
    storage: StorageEntry,
    size: &[i64],
    stride: &[i64],
    offset: i64,
) -> Result<TensorEntry, Fault> {
    let negative = size.iter().chain(stride).any(|&v| v < 0) || offset < 0;
    if negative {
        return Err(ambiguous(format_args!(
            "tensor {key} has a negative size, stride or offset"
        )));
    }
    let offset = offset.unsigned_abs();
    let mut extent = Some(0u64);
    if !size.contains(&0) {
        extent = size.iter().zip(stride).try_fold(offset, |last, (&n, &s)| {
            last.checked_add((n.unsigned_abs() - 1).checked_mul(s.unsigned_abs())?)
        });
        extent = extent.and_then(|e| e.checked_add(1));
    }
    let absolute = storage.offset.checked_add(offset);
    match (extent, absolute) {
        (Some(e), Some(absolute)) if e <= storage.numel && i64::try_from(absolute).is_ok() => {
            Ok(TensorEntry {
                storage,
                offset: absolute,
                size: size.to_vec(),
                stride: stride.to_vec(),
            })
        }
        _ => Err(unreadable(format_args!(
            "tensor {key} (size {size:?}, stride {stride:?}, offset {offset}) does not fit in its storage of {} elements",
            storage.numel
        ))),
    }
}

fn bad(what: impl Display) -> TorchError {
    unreadable(what).into()
}

// ---------------------------------------------------------------------------------------------
// Translating the object pickle.

/// Replaces every key persistent id reachable from `root` with its modern form. Module ids
/// `(Class, source_file, source)` are left as they are.
fn translate(
    graph: &mut Graph,
    root: NodeId,
    entries: &HashMap<i64, Entry>,
) -> Result<(), TorchError> {
    for id in persistent_ids(graph, root) {
        let Value::PersistentId(inner) = graph.get(id) else {
            continue;
        };
        let key = match graph.get(*inner) {
            Value::Str(s) => s
                .trim()
                .parse::<i64>()
                .map_err(|_| bad(format_args!("persistent id `{s}` is not an integer key")))?,
            Value::Int(k) => *k,
            Value::Tuple(items) if items.first().is_some_and(|&c| graph.global(c).is_some()) => {
                continue
            }
            other => {
                return Err(bad(format_args!(
                    "a persistent id is a {}, neither a key nor a module class tuple",
                    other.kind()
                )))
            }
        };
        let value = match entries.get(&key) {
            Some(Entry::Tensor(t)) => tensor_call(graph, t),
            Some(Entry::Storage(s)) => {
                let tuple = storage_id(graph, s, s.view.as_ref());
                Value::PersistentId(tuple)
            }
            None => {
                return Err(bad(format_args!(
                    "persistent id {key} names no tensor or storage"
                )))
            }
        };
        graph.set(id, value);
    }
    Ok(())
}

/// Every `PersistentId` node reachable from `root` (iterative: the graph may be deep).
fn persistent_ids(graph: &Graph, root: NodeId) -> Vec<NodeId> {
    let mut found = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![root];
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        let value = graph.get(id);
        if matches!(value, Value::PersistentId(_)) {
            found.push(id);
        }
        stack.extend(value.children());
    }
    found
}

/// A new `('storage', torch <Name>Storage, root_key, location, root_numel[, view])` tuple; the
/// view metadata `(view_key, offset, numel)` is what torch's legacy loader slices a view by.
fn storage_id(graph: &mut Graph, s: &StorageEntry, view: Option<&(StorageKey, u64)>) -> NodeId {
    let mut items = vec![
        graph.add(Value::Str("storage".into())),
        graph.add(Value::Global(Global::new("torch", s.class))),
        graph.add(Value::Str(s.root_key.clone())),
        graph.add(Value::Str(s.location.clone())),
        graph.add(Value::Int(int(s.root_numel))),
    ];
    if let Some((view_key, offset)) = view {
        let meta = vec![
            graph.add(Value::Str(view_key.clone())),
            graph.add(Value::Int(int(*offset))),
            graph.add(Value::Int(int(s.numel))),
        ];
        items.push(graph.add(Value::Tuple(meta)));
    }
    graph.add(Value::Tuple(items))
}

/// `_rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())` on the root
/// storage, as `torch.save` writes a tensor today.
fn tensor_call(graph: &mut Graph, t: &TensorEntry) -> Value {
    let storage = storage_id(graph, &t.storage, None);
    let mut ints = |values: &[i64]| {
        let items = values.iter().map(|&v| graph.add(Value::Int(v))).collect();
        graph.add(Value::Tuple(items))
    };
    let size = ints(&t.size);
    let stride = ints(&t.stride);
    let args = vec![
        graph.add(Value::PersistentId(storage)),
        graph.add(Value::Int(int(t.offset))),
        size,
        stride,
        graph.add(Value::Bool(false)),
        ordered_dict(graph),
    ];
    let args = graph.add(Value::Tuple(args));
    let callable = graph.add(Value::Global(Global::new(
        "torch._utils",
        "_rebuild_tensor_v2",
    )));
    Value::Object(Object::new(Constructor::Reduce { callable, args }))
}

/// An empty `collections.OrderedDict()` (the backward hooks argument).
fn ordered_dict(graph: &mut Graph) -> NodeId {
    let callable = graph.add(Value::Global(Global::new("collections", "OrderedDict")));
    let args = graph.add(Value::Tuple(Vec::new()));
    graph.add(Value::Object(Object::new(Constructor::Reduce {
        callable,
        args,
    })))
}

/// A count or offset known to fit `i64` (it came from an `i64` field or a checked sum).
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(any(test, feature = "testing"))]
#[doc(hidden)]
pub mod testing;

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::testing::{
        build_tar, check_fixture_facts, fixture, fixture_members, header, parse_bytes, pax,
        set_checksum, tensor,
    };
    use super::*;
    use crate::torch::tensor::scan;

    #[test]
    fn fixture_translates_like_torch() {
        let bytes = fixture();
        assert!(is_tar(&bytes[..512]));
        assert!(!is_tar(b"PK\x03\x04"));
        let ckpt = parse_bytes(&bytes).expect("parse");
        check_fixture_facts(&ckpt);
        // The records point at the element count then the bytes: `steps` is [5, 6, 7].
        let steps = &ckpt.records["3"];
        let at = steps.header_offset as usize;
        assert_eq!(steps.count, 3);
        assert_eq!(&bytes[at..at + 8], &3u64.to_le_bytes());
        let values: Vec<i64> = bytes[at + 8..at + 32]
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        assert_eq!(values, [5, 6, 7]);
        // torch: weight[0, 0] == 0.2712765038013458.
        let weight = &ckpt.records["1"];
        let at = weight.header_offset as usize + 8;
        let first = f32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        assert_eq!(first, 0.271_276_5);
    }

    #[test]
    fn opens_as_a_tar_checkpoint() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/tar_pre2017.pth"
        );
        let ckpt = crate::torch::open(std::path::Path::new(path)).expect("open");
        assert_eq!(ckpt.format.name(), "tar");
        assert_eq!(ckpt.scan.tensors.len(), 4);
        assert_eq!(ckpt.storage_bytes("2").expect("storage").len, 40);
    }

    #[test]
    fn truncation_is_an_error_not_a_panic() {
        let bytes = fixture();
        let mut file = tempfile::tempfile().expect("temp file");
        file.write_all(&bytes).expect("write");
        let last = members(&file, bytes.len() as u64).expect("members");
        let storages = last.0[STORAGES].expect("storages");
        // Past the last member's padded data only the closing zero blocks go: tarfile, and
        // torch, still read such a file.
        let data_end = (storages.offset + storages.size).div_ceil(512) * 512;
        for len in (0..bytes.len() as u64).rev() {
            file.set_len(len).expect("truncate");
            let result = parse(&file, len);
            if len < data_end {
                assert!(result.is_err(), "truncated at {len} parsed");
            }
        }
    }

    #[test]
    fn member_larger_than_the_file_is_an_error() {
        let mut bytes = fixture();
        let m = fixture_members();
        // The `storages` header is the last one; find it by name.
        let at = (0..bytes.len())
            .step_by(512)
            .find(|&i| bytes[i..].starts_with(b"storages\0"))
            .expect("storages header");
        bytes[at + 124..at + 136].copy_from_slice(b"77777777777\0");
        set_checksum(&mut bytes[at..at + 512]);
        let err = parse_bytes(&bytes)
            .expect_err("oversized member")
            .to_string();
        assert!(err.contains("file ends"), "{err}");
        // GNU base-256 sizes too.
        bytes[at + 124] = 0x80;
        bytes[at + 125..at + 136].copy_from_slice(&[0xff; 11]);
        set_checksum(&mut bytes[at..at + 512]);
        assert!(parse_bytes(&bytes).is_err());
        assert!(!m["storages"].is_empty());
    }

    fn walk_bytes(bytes: &[u8]) -> Result<Walk, Fault> {
        let mut file = tempfile::tempfile().expect("temp file");
        file.write_all(bytes).expect("write");
        walk(&file, bytes.len() as u64, false, &mut |_| {})
    }

    #[test]
    fn is_tar_takes_every_first_block_tarfile_takes() {
        let mut block = header("sys_info", 0, b'0');
        assert!(is_tar(&block));
        // Checksum fields `tarfile` reads: with a prefix, underscores, signed sums.
        let sum = checksums(&block)[0];
        for text in [
            format!("0o{sum:o}"),
            format!("{sum:o}\x1c"),
            format!("+{sum:o}"),
        ] {
            block[148..156].copy_from_slice(format!("{text:\0<8}").as_bytes());
            assert!(is_tar(&block), "{text}");
        }
        block[148..156].copy_from_slice(b"0000000\0");
        assert!(!is_tar(&block));
        assert!(!is_tar(&[0u8; 512]));
        assert!(!is_tar(&header("sys_info", 0, b'0')[..511]));
    }

    /// Pickles the graph `build` makes.
    fn pk(build: impl FnOnce(&mut Graph) -> NodeId) -> Vec<u8> {
        let mut g = Graph::new();
        let root = build(&mut g);
        pickle::write(&g, root).expect("pickle")
    }

    fn ints(g: &mut Graph, values: &[i64]) -> NodeId {
        let items = values.iter().map(|&v| g.add(Value::Int(v))).collect();
        g.add(Value::Tuple(items))
    }

    /// One `cuda:0` FloatStorage 7 of six elements, view 8 = elements 2..5 of it, tensor 9 =
    /// view 8 with offset 1, size 2; the pickle holds the tensor, the view and the root. torch
    /// loads the tensor as root elements 3 and 4.
    fn view_checkpoint(view: [i64; 4], tensor_geometry: [i64; 3]) -> Vec<u8> {
        let mut storages = pk(|g| g.add(Value::Int(1)));
        storages.extend(pk(|g| {
            let key = g.add(Value::Int(7));
            let loc = g.add(Value::Str("cuda:0".into()));
            let class = g.add(Value::Global(Global::new("torch.cuda", "FloatStorage")));
            g.add(Value::Tuple(vec![key, loc, class]))
        }));
        storages.extend(6i64.to_le_bytes());
        for v in 0..6 {
            storages.extend((v as f32).to_le_bytes());
        }
        storages.extend(pk(|g| {
            let view = ints(g, &view);
            g.add(Value::List(vec![view]))
        }));
        let mut tensors = pk(|g| g.add(Value::Int(1)));
        tensors.extend(pk(|g| {
            let keys = [g.add(Value::Int(9)), g.add(Value::Int(8))];
            let class = g.add(Value::Global(Global::new("torch.cuda", "FloatTensor")));
            g.add(Value::Tuple(vec![keys[0], keys[1], class]))
        }));
        tensors.extend(1i32.to_le_bytes());
        tensors.extend([0; 4]);
        for v in tensor_geometry {
            tensors.extend(v.to_le_bytes());
        }
        let object = pk(|g| {
            let mut pairs = Vec::new();
            for (name, key) in [("t", "9"), ("s", "8"), ("root", "7")] {
                let name = g.add(Value::Str(name.into()));
                let key = g.add(Value::Str(key.into()));
                pairs.push((name, g.add(Value::PersistentId(key))));
            }
            let module = g.add(Value::Global(Global::new("__main__", "Net")));
            let file = g.add(Value::Str("net.py".into()));
            let source = g.add(Value::Str("class Net: ...".into()));
            let id = g.add(Value::Tuple(vec![module, file, source]));
            let name = g.add(Value::Str("module".into()));
            pairs.push((name, g.add(Value::PersistentId(id))));
            g.add(Value::Dict(pairs))
        });
        build_tar(&[
            ("pickle", b'0', object),
            ("tensors", b'0', tensors),
            ("storages", b'0', storages),
        ])
    }

    #[test]
    fn storage_views_become_offsets_into_the_root_storage() {
        let ckpt = parse_bytes(&view_checkpoint([8, 7, 2, 3], [2, 1, 1])).expect("parse");
        let (g, root) = (&ckpt.graph, ckpt.root);
        let scan = scan(g, root).expect("scan");
        let t = tensor(g, root, &scan, "t");
        assert_eq!(
            (t.offset, t.shape.as_slice(), t.dtype),
            (3, &[2][..], DType::Float32)
        );
        assert_eq!(t.storage.key, "7");
        assert_eq!(t.storage.location, "cuda:0");
        assert_eq!(t.storage.numel, 6);
        let class = g
            .tuple(t.storage.tuple)
            .map(|items| g.global(items[1]).cloned());
        assert_eq!(class, Some(Some(Global::new("torch", "FloatStorage"))));
        // The bare view keeps torch's legacy view metadata `(view_key, offset, numel)`.
        let s = g.lookup(root, "s").expect("s");
        let Value::PersistentId(tuple) = g.get(s) else {
            panic!("not a persistent id")
        };
        let items = g.tuple(*tuple).expect("tuple");
        assert_eq!(items.len(), 6);
        assert_eq!(g.str(items[2]), Some("7"));
        let meta = g.tuple(items[5]).expect("view metadata");
        assert_eq!(
            (g.str(meta[0]), g.int(meta[1]), g.int(meta[2])),
            (Some("8"), Some(2), Some(3))
        );
        let r = g.lookup(root, "root").expect("root");
        assert!(
            matches!(g.get(r), Value::PersistentId(t) if g.tuple(*t).map(<[_]>::len) == Some(5))
        );
        // The module id is left alone.
        let m = g.lookup(root, "module").expect("module");
        assert!(
            matches!(g.get(m), Value::PersistentId(t) if g.tuple(*t).map(<[_]>::len) == Some(3))
        );
        assert_eq!(ckpt.records["7"].nbytes, 24);
    }

    #[test]
    fn a_tensor_must_fit_its_view() {
        // Size 3 from offset 1 needs 4 elements; view 8 has 3 (the root has 6).
        let err = parse_bytes(&view_checkpoint([8, 7, 2, 3], [3, 1, 1]))
            .expect_err("tensor past its view")
            .to_string();
        assert!(err.contains("does not fit"), "{err}");
        // A view past the root's end is clamped, as Python slicing does: 6 - 5 = 1 element.
        let err = parse_bytes(&view_checkpoint([8, 7, 5, 3], [2, 1, 0]))
            .expect_err("clamped view")
            .to_string();
        assert!(err.contains("does not fit"), "{err}");
        let err = parse_bytes(&view_checkpoint([8, 6, 2, 3], [2, 1, 0]))
            .expect_err("unknown root")
            .to_string();
        assert!(err.contains("unknown storage 6"), "{err}");
    }

    #[test]
    fn a_pax_header_followed_by_no_member_is_ambiguous() {
        let x = |records: Vec<u8>| (PAX_HEADER_NAME, b'x', records);
        let mut tar = build_tar(&[("sys_info", b'0', b"\x80\x02}.".to_vec())]);
        let end = tar.len() - 1024;
        tar.truncate(end);
        tar.extend(build_tar(&[x(pax("mtime", "1"))]));
        let walked = walk_bytes(&tar);
        assert!(matches!(walked, Err(Fault::Ambiguous(_))), "{walked:?}");
    }

    #[test]
    fn number_fields_read_as_tarfile_reads_them() {
        // `tarfile`'s reading of a number field, which `is_tar` uses.
        for (field, value) in [
            (&b"0000644\0"[..], Some(0o644)),
            (b"0o17\0\0\0\0", Some(0o17)),
            (b"0O_17\0\0\0", Some(0o17)),
            (b"0_644\0\0\0", Some(0o644)),
            (b"\x1c644 \0\0\0", Some(0o644)),
            (b" \t-7\0\0\0\0", Some(-7)),
            (b"\0\0\0\0\0\0\0\0", Some(0)),
            (b"   \0\0\0\0\0", Some(0)),
            (b"_644\0\0\0\0", None),
            (b"644_\0\0\0\0", None),
            (b"6__4\0\0\0\0", None),
            (b"0x17\0\0\0\0", None),
            (b"0o\0\0\0\0\0\0", None),
            (b"- 7\0\0\0\0\0", None),
            (b"8\0\0\0\0\0\0\0", None),
            ("\u{a0}644\0\0\0".as_bytes(), None),
            (b"\x80\0\0\0\0\0\x01\x00", Some(256)),
            (b"\xff\xff\xff\xff\xff\xff\xff\xff", Some(-1)),
        ] {
            assert_eq!(tarfile_number(field), value, "{}", field.escape_ascii());
        }
    }

    #[test]
    fn unplain_opcode_finds_what_a_plain_pickle_lacks() {
        assert_eq!(unplain_opcode(b"\x80\x02K\x00."), None);
        assert_eq!(unplain_opcode(b"\x80\x02K\x00.."), Some((b'.', 4)));
        assert_eq!(
            unplain_opcode(b"\x80\x02cos\nsystem\n)R."),
            Some((b'R', 14))
        );
    }
}
