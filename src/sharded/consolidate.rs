//! One state dict from a DCP folder, written as a torch zip (`.pth`) or safetensors.
//!
//! The nested structure is rebuilt as `dcp_to_torch_save` rebuilds it: each entry goes to the
//! key path its planner data records (dicts for string keys, lists for indices). Tensors
//! become fresh contiguous storages whose bytes are streamed from the chunks
//! (`GatherReader`); non-tensor values are their own pickles, grafted in as data.
//!
//! Everything is checked before the output is created: the layout ([`Folder::problems`]),
//! then every chunk's item (dtype, shape, contiguity, bytes inside its record) and every
//! value's pickle. The output is written atomically.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use ckpt_base::atomic_file::write_atomically;
use ckpt_formats::torch::copy::copy_range;
use ckpt_formats::torch::safetensors::{self as format, Describe, Described, WriteError};
use ckpt_formats::torch::zip_write::{Piece, Pieces, TorchZipWriter};
use ckpt_formats::torch::DType;
use ckpt_formats::transform::select::TRAINING_STATE_KEYS;
use ckpt_pickle::{self as pickle, Graph, NodeId, Value};

use ckpt_formats::torch::dcp::gather::{ChunkSource, GatherReader, Step};
use ckpt_formats::torch::dcp::item::{self, ChunkBytes};
use ckpt_formats::torch::dcp::item_write::fresh_tensor;
use ckpt_formats::torch::dcp::metadata::{ChunkBox, EntryKind, PathKey};
use ckpt_formats::torch::dcp::tiling::tile;
use ckpt_formats::torch::dcp::{DcpError, Folder};

/// Which entries to write.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    /// Drop optimizer state (any `state`/`param_groups` mapping) and top-level training
    /// state (optimizer, scheduler, scaler keys).
    pub model_only: bool,
    /// Write only the entries under this dotted key (e.g. `model`), as the root.
    pub extract: Option<String>,
}

/// The output's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// A `torch.save` zip.
    Pth,
    /// A flat safetensors file named by dotted key; non-tensor values are left out.
    Safetensors,
}

/// What was written (`consolidate --json` prints it, fields in this order, after the output).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Summary {
    /// Tensors written.
    pub tensors: usize,
    /// Non-tensor values written.
    pub values: usize,
    /// Chunks read.
    pub chunks: usize,
    /// Tensor bytes written.
    pub tensor_bytes: u64,
    /// Entries left out: by the selection, or (safetensors) because they are not tensors.
    pub dropped: Vec<String>,
}

/// A tensor to write: where each of its chunks' bytes are.
///
/// Invariant: the chunks tile `gather` exactly (checked by whoever builds the plan), and
/// `gather` and `size` hold the same number of elements: the bytes are gathered in
/// row-major order over `gather` and written as a tensor of shape `size` (a DeepSpeed
/// parameter is gathered from 1-D ranges of flat partitions, `gather = [numel]`).
pub(crate) struct TensorPlan {
    /// Its dotted name (safetensors key, messages).
    pub name: String,
    /// Its key path in a `.pth` output.
    pub path: Vec<PathKey>,
    /// Its element type.
    pub dtype: DType,
    /// Its shape in the output.
    pub size: Vec<u64>,
    /// The shape its chunks tile.
    pub gather: Vec<u64>,
    /// Each chunk: its box in `gather`, the name of its file in the writer's file map, where
    /// its bytes start there (C-contiguous for the box) and their CRC-32 when known.
    pub chunks: Vec<(ChunkBox, String, ChunkPlace)>,
    /// Further key paths holding the same tensor (tied weights): one storage in a `.pth`; in
    /// safetensors, stored once under the alphabetically first name, the others recorded in
    /// the metadata as `name: kept`.
    pub aliases: Vec<Vec<PathKey>>,
}

/// Where a chunk's bytes start in its file, and their CRC-32 when they are exactly a zip
/// record whose CRC is known.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ChunkPlace {
    /// Absolute offset of its first byte.
    pub offset: u64,
    /// The CRC-32 of all its bytes, when known.
    pub crc32: Option<u32>,
}

impl From<&ChunkBytes> for ChunkPlace {
    fn from(bytes: &ChunkBytes) -> Self {
        ChunkPlace {
            offset: bytes.offset,
            crc32: bytes.crc32,
        }
    }
}

/// A value to write: its pickle.
pub(crate) struct ValuePlan {
    name: String,
    path: Vec<PathKey>,
    graph: Graph,
    root: NodeId,
}

/// Writes the selected entries of `folder` to `out`.
pub fn consolidate(
    folder: &Folder,
    selection: &Selection,
    kind: OutputKind,
    out: &Path,
) -> Result<Summary, DcpError> {
    if let Some(problem) = folder.problems().into_iter().next() {
        return Err(DcpError::Layout {
            what: problem.to_string(),
        });
    }
    let mut summary = Summary::default();
    let chosen = choose(folder, selection, &mut summary.dropped)?;
    let files = open_files(folder)?;
    let mut tensors = Vec::new();
    let mut values = Vec::new();
    for (index, path) in chosen {
        let entry = &folder.metadata.entries[index];
        let name = dotted(&path);
        match &entry.kind {
            EntryKind::Tensor {
                dtype,
                size,
                chunks,
            } => {
                let tiling = tile(size, chunks).map_err(|e| DcpError::Layout {
                    what: format!("`{}`: {e}", entry.fqn),
                })?;
                let mut located = Vec::with_capacity(tiling.kept.len());
                for &i in &tiling.kept {
                    let chunk = &chunks[i];
                    let info = folder
                        .stored(&entry.fqn, Some(&chunk.offsets))
                        .map_err(|what| DcpError::Layout { what })?;
                    let file = &files[&info.relative_path];
                    let bytes =
                        item::chunk_bytes(file, info.offset, info.length, *dtype, &chunk.sizes)
                            .map_err(|e| e.about(&entry.fqn))?;
                    located.push((chunk.clone(), info.relative_path.clone(), (&bytes).into()));
                }
                summary.chunks += located.len();
                tensors.push(TensorPlan {
                    name,
                    path,
                    dtype: *dtype,
                    size: size.clone(),
                    gather: size.clone(),
                    chunks: located,
                    aliases: Vec::new(),
                });
            }
            EntryKind::Bytes if kind == OutputKind::Safetensors => summary.dropped.push(name),
            EntryKind::Bytes => {
                let info = folder
                    .stored(&entry.fqn, None)
                    .map_err(|what| DcpError::Layout { what })?;
                let file = &files[&info.relative_path];
                let (graph, root) =
                    item::value(file, info.offset, info.length).map_err(|e| e.about(&entry.fqn))?;
                values.push(ValuePlan {
                    name,
                    path,
                    graph,
                    root,
                });
            }
        }
    }
    if tensors.is_empty() && values.is_empty() {
        return Err(DcpError::Request {
            what: "the selection leaves nothing to write".into(),
        });
    }
    summary.tensors = tensors.len();
    summary.values = values.len();
    summary.tensor_bytes = write(&tensors, &values, &files, kind, out)?;
    Ok(summary)
}

/// Writes `tensors` (and, to a `.pth`, `values`) to `out` atomically, each tensor's bytes
/// streamed from `files` (by name) through one buffer; returns the tensor bytes written.
pub(crate) fn write(
    tensors: &[TensorPlan],
    values: &[ValuePlan],
    files: &HashMap<String, File>,
    kind: OutputKind,
    out: &Path,
) -> Result<u64, DcpError> {
    match kind {
        OutputKind::Pth => write_pth(tensors, values, files, out),
        OutputKind::Safetensors => write_safetensors(tensors, files, out),
    }
}

fn open_files(folder: &Folder) -> Result<HashMap<String, File>, DcpError> {
    let mut files = HashMap::new();
    for name in folder.files.keys() {
        let file = File::open(folder.dir.join(name)).map_err(|e| DcpError::Layout {
            what: format!("cannot open `{name}`: {e}"),
        })?;
        files.insert(name.clone(), file);
    }
    Ok(files)
}

fn dotted(path: &[PathKey]) -> String {
    path.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// The entries to write, by index, with the key path each gets in the output.
fn choose(
    folder: &Folder,
    selection: &Selection,
    dropped: &mut Vec<String>,
) -> Result<Vec<(usize, Vec<PathKey>)>, DcpError> {
    let entries = &folder.metadata.entries;
    let optimizer_roots = if selection.model_only {
        optimizer_roots(entries.iter().map(|e| e.path.as_slice()))
    } else {
        HashSet::new()
    };
    let mut chosen = Vec::new();
    let mut matched = false;
    for (index, entry) in entries.iter().enumerate() {
        let is_optimizer =
            (0..=entry.path.len()).any(|k| optimizer_roots.contains(&entry.path[..k]));
        let path = match &selection.extract {
            None => Some(entry.path.clone()),
            Some(prefix) => (1..entry.path.len())
                .find(|&k| dotted(&entry.path[..k]) == *prefix)
                .map(|k| entry.path[k..].to_vec()),
        };
        matched |= path.is_some();
        match path {
            Some(path) if !is_optimizer => chosen.push((index, path)),
            _ => dropped.push(entry.fqn.clone()),
        }
    }
    if let Some(prefix) = &selection.extract {
        if !matched {
            let mut tops: Vec<String> = entries
                .iter()
                .filter_map(|e| e.path.first().map(ToString::to_string))
                .collect();
            tops.dedup();
            return Err(DcpError::Request {
                what: format!(
                    "--extract {prefix}: no entry lies under `{prefix}` (top-level keys: {})",
                    tops.join(", ")
                ),
            });
        }
    }
    Ok(chosen)
}

/// Key paths holding optimizer state: a mapping whose keys are `state` and `param_groups`
/// only (what `Optimizer.state_dict()` returns), and top-level training-state keys.
fn optimizer_roots<'a>(
    paths: impl Iterator<Item = &'a [PathKey]> + Clone,
) -> HashSet<Vec<PathKey>> {
    let mut children: HashMap<&[PathKey], HashSet<&PathKey>> = HashMap::new();
    for path in paths.clone() {
        for k in 0..path.len().saturating_sub(1) {
            children.entry(&path[..k]).or_default().insert(&path[k]);
        }
    }
    let optimizer_keys = |keys: &HashSet<&PathKey>| {
        keys.iter().any(|k| **k == PathKey::Key("state".into()))
            && keys
                .iter()
                .all(|k| matches!(k, PathKey::Key(s) if s == "state" || s == "param_groups"))
    };
    let mut roots: HashSet<Vec<PathKey>> = children
        .iter()
        .filter(|(_, keys)| optimizer_keys(keys))
        .map(|(parent, _)| parent.to_vec())
        .collect();
    for path in paths {
        if let Some(PathKey::Key(top)) = path.first() {
            if TRAINING_STATE_KEYS.contains(&top.as_str()) {
                roots.insert(vec![path[0].clone()]);
            }
        }
    }
    roots
}

/// The nested output, built as `set_element` builds it.
enum Tree {
    Map(Vec<(String, Tree)>, HashMap<String, usize>),
    List(Vec<Option<Tree>>),
    Leaf(NodeId),
}

/// The largest list index a key path may use (lists are padded with `None` up to it).
const MAX_LIST_INDEX: u64 = 1 << 20;

impl Tree {
    fn insert(&mut self, path: &[PathKey], leaf: NodeId, name: &str) -> Result<(), DcpError> {
        let clash = || DcpError::Layout {
            what: format!("`{name}`: its key path clashes with another entry's"),
        };
        let Some((first, rest)) = path.split_first() else {
            return Err(clash());
        };
        let fresh = |rest: &[PathKey]| match rest.first() {
            None => Tree::Leaf(leaf),
            Some(PathKey::Key(_)) => Tree::Map(Vec::new(), HashMap::new()),
            Some(PathKey::Index(_)) => Tree::List(Vec::new()),
        };
        let slot: &mut Tree = match (self, first) {
            (Tree::Map(items, index), PathKey::Key(k)) => {
                let at = match index.get(k) {
                    Some(&at) => at,
                    None => {
                        items.push((k.clone(), fresh(rest)));
                        index.insert(k.clone(), items.len() - 1);
                        items.len() - 1
                    }
                };
                &mut items[at].1
            }
            (Tree::List(items), PathKey::Index(i)) => {
                if *i > MAX_LIST_INDEX {
                    return Err(DcpError::Layout {
                        what: format!("`{name}`: list index {i} is too large"),
                    });
                }
                let i = *i as usize;
                if items.len() <= i {
                    items.resize_with(i + 1, || None);
                }
                items[i].get_or_insert_with(|| fresh(rest))
            }
            _ => return Err(clash()),
        };
        match (slot, rest.is_empty()) {
            (Tree::Leaf(_), true) => Ok(()),
            (Tree::Leaf(_), false) => Err(clash()),
            (_, true) => Err(clash()),
            (inner, false) => inner.insert(rest, leaf, name),
        }
    }

    fn emit(self, graph: &mut Graph) -> NodeId {
        match self {
            Tree::Leaf(node) => node,
            Tree::Map(items, _) => {
                let pairs = items
                    .into_iter()
                    .map(|(k, v)| (graph.add(Value::Str(k)), v.emit(graph)))
                    .collect();
                graph.add(Value::Dict(pairs))
            }
            Tree::List(items) => {
                let nodes = items
                    .into_iter()
                    .map(|v| match v {
                        Some(v) => v.emit(graph),
                        None => graph.add(Value::None),
                    })
                    .collect();
                graph.add(Value::List(nodes))
            }
        }
    }
}

fn reader<'a>(t: &TensorPlan, files: &'a HashMap<String, File>) -> GatherReader<'a> {
    let chunks = t
        .chunks
        .iter()
        .map(|(chunk, file, place)| {
            (
                chunk.clone(),
                ChunkSource {
                    file: &files[file],
                    offset: place.offset,
                    crc32: place.crc32,
                },
            )
        })
        .collect();
    GatherReader::new(&t.gather, t.dtype.element_size() as u64, chunks)
}

/// Bytes copied per step.
const BUFFER: usize = 1 << 20;

fn write_pth(
    tensors: &[TensorPlan],
    values: &[ValuePlan],
    files: &HashMap<String, File>,
    out: &Path,
) -> Result<u64, DcpError> {
    let mut graph = Graph::new();
    let mut tree = Tree::Map(Vec::new(), HashMap::new());
    let mut nodes = Vec::with_capacity(tensors.len());
    for (key, t) in tensors.iter().enumerate() {
        let node = fresh_tensor(&mut graph, t.dtype, &t.size, &key.to_string(), &t.name)?;
        tree.insert(&t.path, node, &t.name)?;
        nodes.push(node);
    }
    for v in values {
        let node = graph.graft(&v.graph, v.root);
        tree.insert(&v.path, node, &v.name)?;
    }
    for (t, &node) in tensors.iter().zip(&nodes) {
        for alias in &t.aliases {
            tree.insert(alias, node, &dotted(alias))?;
        }
    }
    let root = tree.emit(&mut graph);
    let pickle = pickle::write(&graph, root)?;
    let prefix = archive_prefix(out);
    write_atomically(out, |file| -> Result<u64, DcpError> {
        // Unbuffered: headers are written in one call each, and the tensors' long runs are
        // copied file to file, which needs the file itself as the writer's output.
        let mut writer = TorchZipWriter::new(&*file, &prefix, 64);
        writer.add_bytes("data.pkl", &pickle)?;
        writer.add_bytes(".format_version", b"1")?;
        writer.add_bytes(".storage_alignment", b"64")?;
        writer.add_bytes("byteorder", b"little")?;
        let mut buf = vec![0; BUFFER];
        let mut bytes = 0;
        for (key, t) in tensors.iter().enumerate() {
            let source = reader(t, files);
            let len = source.len();
            let placement = source.placement(DIRECT_RUN);
            let mut pieces = GatherPieces {
                source,
                buf: &mut buf,
            };
            writer.add_pieces(&format!("data/{key}"), len, &mut pieces, placement)?;
            bytes += len;
        }
        writer.add_bytes("version", b"3\n")?;
        writer.finish()?;
        Ok(bytes)
    })
}

/// A tensor's bytes as zip record pieces: each run of at least [`DIRECT_RUN`] bytes (a
/// row-sharded chunk) as a file range, with its chunk's CRC-32 when known, and shorter runs
/// (a column-sharded chunk's rows) gathered into the buffer.
struct GatherPieces<'a, 'b> {
    source: GatherReader<'a>,
    buf: &'b mut [u8],
}

impl Pieces for GatherPieces<'_, '_> {
    fn next_piece(&mut self) -> io::Result<Option<Piece<'_>>> {
        Ok(match self.source.step(self.buf, DIRECT_RUN)? {
            Step::End => None,
            Step::Buffered(n) => Some(Piece::Bytes(&self.buf[..n])),
            Step::Direct {
                file,
                offset,
                len,
                crc32,
            } => Some(Piece::Range {
                file,
                offset,
                len,
                crc32,
            }),
        })
    }
}

/// The archive folder torch derives from an output path (its file stem), or `archive`.
fn archive_prefix(out: &Path) -> String {
    match out.file_stem().and_then(|s| s.to_str()) {
        Some(stem) if !stem.is_empty() && stem.is_ascii() => stem.to_owned(),
        _ => "archive".to_owned(),
    }
}

/// A tensor of a safetensors output: its plan, under the name its bytes are stored by.
struct Stored<'a> {
    plan: &'a TensorPlan,
    name: String,
    dtype: ::safetensors::Dtype,
}

impl Describe for Stored<'_> {
    fn described(&self) -> Described<'_> {
        Described {
            name: &self.name,
            dtype: self.dtype,
            shape: &self.plan.size,
        }
    }
}

fn write_safetensors(
    tensors: &[TensorPlan],
    files: &HashMap<String, File>,
    out: &Path,
) -> Result<u64, DcpError> {
    let mut order: Vec<Stored> = Vec::new();
    let mut metadata = BTreeMap::from([("format".to_owned(), "pt".to_owned())]);
    for t in tensors {
        let dtype = format::dtype(t.dtype).ok_or_else(|| DcpError::Unsupported {
            what: format!("`{}`: {} tensors in safetensors", t.name, t.dtype),
        })?;
        // Tied names as `safetensors.torch.save_model` writes them (and `to-safetensors`):
        // the bytes once, under the alphabetically first name; the others in the metadata.
        let mut names: Vec<String> = t.aliases.iter().map(|a| dotted(a)).collect();
        names.push(t.name.clone());
        names.sort();
        let kept = names.remove(0);
        for alias in names {
            metadata.insert(alias, kept.clone());
        }
        order.push(Stored {
            plan: t,
            name: kept,
            dtype,
        });
    }
    let head = format::lay_out(&mut order, metadata).map_err(|e| match e {
        WriteError::TooLarge(_) | WriteError::Duplicate(_) => DcpError::Layout {
            what: e.to_string(),
        },
        other => DcpError::Safetensors(other),
    })?;
    write_atomically(out, |file| -> Result<u64, DcpError> {
        let mut out: &File = file;
        out.write_all(&head)?;
        let mut buf = vec![0; BUFFER];
        let mut bytes = 0;
        for stored in &order {
            bytes += copy_tensor(&mut reader(stored.plan, files), out, &mut buf)?;
        }
        Ok(bytes)
    })
}

/// Runs at least this long are copied file to file by the kernel.
const DIRECT_RUN: u64 = 1 << 20;

/// Appends a tensor's bytes to `out` at its cursor: each long run (a row-sharded chunk) with
/// `io::copy` between the two files, which is `copy_file_range` on Linux (one copy in the
/// kernel instead of a read and a write through this process); shorter runs through `buf`.
fn copy_tensor(source: &mut GatherReader, mut out: &File, buf: &mut [u8]) -> io::Result<u64> {
    let mut bytes = 0;
    loop {
        match source.step(buf, DIRECT_RUN)? {
            Step::End => return Ok(bytes),
            Step::Buffered(n) => {
                out.write_all(&buf[..n])?;
                bytes += n as u64;
            }
            Step::Direct {
                file, offset, len, ..
            } => {
                copy_range(file, offset, len, &mut out)?;
                bytes += len;
            }
        }
    }
}
