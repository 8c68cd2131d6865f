//! Per-sample gathers: an index list that indexes the batch dimension with `arange` over the
//! batch, `x[torch.arange(B), idx]` (CLIP's text pooling at each sample's end token, Hugging
//! Face's `padding_mask[batch_idx, kv_idx]` mask builders).
//!
//! `torch.arange(B)` is bound to no ONNX value: its value at every position is that
//! position's coordinate on the batch dimension ([`Bound::SampleIndex`]), which its views
//! (`[:, None, None, None]`, `unsqueeze`, `expand`, `permute`, integer casts) keep. In torch's
//! advanced indexing the index tensors broadcast together to sizes `P` and the result at a
//! position `p` of `P` reads `x[p_batch, i₁[p], i₂[p], …]`: with the batch indexed by its
//! own coordinate, each sample reads only its own row, so the indexing is a gather *within*
//! each sample by the other index tensors, which the graph computes without any op that
//! reads the batch size:
//!
//! - the indexed dimensions of `x` are moved together and flattened into one (a Transpose
//!   and a Reshape), the index tensors combined into one row-major index over it;
//! - constant indices (the same for every sample): Slices of runs of that dimension;
//! - indices computed per sample: `GatherElements` along it (opset 11), the index broadcast
//!   over the dimensions kept by adding int64 zeros (no Expand), negative indices wrapped
//!   by `Where(i < 0, i + size, i)` unless they come from `argmax`/`argmin`/`topk`/`sort`.
//!
//! The result's dimensions are placed as torch places them: `P` where the indexed
//! dimensions were when they are adjacent, first otherwise. A tensor with the same values
//! for every sample (position ids expanded over the batch) indexed by constants besides
//! the batch's `arange` gives the same values for every sample: evaluated for one.
//!
//! [`Bound::SampleIndex`]: super::super::lower::Bound::SampleIndex

use std::collections::HashMap;

use crate::elem::ElemType;
use crate::graph::{Attr, Value};
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::eval;
use ckpt_aten::program::{Argument, Node, SymInt};

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::super::tensor::{self, Size, Tensor};
use super::{arg_error, OrShape};

/// Ops whose result holds, at every position, the value of their input at a position with
/// the same batch coordinate: a view of `arange` over the batch stays one.
const VIEWS: [&str; 20] = [
    "slice.Tensor",
    "unsqueeze.default",
    "squeeze.default",
    "squeeze.dim",
    "squeeze.dims",
    "view.default",
    "reshape.default",
    "_unsafe_view.default",
    "expand.default",
    "permute.default",
    "transpose.int",
    "clone.default",
    "alias.default",
    "detach.default",
    "contiguous.default",
    "lift_fresh_copy.default",
    "to.dtype",
    "to.dtype_layout",
    "to.device",
    "_to_copy.default",
];

/// Ops whose index output (output 1, or the only one) holds positions, never negative.
const INDEX_PRODUCERS: [(&str, usize); 7] = [
    ("argmax.default", 0),
    ("argmin.default", 0),
    ("max.dim", 1),
    ("min.dim", 1),
    ("topk.default", 1),
    ("sort.default", 1),
    ("sort.stable", 1),
];

/// One index tensor of an index list, as the plan sees it: torch's sizes in terms of the
/// batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Index {
    /// `arange` over the batch or a view of it.
    Sample(Vec<Size>),
    /// Any other index tensor: computed per sample, or a constant.
    Values(Vec<Size>),
}

impl Index {
    fn sizes(&self) -> &[Size] {
        match self {
            Index::Sample(s) | Index::Values(s) => s,
        }
    }
}

/// How an index list whose batch index is `arange` over the batch is computed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Plan {
    /// The sizes the index tensors broadcast to (torch's `P`).
    pub broadcast: Vec<Size>,
    /// The dimension of `broadcast` that carries the batch.
    pub at: usize,
    /// The dimensions of `x` indexed per sample, in the index list's order.
    pub gathered: Vec<usize>,
    /// The dimensions of `x` not indexed, in order.
    pub kept: Vec<usize>,
    /// How many of `kept` come before `broadcast` in the result (torch puts `P` where the
    /// indexed dimensions were when they are adjacent, first otherwise).
    pub before: usize,
}

impl Plan {
    /// Torch's sizes of the result for an `x` of sizes `x`.
    pub fn result(&self, x: &[Size]) -> Vec<Size> {
        let kept: Vec<Size> = self.kept.iter().map(|&d| x[d]).collect();
        let mut out = kept[..self.before].to_vec();
        out.extend(&self.broadcast);
        out.extend(&kept[self.before..]);
        out
    }

    /// `broadcast` without the batch: each sample's index sizes.
    pub fn per_sample(&self) -> Vec<u64> {
        let mut sizes: Vec<u64> = self.broadcast.iter().map(|s| s.count).collect();
        sizes.remove(self.at);
        sizes
    }
}

/// numpy broadcasting of torch sizes in terms of the batch: the batch meets only itself or
/// 1, never a fixed size (torch would need it to equal the batch, which no fixed size does
/// for every batch).
fn broadcast(all: &[&[Size]]) -> Result<Vec<Size>, String> {
    let rank = all.iter().map(|s| s.len()).max().unwrap_or(0);
    (0..rank)
        .map(|i| {
            all.iter().try_fold(Size::fixed(1), |out, sizes| {
                let size = (i + sizes.len())
                    .checked_sub(rank)
                    .map_or(Size::fixed(1), |j| sizes[j]);
                match (out, size) {
                    (o, s) if o == s || s == Size::fixed(1) => Ok(o),
                    (o, s) if o == Size::fixed(1) => Ok(s),
                    _ => Err(format!(
                        "the index tensors' sizes {} do not broadcast for every batch",
                        all.iter()
                            .map(|s| tensor::show(s))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                }
            })
        })
        .collect()
}

/// The plan of torch's advanced indexing of an `x` of sizes `x` by `indices` (one entry per
/// leading dimension, `None` where it is not indexed), when one index is `arange` over the
/// batch; `Ok(None)` when none is.
pub(super) fn plan(x: &[Size], indices: &[Option<Index>]) -> Result<Option<Plan>, String> {
    let samples: Vec<usize> = (0..indices.len())
        .filter(|&d| matches!(indices[d], Some(Index::Sample(_))))
        .collect();
    let &[sample] = samples.as_slice() else {
        return match samples.len() {
            0 => Ok(None),
            _ => Err("the batch's `arange` indexes several dimensions; only the batch dimension is indexed by it".into()),
        };
    };
    if indices.len() > x.len() {
        return Err(format!(
            "{} indices for a tensor of sizes {}",
            indices.len(),
            tensor::show(x)
        ));
    }
    if x[sample] != Size::batch(1) {
        return Err(format!(
            "`arange` over the batch indexes dimension {sample} of {}, which is not the batch; only the batch dimension is indexed by it",
            tensor::show(x)
        ));
    }
    let given: Vec<usize> = (0..indices.len())
        .filter(|&d| indices[d].is_some())
        .collect();
    let sizes: Vec<&[Size]> = indices.iter().flatten().map(Index::sizes).collect();
    let broadcast = broadcast(&sizes)?;
    let batch: Vec<usize> = (0..broadcast.len())
        .filter(|&a| broadcast[a].batch)
        .collect();
    let &[at] = batch.as_slice() else {
        return Err(format!(
            "the index tensors carry the batch on different dimensions ({})",
            tensor::show(&broadcast)
        ));
    };
    if broadcast[at] != Size::batch(1) {
        return Err(format!(
            "the index tensors broadcast to {}, the batch folded",
            tensor::show(&broadcast)
        ));
    }
    let gathered = given.iter().copied().filter(|&d| d != sample).collect();
    let kept: Vec<usize> = (0..x.len()).filter(|d| !given.contains(d)).collect();
    let adjacent = given.windows(2).all(|w| w[1] == w[0] + 1);
    let before = if adjacent { given[0] } else { 0 };
    Ok(Some(Plan {
        broadcast,
        at,
        gathered,
        kept,
        before,
    }))
}

/// A per-sample index tensor, ready to combine: a constant (its sizes without the batch,
/// right-aligned to the per-sample broadcast sizes), or an int64 activation with the batch
/// first.
enum Term {
    Constant(eval::Tensor),
    Computed { value: Value, nonnegative: bool },
}

impl<'p> Lowering<'p, '_> {
    /// `arange(B)` (start 0, step 1, `end` the batch): bound as each sample's index; false
    /// when `end` is not the batch.
    pub(super) fn arange_of_batch(
        &mut self,
        node: &Node,
        args: &Args<'_>,
    ) -> Result<bool, OnnxError> {
        let batch = match args.get("end") {
            Some(Argument::SymInt(SymInt::Name(name))) => self.is_batch_symbol(name),
            Some(Argument::SymInt(size @ SymInt::Expr(_))) => self.batch.is(size),
            _ => false,
        };
        let plain = |name: &str, value: f64| match args.get(name) {
            None => true,
            Some(Argument::Int(n)) => *n as f64 == value,
            Some(Argument::Float(f)) => *f == value,
            Some(_) => false,
        };
        if !batch || !plain("start", 0.0) || !plain("step", 1.0) {
            return Ok(false);
        }
        self.bind_sample_index(node)?;
        Ok(true)
    }

    /// A view of `arange` over the batch ([`VIEWS`]) bound as one; false when `node` reads
    /// none. Slices of the batch must keep all of it; a `view`/`reshape` must read a tensor
    /// whose only dimension above 1 is the batch (so the order of its values is theirs).
    pub(super) fn follow_sample_index(&mut self, node: &Node, op: &str) -> Result<bool, OnnxError> {
        let args = Args(node);
        let Some(Argument::Tensor(input)) = args.get("self") else {
            return Ok(false);
        };
        let Some((dims, axis)) = self.sample_index(input) else {
            return Ok(false);
        };
        if !VIEWS.contains(&op) {
            return Ok(false);
        }
        let (dims, axis) = (dims.to_vec(), axis);
        match op {
            "slice.Tensor" => {
                let dim = tensor::axis(args.int("dim").or_shape()?, dims.len())?;
                let start = args.optional_int("start").or_shape()?.unwrap_or(0);
                let step = args.int("step").or_shape()?;
                if dim == axis && (start != 0 || step != 1) {
                    return Err(arg_error(format!(
                        "a slice of `arange` over the batch from {start} by {step}; only the whole of it is exported"
                    )));
                }
            }
            "view.default" | "reshape.default" | "_unsafe_view.default"
                if dims.iter().product::<u64>() != 1 =>
            {
                return Err(arg_error(format!(
                    "a view of `arange` over the batch expanded to {dims:?} per sample; only views of it that leave every other size 1 are exported"
                )));
            }
            _ => {}
        }
        self.bind_sample_index(node)?;
        Ok(true)
    }

    /// `index.Tensor` whose index list indexes the batch with `arange` over it (see the
    /// module docs); false when none of its indices is one.
    pub(super) fn per_sample_gather(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<bool, OnnxError> {
        let indices = args.optional_tensors("indices").or_shape()?;
        if !indices
            .iter()
            .flatten()
            .any(|name| self.sample_index(name).is_some())
        {
            return Ok(false);
        }
        let source = args.tensor("self").or_shape()?;
        if self.uniform_axis(source).is_some() {
            return self.uniform_gather(node, source, &indices).map(|()| true);
        }
        let x = self.tensor(source)?;
        let mut kinds = Vec::with_capacity(indices.len());
        for index in &indices {
            kinds.push(match index {
                None => None,
                Some(name) => Some(self.index_kind(name)?),
            });
        }
        let plan = plan(&x.sizes(), &kinds)
            .map_err(arg_error)?
            .ok_or_else(|| arg_error("no index is `arange` over the batch".into()))?;
        let y = if plan.gathered.is_empty() {
            self.sample_rows(&x, &plan, scope)?
        } else {
            let names: Vec<&str> = plan.gathered.iter().filter_map(|&d| indices[d]).collect();
            self.gather_rows(x, &plan, &names, scope)?
        };
        self.bind_tensor(node, 0, y)?;
        Ok(true)
    }

    /// The per-sample gather of a tensor with the same values for every sample (positions
    /// expanded over the batch) by constant indices: the same for every sample too, computed
    /// at export for one sample (each sample's index is then 0).
    fn uniform_gather(
        &mut self,
        node: &Node,
        source: &str,
        indices: &[Option<&str>],
    ) -> Result<(), OnnxError> {
        let axis = self.uniform_axis(source);
        let mut inputs: HashMap<&str, eval::Tensor> = HashMap::new();
        inputs.insert(source, self.constant_tensor(source)?);
        for (dim, name) in indices.iter().enumerate() {
            let Some(name) = *name else { continue };
            let t = match self.sample_index(name) {
                Some((dims, _)) if Some(dim) == axis => {
                    let count = dims.iter().product::<u64>() as usize;
                    eval::Tensor::i64(dims.to_vec(), vec![0; count]).map_err(arg_error)?
                }
                Some(_) => {
                    return Err(arg_error(format!(
                        "`arange` over the batch indexes dimension {dim} of `{source}`, whose batch is on dimension {}; only the batch dimension is indexed by it",
                        axis.unwrap_or_default()
                    )))
                }
                None if self.is_constant(name) => self.constant_tensor(name)?,
                None => {
                    return Err(arg_error(format!(
                        "`{source}` has the same values for every sample and the index `{name}` is computed per sample; only constant indices are exported beside `arange` over the batch there"
                    )))
                }
            };
            inputs.insert(name, t);
        }
        let mut out = eval::evaluate(node, &|name| inputs.get(name).cloned())
            .map_err(|e| arg_error(format!("evaluating it for one sample: {e}")))?;
        if out.len() != 1 {
            return Err(arg_error(format!("it evaluates to {} tensors", out.len())));
        }
        self.bind_uniform(node, 0, out.swap_remove(0))
    }

    /// Index tensor `name` as the plan sees it.
    fn index_kind(&self, name: &str) -> Result<Index, OnnxError> {
        if let Some((dims, axis)) = self.sample_index(name) {
            let mut sizes: Vec<Size> = dims.iter().map(|&d| Size::fixed(d)).collect();
            sizes[axis] = Size::batch(1);
            return Ok(Index::Sample(sizes));
        }
        let elem = self.recorded_elem(name)?;
        if !matches!(elem, ElemType::Int64 | ElemType::Int32) {
            return Err(arg_error(format!(
                "the index `{name}` holds {elem} values; beside `arange` over the batch only int64 and int32 indices are exported"
            )));
        }
        if self.is_constant(name) {
            // A constant, or the same for every sample (size 1 on its batch dimension).
            let dims = self.constant_dims(&self.constant(name)?)?;
            return Ok(Index::Values(dims.into_iter().map(Size::fixed).collect()));
        }
        Ok(Index::Values(self.tensor(name)?.sizes()))
    }

    /// `x[arange(B)]` with no other index: every sample's own rows, a Reshape to torch's
    /// sizes (the index adds only dimensions of size 1 around the batch).
    fn sample_rows(&mut self, x: &Tensor, plan: &Plan, scope: &str) -> Result<Tensor, OnnxError> {
        if plan.per_sample().iter().any(|&s| s != 1) {
            return Err(arg_error(format!(
                "indexing the batch by `arange` over it broadcast to {}; only sizes 1 beside the batch are exported",
                tensor::show(&plan.broadcast)
            )));
        }
        x.clone()
            .reshaped(&mut self.g, scope, &plan.result(&x.sizes()))
    }

    /// The gather within each sample along the dimensions `plan.gathered`, indexed by
    /// `names` in that order.
    fn gather_rows(
        &mut self,
        x: Tensor,
        plan: &Plan,
        names: &[&str],
        scope: &str,
    ) -> Result<Tensor, OnnxError> {
        let sizes = x.sizes();
        let batch = x.batch_axis().ok_or_else(|| {
            arg_error("a gather within each sample of a tensor without a batch".into())
        })?;
        // `x` as [batch, gathered…, kept…], the gathered dimensions flattened into one.
        let order: Vec<usize> = std::iter::once(batch)
            .chain(plan.gathered.iter().copied())
            .chain(plan.kept.iter().copied())
            .collect();
        let moved = x.transposed(&mut self.g, scope, &order)?;
        let extents: Vec<u64> = plan.gathered.iter().map(|&d| sizes[d].count).collect();
        let rows: u64 = extents.iter().product();
        let kept: Vec<u64> = plan.kept.iter().map(|&d| sizes[d].count).collect();
        let flat: Vec<Size> = [Size::batch(1), Size::fixed(rows)]
            .into_iter()
            .chain(kept.iter().map(|&k| Size::fixed(k)))
            .collect();
        let flat = moved.reshaped(&mut self.g, scope, &flat)?;
        let each = plan.per_sample();
        let count: u64 = each.iter().product();
        if count == 0 || rows == 0 {
            return Err(arg_error("indexing that selects nothing".into()));
        }
        // The combined row-major index over the flattened dimension.
        let mut constant =
            eval::Tensor::i64(each.clone(), vec![0; count as usize]).map_err(arg_error)?;
        let mut computed: Option<Value> = None;
        let mut stride = rows;
        for (name, &extent) in names.iter().zip(&extents) {
            stride /= extent;
            match self.term(name, plan, &each, scope)? {
                Term::Constant(t) => {
                    let wrapped = wrap(&t, extent).map_err(arg_error)?;
                    let scaled = scale(&wrapped, stride).map_err(arg_error)?;
                    constant = add(&constant, &scaled).map_err(arg_error)?;
                }
                Term::Computed { value, nonnegative } => {
                    let wrapped = if nonnegative {
                        value
                    } else {
                        self.wrap_negative(&value, extent, scope)?
                    };
                    let scaled = if stride == 1 {
                        wrapped
                    } else {
                        let s = self.g.typed_scalar(
                            &format!("{scope}.stride"),
                            stride as f64,
                            ElemType::Int64,
                        )?;
                        emit::binary(
                            &mut self.g,
                            "Mul",
                            scope,
                            Operand::Activation(&wrapped),
                            Operand::Constant(&s),
                        )?
                    };
                    computed = Some(match computed {
                        None => scaled,
                        Some(sum) => emit::binary(
                            &mut self.g,
                            "Add",
                            scope,
                            Operand::Activation(&sum),
                            Operand::Activation(&scaled),
                        )?,
                    });
                }
            }
        }
        let taken = match computed {
            None => {
                let positions = constant.to_i64().map_err(arg_error)?;
                let value = self.take_values(scope, flat.value(), 0, &positions)?;
                Tensor::rows(value, 1)
            }
            Some(index) => self.gather_elements(&flat, index, &constant, &kept, scope)?,
        };
        // [batch, each…, kept…], then torch's order.
        let laid: Vec<Size> = std::iter::once(Size::batch(1))
            .chain(each.iter().map(|&s| Size::fixed(s)))
            .chain(kept.iter().map(|&k| Size::fixed(k)))
            .collect();
        let laid = taken.reshaped(&mut self.g, scope, &laid)?;
        let p = each.len();
        let kept_axis = |i: usize| 1 + p + i;
        let perm: Vec<usize> = (0..plan.before)
            .map(kept_axis)
            .chain((0..=p).map(|q| match q.cmp(&plan.at) {
                std::cmp::Ordering::Less => 1 + q,
                std::cmp::Ordering::Equal => 0,
                std::cmp::Ordering::Greater => q,
            }))
            .chain((plan.before..kept.len()).map(kept_axis))
            .collect();
        laid.transposed(&mut self.g, scope, &perm)
    }

    /// Index tensor `name` of the gather: a constant's values without the batch dimension
    /// (size 1 there), or the activation as int64 with the batch first and the per-sample
    /// rank of `each`.
    fn term(
        &mut self,
        name: &str,
        plan: &Plan,
        each: &[u64],
        scope: &str,
    ) -> Result<Term, OnnxError> {
        if self.is_constant(name) {
            let t = self.constant_tensor(name)?;
            // Its sizes right-aligned to `plan.broadcast`; drop the batch's position.
            let offset = plan.broadcast.len() - t.rank();
            let dims: Vec<i64> = t
                .dims()
                .iter()
                .enumerate()
                .filter(|&(i, _)| i + offset != plan.at)
                .map(|(_, &d)| d as i64)
                .collect();
            return Ok(Term::Constant(t.reshape(&dims).map_err(arg_error)?));
        }
        let t = self.tensor(name)?;
        let t = match t.batch_axis() {
            Some(0) => t,
            Some(batch) => {
                let order: Vec<usize> = std::iter::once(batch)
                    .chain((0..t.rank()).filter(|&a| a != batch))
                    .collect();
                t.transposed(&mut self.g, scope, &order)?
            }
            None => {
                return Err(arg_error(format!(
                    "`{name}` indexes each sample, but it has no batch"
                )))
            }
        };
        let value = emit::cast(&mut self.g, scope, t.value(), ElemType::Int64);
        let mut shape = vec![1; each.len() - value.shape().len()];
        shape.extend(value.shape());
        let value = if shape == value.shape() {
            value
        } else {
            self.g.reshape(scope, &value, &shape)?
        };
        Ok(Term::Computed {
            value,
            nonnegative: self.holds_positions(name),
        })
    }

    /// Whether value `name` is the index output of an op that returns positions
    /// ([`INDEX_PRODUCERS`]), never negative.
    fn holds_positions(&self, name: &str) -> bool {
        self.graph.nodes.iter().any(|node| {
            let op = node
                .target
                .strip_prefix("torch.ops.aten.")
                .unwrap_or(&node.target);
            INDEX_PRODUCERS.iter().any(|&(producer, k)| {
                producer == op && node.outputs.get(k).and_then(Argument::tensor_name) == Some(name)
            })
        })
    }

    /// Python's wrap of a negative index into an axis of `extent`: `Where(i < 0, i + extent,
    /// i)`.
    fn wrap_negative(
        &mut self,
        index: &Value,
        extent: u64,
        scope: &str,
    ) -> Result<Value, OnnxError> {
        let zero = self
            .g
            .typed_scalar(&format!("{scope}.zero"), 0.0, ElemType::Int64)?;
        let size =
            self.g
                .typed_scalar(&format!("{scope}.extent"), extent as f64, ElemType::Int64)?;
        let shape = index.shape().to_vec();
        let negative = emit::typed(
            &mut self.g,
            "Less",
            scope,
            [index.name(), zero.name()],
            &shape,
            ElemType::Bool,
        );
        let shifted = emit::binary(
            &mut self.g,
            "Add",
            scope,
            Operand::Activation(index),
            Operand::Constant(&size),
        )?;
        Ok(emit::typed(
            &mut self.g,
            "Where",
            scope,
            [negative.name(), shifted.name(), index.name()],
            &shape,
            ElemType::Int64,
        ))
    }

    /// `GatherElements` of `flat` (`[batch, rows, kept…]`) along its rows by computed
    /// `index` plus `constant` (per-sample sizes `each`), broadcast over `kept` by adding
    /// int64 zeros: `[batch, count, kept…]`.
    fn gather_elements(
        &mut self,
        flat: &Tensor,
        index: Value,
        constant: &eval::Tensor,
        kept: &[u64],
        scope: &str,
    ) -> Result<Tensor, OnnxError> {
        if self.g.opset().version() < 11 {
            return Err(arg_error(
                "a gather within each sample by a computed index needs GatherElements from opset 11; pass --opset 11".into(),
            ));
        }
        let each = constant.dims().to_vec();
        let count: u64 = each.iter().product();
        // The index at every position of `each` (the constant part added, zeros widening
        // it where the computed part has size 1).
        let index = if index.shape() == each
            && constant.to_i64().is_ok_and(|v| v.iter().all(|&i| i == 0))
        {
            index
        } else {
            let values: Vec<f64> = match constant.to_i64() {
                Ok(v) => v.into_iter().map(|i| i as f64).collect(),
                Err(_) => constant.to_f32().into_iter().map(f64::from).collect(),
            };
            let c = self.g.typed_constant(
                &format!("{scope}.index"),
                each.clone(),
                &values,
                ElemType::Int64,
            )?;
            emit::single(self.g.node(
                "Add",
                scope,
                vec![index.name().to_owned(), c.name().to_owned()],
                vec![],
                vec![each.clone()],
            ))
        };
        let mut shape = vec![count];
        shape.extend(std::iter::repeat_n(1, kept.len()));
        let mut index = self.g.reshape(scope, &index, &shape)?;
        if kept.iter().any(|&k| k != 1) {
            let mut zeros = vec![1];
            zeros.extend(kept);
            let values = vec![0.0; kept.iter().product::<u64>() as usize];
            let z = self.g.typed_constant(
                &format!("{scope}.broadcast"),
                zeros,
                &values,
                ElemType::Int64,
            )?;
            let mut wide = vec![count];
            wide.extend(kept);
            index = emit::single(self.g.node(
                "Add",
                scope,
                vec![index.name().to_owned(), z.name().to_owned()],
                vec![],
                vec![wide],
            ));
        }
        let mut out = vec![count];
        out.extend(kept);
        let value = emit::single(self.g.node(
            "GatherElements",
            scope,
            vec![flat.value().name().to_owned(), index.name().to_owned()],
            vec![("axis", Attr::Int(1))],
            vec![out],
        ));
        Ok(Tensor::rows(value, 1))
    }
}

/// Constant indices into an axis of `extent` with negative ones wrapped, as torch does;
/// refused outside `[-extent, extent)`, where torch raises.
fn wrap(t: &eval::Tensor, extent: u64) -> Result<eval::Tensor, String> {
    let size = extent as i64;
    let values = t
        .to_i64()?
        .into_iter()
        .map(|i| match i {
            i if (0..size).contains(&i) => Ok(i),
            i if (-size..0).contains(&i) => Ok(i + size),
            i => Err(format!("index {i} is out of range for size {extent}")),
        })
        .collect::<Result<Vec<i64>, String>>()?;
    eval::Tensor::i64(t.dims().to_vec(), values)
}

/// `t · factor`.
fn scale(t: &eval::Tensor, factor: u64) -> Result<eval::Tensor, String> {
    let f = eval::Tensor::i64(vec![], vec![factor as i64])?;
    eval::Tensor::zip(t, &f, |a, b| a * b, Some(i64::checked_mul))
}

/// `a + b`, broadcast (`a` has the full sizes).
fn add(a: &eval::Tensor, b: &eval::Tensor) -> Result<eval::Tensor, String> {
    eval::Tensor::zip(a, b, |p, q| p + q, Some(i64::checked_add))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n() -> Size {
        Size::batch(1)
    }

    fn f(count: u64) -> Size {
        Size::fixed(count)
    }

    /// CLIP's pooling `x[arange(B), ids.argmax(-1)]` of `x` `[N, S, D]`: `[N, D]`, a gather
    /// of one row per sample.
    #[test]
    fn clip_pooling_gathers_one_row_per_sample() {
        let x = [n(), f(7), f(5)];
        let p = plan(
            &x,
            &[
                Some(Index::Sample(vec![n()])),
                Some(Index::Values(vec![n()])),
            ],
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (p.at, &p.gathered[..], &p.kept[..], p.before),
            (0, &[1][..], &[2][..], 0)
        );
        assert_eq!(p.result(&x), [n(), f(5)]);
        assert!(p.per_sample().is_empty());
    }

    /// Hugging Face's `padding_mask[arange(B)[:, None, None, None], kv[None, None, None, :]]`.
    #[test]
    fn a_padding_mask_lookup_broadcasts_to_four_dimensions() {
        let x = [n(), f(16)];
        let p = plan(
            &x,
            &[
                Some(Index::Sample(vec![n(), f(1), f(1), f(1)])),
                Some(Index::Values(vec![f(1), f(1), f(1), f(16)])),
            ],
        )
        .unwrap()
        .unwrap();
        assert_eq!(p.result(&x), [n(), f(1), f(1), f(16)]);
        assert_eq!(p.per_sample(), [1, 1, 16]);
    }

    /// torch puts the broadcast sizes where adjacent indexed dimensions were, and first
    /// when they are apart.
    #[test]
    fn results_are_placed_as_torch_places_them() {
        // Time-major `x[S, N, D]`, `x[idx, arange(B)]`: adjacent, first.
        let x = [f(6), n(), f(4)];
        let both = [
            Some(Index::Values(vec![n()])),
            Some(Index::Sample(vec![n()])),
        ];
        assert_eq!(plan(&x, &both).unwrap().unwrap().result(&x), [n(), f(4)]);
        // `x[N, A, C, D][arange(B)[:, None], :, idx]`: apart, so P = [N, K] leads.
        let x = [n(), f(3), f(5), f(2)];
        let apart = [
            Some(Index::Sample(vec![n(), f(1)])),
            None,
            Some(Index::Values(vec![n(), f(4)])),
        ];
        let p = plan(&x, &apart).unwrap().unwrap();
        assert_eq!((p.before, &p.kept[..]), (0, &[1, 3][..]));
        assert_eq!(p.result(&x), [n(), f(4), f(3), f(2)]);
        // `x[N, A, C][:, idx, arange(B)]` would index a per-sample dimension by it.
        let x = [f(3), n(), f(5)];
        let err = plan(
            &x,
            &[
                None,
                Some(Index::Values(vec![f(2)])),
                Some(Index::Sample(vec![n()])),
            ],
        );
        assert!(err.unwrap_err().contains("not the batch"));
    }

    #[test]
    fn indices_that_cannot_follow_every_batch_are_refused() {
        let x = [n(), f(7)];
        // A fixed size against the batch: torch needs it to equal the batch.
        let fixed = [
            Some(Index::Sample(vec![n()])),
            Some(Index::Values(vec![f(3)])),
        ];
        assert!(plan(&x, &fixed).unwrap_err().contains("do not broadcast"));
        // The batch on two dimensions of the broadcast.
        let two = [
            Some(Index::Sample(vec![n(), f(1)])),
            Some(Index::Values(vec![n()])),
        ];
        assert!(plan(&x, &two).unwrap_err().contains("different dimensions"));
        let none = [None, Some(Index::Values(vec![n()]))];
        assert_eq!(plan(&x, &none), Ok(None));
    }

    #[test]
    fn constant_indices_wrap_as_python_does() {
        let t = eval::Tensor::i64(vec![3], vec![0, -1, 2]).unwrap();
        assert_eq!(wrap(&t, 4).unwrap().to_i64().unwrap(), [0, 3, 2]);
        let out = eval::Tensor::i64(vec![1], vec![4]).unwrap();
        assert!(wrap(&out, 4).unwrap_err().contains("out of range"));
    }
}
