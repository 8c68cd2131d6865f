//! The `.metadata` pickle of a DCP checkpoint, read as data.
//!
//! `torch.distributed.checkpoint` pickles a `Metadata` dataclass: `state_dict_metadata` maps
//! every flattened key (FQN) to a `TensorStorageMetadata` (dtype, global size, chunks) or a
//! `BytesStorageMetadata`; `storage_data` maps a `MetadataIndex(fqn, chunk offset)` to a
//! `_StorageInfo(relative_path, offset, length)`; `planner_data` maps each FQN to the path of
//! keys it had in the nested state dict. The classes are dataclasses: here they are only
//! names whose fields are read, never constructed.

use std::collections::HashMap;

use crate::torch::DType;
use ckpt_pickle::{Constructor, Graph, NodeId, Value};

use super::DcpError;

/// One key of the nested state dict: a mapping key or a list index.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PathKey {
    /// A mapping key.
    Key(String),
    /// A list index.
    Index(u64),
}

impl std::fmt::Display for PathKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathKey::Key(k) => f.write_str(k),
            PathKey::Index(i) => write!(f, "{i}"),
        }
    }
}

/// A rectangular piece of a tensor: `offsets[d] .. offsets[d] + sizes[d]` on every axis.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChunkBox {
    /// Where the chunk starts on each axis.
    pub offsets: Vec<u64>,
    /// Its extent on each axis.
    pub sizes: Vec<u64>,
}

impl ChunkBox {
    /// Elements in the chunk (`None` on overflow).
    pub fn numel(&self) -> Option<u64> {
        self.sizes.iter().try_fold(1u64, |n, &s| n.checked_mul(s))
    }
}

/// What one FQN holds.
#[derive(Clone, Debug, PartialEq)]
pub enum EntryKind {
    /// A tensor of `size`, stored as `chunks` (possibly one).
    Tensor {
        /// Element type.
        dtype: DType,
        /// The whole tensor's sizes.
        size: Vec<u64>,
        /// The pieces stored (together they must tile `size`).
        chunks: Vec<ChunkBox>,
    },
    /// A pickled Python object (a `torch.save` of it).
    Bytes,
}

/// One flattened state-dict entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The flattened name (`model.layer1.weight`, `optim.state.0.exp_avg`).
    pub fqn: String,
    /// The keys from the root of the nested state dict (one key, the FQN, when the metadata
    /// has no planner data for it).
    pub path: Vec<PathKey>,
    /// What it holds.
    pub kind: EntryKind,
}

/// Where one stored item is: a byte range of a file of the folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageInfo {
    /// The file, relative to the folder (`__0_0.distcp`).
    pub relative_path: String,
    /// First byte of the item in that file.
    pub offset: u64,
    /// Bytes of the item.
    pub length: u64,
    /// Storage-writer extensions applied to the bytes (compression…), by descriptor.
    pub transforms: Vec<String>,
}

/// The key of [`Metadata::storage`]: an FQN and, for a tensor chunk, its offsets.
pub type StorageKey = (String, Option<Vec<u64>>);

/// The decoded `.metadata`.
#[derive(Clone, Debug, Default)]
pub struct Metadata {
    /// Entries in the order the metadata lists them (the order `dcp_to_torch_save` inserts).
    pub entries: Vec<Entry>,
    /// Where every stored item (a whole entry or one chunk) is.
    pub storage: HashMap<StorageKey, StorageInfo>,
    /// The DCP format version string (`1.0.0`), when recorded.
    pub version: Option<String>,
}

const MODULE: &str = "torch.distributed.checkpoint.metadata";

/// Reads the metadata from its decoded pickle.
pub fn parse(graph: &Graph, root: NodeId) -> Result<Metadata, DcpError> {
    let fields = object_state(graph, root, MODULE, "Metadata")?;
    let field = |name: &str| graph.lookup(fields, name);
    let sd =
        field("state_dict_metadata").ok_or_else(|| bad("Metadata has no state_dict_metadata"))?;
    let planner: HashMap<String, Vec<PathKey>> = match field("planner_data") {
        Some(node) if graph.mapping(node).is_some() => planner_paths(graph, node)?,
        _ => HashMap::new(),
    };
    let mut entries = Vec::new();
    for &(key, value) in graph
        .mapping(sd)
        .ok_or_else(|| bad("state_dict_metadata is not a dict"))?
    {
        let fqn = graph
            .str(key)
            .ok_or_else(|| bad("a state_dict_metadata key is not a string"))?
            .to_owned();
        let kind = entry_kind(graph, value).map_err(|e| e.about(&fqn))?;
        let path = planner
            .get(&fqn)
            .cloned()
            .unwrap_or_else(|| vec![PathKey::Key(fqn.clone())]);
        entries.push(Entry { fqn, path, kind });
    }
    let storage_node = field("storage_data").ok_or_else(|| bad("Metadata has no storage_data"))?;
    let mut storage = HashMap::new();
    for &(key, value) in graph
        .mapping(storage_node)
        .ok_or_else(|| bad("storage_data is not a dict"))?
    {
        let index = metadata_index(graph, key)?;
        let info = storage_info(graph, value).map_err(|e| e.about(&index.0))?;
        if storage.insert(index.clone(), info).is_some() {
            return Err(bad(format!("storage_data lists `{}` twice", index.0)));
        }
    }
    let version = field("version")
        .and_then(|v| graph.str(v))
        .map(str::to_owned);
    Ok(Metadata {
        entries,
        storage,
        version,
    })
}

fn bad(what: impl Into<String>) -> DcpError {
    DcpError::Metadata { what: what.into() }
}

/// The class global of an object node, as `(module, name)`.
fn class_of(graph: &Graph, node: NodeId) -> Option<(&str, &str)> {
    let Value::Object(object) = graph.get(node) else {
        return None;
    };
    let class = match object.constructor {
        Constructor::NewObj { class, .. } | Constructor::NewObjEx { class, .. } => class,
        Constructor::Reduce { callable, .. } => callable,
    };
    graph
        .global(class)
        .map(|g| (g.module.as_str(), g.name.as_str()))
}

/// The `BUILD` state of an instance of `module.name`.
fn object_state(graph: &Graph, node: NodeId, module: &str, name: &str) -> Result<NodeId, DcpError> {
    if class_of(graph, node) != Some((module, name)) {
        return Err(bad(format!(
            "expected a {name}, found {}",
            describe(graph, node)
        )));
    }
    match graph.get(node) {
        Value::Object(object) => object
            .state
            .ok_or_else(|| bad(format!("{name} has no fields"))),
        _ => Err(bad(format!("expected a {name}"))),
    }
}

fn describe(graph: &Graph, node: NodeId) -> String {
    match class_of(graph, node) {
        Some((m, n)) => format!("{m}.{n}"),
        None => graph.get(node).kind().to_owned(),
    }
}

fn entry_kind(graph: &Graph, node: NodeId) -> Result<EntryKind, DcpError> {
    match class_of(graph, node) {
        Some((MODULE, "BytesStorageMetadata")) => Ok(EntryKind::Bytes),
        Some((MODULE, "TensorStorageMetadata")) => {
            let state = object_state(graph, node, MODULE, "TensorStorageMetadata")?;
            let properties = graph
                .lookup(state, "properties")
                .ok_or_else(|| bad("no properties"))?;
            let dtype = tensor_dtype(graph, properties)?;
            let size = size(
                graph,
                graph.lookup(state, "size").ok_or_else(|| bad("no size"))?,
            )?;
            let chunk_list = graph
                .lookup(state, "chunks")
                .ok_or_else(|| bad("no chunks"))?;
            let Value::List(items) = graph.get(chunk_list) else {
                return Err(bad("chunks is not a list"));
            };
            let chunks = items
                .iter()
                .map(|&c| {
                    let s = object_state(graph, c, MODULE, "ChunkStorageMetadata")?;
                    let get = |k: &str| {
                        graph
                            .lookup(s, k)
                            .ok_or_else(|| bad(format!("a chunk has no {k}")))
                    };
                    Ok(ChunkBox {
                        offsets: self::size(graph, get("offsets")?)?,
                        sizes: self::size(graph, get("sizes")?)?,
                    })
                })
                .collect::<Result<_, DcpError>>()?;
            Ok(EntryKind::Tensor {
                dtype,
                size,
                chunks,
            })
        }
        _ => Err(bad(format!(
            "unknown storage metadata {}",
            describe(graph, node)
        ))),
    }
}

/// `TensorProperties`: its state is `(dtype, layout, requires_grad, memory_format,
/// pin_memory)` (torch ≥ 2.2) or a field dict (older).
fn tensor_dtype(graph: &Graph, node: NodeId) -> Result<DType, DcpError> {
    let state = object_state(graph, node, MODULE, "TensorProperties")?;
    let dtype = match graph.get(state) {
        Value::Tuple(items) => items.first().copied(),
        _ => graph.lookup(state, "dtype"),
    }
    .ok_or_else(|| bad("TensorProperties has no dtype"))?;
    let global = graph
        .global(dtype)
        .filter(|g| g.module == "torch")
        .ok_or_else(|| bad("the dtype is not a torch dtype"))?;
    DType::from_name(&global.name)
        .ok_or_else(|| bad(format!("unknown dtype torch.{}", global.name)))
}

/// A `torch.Size(tuple)` (or a bare tuple or list) of non-negative integers.
fn size(graph: &Graph, node: NodeId) -> Result<Vec<u64>, DcpError> {
    let tuple = match graph.reduce_of_global(node) {
        Some((g, args)) if g.is("torch", "Size") => graph
            .tuple(args)
            .and_then(|a| a.first().copied())
            .ok_or_else(|| bad("torch.Size without a tuple"))?,
        Some((g, _)) => return Err(bad(format!("expected a torch.Size, found {g}"))),
        None => node,
    };
    let items = match graph.get(tuple) {
        Value::Tuple(items) | Value::List(items) => items,
        other => {
            return Err(bad(format!(
                "expected a size tuple, found {}",
                other.kind()
            )))
        }
    };
    items
        .iter()
        .map(|&i| {
            graph
                .int(i)
                .and_then(|v| u64::try_from(v).ok())
                .ok_or_else(|| bad("a size or offset is not a non-negative integer"))
        })
        .collect()
}

fn metadata_index(graph: &Graph, node: NodeId) -> Result<StorageKey, DcpError> {
    let state = object_state(graph, node, MODULE, "MetadataIndex")?;
    let fqn = graph
        .lookup(state, "fqn")
        .and_then(|f| graph.str(f))
        .ok_or_else(|| bad("a MetadataIndex has no fqn"))?
        .to_owned();
    let offset = match graph.lookup(state, "offset") {
        None => None,
        Some(o) if matches!(graph.get(o), Value::None) => None,
        Some(o) => Some(size(graph, o).map_err(|e| e.about(&fqn))?),
    };
    Ok((fqn, offset))
}

fn storage_info(graph: &Graph, node: NodeId) -> Result<StorageInfo, DcpError> {
    let state = object_state(
        graph,
        node,
        "torch.distributed.checkpoint.filesystem",
        "_StorageInfo",
    )?;
    let int = |k: &str| {
        graph
            .lookup(state, k)
            .and_then(|v| graph.int(v))
            .and_then(|v| u64::try_from(v).ok())
            .ok_or_else(|| bad(format!("_StorageInfo has no valid {k}")))
    };
    let relative_path = graph
        .lookup(state, "relative_path")
        .and_then(|v| graph.str(v))
        .ok_or_else(|| bad("_StorageInfo has no relative_path"))?
        .to_owned();
    let transforms = match graph.lookup(state, "transform_descriptors") {
        None => Vec::new(),
        Some(t) => match graph.get(t) {
            Value::None => Vec::new(),
            Value::List(items) | Value::Tuple(items) => items
                .iter()
                .map(|&i| graph.str(i).unwrap_or("?").to_owned())
                .collect(),
            _ => vec!["?".to_owned()],
        },
    };
    Ok(StorageInfo {
        relative_path,
        offset: int("offset")?,
        length: int("length")?,
        transforms,
    })
}

fn planner_paths(graph: &Graph, node: NodeId) -> Result<HashMap<String, Vec<PathKey>>, DcpError> {
    let mut paths = HashMap::new();
    for &(key, value) in graph.mapping(node).unwrap_or_default() {
        let Some(fqn) = graph.str(key) else {
            return Err(bad("a planner_data key is not a string"));
        };
        let items = match graph.get(value) {
            Value::Tuple(items) | Value::List(items) => items,
            _ => return Err(bad(format!("planner_data for `{fqn}` is not a key path"))),
        };
        let path = items
            .iter()
            .map(|&i| match graph.get(i) {
                Value::Str(s) => Ok(PathKey::Key(s.clone())),
                Value::Int(n) => u64::try_from(*n)
                    .map(PathKey::Index)
                    .map_err(|_| bad(format!("planner_data for `{fqn}` has a negative index"))),
                other => Err(bad(format!(
                    "planner_data for `{fqn}` has a {} key",
                    other.kind()
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        if path.is_empty() {
            return Err(bad(format!("planner_data for `{fqn}` is empty")));
        }
        paths.insert(fqn.to_owned(), path);
    }
    Ok(paths)
}
