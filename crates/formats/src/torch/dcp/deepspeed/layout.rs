//! Where every tensor of the consolidated state dict is, read from a ZeRO folder's pickles as
//! DeepSpeed's `zero_to_fp32.py` reads them (DeepSpeed 0.19's layout).
//!
//! * Optimizer states (every rank): `optimizer_state_dict` holds `zero_stage` (an int or a
//!   `ZeroStageEnum`), `partition_count` (the data-parallel world size, or a list of it per
//!   group) and the rank's fp32 master weights: for ZeRO-1/2 `single_partition_of_fp32_groups`,
//!   one flat partition per parameter group; for ZeRO-3 `fp32_flat_groups`.
//! * Model states (the first file): `buffer_names`, `module` (the buffers' values),
//!   `param_shapes` (one mapping per group, name → `torch.Size`, in flat order),
//!   `frozen_param_shapes` / `frozen_param_fragments`, `shared_params` (tied name → name) and
//!   `ds_version`.
//!
//! ZeRO-1/2: a group's partitions, concatenated in rank order, hold its parameters back to
//! back in `param_shapes` order (each followed by its `param_alignment_paddings` entry, when
//! recorded), the total padded to a multiple of `2 × world`. ZeRO-3: every parameter is split
//! into `world` pieces of `ceil(numel / world)` elements, piece `r` at the same offset of rank
//! `r`'s groups concatenated, the last padded. Frozen parameters are whole in the model states
//! (ZeRO-1/2) or split the same way over every rank's model states (ZeRO-3).
//!
//! The output, in `zero_to_fp32.py`'s key order: buffers (floating ones as float32), frozen
//! parameters, trainable parameters, then each tied name as the same tensor as the name it
//! ties to. Every offset and size read here is checked against the tensors and storage
//! records that exist; nothing is read from a storage.

use std::collections::HashSet;

use crate::torch::contiguous::is_contiguous;
use crate::torch::tensor::{dense_tensor, int_tuple};
use crate::torch::{Checkpoint, DType};
use ckpt_pickle::{Graph, NodeId, Value};

use super::super::DcpError;
use super::Folder;

/// Elements `at .. at + len` of a tensor (row-major), stored contiguously at byte `offset`
/// of file `file` (a name of the folder).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Piece {
    /// The file.
    pub file: String,
    /// Absolute byte offset of the first element in it.
    pub offset: u64,
    /// The first element's index in the tensor.
    pub at: u64,
    /// Elements.
    pub len: u64,
}

/// What a tensor of the state dict is to the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A buffer, from the model states' `module`.
    Buffer,
    /// A parameter that was not trained (`frozen_param_fragments`).
    Frozen,
    /// A trained parameter, from the fp32 master weights.
    Trained,
}

/// One tensor of the consolidated state dict.
///
/// Invariant: `pieces` tile `0 .. numel(shape)` exactly, in order, each inside its file's
/// storage record.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// Its key.
    pub name: String,
    /// Its element type in the output.
    pub dtype: DType,
    /// The element type of the stored bytes when it differs (a float16/bfloat16/float64
    /// buffer, written as float32 as `zero_to_fp32.py` writes it).
    pub stored: Option<DType>,
    /// Its shape.
    pub shape: Vec<u64>,
    /// Where its elements are.
    pub pieces: Vec<Piece>,
    /// Buffer, frozen or trained.
    pub role: Role,
    /// Tied names that are this same tensor (`shared_params`).
    pub aliases: Vec<String>,
}

/// A ZeRO checkpoint's consolidated state dict, located.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// The ZeRO stage (1, 2 or 3).
    pub stage: u64,
    /// The data-parallel world size (ranks).
    pub world: u64,
    /// The DeepSpeed version that saved it, when recorded.
    pub ds_version: Option<String>,
    /// The tensors, in output order.
    pub tensors: Vec<Tensor>,
}

/// Reads the layout of an opened folder (every file already through the security check).
pub fn read(folder: &Folder) -> Result<Layout, DcpError> {
    for (name, ckpt) in folder.model.iter().chain(&folder.optim) {
        if ckpt.zip.as_ref().and_then(|z| z.byteorder.as_deref()) == Some("big") {
            return Err(DcpError::Unsupported {
                what: format!("`{name}`: a big-endian checkpoint"),
            });
        }
    }
    let Some((first_name, first)) = folder.optim.first() else {
        return Err(bad(
            &folder.dir.display().to_string(),
            "no optimizer states",
        ));
    };
    let optim = Pickle::optim(first_name, first)?;
    let stage = optim.stage()?;
    let world = optim.world()?;
    if world != folder.optim.len() as u64 {
        return Err(bad(
            &folder.dir.display().to_string(),
            format!(
                "partition_count says {world} ranks, but {} *_optim_states.pt files are here \
                 (a rank's file is missing, or one of an older checkpoint is left over)",
                folder.optim.len()
            ),
        ));
    }
    for (rank, (name, _)) in folder.optim.iter().enumerate() {
        if !name.contains(&format!("zero_pp_rank_{rank}_")) {
            return Err(bad(name, format!("expected the file of rank {rank} here")));
        }
    }
    let key = match stage {
        1 | 2 => "single_partition_of_fp32_groups",
        3 => "fp32_flat_groups",
        other => return Err(bad(first_name, format!("unknown ZeRO stage {other}"))),
    };
    let mut flat = Vec::with_capacity(folder.optim.len());
    for (name, ckpt) in &folder.optim {
        flat.push(Pickle::optim(name, ckpt)?.flat_groups(key)?);
    }
    let Some((model_name, model_ckpt)) = folder.model.first() else {
        return Err(bad(&folder.dir.display().to_string(), "no model states"));
    };
    let model = Pickle::model(model_name, model_ckpt)?;
    let mut tensors = model.buffers()?;
    let shapes = model.param_shapes()?;
    if stage == 3 {
        tensors.extend(zero3_frozen(folder, &model, world)?);
        tensors.extend(zero3_trained(&flat, &shapes, world, model_name)?);
    } else {
        tensors.extend(model.zero2_frozen()?);
        let paddings = optim.alignment_paddings()?;
        tensors.extend(zero2_trained(
            &flat,
            &shapes,
            paddings.as_deref(),
            world,
            model_name,
        )?);
    }
    let mut seen = HashSet::new();
    for t in &tensors {
        if !seen.insert(t.name.clone()) {
            return Err(bad(model_name, format!("`{}` is listed twice", t.name)));
        }
    }
    for (alias, source) in model.shared()? {
        if seen.contains(&alias) {
            return Err(DcpError::Unsupported {
                what: format!(
                    "`{model_name}`: `{alias}` both holds a tensor and is tied to `{source}`"
                ),
            });
        }
        if let Some(t) = tensors.iter_mut().find(|t| t.name == source) {
            seen.insert(alias.clone());
            t.aliases.push(alias);
        }
    }
    Ok(Layout {
        stage,
        world,
        ds_version: model.text("ds_version"),
        tensors,
    })
}

fn bad(file: &str, what: impl Into<String>) -> DcpError {
    DcpError::DeepSpeed {
        file: file.to_owned(),
        what: what.into(),
    }
}

/// One parameter group of `param_shapes`: each parameter's name and shape, in flat order.
type Group = Vec<(String, Vec<u64>)>;

/// A flat run of elements in a file: a partition, a group, a fragment.
#[derive(Clone, Debug)]
struct Flat {
    file: String,
    offset: u64,
    numel: u64,
    dtype: DType,
}

/// A 1-D range `start .. start + len` of `parts` concatenated, as pieces placed from element
/// `dest` of their tensor. The caller has checked the range lies inside the parts.
fn slice(parts: &[Flat], start: u64, len: u64, dest: u64, pieces: &mut Vec<Piece>) {
    let end = start + len;
    let mut base = 0u64;
    for part in parts {
        let (lo, hi) = (start.max(base), end.min(base + part.numel));
        if lo < hi {
            pieces.push(Piece {
                file: part.file.clone(),
                offset: part.offset + (lo - base) * part.dtype.element_size() as u64,
                at: dest + (lo - start),
                len: hi - lo,
            });
        }
        base += part.numel;
    }
}

/// The one dtype of `parts`.
fn one_dtype(parts: &[Flat], file: &str, what: &str) -> Result<DType, DcpError> {
    let dtype = parts.first().map_or(DType::Float32, |p| p.dtype);
    match parts.iter().find(|p| p.dtype != dtype) {
        Some(p) => Err(bad(
            file,
            format!("{what} mixes {dtype} and {} partitions", p.dtype),
        )),
        None => Ok(dtype),
    }
}

fn numel(shape: &[u64], file: &str, name: &str) -> Result<u64, DcpError> {
    shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= i64::MAX as u64 / 8)
        .ok_or_else(|| bad(file, format!("`{name}`: shape {shape:?} is too large")))
}

/// ZeRO-1/2 trained parameters: group `g` is rank 0's partition `g`, then rank 1's, ….
fn zero2_trained(
    flat: &[Vec<Flat>],
    shapes: &[Group],
    paddings: Option<&[Vec<u64>]>,
    world: u64,
    file: &str,
) -> Result<Vec<Tensor>, DcpError> {
    let mut tensors = Vec::new();
    for (rank, groups) in flat.iter().enumerate() {
        if groups.len() != shapes.len() {
            return Err(bad(
                groups.first().map_or(file, |f| f.file.as_str()),
                format!(
                    "rank {rank} holds {} fp32 partitions, but param_shapes lists {} groups",
                    groups.len(),
                    shapes.len()
                ),
            ));
        }
    }
    for (g, params) in shapes.iter().enumerate() {
        let parts: Vec<Flat> = flat.iter().map(|groups| groups[g].clone()).collect();
        let dtype = one_dtype(&parts, file, &format!("param group {g}"))?;
        let avail: u64 = parts.iter().map(|p| p.numel).sum();
        let pads = match paddings {
            Some(all) => {
                let pads = all.get(g).filter(|p| p.len() == params.len());
                Some(pads.ok_or_else(|| {
                    bad(
                        file,
                        format!(
                        "param_alignment_paddings does not list one padding per parameter of group {g}"
                    ),
                    )
                })?)
            }
            None => None,
        };
        let mut offset = 0u64;
        for (i, (name, shape)) in params.iter().enumerate() {
            let n = numel(shape, file, name)?;
            let end = offset
                .checked_add(n)
                .filter(|&e| e <= avail)
                .ok_or_else(|| {
                    bad(
                        file,
                        format!(
                            "`{name}` needs elements {offset}..{} of param group {g}, but the \
                         ranks' fp32 partitions hold {avail} (a partition is shorter than \
                         param_shapes say)",
                            offset.saturating_add(n)
                        ),
                    )
                })?;
            let mut pieces = Vec::new();
            slice(&parts, offset, n, 0, &mut pieces);
            tensors.push(Tensor {
                name: name.clone(),
                dtype,
                stored: None,
                shape: shape.clone(),
                pieces,
                role: Role::Trained,
                aliases: Vec::new(),
            });
            offset = end.saturating_add(pads.map_or(0, |p| p[i]));
        }
        let align = |x: u64| x.div_ceil(2 * world).saturating_mul(2 * world);
        if align(offset) != align(avail) {
            return Err(bad(
                file,
                format!(
                    "param group {g}: its parameters use {offset} elements, but the ranks' \
                     fp32 partitions hold {avail}"
                ),
            ));
        }
    }
    Ok(tensors)
}

/// ZeRO-3 trained parameters: piece `r` of each is at the same offset of rank `r`'s groups.
fn zero3_trained(
    flat: &[Vec<Flat>],
    shapes: &[Group],
    world: u64,
    file: &str,
) -> Result<Vec<Tensor>, DcpError> {
    let sizes = |groups: &[Flat]| groups.iter().map(|f| f.numel).collect::<Vec<_>>();
    let first = flat.first().map(|g| sizes(g)).unwrap_or_default();
    for (rank, groups) in flat.iter().enumerate() {
        if sizes(groups) != first {
            return Err(bad(
                groups.first().map_or(file, |f| f.file.as_str()),
                format!("rank {rank}'s fp32 flat groups differ in size from rank 0's"),
            ));
        }
    }
    let all: Vec<Flat> = flat.iter().flatten().cloned().collect();
    let dtype = one_dtype(&all, file, "fp32_flat_groups")?;
    let total: u64 = first.iter().sum();
    let mut tensors = Vec::new();
    let mut offset = 0u64;
    for (name, shape) in shapes.iter().flatten() {
        let n = numel(shape, file, name)?;
        let part = n.div_ceil(world);
        if offset.saturating_add(part) > total {
            return Err(bad(
                file,
                format!(
                    "`{name}` needs elements {offset}..{} of every rank's fp32 flat groups, \
                     which hold {total} (a partition is shorter than param_shapes say)",
                    offset.saturating_add(part)
                ),
            ));
        }
        let mut pieces = Vec::new();
        for (rank, groups) in flat.iter().enumerate() {
            let dest = rank as u64 * part;
            if dest >= n {
                break;
            }
            slice(groups, offset, part.min(n - dest), dest, &mut pieces);
        }
        tensors.push(Tensor {
            name: name.clone(),
            dtype,
            stored: None,
            shape: shape.clone(),
            pieces,
            role: Role::Trained,
            aliases: Vec::new(),
        });
        offset += part;
    }
    if offset != total {
        return Err(bad(
            file,
            format!(
                "the parameters use {offset} elements of each rank's fp32 flat groups, which \
                 hold {total}"
            ),
        ));
    }
    Ok(tensors)
}

/// ZeRO-3 frozen parameters: every model states file holds a 1-D fragment of each.
fn zero3_frozen(folder: &Folder, model: &Pickle, world: u64) -> Result<Vec<Tensor>, DcpError> {
    let shapes = model.frozen_shapes()?;
    if shapes.is_empty() {
        return Ok(Vec::new());
    }
    if folder.model.len() as u64 != world {
        return Err(bad(
            &folder.dir.display().to_string(),
            format!(
                "{} *_model_states.pt files for {world} ranks (a rank's file is missing)",
                folder.model.len()
            ),
        ));
    }
    let models = folder
        .model
        .iter()
        .map(|(name, ckpt)| Pickle::model(name, ckpt))
        .collect::<Result<Vec<_>, _>>()?;
    let mut tensors = Vec::new();
    for (name, shape) in shapes {
        let n = numel(&shape, model.file, &name)?;
        let mut parts = Vec::new();
        for m in &models {
            let (flat, frag_shape) = m.fragment(&name)?;
            if frag_shape.len() > 1 {
                return Err(DcpError::Unsupported {
                    what: format!(
                        "`{}`: `{name}`'s fragment of shape {frag_shape:?} (not 1-D)",
                        m.file
                    ),
                });
            }
            parts.push(flat);
        }
        let dtype = one_dtype(&parts, model.file, &format!("`{name}`"))?;
        let avail: u64 = parts.iter().map(|p| p.numel).sum();
        if avail < n {
            return Err(bad(
                model.file,
                format!("`{name}` has {n} elements, but its fragments hold {avail}"),
            ));
        }
        let mut pieces = Vec::new();
        slice(&parts, 0, n, 0, &mut pieces);
        tensors.push(Tensor {
            name,
            dtype,
            stored: None,
            shape,
            pieces,
            role: Role::Frozen,
            aliases: Vec::new(),
        });
    }
    Ok(tensors)
}

/// One file's decoded pickle and where its `optimizer_state_dict` (or root) is.
struct Pickle<'a> {
    file: &'a str,
    ckpt: &'a Checkpoint,
    /// The mapping the fields are read from.
    map: NodeId,
}

impl<'a> Pickle<'a> {
    fn graph(&self) -> &'a Graph {
        &self.ckpt.graph
    }

    fn optim(file: &'a str, ckpt: &'a Checkpoint) -> Result<Pickle<'a>, DcpError> {
        let map = ckpt
            .graph
            .lookup(ckpt.root, "optimizer_state_dict")
            .filter(|&m| ckpt.graph.mapping(m).is_some())
            .ok_or_else(|| bad(file, "no optimizer_state_dict: not a ZeRO optimizer state"))?;
        Ok(Pickle { file, ckpt, map })
    }

    fn model(file: &'a str, ckpt: &'a Checkpoint) -> Result<Pickle<'a>, DcpError> {
        let found = ckpt.graph.mapping(ckpt.root).is_some()
            && ckpt.graph.lookup(ckpt.root, "buffer_names").is_some();
        if !found {
            return Err(bad(file, "no buffer_names: not a model state checkpoint"));
        }
        Ok(Pickle {
            file,
            ckpt,
            map: ckpt.root,
        })
    }

    fn bad(&self, what: impl Into<String>) -> DcpError {
        bad(self.file, what)
    }

    fn field(&self, key: &str) -> Option<NodeId> {
        self.graph()
            .lookup(self.map, key)
            .filter(|&n| !matches!(self.graph().get(n), Value::None))
    }

    fn required(&self, key: &str) -> Result<NodeId, DcpError> {
        self.field(key)
            .ok_or_else(|| self.bad(format!("no `{key}`")))
    }

    fn text(&self, key: &str) -> Option<String> {
        self.field(key)
            .and_then(|n| self.graph().str(n).map(str::to_owned))
    }

    fn items(&self, node: NodeId, key: &str) -> Result<&'a [NodeId], DcpError> {
        match self.graph().get(node) {
            Value::List(items) | Value::Tuple(items) => Ok(items),
            other => Err(self.bad(format!("`{key}` is a {}, not a list", other.kind()))),
        }
    }

    fn pairs(&self, node: NodeId, key: &str) -> Result<&'a [(NodeId, NodeId)], DcpError> {
        self.graph()
            .mapping(node)
            .ok_or_else(|| self.bad(format!("`{key}` is not a mapping")))
    }

    fn name(&self, node: NodeId, key: &str) -> Result<String, DcpError> {
        self.graph()
            .str(node)
            .map(str::to_owned)
            .ok_or_else(|| self.bad(format!("a key of `{key}` is not a string")))
    }

    /// A non-negative integer: an int, or an int `Enum` DeepSpeed pickles by value
    /// (`ZeroStageEnum(2)`).
    fn count(&self, node: NodeId, key: &str) -> Result<u64, DcpError> {
        let graph = self.graph();
        let node = match graph.reduce_of_global(node) {
            Some((g, args)) if g.is("deepspeed.runtime.zero.config", "ZeroStageEnum") => graph
                .tuple(args)
                .and_then(|a| a.first().copied())
                .unwrap_or(node),
            _ => node,
        };
        graph
            .int(node)
            .and_then(|i| u64::try_from(i).ok())
            .ok_or_else(|| self.bad(format!("`{key}` is not a non-negative integer")))
    }

    fn shape(&self, node: NodeId, name: &str) -> Result<Vec<u64>, DcpError> {
        int_tuple(self.graph(), node)
            .and_then(|dims| dims.into_iter().map(|d| u64::try_from(d).ok()).collect())
            .ok_or_else(|| self.bad(format!("the shape of `{name}` is not a torch.Size")))
    }

    fn stage(&self) -> Result<u64, DcpError> {
        let node = self
            .field("zero_stage")
            .ok_or_else(|| self.bad("no zero_stage: not a ZeRO checkpoint"))?;
        self.count(node, "zero_stage")
    }

    fn world(&self) -> Result<u64, DcpError> {
        let node = self.required("partition_count")?;
        let world = match self.graph().get(node) {
            Value::List(items) | Value::Tuple(items) => items
                .iter()
                .map(|&i| self.count(i, "partition_count"))
                .try_fold(0u64, |m, c| c.map(|c| m.max(c)))?,
            _ => self.count(node, "partition_count")?,
        };
        if world == 0 {
            return Err(self.bad("partition_count is 0"));
        }
        Ok(world)
    }

    fn alignment_paddings(&self) -> Result<Option<Vec<Vec<u64>>>, DcpError> {
        const KEY: &str = "param_alignment_paddings";
        let Some(node) = self.field(KEY) else {
            return Ok(None);
        };
        let groups = self.items(node, KEY)?;
        groups
            .iter()
            .map(|&g| {
                self.items(g, KEY)?
                    .iter()
                    .map(|&p| self.count(p, KEY))
                    .collect()
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    fn flat_groups(&self, key: &str) -> Result<Vec<Flat>, DcpError> {
        let node = self
            .field(key)
            .ok_or_else(|| self.bad(format!("no `{key}`: not a ZeRO optimizer state")))?;
        let mut groups = Vec::new();
        for (g, &item) in self.items(node, key)?.iter().enumerate() {
            let (flat, shape) = self.tensor(item, &format!("{key}[{g}]"))?;
            if shape.len() != 1 {
                return Err(self.bad(format!("{key}[{g}] has shape {shape:?}, not 1-D")));
            }
            groups.push(flat);
        }
        Ok(groups)
    }

    /// A dense C-contiguous tensor whose bytes sit unchanged in this file, and its shape.
    fn tensor(&self, node: NodeId, what: &str) -> Result<(Flat, Vec<u64>), DcpError> {
        let t = dense_tensor(self.graph(), node)
            .map_err(|e| self.bad(format!("{what}: {e}")))?
            .ok_or_else(|| self.bad(format!("{what} is not a tensor")))?;
        let strides: Option<Vec<u64>> = t.stride.iter().map(|&s| u64::try_from(s).ok()).collect();
        if !strides.is_some_and(|s| is_contiguous(&t.shape, &s)) {
            return Err(DcpError::Unsupported {
                what: format!("`{}`: {what} is not contiguous", self.file),
            });
        }
        let element = t.dtype.element_size() as u64;
        let (start, record) = self
            .ckpt
            .storage_in_file(&t.storage.key)
            .map_err(|e| self.bad(format!("{what}: {e}")))?
            .ok_or_else(|| DcpError::Unsupported {
                what: format!("`{}`: {what}'s storage is compressed", self.file),
            })?;
        let n = t.numel();
        let end = t
            .offset
            .checked_add(n)
            .and_then(|e| e.checked_mul(element))
            .filter(|&e| e <= record)
            .ok_or_else(|| {
                self.bad(format!(
                    "{what}: {n} elements from element {} run past its storage record \
                     ({record} bytes; truncated?)",
                    t.offset
                ))
            })?;
        Ok((
            Flat {
                file: self.file.to_owned(),
                offset: start + (end - n * element),
                numel: n,
                dtype: t.dtype,
            },
            t.shape,
        ))
    }

    /// Buffers from `module`, in its order, floating ones marked for float32.
    fn buffers(&self) -> Result<Vec<Tensor>, DcpError> {
        let names_node = self.required("buffer_names")?;
        let names: HashSet<String> = self
            .items(names_node, "buffer_names")?
            .iter()
            .map(|&n| self.name(n, "buffer_names"))
            .collect::<Result<_, _>>()?;
        let module = self.required("module")?;
        let mut tensors = Vec::new();
        for &(k, v) in self.pairs(module, "module")? {
            let name = self.name(k, "module")?;
            if !names.contains(&name) {
                continue;
            }
            let (flat, shape) = self.tensor(v, &format!("buffer `{name}`"))?;
            let stored = match flat.dtype {
                DType::Float32 => None,
                d @ (DType::Float16 | DType::BFloat16 | DType::Float64) => Some(d),
                d if d.is_floating_point() => {
                    return Err(DcpError::Unsupported {
                        what: format!("`{}`: buffer `{name}` of {d}", self.file),
                    })
                }
                _ => None,
            };
            tensors.push(Tensor {
                name,
                dtype: if stored.is_some() {
                    DType::Float32
                } else {
                    flat.dtype
                },
                stored,
                shape,
                pieces: whole(&flat),
                role: Role::Buffer,
                aliases: Vec::new(),
            });
        }
        Ok(tensors)
    }

    /// `param_shapes`: per group, name and shape, in flat order.
    fn param_shapes(&self) -> Result<Vec<Group>, DcpError> {
        const KEY: &str = "param_shapes";
        let node = self.required(KEY)?;
        self.items(node, KEY)?
            .iter()
            .map(|&group| self.shapes(group, KEY))
            .collect()
    }

    fn shapes(&self, node: NodeId, key: &str) -> Result<Group, DcpError> {
        self.pairs(node, key)?
            .iter()
            .map(|&(k, v)| {
                let name = self.name(k, key)?;
                let shape = self.shape(v, &name)?;
                Ok((name, shape))
            })
            .collect()
    }

    fn frozen_shapes(&self) -> Result<Group, DcpError> {
        match self.field("frozen_param_shapes") {
            Some(node) => self.shapes(node, "frozen_param_shapes"),
            None => Ok(Vec::new()),
        }
    }

    /// `frozen_param_fragments[name]`.
    fn fragment(&self, name: &str) -> Result<(Flat, Vec<u64>), DcpError> {
        let node = self
            .field("frozen_param_fragments")
            .and_then(|m| self.graph().lookup(m, name))
            .ok_or_else(|| self.bad(format!("frozen parameter `{name}` has no fragment")))?;
        self.tensor(node, &format!("frozen parameter `{name}`"))
    }

    /// ZeRO-1/2 frozen parameters: each fragment is the whole parameter.
    fn zero2_frozen(&self) -> Result<Vec<Tensor>, DcpError> {
        let mut tensors = Vec::new();
        for (name, _) in self.frozen_shapes()? {
            let (flat, shape) = self.fragment(&name)?;
            tensors.push(Tensor {
                name,
                dtype: flat.dtype,
                stored: None,
                shape,
                pieces: whole(&flat),
                role: Role::Frozen,
                aliases: Vec::new(),
            });
        }
        Ok(tensors)
    }

    /// `shared_params`: (tied name, the name it ties to), in order.
    fn shared(&self) -> Result<Vec<(String, String)>, DcpError> {
        const KEY: &str = "shared_params";
        let Some(node) = self.field(KEY) else {
            return Ok(Vec::new());
        };
        self.pairs(node, KEY)?
            .iter()
            .map(|&(k, v)| Ok((self.name(k, KEY)?, self.name(v, KEY)?)))
            .collect()
    }
}

/// The pieces of a tensor stored whole in one flat run (none when it is empty).
fn whole(flat: &Flat) -> Vec<Piece> {
    let mut pieces = Vec::new();
    slice(std::slice::from_ref(flat), 0, flat.numel, 0, &mut pieces);
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(file: &str, offset: u64, numel: u64) -> Flat {
        Flat {
            file: file.into(),
            offset,
            numel,
            dtype: DType::Float32,
        }
    }

    /// A range crossing from one partition into the next becomes two pieces, each at its
    /// byte offset in its own file and its element position in the tensor.
    #[test]
    fn a_range_crossing_partitions_is_split_at_the_boundary() {
        let parts = [part("r0", 100, 30), part("r1", 200, 29)];
        let mut pieces = Vec::new();
        slice(&parts, 25, 10, 0, &mut pieces);
        assert_eq!(
            pieces,
            [
                Piece {
                    file: "r0".into(),
                    offset: 100 + 25 * 4,
                    at: 0,
                    len: 5
                },
                Piece {
                    file: "r1".into(),
                    offset: 200,
                    at: 5,
                    len: 5
                },
            ]
        );
    }

    fn shapes(list: &[(&str, &[u64])]) -> Vec<Group> {
        vec![list
            .iter()
            .map(|(n, s)| (n.to_string(), s.to_vec()))
            .collect()]
    }

    /// ZeRO-2: params back to back over the concatenated partitions; a partition shorter
    /// than the shapes say, or longer than the padding allows, is an error naming the file.
    #[test]
    fn zero2_params_follow_param_shapes_and_must_fill_the_partitions() {
        let flat = vec![vec![part("r0", 0, 4)], vec![part("r1", 0, 3)]];
        let ok = zero2_trained(&flat, &shapes(&[("a", &[2, 2]), ("b", &[3])]), None, 2, "f");
        let t = ok.unwrap();
        assert_eq!(t[1].pieces.len(), 1);
        assert_eq!(t[1].pieces[0].file, "r1");
        let short = zero2_trained(&flat, &shapes(&[("a", &[2, 4])]), None, 2, "f");
        assert!(short.unwrap_err().to_string().contains("shorter"));
        let long = zero2_trained(&flat, &shapes(&[("a", &[2])]), None, 2, "f");
        assert!(long.unwrap_err().to_string().contains("hold 7"));
    }

    /// ZeRO-3: each param in `world` pieces of ceil(numel / world), the last one cut.
    #[test]
    fn zero3_params_are_split_over_ranks() {
        let flat = vec![vec![part("r0", 0, 4)], vec![part("r1", 0, 4)]];
        let t = zero3_trained(&flat, &shapes(&[("a", &[5]), ("b", &[1])]), 2, "f").unwrap();
        let spans = |t: &Tensor| {
            t.pieces
                .iter()
                .map(|p| (p.file.clone(), p.offset, p.at, p.len))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            spans(&t[0]),
            [("r0".into(), 0, 0, 3), ("r1".into(), 0, 3, 2)]
        );
        assert_eq!(spans(&t[1]), [("r0".into(), 12, 0, 1)]);
        let err = zero3_trained(&flat, &shapes(&[("a", &[9])]), 2, "f").unwrap_err();
        assert!(err.to_string().contains("shorter"), "{err}");
    }
}
