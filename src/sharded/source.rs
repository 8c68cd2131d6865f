//! The single checkpoint `ckpt shard` splits: its entries flattened as DCP flattens a state
//! dict, and the bytes of any rows of its tensors.
//!
//! Flattening follows `torch.distributed.checkpoint`'s `flatten_state_dict`: mappings are
//! walked (keys as `str(key)`), a list is walked by index only when it holds a tensor or a
//! mapping somewhere inside, and anything else is one value. An entry's FQN is its key path
//! joined by dots; an empty mapping holds no entry.
//!
//! Inputs: a torch checkpoint ([`Checkpoint`], already scanned by the caller) or a
//! safetensors file (a flat mapping of tensors; its header is read and checked against the
//! file size, the tensor bytes are read only when written).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use ckpt_formats::torch::contiguous::{copy_contiguous, is_contiguous};
use ckpt_formats::torch::read_tensor::ByteOrder;
use ckpt_formats::torch::safetensors::{self as format, Header, ReadError};
use ckpt_formats::torch::tensor::{composite, is_tensor_like};
use ckpt_formats::torch::{Checkpoint, DType, TensorRef};
use ckpt_pickle::{self as pickle, Graph, NodeId, Value, MAX_DEPTH};

use ckpt_formats::torch::dcp::item::FileSlice;
use ckpt_formats::torch::dcp::metadata::PathKey;
use ckpt_formats::torch::dcp::DcpError;

/// Where a tensor's bytes are in the input.
#[derive(Clone, Debug)]
enum Bytes {
    /// A view of a checkpoint storage.
    View(TensorRef),
    /// Row-major little-endian bytes at this offset of the safetensors file.
    Range(u64),
}

/// One flattened entry of the input.
#[derive(Clone, Debug)]
pub struct Leaf {
    /// The key path from the root (`planner_data`).
    pub path: Vec<PathKey>,
    /// The path joined by dots.
    pub fqn: String,
    /// What it holds.
    pub kind: LeafKind,
}

/// What a leaf holds.
#[derive(Clone, Debug)]
pub enum LeafKind {
    /// A dense tensor.
    Tensor(Tensor),
    /// A non-tensor value: its node in the checkpoint's graph.
    Value(NodeId),
}

/// A dense tensor of the input.
#[derive(Clone, Debug)]
pub struct Tensor {
    /// Element type.
    pub dtype: DType,
    /// Sizes.
    pub size: Vec<u64>,
    bytes: Bytes,
}

/// A checkpoint to shard.
pub enum Input {
    /// A `torch.save` checkpoint (zip or legacy).
    Checkpoint(Box<Checkpoint>),
    /// A safetensors file.
    Safetensors(Safetensors),
}

/// An open safetensors file: its header's tensors, by name, in file order.
pub struct Safetensors {
    file: File,
    tensors: Vec<(String, DType, Vec<u64>, u64)>,
}

fn bad(what: impl Into<String>) -> DcpError {
    DcpError::Input { what: what.into() }
}

impl Safetensors {
    /// Reads and checks the header of the safetensors file at `path`.
    pub fn open(path: &Path) -> Result<Safetensors, DcpError> {
        let mut file = File::open(path)?;
        let file_len = file.metadata()?.len();
        let header = Header::read(&mut file, file_len).map_err(|e| match e {
            ReadError::Io(e) => DcpError::Io(e),
            other => bad(other.to_string()),
        })?;
        let data_start = header.data_start();
        let mut tensors = Vec::new();
        for (name, info) in header.tensors() {
            let dtype = format::torch_dtype(info.dtype).ok_or_else(|| {
                bad(format!(
                    "`{name}` is {:?}, which ckpt cannot shard",
                    info.dtype
                ))
            })?;
            let size: Vec<u64> = info.shape.iter().map(|&s| s as u64).collect();
            let (start, end) = (info.data_offsets.0 as u64, info.data_offsets.1 as u64);
            let want = size
                .iter()
                .try_fold(dtype.element_size() as u64, |n, &s| n.checked_mul(s));
            if want != end.checked_sub(start) || data_start.saturating_add(end) > file_len {
                return Err(bad(format!(
                    "`{name}`: its byte range {start}..{end} does not hold a {dtype} tensor of shape {size:?} inside the file (truncated?)"
                )));
            }
            tensors.push((name, dtype, size, data_start + start));
        }
        Ok(Safetensors { file, tensors })
    }
}

impl Input {
    /// The entries in DCP's flattening order, each FQN once.
    pub fn leaves(&self) -> Result<Vec<Leaf>, DcpError> {
        let leaves = match self {
            Input::Safetensors(st) => st
                .tensors
                .iter()
                .map(|(name, dtype, size, offset)| Leaf {
                    path: vec![PathKey::Key(name.clone())],
                    fqn: name.clone(),
                    kind: LeafKind::Tensor(Tensor {
                        dtype: *dtype,
                        size: size.clone(),
                        bytes: Bytes::Range(*offset),
                    }),
                })
                .collect(),
            Input::Checkpoint(ckpt) => {
                let mut walk = Flatten {
                    ckpt,
                    tensors: ckpt.scan.tensors.iter().map(|t| (t.node, t)).collect(),
                    leaves: Vec::new(),
                    visits: 0,
                    walked: HashMap::new(),
                };
                if ckpt.graph.mapping(ckpt.root).is_none() || walk.tensor(ckpt.root).is_some() {
                    return Err(bad(
                        "the checkpoint is not a mapping (a state dict, or a dict of them)",
                    ));
                }
                walk.walk(ckpt.root, &mut Vec::new(), 0)?;
                walk.leaves
            }
        };
        let mut seen = HashSet::new();
        for leaf in &leaves {
            if !seen.insert(leaf.fqn.as_str()) {
                return Err(bad(format!(
                    "two entries flatten to the same key `{}`",
                    leaf.fqn
                )));
            }
        }
        Ok(leaves)
    }

    /// The pickle of a value leaf (a graph node of a checkpoint).
    pub fn value_pickle(&self, node: NodeId) -> Result<Vec<u8>, DcpError> {
        match self {
            Input::Checkpoint(ckpt) => Ok(pickle::write(&ckpt.graph, node)?),
            Input::Safetensors(_) => Err(bad("a safetensors file holds no values")),
        }
    }

    /// Runs `f` on a reader over rows `start .. start + rows` of `tensor` (row-major,
    /// little-endian) and their byte length. A contiguous little-endian view is read in place
    /// piece by piece; any other view is first written contiguous to an anonymous temporary
    /// file, so memory stays bounded either way.
    pub fn rows<T>(
        &mut self,
        tensor: &Tensor,
        start: u64,
        rows: u64,
        f: impl FnOnce(&mut dyn Read, u64) -> Result<T, DcpError>,
    ) -> Result<T, DcpError> {
        let element = tensor.dtype.element_size() as u64;
        let row_bytes = tensor
            .size
            .iter()
            .skip(1)
            .try_fold(element, |n, &s| n.checked_mul(s));
        let overflow = || {
            bad(format!(
                "a {} tensor of shape {:?} is too large",
                tensor.dtype, tensor.size
            ))
        };
        let row_bytes = row_bytes.ok_or_else(overflow)?;
        // A 0-d tensor is one row of one element.
        let (start, rows) = if tensor.size.is_empty() {
            (0, 1)
        } else {
            (start, rows)
        };
        let len = rows.checked_mul(row_bytes).ok_or_else(overflow)?;
        let skip = start.checked_mul(row_bytes).ok_or_else(overflow)?;
        match (&mut *self, &tensor.bytes) {
            (Input::Safetensors(st), Bytes::Range(offset)) => {
                let mut slice = FileSlice::new(&st.file, offset + skip, len);
                f(&mut slice, len)
            }
            (Input::Checkpoint(ckpt), Bytes::View(view)) => {
                let mut part = view.clone();
                if let (Some(first), Some(&stride)) = (part.shape.first_mut(), view.stride.first())
                {
                    *first = rows;
                    let stride = u64::try_from(stride).map_err(|_| overflow())?;
                    part.offset = start
                        .checked_mul(stride)
                        .and_then(|n| n.checked_add(view.offset))
                        .ok_or_else(overflow)?;
                }
                let strides: Option<Vec<u64>> =
                    part.stride.iter().map(|&s| u64::try_from(s).ok()).collect();
                let in_place = ByteOrder::of(ckpt) == ByteOrder::Little
                    && strides.is_some_and(|s| is_contiguous(&part.shape, &s));
                if in_place {
                    let from = part.offset.checked_mul(element).ok_or_else(overflow)?;
                    let mut reader = StorageRange {
                        ckpt,
                        key: part.storage.key.clone(),
                        at: from,
                        end: from + len,
                        buffer: Vec::new(),
                        used: 0,
                    };
                    f(&mut reader, len)
                } else {
                    let mut spool = tempfile::tempfile()?;
                    copy_contiguous(ckpt, &part, &mut spool)?;
                    io::Seek::rewind(&mut spool)?;
                    f(&mut spool, len)
                }
            }
            _ => Err(bad("a tensor is not in this input")),
        }
    }
}

/// The most values the flattening visits: DCP repeats a value shared by several paths
/// once per path, so a pickle whose lists share one another (a memo bomb: a few kilobytes
/// that name 1000^k entries) would otherwise expand without end. Real state dicts, with
/// optimizer state, have some hundreds of thousands of leaves.
const MAX_VISITS: usize = 1 << 22;

/// The DCP flattening walk over a checkpoint's graph.
struct Flatten<'a> {
    ckpt: &'a Checkpoint,
    tensors: HashMap<NodeId, &'a TensorRef>,
    leaves: Vec<Leaf>,
    /// Values visited so far, at most [`MAX_VISITS`].
    visits: usize,
    /// [`Flatten::walked`]'s answer per list, each computed once (a list reached again
    /// while its answer is computed, through a cycle, counts as not walked).
    walked: HashMap<NodeId, bool>,
}

impl Flatten<'_> {
    /// The dense tensor at `node` (a rebuild call or a parameter around one).
    fn tensor(&self, node: NodeId) -> Option<&TensorRef> {
        let inner = self
            .ckpt
            .scan
            .parameters
            .get(&node)
            .copied()
            .unwrap_or(node);
        self.tensors.get(&inner).copied()
    }

    /// Whether a value holds a tensor or a mapping at some depth (DCP walks it then).
    fn walked(&mut self, node: NodeId) -> bool {
        let ckpt = self.ckpt;
        let graph = &ckpt.graph;
        if graph.mapping(node).is_some() {
            return true;
        }
        let Value::List(items) = graph.get(node) else {
            return false;
        };
        if let Some(&known) = self.walked.get(&node) {
            return known;
        }
        self.walked.insert(node, false);
        let walked = items.iter().any(|&item| {
            self.tensor(item).is_some()
                || is_tensor_like(graph, item)
                || graph.mapping(item).is_some()
                || (matches!(graph.get(item), Value::List(_)) && self.walked(item))
        });
        self.walked.insert(node, walked);
        walked
    }

    fn walk(
        &mut self,
        node: NodeId,
        path: &mut Vec<PathKey>,
        depth: usize,
    ) -> Result<(), DcpError> {
        if depth > MAX_DEPTH {
            return Err(bad("the checkpoint nests too deeply"));
        }
        self.visits += 1;
        if self.visits > MAX_VISITS {
            return Err(bad(format!(
                "flattened as DCP does, its values repeat past {MAX_VISITS} entries (lists that share one another, as in a memo bomb)"
            )));
        }
        let ckpt = self.ckpt;
        let graph = &ckpt.graph;
        let fqn = |path: &[PathKey]| {
            path.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(".")
        };
        if let Some(tensor) = self.tensor(node) {
            if has_math_bits(graph, tensor) {
                return Err(DcpError::Unsupported {
                    what: format!(
                        "`{}`: a conjugate or negative view (saved unresolved; call resolve_conj()/resolve_neg() before saving)",
                        fqn(path)
                    ),
                });
            }
            let kind = LeafKind::Tensor(Tensor {
                dtype: tensor.dtype,
                size: tensor.shape.clone(),
                bytes: Bytes::View(tensor.clone()),
            });
            self.leaves.push(Leaf {
                fqn: fqn(path),
                path: path.clone(),
                kind,
            });
            return Ok(());
        }
        if is_tensor_like(graph, node) {
            let what = if composite(graph, &self.ckpt.scan, node).is_some() {
                "a sparse or nested tensor"
            } else {
                "a quantized or otherwise non-dense tensor"
            };
            return Err(DcpError::Unsupported {
                what: format!("`{}`: {what}", fqn(path)),
            });
        }
        if let Some(pairs) = graph.mapping(node) {
            for &(key, value) in pairs {
                let text = key_text(graph, key).ok_or_else(|| {
                    bad(format!(
                        "`{}`: a mapping key is a {}, not a string or number",
                        fqn(path),
                        graph.get(key).kind()
                    ))
                })?;
                path.push(PathKey::Key(text));
                self.walk(value, path, depth + 1)?;
                path.pop();
            }
            return Ok(());
        }
        if let (Value::List(items), true) = (graph.get(node), self.walked(node)) {
            for (i, &item) in items.iter().enumerate() {
                path.push(PathKey::Index(i as u64));
                self.walk(item, path, depth + 1)?;
                path.pop();
            }
            return Ok(());
        }
        if holds_tensor(graph, node) {
            return Err(DcpError::Unsupported {
                what: format!(
                    "`{}`: a {} holding tensors (DCP stores tensors only in mappings and lists)",
                    fqn(path),
                    graph.get(node).kind()
                ),
            });
        }
        self.leaves.push(Leaf {
            fqn: fqn(path),
            path: path.clone(),
            kind: LeafKind::Value(node),
        });
        Ok(())
    }
}

/// Whether a tensor's rebuild call carries `{'conj': True}` or `{'neg': True}` metadata: its
/// stored bits are then not its values.
fn has_math_bits(graph: &Graph, tensor: &TensorRef) -> bool {
    let set = |meta: NodeId, key: &str| {
        graph
            .lookup(meta, key)
            .is_some_and(|v| matches!(graph.get(v), Value::Bool(true)))
    };
    graph
        .tuple(tensor.args)
        .unwrap_or_default()
        .iter()
        .skip(6)
        .any(|&arg| set(arg, "conj") || set(arg, "neg"))
}

/// A mapping key as Python's `str(key)` spells it, for the keys state dicts use.
fn key_text(graph: &Graph, key: NodeId) -> Option<String> {
    match graph.get(key) {
        Value::Str(s) => Some(s.clone()),
        Value::Int(n) => Some(n.to_string()),
        Value::Bool(b) => Some(if *b { "True" } else { "False" }.to_owned()),
        Value::None => Some("None".to_owned()),
        _ => None,
    }
}

/// Whether a storage reference or tensor is reachable from `node`.
fn holds_tensor(graph: &Graph, node: NodeId) -> bool {
    let mut seen = HashSet::new();
    let mut stack = vec![node];
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        if is_tensor_like(graph, id) || matches!(graph.get(id), Value::PersistentId(_)) {
            return true;
        }
        stack.extend(graph.get(id).children());
    }
    false
}

/// A reader over bytes `at .. end` of a checkpoint storage, read in pieces of [`PIECE`].
struct StorageRange<'a> {
    ckpt: &'a mut Checkpoint,
    key: String,
    at: u64,
    end: u64,
    buffer: Vec<u8>,
    used: usize,
}

/// Bytes read from a storage per step.
const PIECE: u64 = 4 << 20;

impl Read for StorageRange<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.used == self.buffer.len() {
            let n = (self.end - self.at).min(PIECE);
            if n == 0 {
                return Ok(0);
            }
            self.buffer = self
                .ckpt
                .read_storage_range(&self.key, self.at, n)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
            self.at += n;
            self.used = 0;
        }
        let n = buf.len().min(self.buffer.len() - self.used);
        buf[..n].copy_from_slice(&self.buffer[self.used..self.used + n]);
        self.used += n;
        Ok(n)
    }
}
