//! One stored item of a `.distcp` file: a `torch.save` zip written at a byte range.
//!
//! DCP's default (`torch_save`) format writes every tensor chunk and every non-tensor value
//! with `torch.save` into the rank's file, one after another; `_StorageInfo` gives each its
//! `offset` and `length`. Offsets inside the zip are relative to the item's start. Only the
//! central directory, local headers and `data.pkl` are read here; tensor bytes stay in place.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};

use crate::torch::contiguous::is_contiguous;
use crate::torch::tensor::scan;
use crate::torch::zip_dir::read_directory;
use crate::torch::zip_read::{local_mismatch, read_local_header};
use crate::torch::DType;
use ckpt_pickle::{self as pickle, Graph, NodeId, Value};

use super::DcpError;

/// The largest `data.pkl` of one item: a tensor's is a few hundred bytes, a pickled value
/// (optimizer hyper-parameters, a step counter) rarely more than a few KiB.
pub const MAX_ITEM_PICKLE: u64 = 64 << 20;

/// The most records one item's zip may hold (torch writes six or seven).
const MAX_ITEM_RECORDS: usize = 64;

/// A read-only window `[start, start + len)` of a file, seekable within itself.
pub struct FileSlice<'a> {
    file: &'a File,
    start: u64,
    len: u64,
    pos: u64,
}

impl<'a> FileSlice<'a> {
    pub fn new(file: &'a File, start: u64, len: u64) -> Self {
        FileSlice {
            file,
            start,
            len,
            pos: 0,
        }
    }
}

impl Read for FileSlice<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.len.saturating_sub(self.pos);
        let want = (buf.len() as u64).min(left) as usize;
        if want == 0 {
            return Ok(0);
        }
        let n = std::os::unix::fs::FileExt::read_at(
            self.file,
            &mut buf[..want],
            self.start + self.pos,
        )?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for FileSlice<'_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        let target = target
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek out of range"))?;
        self.pos = target;
        Ok(target)
    }
}

/// A decoded item: its `data.pkl` and where its single storage's bytes are.
pub struct Item {
    pub graph: Graph,
    pub root: NodeId,
    /// `(key, absolute file offset, length, CRC-32)` of each stored `data/<key>` record.
    pub records: Vec<(String, u64, u64, u32)>,
    /// Whether the zip says its storages are big-endian.
    pub big_endian: bool,
}

fn bad(what: impl Into<String>) -> DcpError {
    DcpError::Item { what: what.into() }
}

/// Reads the zip at `[start, start + len)` of `file` (already checked to lie inside it).
pub fn read(file: &File, start: u64, len: u64) -> Result<Item, DcpError> {
    let mut slice = FileSlice::new(file, start, len);
    let mut magic = [0u8; 4];
    if slice.read_exact(&mut magic).is_err() || &magic != b"PK\x03\x04" {
        return Err(bad(
            "the stored item is not a torch.save zip (it does not start with a zip header)",
        ));
    }
    let directory = read_directory(&mut slice, len).map_err(|e| bad(e.to_string()))?;
    if directory.entries.len() > MAX_ITEM_RECORDS {
        return Err(bad(format!(
            "its zip holds {} records, more than {MAX_ITEM_RECORDS}",
            directory.entries.len()
        )));
    }
    let mut pickle_bytes = None;
    let mut records = Vec::new();
    let mut big_endian = false;
    for entry in &directory.entries {
        let name = String::from_utf8_lossy(&entry.name).into_owned();
        let Some((_, rel)) = name.split_once('/') else {
            return Err(bad(format!(
                "entry `{name}` is not under an archive folder"
            )));
        };
        if entry.is_dir {
            continue;
        }
        if entry.method != 0 || entry.flags & 0x1 != 0 {
            return Err(bad(format!(
                "record `{rel}` is compressed; torch.save stores records"
            )));
        }
        let size = entry.size;
        let crc32 = entry.crc32;
        let header_offset = entry.header_offset;
        let local = read_local_header(&mut slice, header_offset, len)
            .map_err(|e| bad(format!("record `{rel}`: {e}")))?;
        if let Some(detail) = local_mismatch(&local, &entry.name, size, entry.compressed_size) {
            return Err(bad(format!("record `{rel}`: {detail}")));
        }
        if local
            .data_offset
            .checked_add(size)
            .is_none_or(|end| end > len)
        {
            return Err(bad(format!("record `{rel}` runs past the end of the item")));
        }
        if rel == "data.pkl" {
            if size > MAX_ITEM_PICKLE {
                return Err(bad(format!(
                    "its data.pkl is {size} bytes, more than the {MAX_ITEM_PICKLE}-byte limit"
                )));
            }
            let mut bytes = vec![0u8; size as usize];
            slice.seek(SeekFrom::Start(local.data_offset))?;
            slice.read_exact(&mut bytes)?;
            pickle_bytes = Some(bytes);
        } else if rel == "byteorder" {
            let mut bytes = Vec::new();
            slice.seek(SeekFrom::Start(local.data_offset))?;
            (&mut slice).take(size.min(16)).read_to_end(&mut bytes)?;
            big_endian = bytes == b"big";
        } else if let Some(key) = rel.strip_prefix("data/") {
            records.push((key.to_owned(), start + local.data_offset, size, crc32));
        }
    }
    let bytes = pickle_bytes.ok_or_else(|| bad("the stored item has no data.pkl"))?;
    let decoded = pickle::read(&bytes).map_err(|e| bad(format!("data.pkl: {e}")))?;
    Ok(Item {
        graph: decoded.graph,
        root: decoded.root,
        records,
        big_endian,
    })
}

/// Where a chunk's elements are: C-contiguous, `numel × element size` bytes from `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkBytes {
    pub offset: u64,
    pub len: u64,
    /// The CRC-32 its zip records for these bytes, when they are its whole storage record
    /// (as DCP writes a chunk: a fresh contiguous tensor) and the CRC was computed (torch
    /// writes 0 when told not to compute it).
    pub crc32: Option<u32>,
}

/// Reads the item of one tensor chunk and checks it is what the metadata says: one dense,
/// little-endian, C-contiguous tensor of `dtype` and `sizes` whose bytes lie in its record.
pub fn chunk_bytes(
    file: &File,
    start: u64,
    len: u64,
    dtype: DType,
    sizes: &[u64],
) -> Result<ChunkBytes, DcpError> {
    let item = read(file, start, len)?;
    if item.big_endian {
        return Err(DcpError::Unsupported {
            what: "big-endian chunk storages".into(),
        });
    }
    let found = scan(&item.graph, item.root).map_err(|e| bad(format!("data.pkl: {e}")))?;
    let tensor = match found.tensors.as_slice() {
        [one] if one.node == item.root || found.parameters.get(&item.root) == Some(&one.node) => {
            one
        }
        _ => return Err(bad("the stored item is not one tensor")),
    };
    if tensor.dtype != dtype {
        return Err(bad(format!(
            "the chunk is {}, the metadata says {dtype}",
            tensor.dtype
        )));
    }
    if tensor.shape != sizes {
        return Err(bad(format!(
            "the chunk has shape {:?}, the metadata says {sizes:?}",
            tensor.shape
        )));
    }
    let strides: Option<Vec<u64>> = tensor
        .stride
        .iter()
        .map(|&s| u64::try_from(s).ok())
        .collect();
    if !strides.is_some_and(|s| is_contiguous(&tensor.shape, &s)) {
        return Err(DcpError::Unsupported {
            what: "a chunk saved as a non-contiguous view".into(),
        });
    }
    let (_, record_offset, record_len, record_crc) = item
        .records
        .iter()
        .find(|(key, _, _, _)| *key == tensor.storage.key)
        .ok_or_else(|| {
            bad(format!(
                "storage record data/{} is missing",
                tensor.storage.key
            ))
        })?;
    let element = dtype.element_size() as u64;
    let overflow = || bad("the chunk's byte size overflows");
    let offset = tensor.offset.checked_mul(element).ok_or_else(overflow)?;
    let bytes = tensor.numel().checked_mul(element).ok_or_else(overflow)?;
    if offset
        .checked_add(bytes)
        .is_none_or(|end| end > *record_len)
    {
        return Err(bad(format!(
            "the chunk's {bytes} bytes at element offset {} run past its {record_len}-byte storage record",
            tensor.offset
        )));
    }
    let whole = offset == 0 && bytes == *record_len;
    Ok(ChunkBytes {
        offset: record_offset + offset,
        len: bytes,
        crc32: (whole && *record_crc != 0).then_some(*record_crc),
    })
}

/// Reads the item of a non-tensor value: its pickle graph. Values holding tensors or
/// storages are refused (DCP stores tensors as chunks, never inside a value).
pub fn value(file: &File, start: u64, len: u64) -> Result<(Graph, NodeId), DcpError> {
    let item = read(file, start, len)?;
    let holds_storage = item
        .graph
        .values()
        .any(|v| matches!(v, Value::PersistentId(_)));
    if holds_storage || !item.records.is_empty() {
        return Err(DcpError::Unsupported {
            what: "a non-tensor value that holds tensors".into(),
        });
    }
    Ok((item.graph, item.root))
}
