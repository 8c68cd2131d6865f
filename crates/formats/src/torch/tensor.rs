//! What the value graph means to torch: storages, tensors and parameters.
//!
//! [`scan`] walks a graph once and finds every storage reference (persistent id), every tensor
//! rebuild call and every parameter, without copying or decoding any tensor bytes.

use std::collections::{BTreeMap, HashSet};

use ckpt_pickle::{Constructor, Global, Graph, NodeId, Object, Value, MAX_DEPTH};

use super::dtype::DType;
use super::TorchError;

/// The name of a storage record: `data/<key>` in a zip, a key in the legacy key list.
pub type StorageKey = String;

/// One `('storage', type, key, location, numel[, view_metadata])` persistent id.
#[derive(Clone, Debug, PartialEq)]
pub struct StorageRef {
    /// The `PersistentId` node.
    pub pid: NodeId,
    /// The tuple inside it.
    pub tuple: NodeId,
    /// The record name of its bytes (`data/<key>` in a zip file).
    pub key: StorageKey,
    /// The location tag exactly as written.
    pub location: String,
    /// `None` for `UntypedStorage` (then `numel` counts bytes).
    pub dtype: Option<DType>,
    /// Elements (bytes for an untyped storage), as the persistent id says.
    pub numel: u64,
}

impl StorageRef {
    /// Bytes the storage record holds: `numel × element size`.
    pub fn nbytes(&self) -> Option<u64> {
        let size = self.dtype.map_or(1, DType::element_size) as u64;
        self.numel.checked_mul(size)
    }
}

/// Which rebuild function a tensor uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rebuild {
    /// `torch._utils._rebuild_tensor` (very old files): `(storage, offset, size, stride)`.
    V1,
    /// `torch._utils._rebuild_tensor_v2`: typed storage, legacy dtypes.
    V2,
    /// `torch._utils._rebuild_tensor_v3`: untyped storage plus a dtype argument.
    V3,
    /// `torch._utils._rebuild_qtensor`: quantized.
    Quantized,
    /// torch_npu's `_rebuild_npu_tensor`: a `cpu`-tagged storage plus an NPU format.
    Npu,
}

impl Rebuild {
    /// The rebuild function `module.name` is, if it is one.
    pub(crate) fn from_global(module: &str, name: &str) -> Option<Rebuild> {
        match (module, name) {
            ("torch._utils", "_rebuild_tensor") => Some(Rebuild::V1),
            ("torch._utils", "_rebuild_tensor_v2") => Some(Rebuild::V2),
            ("torch._utils", "_rebuild_tensor_v3") => Some(Rebuild::V3),
            ("torch._utils", "_rebuild_qtensor") => Some(Rebuild::Quantized),
            ("torch_npu.utils.storage", "_rebuild_npu_tensor") => Some(Rebuild::Npu),
            _ => None,
        }
    }
}

/// A dense tensor: a view of one storage.
/// One tensor: a rebuild call over a storage, with its view (offset, shape, strides).
#[derive(Clone, Debug, PartialEq)]
pub struct TensorRef {
    /// The rebuild call's `Object` node.
    pub node: NodeId,
    /// Its argument tuple.
    pub args: NodeId,
    /// Which rebuild function made it.
    pub rebuild: Rebuild,
    /// Its storage.
    pub storage: StorageRef,
    /// Its element type.
    pub dtype: DType,
    /// Where it starts in the storage, in elements.
    pub offset: u64,
    /// Its shape.
    pub shape: Vec<u64>,
    /// Its strides, in elements.
    pub stride: Vec<i64>,
}

impl TensorRef {
    /// Elements in the view (the product of the shape).
    pub fn numel(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Elements of the storage this view touches, from element 0: `offset + 1 + Σ (size−1)·stride`,
    /// or 0 for an empty tensor. `None` on overflow or a negative stride.
    pub fn extent(&self) -> Option<u64> {
        if self.shape.contains(&0) {
            return Some(0);
        }
        let mut last = self.offset;
        for (&size, &stride) in self.shape.iter().zip(&self.stride) {
            let stride = u64::try_from(stride).ok()?;
            last = last.checked_add((size - 1).checked_mul(stride)?)?;
        }
        last.checked_add(1)
    }
}

/// Everything [`scan`] found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Tensors in first-encounter order.
    pub tensors: Vec<TensorRef>,
    /// Storage references in first-encounter order (one per persistent-id node).
    pub storages: Vec<StorageRef>,
    /// Parameter wrapper nodes (`_rebuild_parameter*`), keyed by node, with the tensor they wrap.
    pub parameters: BTreeMap<NodeId, NodeId>,
    /// Every global the graph names.
    pub globals: Vec<ckpt_pickle::Global>,
    /// Sparse and nested tensor rebuild calls (see `composite`).
    pub composites: Vec<NodeId>,
}

impl Scan {
    /// Storages by key, one entry per key, in first-encounter order.
    pub fn unique_storages(&self) -> Vec<&StorageRef> {
        let mut seen = HashSet::new();
        self.storages
            .iter()
            .filter(|s| seen.insert(s.key.as_str()))
            .collect()
    }

    /// The tensor whose rebuild call is `node`, if any.
    pub fn tensor_at(&self, node: NodeId) -> Option<&TensorRef> {
        self.tensors.iter().find(|t| t.node == node)
    }
}

/// Walks the graph from `root` and interprets every torch construct in it.
///
/// Checks on the way: storage ids are well formed; one key is never given two dtypes or two
/// sizes; each tensor's view fits inside its storage.
pub fn scan(graph: &Graph, root: NodeId) -> Result<Scan, TorchError> {
    let mut scan = Scan::default();
    let mut visited = HashSet::new();
    let mut stack = vec![(root, 0usize)];
    // Depth-first pre-order with children pushed in reverse: the same order the pickle writer
    // emits nodes, so "first encounter" here is first encounter in the output file.
    while let Some((id, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(TorchError::TooDeep);
        }
        if !visited.insert(id) {
            continue;
        }
        match graph.get(id) {
            Value::PersistentId(pid) => {
                if let Some(storage) = storage_ref(graph, id, *pid)? {
                    scan.storages.push(storage);
                }
            }
            Value::Global(g) => scan.globals.push(g.clone()),
            Value::Object(_) => {
                if let Some(tensor) = tensor_ref(graph, id)? {
                    scan.tensors.push(tensor);
                } else if let Some(inner) = parameter_of(graph, id) {
                    scan.parameters.insert(id, inner);
                } else if graph.reduce_of_global(id).is_some_and(|(g, _)| {
                    g.module == "torch._utils"
                        && matches!(
                            g.name.as_str(),
                            "_rebuild_sparse_tensor" | "_rebuild_nested_tensor"
                        )
                }) {
                    scan.composites.push(id);
                }
            }
            _ => {}
        }
        let children = graph.get(id).children();
        stack.extend(children.into_iter().rev().map(|c| (c, depth + 1)));
    }
    check_storages(&scan)?;
    Ok(scan)
}

fn check_storages(scan: &Scan) -> Result<(), TorchError> {
    let mut by_key: BTreeMap<&str, &StorageRef> = BTreeMap::new();
    for storage in &scan.storages {
        storage.nbytes().ok_or_else(|| TorchError::Invalid {
            what: format!("storage `{}` size overflows", storage.key),
        })?;
        match by_key.get(storage.key.as_str()) {
            Some(first) if first.dtype != storage.dtype || first.numel != storage.numel => {
                return Err(TorchError::Invalid {
                    what: format!(
                        "storage `{}` is referenced with two different types or sizes",
                        storage.key
                    ),
                })
            }
            Some(_) => {}
            None => {
                by_key.insert(&storage.key, storage);
            }
        }
    }
    for tensor in &scan.tensors {
        // Zero strides let a huge shape fit a tiny storage; its element and byte counts
        // must still fit 64 bits, so `numel()` and size sums never overflow.
        let bytes = tensor
            .shape
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .and_then(|n| n.checked_mul(tensor.dtype.element_size() as u64))
            .filter(|&b| b <= i64::MAX as u64);
        if bytes.is_none() {
            return Err(TorchError::Invalid {
                what: format!(
                    "a {} tensor of shape {:?} has more elements than fit in 64 bits",
                    tensor.dtype, tensor.shape
                ),
            });
        }
        let storage = &tensor.storage;
        // A typed storage counts elements of its dtype; an untyped one counts bytes.
        let available = match storage.dtype {
            Some(_) => Some(storage.numel),
            None => Some(storage.numel / tensor.dtype.element_size() as u64),
        };
        let needed = tensor.extent();
        let fits = matches!((needed, available), (Some(n), Some(a)) if n <= a);
        if !fits {
            return Err(TorchError::Invalid {
                what: format!(
                    "a {} tensor of shape {:?} (offset {}, stride {:?}) does not fit in storage `{}` of {} elements",
                    tensor.dtype, tensor.shape, tensor.offset, tensor.stride, storage.key, storage.numel
                ),
            });
        }
    }
    Ok(())
}

/// Reads a `('storage', type, key, location, numel[, view])` persistent id. Other persistent
/// ids (a legacy `('module', …)` id, TorchScript's plain ids) are not storages: `None`.
fn storage_ref(
    graph: &Graph,
    pid: NodeId,
    tuple: NodeId,
) -> Result<Option<StorageRef>, TorchError> {
    let Some(items) = graph.tuple(tuple) else {
        return Ok(None);
    };
    if items.first().and_then(|&t| graph.str(t)) != Some("storage") {
        return Ok(None);
    }
    let bad = |why: &str| TorchError::Invalid {
        what: format!("malformed storage id: {why}"),
    };
    if items.len() != 5 && items.len() != 6 {
        return Err(bad("expected 5 or 6 fields"));
    }
    let class = graph
        .global(items[1])
        .ok_or_else(|| bad("storage type is not a global"))?;
    let dtype = storage_dtype(&class.name).ok_or_else(|| TorchError::Invalid {
        what: format!("unknown storage type `{class}`"),
    })?;
    let key = graph
        .str(items[2])
        .ok_or_else(|| bad("key is not a string"))?
        .to_owned();
    let location = graph
        .str(items[3])
        .ok_or_else(|| bad("location is not a string"))?
        .to_owned();
    let numel = graph
        .int(items[4])
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| bad("size is not a non-negative integer"))?;
    Ok(Some(StorageRef {
        pid,
        tuple,
        key,
        location,
        dtype,
        numel,
    }))
}

/// `Some(None)` for `UntypedStorage`/`TypedStorage`, `Some(Some(dtype))` for a typed class.
fn storage_dtype(class: &str) -> Option<Option<DType>> {
    match class {
        "UntypedStorage" | "TypedStorage" | "_UntypedStorage" => Some(None),
        other => DType::from_storage_class(other).map(Some),
    }
}

/// A fresh C-contiguous tensor over storage `key` (on `cpu`), as `torch.save` writes it: a
/// typed storage and `_rebuild_tensor_v2` for the dtypes that have a storage class, an
/// `UntypedStorage` of bytes and `_rebuild_tensor_v3` with the dtype for the others (complex32,
/// the unsigned and float8 types). `None` when its element or byte count overflows `i64`.
pub(crate) fn fresh_tensor(
    graph: &mut Graph,
    dtype: DType,
    size: &[u64],
    key: &str,
) -> Option<NodeId> {
    let numel = size.iter().try_fold(1u64, |n, &s| n.checked_mul(s))?;
    let (storage_module, class, count) = match dtype.storage_class() {
        Some(class) => ("torch", class, numel),
        None => (
            "torch.storage",
            "UntypedStorage",
            numel.checked_mul(dtype.element_size() as u64)?,
        ),
    };
    let count = i64::try_from(count).ok()?;
    let int = |n: u64| Value::Int(i64::try_from(n).unwrap_or(i64::MAX));
    let pid_items = vec![
        graph.add(Value::Str("storage".into())),
        graph.add(Value::Global(Global::new(storage_module, class))),
        graph.add(Value::Str(key.to_owned())),
        graph.add(Value::Str("cpu".into())),
        graph.add(Value::Int(count)),
    ];
    let pid_tuple = graph.add(Value::Tuple(pid_items));
    let mut strides = vec![1u64; size.len()];
    for d in (0..size.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1].saturating_mul(size[d + 1]);
    }
    let size_items = size.iter().map(|&s| graph.add(int(s))).collect();
    let stride_items = strides.iter().map(|&s| graph.add(int(s))).collect();
    let hooks_class = graph.add(Value::Global(Global::new("collections", "OrderedDict")));
    let hooks_args = graph.add(Value::Tuple(Vec::new()));
    let mut args = vec![
        graph.add(Value::PersistentId(pid_tuple)),
        graph.add(Value::Int(0)),
        graph.add(Value::Tuple(size_items)),
        graph.add(Value::Tuple(stride_items)),
        graph.add(Value::Bool(false)),
        graph.add(Value::Object(Object::new(Constructor::Reduce {
            callable: hooks_class,
            args: hooks_args,
        }))),
    ];
    let rebuild = if dtype.storage_class().is_some() {
        "_rebuild_tensor_v2"
    } else {
        args.push(graph.add(Value::Global(Global::new("torch", dtype.name()))));
        "_rebuild_tensor_v3"
    };
    let args = graph.add(Value::Tuple(args));
    let callable = graph.add(Value::Global(Global::new("torch._utils", rebuild)));
    Some(graph.add(Value::Object(Object::new(Constructor::Reduce {
        callable,
        args,
    }))))
}

fn tensor_ref(graph: &Graph, node: NodeId) -> Result<Option<TensorRef>, TorchError> {
    let Some((global, args)) = graph.reduce_of_global(node) else {
        return Ok(None);
    };
    rebuild_call(graph, node, global, args)
}

/// The dense tensor `node` holds: a rebuild call itself, a parameter wrapping one, or a
/// `torch._tensor._rebuild_from_type_v2(rebuild, torch.Tensor | Parameter, args, state)`
/// call (how a tensor carrying Python attributes is pickled, as DeepSpeed's flat groups
/// are). `None` for anything else; `Err` for a malformed rebuild call.
pub fn dense_tensor(graph: &Graph, node: NodeId) -> Result<Option<TensorRef>, TorchError> {
    let node = parameter_of(graph, node).unwrap_or(node);
    if let Some(tensor) = tensor_ref(graph, node)? {
        return Ok(Some(tensor));
    }
    let Some((global, args)) = graph.reduce_of_global(node) else {
        return Ok(None);
    };
    if !global.is("torch._tensor", "_rebuild_from_type_v2") {
        return Ok(None);
    }
    let Some(&[func, class, inner, _state]) = graph.tuple(args) else {
        return Ok(None);
    };
    let plain = graph
        .global(class)
        .is_some_and(|g| g.is("torch", "Tensor") || g.is("torch.nn.parameter", "Parameter"));
    match graph.global(func) {
        Some(g) if plain => rebuild_call(graph, node, g, inner),
        _ => Ok(None),
    }
}

/// A call of rebuild function `global` with argument tuple `args`, made at `node`.
fn rebuild_call(
    graph: &Graph,
    node: NodeId,
    global: &ckpt_pickle::Global,
    args: NodeId,
) -> Result<Option<TensorRef>, TorchError> {
    let Some(rebuild) = Rebuild::from_global(&global.module, &global.name) else {
        return Ok(None);
    };
    let bad = |why: &str| TorchError::Invalid {
        what: format!("malformed {}.{} call: {why}", global.module, global.name),
    };
    let items = graph
        .tuple(args)
        .ok_or_else(|| bad("arguments are not a tuple"))?;
    let min_args = match rebuild {
        Rebuild::V1 => 4,
        Rebuild::V2 => 6,
        Rebuild::V3 | Rebuild::Quantized | Rebuild::Npu => 7,
    };
    if items.len() < min_args {
        return Err(bad("too few arguments"));
    }
    let storage = match graph.get(items[0]) {
        Value::PersistentId(tuple) => storage_ref(graph, items[0], *tuple)?,
        _ => None,
    }
    .ok_or_else(|| bad("first argument is not a storage"))?;
    let dtype = match rebuild {
        Rebuild::V3 => {
            let g = graph
                .global(items[6])
                .filter(|g| g.module == "torch")
                .ok_or_else(|| bad("dtype argument is not a torch dtype"))?;
            DType::from_name(&g.name).ok_or_else(|| bad("unknown dtype"))?
        }
        _ => storage
            .dtype
            .ok_or_else(|| bad("an untyped storage needs _rebuild_tensor_v3"))?,
    };
    let offset = graph
        .int(items[1])
        .and_then(|v| u64::try_from(v).ok())
        .ok_or_else(|| bad("storage offset is not a non-negative integer"))?;
    let shape = int_tuple(graph, items[2])
        .and_then(|v| v.into_iter().map(|d| u64::try_from(d).ok()).collect())
        .ok_or_else(|| bad("size is not a tuple of non-negative integers"))?;
    let stride =
        int_tuple(graph, items[3]).ok_or_else(|| bad("stride is not a tuple of integers"))?;
    let shape: Vec<u64> = shape;
    if shape.len() != stride.len() {
        return Err(bad("size and stride differ in length"));
    }
    Ok(Some(TensorRef {
        node,
        args,
        rebuild,
        storage,
        dtype,
        offset,
        shape,
        stride,
    }))
}

/// The integers of a tuple, or of a `torch.Size(tuple)` call.
pub(crate) fn int_tuple(graph: &Graph, id: NodeId) -> Option<Vec<i64>> {
    let id = match graph.reduce_of_global(id) {
        Some((g, args)) if g.is("torch", "Size") => *graph.tuple(args)?.first()?,
        _ => id,
    };
    graph
        .tuple(id)?
        .iter()
        .map(|&item| graph.int(item))
        .collect()
}

/// The tensor a `_rebuild_parameter(tensor, requires_grad, hooks[, state])` call wraps.
fn parameter_of(graph: &Graph, node: NodeId) -> Option<NodeId> {
    let (global, args) = graph.reduce_of_global(node)?;
    let is_parameter = global.module == "torch._utils"
        && matches!(
            global.name.as_str(),
            "_rebuild_parameter" | "_rebuild_parameter_with_state"
        );
    if !is_parameter {
        return None;
    }
    graph.tuple(args)?.first().copied()
}

/// A tensor made of other tensors (`_rebuild_sparse_tensor`, `_rebuild_nested_tensor`): one
/// tensor object to torch, several dense tensors in the file.
#[derive(Clone, Debug, PartialEq)]
pub struct Composite {
    pub node: NodeId,
    /// The dense tensor holding the values (its dtype is the composite's dtype).
    pub values: NodeId,
    /// Every dense tensor it is made of, `values` included.
    pub parts: Vec<NodeId>,
}

/// The composite tensor rooted at `node`, if it is one.
pub fn composite(graph: &Graph, scan: &Scan, node: NodeId) -> Option<Composite> {
    let (global, args) = graph.reduce_of_global(node)?;
    let args = graph.tuple(args)?;
    let parts: Vec<NodeId> = match (global.module.as_str(), global.name.as_str()) {
        // (layout, (indices, values, size[, coalesced])) or (layout, (compressed, plain, values, size))
        ("torch._utils", "_rebuild_sparse_tensor") => graph.tuple(*args.get(1)?)?.to_vec(),
        // (buffer, sizes, strides, offsets)
        ("torch._utils", "_rebuild_nested_tensor") => args.to_vec(),
        _ => return None,
    };
    let parts: Vec<NodeId> = parts
        .into_iter()
        .filter(|&p| scan.tensor_at(p).is_some())
        .collect();
    let values = match (global.name.as_str(), parts.len()) {
        ("_rebuild_nested_tensor", _) => *parts.first()?,
        (_, 3) => parts[2],
        _ => *parts.get(1)?,
    };
    Some(Composite {
        node,
        values,
        parts,
    })
}

/// Whether the node is a tensor or parameter rebuild call (`Object` with a known rebuild).
pub fn is_tensor_like(graph: &Graph, node: NodeId) -> bool {
    match graph.get(node) {
        Value::Object(object) => match object.constructor {
            Constructor::Reduce { callable, .. } => graph.global(callable).is_some_and(|g| {
                Rebuild::from_global(&g.module, &g.name).is_some()
                    || (g.module == "torch._utils" && g.name.starts_with("_rebuild_"))
                    || (g.module == "torch._tensor" && g.name.starts_with("_rebuild_from_type"))
            }),
            _ => false,
        },
        _ => false,
    }
}
