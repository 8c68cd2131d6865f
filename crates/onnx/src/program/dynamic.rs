//! Dynamic dimensions other than the batch (a sequence length exported with
//! `Dim("seq")`), exported without any node that computes a shape.
//!
//! The lowering follows one symbolic dimension, the batch. For every other one the program
//! is lowered at two sizes of it (probes, [`ckpt_aten::specialize`]) and the two graphs
//! are compared: they must be the same graph, node for node and attribute for attribute.
//! What may differ is what scales with the dimension, and each difference is rewritten so
//! that one graph serves every size:
//!
//! - a graph input's or output's size becomes a `dim_param` named after torch's symbol;
//! - an entry of a Reshape's constant shape becomes `0` where the reshaped tensor keeps that
//!   dimension in place at both probes, else `-1` (one per shape: a view that would need
//!   two is refused);
//! - a constant whose only change is its length along one or more axes that each follow one
//!   dimension, the smaller its leading block of the larger (position embeddings
//!   `table[:seq]`, token-type rows, RoPE's cos/sin rows; along two axes a causal mask
//!   `[seq, seq]` or T5's relative position bias), is taken at the dimension's declared
//!   maximum and indexed by the positions `0..seq` along each of those axes, which a few
//!   ATC-parsable nodes derive from an input that carries the dimension (`Equal`/`Or` make
//!   ones, a `Conv` with an all-ones kernel counts them).
//!
//! Before probing, a product over rows that a view merged the batch and a dynamic
//! dimension into (GPT-2's `Conv1D`: `x.view(-1, D)`, `addmm`, a view back) is written over
//! the unmerged tensor ([`ckpt_aten::rows`]), as no static Reshape can split `B·S`.
//!
//! Anything else that differs is refused, naming the node or constant. A graph that is the
//! same at two sizes but for these rewrites computes, at every size, what the lowering
//! would have written for that size.

use std::collections::HashMap;

use crate::graph::{Attr, Initializer, Model};
use crate::proto::tensor_proto::DataType;
use crate::proto::tensor_shape_proto::dimension::Value as Dim;
use crate::proto::{type_proto, NodeProto, ValueInfoProto};
use crate::store::Bytes;
use crate::{Extent, OnnxError};
use ckpt_aten::program::ExportedProgram;
use ckpt_aten::{rows, specialize, sym};

use super::lower::{self, Lowered, Target};
use super::TensorSource;

/// A dynamic dimension other than the batch, as torch.export declared it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DynamicDim {
    /// torch's symbol (`s27`), also the ONNX `dim_param`.
    pub symbol: String,
    pub min: u64,
    /// `None` when no maximum was declared.
    pub max: Option<u64>,
}

/// Sizes torch writes for "no maximum" (`int_oo`) are far above this.
const UNBOUNDED: i64 = 1 << 40;

/// The probe sizes: small primes first, so that a size that scales with the dimension is
/// unlikely to equal a fixed one by chance.
const PROBES: [u64; 8] = [7, 11, 13, 17, 19, 23, 29, 31];

impl DynamicDim {
    /// Two sizes in the declared range to lower the program at: the first two small primes
    /// inside it, else (a narrow range) its largest sizes, which are least likely to equal
    /// a fixed size by chance.
    fn probes(&self) -> Result<(u64, u64), OnnxError> {
        let max = self.max.unwrap_or(u64::MAX);
        let inside = |p: &u64| (self.min..=max).contains(p);
        let ends = [
            Some(max),
            max.checked_sub(1),
            self.min.checked_add(1),
            Some(self.min),
        ];
        let mut sizes: Vec<u64> = Vec::new();
        for size in PROBES
            .iter()
            .copied()
            .chain(ends.into_iter().flatten().filter(|&s| s < u64::MAX))
            .filter(|s| inside(s) && *s >= 2)
        {
            if !sizes.contains(&size) {
                sizes.push(size);
            }
        }
        match sizes.as_slice() {
            [a, b, ..] => Ok((*a, *b)),
            _ => Err(OnnxError::Shape {
                what: format!(
                    "the dynamic dimension {} allows only the sizes {}..={max}; export it with a fixed size",
                    self.symbol, self.min
                ),
            }),
        }
    }

    fn extent(&self) -> Extent {
        Extent::Dynamic {
            name: self.symbol.clone(),
            min: self.min,
            max: self.max,
        }
    }
}

/// The symbols in the program's inputs other than the batch (the first input's first
/// size), with their declared ranges.
pub fn find(program: &ExportedProgram) -> Result<Vec<DynamicDim>, OnnxError> {
    let inputs = lower::user_input_sizes(program)?;
    let batch: Vec<String> = match inputs.first().and_then(|sizes| sizes.first()) {
        Some(ckpt_aten::program::SymInt::Expr(e)) => sym::symbols(e),
        _ => Vec::new(),
    };
    let mut found: Vec<DynamicDim> = Vec::new();
    for sizes in inputs {
        for size in sizes {
            let ckpt_aten::program::SymInt::Expr(expr) = size else {
                continue;
            };
            for symbol in sym::symbols(expr) {
                if batch.contains(&symbol) || found.iter().any(|d| d.symbol == symbol) {
                    continue;
                }
                let range = program.range_constraints.get(&symbol);
                let min = range.and_then(|r| r.min_val).unwrap_or(1).max(1) as u64;
                let max = range
                    .and_then(|r| r.max_val)
                    .filter(|&m| m > 0 && m < UNBOUNDED)
                    .map(|m| m as u64);
                found.push(DynamicDim { symbol, min, max });
            }
        }
    }
    Ok(found)
}

/// Each dynamic dimension's size, by symbol.
pub type Sizes = HashMap<String, i64>;

/// The program with every dynamic dimension at a size: a `.pt2` program specialized
/// ([`specialized`]), or a trace converted again at those sizes.
pub type ProgramAt<'a> = dyn Fn(&Sizes) -> Result<ExportedProgram, OnnxError> + 'a;

/// `program` (symbolic in the dynamic dimensions) at given sizes: its row products over a
/// merged batch and dimension unmerged ([`rows`]), then specialized.
pub fn specialized(
    program: &ExportedProgram,
) -> impl Fn(&Sizes) -> Result<ExportedProgram, OnnxError> {
    let mut program = program.clone();
    rows::unmerge_row_products(&mut program.graph_module.graph);
    move |values: &Sizes| {
        specialize::specialize(&program, values).map_err(|what| OnnxError::Program {
            what: format!("with a dynamic dimension other than the batch: {what}"),
        })
    }
}

/// Every set of sizes [`lower_dynamic`] lowers the program at: the first probe of each
/// dimension, each dimension alone at its second probe, and each at its declared maximum
/// (taken only when a table is read up to the dimension). A source that cannot compute a
/// program on demand (a trace, converted once per set) prepares these.
pub fn sizes_lowered(dims: &[DynamicDim]) -> Result<Vec<Sizes>, OnnxError> {
    let probes = probe_sizes(dims)?;
    let at = |sizes: &[u64]| -> Sizes {
        dims.iter()
            .zip(sizes)
            .map(|(d, &v)| (d.symbol.clone(), v as i64))
            .collect()
    };
    let base: Vec<u64> = probes.iter().map(|p| p.0).collect();
    let mut sets = vec![at(&base)];
    for (i, dim) in dims.iter().enumerate() {
        let mut second = base.clone();
        second[i] = probes[i].1;
        sets.push(at(&second));
        if let Some(max) = dim.max {
            let mut full = base.clone();
            full[i] = max;
            sets.push(at(&full));
        }
    }
    Ok(sets)
}

/// Each dimension's two probe sizes.
fn probe_sizes(dims: &[DynamicDim]) -> Result<Vec<(u64, u64)>, OnnxError> {
    dims.iter().map(DynamicDim::probes).collect()
}

/// A lowering at one set of sizes for the dynamic dimensions.
fn lower_at(
    program_at: &ProgramAt<'_>,
    tensors: &mut dyn TensorSource,
    target: &Target<'_>,
    sizes: &[(&DynamicDim, u64)],
) -> Result<Lowered, OnnxError> {
    let values: Sizes = sizes
        .iter()
        .map(|(d, v)| (d.symbol.clone(), *v as i64))
        .collect();
    lower::lower(&program_at(&values)?, tensors, target)
}

/// The export of a program whose inputs have the dynamic dimensions `dims` besides the
/// batch, at the sizes [`sizes_lowered`] lists (`program_at`): the model, and each input's
/// and output's name and sizes after the batch.
pub fn lower_dynamic(
    program_at: &ProgramAt<'_>,
    tensors: &mut dyn TensorSource,
    target: &Target<'_>,
    dims: &[DynamicDim],
) -> Result<(Lowered, IoExtents), OnnxError> {
    let probes = probe_sizes(dims)?;
    let program = program_at;
    let base_sizes: Vec<(&DynamicDim, u64)> =
        dims.iter().zip(&probes).map(|(d, p)| (d, p.0)).collect();
    let mut base = lower_at(program, tensors, target, &base_sizes)?;
    let mut variants = Vec::with_capacity(dims.len());
    for (i, dim) in dims.iter().enumerate() {
        let mut sizes = base_sizes.clone();
        sizes[i].1 = probes[i].1;
        let variant = lower_at(program, tensors, target, &sizes)?;
        variants.push(Probe {
            dim,
            at: (probes[i].0, probes[i].1),
            model: variant.model,
        });
    }
    let differences = compare(&base.model, &variants)?;
    let batch_axes: BatchAxes = base
        .outputs
        .iter()
        // A static export refuses dynamic dimensions before it lowers: every output here
        // has a batch.
        .map(|o| (o.name.clone(), o.batch_axis.unwrap_or(0)))
        .collect();
    let io = io_extents(&base.model, &variants, &batch_axes)?;
    let mut edit = Edit::default();
    for (index, changes) in differences {
        let name = base.model.initializers[index].name.clone();
        if let Some(shape) = reshape_shape(&base.model, &variants, index, &changes)? {
            edit.replace.push((index, shape));
            continue;
        }
        let (probe, axes) = prefix_axes(&base.model, &variants, index, &changes)
            .map_err(|why| refusal(&name, &changes, &variants, &why))?;
        let dim = variants[probe].dim;
        let Some(max) = dim.max else {
            return Err(refusal(
                &name,
                &changes,
                &variants,
                &format!(
                    "it is a table read up to {}, which needs a declared maximum for the dimension (`Dim(..., max=...)`)",
                    dim.symbol
                ),
            ));
        };
        let full = table_at_max(program, tensors, target, &base_sizes, probe, max, &name)?;
        let table = &full.model.initializers[index];
        check_prefix(
            &base.model,
            &base.model.initializers[index],
            &full.model,
            table,
            &axes,
        )
        .map_err(|why| refusal(&name, &changes, &variants, &why))?;
        let mut bytes = Vec::new();
        full.model
            .store
            .write_to(&table.bytes, &mut bytes)
            .map_err(|e| OnnxError::Program {
                what: format!("reading the constant `{name}`: {e}"),
            })?;
        edit.tables.push(Table {
            index,
            probe,
            axes,
            dims: table.dims.clone(),
            data_type: table.data_type,
            bytes,
            max,
        });
    }
    apply(&mut base.model, &variants, &io, &batch_axes, edit)?;
    Ok((base, io))
}

/// The extents of each graph input and output after the batch, by name.
pub type IoExtents = HashMap<String, Vec<Extent>>;

/// The dimension that carries the batch of each graph output whose batch is not first
/// (outputs keep torch's layout); inputs, and outputs not listed, have it first.
type BatchAxes = HashMap<String, usize>;

/// The dimensions of graph input or output `name` other than its batch.
fn after_batch<'d, T>(
    dims: impl Iterator<Item = T> + 'd,
    name: &str,
    batch_axes: &BatchAxes,
) -> impl Iterator<Item = (usize, T)> + 'd {
    let batch = batch_axes.get(name).copied().unwrap_or(0);
    dims.enumerate().filter(move |(axis, _)| *axis != batch)
}

/// One lowering at a second size of one dynamic dimension (the others at their first).
struct Probe<'d> {
    dim: &'d DynamicDim,
    /// The dimension's size in the base lowering and in this one.
    at: (u64, u64),
    model: Model,
}

/// For one initializer that differs: which probes it differs in.
type Changes = Vec<usize>;

fn refusal(name: &str, changes: &Changes, variants: &[Probe<'_>], why: &str) -> OnnxError {
    let dims: Vec<String> = changes
        .iter()
        .map(|&p| variants[p].dim.symbol.clone())
        .collect();
    OnnxError::Program {
        what: format!(
            "the constant `{name}` changes with the dynamic dimension {}: {why}; only the batch and sizes that reshapes, inputs, outputs and tables follow can be dynamic",
            dims.join(", ")
        ),
    }
}

/// Compares the base graph with every probe's: nodes, inputs and outputs must be the
/// same but for sizes; returns the initializers that differ and in which probes.
fn compare(base: &Model, variants: &[Probe<'_>]) -> Result<Vec<(usize, Changes)>, OnnxError> {
    let mut differ: HashMap<usize, Changes> = HashMap::new();
    for (p, probe) in variants.iter().enumerate() {
        let other = &probe.model;
        let differs = |what: String| {
            OnnxError::Program {
            what: format!(
                "the graph differs between sizes {} and {} of the dynamic dimension {} ({what}); only the batch can change the graph",
                probe.at.0, probe.at.1, probe.dim.symbol
            ),
        }
        };
        if base.graph.node.len() != other.graph.node.len() {
            return Err(differs(format!(
                "{} nodes against {}",
                base.graph.node.len(),
                other.graph.node.len()
            )));
        }
        for (a, b) in base.graph.node.iter().zip(&other.graph.node) {
            if a != b {
                return Err(differs(format!(
                    "node `{}` ({})",
                    a.name.as_deref().unwrap_or("?"),
                    a.op_type.as_deref().unwrap_or("?")
                )));
            }
        }
        if base.initializers.len() != other.initializers.len() {
            return Err(differs("a different set of constants".into()));
        }
        for (i, (a, b)) in base
            .initializers
            .iter()
            .zip(&other.initializers)
            .enumerate()
        {
            if a.name != b.name || a.data_type != b.data_type {
                return Err(differs(format!("constant `{}`", a.name)));
            }
            if a.dims != b.dims || !same_bytes(base, a, other, b)? {
                differ.entry(i).or_default().push(p);
            }
        }
    }
    let mut sorted: Vec<(usize, Changes)> = differ.into_iter().collect();
    sorted.sort_unstable();
    Ok(sorted)
}

fn read(model: &Model, init: &Initializer) -> Result<Vec<u8>, OnnxError> {
    let mut bytes = Vec::with_capacity(init.bytes.len() as usize);
    model
        .store
        .write_to(&init.bytes, &mut bytes)
        .map_err(|e| OnnxError::Program {
            what: format!("reading the constant `{}`: {e}", init.name),
        })?;
    Ok(bytes)
}

fn same_bytes(
    a_model: &Model,
    a: &Initializer,
    b_model: &Model,
    b: &Initializer,
) -> Result<bool, OnnxError> {
    if a.bytes.len() != b.bytes.len() {
        return Ok(false);
    }
    if let (Bytes::Memory(x), Bytes::Memory(y)) = (&a.bytes, &b.bytes) {
        return Ok(x == y);
    }
    Ok(read(a_model, a)? == read(b_model, b)?)
}

/// The dims of a value info (`None` for a `dim_param` or an unknown size).
fn io_dims(info: &ValueInfoProto) -> Vec<Option<u64>> {
    let Some(type_proto::Value::TensorType(t)) =
        info.r#type.as_ref().and_then(|t| t.value.as_ref())
    else {
        return Vec::new();
    };
    t.shape
        .as_ref()
        .map(|s| {
            s.dim
                .iter()
                .map(|d| match d.value {
                    Some(Dim::DimValue(n)) if n >= 0 => Some(n as u64),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Each graph input's and output's extents after the batch: fixed where every probe agrees,
/// the dimension's name where it is exactly that dimension. An input must carry each
/// dynamic dimension itself (not a multiple of it).
fn io_extents(
    base: &Model,
    variants: &[Probe<'_>],
    batch_axes: &BatchAxes,
) -> Result<IoExtents, OnnxError> {
    let mut out = IoExtents::new();
    let pairs = |m: &Model| -> Vec<(String, Vec<Option<u64>>, bool)> {
        m.graph
            .input
            .iter()
            .map(|i| (i, true))
            .chain(m.graph.output.iter().map(|o| (o, false)))
            .map(|(info, is_input)| {
                (
                    info.name.clone().unwrap_or_default(),
                    io_dims(info),
                    is_input,
                )
            })
            .collect()
    };
    let base_io = pairs(base);
    let variant_io: Vec<_> = variants.iter().map(|p| pairs(&p.model)).collect();
    for (k, (name, dims, is_input)) in base_io.iter().enumerate() {
        let mut extents = Vec::new();
        for (axis, &size) in after_batch(dims.iter(), name, batch_axes) {
            let mut extent = Extent::Fixed(size.unwrap_or(0));
            for (p, probe) in variants.iter().enumerate() {
                let other = variant_io[p]
                    .get(k)
                    .and_then(|(_, d, _)| d.get(axis).copied().flatten());
                if other == size {
                    continue;
                }
                let (a, b) = probe.at;
                let scaled = match (size, other) {
                    (Some(x), Some(y)) if x % a == 0 && y % b == 0 && x / a == y / b => x / a,
                    _ => 0,
                };
                let what = if *is_input { "input" } else { "output" };
                match (scaled, &extent) {
                    (1, Extent::Fixed(_)) => extent = probe.dim.extent(),
                    (k, Extent::Fixed(_)) if k > 1 && !is_input => {
                        return Err(OnnxError::Program {
                            what: format!(
                                "the {what} `{name}` has dimension {axis} of {k}·{} elements; only a dynamic dimension itself can be an output's size",
                                probe.dim.symbol
                            ),
                        })
                    }
                    _ => {
                        return Err(OnnxError::Program {
                            what: format!(
                                "the {what} `{name}`: dimension {axis} is {size:?} at {}={a} and {other:?} at {b}, not the dynamic dimension itself",
                                probe.dim.symbol
                            ),
                        })
                    }
                }
            }
            extents.push(extent);
        }
        out.insert(name.clone(), extents);
    }
    Ok(out)
}

/// A Reshape shape constant that differs between probes, rewritten: each entry that
/// changes becomes `0` where the reshaped tensor has the same size at that position in
/// every lowering, else `-1`; `None` when `index` is not a Reshape's shape.
fn reshape_shape(
    base: &Model,
    variants: &[Probe<'_>],
    index: usize,
    changes: &Changes,
) -> Result<Option<Vec<i64>>, OnnxError> {
    let init = &base.initializers[index];
    let is_shape = base
        .graph
        .node
        .iter()
        .any(|n| n.op_type.as_deref() == Some("Reshape") && n.input.get(1) == Some(&init.name));
    let Some(base_input) = base.reshaped.get(&init.name) else {
        return Ok(None);
    };
    if !is_shape || init.data_type != DataType::Int64 {
        return Ok(None);
    }
    let values = |m: &Model| -> Result<Vec<i64>, OnnxError> {
        let i = m
            .initializers
            .iter()
            .find(|i| i.name == init.name)
            .ok_or_else(|| OnnxError::Program {
                what: format!("the reshape `{}` is missing from a probe", init.name),
            })?;
        Ok(read(m, i)?
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
            .collect())
    };
    let base_shape = values(base)?;
    let mut others = Vec::new();
    for &p in changes {
        let m = &variants[p].model;
        let input = m.reshaped.get(&init.name).cloned().unwrap_or_default();
        others.push((values(m)?, input));
    }
    let mut out = base_shape.clone();
    let mut free = base_shape.iter().filter(|&&v| v == -1).count();
    for (pos, &value) in base_shape.iter().enumerate() {
        if others
            .iter()
            .all(|(shape, _)| shape.get(pos) == Some(&value))
        {
            continue;
        }
        let in_place = |sizes: &[Option<u64>], shape: &[i64]| matches!((sizes.get(pos), shape.get(pos)), (Some(Some(s)), Some(&v)) if v >= 0 && *s == v as u64);
        if in_place(base_input, &base_shape)
            && others.iter().all(|(shape, input)| in_place(input, shape))
        {
            out[pos] = 0;
        } else {
            free += 1;
            out[pos] = -1;
        }
    }
    if free > 1 {
        return Err(OnnxError::Program {
            what: format!(
                "the reshape `{}` would need two dimensions computed at run time (the batch and a dynamic dimension, or two dynamic ones): {base_shape:?} at one size",
                init.name
            ),
        });
    }
    Ok(Some(out))
}

/// The axes along which a constant grows with exactly one dimension (each axis's size is
/// that dimension, the smaller constant the leading block of the larger): the probe and
/// the axes, in order.
fn prefix_axes(
    base: &Model,
    variants: &[Probe<'_>],
    index: usize,
    changes: &Changes,
) -> Result<(usize, Vec<usize>), String> {
    let &[p] = changes.as_slice() else {
        return Err("it changes with more than one dynamic dimension".into());
    };
    let probe = &variants[p];
    let a_init = &base.initializers[index];
    let b_init = &probe.model.initializers[index];
    let (a, b) = probe.at;
    if a_init.dims.len() != b_init.dims.len() {
        return Err("its rank changes".into());
    }
    let axes: Vec<usize> = (0..a_init.dims.len())
        .filter(|&i| a_init.dims[i] != b_init.dims[i])
        .collect();
    if axes.is_empty() {
        return Err("its values change but not its sizes".into());
    }
    if axes.windows(2).any(|w| w[1] != w[0] + 1) {
        return Err(format!(
            "its sizes {:?} and {:?} change along axes {axes:?}, which are not adjacent",
            a_init.dims, b_init.dims
        ));
    }
    if axes
        .iter()
        .any(|&axis| (a_init.dims[axis], b_init.dims[axis]) != (a, b))
    {
        return Err(format!(
            "its sizes {:?} and {:?} do not follow the dimension one to one",
            a_init.dims, b_init.dims
        ));
    }
    check_prefix(base, a_init, &probe.model, b_init, &axes)?;
    Ok((p, axes))
}

/// Whether `short` is the leading block of `long` along `axes` (every other axis the same).
fn check_prefix(
    short_model: &Model,
    short: &Initializer,
    long_model: &Model,
    long: &Initializer,
    axes: &[usize],
) -> Result<(), String> {
    let read = |m: &Model, i: &Initializer| read(m, i).map_err(|e| e.to_string());
    leading_block(
        (&read(short_model, short)?, &short.dims),
        (&read(long_model, long)?, &long.dims),
        axes,
    )
}

/// Whether the row-major tensor `short` (bytes and sizes) is the leading block of `long`
/// along `axes`: the same sizes elsewhere, and each element of `short` equal to the
/// element of `long` at the same indices.
fn leading_block(
    short: (&[u8], &[u64]),
    long: (&[u8], &[u64]),
    axes: &[usize],
) -> Result<(), String> {
    let ((s, short_dims), (l, long_dims)) = (short, long);
    let count = |d: &[u64]| d.iter().product::<u64>();
    let width = (l.len() as u64).checked_div(count(long_dims)).unwrap_or(0) as usize;
    let rank = long_dims.len();
    let fits = short_dims.len() == rank
        && (0..rank).all(|i| {
            if axes.contains(&i) {
                short_dims[i] <= long_dims[i]
            } else {
                short_dims[i] == long_dims[i]
            }
        })
        && s.len() as u64 == count(short_dims) * width as u64;
    if !fits {
        return Err("its other sizes change too".into());
    }
    // Row-major strides of `long`, in elements.
    let mut strides = vec![1u64; rank];
    for i in (0..rank.saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * long_dims[i + 1];
    }
    let mut index = vec![0u64; rank];
    for chunk in s.chunks_exact(width.max(1)) {
        let at = index.iter().zip(&strides).map(|(i, s)| i * s).sum::<u64>() as usize * width;
        if l.get(at..at + width) != Some(chunk) {
            return Err(
                "its values at the smaller size are not the leading rows of its values at the larger"
                    .into(),
            );
        }
        for i in (0..rank).rev() {
            index[i] += 1;
            if index[i] < short_dims[i] {
                break;
            }
            index[i] = 0;
        }
    }
    Ok(())
}

/// The base lowering with one dimension at its declared maximum, to take tables from.
#[allow(clippy::too_many_arguments)]
fn table_at_max(
    program: &ProgramAt<'_>,
    tensors: &mut dyn TensorSource,
    target: &Target<'_>,
    base_sizes: &[(&DynamicDim, u64)],
    probe: usize,
    max: u64,
    name: &str,
) -> Result<Lowered, OnnxError> {
    let mut sizes = base_sizes.to_vec();
    sizes[probe].1 = max;
    lower_at(program, tensors, target, &sizes).map_err(|e| OnnxError::Program {
        what: format!("taking the table `{name}` at the maximum size {max}: {e}"),
    })
}

/// What to change in the base model.
#[derive(Default)]
struct Edit {
    /// Reshape shape constants to rewrite.
    replace: Vec<(usize, Vec<i64>)>,
    /// Constants to read from a table at the dimension's maximum.
    tables: Vec<Table>,
}

struct Table {
    index: usize,
    probe: usize,
    /// The axes read up to the dimension's size, in order.
    axes: Vec<usize>,
    dims: Vec<u64>,
    data_type: DataType,
    bytes: Vec<u8>,
    max: u64,
}

fn apply(
    model: &mut Model,
    variants: &[Probe<'_>],
    io: &IoExtents,
    batch_axes: &BatchAxes,
    edit: Edit,
) -> Result<(), OnnxError> {
    for (index, shape) in edit.replace {
        let raw = shape.iter().flat_map(|v| v.to_le_bytes()).collect();
        model.initializers[index].bytes = Bytes::Memory(raw);
    }
    let mut prologue: Vec<NodeProto> = Vec::new();
    let mut extra: Vec<Initializer> = Vec::new();
    let mut positions: HashMap<usize, String> = HashMap::new();
    let mut blocks: HashMap<(usize, usize), String> = HashMap::new();
    let mut removed = Vec::new();
    for table in edit.tables {
        let name = model.initializers[table.index].name.clone();
        let rows = match positions.get(&table.probe) {
            Some(p) => p.clone(),
            None => {
                let p = positions_of(
                    model,
                    variants[table.probe].dim,
                    table.max,
                    io,
                    &mut prologue,
                    &mut extra,
                )?;
                positions.insert(table.probe, p.clone());
                p
            }
        };
        let (&first, &last) = match (table.axes.first(), table.axes.last()) {
            (Some(first), Some(last)) => (first, last),
            _ => continue,
        };
        let indices = match table.axes.len() {
            1 => rows,
            k => match blocks.get(&(table.probe, k)) {
                Some(b) => b.clone(),
                None => {
                    let b = block_positions(&rows, k, table.max, &mut prologue, &mut extra);
                    blocks.insert((table.probe, k), b.clone());
                    b
                }
            },
        };
        // The table with its dynamic axes merged into one, read by one Gather of the
        // row-major offsets of the leading block.
        let mut dims = table.dims[..first].to_vec();
        dims.push(table.dims[first..=last].iter().product());
        dims.extend_from_slice(&table.dims[last + 1..]);
        let full = format!("{name}.upto_{}", table.max);
        extra.push(Initializer {
            name: full.clone(),
            dims,
            data_type: table.data_type,
            bytes: Bytes::Memory(table.bytes),
        });
        prologue.push(node(
            "Gather",
            &format!("{name}.gather"),
            vec![full, indices],
            &name,
            vec![("axis", Attr::Int(first as i64))],
        ));
        removed.push(table.index);
    }
    removed.sort_unstable();
    for index in removed.into_iter().rev() {
        model.initializers.remove(index);
    }
    model.initializers.extend(extra);
    prologue.append(&mut model.graph.node);
    model.graph.node = prologue;
    for info in model
        .graph
        .input
        .iter_mut()
        .chain(model.graph.output.iter_mut())
    {
        let Some(name) = info.name.clone() else {
            continue;
        };
        let Some(extents) = io.get(&name) else {
            continue;
        };
        let Some(type_proto::Value::TensorType(t)) =
            info.r#type.as_mut().and_then(|t| t.value.as_mut())
        else {
            continue;
        };
        let Some(shape) = t.shape.as_mut() else {
            continue;
        };
        for ((_, dim), extent) in after_batch(shape.dim.iter_mut(), &name, batch_axes).zip(extents)
        {
            if let Extent::Dynamic { name, .. } = extent {
                dim.value = Some(Dim::DimParam(name.clone()));
            }
        }
    }
    Ok(())
}

fn node(
    op: &str,
    name: &str,
    inputs: Vec<String>,
    output: &str,
    attrs: Vec<(&str, Attr)>,
) -> NodeProto {
    NodeProto {
        op_type: Some(op.to_owned()),
        name: Some(name.to_owned()),
        input: inputs,
        output: vec![output.to_owned()],
        attribute: attrs.iter().map(|(n, a)| a.to_proto(n)).collect(),
        ..Default::default()
    }
}

fn int64s(name: &str, values: &[i64]) -> Initializer {
    Initializer {
        name: name.to_owned(),
        dims: vec![values.len() as u64],
        data_type: DataType::Int64,
        bytes: Bytes::Memory(values.iter().flat_map(|v| v.to_le_bytes()).collect()),
    }
}

fn float32s(name: &str, dims: Vec<u64>, values: &[f32]) -> Initializer {
    Initializer {
        name: name.to_owned(),
        dims,
        data_type: DataType::Float,
        bytes: Bytes::Memory(values.iter().flat_map(|v| v.to_le_bytes()).collect()),
    }
}

/// Nodes computing, from the positions `rows` (`0..size`), the row-major offsets of the
/// leading `size^k` block of a table whose `k` adjacent axes have `max` entries each:
/// `offset[i1, …, ik] = ((i1·max + i2)·max + …) + ik`, a `[size; k]` int64 tensor (each
/// step a `Reshape` adding a trailing axis of 1, a `Mul` and a broadcast `Add`). Returns
/// its name.
fn block_positions(
    rows: &str,
    k: usize,
    max: u64,
    prologue: &mut Vec<NodeProto>,
    extra: &mut Vec<Initializer>,
) -> String {
    let base = format!("{rows}.block{k}");
    let step = |s: &str| format!("{base}.{s}");
    extra.push(int64s(&step("max"), &[max as i64]));
    let mut acc = rows.to_owned();
    for j in 1..k {
        let mut shape = vec![0i64; j];
        shape.push(1);
        extra.push(int64s(&step(&format!("column{j}")), &shape));
        let column = step(&format!("as_column{j}"));
        prologue.push(node(
            "Reshape",
            &column,
            vec![acc, step(&format!("column{j}"))],
            &column,
            vec![],
        ));
        let scaled = step(&format!("scaled{j}"));
        prologue.push(node(
            "Mul",
            &scaled,
            vec![column, step("max")],
            &scaled,
            vec![],
        ));
        let out = if j + 1 == k {
            base.clone()
        } else {
            step(&format!("offsets{j}"))
        };
        prologue.push(node(
            "Add",
            &out,
            vec![scaled, rows.to_owned()],
            &out,
            vec![],
        ));
        acc = out;
    }
    acc
}

/// Nodes computing the int64 positions `0..size` of dimension `dim` (at most `max`) from
/// a graph input that carries it: ones along that axis (`Equal(x, x) or not`, true even
/// for NaN), counted by a `Conv` with an all-ones kernel of length `max` padded on the
/// left, minus one. Returns the positions' name.
fn positions_of(
    model: &Model,
    dim: &DynamicDim,
    max: u64,
    io: &IoExtents,
    prologue: &mut Vec<NodeProto>,
    extra: &mut Vec<Initializer>,
) -> Result<String, OnnxError> {
    let carrier = model.graph.input.iter().find_map(|info| {
        let name = info.name.as_ref()?;
        let axis = io
            .get(name)?
            .iter()
            .position(|e| matches!(e, Extent::Dynamic { name, .. } if *name == dim.symbol))?;
        Some((name.clone(), axis + 1, io.get(name)?.len() + 1))
    });
    let Some((input, axis, rank)) = carrier else {
        return Err(OnnxError::Program {
            what: format!(
                "no input carries the dynamic dimension {} itself",
                dim.symbol
            ),
        });
    };
    let base = format!("{}.positions", dim.symbol);
    let others: Vec<i64> = (0..rank as i64).filter(|&a| a != axis as i64).collect();
    extra.push(int64s(&format!("{base}.starts"), &vec![0; others.len()]));
    extra.push(int64s(&format!("{base}.ends"), &vec![1; others.len()]));
    extra.push(int64s(&format!("{base}.axes"), &others));
    extra.push(int64s(&format!("{base}.row"), &[1, 1, -1]));
    extra.push(int64s(&format!("{base}.flat"), &[-1]));
    extra.push(float32s(
        &format!("{base}.kernel"),
        vec![1, 1, max],
        &vec![1.0; max as usize],
    ));
    extra.push(float32s(&format!("{base}.one"), Vec::new(), &[1.0]));
    let step = |s: &str| format!("{base}.{s}");
    prologue.push(node(
        "Slice",
        &step("slice"),
        vec![input, step("starts"), step("ends"), step("axes")],
        &step("line"),
        vec![],
    ));
    prologue.push(node(
        "Equal",
        &step("equal"),
        vec![step("line"), step("line")],
        &step("equal"),
        vec![],
    ));
    prologue.push(node(
        "Not",
        &step("not"),
        vec![step("equal")],
        &step("not"),
        vec![],
    ));
    prologue.push(node(
        "Or",
        &step("or"),
        vec![step("equal"), step("not")],
        &step("true"),
        vec![],
    ));
    prologue.push(node(
        "Cast",
        &step("cast"),
        vec![step("true")],
        &step("ones"),
        vec![("to", Attr::Int(DataType::Float as i64))],
    ));
    prologue.push(node(
        "Reshape",
        &step("reshape"),
        vec![step("ones"), step("row")],
        &step("ones_row"),
        vec![],
    ));
    let pad = max as i64 - 1;
    prologue.push(node(
        "Conv",
        &step("count"),
        vec![step("ones_row"), step("kernel")],
        &step("counted"),
        vec![
            ("kernel_shape", Attr::Ints(vec![max as i64])),
            ("pads", Attr::Ints(vec![pad, 0])),
        ],
    ));
    prologue.push(node(
        "Sub",
        &step("sub"),
        vec![step("counted"), step("one")],
        &step("from_zero"),
        vec![],
    ));
    prologue.push(node(
        "Reshape",
        &step("flatten"),
        vec![step("from_zero"), step("flat")],
        &step("float"),
        vec![],
    ));
    prologue.push(node(
        "Cast",
        &step("to_int"),
        vec![step("float")],
        &base,
        vec![("to", Attr::Int(DataType::Int64 as i64))],
    ));
    Ok(base)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dim(min: u64, max: Option<u64>) -> DynamicDim {
        DynamicDim {
            symbol: "s27".into(),
            min,
            max,
        }
    }

    #[test]
    fn probes_are_two_sizes_inside_the_declared_range() {
        assert_eq!(dim(2, Some(64)).probes().unwrap(), (7, 11));
        assert_eq!(dim(12, None).probes().unwrap(), (13, 17));
        assert_eq!(dim(2, Some(8)).probes().unwrap(), (7, 8));
        assert_eq!(dim(2, Some(4)).probes().unwrap(), (4, 3));
        let err = dim(5, Some(5)).probes().unwrap_err().to_string();
        assert!(err.contains("allows only the sizes 5..=5"), "{err}");
    }

    fn causal(n: u64, max: u64) -> (Vec<u8>, Vec<u64>) {
        let bytes = (0..n * max).map(|k| u8::from(k % max <= k / max)).collect();
        (bytes, vec![1, n, max])
    }

    #[test]
    fn a_causal_mask_is_the_leading_block_of_the_mask_at_the_maximum() {
        let (long, long_dims) = causal(8, 8);
        let block: Vec<u8> = (0..9u64).map(|k| u8::from(k % 3 <= k / 3)).collect();
        assert_eq!(
            leading_block((&block, &[1, 3, 3]), (&long, &long_dims), &[1, 2]),
            Ok(())
        );
        // Along one axis only, the rows of a 3×8 mask.
        let (rows, rows_dims) = causal(3, 8);
        assert_eq!(
            leading_block((&rows, &rows_dims), (&long, &long_dims), &[1]),
            Ok(())
        );
    }

    #[test]
    fn a_block_that_is_not_the_leading_one_is_refused() {
        let (long, long_dims) = causal(8, 8);
        // An anti-causal 3×3 block.
        let upper: Vec<u8> = (0..9u64).map(|k| u8::from(k % 3 >= k / 3)).collect();
        let err = leading_block((&upper, &[1, 3, 3]), (&long, &long_dims), &[1, 2]).unwrap_err();
        assert!(err.contains("not the leading rows"), "{err}");
        // A size that changes off the named axes.
        let err = leading_block((&upper, &[1, 3, 3]), (&long, &long_dims), &[2]).unwrap_err();
        assert!(err.contains("other sizes change"), "{err}");
    }
}
