//! Ops that only move data: cat, flatten, view/reshape, slice and permute, wherever the
//! batch is ([`super::super::tensor`]): a view or permute may move the batch to any
//! dimension or fold it into one, and the result is checked against torch's record.

use crate::OnnxError;
use ckpt_aten::program::{Argument, Node, SymInt};

use super::super::batch::BatchDim;
use super::super::lower::Lowering;
use super::super::tensor::{self, Placement, Size, Tensor};
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;
use ckpt_aten::decompose;
use ckpt_aten::dim::Dim;
use ckpt_aten::shuffle;

/// The most Slices `unfold` writes ([`Lowering::unfold`]).
const UNFOLD_SLICES: u64 = 256;

impl<'p> Lowering<'p, '_> {
    /// `cat(tensors, dim)`: of activations with the batch on one dimension (not `dim`);
    /// a stored tensor expanded over the batch is built beside a batch-first activation.
    pub(super) fn cat(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let all = args.tensors("tensors").or_shape()?;
        let names: Vec<&String> = all.iter().filter(|t| !self.is_empty_slice(t)).collect();
        if let [only] = names[..] {
            if self.uniform_axis(only).is_none() {
                let x = self.tensor(only)?;
                return self.bind_tensor(node, 0, x);
            }
        }
        let like = names
            .iter()
            .find(|t| self.uniform_axis(t).is_none())
            .map(|t| self.tensor(t))
            .transpose()?;
        let mut xs = Vec::with_capacity(names.len());
        for t in names {
            xs.push(match (self.uniform_axis(t), &like) {
                // A class token expanded over the batch, beside the patch tokens.
                (Some(0), Some(like)) => {
                    let rows = self.batch_first(like)?;
                    let c = self.constant(t)?;
                    let shape = self.constant_dims(&c)?[1..].to_vec();
                    let x = self.expanded_like(&c, &shape, &rows, scope)?;
                    Tensor::from_rows(self.rows_of(like)?, x)
                }
                _ => self.tensor(t)?,
            });
        }
        let rank = xs.first().map_or(1, Tensor::rank);
        let axis = tensor::axis(args.int("dim").or_shape()?, rank)?;
        let y = Tensor::concat(&mut self.g, scope, &xs, axis)?;
        self.bind_tensor(node, 0, y)
    }

    /// `Tensor.unfold(dimension, size, step)` (HaloNet's key/value windows): along
    /// `dimension` (not the batch), every window of `size` entries `step` apart, the
    /// windows' count in its place and each window's entries as a new last dimension.
    /// Opset 11 reads entries of a computed tensor at computed places only by Gather, which
    /// ATC allows from constant tables alone, so the windows are Slices: a Slice per window,
    /// a Concat of them and a Transpose, or, when there are more windows than entries per
    /// window, a strided Slice per entry ([`Lowering::unfold_by_offsets`]); at most
    /// [`UNFOLD_SLICES`] Slices. A 0-d tensor is unfolded along its one-entry view: one
    /// window of its value, `[1]`.
    pub(super) fn unfold(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let wrapped = tensor::dim(args.int("dimension").or_shape()?, x.rank())?;
        let x = self.view_along(x, wrapped, scope)?;
        let dim = wrapped.view_axis();
        let at = x.sample_axis(dim, "unfold")?;
        let length = x.value().shape()[at];
        let (size, step) = (args.int("size").or_shape()?, args.int("step").or_shape()?);
        let (Ok(size @ 1..), Ok(step @ 1..)) = (u64::try_from(size), u64::try_from(step)) else {
            return Err(arg_error(format!("unfold by size {size} and step {step}")));
        };
        let Some(windows) = length.checked_sub(size).map(|r| r / step + 1) else {
            return Err(arg_error(format!(
                "unfold by {size} of a dimension of {length}"
            )));
        };
        if windows.min(size) > UNFOLD_SLICES {
            return Err(arg_error(format!(
                "unfold into {windows} windows of {size}: opset 11 reads a computed tensor at computed places only by Gather, which ATC allows from constant tables alone, so windows are Slices, one per window or per entry, at most {UNFOLD_SLICES}"
            )));
        }
        if windows > size {
            let y = self.unfold_by_offsets(x, dim, size, step, windows, scope)?;
            return self.bind_along(node, 0, wrapped, y);
        }
        let mut pieces = Vec::with_capacity(windows as usize);
        for i in 0..windows {
            let piece = x.sliced(&mut self.g, scope, "unfold", dim, i * step..i * step + size)?;
            let mut lifted = piece.sizes();
            lifted.insert(dim, tensor::Size::fixed(1));
            pieces.push(piece.reshaped(&mut self.g, scope, &lifted)?);
        }
        let stacked = Tensor::concat(&mut self.g, scope, &pieces, dim)?;
        // [.., windows, size (at dim + 1), ..] → the window's entries last.
        let mut order: Vec<usize> = (0..stacked.rank()).filter(|&a| a != dim + 1).collect();
        order.push(dim + 1);
        let y = stacked.transposed(&mut self.g, scope, &order)?;
        self.bind_along(node, 0, wrapped, y)
    }

    /// The `windows` windows of `size` entries `step` apart along torch dimension `dim` of
    /// `x` (not the batch), as [`Lowering::unfold`] lays them out, read entry by entry:
    /// entry `k` of every window is one strided Slice from `k`, and the Slices stack on a
    /// new last dimension.
    fn unfold_by_offsets(
        &mut self,
        x: Tensor,
        dim: usize,
        size: u64,
        step: u64,
        windows: u64,
        scope: &str,
    ) -> Result<Tensor, OnnxError> {
        let (rows, axis) = match x.placement() {
            Placement::Static => (self.lift(&x, scope)?, dim),
            Placement::Batch { .. } => (self.batch_first(&x)?, x.sample_axis(dim, "unfold")?),
        };
        let span = (windows - 1) * step + 1;
        let mut entries = Vec::with_capacity(size as usize);
        for k in 0..size {
            let entry = self.strided_slice(scope, &rows, axis, k..k + span, step)?;
            let mut shape = entry.shape().to_vec();
            shape.push(1);
            entries.push(self.g.reshape(scope, &entry, &shape)?);
        }
        let refs: Vec<&crate::graph::Value> = entries.iter().collect();
        let last = rows.shape().len();
        let y = self.g.concat(scope, &refs, last)?;
        match x.placement() {
            Placement::Static => self.unlift(y, scope),
            Placement::Batch { factor, .. } => Ok(Tensor::rows(y, factor)),
        }
    }

    /// `roll(self, shifts, dims)` (Swin's shifted windows): along each dimension, which must
    /// not be the batch, the last `shift` entries moved to the front, as a Concat of two
    /// Slices. `dims` empty rolls the flattened tensor ([`Lowering::roll_flattened`]).
    pub(super) fn roll(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let list = |name: &str| match args.get(name) {
            Some(Argument::Ints(v)) => Ok(v.clone()),
            Some(Argument::Int(i)) => Ok(vec![*i]),
            None => Ok(vec![]),
            Some(other) => Err(arg_error(format!("argument `{name}` is {}", other.kind()))),
        };
        let (shifts, dims) = (list("shifts")?, list("dims")?);
        if let ([shift], []) = (shifts.as_slice(), dims.as_slice()) {
            return self.roll_flattened(node, x, *shift, scope);
        }
        if dims.len() != shifts.len() {
            return Err(arg_error(format!(
                "roll by {shifts:?} along {dims:?}: only a shift per named dimension is exported"
            )));
        }
        let rolls = dims
            .iter()
            .zip(&shifts)
            .map(|(&dim, &shift)| Ok((tensor::axis(dim, x.rank())?, shift)))
            .collect::<Result<Vec<_>, OnnxError>>()?;
        let y = self.rolled(scope, x, &rolls, "roll")?;
        self.bind_tensor(node, 0, y)
    }

    /// `roll(x, shift)` without dims: torch rolls the flattened tensor and views it back
    /// as `x`'s sizes, so entries move across every dimension. A Reshape to one dimension,
    /// the roll, and a Reshape back; with a dynamic batch the entries would move between
    /// samples, so it is refused.
    fn roll_flattened(
        &mut self,
        node: &Node,
        x: Tensor,
        shift: i64,
        scope: &str,
    ) -> Result<(), OnnxError> {
        if x.placement() != Placement::Static {
            return Err(arg_error(format!(
                "roll by {shift} of the flattened {} moves entries between samples; only a roll along named dimensions other than the batch is exported with a dynamic batch",
                tensor::show(&x.sizes())
            )));
        }
        let sizes = x.sizes();
        let count = sizes.iter().map(|s| s.count).product::<u64>();
        let flat = x.reshaped(&mut self.g, scope, &[Size::fixed(count)])?;
        let rolled = self.rolled(scope, flat, &[(0, shift)], "roll")?;
        let y = rolled.reshaped(&mut self.g, scope, &sizes)?;
        self.bind_tensor(node, 0, y)
    }

    /// `x` rolled by each `(axis, shift)` in turn (torch axes, per-sample ones: `op`
    /// along the batch is refused): two Slices and a Concat per axis.
    pub(super) fn rolled(
        &mut self,
        scope: &str,
        mut x: Tensor,
        rolls: &[(usize, i64)],
        op: &str,
    ) -> Result<Tensor, OnnxError> {
        for &(axis, shift) in rolls {
            let at = x.sample_axis(axis, op)?;
            let n = x.value().shape()[at] as i64;
            let k = shift.rem_euclid(n.max(1)) as u64;
            if k == 0 {
                continue;
            }
            let n = n as u64;
            let tail = x.sliced(&mut self.g, scope, op, axis, n - k..n)?;
            let head = x.sliced(&mut self.g, scope, op, axis, 0..n - k)?;
            x = Tensor::concat(&mut self.g, scope, &[tail, head], axis)?;
        }
        Ok(x)
    }

    /// `view`/`reshape`/`_unsafe_view`, `reshape_as`/`view_as` and `unflatten(self, dim,
    /// sizes)`: one Reshape of `self` to torch's recorded sizes, wherever the batch goes
    /// (see [`Tensor::reshaped`]). The size list itself is not read (it may hold symbols
    /// for the batch times constants).
    pub(super) fn view_as_recorded(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let target = self.recorded_sizes(node, 0)?;
        let y = x.reshaped(&mut self.g, scope, &target)?;
        self.bind_tensor(node, 0, y)
    }

    /// `t(self)`: torch's rule, `transpose(0, 1)` of a 2-D tensor and the tensor itself
    /// below 2-D (a 0-d tensor included).
    pub(super) fn t(&mut self, node: &Node, args: &Args<'_>, scope: &str) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let order: &[usize] = match x.rank() {
            2 => &[1, 0],
            0 | 1 => return self.bind_tensor(node, 0, x),
            r => {
                return Err(arg_error(format!(
                    "t of a rank-{r} tensor (torch takes at most 2-D)"
                )))
            }
        };
        let y = x.transposed(&mut self.g, scope, order)?;
        self.bind_tensor(node, 0, y)
    }

    /// `mT`, `mH`, `adjoint` (`self`): torch's rule, the last two dimensions swapped (the
    /// conjugate of a real tensor is the tensor); below 2-D torch refuses them.
    pub(super) fn matrix_transpose(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let rank = x.rank();
        if rank < 2 {
            return Err(arg_error(format!(
                "a matrix transpose of a rank-{rank} tensor (torch needs at least 2-D)"
            )));
        }
        let mut order: Vec<usize> = (0..rank).collect();
        order.swap(rank - 2, rank - 1);
        let y = x.transposed(&mut self.g, scope, &order)?;
        self.bind_tensor(node, 0, y)
    }

    /// `pixel_shuffle` (`up`) / `pixel_unshuffle`: torch's plan ([`shuffle::plan`]) over the
    /// last three dimensions, none of which may carry the batch: a Reshape, a Transpose, a
    /// Reshape.
    pub(super) fn pixel_shuffle(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        up: bool,
    ) -> Result<(), OnnxError> {
        let op = if up {
            "pixel_shuffle"
        } else {
            "pixel_unshuffle"
        };
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let rank = x.rank();
        if rank < 3 || x.batch_axis().is_some_and(|a| a >= rank - 3) {
            return Err(arg_error(format!(
                "{op} of {}: the batch must be outside the last three dimensions",
                tensor::show(&x.sizes())
            )));
        }
        let name = if up {
            "upscale_factor"
        } else {
            "downscale_factor"
        };
        let factor = args
            .optional_int(name)
            .or_shape()?
            .ok_or_else(|| arg_error(format!("{op} needs `{name}`")))?;
        let source = self.rows_input(&x, scope)?;
        let shape = source.shape().to_vec();
        let lead = shape.len() - 3;
        let plan = shuffle::plan([shape[lead], shape[lead + 1], shape[lead + 2]], factor, up)
            .map_err(|e| arg_error(format!("{op}: {e}")))?;
        let with_tail =
            |tail: &[u64]| -> Vec<u64> { shape[..lead].iter().chain(tail).copied().collect() };
        let split = self.g.reshape(scope, &source, &with_tail(&plan.split))?;
        let order: Vec<usize> = (0..lead)
            .chain(plan.order.iter().map(|&o| lead + o))
            .collect();
        let moved = self.g.transpose(scope, &split, &order)?;
        let y = self.g.reshape(scope, &moved, &with_tail(&plan.merged))?;
        let y = self.rows_result(&x, y, scope)?;
        self.bind_tensor(node, 0, y)
    }

    /// `channel_shuffle` / `native_channel_shuffle` (`self`, `groups`): torch's plan
    /// ([`shuffle::channel_groups`]), a Reshape splitting the channels, a Transpose of the
    /// two parts and a Reshape back; the channels (dimension 1) may not carry the batch.
    pub(super) fn channel_shuffle(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let sizes = x.sizes();
        if x.batch_axis() == Some(1) {
            return Err(arg_error(format!(
                "channel_shuffle of {}: the channels (dimension 1) carry the batch",
                tensor::show(&sizes)
            )));
        }
        let counts: Vec<u64> = sizes.iter().map(|s| s.count).collect();
        let groups = args
            .optional_int("groups")
            .or_shape()?
            .ok_or_else(|| arg_error("channel_shuffle needs `groups`".into()))?;
        let [groups, each] = shuffle::channel_groups(&counts, groups).map_err(arg_error)?;
        let mut split = sizes.clone();
        split.splice(1..2, [Size::fixed(groups), Size::fixed(each)]);
        let mut order: Vec<usize> = (0..split.len()).collect();
        order.swap(1, 2);
        let y = x
            .reshaped(&mut self.g, scope, &split)?
            .transposed(&mut self.g, scope, &order)?
            .reshaped(&mut self.g, scope, &sizes)?;
        self.bind_tensor(node, 0, y)
    }

    /// `flip(self, dims)`: each dimension of `dims` (never the batch: that would reverse
    /// the samples) read backwards, one Slice with step −1 over all of them (opset ≥ 10).
    pub(super) fn flip(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let dims = match args.get("dims") {
            Some(Argument::Ints(dims)) => dims.clone(),
            Some(Argument::Int(d)) => vec![*d],
            other => {
                return Err(arg_error(format!(
                    "argument `dims` is {}",
                    other.map_or("missing", Argument::kind)
                )))
            }
        };
        // A 0-d tensor's dimension 0 (or −1) holds its one entry: nothing to reverse.
        let mut axes = Vec::with_capacity(dims.len());
        for &d in &dims {
            if let Dim::Axis(a) = Dim::wrap(d, x.rank()).map_err(arg_error)? {
                axes.push(a);
            }
        }
        let y = self.flipped(&x, &axes, scope)?;
        self.bind_tensor(node, 0, y)
    }

    /// `x` reversed along each of `axes` (full-tensor axes, none the batch): one Slice
    /// with step −1.
    pub(super) fn flipped(
        &mut self,
        x: &Tensor,
        axes: &[usize],
        scope: &str,
    ) -> Result<Tensor, OnnxError> {
        let mut axes: Vec<i64> = axes
            .iter()
            .map(|&axis| x.sample_axis(axis, "flip").map(|_| axis as i64))
            .collect::<Result<_, _>>()?;
        axes.sort_unstable();
        axes.dedup();
        if axes.is_empty() {
            return Ok(x.clone());
        }
        if self.g.opset().version() < 10 {
            return Err(arg_error(
                "flip needs a Slice with a negative step, which opset 10 introduced; export at opset 11".into(),
            ));
        }
        let n = axes.len();
        let starts = self
            .g
            .constant_i64(&format!("{scope}.starts"), &vec![-1; n]);
        // One past the front, read backwards: the lowest i64 (Slice clamps it to −1).
        let ends = self
            .g
            .constant_i64(&format!("{scope}.ends"), &vec![i64::MIN; n]);
        let onnx_axes = self.g.constant_i64(&format!("{scope}.axes"), &axes);
        let steps = self.g.constant_i64(&format!("{scope}.steps"), &vec![-1; n]);
        let inputs = [
            x.value().name(),
            starts.name(),
            ends.name(),
            onnx_axes.name(),
            steps.name(),
        ]
        .map(str::to_owned)
        .to_vec();
        let shape = x.value().shape().to_vec();
        let value = self
            .g
            .node("Slice", scope, inputs, vec![], vec![shape])
            .swap_remove(0);
        x.with_value(value)
    }

    /// `flatten(start_dim, end_dim)`: the dimensions from `start_dim` to `end_dim` merged
    /// into one (the batch's factor grows when it is among them).
    pub(super) fn flatten(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let input = args.tensor("self").or_shape()?;
        let x = self.tensor(input)?;
        let sizes = x.sizes();
        let rank = x.rank();
        if rank == 0 {
            // torch flattens a 0-d tensor to one entry.
            return self.view_to(node, input, vec![Size::fixed(1)], scope);
        }
        // `ravel` has neither dimension: it flattens them all.
        let start = tensor::axis(args.int_or("start_dim", 0).or_shape()?, rank)?;
        let end = tensor::axis(args.int_or("end_dim", -1).or_shape()?, rank)?;
        if start > end {
            return Err(arg_error(format!(
                "flatten from dimension {start} to {end}: the start is after the end"
            )));
        }
        let merged = sizes[start..=end].iter().fold(Size::fixed(1), |m, s| Size {
            count: m.count * s.count,
            batch: m.batch || s.batch,
        });
        let target = sizes[..start]
            .iter()
            .copied()
            .chain(std::iter::once(merged))
            .chain(sizes[end + 1..].iter().copied())
            .collect();
        self.view_to(node, input, target, scope)
    }

    /// One Reshape of `input` to `target`, the sizes the op gives by its own rule rather
    /// than read off torch's record: at a traced batch the record cannot tell the batch
    /// from another dimension of the same size (`unsqueeze(0)` at batch 1 records `[1, 1,
    /// …]`). At a traced batch the result must keep the batch alone first; the result is
    /// then checked against torch's record like every other.
    pub(super) fn view_to(
        &mut self,
        node: &Node,
        input: &str,
        target: Vec<Size>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let first = target.first().copied();
        if matches!(self.batch, BatchDim::Traced(_)) && first != Some(Size::batch(1)) {
            return Err(arg_error(format!(
                "its result {} does not keep {} alone first; declare the batch dynamic when exporting (`dynamic_shapes` with `Dim(\"batch\")`) to move or fold it",
                tensor::show(&target),
                self.batch
            )));
        }
        let x = self.tensor(input)?;
        let y = x.reshaped(&mut self.g, scope, &target)?;
        self.bind_tensor(node, 0, y)
    }

    /// `clone`, `contiguous`, `alias`, `detach`: the input itself.
    pub(super) fn pass_through(&mut self, node: &Node, args: &Args<'_>) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        self.bind_tensor(node, 0, x)
    }

    /// A dropout whose result needs no random mask ([`decompose::dropout`]): the input
    /// itself, or the input times 0 with probability 1 in training mode.
    pub(super) fn dropout(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        // aten names the in-place form's tensor `self`, the other's `input`.
        let tensor = if args.get("input").is_some() {
            "input"
        } else {
            "self"
        };
        let rule = decompose::dropout(node).map_err(arg_error)?;
        let x = self.tensor(args.tensor(tensor).or_shape()?)?;
        let y = match rule {
            decompose::Dropout::Identity => x,
            decompose::Dropout::Zeroed => {
                let zero = self.g.constant_scalar(&format!("{scope}.zero"), 0.0);
                x.with_constant(&mut self.g, scope, "Mul", &zero, false)?
            }
        };
        self.bind_tensor(node, 0, y)
    }

    /// `x[:, a:b]`: a slice of a dimension other than the batch (Python's clamping of
    /// negative and out-of-range bounds), or nothing when it keeps the whole dimension. The
    /// batch dimension can only be kept whole; a step above 1 needs the batch first.
    pub(super) fn slice(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let input = args.tensor("self").or_shape()?;
        if self.is_empty_slice(input) {
            // A slice of an empty slice holds no element either (Qwen3-VL's and
            // DeepSeek's rotary `q[:, :, :0, :]`, whose trace slices every dimension).
            return self.bind_empty(node);
        }
        let x = self.tensor(input)?;
        let dim = tensor::axis(args.int("dim").or_shape()?, x.rank())?;
        let start = args.optional_int("start").or_shape()?.unwrap_or(0);
        let step = args.int("step").or_shape()?;
        let end = match self.batch_bound(args, "end") {
            Some(k) => return self.slice_to_batch_multiple(node, x, dim, (start, step), k),
            None => args.optional_int("end").or_shape()?.unwrap_or(i64::MAX),
        };
        if Some(dim) == x.batch_axis() && start == 0 && end == i64::MAX && step == 1 {
            return self.bind_tensor(node, 0, x);
        }
        let axis = x.sample_axis(dim, "slice")?;
        let step = u64::try_from(step)
            .ok()
            .filter(|&s| s > 0)
            .ok_or_else(|| arg_error(format!("slicing with step {step}")))?;
        let size = x.value().shape()[axis];
        let clamp = |i: i64| -> u64 {
            let i = if i < 0 {
                i.saturating_add(size as i64)
            } else {
                i
            };
            i.clamp(0, size as i64) as u64
        };
        let (from, to) = (clamp(start), clamp(end));
        if (from, to, step) == (0, size, 1) {
            return self.bind_tensor(node, 0, x);
        }
        if to <= from {
            return self.bind_empty(node);
        }
        if step == 1 {
            let y = x.sliced(&mut self.g, scope, "slice", dim, from..to)?;
            return self.bind_tensor(node, 0, y);
        }
        let y = match x.placement() {
            Placement::Static => {
                let lifted = self.lift(&x, scope)?;
                let y = self.strided_slice(scope, &lifted, axis, from..to, step)?;
                self.unlift(y, scope)?
            }
            Placement::Batch { factor, .. } => {
                let rows = self.batch_first(&x)?;
                let y = self.strided_slice(scope, &rows, axis, from..to, step)?;
                Tensor::rows(y, factor)
            }
        };
        self.bind_tensor(node, 0, y)
    }

    /// The multiple of the batch a symbolic-int argument `name` is (`x.shape[0]`, or
    /// `batch * frames`), if it is one.
    fn batch_bound(&self, args: &Args<'_>, name: &str) -> Option<u64> {
        match args.get(name) {
            Some(Argument::SymInt(SymInt::Name(value))) => self.batch_times(value),
            _ => None,
        }
    }

    /// `x[start:k·N]` along `dim` (`embeddings[:batch_size]`): the whole dimension when it
    /// holds the batch `k` times over and the slice starts at 0 with step 1; anything else
    /// cut at a multiple of the batch takes rows of one sample's neighbours, so it mixes
    /// samples and is refused.
    fn slice_to_batch_multiple(
        &mut self,
        node: &Node,
        x: Tensor,
        dim: usize,
        (start, step): (i64, i64),
        k: u64,
    ) -> Result<(), OnnxError> {
        let whole = Some(dim) == x.batch_axis() && x.factor() == Some(k);
        if whole && start == 0 && step == 1 {
            return self.bind_tensor(node, 0, x);
        }
        let holds = match (x.batch_axis(), x.factor()) {
            (Some(axis), Some(factor)) if axis == dim => format!("the batch ×{factor}"),
            _ => "no batch".to_owned(),
        };
        Err(arg_error(format!(
            "a slice of dimension {dim} ({holds}) ending at the batch size ×{k} takes rows of other samples: it mixes samples; only ops that treat each sample alike are exported"
        )))
    }

    /// `t`'s value when its batch is on the first dimension (any factor), or in a static
    /// export its value seen without its first dimension ([`Tensor::as_rows`]); else an
    /// error.
    pub(super) fn batch_first(&self, t: &Tensor) -> Result<crate::graph::Value, OnnxError> {
        match t.as_rows() {
            Some((_, value)) => Ok(value),
            None => Err(arg_error(format!(
                "its input has sizes {}{}; this op is exported only with the batch first",
                tensor::show(&t.sizes()),
                t.batch_axis().map_or(String::new(), |a| format!(
                    " with the batch on dimension {a}"
                ))
            ))),
        }
    }

    /// `permute` / `transpose`: one Transpose, which may move the batch. A `transpose` of a
    /// 0-d tensor (of its dimension 0 with itself, as torch wraps it) is the tensor.
    pub(super) fn permute(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let rank = x.rank();
        let order: Vec<usize> = match args.get("dims") {
            Some(Argument::Ints(dims)) => dims
                .iter()
                .map(|&d| tensor::axis(d, rank))
                .collect::<Result<_, _>>()?,
            Some(other) => return Err(arg_error(format!("argument `dims` is {}", other.kind()))),
            None => {
                let a = tensor::dim(args.int_or("dim0", 0).or_shape()?, rank)?;
                let b = tensor::dim(args.int_or("dim1", 0).or_shape()?, rank)?;
                let mut order: Vec<usize> = (0..rank).collect();
                if let (Dim::Axis(a), Dim::Axis(b)) = (a, b) {
                    order.swap(a, b);
                }
                order
            }
        };
        let y = x.transposed(&mut self.g, scope, &order)?;
        self.bind_tensor(node, 0, y)
    }
}
