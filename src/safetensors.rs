//! Export of a state dict to safetensors: the header is laid out by the format module
//! ([`ckpt_formats::torch::safetensors`]); the tensor bytes are then streamed from the checkpoint one
//! tensor at a time (`copy_contiguous`), never the whole file in memory.
//!
//! Shared tensors follow `safetensors.torch.save_model` (`_remove_duplicate_names`): tensors
//! of one storage whose byte ranges overlap form a group; the group keeps the alphabetically
//! first name among those covering their whole storage, writes it once, and records every
//! other name in the metadata as `alias → kept name`. Where the reference refuses (no name of
//! a group covers its storage) each tensor is written on its own. Views are written
//! contiguous. The metadata always holds `format: pt`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufWriter, Write};
use std::path::Path;

use ::safetensors::tensor::Dtype;

use ckpt_base::atomic_file::write_atomically;
use ckpt_formats::torch::contiguous::copy_contiguous;
use ckpt_formats::torch::safetensors::{self as format, Describe, Described, WriteError};
use ckpt_formats::torch::state_dict::{find_state_dicts, is_state_dict};
use ckpt_formats::torch::tensor::composite;
use ckpt_formats::torch::{Checkpoint, DType, TensorRef, TorchError};
use ckpt_pickle::{Graph, NodeId};

/// Why a state dict could not be exported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SafetensorsError {
    /// No state dict, or several, or the given key is not one.
    #[error("{0}")]
    Select(String),
    /// A tensor's dtype has no safetensors spelling.
    #[error("tensor `{key}` is {dtype}, which safetensors cannot hold")]
    Dtype {
        /// The state-dict key.
        key: String,
        /// Its dtype.
        dtype: DType,
    },
    /// A sparse, quantized or nested tensor.
    #[error("`{key}` is a {kind} tensor; safetensors holds only dense tensors")]
    NotDense {
        /// The state-dict key.
        key: String,
        /// The tensor's layout.
        kind: &'static str,
    },
    /// Too many keys for a header readers accept.
    #[error("the safetensors header would be {0} bytes, over the 100 MB readers accept")]
    HeaderTooLarge(usize),
    /// The header could not be built.
    #[error("safetensors header: {0}")]
    Header(String),
    /// Reading the checkpoint failed.
    #[error(transparent)]
    Torch(#[from] TorchError),
    /// Writing the output failed.
    #[error("cannot write the output: {0}")]
    Io(#[from] std::io::Error),
}

impl From<WriteError> for SafetensorsError {
    fn from(e: WriteError) -> Self {
        match e {
            WriteError::TooLarge(name) => {
                SafetensorsError::Header(format!("tensor `{name}` is too large"))
            }
            WriteError::HeaderTooLarge(len) => SafetensorsError::HeaderTooLarge(len),
            WriteError::Invalid(what) => SafetensorsError::Header(what),
            other => SafetensorsError::Header(other.to_string()),
        }
    }
}

/// What [`write()`] produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// Tensors stored.
    pub tensors: usize,
    /// `(alias, kept name)` for every shared tensor stored once, as in the metadata.
    pub aliases: Vec<(String, String)>,
    /// Keys that are not tensors (`…_extra_state`), left out.
    pub skipped: Vec<String>,
    /// Bytes in the file.
    pub bytes: u64,
}

/// The state dict to export: the mapping under top-level key `key` when given (it must be a
/// state dict), else the only state dict in the checkpoint. Several candidates are an error
/// that names them, so the caller chooses with a key.
pub fn select(graph: &Graph, root: NodeId, key: Option<&str>) -> Result<NodeId, SafetensorsError> {
    if let Some(key) = key {
        let node = graph.lookup(root, key).ok_or_else(|| {
            SafetensorsError::Select(format!("the checkpoint has no top-level key `{key}`"))
        })?;
        return if is_state_dict(graph, node) {
            Ok(node)
        } else {
            Err(SafetensorsError::Select(format!(
                "`{key}` is not a state dict (a mapping of names to tensors)"
            )))
        };
    }
    let found = find_state_dicts(graph, root)?;
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(SafetensorsError::Select(
            "the checkpoint holds no state dict (a mapping of names to tensors)".into(),
        )),
        many => {
            let names: Vec<String> = graph
                .mapping(root)
                .unwrap_or_default()
                .iter()
                .filter(|(_, v)| many.contains(v))
                .filter_map(|&(k, _)| graph.str(k).map(|k| format!("`{k}`")))
                .collect();
            Err(SafetensorsError::Select(format!(
                "the checkpoint holds {} state dicts{}; choose one with --key",
                many.len(),
                if names.is_empty() {
                    String::new()
                } else {
                    format!(" (under {})", names.join(", "))
                }
            )))
        }
    }
}

/// Writes the state dict under top-level key `key` (or the only state dict, see [`select`])
/// of `ckpt` to `out` as safetensors, atomically. Shared tensors are stored once; keys are
/// written as they are.
///
/// ```
/// let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
/// let mut opened = ckpt::open(&fixtures.join("zip_tinycnn_sd.pth"))?;
/// let out = std::env::temp_dir().join("ckpt-doctest-tinycnn.safetensors");
/// let written = ckpt::to_safetensors(&mut opened.checkpoint, None, &out)?;
/// assert!(written.tensors > 0);
/// # std::fs::remove_file(&out)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn export(
    ckpt: &mut Checkpoint,
    key: Option<&str>,
    out: &Path,
) -> Result<Written, SafetensorsError> {
    let state_dict = select(&ckpt.graph, ckpt.root, key)?;
    write(ckpt, state_dict, out)
}

/// Where the bytes of one stored tensor come from, for writers that copy them themselves.
#[derive(Clone, Debug)]
pub(crate) enum Piece {
    /// `len` bytes at absolute offset `offset` of the checkpoint's file, as they are: a
    /// contiguous little-endian view of a storage kept unchanged in the file.
    InFile { offset: u64, len: u64 },
    /// Anything else (a strided view, a deflated record, a big-endian file): through
    /// [`copy_contiguous`].
    Tensor(TensorRef),
}

/// A safetensors file planned but not written: its first bytes (length prefix and header)
/// and, in file order, where each tensor's bytes come from.
pub(crate) struct Prepared {
    /// The 8-byte header length followed by the padded header.
    pub head: Vec<u8>,
    pub pieces: Vec<Piece>,
}

/// Plans the file [`export`] would write for `key`, for a writer that copies the bytes
/// itself (`ckpt batch`, which hashes them on the way).
pub(crate) fn prepare(ckpt: &Checkpoint, key: Option<&str>) -> Result<Prepared, SafetensorsError> {
    let state_dict = select(&ckpt.graph, ckpt.root, key)?;
    let (entries, _) = entries(ckpt, state_dict)?;
    let (kept, aliases) = deduplicate(entries);
    let (head, layout) = layout(kept, &aliases)?;
    let little = ckpt_formats::torch::read_tensor::ByteOrder::of(ckpt)
        == ckpt_formats::torch::read_tensor::ByteOrder::Little;
    let mut pieces = Vec::with_capacity(layout.len());
    for entry in &layout {
        let t = &entry.tensor;
        let size = t.dtype.element_size() as u64;
        let len = t.numel().checked_mul(size);
        let start = t.offset.checked_mul(size);
        let strides: Option<Vec<u64>> = t.stride.iter().map(|&s| u64::try_from(s).ok()).collect();
        let in_place = match (len, start, strides) {
            (Some(len), Some(start), Some(strides))
                if (little || size == 1)
                    && ckpt_formats::torch::contiguous::is_contiguous(&t.shape, &strides) =>
            {
                ckpt.storage_in_file(&t.storage.key)?
                    .filter(|&(_, stored)| start.checked_add(len).is_some_and(|e| e <= stored))
                    .map(|(at, _)| (at + start, len))
            }
            _ => None,
        };
        pieces.push(match in_place {
            Some((offset, len)) => Piece::InFile { offset, len },
            None => Piece::Tensor(t.clone()),
        });
    }
    Ok(Prepared { head, pieces })
}

/// One tensor to store: its name and where its bytes are.
struct Entry {
    name: String,
    tensor: TensorRef,
    dtype: Dtype,
}

impl Describe for Entry {
    fn described(&self) -> Described<'_> {
        Described {
            name: &self.name,
            dtype: self.dtype,
            shape: &self.tensor.shape,
        }
    }
}

/// Writes the state dict at `state_dict` (a node of `ckpt.graph`) to `out` atomically.
pub fn write(
    ckpt: &mut Checkpoint,
    state_dict: NodeId,
    out: &Path,
) -> Result<Written, SafetensorsError> {
    let (entries, skipped) = entries(ckpt, state_dict)?;
    let (kept, aliases) = deduplicate(entries);
    let (head, layout) = layout(kept, &aliases)?;

    let bytes = write_atomically(out, |file| -> Result<u64, SafetensorsError> {
        let mut writer = BufWriter::with_capacity(1 << 20, file);
        writer.write_all(&head)?;
        let mut bytes = head.len() as u64;
        for entry in &layout {
            bytes += copy_contiguous(ckpt, &entry.tensor, &mut writer)?;
        }
        writer.flush()?;
        Ok(bytes)
    })?;
    Ok(Written {
        tensors: layout.len(),
        aliases,
        skipped,
        bytes,
    })
}

/// The tensors of the state dict in key order, and the keys that are not tensors.
fn entries(
    ckpt: &Checkpoint,
    state_dict: NodeId,
) -> Result<(Vec<Entry>, Vec<String>), SafetensorsError> {
    let graph = &ckpt.graph;
    let by_node: HashMap<NodeId, &TensorRef> =
        ckpt.scan.tensors.iter().map(|t| (t.node, t)).collect();
    let pairs = graph
        .mapping(state_dict)
        .ok_or_else(|| SafetensorsError::Select("the selected value is not a mapping".into()))?;
    let mut seen = HashSet::new();
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    for &(key, value) in pairs {
        let name = graph
            .str(key)
            .ok_or_else(|| SafetensorsError::Select("a state dict key is not a string".into()))?
            .to_owned();
        if !seen.insert(name.clone()) {
            return Err(SafetensorsError::Select(format!(
                "key `{name}` appears twice in the state dict"
            )));
        }
        let node = ckpt.scan.parameters.get(&value).copied().unwrap_or(value);
        let Some(tensor) = by_node.get(&node) else {
            if composite(graph, &ckpt.scan, node).is_some() {
                return Err(SafetensorsError::NotDense {
                    key: name,
                    kind: "sparse or nested",
                });
            }
            if ckpt_formats::torch::tensor::is_tensor_like(graph, node) {
                return Err(SafetensorsError::NotDense {
                    key: name,
                    kind: "subclass or otherwise non-dense",
                });
            }
            skipped.push(name);
            continue;
        };
        let dtype = format::dtype(tensor.dtype).ok_or(SafetensorsError::Dtype {
            key: name.clone(),
            dtype: tensor.dtype,
        })?;
        entries.push(Entry {
            name,
            tensor: (*tensor).clone(),
            dtype,
        });
    }
    Ok((entries, skipped))
}

/// Byte range of a view within its storage: `[offset, extent) × element size`.
fn byte_range(t: &TensorRef) -> (u64, u64) {
    let size = t.dtype.element_size() as u64;
    let start = t.offset.saturating_mul(size);
    let end = t.extent().unwrap_or(t.offset).saturating_mul(size);
    (start, end)
}

/// Whether a view starts its storage and spans all of its bytes (`_is_complete`).
fn is_complete(t: &TensorRef) -> bool {
    t.offset == 0 && t.numel().checked_mul(t.dtype.element_size() as u64) == t.storage.nbytes()
}

/// Splits the entries into those stored and `(alias, kept)` pairs, as `_remove_duplicate_names`
/// does: group by storage (empty storages never share), split each group into runs of
/// overlapping byte ranges, keep the alphabetically first complete name of a run. Stored
/// entries keep the state dict's order.
fn deduplicate(entries: Vec<Entry>) -> (Vec<Entry>, Vec<(String, String)>) {
    let mut by_storage: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        if e.tensor.storage.nbytes().unwrap_or(0) != 0 {
            by_storage.entry(&e.tensor.storage.key).or_default().push(i);
        }
    }
    let mut dropped: BTreeMap<usize, usize> = BTreeMap::new();
    for members in by_storage.values().filter(|m| m.len() > 1) {
        let mut areas: Vec<(u64, u64, &str, usize)> = members
            .iter()
            .map(|&i| {
                let (start, end) = byte_range(&entries[i].tensor);
                (start, end, entries[i].name.as_str(), i)
            })
            .collect();
        areas.sort();
        // As the reference: a view joins the current run when it starts before the previous
        // view's end.
        let mut runs: Vec<Vec<usize>> = Vec::new();
        let mut last_stop = 0;
        for (n, &(start, stop, _, i)) in areas.iter().enumerate() {
            match runs.last_mut() {
                Some(run) if n > 0 && start < last_stop => run.push(i),
                _ => runs.push(vec![i]),
            }
            last_stop = stop;
        }
        for run in runs.iter().filter(|r| r.len() > 1) {
            let keep = run
                .iter()
                .copied()
                .filter(|&i| is_complete(&entries[i].tensor))
                .min_by(|&a, &b| entries[a].name.cmp(&entries[b].name));
            if let Some(keep) = keep {
                for &i in run.iter().filter(|&&i| i != keep) {
                    dropped.insert(i, keep);
                }
            }
        }
    }
    let mut aliases: Vec<(String, String)> = dropped
        .iter()
        .map(|(&alias, &kept)| (entries[alias].name.clone(), entries[kept].name.clone()))
        .collect();
    aliases.sort();
    let kept = entries
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !dropped.contains_key(i))
        .map(|(_, e)| e)
        .collect();
    (kept, aliases)
}

/// Sorts the entries into file order and returns the file's first bytes (see
/// [`format::lay_out`]), the aliases recorded in the metadata beside `format: pt`.
fn layout(
    mut entries: Vec<Entry>,
    aliases: &[(String, String)],
) -> Result<(Vec<u8>, Vec<Entry>), SafetensorsError> {
    let mut metadata: BTreeMap<String, String> = aliases.iter().cloned().collect();
    metadata.insert("format".into(), "pt".into());
    let head = format::lay_out(&mut entries, metadata)?;
    Ok((head, entries))
}
