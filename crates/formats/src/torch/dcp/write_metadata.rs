//! The `.metadata` pickle of a DCP checkpoint, written as `FileSystemWriter` pickles it.
//!
//! Every class is a dataclass instance in the form Python's pickler gives one: `NEWOBJ` of
//! the class with no arguments, then `BUILD` with its field dict (`Metadata`,
//! `TensorStorageMetadata`, `ChunkStorageMetadata`, `BytesStorageMetadata`, `MetadataIndex`,
//! `_StorageInfo`), except `TensorProperties`, whose `__setstate__` takes the tuple
//! `(dtype, layout, requires_grad, memory format encoding, pin_memory)`. Sizes and offsets are
//! `torch.Size(tuple)`. The result is what [`super::metadata::parse`] reads back.

use std::collections::HashMap;

use ckpt_pickle::{self as pickle, Constructor, Global, Graph, NodeId, Object, Value};

use super::metadata::{ChunkBox, EntryKind, Metadata, PathKey, StorageKey};
use super::DcpError;

const MODULE: &str = "torch.distributed.checkpoint.metadata";

/// The DCP format version `FileSystemWriter` records (torch 2.4 and later).
pub const DCP_VERSION: &str = "1.0.0";

/// Serializes `metadata`. `storage_data` lists every tensor chunk and every value the entries
/// name, in entry order; each must be in `metadata.storage`.
pub fn write(metadata: &Metadata) -> Result<Vec<u8>, DcpError> {
    let mut out = Builder {
        graph: Graph::new(),
        globals: HashMap::new(),
    };
    let root = out.metadata(metadata)?;
    Ok(pickle::write(&out.graph, root)?)
}

struct Builder {
    graph: Graph,
    /// One node per global, so each is written once and fetched from the memo after.
    globals: HashMap<(&'static str, String), NodeId>,
}

impl Builder {
    fn add(&mut self, value: Value) -> NodeId {
        self.graph.add(value)
    }

    fn global(&mut self, module: &'static str, name: &str) -> NodeId {
        if let Some(&node) = self.globals.get(&(module, name.to_owned())) {
            return node;
        }
        let node = self.add(Value::Global(Global::new(module, name)));
        self.globals.insert((module, name.to_owned()), node);
        node
    }

    fn str(&mut self, s: &str) -> NodeId {
        self.add(Value::Str(s.to_owned()))
    }

    fn int(&mut self, n: u64) -> Result<NodeId, DcpError> {
        let n = i64::try_from(n).map_err(|_| DcpError::Layout {
            what: format!("{n} does not fit a pickle integer"),
        })?;
        Ok(self.add(Value::Int(n)))
    }

    /// `module.class()` built by `NEWOBJ`, with `state` applied by `BUILD`.
    fn instance(&mut self, module: &'static str, class: &str, state: NodeId) -> NodeId {
        let class = self.global(module, class);
        let args = self.add(Value::Tuple(Vec::new()));
        let mut object = Object::new(Constructor::NewObj { class, args });
        object.state = Some(state);
        self.add(Value::Object(object))
    }

    /// `callable(*args)` built by `REDUCE`.
    fn call(&mut self, module: &'static str, name: &str, args: Vec<NodeId>) -> NodeId {
        let callable = self.global(module, name);
        let args = self.add(Value::Tuple(args));
        self.add(Value::Object(Object::new(Constructor::Reduce {
            callable,
            args,
        })))
    }

    fn fields(&mut self, fields: Vec<(&str, NodeId)>) -> NodeId {
        let pairs = fields.into_iter().map(|(k, v)| (self.str(k), v)).collect();
        self.add(Value::Dict(pairs))
    }

    fn size(&mut self, dims: &[u64]) -> Result<NodeId, DcpError> {
        let items = dims
            .iter()
            .map(|&d| self.int(d))
            .collect::<Result<_, _>>()?;
        let tuple = self.add(Value::Tuple(items));
        Ok(self.call("torch", "Size", vec![tuple]))
    }

    fn metadata(&mut self, metadata: &Metadata) -> Result<NodeId, DcpError> {
        let mut sd = Vec::with_capacity(metadata.entries.len());
        let mut planner = Vec::with_capacity(metadata.entries.len());
        let mut storage = Vec::new();
        for entry in &metadata.entries {
            let key = self.str(&entry.fqn);
            let value = match &entry.kind {
                EntryKind::Bytes => {
                    storage.push((entry.fqn.clone(), None));
                    let state = self.fields(Vec::new());
                    self.instance(MODULE, "BytesStorageMetadata", state)
                }
                EntryKind::Tensor {
                    dtype,
                    size,
                    chunks,
                } => {
                    storage.extend(
                        chunks
                            .iter()
                            .map(|c| (entry.fqn.clone(), Some(c.offsets.clone()))),
                    );
                    let properties = self.properties(dtype.name());
                    let size = self.size(size)?;
                    let chunks = chunks
                        .iter()
                        .map(|c| self.chunk(c))
                        .collect::<Result<_, _>>()?;
                    let chunks = self.add(Value::List(chunks));
                    let state = self.fields(vec![
                        ("properties", properties),
                        ("size", size),
                        ("chunks", chunks),
                    ]);
                    self.instance(MODULE, "TensorStorageMetadata", state)
                }
            };
            sd.push((key, value));
            let path = entry
                .path
                .iter()
                .map(|k| match k {
                    PathKey::Key(s) => Ok(self.str(s)),
                    PathKey::Index(i) => self.int(*i),
                })
                .collect::<Result<_, _>>()?;
            let key = self.str(&entry.fqn);
            let path = self.add(Value::Tuple(path));
            planner.push((key, path));
        }
        let storage = storage
            .into_iter()
            .enumerate()
            .map(|(index, key)| self.storage_item(metadata, index, key))
            .collect::<Result<_, _>>()?;
        let sd = self.add(Value::Dict(sd));
        let planner = self.add(Value::Dict(planner));
        let storage = self.add(Value::Dict(storage));
        let storage_meta = self.add(Value::None);
        let version = self.str(metadata.version.as_deref().unwrap_or(DCP_VERSION));
        let state = self.fields(vec![
            ("state_dict_metadata", sd),
            ("planner_data", planner),
            ("storage_data", storage),
            ("storage_meta", storage_meta),
            ("version", version),
        ]);
        Ok(self.instance(MODULE, "Metadata", state))
    }

    /// `TensorProperties` of a dense, contiguous, unpinned tensor that needs no gradient.
    fn properties(&mut self, dtype: &str) -> NodeId {
        let dtype = self.global("torch", dtype);
        let strided = self.str("torch.strided");
        let layout = self.call("torch.serialization", "_get_layout", vec![strided]);
        let no = self.add(Value::Bool(false));
        let contiguous = self.add(Value::Int(0));
        let memory_format = self.call(MODULE, "_MEM_FORMAT_ENCODING", vec![contiguous]);
        let state = self.add(Value::Tuple(vec![dtype, layout, no, memory_format, no]));
        self.instance(MODULE, "TensorProperties", state)
    }

    fn chunk(&mut self, chunk: &ChunkBox) -> Result<NodeId, DcpError> {
        let offsets = self.size(&chunk.offsets)?;
        let sizes = self.size(&chunk.sizes)?;
        let state = self.fields(vec![("offsets", offsets), ("sizes", sizes)]);
        Ok(self.instance(MODULE, "ChunkStorageMetadata", state))
    }

    /// One `MetadataIndex → _StorageInfo` pair of `storage_data`.
    fn storage_item(
        &mut self,
        metadata: &Metadata,
        index: usize,
        key: StorageKey,
    ) -> Result<(NodeId, NodeId), DcpError> {
        let info = metadata.storage.get(&key).ok_or_else(|| DcpError::Layout {
            what: format!("`{}`: no storage recorded for an item", key.0),
        })?;
        let fqn = self.str(&key.0);
        let hint = self.int(index as u64)?;
        let mut fields = vec![("fqn", fqn), ("index", hint)];
        if let Some(offsets) = &key.1 {
            fields.push(("offset", self.size(offsets)?));
        }
        let state = self.fields(fields);
        let index = self.instance(MODULE, "MetadataIndex", state);
        let path = self.str(&info.relative_path);
        let offset = self.int(info.offset)?;
        let length = self.int(info.length)?;
        let state = self.fields(vec![
            ("relative_path", path),
            ("offset", offset),
            ("length", length),
        ]);
        let info = self.instance(
            "torch.distributed.checkpoint.filesystem",
            "_StorageInfo",
            state,
        );
        Ok((index, info))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::torch::dcp::metadata::{parse, Entry, StorageInfo};
    use crate::torch::DType;

    fn sample() -> Metadata {
        let chunks = vec![
            ChunkBox {
                offsets: vec![0, 0],
                sizes: vec![3, 4],
            },
            ChunkBox {
                offsets: vec![3, 0],
                sizes: vec![2, 4],
            },
        ];
        let info = |file: &str, offset| StorageInfo {
            relative_path: file.into(),
            offset,
            length: 100,
            transforms: Vec::new(),
        };
        let storage = HashMap::from([
            (
                ("model.w".into(), Some(vec![0, 0])),
                info("__0_0.distcp", 0),
            ),
            (
                ("model.w".into(), Some(vec![3, 0])),
                info("__1_0.distcp", 0),
            ),
            (("step".into(), Some(vec![])), info("__0_0.distcp", 100)),
            (("groups.0.lr".into(), None), info("__0_0.distcp", 200)),
        ]);
        Metadata {
            entries: vec![
                Entry {
                    fqn: "model.w".into(),
                    path: vec![PathKey::Key("model".into()), PathKey::Key("w".into())],
                    kind: EntryKind::Tensor {
                        dtype: DType::BFloat16,
                        size: vec![5, 4],
                        chunks,
                    },
                },
                Entry {
                    fqn: "step".into(),
                    path: vec![PathKey::Key("step".into())],
                    kind: EntryKind::Tensor {
                        dtype: DType::Float32,
                        size: vec![],
                        chunks: vec![ChunkBox {
                            offsets: vec![],
                            sizes: vec![],
                        }],
                    },
                },
                Entry {
                    fqn: "groups.0.lr".into(),
                    path: vec![
                        PathKey::Key("groups".into()),
                        PathKey::Index(0),
                        PathKey::Key("lr".into()),
                    ],
                    kind: EntryKind::Bytes,
                },
            ],
            storage,
            version: Some(DCP_VERSION.into()),
        }
    }

    #[test]
    fn written_metadata_reads_back_the_same() {
        let metadata = sample();
        let bytes = write(&metadata).unwrap();
        let decoded = ckpt_pickle::read(&bytes).unwrap();
        let back = parse(&decoded.graph, decoded.root).unwrap();
        assert_eq!(back.entries, metadata.entries);
        assert_eq!(back.storage, metadata.storage);
        assert_eq!(back.version, metadata.version);
    }

    #[test]
    fn an_entry_without_storage_is_refused() {
        let mut metadata = sample();
        metadata.storage.remove(&("step".to_owned(), Some(vec![])));
        let err = write(&metadata).unwrap_err().to_string();
        assert!(err.contains("`step`"), "{err}");
    }
}
