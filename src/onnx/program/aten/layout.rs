//! Ops that only move data: cat, flatten, view/reshape, slice and permute. A view or
//! permute that moves the batch from the first dimension goes to [`super::shape_ops`].

use crate::onnx::graph::Value;
use crate::onnx::OnnxError;
use crate::torch::pt2::schema::{Argument, Node, SymInt};

use super::super::args::Args;
use super::super::batch::BatchDim;
use super::super::lower::Lowering;
use super::{arg_error, per_sample_axis, reject_extra, OrShape};

impl<'p> Lowering<'p, '_> {
    pub(super) fn cat(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["tensors", "dim"])?;
        let names = args.tensors("tensors").or_shape()?;
        let like = names
            .iter()
            .find(|t| self.expanded(t).is_none())
            .map(|t| self.activation(t))
            .transpose()?;
        let mut xs = Vec::with_capacity(names.len());
        for t in names {
            xs.push(match (self.expanded(t), &like) {
                (Some((fqn, shape)), Some(like)) => {
                    self.expanded_like(&fqn, &shape, like, scope)?
                }
                _ => self.activation(t)?,
            });
        }
        let rank = xs.first().map_or(1, |x| x.shape().len() + 1);
        let axis = per_sample_axis(args.int_or("dim", 0).or_shape()?, rank)?;
        let refs: Vec<&Value> = xs.iter().collect();
        let y = self.g.concat(scope, &refs, axis)?;
        self.bind(node, 0, y)
    }

    pub(super) fn flatten(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "start_dim", "end_dim"])?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let rank = x.shape().len() + 1;
        let start = per_sample_axis(args.int_or("start_dim", 0).or_shape()?, rank)?;
        let end = per_sample_axis(args.int_or("end_dim", -1).or_shape()?, rank)?;
        let y = if start == 0 && end + 1 == x.shape().len() {
            self.g.flatten(scope, &x)
        } else {
            let shape = self.recorded_shape(self.output_name(node, 0)?)?;
            self.reshaped(scope, &x, &shape)?
        };
        self.bind(node, 0, y)
    }

    /// `view`/`reshape` of a constant folds; of an activation, see [`Self::reshape`].
    pub(super) fn view(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        if self.reads_constant(args) {
            self.fold_relabel(node, args)
        } else {
            self.reshape(node, args, scope)
        }
    }

    /// `clone`, `contiguous`, `alias`, `detach`: the input itself.
    pub(super) fn pass_through(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        if self.reads_constant(args) {
            return self.fold_relabel(node, args);
        }
        reject_extra(args, &["self", "memory_format"])?;
        let x = self.laid(args.tensor("self").or_shape()?)?;
        self.bind_laid(node, 0, x, scope)
    }

    /// `dropout` in eval mode: the input itself.
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
        reject_extra(args, &[tensor, "p", "train"])?;
        if args.bool_or("train", false).or_shape()? {
            return Err(arg_error(
                "dropout is in training mode; export the model after `model.eval()`".into(),
            ));
        }
        let x = self.laid(args.tensor(tensor).or_shape()?)?;
        self.bind_laid(node, 0, x, scope)
    }

    fn reads_constant(&self, args: &Args<'_>) -> bool {
        args.tensor("self").is_ok_and(|t| self.is_constant(t))
    }

    /// `view`/`reshape`: the size list must lead with the batch (a symbol equal to it, `-1`,
    /// or, in a program traced at a fixed batch, that literal size, which is rewritten to
    /// follow the batch); it becomes a Reshape to `[0, per-sample sizes…]`.
    pub(super) fn reshape(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "size", "shape"])?;
        let input = args.tensor("self").or_shape()?;
        if self.is_laid(input) {
            return self.laid_view(node, input, scope);
        }
        let x = self.activation(input)?;
        let sizes = args.get("size").or(args.get("shape"));
        let leads_with_batch = match sizes {
            Some(Argument::Ints(v)) => v
                .first()
                .is_some_and(|&n| n == -1 || self.batch.is(&SymInt::Int(n))),
            Some(Argument::SymInts(v)) => match v.first() {
                Some(SymInt::Name(name)) => self.is_batch_symbol(name),
                Some(SymInt::Int(n)) => *n == -1 || self.batch.is(&SymInt::Int(*n)),
                Some(expr) => self.batch.is(expr),
                None => false,
            },
            _ => false,
        };
        if !leads_with_batch && matches!(self.batch, BatchDim::Symbol(_)) {
            return self.laid_view(node, input, scope);
        }
        if !leads_with_batch {
            return Err(arg_error(format!(
                "its size list does not start with the batch ({}), so it folds the batch into other dimensions; reshape as x.view(x.size(0), …) or x.flatten(1)",
                self.batch
            )));
        }
        let shape = self.recorded_shape(self.output_name(node, 0)?)?;
        let y = self.reshaped(scope, &x, &shape)?;
        self.bind(node, 0, y)
    }

    /// `x` reshaped to per-sample `shape`, or `x` itself when it already has it.
    fn reshaped(&mut self, scope: &str, x: &Value, shape: &[u64]) -> Result<Value, OnnxError> {
        if x.shape() == shape {
            Ok(x.clone())
        } else {
            self.g.reshape(scope, x, shape)
        }
    }

    /// `x[:, a:b]`: a step-1 slice of a per-sample dimension (Python's clamping of
    /// negative and out-of-range bounds), or nothing when it keeps the whole dimension. The
    /// batch dimension can only be kept whole.
    pub(super) fn slice(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "dim", "start", "end", "step"])?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let rank = x.shape().len() + 1;
        let dim = args.int_or("dim", 0).or_shape()?;
        let start = args.optional_int("start").or_shape()?.unwrap_or(0);
        let end = args.optional_int("end").or_shape()?.unwrap_or(i64::MAX);
        let step = args.int_or("step", 1).or_shape()?;
        let axis = match per_sample_axis(dim, rank) {
            Ok(axis) => axis,
            Err(_)
                if (dim == 0 || dim == -(rank as i64))
                    && start == 0
                    && end == i64::MAX
                    && step == 1 =>
            {
                return self.bind(node, 0, x);
            }
            Err(e) => return Err(e),
        };
        let step = u64::try_from(step)
            .ok()
            .filter(|&s| s > 0)
            .ok_or_else(|| arg_error(format!("slicing with step {step}")))?;
        let size = x.shape()[axis];
        let clamp = |i: i64| -> u64 {
            let i = if i < 0 {
                i.saturating_add(size as i64)
            } else {
                i
            };
            i.clamp(0, size as i64) as u64
        };
        let (from, to) = (clamp(start), clamp(end));
        let y = if (from, to, step) == (0, size, 1) {
            x
        } else if step > 1 && to > from {
            self.strided_slice(scope, &x, axis, from..to, step)?
        } else {
            self.g.slice(scope, &x, axis, from..to)?
        };
        self.bind(node, 0, y)
    }

    /// `permute` / `transpose` of per-sample axes; the batch must stay first.
    pub(super) fn permute(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "dims", "dim0", "dim1"])?;
        let input = args.tensor("self").or_shape()?;
        let rank = self.laid(input)?.rank();
        let full: Vec<i64> = match args.get("dims") {
            Some(Argument::Ints(dims)) => dims.clone(),
            Some(other) => return Err(arg_error(format!("argument `dims` is {}", other.kind()))),
            None => {
                let mut order: Vec<i64> = (0..rank as i64).collect();
                let norm = |d: i64| if d < 0 { d + rank as i64 } else { d };
                let (a, b) = (
                    norm(args.int_or("dim0", 0).or_shape()?),
                    norm(args.int_or("dim1", 0).or_shape()?),
                );
                let in_range = |d: i64| (0..rank as i64).contains(&d);
                if !in_range(a) || !in_range(b) {
                    return Err(arg_error(format!(
                        "transpose of dimensions {a}, {b} of a rank-{rank} tensor"
                    )));
                }
                order.swap(a as usize, b as usize);
                order
            }
        };
        let Some((&first, rest)) = full.split_first() else {
            return Err(arg_error("permute of no dimensions".into()));
        };
        if self.is_laid(input) || (first != 0 && first != -(rank as i64)) {
            return self.laid_permute(node, input, &full, scope);
        }
        let x = self.activation(input)?;
        let perm = rest
            .iter()
            .map(|&d| per_sample_axis(d, rank))
            .collect::<Result<Vec<_>, _>>()?;
        let y = if perm.iter().enumerate().all(|(i, &p)| i == p) {
            x
        } else {
            self.g.transpose(scope, &x, &perm)?
        };
        self.bind(node, 0, y)
    }
}
