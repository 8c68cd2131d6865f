//! Ops that pick elements along a per-sample axis and return where they were: `argmax`,
//! `argmin`, `max.dim`/`min.dim` (values and int64 indices), `topk` and `kthvalue` (ONNX
//! `TopK` with `K` as a constant input, opset 11 for `largest`/`sorted`, in torch's sort
//! order), `sort` (its values by `TopK`, its indices as `argsort`'s) and `argsort` (ranks
//! by comparing every pair). A 0-d tensor has dimension 0 (and −1), as torch wraps it.
//! Along the batch they are refused, like every op that mixes samples.

use crate::elem::ElemType;
use crate::graph::{Attr, GraphBuilder, Value, Weight};
use crate::OnnxError;
use ckpt_aten::program::{Argument, Node};

use super::super::emit;

use super::super::lower::Lowering;
use super::order::float32;
use super::{arg_error, row_axis, OrShape};
use ckpt_aten::args::Args;

/// The per-sample axis of argument `dim` (required: `None` means the whole tensor, the
/// batch included, unless the export is static).
fn axis_of(args: &Args<'_>, x: &Value, lifted: bool) -> Result<usize, OnnxError> {
    let dim = args.optional_int("dim").or_shape()?.ok_or_else(|| {
        arg_error(
            "it works over the whole tensor, the batch included; give `dim` so that each sample is treated alone".into(),
        )
    })?;
    row_axis(dim, x, lifted)
}

/// `x`'s shape with `axis` set to `size`, or dropped when `size` is `None`.
fn with_axis(x: &Value, axis: usize, size: Option<u64>) -> Vec<u64> {
    let mut shape = x.shape().to_vec();
    match size {
        Some(size) => shape[axis] = size,
        None => {
            shape.remove(axis);
        }
    }
    shape
}

/// A `TopK` node's settings: `k` (and the constant input holding it), the per-sample axis,
/// and its `largest` and `sorted` attributes.
#[derive(Clone, Copy)]
pub(super) struct Top<'w> {
    pub(super) count: &'w Weight,
    pub(super) k: u64,
    pub(super) axis: usize,
    pub(super) largest: bool,
    pub(super) sorted: bool,
}

/// Refuses bool tensors, which ONNX's ArgMax/ReduceMax/TopK do not take.
fn numeric(x: &Value, op: &str) -> Result<(), OnnxError> {
    if x.elem() == ElemType::Bool {
        return Err(arg_error(format!(
            "{op} of a bool tensor is not exported; convert it with `.int()` first"
        )));
    }
    Ok(())
}

impl<'p> Lowering<'p, '_> {
    /// The int64 indices that sort float32 `x` along per-sample `axis` stably, without
    /// TopK (whose order of ties and of NaN ONNX leaves open): each entry's rank is the
    /// count of the entries sorting before it (smaller, or NaN-free against a NaN, or equal
    /// and earlier; greater descending, NaN first), a comparison of every pair along the
    /// axis, and the index at rank `r` the sum of `i · [rankᵢ = r]`. Ties keep their input
    /// order, as torch's stable sort does (torch leaves the order of ties open without it).
    fn stable_order(
        &mut self,
        scope: &str,
        x: &Value,
        axis: usize,
        descending: bool,
    ) -> Result<Value, OnnxError> {
        let last = x.shape().len() - 1;
        let mut swap: Vec<usize> = (0..=last).collect();
        swap.swap(axis, last);
        let v = if axis == last {
            x.clone()
        } else {
            self.g.transpose(scope, x, &swap)?
        };
        let shape = v.shape().to_vec();
        let n = shape[last];
        let g = &mut self.g;
        // `a` indexes the entry ranked (i), `b` the one compared with it (j).
        let mut column = shape.clone();
        column.push(1);
        let mut row = shape.clone();
        row.insert(shape.len() - 1, 1);
        let mut pair = shape.clone();
        pair.push(n);
        let a = g.reshape(scope, &v, &column)?;
        let b = g.reshape(scope, &v, &row)?;
        let bool_ = ElemType::Bool;
        let put = |g: &mut GraphBuilder, op: &'static str, inputs: &[&str], shape: &[u64], elem| {
            emit::single(g.typed_node(
                op,
                scope,
                inputs.iter().map(|&n| n.to_owned()).collect(),
                vec![],
                vec![(shape.to_vec(), elem)],
            ))
        };
        let nan_a = put(g, "IsNaN", &[a.name()], &column, bool_);
        let nan_b = put(g, "IsNaN", &[b.name()], &row, bool_);
        let (ordered, nan_side, number_side) = if descending {
            (
                put(g, "Greater", &[b.name(), a.name()], &pair, bool_),
                &nan_b,
                &nan_a,
            )
        } else {
            (
                put(g, "Less", &[b.name(), a.name()], &pair, bool_),
                &nan_a,
                &nan_b,
            )
        };
        let number = put(g, "Not", &[number_side.name()], number_side.shape(), bool_);
        let past_nan = put(g, "And", &[nan_side.name(), number.name()], &pair, bool_);
        let both_nan = put(g, "And", &[nan_a.name(), nan_b.name()], &pair, bool_);
        let same = put(g, "Equal", &[b.name(), a.name()], &pair, bool_);
        let tied = put(g, "Or", &[same.name(), both_nan.name()], &pair, bool_);
        let earlier: Vec<f64> = (0..n)
            .flat_map(|i| (0..n).map(move |j| f64::from(u8::from(j < i))))
            .collect();
        let earlier = g.typed_constant(&format!("{scope}.earlier"), vec![n, n], &earlier, bool_)?;
        let tie_before = put(g, "And", &[tied.name(), earlier.name()], &pair, bool_);
        let sorted_before = put(g, "Or", &[ordered.name(), past_nan.name()], &pair, bool_);
        let before = put(
            g,
            "Or",
            &[sorted_before.name(), tie_before.name()],
            &pair,
            bool_,
        );
        let before = emit::cast(g, scope, &before, ElemType::Float32);
        let inner = shape.len();
        let rank = g.reduce("ReduceSum", scope, &before, &[inner], true)?;
        let ranks: Vec<f64> = (0..n).map(|r| r as f64).collect();
        let ranks = g.typed_constant(
            &format!("{scope}.ranks"),
            vec![n],
            &ranks,
            ElemType::Float32,
        )?;
        let at_rank = put(g, "Equal", &[rank.name(), ranks.name()], &pair, bool_);
        let at_rank = emit::cast(g, scope, &at_rank, ElemType::Float32);
        let places: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let places = g.typed_constant(
            &format!("{scope}.places"),
            vec![n, 1],
            &places,
            ElemType::Float32,
        )?;
        let picked = put(
            g,
            "Mul",
            &[at_rank.name(), places.name()],
            &pair,
            ElemType::Float32,
        );
        let index = g.reduce("ReduceSum", scope, &picked, &[inner - 1], false)?;
        let index = emit::cast(g, scope, &index, ElemType::Int64);
        if axis == last {
            Ok(index)
        } else {
            self.g.transpose(scope, &index, &swap)
        }
    }

    /// `argsort(self, dim, descending)` and `argsort.stable` of a float32 activation along
    /// a per-sample axis: [`Lowering::stable_order`].
    pub(super) fn argsort(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.lifted_any_activation(args.tensor("self").or_shape()?)?;
        // Along the batch it mixes samples, whatever the values' type.
        let axis = self.dim_axis(args, &x)?;
        float32(&x, "argsort")?;
        let index = self.stable_order(scope, &x, axis, args.bool("descending").or_shape()?)?;
        self.bind(node, 0, index)
    }

    /// `sort(self, dim, descending)` and `sort.stable` of a float32 activation along a
    /// per-sample axis: the values by `TopK` over the whole axis in torch's sort order
    /// ([`Lowering::in_sort_order`]: NaN last ascending, first descending), the indices by
    /// [`Lowering::stable_order`] (ties in input order, which torch's stable sort keeps and
    /// its default sort leaves open).
    pub(super) fn sort(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.lifted_any_activation(args.tensor("self").or_shape()?)?;
        // Along the batch it mixes samples, whatever the values' type.
        let axis = self.dim_axis(args, &x)?;
        float32(&x, "sort")?;
        let descending = args.bool("descending").or_shape()?;
        let n = x.shape()[axis];
        let count = self.g.constant_i64(&format!("{scope}.k"), &[n as i64]);
        let top = Top {
            count: &count,
            k: n,
            axis,
            largest: descending,
            sorted: true,
        };
        let (values, _) = self.in_sort_order(scope, &x, &top)?;
        self.bind(node, 0, values)?;
        if self.output_name(node, 1).is_ok() {
            let index = self.stable_order(scope, &x, axis, descending)?;
            self.bind(node, 1, index)?;
        }
        Ok(())
    }

    /// `kthvalue(self, k, dim, keepdim)`: the `k`-th smallest value along a per-sample
    /// axis and its index, as torch's sort order ranks them (NaN above every number):
    /// entry `k − 1` of `TopK` (smallest first, `k` kept) in that order
    /// ([`Lowering::in_sort_order`]).
    pub(super) fn kthvalue(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.lifted_any_activation(args.tensor("self").or_shape()?)?;
        numeric(&x, "kthvalue")?;
        let axis = self.dim_axis(args, &x)?;
        let n = x.shape()[axis];
        let k = args.int("k").or_shape()?;
        let k = u64::try_from(k)
            .ok()
            .filter(|k| (1..=n).contains(k))
            .ok_or_else(|| {
                arg_error(format!(
                    "kthvalue's k = {k} is outside 1..={n}, the size of its dimension"
                ))
            })?;
        let keep = args.bool("keepdim").or_shape()?;
        let count = self.g.constant_i64(&format!("{scope}.k"), &[k as i64]);
        let top = Top {
            count: &count,
            k,
            axis,
            largest: false,
            sorted: true,
        };
        let (values, indices) = self.in_sort_order(scope, &x, &top)?;
        for (output, sorted) in [values, indices].into_iter().enumerate() {
            if output == 1 && self.output_name(node, 1).is_err() {
                break;
            }
            let kth = self.g.slice(scope, &sorted, axis, k - 1..k)?;
            let kth = if keep {
                kth
            } else {
                let shape = with_axis(&kth, axis, None);
                self.g.reshape(scope, &kth, &shape)?
            };
            self.bind(node, output, kth)?;
        }
        Ok(())
    }

    /// `cummax`/`cummin(self, dim)` of a float32 activation along a per-sample axis, as
    /// torch's `cummax_cummin_helper` scans it: entry `i` takes the latest `j ≤ i` whose
    /// value is at least (`cummax`; at most, `cummin`) every one before it, and once a
    /// NaN is met only a later NaN replaces it. So the index is the last `j ≤ i` holding
    /// NaN when one is among `0…i`, else the last holding the extreme of `0…i`; each pair
    /// `(i, j)` is compared, and the value is read at that index (sign of zero included).
    pub(super) fn running_extreme(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        largest: bool,
    ) -> Result<(), OnnxError> {
        let op = if largest { "cummax" } else { "cummin" };
        let x = self.lifted_any_activation(args.tensor("self").or_shape()?)?;
        // Along the batch it mixes samples, whatever the values' type.
        let axis = self.dim_axis(args, &x)?;
        float32(&x, op)?;
        let last = x.shape().len() - 1;
        let mut swap: Vec<usize> = (0..=last).collect();
        swap.swap(axis, last);
        let v = if axis == last {
            x.clone()
        } else {
            self.g.transpose(scope, &x, &swap)?
        };
        let shape = v.shape().to_vec();
        let n = shape[last];
        let g = &mut self.g;
        // `i` (the entry computed) indexes axis `last`, `j` (a candidate) the one after.
        let mut row = shape.clone();
        row.insert(last, 1);
        let mut pair = shape.clone();
        pair.push(n);
        let (bool_, f32_) = (ElemType::Bool, ElemType::Float32);
        let b = g.reshape(scope, &v, &row)?;
        let nan_b = emit::typed(g, "IsNaN", scope, [b.name()], &row, bool_);
        let up_to: Vec<f64> = (0..n)
            .flat_map(|i| (0..n).map(move |j| f64::from(u8::from(j <= i))))
            .collect();
        let up_to = g.typed_constant(&format!("{scope}.up_to"), vec![n, n], &up_to, bool_)?;
        let beyond = if largest {
            f32::NEG_INFINITY
        } else {
            f32::INFINITY
        };
        let beyond = g.constant_scalar(&format!("{scope}.beyond"), beyond);
        // The candidates before NaN is met: NaN and the entries after `i` can never win.
        let number = emit::typed(
            g,
            "Where",
            scope,
            [nan_b.name(), beyond.name(), b.name()],
            &row,
            f32_,
        );
        let held = emit::typed(
            g,
            "Where",
            scope,
            [up_to.name(), number.name(), beyond.name()],
            &pair,
            f32_,
        );
        let reduce = if largest { "ReduceMax" } else { "ReduceMin" };
        let extreme = g.reduce(reduce, scope, &held, &[last + 1], true)?;
        let is_extreme = emit::typed(g, "Equal", scope, [b.name(), extreme.name()], &pair, bool_);
        let nan_seen = emit::typed(g, "And", scope, [up_to.name(), nan_b.name()], &pair, bool_);
        let nan_seen = emit::cast(g, scope, &nan_seen, f32_);
        let nan_seen = g.reduce("ReduceMax", scope, &nan_seen, &[last + 1], true)?;
        let nan_seen = emit::cast(g, scope, &nan_seen, bool_);
        // NaN once one is met, else the extreme: (seen ∧ NaN) ∨ (¬seen ∧ extreme).
        let nan_wins = emit::typed(
            g,
            "And",
            scope,
            [nan_seen.name(), nan_b.name()],
            &pair,
            bool_,
        );
        let unseen = emit::typed(g, "Not", scope, [nan_seen.name()], nan_seen.shape(), bool_);
        let number_wins = emit::typed(
            g,
            "And",
            scope,
            [unseen.name(), is_extreme.name()],
            &pair,
            bool_,
        );
        let wins = emit::typed(
            g,
            "Or",
            scope,
            [nan_wins.name(), number_wins.name()],
            &pair,
            bool_,
        );
        let wins = emit::typed(g, "And", scope, [wins.name(), up_to.name()], &pair, bool_);
        let wins = emit::cast(g, scope, &wins, f32_);
        let places: Vec<f64> = (0..n).map(|j| j as f64).collect();
        let places = g.typed_constant(&format!("{scope}.places"), vec![n], &places, f32_)?;
        let latest = emit::typed(g, "Mul", scope, [wins.name(), places.name()], &pair, f32_);
        let index = g.reduce("ReduceMax", scope, &latest, &[last + 1], true)?;
        // The value at that index: the one match summed with −0.0 everywhere else.
        let at = emit::typed(
            g,
            "Equal",
            scope,
            [places.name(), index.name()],
            &pair,
            bool_,
        );
        let zero = g.constant_scalar(&format!("{scope}.zero"), -0.0);
        let picked = emit::typed(
            g,
            "Where",
            scope,
            [at.name(), b.name(), zero.name()],
            &pair,
            f32_,
        );
        let values = g.reduce("ReduceSum", scope, &picked, &[last + 1], false)?;
        let index = g.reshape(scope, &index, &shape)?;
        let index = emit::cast(g, scope, &index, ElemType::Int64);
        for (output, y) in [values, index].into_iter().enumerate() {
            if output == 1 && self.output_name(node, 1).is_err() {
                break;
            }
            let y = if axis == last {
                y
            } else {
                self.g.transpose(scope, &y, &swap)?
            };
            self.bind(node, output, y)?;
        }
        Ok(())
    }

    /// `ArgMax`/`ArgMin` (`onnx`) of `x` along per-sample `axis`: int64 indices. Where a
    /// float `x` holds a NaN along `axis` the index is the first NaN's, as in torch (which
    /// ranks NaN above every number; onnxruntime skips it): the same op over the NaN flags
    /// (negated for `ArgMin`, so that both indices have the device's type for that op)
    /// picked by `Where`.
    fn arg_extreme(
        &mut self,
        onnx: &'static str,
        scope: &str,
        x: &Value,
        axis: usize,
        keep: bool,
    ) -> Result<Value, OnnxError> {
        let plain = self.arg_index(onnx, scope, x, axis, keep)?;
        if x.elem() != ElemType::Float32 {
            return Ok(plain);
        }
        let flags = self.g.nan_flags(scope, x);
        let key = if onnx == "ArgMin" {
            self.g.unary("Neg", scope, &flags, vec![])
        } else {
            flags
        };
        let first = self.arg_index(onnx, scope, &key, axis, keep)?;
        let held = self.g.any_nan(scope, x, &[axis], keep)?;
        let held = self.g.flags_set(scope, &held);
        self.g.select(scope, &held, &first, &plain)
    }

    /// `ArgMax`/`ArgMin` (`onnx`) alone. ATC's parser puts a kept axis back at position 1
    /// whatever `axis` was, so `keepdims=1` is written only there; elsewhere the axis is
    /// dropped and restored by a `Reshape`.
    pub(super) fn arg_index(
        &mut self,
        onnx: &'static str,
        scope: &str,
        x: &Value,
        axis: usize,
        keep: bool,
    ) -> Result<Value, OnnxError> {
        let keep_here = keep && axis == 0;
        let attrs = vec![
            ("axis", Attr::Int(axis as i64 + 1)),
            ("keepdims", Attr::Int(i64::from(keep_here))),
        ];
        let mut out = self.g.typed_node(
            onnx,
            scope,
            vec![x.name().to_owned()],
            attrs,
            vec![(with_axis(x, axis, keep_here.then_some(1)), ElemType::Int64)],
        );
        let indices = out.swap_remove(0);
        if keep && !keep_here {
            self.g
                .reshape(scope, &indices, &with_axis(x, axis, Some(1)))
        } else {
            Ok(indices)
        }
    }

    /// `argmax`/`argmin(self, dim, keepdim)` (`onnx`: `ArgMax`/`ArgMin`).
    pub(super) fn argmax(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        onnx: &'static str,
    ) -> Result<(), OnnxError> {
        let x = self.lifted_any_activation(args.tensor("self").or_shape()?)?;
        numeric(&x, onnx)?;
        let keep = args.bool("keepdim").or_shape()?;
        if args.optional_int("dim").or_shape()?.is_none() && self.is_lifted() {
            // The index into the flattened tensor; kept dimensions are all of size 1.
            let flat = self
                .g
                .reshape(scope, &x, &[x.shape().iter().product::<u64>()])?;
            let y = self.arg_extreme(onnx, scope, &flat, 0, false)?;
            let kept = if keep {
                vec![1; x.shape().len()]
            } else {
                vec![]
            };
            let y = self.g.reshape(scope, &y, &kept)?;
            return self.bind(node, 0, y);
        }
        let axis = axis_of(args, &x, self.is_lifted())?;
        let y = self.arg_extreme(onnx, scope, &x, axis, keep)?;
        self.bind(node, 0, y)
    }

    /// `max.dim`/`min.dim(self, dim, keepdim)`: the values (`ReduceMax`/`ReduceMin`,
    /// `reduce`) and their int64 indices (`ArgMax`/`ArgMin`, `arg`).
    pub(super) fn extreme_along(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        [reduce, arg]: [&'static str; 2],
    ) -> Result<(), OnnxError> {
        let x = self.lifted_any_activation(args.tensor("self").or_shape()?)?;
        numeric(&x, reduce)?;
        let axis = self.dim_axis(args, &x)?;
        let keep = args.bool("keepdim").or_shape()?;
        let values = self.g.reduce(reduce, scope, &x, &[axis], keep)?;
        self.bind(node, 0, values)?;
        if self.output_name(node, 1).is_ok() {
            let indices = self.arg_extreme(arg, scope, &x, axis, keep)?;
            self.bind(node, 1, indices)?;
        }
        Ok(())
    }

    /// `topk(self, k, dim, largest, sorted)`: `TopK` with `K` a constant input; values
    /// and int64 indices.
    pub(super) fn topk(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        if self.g.opset().version() < 11 {
            return Err(arg_error(
                "topk needs TopK's `largest` and `sorted` from opset 11; pass --opset 11".into(),
            ));
        }
        let x = self.lifted_any_activation(args.tensor("self").or_shape()?)?;
        numeric(&x, "TopK")?;
        let axis = self.dim_axis(args, &x)?;
        let k = match args.get("k") {
            Some(Argument::Int(k)) => u64::try_from(*k).ok(),
            _ => None,
        }
        .filter(|&k| k <= x.shape()[axis])
        .ok_or_else(|| {
            arg_error(format!(
                "topk's `k` must be a fixed count up to the size {} of dimension {}",
                x.shape()[axis],
                axis + 1
            ))
        })?;
        let largest = args.bool("largest").or_shape()?;
        let sorted = args.bool("sorted").or_shape()?;
        let count = self.g.constant_i64(&format!("{scope}.k"), &[k as i64]);
        let top = Top {
            count: &count,
            k,
            axis,
            largest,
            sorted,
        };
        let (values, indices) = self.in_sort_order(scope, &x, &top)?;
        self.bind(node, 0, values)?;
        if self.output_name(node, 1).is_ok() {
            self.bind(node, 1, indices)?;
        }
        Ok(())
    }

    /// `TopK` of `x` as `top` says, in torch's sort order: for float32, torch ranks NaN
    /// above every number, +inf included, largest or smallest. Each NaN is ranked as +inf,
    /// after a stable reorder of the entries (a whole-axis TopK of the NaN flags, which
    /// ONNX breaks ties in by the lower index) that puts the NaNs first for `largest` and
    /// last otherwise, so that among the +inf ties TopK's lower-index rule ranks NaN where
    /// torch does; the indices are mapped back through the reorder, and NaN put back where
    /// the same TopK over the NaN flags gives 1. An unsorted result is sorted, which torch
    /// allows.
    pub(super) fn in_sort_order(
        &mut self,
        scope: &str,
        x: &Value,
        top: &Top<'_>,
    ) -> Result<(Value, Value), OnnxError> {
        if x.elem() != ElemType::Float32 {
            return Ok(self.top_k(scope, x, top));
        }
        let top = Top {
            sorted: true,
            ..*top
        };
        let n = x.shape()[top.axis];
        let count = self
            .g
            .constant_i64(&format!("{scope}.entries"), &[n as i64]);
        let whole = Top {
            count: &count,
            k: n,
            ..top
        };
        let flags = self.g.nan_flags(scope, x);
        let (_, order) = self.top_k(scope, &flags, &whole);
        let moved = self.gather_along(scope, x, &order, top.axis);
        let moved_flags = self.g.nan_flags(scope, &moved);
        let ranked = self
            .g
            .fill_where(scope, &moved_flags, f32::INFINITY, &moved)?;
        let (values, picked) = self.top_k(scope, &ranked, &top);
        let indices = self.gather_along(scope, &order, &picked, top.axis);
        let (held, _) = self.top_k(scope, &flags, &top);
        Ok((self.g.nan_where(scope, &held, &values)?, indices))
    }

    /// `GatherElements(x, index)` along per-sample `axis`: `x`'s entries at `index`.
    fn gather_along(&mut self, scope: &str, x: &Value, index: &Value, axis: usize) -> Value {
        emit::single(self.g.typed_node(
            "GatherElements",
            scope,
            vec![x.name().to_owned(), index.name().to_owned()],
            vec![("axis", Attr::Int(axis as i64 + 1))],
            vec![(index.shape().to_vec(), x.elem())],
        ))
    }

    /// ONNX `TopK` of `x` as `top` says: values and int64 indices.
    pub(super) fn top_k(&mut self, scope: &str, x: &Value, top: &Top<'_>) -> (Value, Value) {
        let shape = with_axis(x, top.axis, Some(top.k));
        let attrs = vec![
            ("axis", Attr::Int(top.axis as i64 + 1)),
            ("largest", Attr::Int(i64::from(top.largest))),
            ("sorted", Attr::Int(i64::from(top.sorted))),
        ];
        let mut out = self.g.typed_node(
            "TopK",
            scope,
            vec![x.name().to_owned(), top.count.name().to_owned()],
            attrs,
            vec![(shape.clone(), x.elem()), (shape, ElemType::Int64)],
        );
        let indices = out.swap_remove(1);
        (out.swap_remove(0), indices)
    }
}
