//! Activations of a program and where their batch is.
//!
//! Every activation is an ONNX value with torch's own axes, in torch's order: no lazy
//! layouts. Exactly one axis carries the batch, `k·N` of it (`k` is the axis' *factor*: 1
//! for the batch alone, the window count after a Swin window partition, the token count
//! after LeViT's `flatten(0, 1)`); every other axis has a fixed size. So layout ops lower
//! to static-shape ONNX only: a Transpose with a constant `perm`, a Reshape to a constant
//! shape whose batch axis is written `-1` (or `0` where it stays in place with its
//! factor), a Slice or Split of a fixed axis. No Shape, Gather, ConstantOfShape or Expand
//! is needed, whatever the batch.
//!
//! Each of these is exact for every batch because it is the ONNX twin of the torch op it
//! lowers (a Reshape is torch's row-major `view`); what must never happen is an op that
//! works *across* the batch axis (a reduction or softmax along it, a select of one of its
//! rows, a cat along it): that mixes samples, and [`mixes_samples`] says so.
//!
//! A static export (`--batch static`) has no batch: its activations are
//! [`Placement::Static`], their ONNX values have torch's whole shape, and no axis is one an
//! op may not work along, so the refusals above never arise for them.

use std::ops::Range;

use crate::graph::{Attr, GraphBuilder, Value, Weight};
use crate::OnnxError;
use ckpt_aten::dim::Dim;

/// One torch size in terms of the batch: `count`, times the batch when `batch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    pub count: u64,
    pub batch: bool,
}

impl Size {
    pub fn fixed(count: u64) -> Size {
        Size {
            count,
            batch: false,
        }
    }

    /// `factor` times the batch.
    pub fn batch(factor: u64) -> Size {
        Size {
            count: factor,
            batch: true,
        }
    }
}

/// Sizes with the batch as `N`: `[10, 4·N, 16]`.
pub fn show(sizes: &[Size]) -> String {
    let items: Vec<String> = sizes
        .iter()
        .map(|s| match (s.count, s.batch) {
            (1, true) => "N".to_owned(),
            (c, true) => format!("{c}·N"),
            (c, false) => c.to_string(),
        })
        .collect();
    format!("[{}]", items.join(", "))
}

fn error(what: String) -> OnnxError {
    OnnxError::Shape { what }
}

/// The error for `op` working along `axis`, the batch axis of a tensor of `sizes`.
pub fn mixes_samples(op: &str, axis: usize, sizes: &[Size]) -> OnnxError {
    error(format!(
        "{op} along dimension {axis}, which carries the batch ({}), mixes samples; only ops that treat each sample alike are exported",
        show(sizes)
    ))
}

/// The error for constant `name` of sizes `dims` beside a tensor of `sizes` in `op`, when
/// the constant's dimension that lines up with the batch (sizes align from the last) has
/// a size other than 1: each sample would take entries of its own by its position in the
/// batch, which no dynamic batch keeps. `None` when no such dimension does.
pub fn constant_meets_batch(op: &str, name: &str, dims: &[u64], sizes: &[Size]) -> Option<String> {
    let batch = sizes.iter().position(|s| s.batch)?;
    let at = (batch + dims.len()).checked_sub(sizes.len())?;
    let size = dims.get(at).copied().filter(|&d| d != 1)?;
    Some(format!(
        "{op} of {} and `{name}` {dims:?}: the constant's dimension {at} (size {size}) lines up with the batch, so each sample would take entries of its own by its position in the batch; a constant may have size 1 there only (a program exported at fixed sizes and converted with `--batch static` broadcasts it as torch does)",
        show(sizes)
    ))
}

/// Why a constant does not broadcast with an activation whose batch it does not meet:
/// it has `more` dimensions than the activation (which only a static export widens), or
/// two sizes differ.
pub fn unbroadcast(more: bool) -> &'static str {
    if more {
        "the constant has more dimensions than the tensor, and with a dynamic batch the result may not gain dimensions in front of it (a program exported at fixed sizes and converted with `--batch static` may)"
    } else {
        "the sizes do not broadcast (aligned from the last, each pair must be equal or one of them 1)"
    }
}

/// The error for `cat` of tensors along `axis`, the batch axis of a tensor of `sizes`
/// (RAFT's `cat([image1, image2])` through one encoder, `chunk`ed apart after): the result
/// holds whole batches one after another, while a batch folded `k` times holds each
/// sample's `k` rows together (as `view(B * k, …)` lays them out), so no placement
/// describes it.
pub fn stacks_batches(axis: usize, sizes: &[Size]) -> OnnxError {
    error(format!(
        "cat along dimension {axis}, which carries the batch ({}), stacks whole batches one after another; the export folds a batch only with each sample's rows together (as `view(B * k, ...)` lays them out), so run the shared layers on each tensor separately (a batch of one input at a time) or concatenate along another dimension",
        show(sizes)
    ))
}

/// Torch dimension `dim` (negative counts from the end) of a rank-`rank` tensor.
pub fn axis(dim: i64, rank: usize) -> Result<usize, OnnxError> {
    let r = rank as i64;
    let a = if dim < 0 { dim + r } else { dim };
    if (0..r).contains(&a) {
        Ok(a as usize)
    } else {
        Err(error(format!(
            "dimension {dim} is out of range for a rank-{rank} tensor"
        )))
    }
}

/// Torch dimension `dim` of a rank-`rank` tensor, wrapped as torch wraps it (a 0-d
/// tensor has a dimension 0: [`Dim::OfScalar`]).
pub fn dim(dim: i64, rank: usize) -> Result<Dim, OnnxError> {
    Dim::wrap(dim, rank).map_err(error)
}

/// Where an activation's batch is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Torch dimension `axis` is `factor`·N; the ONNX value's `shape()` leaves it out.
    /// Invariant: `factor ≥ 1` and `axis ≤ value.shape().len()`.
    Batch { axis: usize, factor: u64 },
    /// No batch (a static export): the ONNX value's `shape()` is torch's whole shape.
    Static,
}

/// The first dimension of an activation, as ops that work on each row alike see it: the
/// batch (`factor`·N rows) or, in a static export, the first size. The ONNX value of such
/// an op leaves it out of its `shape()` ([`Tensor::as_rows`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rows {
    /// `factor`·N rows, the batch folded `factor` times.
    Batch(u64),
    /// A static tensor's first size.
    Static(u64),
    /// A static tensor under one row added in front (a Reshape to `[1, sizes…]`), so that
    /// an op written for rows works along every torch dimension `d` as its per-sample
    /// axis `d` (a reduction over dimension 0 or over all of them); the result loses the
    /// row again ([`super::lower::Lowering::lifted_activation`]).
    ///
    /// `scalar`: the node read a 0-d tensor, lifted as its one-entry 1-d view (torch's
    /// `maybe_wrap_dim(dim, 0, wrap_scalar=true)`: a 0-d tensor has a dimension 0, which −1
    /// also names, and torch's kernels compute on that view), so each result is reshaped to
    /// torch's recorded sizes, which differ from it by sizes of 1 only.
    ///
    /// `rank`: the least number of per-sample axes each tensor is lifted to, with sizes of
    /// 1 in front of its own (torch's broadcasting aligns sizes from the last): an
    /// element-wise op whose constant operand has more dimensions than a tensor's rows
    /// (a `[3, 4]` mask beside a `[3, 4]` input) lifts every tensor to the widest operand's
    /// rank, so that each constant broadcasts within the one row (0: each its own rank).
    Lifted { scalar: bool, rank: usize },
}

impl Rows {
    /// The rows as torch's size of the first dimension.
    pub fn size(self) -> Size {
        match self {
            Rows::Batch(factor) => Size::batch(factor),
            Rows::Static(count) => Size::fixed(count),
            Rows::Lifted { .. } => Size::fixed(1),
        }
    }
}

/// An activation: ONNX value `value` whose full shape is `value.shape()` with the batch
/// inserted where `placement` says (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    value: Value,
    placement: Placement,
}

/// Why a view to sizes with a dimension of size 0 is refused.
const EMPTY_VIEW: &str =
    "it has a dimension of size 0 (an empty tensor), which ATC does not compile";

impl Tensor {
    /// `value` (a [`GraphBuilder`] value: its axis 0 is the rows) whose rows are `factor`
    /// times the batch.
    pub fn rows(value: Value, factor: u64) -> Tensor {
        Tensor {
            value,
            placement: Placement::Batch {
                axis: 0,
                factor: factor.max(1),
            },
        }
    }

    /// `value` as a tensor of a static export: its shape is torch's whole shape.
    pub fn fixed(value: Value) -> Tensor {
        Tensor {
            value,
            placement: Placement::Static,
        }
    }

    /// ONNX value `value` as a tensor of torch's `sizes`: at most one of them the batch
    /// (none: a tensor of a static export), the others `value`'s shape in order (the
    /// result of an op that moves the batch, such as a product that broadcasts a constant's
    /// leading dimensions in front of it).
    pub fn placed(value: Value, sizes: &[Size]) -> Result<Tensor, OnnxError> {
        let fixed: Vec<u64> = sizes.iter().filter(|s| !s.batch).map(|s| s.count).collect();
        let mut batches = sizes.iter().enumerate().filter(|(_, s)| s.batch);
        let placement = match (batches.next(), batches.next()) {
            (None, _) => Placement::Static,
            (Some((axis, s)), None) => Placement::Batch {
                axis,
                factor: s.count.max(1),
            },
            (Some(_), Some(_)) => {
                return Err(error(format!("{} carries the batch twice", show(sizes))))
            }
        };
        if fixed != value.shape() {
            return Err(error(format!(
                "{:?} is not the value of sizes {}",
                value.shape(),
                show(sizes)
            )));
        }
        Ok(Tensor { value, placement })
    }

    /// The rows `rows` of ONNX value `value`, whose `shape()` leaves them out (the result
    /// of an op that works on each row alike, [`Tensor::as_rows`]).
    pub fn from_rows(rows: Rows, value: Value) -> Tensor {
        match rows {
            Rows::Batch(factor) => Tensor::rows(value, factor),
            Rows::Static(count) => Tensor::fixed(value.with_first(count)),
            Rows::Lifted { .. } => Tensor::fixed(value.with_first(1)),
        }
    }

    /// This tensor's first dimension as [`Rows`], and its ONNX value with that dimension
    /// left out of its `shape()` (the same ONNX value): `None` when the batch is on another
    /// dimension, or a static tensor has no dimension.
    pub fn as_rows(&self) -> Option<(Rows, Value)> {
        match self.placement {
            Placement::Batch { axis: 0, factor } => Some((Rows::Batch(factor), self.value.clone())),
            Placement::Batch { .. } => None,
            Placement::Static => {
                let (first, rest) = self.value.without_first()?;
                Some((Rows::Static(first), rest))
            }
        }
    }

    /// The ONNX value; its `shape()` leaves out the batch axis.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// Where the batch is.
    pub fn placement(&self) -> Placement {
        self.placement
    }

    /// The torch dimension that carries the batch (`None` in a static export).
    pub fn batch_axis(&self) -> Option<usize> {
        match self.placement {
            Placement::Batch { axis, .. } => Some(axis),
            Placement::Static => None,
        }
    }

    /// How many times the batch that dimension is (`None` in a static export).
    pub fn factor(&self) -> Option<u64> {
        match self.placement {
            Placement::Batch { factor, .. } => Some(factor),
            Placement::Static => None,
        }
    }

    pub fn rank(&self) -> usize {
        match self.placement {
            Placement::Batch { .. } => self.value.shape().len() + 1,
            Placement::Static => self.value.shape().len(),
        }
    }

    /// Torch's sizes of this tensor.
    pub fn sizes(&self) -> Vec<Size> {
        let mut sizes: Vec<Size> = self.value.shape().iter().map(|&d| Size::fixed(d)).collect();
        if let Placement::Batch { axis, factor } = self.placement {
            sizes.insert(axis, Size::batch(factor));
        }
        sizes
    }

    /// Whether `other` has the same rank and its batch on the same axis with the same
    /// factor (or neither has a batch).
    pub fn same_batch(&self, other: &Tensor) -> bool {
        (self.placement, self.rank()) == (other.placement, other.rank())
    }

    /// The index in `value().shape()` of torch dimension `axis` (in range), which `op`
    /// works along: refused when it is the batch.
    pub fn sample_axis(&self, axis: usize, op: &str) -> Result<usize, OnnxError> {
        let Placement::Batch { axis: batch, .. } = self.placement else {
            return Ok(axis);
        };
        match axis.cmp(&batch) {
            std::cmp::Ordering::Less => Ok(axis),
            std::cmp::Ordering::Equal => Err(mixes_samples(op, axis, &self.sizes())),
            std::cmp::Ordering::Greater => Ok(axis - 1),
        }
    }

    /// This layout over `value`, the result of an op that keeps every axis where it is
    /// (element-wise ops, an op along a fixed axis): `value` must have the same rank.
    pub fn with_value(&self, value: Value) -> Result<Tensor, OnnxError> {
        if value.shape().len() != self.value.shape().len() {
            return Err(error(format!(
                "{:?} does not keep the axes of {:?}",
                value.shape(),
                self.value.shape()
            )));
        }
        Ok(Tensor {
            value,
            placement: self.placement,
        })
    }

    /// This layout over `value`, the result of an op that keeps every axis where it is and
    /// appends one (an embedding's lookup adds the table's width): `value` must have one
    /// axis more.
    pub fn with_axis_appended(&self, value: Value) -> Result<Tensor, OnnxError> {
        if value.shape().len() != self.value.shape().len() + 1 {
            return Err(error(format!(
                "{:?} does not append one axis to {:?}",
                value.shape(),
                self.value.shape()
            )));
        }
        Ok(Tensor {
            value,
            placement: self.placement,
        })
    }

    /// Emits a one-output node reading this tensor (and `extra` inputs) that keeps its
    /// layout and the shape of its value.
    fn same_shape_node(
        &self,
        g: &mut GraphBuilder,
        op: &'static str,
        scope: &str,
        inputs: Vec<String>,
        attrs: Vec<(&'static str, Attr)>,
    ) -> Tensor {
        let shape = self.value.shape().to_vec();
        let value = g.node(op, scope, inputs, attrs, vec![shape]).swap_remove(0);
        Tensor { value, ..*self }
    }

    /// torch's `permute(perm)`: a Transpose (none for the identity).
    pub fn transposed(
        self,
        g: &mut GraphBuilder,
        scope: &str,
        perm: &[usize],
    ) -> Result<Tensor, OnnxError> {
        let mut sorted = perm.to_vec();
        sorted.sort_unstable();
        if sorted != (0..self.rank()).collect::<Vec<_>>() {
            return Err(error(format!(
                "{perm:?} is not a permutation of {} dimensions",
                self.rank()
            )));
        }
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return Ok(self);
        }
        let sizes = self.sizes();
        let placement = match self.placement {
            Placement::Batch { axis, factor } => Placement::Batch {
                axis: perm.iter().position(|&p| p == axis).unwrap_or(0),
                factor,
            },
            Placement::Static => Placement::Static,
        };
        let shape = perm
            .iter()
            .filter(|&&p| !sizes[p].batch)
            .map(|&p| sizes[p].count)
            .collect();
        let perm = perm.iter().map(|&p| p as i64).collect();
        let value = g
            .node(
                "Transpose",
                scope,
                vec![self.value.name().to_owned()],
                vec![("perm", Attr::Ints(perm))],
                vec![shape],
            )
            .swap_remove(0);
        Ok(Tensor { value, placement })
    }

    /// torch's `view`/`reshape` (and `flatten`, `unflatten`, `unsqueeze`, `squeeze`) to
    /// `target`: a Reshape to a constant shape with the batch axis as `-1` (`0` where it
    /// stays in place with its factor); none when the sizes do not change. `target` must
    /// carry the batch on one axis and hold the same number of elements. A static tensor is
    /// reshaped to `target`'s exact sizes (none of which may be the batch).
    pub fn reshaped(
        self,
        g: &mut GraphBuilder,
        scope: &str,
        target: &[Size],
    ) -> Result<Tensor, OnnxError> {
        let sizes = self.sizes();
        if sizes == target {
            return Ok(self);
        }
        let fail = |why: &str| {
            error(format!(
                "a view of {} to {}: {why}",
                show(&sizes),
                show(target)
            ))
        };
        let elements = |s: &[Size]| s.iter().try_fold(1u64, |n, d| n.checked_mul(d.count));
        let Placement::Batch {
            axis: from_axis,
            factor: from_factor,
        } = self.placement
        else {
            if target.iter().any(|s| s.batch) {
                return Err(fail("a static tensor has no batch"));
            }
            if target.iter().any(|s| s.count == 0) {
                return Err(fail(EMPTY_VIEW));
            }
            if elements(&sizes) != elements(target) {
                return Err(fail("the element counts differ"));
            }
            let exact: Vec<u64> = target.iter().map(|s| s.count).collect();
            let onnx: Vec<i64> = exact.iter().map(|&d| d as i64).collect();
            let onnx = g.constant_i64(&format!("{scope}.shape"), &onnx);
            g.note_reshaped(&onnx, sizes.iter().map(|s| Some(s.count)).collect());
            let inputs = vec![self.value.name().to_owned(), onnx.name().to_owned()];
            let value = g
                .node("Reshape", scope, inputs, vec![], vec![exact])
                .swap_remove(0);
            return Ok(Tensor::fixed(value));
        };
        let batch_axes: Vec<usize> = (0..target.len()).filter(|&i| target[i].batch).collect();
        let &[axis] = batch_axes.as_slice() else {
            return Err(fail(
                "the result must carry the batch on exactly one dimension",
            ));
        };
        if target.iter().any(|s| s.count == 0) {
            return Err(fail(EMPTY_VIEW));
        }
        if elements(&sizes) != elements(target) {
            return Err(fail("the element counts differ"));
        }
        let factor = target[axis].count;
        let onnx: Vec<i64> = target
            .iter()
            .enumerate()
            .map(
                |(i, s)| match (s.batch, i == from_axis && factor == from_factor) {
                    (true, true) => 0,
                    (true, false) => -1,
                    (false, _) => s.count as i64,
                },
            )
            .collect();
        let shape = target
            .iter()
            .filter(|s| !s.batch)
            .map(|s| s.count)
            .collect();
        let onnx = g.constant_i64(&format!("{scope}.shape"), &onnx);
        g.note_reshaped(
            &onnx,
            sizes
                .iter()
                .map(|s| (!s.batch).then_some(s.count))
                .collect(),
        );
        let inputs = vec![self.value.name().to_owned(), onnx.name().to_owned()];
        let value = g
            .node("Reshape", scope, inputs, vec![], vec![shape])
            .swap_remove(0);
        Ok(Tensor {
            value,
            placement: Placement::Batch { axis, factor },
        })
    }

    /// `range` of torch dimension `axis`, which `op` works along (not the batch): a Slice.
    pub fn sliced(
        &self,
        g: &mut GraphBuilder,
        scope: &str,
        op: &str,
        axis: usize,
        range: Range<u64>,
    ) -> Result<Tensor, OnnxError> {
        let at = self.sample_axis(axis, op)?;
        let mut shape = self.value.shape().to_vec();
        if range.start >= range.end || range.end > shape[at] {
            return Err(error(format!(
                "cannot slice {range:?} from dimension {axis} of {}",
                show(&self.sizes())
            )));
        }
        shape[at] = range.end - range.start;
        let value = g.slice_onnx(scope, self.value.name(), axis, range, shape);
        Ok(Tensor { value, ..*self })
    }

    /// Torch dimension `axis` (not the batch) cut into pieces of `sizes`: a Split.
    pub fn split(
        &self,
        g: &mut GraphBuilder,
        scope: &str,
        op: &str,
        axis: usize,
        sizes: &[u64],
    ) -> Result<Vec<Tensor>, OnnxError> {
        let at = self.sample_axis(axis, op)?;
        if self.value.shape()[at] != sizes.iter().sum::<u64>() {
            return Err(error(format!(
                "cannot split dimension {axis} of {} into {sizes:?}",
                show(&self.sizes())
            )));
        }
        let shapes = sizes
            .iter()
            .map(|&s| {
                let mut shape = self.value.shape().to_vec();
                shape[at] = s;
                shape
            })
            .collect();
        let values = g.split_onnx(scope, self.value.name(), axis, sizes, shapes);
        Ok(values
            .into_iter()
            .map(|value| Tensor { value, ..*self })
            .collect())
    }

    /// torch's `cat(tensors, axis)`: every tensor has its batch where the first has it, and
    /// `axis` is not the batch ([`stacks_batches`]).
    pub fn concat(
        g: &mut GraphBuilder,
        scope: &str,
        tensors: &[Tensor],
        axis: usize,
    ) -> Result<Tensor, OnnxError> {
        let Some(first) = tensors.first() else {
            return Err(error("cat of no tensors".into()));
        };
        if first.batch_axis() == Some(axis) {
            return Err(stacks_batches(axis, &first.sizes()));
        }
        let at = first.sample_axis(axis, "cat")?;
        let mut shape = first.value.shape().to_vec();
        shape[at] = 0;
        for t in tensors {
            let agree = first.same_batch(t)
                && t.value
                    .shape()
                    .iter()
                    .zip(&shape)
                    .enumerate()
                    .all(|(i, (a, b))| i == at || a == b);
            if !agree {
                return Err(error(format!(
                    "cat of {} and {} along dimension {axis}",
                    show(&first.sizes()),
                    show(&t.sizes())
                )));
            }
            shape[at] += t.value.shape()[at];
        }
        let inputs = tensors.iter().map(|t| t.value.name().to_owned()).collect();
        let value = g
            .node(
                "Concat",
                scope,
                inputs,
                vec![("axis", Attr::Int(axis as i64))],
                vec![shape],
            )
            .swap_remove(0);
        Ok(Tensor { value, ..*first })
    }

    /// `op` (`Softmax`, `LogSoftmax`) along torch dimension `axis` (not the batch): the
    /// ONNX op over the last axis (exact at every opset), with `axis` swapped there and
    /// back when it is another one.
    pub fn softmax(
        self,
        g: &mut GraphBuilder,
        scope: &str,
        op: &'static str,
        axis: usize,
    ) -> Result<Tensor, OnnxError> {
        self.sample_axis(axis, op)?;
        let last = self.rank() - 1;
        let mut perm: Vec<usize> = (0..=last).collect();
        perm.swap(axis, last);
        let moved = self.transposed(g, scope, &perm)?;
        let inputs = vec![moved.value.name().to_owned()];
        let y = moved.same_shape_node(g, op, scope, inputs, vec![("axis", Attr::Int(-1))]);
        y.transposed(g, scope, &perm)
    }

    /// `op` (`Add`, `Sub`, `Mul`, `Div`, …) of this tensor and constant `c`, in that order
    /// or (`constant_first`) the other, broadcast both ways by numpy rules (aligned on the
    /// last axis; a size-1 axis of either side takes the other's size) except that `c` has
    /// size 1 on the batch axis. In a static export `c` may have more dimensions than this
    /// tensor, which then takes sizes of 1 in front (a Reshape), as torch broadcasts it.
    pub fn with_constant(
        &self,
        g: &mut GraphBuilder,
        scope: &str,
        op: &'static str,
        c: &Weight,
        constant_first: bool,
    ) -> Result<Tensor, OnnxError> {
        let dims = c.dims();
        if self.placement == Placement::Static && dims.len() > self.rank() {
            // torch's result has the constant's rank: sizes of 1 in front of this tensor's.
            let mut sizes = vec![Size::fixed(1); dims.len() - self.rank()];
            sizes.extend(self.sizes());
            let widened = self.clone().reshaped(g, scope, &sizes)?;
            return widened.with_constant(g, scope, op, c, constant_first);
        }
        let sizes = self.sizes();
        if let Some(why) = constant_meets_batch(op, c.name(), dims, &sizes) {
            return Err(error(why));
        }
        let offset = sizes.len().checked_sub(dims.len());
        let fits = offset.is_some_and(|offset| {
            dims.iter().enumerate().all(|(i, &d)| {
                let s = sizes[offset + i];
                d == 1 || (!s.batch && (d == s.count || s.count == 1))
            })
        });
        if !fits {
            return Err(error(format!(
                "{op} of {} and `{}` {dims:?}: {}",
                show(&sizes),
                c.name(),
                unbroadcast(dims.len() > sizes.len())
            )));
        }
        // The per-sample shape of the result: this tensor's, widened where `c` is wider.
        let offset = sizes.len() - dims.len();
        let shape: Vec<u64> = sizes
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.batch)
            .map(|(i, s)| match i.checked_sub(offset).map(|j| dims[j]) {
                Some(d) if s.count == 1 => d,
                _ => s.count,
            })
            .collect();
        let (x, c) = (self.value.name(), c.name());
        let inputs = if constant_first { [c, x] } else { [x, c] };
        let value = super::emit::binary_node(g, op, scope, inputs, shape);
        Ok(Tensor { value, ..*self })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Batch, Opset};

    fn builder() -> GraphBuilder {
        GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()))
    }

    fn n(count: u64) -> Size {
        Size::batch(count)
    }

    fn f(count: u64) -> Size {
        Size::fixed(count)
    }

    #[test]
    fn a_view_to_an_empty_dimension_is_refused_as_empty_not_as_a_count_mismatch() {
        let mut g = builder();
        let x = Tensor::rows(g.input("x", vec![1, 0, 1]).unwrap(), 1);
        let err = x
            .reshaped(&mut g, "s", &[n(1), f(1), f(1), f(0), f(1)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("size 0 (an empty tensor)"), "{err}");
        let mut g = GraphBuilder::new(Opset::default(), Batch::Static);
        let x = Tensor::fixed(g.input("x", vec![2, 3]).unwrap());
        let err = x.reshaped(&mut g, "s", &[f(5)]).unwrap_err().to_string();
        assert!(err.contains("the element counts differ"), "{err}");
    }

    /// timm attention: `qkv.reshape(B, L, 3, H, D).permute(2, 0, 3, 1, 4)`, then `[0]`.
    #[test]
    fn the_batch_follows_a_permute_and_a_select() {
        let mut g = builder();
        let x = Tensor::rows(g.input("x", vec![10, 3, 2, 8]).unwrap(), 1);
        let p = x.transposed(&mut g, "s", &[2, 0, 3, 1, 4]).unwrap();
        assert_eq!(p.sizes(), [f(3), n(1), f(2), f(10), f(8)]);
        assert_eq!(p.batch_axis(), Some(1));
        let q = p.sliced(&mut g, "s", "select", 0, 0..1).unwrap();
        let q = q.reshaped(&mut g, "s", &[n(1), f(2), f(10), f(8)]).unwrap();
        assert_eq!(
            (q.batch_axis(), q.value().shape()),
            (Some(0), &[2, 10, 8][..])
        );
        let err = p.sliced(&mut g, "s", "select", 1, 0..1).unwrap_err();
        assert!(err.to_string().contains("mixes samples"), "{err}");
    }

    /// Swin: `(N, 4, 4, C)` windows of 2×2 become `(4·N, 4, C)` and come back.
    #[test]
    fn windows_fold_the_batch_and_unfold_it() {
        let mut g = builder();
        let x = Tensor::rows(g.input("x", vec![4, 4, 6]).unwrap(), 1);
        let w = x
            .reshaped(&mut g, "s", &[n(1), f(2), f(2), f(2), f(2), f(6)])
            .unwrap()
            .transposed(&mut g, "s", &[0, 1, 3, 2, 4, 5])
            .unwrap()
            .reshaped(&mut g, "s", &[n(4), f(4), f(6)])
            .unwrap();
        assert_eq!((w.batch_axis(), w.factor()), (Some(0), Some(4)));
        let back = w
            .reshaped(&mut g, "s", &[n(1), f(2), f(2), f(2), f(2), f(6)])
            .unwrap();
        assert_eq!(back.factor(), Some(1));
        let err = back
            .reshaped(&mut g, "s", &[n(1), n(1), f(96)])
            .unwrap_err();
        assert!(err.to_string().contains("exactly one"), "{err}");
    }

    /// `--batch static`: no axis is the batch, so a select, a cat and a softmax along
    /// dimension 0 are plain ONNX ops, and views are Reshapes to exact sizes.
    #[test]
    fn a_static_tensor_works_along_every_axis() {
        let mut g = GraphBuilder::new(Opset::default(), Batch::Static);
        let x = Tensor::fixed(g.input("x", vec![3, 4]).unwrap());
        assert_eq!((x.rank(), x.sizes()), (2, vec![f(3), f(4)]));
        assert_eq!(x.batch_axis(), None);
        let row = x
            .sliced(&mut g, "s", "select", 0, 1..2)
            .unwrap()
            .reshaped(&mut g, "s", &[f(4)])
            .unwrap();
        assert_eq!(
            (row.placement(), row.value().shape()),
            (Placement::Static, &[4][..])
        );
        let both = Tensor::concat(&mut g, "s", &[x.clone(), x.clone()], 0).unwrap();
        assert_eq!(both.sizes(), [f(6), f(4)]);
        let soft = x.clone().softmax(&mut g, "s", "Softmax", 0).unwrap();
        assert_eq!(soft.value().shape(), [3, 4]);
        let (rows, value) = x.as_rows().unwrap();
        assert_eq!((rows, value.shape()), (Rows::Static(3), &[4][..]));
        assert!(x.reshaped(&mut g, "s", &[n(1), f(12)]).is_err());
    }

    /// `--batch static`: a constant of the tensor's whole rank, with more rows, or with
    /// more dimensions broadcasts as torch broadcasts it.
    #[test]
    fn a_static_tensor_broadcasts_with_any_constant() {
        let mut g = GraphBuilder::new(Opset::default(), Batch::Static);
        let x = Tensor::fixed(g.input("x", vec![1, 4]).unwrap());
        let rows = g.weight("r", vec![3, 4], &[0.0; 12]).unwrap();
        let y = x.with_constant(&mut g, "s", "Add", &rows, false).unwrap();
        assert_eq!(y.sizes(), [f(3), f(4)]);
        let more = g.weight("m", vec![2, 1, 4], &[0.0; 8]).unwrap();
        let z = y.with_constant(&mut g, "s", "Mul", &more, true).unwrap();
        assert_eq!(
            (z.placement(), z.sizes()),
            (Placement::Static, vec![f(2), f(3), f(4)])
        );
        let wrong = g.weight("w", vec![5], &[0.0; 5]).unwrap();
        let err = z
            .with_constant(&mut g, "s", "Add", &wrong, false)
            .unwrap_err();
        assert!(err.to_string().contains("do not broadcast"), "{err}");
    }

    #[test]
    fn a_cat_of_batches_along_the_batch_is_refused_as_stacking_them() {
        let mut g = builder();
        let x = Tensor::rows(g.input("x", vec![3, 8]).unwrap(), 1);
        let err = Tensor::concat(&mut g, "s", &[x.clone(), x.clone()], 0)
            .unwrap_err()
            .to_string();
        assert!(err.contains("stacks whole batches"), "{err}");
        let both = Tensor::concat(&mut g, "s", &[x.clone(), x], 1).unwrap();
        assert_eq!(both.sizes(), [n(1), f(6), f(8)]);
    }

    #[test]
    fn constants_line_up_with_the_batch_anywhere() {
        let mut g = builder();
        // Time-major (T=5, N, C=4).
        let x = Tensor::rows(g.input("x", vec![5, 4]).unwrap(), 1)
            .transposed(&mut g, "s", &[1, 0, 2])
            .unwrap();
        let per_step = g.weight("c", vec![5, 1, 4], &[0.0; 20]).unwrap();
        let y = x
            .with_constant(&mut g, "s", "Add", &per_step, false)
            .unwrap();
        assert_eq!(y.sizes(), [f(5), n(1), f(4)]);
        let across = g.weight("d", vec![5, 2, 4], &[0.0; 40]).unwrap();
        let err = x
            .with_constant(&mut g, "s", "Add", &across, true)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("dimension 1 (size 2) lines up with the batch"),
            "{err}"
        );
        assert!(err.contains("--batch static"), "{err}");
        let err = x.softmax(&mut g, "s", "Softmax", 1).unwrap_err();
        assert!(
            err.to_string().contains("Softmax along dimension 1"),
            "{err}"
        );
    }
}
