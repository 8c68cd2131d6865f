//! The pre-2017 tar checkpoint format (torch before 0.1.10), read only.
//!
//! The file is a ustar/PAX tar with four members (torch-formats.md §2.3; the reference reader
//! is torch 2.13's `_legacy_load.legacy_load`):
//!
//! - `sys_info`: a pickled dict. torch never reads it, and neither do we.
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
//! [`parse`] translates the side tables into the graph form a modern checkpoint has: every
//! key persistent id becomes a `_rebuild_tensor_v2(PersistentId(('storage', …)), …)` call or a
//! bare storage persistent id, so the rest of the crate handles the file as a legacy-stream
//! checkpoint whose storages sit in the `storages` member ([`LegacyRecord`]s).

use std::collections::{HashMap, HashSet};
use std::fmt::Display;
use std::fs::File;
use std::os::unix::fs::FileExt;

use crate::pickle::{self, Constructor, Global, Graph, NodeId, Object, Pickle, PickleError, Value};

use super::checkpoint::MAX_PICKLE_BYTES;
use super::dtype::DType;
use super::legacy::LegacyRecord;
use super::tensor::StorageKey;
use super::TorchError;

/// The tar block size: headers are one block, member data is padded to whole blocks.
const BLOCK: u64 = 512;
/// The largest PAX extended header or GNU long name we read. Real ones hold a few records.
const MAX_EXTENDED_HEADER: u64 = 1 << 20;
/// The first window a side-table pickle is decoded from; it grows while the pickle runs on.
const FIRST_WINDOW: u64 = 64 << 10;

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

/// Whether the first bytes are a tar header as `tarfile.open` (which torch tries first on
/// every non-zip file) accepts one: a non-zero block whose checksum holds. Neither `ustar` at
/// byte 257 nor its absence decides it: a v7 header has no magic, and torch reads a block
/// with the magic but a bad checksum as a legacy stream.
pub fn is_tar(head: &[u8]) -> bool {
    match head
        .get(..BLOCK as usize)
        .map(<&[u8; BLOCK as usize]>::try_from)
    {
        Some(Ok(block)) => block.iter().any(|&b| b != 0) && checksum_ok(block),
        _ => false,
    }
}

/// Reads a tar checkpoint. `file_len` is the file's length; nothing past it is read, and no
/// buffer is sized by a field before that field is checked against it.
pub fn parse(file: &File, file_len: u64) -> Result<TarCheckpoint, TorchError> {
    let members = members(file, file_len)?;
    let storages = regular(members.storages, "storages")?;
    let tensors = bounded(regular(members.tensors, "tensors")?, "tensors")?;
    let object = bounded(regular(members.pickle, "pickle")?, "pickle")?;

    let mut entries = HashMap::new();
    let records = read_storages(file, storages, &mut entries)?;
    read_tensors(file, tensors, &mut entries)?;

    let mut bytes = vec![0u8; to_usize(object.size)?];
    file.read_exact_at(&mut bytes, object.offset)?;
    let Pickle {
        mut graph, root, ..
    } = pickle::read(&bytes).map_err(|e| bad(format_args!("`pickle` member: {e}")))?;
    translate(&mut graph, root, &entries)?;
    Ok(TarCheckpoint {
        graph,
        root,
        records,
    })
}

fn bad(what: impl Display) -> TorchError {
    TorchError::Invalid {
        what: format!("tar format: {what}"),
    }
}

fn to_usize(n: u64) -> Result<usize, TorchError> {
    usize::try_from(n).map_err(|_| bad("member too large for this platform"))
}

// ---------------------------------------------------------------------------------------------
// The tar container.

/// One member's data: `size` bytes from `offset`. Invariant: `offset + size <= file_len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    typeflag: u8,
    pub offset: u64,
    pub size: u64,
}

impl Member {
    /// Whether `tarfile` extracts it as a regular file (the only kind torch reads).
    pub fn is_regular(&self) -> bool {
        matches!(self.typeflag, b'0' | 0 | b'7')
    }
}

/// The members torch reads. Of several with one name the last wins, as in
/// `TarFile.getmember`.
#[derive(Debug, Default)]
struct Members {
    pickle: Option<Member>,
    tensors: Option<Member>,
    storages: Option<Member>,
}

/// What PAX extended headers (`x`, `g`, `X`) and GNU long names (`L`) carry over to the
/// header that follows them.
#[derive(Clone, Debug, Default)]
struct Overrides {
    path: Option<String>,
    size: Option<u64>,
}

/// One decoded 512-byte header block.
#[derive(Debug)]
struct Header {
    name: String,
    size: u64,
    typeflag: u8,
}

/// The outcome of reading a header block, in `tarfile`'s terms.
#[derive(Debug)]
enum HeaderRead {
    Header(Header),
    /// No header here: `why` says what was found instead (end of file, a zero block, a
    /// truncated or corrupt block). `tarfile` ends the archive there unless it is the first.
    End {
        why: &'static str,
        zero_block: bool,
    },
}

/// Keeps the members torch reads from [`walk`]'s list; of several with one name the last.
fn members(file: &File, file_len: u64) -> Result<Members, TorchError> {
    let mut found = Members::default();
    for (name, member) in walk(file, file_len)? {
        match name.as_str() {
            "pickle" => found.pickle = Some(member),
            "tensors" => found.tensors = Some(member),
            "storages" => found.storages = Some(member),
            _ => {}
        }
    }
    Ok(found)
}

/// Every member in file order with its name, as `TarFile.getmembers` lists them: PAX
/// extended headers (`x`, `g`) and GNU long names (`L`) applied, so a `size` or `path` given
/// only in a PAX record is the one used. The scanner and [`parse`] both read members through
/// this walk, so they judge the same bytes.
pub fn walk(file: &File, file_len: u64) -> Result<Vec<(String, Member)>, TorchError> {
    let mut found = Vec::new();
    let mut global = Overrides::default();
    let mut pos = 0u64;
    loop {
        let start = pos;
        let mut local = global.clone();
        let header = loop {
            let subsequent = pos != start;
            match header_at(file, pos, file_len)? {
                HeaderRead::Header(h) => match h.typeflag {
                    b'x' | b'X' | b'g' => {
                        let data = extended_data(file, pos, h.size, file_len)?;
                        let records = pax_records(&data)?;
                        if h.typeflag == b'g' {
                            global.apply(&records);
                        }
                        local.apply(&records);
                        pos = after_data(pos, h.size, file_len)?;
                    }
                    b'L' => {
                        let data = extended_data(file, pos, h.size, file_len)?;
                        local.path = Some(nul_terminated(&data));
                        pos = after_data(pos, h.size, file_len)?;
                    }
                    b'K' => pos = after_data(pos, h.size, file_len)?,
                    b'S' => return Err(bad("GNU sparse members are not supported")),
                    _ => break Some(h),
                },
                HeaderRead::End { why, zero_block } => {
                    if subsequent {
                        return Err(bad(format_args!(
                            "{why} after an extended header at byte {start}"
                        )));
                    }
                    if start == 0 && !zero_block {
                        return Err(bad(format_args!("{why} at byte 0")));
                    }
                    break None;
                }
            }
        };
        let Some(header) = header else {
            return Ok(found);
        };
        let data_offset = pos + BLOCK;
        let mut name = local.path.unwrap_or(header.name);
        let size = local.size.unwrap_or(header.size);
        let is_dir = header.typeflag == b'5' || (header.typeflag == 0 && name.ends_with('/'));
        if is_dir {
            name = name.trim_end_matches('/').to_owned();
        }
        pos = if has_data(header.typeflag) && !is_dir {
            after_data(pos, size, file_len)?
        } else {
            data_offset
        };
        let member = Member {
            typeflag: if is_dir { b'5' } else { header.typeflag },
            offset: data_offset,
            size,
        };
        found.push((name, member));
    }
}

impl Overrides {
    /// Applies PAX records the way `TarInfo._apply_pax_info` does for the fields we use.
    fn apply(&mut self, records: &[(String, String)]) {
        for (keyword, value) in records {
            match keyword.as_str() {
                "path" => self.path = Some(value.trim_end_matches('/').to_owned()),
                // tarfile turns an unparsable size into 0.
                "size" => self.size = Some(value.trim().parse().unwrap_or(0)),
                _ => {}
            }
        }
    }
}

/// Whether data blocks follow a header of this type: regular files, and types `tarfile` does
/// not know (it treats those as regular files). Links, directories and devices have none.
fn has_data(typeflag: u8) -> bool {
    !matches!(typeflag, b'1'..=b'6')
}

/// Where the next header starts after a header at `pos` with `size` data bytes, padded to a
/// block. Errors when that is past the end of the file (`tarfile`: "unexpected end of data").
fn after_data(pos: u64, size: u64, file_len: u64) -> Result<u64, TorchError> {
    let padded = size
        .checked_add(BLOCK - 1)
        .map(|s| s / BLOCK * BLOCK)
        .and_then(|s| s.checked_add(pos + BLOCK));
    match padded {
        Some(next) if next <= file_len => Ok(next),
        _ => Err(bad(format_args!(
            "the member at byte {pos} declares {size} bytes but the file ends at {file_len} (truncated?)"
        ))),
    }
}

/// The data of an extended header (PAX records, a GNU long name) at `pos`, bounded.
fn extended_data(file: &File, pos: u64, size: u64, file_len: u64) -> Result<Vec<u8>, TorchError> {
    if size > MAX_EXTENDED_HEADER {
        return Err(bad(format_args!(
            "extended header at byte {pos} is {size} bytes (limit {MAX_EXTENDED_HEADER})"
        )));
    }
    after_data(pos, size, file_len)?;
    let mut data = vec![0u8; to_usize(size)?];
    file.read_exact_at(&mut data, pos + BLOCK)?;
    Ok(data)
}

/// Reads and checks the header block at `pos` (`TarInfo.frombuf`).
fn header_at(file: &File, pos: u64, file_len: u64) -> Result<HeaderRead, TorchError> {
    let end = |why, zero_block| Ok(HeaderRead::End { why, zero_block });
    if pos >= file_len {
        return end("end of file", false);
    }
    if file_len - pos < BLOCK {
        return end("a truncated header", false);
    }
    let mut block = [0u8; BLOCK as usize];
    file.read_exact_at(&mut block, pos)?;
    if block.iter().all(|&b| b == 0) {
        return end("a zero block", true);
    }
    if !checksum_ok(&block) {
        return end("a header with a bad checksum", false);
    }
    // tarfile rejects a header whose numeric fields do not parse.
    let numeric = [100..108, 108..116, 116..124, 136..148, 329..337, 337..345];
    if numeric.into_iter().any(|r| number(&block[r]).is_none()) {
        return end("a header with a malformed number", false);
    }
    let size = match number(&block[124..136]).map(u64::try_from) {
        Some(Ok(size)) => size,
        _ => return end("a header with a malformed size", false),
    };
    let typeflag = block[156];
    let mut name = nul_terminated(&block[0..100]);
    let prefix = nul_terminated(&block[345..500]);
    if !prefix.is_empty() && !matches!(typeflag, b'L' | b'K' | b'S') {
        name = format!("{prefix}/{name}");
    }
    Ok(HeaderRead::Header(Header {
        name,
        size,
        typeflag,
    }))
}

/// The header checksum: the sum of all bytes with the checksum field read as spaces, unsigned
/// or (old Sun tars) signed.
fn checksum_ok(block: &[u8; BLOCK as usize]) -> bool {
    let Some(stored) = number(&block[148..156]) else {
        return false;
    };
    let (mut unsigned, mut signed) = (256i128, 256i128);
    for (i, &b) in block.iter().enumerate() {
        if !(148..156).contains(&i) {
            unsigned += i128::from(b);
            signed += i128::from(b as i8);
        }
    }
    stored == unsigned || stored == signed
}

/// A numeric header field (`tarfile.nti`): NUL/space padded octal, or GNU base-256 when the
/// first byte is 0x80 (positive) or 0xff (negative).
fn number(field: &[u8]) -> Option<i128> {
    match field.first() {
        Some(&lead @ (0x80 | 0xff)) => {
            let rest = &field[1..];
            // 12-byte fields hold at most 88 bits: i128 cannot overflow.
            let n = rest.iter().fold(0i128, |n, &b| (n << 8) | i128::from(b));
            Some(if lead == 0xff {
                n - (1i128 << (8 * rest.len()))
            } else {
                n
            })
        }
        _ => {
            let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
            let text = std::str::from_utf8(&field[..end]).ok()?.trim();
            if text.is_empty() {
                return Some(0);
            }
            i128::from_str_radix(text, 8).ok()
        }
    }
}

/// Text up to the first NUL (`tarfile.nts`), decoded as UTF-8 with replacement.
fn nul_terminated(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// The `"<len> <keyword>=<value>\n"` records of a PAX extended header, as
/// `TarInfo._proc_pax` reads them: parsing stops at the first thing that is not a record.
fn pax_records(data: &[u8]) -> Result<Vec<(String, String)>, TorchError> {
    let mut records = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let rest = &data[pos..];
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || rest.get(digits) != Some(&b' ') {
            break;
        }
        let keyword_start = digits + 1;
        let Some(eq) = rest[keyword_start..].iter().position(|&b| b == b'=') else {
            break;
        };
        if eq == 0 {
            break;
        }
        let length: usize = std::str::from_utf8(&rest[..digits])
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(usize::MAX);
        if length == 0 {
            return Err(bad(format_args!("PAX record of length 0")));
        }
        let value_start = keyword_start + eq + 1;
        let value_end = length.saturating_sub(1).min(rest.len()).max(value_start);
        let keyword = String::from_utf8_lossy(&rest[keyword_start..keyword_start + eq]);
        let value = String::from_utf8_lossy(&rest[value_start..value_end]);
        records.push((keyword.into_owned(), value.into_owned()));
        pos = pos.saturating_add(length);
    }
    Ok(records)
}

/// The member torch extracts under `name`: it must exist and be a regular file.
fn regular(member: Option<Member>, name: &str) -> Result<Member, TorchError> {
    let member = member.ok_or_else(|| bad(format_args!("the archive has no `{name}` member")))?;
    if !member.is_regular() {
        return Err(bad(format_args!(
            "member `{name}` is not a regular file (type `{}`)",
            member.typeflag.escape_ascii()
        )));
    }
    Ok(member)
}

/// A member whose content is structure, not tensor data: at most [`MAX_PICKLE_BYTES`].
fn bounded(member: Member, name: &str) -> Result<Member, TorchError> {
    if member.size > MAX_PICKLE_BYTES {
        return Err(bad(format_args!(
            "member `{name}` is {} bytes, more than the {MAX_PICKLE_BYTES}-byte limit",
            member.size
        )));
    }
    Ok(member)
}

// ---------------------------------------------------------------------------------------------
// The side tables.

/// A member's bytes read front to back. Invariant: `pos <= end`, and `end` is within the file.
struct Region<'a> {
    file: &'a File,
    pos: u64,
    end: u64,
    name: &'static str,
}

impl<'a> Region<'a> {
    fn new(file: &'a File, member: Member, name: &'static str) -> Self {
        Region {
            file,
            pos: member.offset,
            end: member.offset + member.size,
            name,
        }
    }

    fn remaining(&self) -> u64 {
        self.end - self.pos
    }

    /// Reads `n` bytes, after checking that the member holds them.
    fn bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>, TorchError> {
        self.skip(n, what)?;
        let mut buf = vec![0u8; to_usize(n)?];
        self.file.read_exact_at(&mut buf, self.pos - n)?;
        Ok(buf)
    }

    /// Steps over `n` bytes, after checking that the member holds them.
    fn skip(&mut self, n: u64, what: &str) -> Result<(), TorchError> {
        if n > self.remaining() {
            return Err(bad(format_args!(
                "`{}` member ends inside {what} ({n} bytes needed, {} left)",
                self.name,
                self.remaining()
            )));
        }
        self.pos += n;
        Ok(())
    }

    fn i64(&mut self, what: &str) -> Result<i64, TorchError> {
        let bytes = self.bytes(8, what)?;
        let mut le = [0u8; 8];
        le.copy_from_slice(&bytes);
        Ok(i64::from_le_bytes(le))
    }

    fn i32(&mut self, what: &str) -> Result<i32, TorchError> {
        let bytes = self.bytes(4, what)?;
        let mut le = [0u8; 4];
        le.copy_from_slice(&bytes);
        Ok(i32::from_le_bytes(le))
    }

    /// Decodes the pickle that starts here. Its length is not recorded: decode a window and
    /// grow it while the pickle runs past its end, up to the member's end or 1 GiB.
    fn pickle(&mut self, what: &str) -> Result<Pickle, TorchError> {
        let cap = self.remaining().min(MAX_PICKLE_BYTES);
        let mut window = cap.min(FIRST_WINDOW);
        loop {
            let mut buf = vec![0u8; to_usize(window)?];
            self.file.read_exact_at(&mut buf, self.pos)?;
            match pickle::read(&buf) {
                Ok(p) => {
                    self.pos += p.consumed as u64;
                    return Ok(p);
                }
                Err(PickleError::Truncated { .. }) if window < cap => {
                    window = window.saturating_mul(8).min(cap);
                }
                Err(PickleError::Truncated { .. }) if cap == self.remaining() => {
                    return Err(bad(format_args!(
                        "`{}` member ends inside the pickled {what}",
                        self.name
                    )));
                }
                Err(e) => {
                    return Err(bad(format_args!(
                        "`{}` member, pickled {what}: {e}",
                        self.name
                    )))
                }
            }
        }
    }

    /// A pickled record count. Python's `range(n)` runs zero times for a negative `n`.
    fn count(&mut self, what: &str) -> Result<u64, TorchError> {
        let p = self.pickle(what)?;
        let n = p.graph.int(p.root).ok_or_else(|| {
            bad(format_args!(
                "`{}` member: the {what} is a {}, not an integer",
                self.name,
                p.graph.get(p.root).kind()
            ))
        })?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
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

/// Adds `entry` under `key`. torch would let a later record replace an earlier one; no writer
/// produces two records with one key (keys are `id()`s of live objects), so it is an error.
fn insert(entries: &mut HashMap<i64, Entry>, key: i64, entry: Entry) -> Result<(), TorchError> {
    if entries.insert(key, entry).is_some() {
        return Err(bad(format_args!("key {key} is defined twice")));
    }
    Ok(())
}

/// The `storages` member: the root storages (with their records) and the views.
fn read_storages(
    file: &File,
    member: Member,
    entries: &mut HashMap<i64, Entry>,
) -> Result<HashMap<StorageKey, LegacyRecord>, TorchError> {
    let mut region = Region::new(file, member, "storages");
    let count = region.count("storage count")?;
    let mut records = HashMap::new();
    for _ in 0..count {
        let header = region.pickle("storage header")?;
        let (key, location, (class, dtype)) = storage_header(&header)?;
        let header_offset = region.pos;
        let numel = u64::try_from(region.i64("a storage's element count")?)
            .map_err(|_| bad(format_args!("storage {key} has a negative element count")))?;
        let nbytes = numel
            .checked_mul(dtype.element_size() as u64)
            .ok_or_else(|| bad(format_args!("storage {key}'s size overflows")))?;
        region.skip(nbytes, &format!("storage {key}'s {nbytes} bytes"))?;
        let root_key = key.to_string();
        records.insert(
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
        insert(entries, key, Entry::Storage(entry))?;
    }
    let views = region.pickle("storage view list")?;
    for (view_key, root_key, offset, numel) in view_list(&views)? {
        let root = match entries.get(&root_key) {
            Some(Entry::Storage(root)) => root.clone(),
            _ => {
                return Err(bad(format_args!(
                    "view {view_key} is of unknown storage {root_key}"
                )))
            }
        };
        let (Ok(offset), Ok(numel)) = (u64::try_from(offset), u64::try_from(numel)) else {
            return Err(bad(format_args!(
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
        insert(entries, view_key, Entry::Storage(entry))?;
    }
    Ok(records)
}

/// `(key, location, storage_type)`: an int key, a location string, a typed storage class.
fn storage_header(p: &Pickle) -> Result<(i64, String, (&'static str, DType)), TorchError> {
    let g = &p.graph;
    let shape = || bad("a storage header is not a (key, location, storage type) tuple");
    let items = sequence(g, p.root).ok_or_else(shape)?;
    let [key, location, class] = items[..] else {
        return Err(shape());
    };
    let key = g
        .int(key)
        .ok_or_else(|| bad("a storage key is not an integer"))?;
    let location = g
        .str(location)
        .ok_or_else(|| bad(format_args!("storage {key}'s location is not a string")))?
        .to_owned();
    let class = g
        .global(class)
        .ok_or_else(|| bad(format_args!("storage {key}'s type is not a class")))?;
    Ok((key, location, typed_storage(class)?))
}

/// A `torch.<Name>Storage` or `torch.cuda.<Name>Storage` class: its canonical name and dtype.
fn typed_storage(class: &Global) -> Result<(&'static str, DType), TorchError> {
    let known = (class.module == "torch" || class.module == "torch.cuda")
        .then(|| DType::from_storage_class(&class.name))
        .flatten()
        .and_then(|d| d.storage_class().map(|name| (name, d)))
        .filter(|(name, _)| *name == class.name);
    known.ok_or_else(|| bad(format_args!("unknown storage type `{class}`")))
}

/// The items of a tuple or list node.
fn sequence(g: &Graph, id: NodeId) -> Option<Vec<NodeId>> {
    match g.get(id) {
        Value::Tuple(items) | Value::List(items) => Some(items.clone()),
        _ => None,
    }
}

/// The `[(view_key, root_key, offset, numel), …]` list, all integers.
fn view_list(p: &Pickle) -> Result<Vec<(i64, i64, i64, i64)>, TorchError> {
    let g = &p.graph;
    let items = sequence(g, p.root).ok_or_else(|| bad("the storage view list is not a list"))?;
    items
        .into_iter()
        .map(|item| {
            let fields = sequence(g, item)
                .and_then(|f| f.iter().map(|&x| g.int(x)).collect::<Option<Vec<_>>>());
            match fields.as_deref() {
                Some(&[view, root, offset, numel]) => Ok((view, root, offset, numel)),
                _ => Err(bad(
                    "a storage view is not a (view key, root key, offset, size) tuple of integers",
                )),
            }
        })
        .collect()
}

/// The `tensors` member: every tensor's storage and geometry.
fn read_tensors(
    file: &File,
    member: Member,
    entries: &mut HashMap<i64, Entry>,
) -> Result<(), TorchError> {
    let mut region = Region::new(file, member, "tensors");
    let count = region.count("tensor count")?;
    for _ in 0..count {
        let header = region.pickle("tensor header")?;
        let (key, storage_key) = tensor_header(&header)?;
        let storage = match entries.get(&storage_key) {
            Some(Entry::Storage(s)) => s.clone(),
            _ => {
                return Err(bad(format_args!(
                    "tensor {key} refers to storage {storage_key}, which is not in `storages`"
                )))
            }
        };
        let ndim = u64::try_from(region.i32("a tensor's dimension count")?)
            .map_err(|_| bad(format_args!("tensor {key} has a negative dimension count")))?;
        region.skip(4, "a tensor's padding")?;
        let geometry = ndim
            .checked_mul(16)
            .and_then(|n| n.checked_add(8))
            .filter(|&n| n <= region.remaining())
            .ok_or_else(|| {
                bad(format_args!(
                    "`tensors` member ends inside tensor {key}'s {ndim} dimensions"
                ))
            })?;
        let bytes = region.bytes(geometry, "a tensor's sizes and strides")?;
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
        insert(entries, key, Entry::Tensor(tensor))?;
    }
    Ok(())
}

/// `(key, storage_key, tensor_type)`: the two keys. The tensor type is not used (torch takes
/// the dtype from the storage).
fn tensor_header(p: &Pickle) -> Result<(i64, i64), TorchError> {
    let g = &p.graph;
    let shape = || bad("a tensor header is not a (key, storage key, tensor type) tuple");
    let items = sequence(g, p.root).ok_or_else(shape)?;
    let [key, storage, _] = items[..] else {
        return Err(shape());
    };
    let key = g
        .int(key)
        .ok_or_else(|| bad("a tensor key is not an integer"))?;
    let storage = g
        .int(storage)
        .ok_or_else(|| bad(format_args!("tensor {key} has no storage key")))?;
    Ok((key, storage))
}

/// Checks a tensor's geometry the way `Tensor.set_` does (non-negative sizes, strides and
/// offset; a non-empty view ends inside its storage) and makes its offset root-relative.
fn tensor_entry(
    key: i64,
    storage: StorageEntry,
    size: &[i64],
    stride: &[i64],
    offset: i64,
) -> Result<TensorEntry, TorchError> {
    let negative = size.iter().chain(stride).any(|&v| v < 0) || offset < 0;
    if negative {
        return Err(bad(format_args!(
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
        _ => Err(bad(format_args!(
            "tensor {key} (size {size:?}, stride {stride:?}, offset {offset}) does not fit in its storage of {} elements",
            storage.numel
        ))),
    }
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

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::torch::tensor::{scan, Scan, TensorRef};

    fn fixture() -> Vec<u8> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/tar_pre2017.pth");
        std::fs::read(path).expect("fixture")
    }

    /// Writes `bytes` to a temporary file and parses it.
    fn parse_bytes(bytes: &[u8]) -> Result<TarCheckpoint, TorchError> {
        let mut file = tempfile::tempfile().expect("temp file");
        file.write_all(bytes).expect("write");
        parse(&file, bytes.len() as u64)
    }

    /// A ustar header block with a valid checksum.
    fn header(name: &str, size: u64, typeflag: u8) -> [u8; 512] {
        let mut block = [0u8; 512];
        block[..name.len()].copy_from_slice(name.as_bytes());
        block[100..107].copy_from_slice(b"0000644");
        block[108..115].copy_from_slice(b"0000000");
        block[116..123].copy_from_slice(b"0000000");
        block[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
        block[136..147].copy_from_slice(b"00000000000");
        block[156] = typeflag;
        block[257..263].copy_from_slice(b"ustar\0");
        block[263..265].copy_from_slice(b"00");
        set_checksum(&mut block);
        block
    }

    fn set_checksum(block: &mut [u8]) {
        block[148..156].copy_from_slice(b"        ");
        let sum: u32 = block.iter().map(|&b| u32::from(b)).sum();
        block[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    }

    /// A tar of `(header name, typeflag, data)` members and the two closing zero blocks.
    fn build_tar(members: &[(&str, u8, Vec<u8>)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, typeflag, data) in members {
            out.extend_from_slice(&header(name, data.len() as u64, *typeflag));
            out.extend_from_slice(data);
            out.resize(out.len().div_ceil(512) * 512, 0);
        }
        out.resize(out.len() + 1024, 0);
        out
    }

    /// A PAX extended-header record.
    fn pax(keyword: &str, value: &str) -> Vec<u8> {
        let body = format!(" {keyword}={value}\n");
        let mut len = body.len() + 1;
        while format!("{len}{body}").len() != len {
            len += 1;
        }
        format!("{len}{body}").into_bytes()
    }

    /// The data of the fixture's members, by name.
    fn fixture_members() -> HashMap<&'static str, Vec<u8>> {
        let bytes = fixture();
        let mut file = tempfile::tempfile().expect("temp file");
        file.write_all(&bytes).expect("write");
        let found = members(&file, bytes.len() as u64).expect("members");
        let data = |m: Option<Member>| {
            let m = m.expect("member");
            bytes[m.offset as usize..(m.offset + m.size) as usize].to_vec()
        };
        HashMap::from([
            ("pickle", data(found.pickle)),
            ("tensors", data(found.tensors)),
            ("storages", data(found.storages)),
        ])
    }

    fn tensor<'a>(graph: &Graph, root: NodeId, scan: &'a Scan, key: &str) -> &'a TensorRef {
        let node = graph.lookup(root, key).expect("key");
        scan.tensor_at(node).expect("tensor")
    }

    /// `(key, dtype, shape, stride, storage_offset, storage nbytes)`.
    type Fact = (
        &'static str,
        DType,
        &'static [u64],
        &'static [i64],
        u64,
        u64,
    );

    /// Facts torch 2.13 reports for the fixture (`torch.load(..., weights_only=False)`).
    const TORCH_FACTS: [Fact; 4] = [
        ("weight", DType::Float32, &[4, 3], &[3, 1], 0, 48),
        ("bias_view", DType::Float32, &[4], &[1], 2, 40),
        ("strided", DType::Float32, &[2, 2], &[1, 2], 6, 40),
        ("steps", DType::Int64, &[3], &[1], 0, 24),
    ];

    fn check_fixture_facts(ckpt: &TarCheckpoint) {
        let scan = scan(&ckpt.graph, ckpt.root).expect("scan");
        assert_eq!(scan.tensors.len(), 4);
        let storages = scan.unique_storages();
        assert_eq!(storages.len(), 3);
        let total: u64 = storages.iter().map(|s| s.nbytes().expect("nbytes")).sum();
        assert_eq!(total, 112);
        for (key, dtype, shape, stride, offset, nbytes) in TORCH_FACTS {
            let t = tensor(&ckpt.graph, ckpt.root, &scan, key);
            assert_eq!(t.dtype, dtype, "{key}");
            assert_eq!(t.shape, shape, "{key}");
            assert_eq!(t.stride, stride, "{key}");
            assert_eq!(t.offset, offset, "{key}");
            assert_eq!(t.storage.nbytes(), Some(nbytes), "{key}");
            assert_eq!(t.storage.location, "cpu");
            assert_eq!(ckpt.records[&t.storage.key].nbytes, nbytes, "{key}");
        }
        let shared = |k| tensor(&ckpt.graph, ckpt.root, &scan, k).storage.key.clone();
        assert_eq!(shared("bias_view"), shared("strided"));
        assert_eq!(
            ckpt.graph
                .lookup(ckpt.root, "epoch")
                .map(|e| ckpt.graph.int(e)),
            Some(Some(3))
        );
    }

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
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/tar_pre2017.pth");
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
        let storages = last.storages.expect("storages");
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

    #[test]
    fn pax_and_gnu_long_name_headers_are_followed() {
        let m = fixture_members();
        let tar = build_tar(&[
            ("pax_global_header", b'g', pax("comment", "hello")),
            ("PaxHeaders/sys_info", b'x', pax("mtime", "1483228800.5")),
            ("sys_info", b'0', b"\x80\x02}q\x00.".to_vec()),
            ("PaxHeaders/x", b'x', pax("path", "pickle")),
            ("a-name-the-pax-header-replaces", b'0', m["pickle"].clone()),
            ("././@LongLink", b'L', b"tensors\0".to_vec()),
            ("tensor", b'0', m["tensors"].clone()),
            (
                "PaxHeaders/storages",
                b'x',
                [
                    pax("size", &m["storages"].len().to_string()),
                    pax("uname", "x"),
                ]
                .concat(),
            ),
            ("storages", b'0', m["storages"].clone()),
        ]);
        let ckpt = parse_bytes(&tar).expect("parse");
        check_fixture_facts(&ckpt);
    }

    #[test]
    fn the_last_member_of_a_name_wins_and_members_must_be_regular() {
        let m = fixture_members();
        let mut members = vec![
            ("pickle", b'0', b"garbage".to_vec()),
            ("pickle", b'0', m["pickle"].clone()),
            ("tensors", b'0', m["tensors"].clone()),
            ("storages", b'0', m["storages"].clone()),
        ];
        check_fixture_facts(&parse_bytes(&build_tar(&members)).expect("parse"));
        members.push(("pickle", b'5', Vec::new()));
        let err = parse_bytes(&build_tar(&members))
            .expect_err("directory")
            .to_string();
        assert!(err.contains("not a regular file"), "{err}");
        members.truncate(2);
        let err = parse_bytes(&build_tar(&members))
            .expect_err("missing")
            .to_string();
        assert!(err.contains("no `storages` member"), "{err}");
    }

    #[test]
    fn a_bad_first_header_is_an_error() {
        let mut bytes = fixture();
        bytes[0] ^= 1;
        let err = parse_bytes(&bytes).expect_err("bad checksum").to_string();
        assert!(err.contains("bad checksum"), "{err}");
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
}
