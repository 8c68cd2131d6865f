//! The safetensors format, read and written here only.
//!
//! A file is an 8-byte little-endian header length, a JSON header, then the tensor bytes. The
//! header maps `__metadata__` to a string map and every tensor's name to its dtype, shape and
//! `data_offsets` (a byte range counted from the end of the header); the ranges tile the data
//! from 0 with no gap. Headers are parsed and checked with the `safetensors` crate's own
//! types ([`Metadata`], [`TensorInfo`], [`Dtype`]) and written as its serializer lays them
//! out: tensors by descending dtype alignment, then by name, header padded with spaces to a
//! multiple of 8 bytes. Tensor bytes are never held here: callers stream them.

use std::collections::{BTreeMap, HashSet};
use std::io::{self, Read, Seek, SeekFrom};

use ::safetensors::tensor::{Dtype, Metadata, TensorInfo};

use super::DType;

/// The largest header the `safetensors` readers accept.
pub const MAX_HEADER_BYTES: usize = 100_000_000;

/// Whether `head` (a file's first bytes) starts like a safetensors file: an 8-byte
/// little-endian header length below 2⁴⁰, then a JSON object.
pub fn looks_like(head: &[u8]) -> bool {
    head.len() > 8 && head[8] == b'{' && head[..8].iter().skip(5).all(|&b| b == 0)
}

/// The safetensors dtype holding torch `dtype` bit for bit, if there is one.
pub fn dtype(dtype: DType) -> Option<Dtype> {
    Some(match dtype {
        DType::Float64 => Dtype::F64,
        DType::Float32 => Dtype::F32,
        DType::Float16 => Dtype::F16,
        DType::BFloat16 => Dtype::BF16,
        DType::Int64 => Dtype::I64,
        DType::Int32 => Dtype::I32,
        DType::Int16 => Dtype::I16,
        DType::Int8 => Dtype::I8,
        DType::UInt8 => Dtype::U8,
        DType::UInt16 => Dtype::U16,
        DType::UInt32 => Dtype::U32,
        DType::UInt64 => Dtype::U64,
        DType::Bool => Dtype::BOOL,
        DType::Complex64 => Dtype::C64,
        DType::Float8E5M2 => Dtype::F8_E5M2,
        DType::Float8E4M3Fn => Dtype::F8_E4M3,
        DType::Float8E5M2Fnuz => Dtype::F8_E5M2FNUZ,
        DType::Float8E4M3Fnuz => Dtype::F8_E4M3FNUZ,
        DType::Float8E8M0Fnu => Dtype::F8_E8M0,
        _ => return None,
    })
}

/// The torch dtype a safetensors `dtype` holds, if torch has one ([`dtype`] reversed).
pub fn torch_dtype(dtype: Dtype) -> Option<DType> {
    DType::all().find(|&d| self::dtype(d) == Some(dtype))
}

/// Why a file's header could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// Fewer than 8 bytes.
    #[error("the safetensors file is truncated")]
    Truncated,
    /// The length prefix is over the limit or past the end of the file.
    #[error("the safetensors header claims {0} bytes, more than the file or the {MAX_HEADER_BYTES}-byte limit allow")]
    Length(u64),
    /// The header is not what the `safetensors` crate accepts (JSON, dtypes, offsets).
    #[error("the safetensors header is invalid: {0}")]
    Invalid(serde_json::Error),
    /// Reading failed.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
}

/// A file's header, read and checked by the `safetensors` crate: offsets contiguous from 0,
/// each range the size its dtype and shape give. Whether the data fits the file is the
/// caller's check ([`Header::data_start`], [`Header::data_len`]).
#[derive(Debug)]
pub struct Header {
    /// Bytes of the JSON header, padding included.
    pub len: u64,
    /// The parsed header.
    pub metadata: Metadata,
}

impl Header {
    /// Reads the header of the file `r` of `file_len` bytes, from its start.
    pub fn read<R: Read + Seek + ?Sized>(r: &mut R, file_len: u64) -> Result<Header, ReadError> {
        r.seek(SeekFrom::Start(0))?;
        let mut prefix = [0u8; 8];
        r.read_exact(&mut prefix)
            .map_err(|_| ReadError::Truncated)?;
        let len = u64::from_le_bytes(prefix);
        if len > MAX_HEADER_BYTES as u64 || len > file_len.saturating_sub(8) {
            return Err(ReadError::Length(len));
        }
        // In bounds: at most MAX_HEADER_BYTES, checked above.
        let mut header = vec![0u8; len as usize];
        r.read_exact(&mut header)?;
        let metadata = serde_json::from_slice(&header).map_err(ReadError::Invalid)?;
        Ok(Header { len, metadata })
    }

    /// The offset in the file where the data (offset 0 of every `data_offsets`) starts.
    pub fn data_start(&self) -> u64 {
        8 + self.len
    }

    /// Bytes of data the header describes.
    pub fn data_len(&self) -> u64 {
        self.metadata.data_len() as u64
    }

    /// The tensors in file order, with their header entries.
    pub fn tensors(&self) -> Vec<(String, &TensorInfo)> {
        self.metadata
            .offset_keys()
            .into_iter()
            .filter_map(|name| {
                let info = self.metadata.info(&name)?;
                Some((name, info))
            })
            .collect()
    }
}

/// One tensor of a file to write, as its header entry describes it.
pub struct Described<'a> {
    /// Its name (unique in the file).
    pub name: &'a str,
    /// Its dtype.
    pub dtype: Dtype,
    /// Its shape.
    pub shape: &'a [u64],
}

/// A tensor [`lay_out`] places: how its header entry describes it.
pub trait Describe {
    /// Its name, dtype and shape.
    fn described(&self) -> Described<'_>;
}

/// Why a header could not be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// A tensor's byte size or a dimension does not fit this machine's `usize`, or the data
    /// would pass it.
    #[error("`{0}` is too large")]
    TooLarge(String),
    /// Two tensors share a name.
    #[error("two tensors are named `{0}`")]
    Duplicate(String),
    /// The `safetensors` crate refused the header, or it could not be serialized.
    #[error("safetensors header: {0}")]
    Invalid(String),
    /// The header is longer than readers accept.
    #[error("the safetensors header would be {0} bytes, over the 100 MB readers accept")]
    HeaderTooLarge(usize),
}

/// Sorts `tensors` into file order (descending dtype alignment, then name, as the
/// `safetensors` serializer orders them) and returns the file's first bytes: the 8-byte
/// length and the padded header describing them, with the string `metadata`. The tensor
/// bytes are then written in the order `tensors` is left in, each row-major, little-endian.
///
/// The same JSON as the `safetensors` crate writes (`__metadata__` first, then the tensors in
/// file order), except that the metadata's keys are sorted: the crate takes them as a
/// `HashMap`, whose order changes from run to run, so the same input would give files with
/// different bytes (and SHA-256) whenever there is more than one key, as with aliases.
pub fn lay_out<T: Describe>(
    tensors: &mut [T],
    metadata: BTreeMap<String, String>,
) -> Result<Vec<u8>, WriteError> {
    tensors.sort_by(|a, b| {
        let (a, b) = (a.described(), b.described());
        b.dtype.cmp(&a.dtype).then_with(|| a.name.cmp(b.name))
    });
    let mut infos = Vec::with_capacity(tensors.len());
    let mut offset = 0usize;
    let mut seen = HashSet::new();
    for t in tensors.iter() {
        let t = t.described();
        if !seen.insert(t.name) {
            return Err(WriteError::Duplicate(t.name.to_owned()));
        }
        let too_big = || WriteError::TooLarge(t.name.to_owned());
        let shape: Vec<usize> = t
            .shape
            .iter()
            .map(|&d| usize::try_from(d).map_err(|_| too_big()))
            .collect::<Result<_, _>>()?;
        let len = if shape.contains(&0) {
            0
        } else {
            shape
                .iter()
                .try_fold(t.dtype.bitsize() / 8, |n, &d| n.checked_mul(d))
                .ok_or_else(too_big)?
        };
        let end = offset.checked_add(len).ok_or_else(too_big)?;
        infos.push((
            t.name.to_owned(),
            TensorInfo {
                dtype: t.dtype,
                shape,
                data_offsets: (offset, end),
            },
        ));
        offset = end;
    }
    head(infos, metadata)
}

/// The length prefix and padded header for tensors laid out as `infos` says (in file order,
/// offsets from the end of the header) and the given string `metadata`.
fn head(
    infos: Vec<(String, TensorInfo)>,
    metadata: BTreeMap<String, String>,
) -> Result<Vec<u8>, WriteError> {
    // The crate's checks: names unique, offsets contiguous from 0, sizes matching shapes.
    Metadata::new(Some(metadata.clone().into_iter().collect()), infos.clone())
        .map_err(|e| WriteError::Invalid(e.to_string()))?;
    let json = HeaderJson {
        metadata: &metadata,
        tensors: &infos,
    };
    let mut header = serde_json::to_vec(&json).map_err(|e| WriteError::Invalid(e.to_string()))?;
    header.resize(header.len().next_multiple_of(8), b' ');
    if header.len() > MAX_HEADER_BYTES {
        return Err(WriteError::HeaderTooLarge(header.len()));
    }
    let mut bytes = Vec::with_capacity(8 + header.len());
    bytes.extend_from_slice(&(header.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&header);
    Ok(bytes)
}

/// The header's JSON object, in the order [`lay_out`] describes.
struct HeaderJson<'a> {
    metadata: &'a BTreeMap<String, String>,
    tensors: &'a [(String, TensorInfo)],
}

impl serde::Serialize for HeaderJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.tensors.len() + 1))?;
        map.serialize_entry("__metadata__", self.metadata)?;
        for (name, info) in self.tensors {
            map.serialize_entry(name, info)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use super::*;

    impl Describe for (&str, Dtype, Vec<u64>) {
        fn described(&self) -> Described<'_> {
            Described {
                name: self.0,
                dtype: self.1,
                shape: &self.2,
            }
        }
    }

    #[test]
    fn header_bytes_are_the_same_every_time_metadata_sorted_tensors_in_file_order() {
        let metadata: BTreeMap<String, String> = ["e", "b", "format", "d", "c"]
            .iter()
            .map(|k| {
                (
                    k.to_string(),
                    if *k == "format" { "pt" } else { "a" }.into(),
                )
            })
            .collect();
        // File order, not name order: wider dtypes first, so `z` comes first in the file.
        let mut tensors = vec![
            ("a", Dtype::F16, vec![8]),
            ("z", Dtype::F32, vec![2]),
            ("e", Dtype::F16, vec![0, 3]),
        ];
        let bytes = lay_out(&mut tensors, metadata).unwrap();
        let len = u64::from_le_bytes(bytes[..8].try_into().unwrap());
        assert_eq!(len as usize, bytes.len() - 8);
        assert_eq!(len % 8, 0);
        let text = std::str::from_utf8(&bytes[8..]).unwrap().trim_end();
        assert_eq!(
            text,
            r#"{"__metadata__":{"b":"a","c":"a","d":"a","e":"a","format":"pt"},"#.to_owned()
                + r#""z":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"#
                + r#""a":{"dtype":"F16","shape":[8],"data_offsets":[8,24]},"#
                + r#""e":{"dtype":"F16","shape":[0,3],"data_offsets":[24,24]}}"#
        );
        let names: Vec<&str> = tensors.iter().map(|t| t.0).collect();
        assert_eq!(names, ["z", "a", "e"]);
    }

    #[test]
    fn a_written_header_reads_back_with_its_tensors_in_file_order() {
        let mut tensors = vec![("b", Dtype::I64, vec![1]), ("a", Dtype::I64, vec![2])];
        let mut file = lay_out(&mut tensors, BTreeMap::new()).unwrap();
        file.extend_from_slice(&[0; 24]);
        let len = file.len() as u64;
        let header = Header::read(&mut Cursor::new(&file), len).unwrap();
        assert_eq!(header.data_start() + header.data_len(), len);
        let names: Vec<String> = header.tensors().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(looks_like(&file));
    }

    #[test]
    fn duplicate_names_and_impossible_sizes_are_refused_by_name() {
        let mut twice = vec![("a", Dtype::F32, vec![1]), ("a", Dtype::F32, vec![1])];
        let err = lay_out(&mut twice, BTreeMap::new()).unwrap_err();
        assert_eq!(err.to_string(), "two tensors are named `a`");
        let mut huge = vec![("h", Dtype::F32, vec![u64::MAX / 2, 3])];
        let err = lay_out(&mut huge, BTreeMap::new()).unwrap_err();
        assert_eq!(err.to_string(), "`h` is too large");
    }

    #[test]
    fn headers_past_the_file_or_not_json_are_refused() {
        let mut file = 64u64.to_le_bytes().to_vec();
        file.extend_from_slice(b"{}");
        let len = file.len() as u64;
        let err = Header::read(&mut Cursor::new(&file), len).unwrap_err();
        assert!(matches!(err, ReadError::Length(64)), "{err}");
        let mut file = 8u64.to_le_bytes().to_vec();
        file.extend_from_slice(b"not json");
        let err = Header::read(&mut Cursor::new(&file), 16).unwrap_err();
        assert!(matches!(err, ReadError::Invalid(_)), "{err}");
        let err = Header::read(&mut Cursor::new(&[1u8, 2]), 2).unwrap_err();
        assert!(matches!(err, ReadError::Truncated), "{err}");
        assert!(!looks_like(b"PK\x03\x04\x14\x00\x00\x00\x00\x00"));
    }

    #[test]
    fn every_dtype_safetensors_holds_maps_back_to_itself() {
        for d in DType::all() {
            if let Some(st) = dtype(d) {
                assert_eq!(torch_dtype(st), Some(d));
                assert_eq!(st.bitsize(), 8 * d.element_size(), "{d}");
            }
        }
    }
}
