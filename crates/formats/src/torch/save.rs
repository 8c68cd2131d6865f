//! Writing a checkpoint: a (transformed) graph plus the source's storage bytes, through a
//! temporary file that is fsynced and renamed into place, so an error or a kill never leaves
//! a partial output. A [`StoragePlan`] says which storages are re-encoded to another dtype on
//! the way (streamed in fixed-size chunks); every other storage is copied byte for byte.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;

use ckpt_pickle::{self as pickle, Graph, NodeId, Value, MAX_DEPTH};

use super::checkpoint::{Checkpoint, Format};
use super::dtype::DType;
use super::legacy;
use super::tensor::{scan, Rebuild, StorageKey};
use super::zip_write::{TorchZipWriter, DEFAULT_ALIGNMENT};
use super::TorchError;

/// The container to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFormat {
    /// torch ≥ 1.6 zip, laid out as torch 2.13 writes it.
    Zip,
    /// The legacy stream, readable by torch ≤ 1.5.
    Legacy,
}

impl OutputFormat {
    /// The same container as the input (TorchScript archives cannot be rewritten).
    pub fn same_as(format: Format) -> Result<OutputFormat, TorchError> {
        match format {
            Format::Zip => Ok(OutputFormat::Zip),
            Format::Legacy => Ok(OutputFormat::Legacy),
            Format::TorchScript => Err(TorchError::Unsupported {
                what: "rewriting TorchScript archives".into(),
            }),
            Format::Tar => Err(TorchError::Unsupported {
                what: "rewriting the pre-2017 tar format; convert it to zip".into(),
            }),
        }
    }
}

/// A storage re-encoded elementwise from one floating-point dtype to another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cast {
    pub from: DType,
    pub to: DType,
}

impl Cast {
    /// Whether the writer can re-encode between these dtypes: float64, float32, float16 and
    /// bfloat16, in any direction.
    pub fn is_supported(self) -> bool {
        codec::supports(self.from) && codec::supports(self.to)
    }
}

/// What the writer does with each output storage: copy input record `K` unchanged (the
/// default for every key not named), cast record `K` from one dtype to another, or write a
/// new record `K` from bytes held in memory (values that were not tensors in the input, such
/// as numpy arrays made tensors by the plain rewrite).
///
/// Invariant (checked by [`save`] before anything is written): a cast storage's type in the
/// output graph is `to`, its type in the input is `from`, and the input is little-endian; a
/// new storage's key is no input storage the output references, and its bytes are whole
/// little-endian elements of its type.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoragePlan {
    casts: BTreeMap<StorageKey, Cast>,
    new: BTreeMap<StorageKey, Vec<u8>>,
}

impl StoragePlan {
    /// Every storage copied byte for byte.
    pub fn copy_all() -> Self {
        StoragePlan::default()
    }

    /// Re-encode storage `key` from `from` to `to`.
    pub fn cast(&mut self, key: &str, from: DType, to: DType) {
        self.casts.insert(key.to_owned(), Cast { from, to });
    }

    /// The cast planned for storage `key`, if any.
    pub fn cast_of(&self, key: &str) -> Option<Cast> {
        self.casts.get(key).copied()
    }

    /// Number of storages to re-encode.
    pub fn len(&self) -> usize {
        self.casts.len()
    }

    /// Whether every output storage is an input record copied unchanged: nothing is cast and
    /// nothing new is written.
    pub fn is_empty(&self) -> bool {
        self.casts.is_empty() && self.new.is_empty()
    }

    /// Write a new storage `key` holding `bytes` (little-endian elements of the type the
    /// graph gives it).
    pub fn add_new(&mut self, key: &str, bytes: Vec<u8>) {
        self.new.insert(key.to_owned(), bytes);
    }

    /// The bytes of new storage `key`, if it is one.
    pub fn new_bytes(&self, key: &str) -> Option<&[u8]> {
        self.new.get(key).map(Vec::as_slice)
    }

    /// Number of new storages.
    pub fn new_storages(&self) -> usize {
        self.new.len()
    }
}

/// One storage of the output, in first-encounter order.
struct OutStorage<'p> {
    key: StorageKey,
    /// Bytes per element in the output.
    element_size: u64,
    cast: Option<Cast>,
    /// The bytes of a new storage (not an input record).
    new: Option<&'p [u8]>,
}

/// Writes `graph` (rooted at `root`) with the storages it references, taken from `source`
/// as `plan` says, to `out`. `graph` must reference only storages `source` holds. Every check
/// (container limits, the plan) happens before the output is created.
pub fn save(
    source: &mut Checkpoint,
    mut graph: Graph,
    root: NodeId,
    format: OutputFormat,
    out: &Path,
    plan: &StoragePlan,
) -> Result<(), TorchError> {
    shape_storage_ids(&mut graph, root, format)?;
    let scan = scan(&graph, root)?;
    let storages: Vec<OutStorage> = scan
        .unique_storages()
        .into_iter()
        .map(|s| OutStorage {
            key: s.key.clone(),
            element_size: s.dtype.map_or(1, |d| d.element_size()) as u64,
            cast: plan.cast_of(&s.key),
            new: plan.new_bytes(&s.key),
        })
        .collect();
    for storage in &storages {
        if let Some(bytes) = storage.new {
            if storage.cast.is_some() || source.storage_bytes(&storage.key).is_ok() {
                return Err(TorchError::Output {
                    what: format!(
                        "new storage `{}` collides with an input storage or a cast",
                        storage.key
                    ),
                });
            }
            if !(bytes.len() as u64).is_multiple_of(storage.element_size) {
                return Err(TorchError::Output {
                    what: format!(
                        "new storage `{}` holds {} bytes, not whole elements",
                        storage.key,
                        bytes.len()
                    ),
                });
            }
            continue;
        }
        source.storage_bytes(&storage.key)?;
        if let Some(cast) = storage.cast {
            check_cast(source, &scan, &storage.key, cast)?;
        }
    }
    let pickle = pickle::write(&graph, root)?;

    ckpt_base::atomic_file::drop_replaced_cache(out, source.source_file());
    ckpt_base::atomic_file::write_atomically(out, |file| match format {
        OutputFormat::Zip => write_zip(source, &pickle, &storages, out, file),
        OutputFormat::Legacy => write_legacy(source, &pickle, storages, file),
    })?;
    Ok(())
}

/// Refuses a planned cast the writer cannot carry out faithfully.
fn check_cast(
    source: &Checkpoint,
    output: &super::Scan,
    key: &str,
    cast: Cast,
) -> Result<(), TorchError> {
    let refuse = |why: String| TorchError::Output {
        what: format!(
            "cannot cast storage `{key}` from {} to {}: {why}",
            cast.from, cast.to
        ),
    };
    if !cast.is_supported() {
        return Err(refuse(
            "only float64, float32, float16 and bfloat16 can be cast".into(),
        ));
    }
    if source.zip.as_ref().and_then(|m| m.byteorder.as_deref()) == Some("big") {
        return Err(refuse("the input's storages are big-endian".into()));
    }
    let input_dtype = source
        .scan
        .storages
        .iter()
        .find(|s| s.key == key)
        .and_then(|s| s.dtype);
    if input_dtype != Some(cast.from) {
        return Err(refuse(format!(
            "the input storage is {}",
            input_dtype.map_or("untyped".to_string(), |d| d.to_string())
        )));
    }
    let output_dtype = output
        .storages
        .iter()
        .find(|s| s.key == key)
        .and_then(|s| s.dtype);
    if output_dtype != Some(cast.to) {
        return Err(refuse(
            "the output graph does not give it the target type".into(),
        ));
    }
    let len = source.storage_bytes(key)?.len;
    if len % cast.from.element_size() as u64 != 0 {
        return Err(refuse(format!("its {len} bytes are not whole elements")));
    }
    Ok(())
}

/// Bytes a storage of `input_len` bytes takes after `cast`.
fn cast_len(input_len: u64, cast: Cast) -> u64 {
    input_len / cast.from.element_size() as u64 * cast.to.element_size() as u64
}

/// Gives every storage id the field count its container expects: five in a zip
/// `('storage', type, key, location, numel)`, six in the legacy stream (plus `view_metadata`).
/// Refuses what the legacy stream cannot hold.
fn shape_storage_ids(
    graph: &mut Graph,
    root: NodeId,
    format: OutputFormat,
) -> Result<(), TorchError> {
    let found = scan(graph, root)?;
    if format == OutputFormat::Legacy {
        if let Some(t) = found
            .tensors
            .iter()
            .find(|t| t.rebuild == Rebuild::V3 || !t.dtype.is_legacy())
        {
            let at = key_path(graph, root, t.node)
                .map(|path| format!(" `{path}`"))
                .unwrap_or_default();
            return Err(TorchError::Output {
                what: format!(
                    "cannot write the {dtype} tensor{at} in the legacy format: torch ≤ 1.5 has no {dtype} dtype (keep the zip format)",
                    dtype = t.dtype
                ),
            });
        }
        if found.storages.iter().any(|s| s.dtype.is_none()) {
            return Err(TorchError::Unsupported {
                what: "untyped storages in the legacy format".into(),
            });
        }
    }
    for storage in &found.storages {
        let Some(items) = graph.tuple(storage.tuple).map(<[NodeId]>::to_vec) else {
            continue;
        };
        match (format, items.len()) {
            (OutputFormat::Zip, 6) => {
                if !matches!(graph.get(items[5]), Value::None) {
                    return Err(TorchError::Unsupported {
                        what: format!(
                            "storage `{}` is a pre-1.0 storage view, which the zip format cannot express",
                            storage.key
                        ),
                    });
                }
                graph.set(storage.tuple, Value::Tuple(items[..5].to_vec()));
            }
            (OutputFormat::Legacy, 5) => {
                let none = graph.add(Value::None);
                let mut six = items;
                six.push(none);
                graph.set(storage.tuple, Value::Tuple(six));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The key path (`state_dict/fc.weight`, list items by index) from `root` to `target`, for
/// messages. Wrapper objects (a Parameter around a tensor) add no segment.
fn key_path(graph: &Graph, root: NodeId, target: NodeId) -> Option<String> {
    fn walk(
        graph: &Graph,
        node: NodeId,
        target: NodeId,
        path: &mut Vec<String>,
        seen: &mut HashSet<NodeId>,
    ) -> bool {
        if node == target {
            return true;
        }
        if path.len() > MAX_DEPTH || !seen.insert(node) {
            return false;
        }
        let labelled: Vec<(Option<String>, NodeId)> = match graph.get(node) {
            Value::List(items) | Value::Tuple(items) => items
                .iter()
                .enumerate()
                .map(|(i, &v)| (Some(i.to_string()), v))
                .collect(),
            _ => match graph.mapping(node) {
                Some(pairs) => pairs
                    .iter()
                    .map(|&(k, v)| {
                        let label = match graph.get(k) {
                            Value::Str(s) => s.clone(),
                            Value::Int(i) => i.to_string(),
                            other => format!("<{}>", other.kind()),
                        };
                        (Some(label), v)
                    })
                    .collect(),
                None => graph
                    .get(node)
                    .children()
                    .into_iter()
                    .map(|c| (None, c))
                    .collect(),
            },
        };
        for (label, child) in labelled {
            let pushed = label.map(|l| path.push(l)).is_some();
            if walk(graph, child, target, path, seen) {
                return true;
            }
            if pushed {
                path.pop();
            }
        }
        false
    }
    let mut path = Vec::new();
    walk(graph, root, target, &mut path, &mut HashSet::new()).then(|| path.join("/"))
}

/// The archive folder torch derives from an output path: the file name cut at its last `.`,
/// or `archive` when that is empty or not ASCII.
fn archive_prefix(out: &Path) -> String {
    let name = out.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let stem = match name.rfind('.') {
        Some(i) => &name[..i],
        None => name,
    };
    if stem.is_empty() || !stem.is_ascii() || stem.contains('/') {
        "archive".to_owned()
    } else {
        stem.to_owned()
    }
}

fn write_zip(
    source: &mut Checkpoint,
    pickle: &[u8],
    storages: &[OutStorage<'_>],
    out: &Path,
    file: &mut File,
) -> Result<(), TorchError> {
    let meta = source.zip.clone().unwrap_or_default();
    let alignment = meta.storage_alignment.unwrap_or(DEFAULT_ALIGNMENT);
    let byteorder = meta.byteorder.unwrap_or_else(|| "little".to_owned());
    let handle = file.try_clone()?;
    let mut writer = TorchZipWriter::new(handle, &archive_prefix(out), alignment);
    writer.add_bytes("data.pkl", pickle)?;
    writer.add_bytes(".format_version", b"1")?;
    writer.add_bytes(".storage_alignment", alignment.to_string().as_bytes())?;
    writer.add_bytes("byteorder", byteorder.as_bytes())?;
    for storage in storages {
        let name = format!("data/{}", storage.key);
        match (storage.new, storage.cast) {
            (Some(bytes), _) => writer.add_bytes(&name, bytes)?,
            (None, None) => source.copy_storage_to_zip(&storage.key, &mut writer, &name)?,
            (None, Some(cast)) => {
                // The CRC precedes the bytes in the writer's interface: one pass to compute
                // it, one to write, both streamed, so memory stays at two chunks.
                let len = cast_len(source.storage_bytes(&storage.key)?.len, cast);
                let crc = source.read_storage(&storage.key, |input| {
                    let mut hasher = crc32fast::Hasher::new();
                    let mut reader = codec::CastReader::new(input, cast);
                    let mut chunk = vec![0u8; codec::CHUNK];
                    loop {
                        let n = reader.read(&mut chunk)?;
                        if n == 0 {
                            break Ok(hasher.finalize());
                        }
                        hasher.update(&chunk[..n]);
                    }
                })?;
                source.read_storage(&storage.key, |input| {
                    let mut reader = codec::CastReader::new(input, cast);
                    Ok(writer.add_stream(&name, &mut reader, len, crc)?)
                })?;
            }
        }
        start_writeback(file);
    }
    writer.add_bytes("version", b"3\n")?;
    writer.finish()?;
    Ok(())
}

/// Asks the kernel to start writing `file`'s dirty pages to disk now, without waiting for
/// them, so the final fsync overlaps with the copying instead of following it. Linux only
/// (`sync_file_range`); elsewhere the fsync before the rename does all the work.
#[cfg(target_os = "linux")]
pub fn start_writeback(file: &File) {
    use std::os::fd::AsRawFd;
    // SAFETY: sync_file_range takes only integers and a file descriptor that `file` keeps open
    // for the duration of the call; it touches no memory of ours. A failure only loses the
    // overlap: the fsync before the rename still makes the output durable.
    unsafe {
        libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
    }
}

/// No early writeback off Linux: the output is still made durable by the fsync before the
/// rename.
#[cfg(not(target_os = "linux"))]
pub(crate) fn start_writeback(_file: &File) {}

fn write_legacy(
    source: &mut Checkpoint,
    pickle: &[u8],
    mut storages: Vec<OutStorage<'_>>,
    file: &mut File,
) -> Result<(), TorchError> {
    if source.zip.as_ref().and_then(|m| m.byteorder.as_deref()) == Some("big") {
        return Err(TorchError::Unsupported {
            what: "big-endian storages in the legacy format (it is always little-endian)".into(),
        });
    }
    // torch writes the key list `sorted()` and the storages in that order.
    storages.sort_by(|a, b| a.key.cmp(&b.key));
    let keys: Vec<String> = storages.iter().map(|s| s.key.clone()).collect();
    file.write_all(&legacy::preamble())?;
    file.write_all(pickle)?;
    file.write_all(&legacy::key_list_pickle(&keys)?)?;
    for OutStorage {
        key,
        element_size,
        cast,
        new,
    } in &storages
    {
        if let Some(bytes) = new {
            file.write_all(&(bytes.len() as u64 / element_size).to_le_bytes())?;
            file.write_all(bytes)?;
            continue;
        }
        let bytes = source.storage_bytes(key)?;
        let (count, written) = match cast {
            None => {
                let count = bytes.legacy_count.unwrap_or(bytes.len / element_size);
                file.write_all(&count.to_le_bytes())?;
                (count, source.copy_storage_to_file(key, file)?)
            }
            Some(cast) => {
                let count = bytes.len / cast.from.element_size() as u64;
                file.write_all(&count.to_le_bytes())?;
                let written = source.read_storage(key, |input| {
                    Ok(io::copy(&mut codec::CastReader::new(input, *cast), file)?)
                })?;
                (count, written)
            }
        };
        start_writeback(file);
        if written != count * element_size {
            return Err(TorchError::Invalid {
                what: format!(
                    "storage `{key}` holds {written} bytes, not a whole number of elements"
                ),
            });
        }
    }
    Ok(())
}

/// Elementwise re-encoding of little-endian floating-point storages, streamed in chunks.
mod codec {
    use std::io::{self, Read};

    use half::{bf16, f16};

    use super::super::dtype::DType;
    use super::Cast;

    /// Input bytes converted per step: memory stays at this plus its conversion, whatever the
    /// storage size. A multiple of every element size.
    pub const CHUNK: usize = 1 << 20;

    pub fn supports(dtype: DType) -> bool {
        matches!(
            dtype,
            DType::Float64 | DType::Float32 | DType::Float16 | DType::BFloat16
        )
    }

    /// One element's value. Exact for every supported dtype.
    fn decode(dtype: DType, bytes: &[u8]) -> f64 {
        match (dtype, bytes) {
            (DType::Float64, &[a, b, c, d, e, f, g, h]) => {
                f64::from_le_bytes([a, b, c, d, e, f, g, h])
            }
            (DType::Float32, &[a, b, c, d]) => f64::from(f32::from_le_bytes([a, b, c, d])),
            (DType::Float16, &[a, b]) => f16::from_le_bytes([a, b]).to_f64(),
            (DType::BFloat16, &[a, b]) => bf16::from_le_bytes([a, b]).to_f64(),
            _ => f64::NAN,
        }
    }

    /// Appends `value` in `dtype`, rounding to nearest even as torch's `Tensor.to` does.
    /// Narrowing from float64 goes through float32 first, like c10's `Half(float)` and
    /// `BFloat16(float)` constructors that torch's copy kernel uses.
    fn encode(dtype: DType, value: f64, out: &mut Vec<u8>) {
        match dtype {
            DType::Float64 => out.extend_from_slice(&value.to_le_bytes()),
            DType::Float32 => out.extend_from_slice(&(value as f32).to_le_bytes()),
            DType::Float16 => out.extend_from_slice(&f16::from_f32(value as f32).to_le_bytes()),
            _ => out.extend_from_slice(&bf16::from_f32(value as f32).to_le_bytes()),
        }
    }

    /// Re-encodes whole elements of `input` into `out` (cleared first).
    pub fn convert(cast: Cast, input: &[u8], out: &mut Vec<u8>) {
        out.clear();
        for element in input.chunks_exact(cast.from.element_size()) {
            encode(cast.to, decode(cast.from, element), out);
        }
    }

    /// A reader yielding the cast bytes of everything `inner` yields. An input that ends
    /// inside an element is an `InvalidData` error.
    pub struct CastReader<'a> {
        inner: &'a mut dyn Read,
        cast: Cast,
        input: Vec<u8>,
        output: Vec<u8>,
        position: usize,
    }

    impl<'a> CastReader<'a> {
        pub fn new(inner: &'a mut dyn Read, cast: Cast) -> Self {
            CastReader {
                inner,
                cast,
                input: vec![0; CHUNK],
                output: Vec::new(),
                position: 0,
            }
        }

        /// Converts the next chunk; leaves `output` empty at the end of the input.
        fn refill(&mut self) -> io::Result<()> {
            let mut filled = 0;
            while filled < self.input.len() {
                match self.inner.read(&mut self.input[filled..]) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            if filled % self.cast.from.element_size() != 0 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a storage ends inside an element",
                ));
            }
            convert(self.cast, &self.input[..filled], &mut self.output);
            self.position = 0;
            Ok(())
        }
    }

    impl Read for CastReader<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.position == self.output.len() {
                self.refill()?;
            }
            let available = &self.output[self.position..];
            let n = available.len().min(buf.len());
            buf[..n].copy_from_slice(&available[..n]);
            self.position += n;
            Ok(n)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn archive_prefix_follows_torch() {
        assert_eq!(archive_prefix(Path::new("/x/model.pth.tar")), "model.pth");
        assert_eq!(archive_prefix(Path::new("x.y.z.pt")), "x.y.z");
        assert_eq!(archive_prefix(Path::new("noext")), "noext");
        assert_eq!(archive_prefix(Path::new(".hidden")), "archive");
        assert_eq!(archive_prefix(Path::new("résumé.pth")), "archive");
    }

    fn cast(from: DType, to: DType) -> Cast {
        Cast { from, to }
    }

    #[test]
    fn cast_rounds_to_nearest_even() {
        // 1 + 2^-11 and 1 + 3·2^-11 lie halfway between float16 neighbours: ties go to the
        // even one (1.0 and 1 + 2^-9); 65520 rounds up to infinity.
        let input: Vec<u8> = [1.0 + 2f32.powi(-11), 1.0 + 3.0 * 2f32.powi(-11), 65520.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mut out = Vec::new();
        codec::convert(cast(DType::Float32, DType::Float16), &input, &mut out);
        assert_eq!(out, [0x00, 0x3c, 0x02, 0x3c, 0x00, 0x7c]);
        codec::convert(
            cast(DType::Float32, DType::BFloat16),
            &(1.0 + 2f32.powi(-8)).to_le_bytes(),
            &mut out,
        );
        assert_eq!(out, [0x80, 0x3f], "1 + 2^-8 ties to 1.0 in bfloat16");
    }

    #[test]
    fn widening_casts_are_exact() {
        let input = [0x01, 0x00, 0x00, 0xfc]; // smallest subnormal, -inf
        let mut out = Vec::new();
        codec::convert(cast(DType::Float16, DType::Float32), &input, &mut out);
        let values: Vec<f32> = out
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(values, [2f32.powi(-24), f32::NEG_INFINITY]);
    }

    #[test]
    fn cast_reader_streams_across_chunks_and_rejects_partial_elements() {
        let n = codec::CHUNK / 4 + 3;
        let input: Vec<u8> = (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect();
        let mut source = input.as_slice();
        let mut out = Vec::new();
        codec::CastReader::new(&mut source, cast(DType::Float32, DType::Float64))
            .read_to_end(&mut out)
            .expect("cast");
        assert_eq!(out.len(), n * 8);
        assert_eq!(&out[out.len() - 8..], &((n - 1) as f64).to_le_bytes());

        let mut short: &[u8] = &[0, 0, 0];
        let err = codec::CastReader::new(&mut short, cast(DType::Float32, DType::Float16))
            .read_to_end(&mut Vec::new())
            .expect_err("partial element");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }
}
