//! Slicing and constant indexing along per-sample axes: `slice` with a step (ONNX Slice's
//! `steps`, opset 10+), `narrow`, and `index_select` by a constant index, written as Slices
//! of its runs of consecutive indices joined by Concat (no Gather, which ATC graphs with a
//! dynamic batch are better without).

use std::ops::Range;

use crate::graph::Value;
use crate::OnnxError;
use ckpt_aten::program::Node;

use super::super::lower::Lowering;
use super::{arg_error, row_axis, OrShape};
use ckpt_aten::args::Args;

/// Constant `indices` into an axis of `size` as runs of consecutive indices.
pub(super) fn runs(indices: &[i64], size: u64) -> Result<Vec<Range<u64>>, String> {
    let mut runs: Vec<Range<u64>> = Vec::new();
    for &v in indices {
        let i = u64::try_from(v)
            .ok()
            .filter(|&i| i < size)
            .ok_or_else(|| format!("index {v} is not one of the axis's {size} positions"))?;
        match runs.last_mut() {
            Some(run) if run.end == i => run.end += 1,
            _ => runs.push(i..i + 1),
        }
    }
    if runs.is_empty() {
        return Err("an empty index selects nothing".into());
    }
    Ok(runs)
}

/// Python's negative positions into an axis of `size` made positive (`-1` is the last);
/// those below `-size` stay negative, for [`runs`] to refuse as torch raises.
fn from_the_end(positions: &mut [i64], size: u64) {
    let size = size as i64;
    for p in positions.iter_mut().filter(|p| (-size..0).contains(*p)) {
        *p += size;
    }
}

/// What a negative constant index means to the op that reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Negative {
    /// `x[..., [-2]]` (`index.Tensor`): counted from the end of the axis, as Python's.
    FromTheEnd,
    /// `index_select`: torch raises "index out of range", so it is refused.
    Refused,
}

impl<'p> Lowering<'p, '_> {
    /// Elements `from, from + step, …` below `to` of per-sample `axis` (`step` > 1).
    pub(super) fn strided_slice(
        &mut self,
        scope: &str,
        x: &Value,
        axis: usize,
        range: Range<u64>,
        step: u64,
    ) -> Result<Value, OnnxError> {
        if self.g.opset().version() < 10 {
            return Err(arg_error(format!(
                "slicing with step {step} needs Slice's steps from opset 10; pass --opset 11"
            )));
        }
        let mut shape = x.shape().to_vec();
        shape[axis] = (range.end - range.start).div_ceil(step);
        let full_axis = axis as i64 + 1;
        let starts = self
            .g
            .constant_i64(&format!("{scope}.starts"), &[range.start as i64]);
        let ends = self
            .g
            .constant_i64(&format!("{scope}.ends"), &[range.end as i64]);
        let axes = self.g.constant_i64(&format!("{scope}.axes"), &[full_axis]);
        let steps = self
            .g
            .constant_i64(&format!("{scope}.steps"), &[step as i64]);
        let inputs = [
            x.name(),
            starts.name(),
            ends.name(),
            axes.name(),
            steps.name(),
        ]
        .map(str::to_owned)
        .to_vec();
        let mut out = self.g.node("Slice", scope, inputs, vec![], vec![shape]);
        Ok(out.swap_remove(0))
    }

    /// `narrow(dim, start, length)`: one Slice. Length 0 (torch's empty result, which
    /// torch allows up to the axis's end) is refused for ATC.
    pub(super) fn narrow(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        let axis = self.dim_axis(args, &x)?;
        let size = x.shape()[axis] as i64;
        let start = args.int("start").or_shape()?;
        let start = if start < 0 { start + size } else { start };
        let length = args.int("length").or_shape()?;
        let fits = (0..=size).contains(&start) && length >= 0 && start + length <= size;
        if !fits {
            return Err(arg_error(format!(
                "narrow({start}, {length}) of an axis of {size}: it runs past the axis"
            )));
        }
        if length == 0 {
            return Err(arg_error(format!(
                "narrow({start}, 0) of an axis of {size} has a dimension of size 0 (an empty tensor), which ATC does not compile"
            )));
        }
        let y = self
            .g
            .slice(scope, &x, axis, start as u64..(start + length) as u64)?;
        self.bind(node, 0, y)
    }

    /// `index_select(dim, index)` with a constant index: a Slice per run of consecutive
    /// indices, concatenated.
    pub(super) fn index_select(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        let axis = self.dim_axis(args, &x)?;
        let index = args.tensor("index").or_shape()?;
        let y = self.take_constant(scope, &x, axis, index, Negative::Refused)?;
        self.bind(node, 0, y)
    }

    /// `index.Tensor`: a per-sample gather when the batch is indexed by `arange` over it
    /// (`x[torch.arange(B), idx]`, [`super::sample_index`]); otherwise (`x[:, [0, 2]]`) one
    /// constant 1-D index on a per-sample dimension and `None` for every other, the same
    /// as `index_select` on that dimension, or constant indices on adjacent per-sample
    /// dimensions, or one of several dimensions on one ([`Lowering::take_constant_block`]).
    pub(super) fn index_tensor(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        if self.per_sample_gather(node, args, scope)? {
            return Ok(());
        }
        let x = self.lifted_activation(args.tensor("self").or_shape()?)?;
        let indices = args.optional_tensors("indices").or_shape()?;
        let given: Vec<(usize, &str)> = indices
            .iter()
            .enumerate()
            .filter_map(|(dim, index)| index.map(|i| (dim, i)))
            .collect();
        let several_dims = match given.as_slice() {
            &[(_, index)] if self.is_constant(index) => self.constant_tensor(index)?.rank() > 1,
            _ => false,
        };
        let y = match given.as_slice() {
            &[(dim, index)] if !several_dims => {
                let axis = row_axis(dim as i64, &x, self.is_lifted())?;
                self.take_constant(scope, &x, axis, index, Negative::FromTheEnd)?
            }
            several => self.take_constant_block(scope, &x, several)?,
        };
        self.bind(node, 0, y)
    }

    /// `x[i, j, …]` by constant index tensors on adjacent dimensions (`given`: torch
    /// dimension and index, in order): the indexed axes merged by a Reshape, the entries at
    /// their combined positions ([`ckpt_aten::eval::combined_index`], the evaluator's
    /// rule) taken as [`Lowering::take_values`] takes them, and the broadcast index's
    /// sizes put in the axes' place, as torch places them when the axes are adjacent.
    fn take_constant_block(
        &mut self,
        scope: &str,
        x: &Value,
        given: &[(usize, &str)],
    ) -> Result<Value, OnnxError> {
        let adjacent = given.windows(2).all(|pair| pair[1].0 == pair[0].0 + 1);
        let Some(&(first, _)) = given.first().filter(|_| adjacent) else {
            return Err(arg_error(format!(
                "indexing by index tensors on dimensions {:?}: torch moves the result's indexed dimensions first when they are not adjacent, which is not exported",
                given.iter().map(|(dim, _)| dim).collect::<Vec<_>>()
            )));
        };
        let start = row_axis(first as i64, x, self.is_lifted())?;
        let end = start + given.len();
        if end > x.shape().len() {
            return Err(arg_error(format!(
                "indexing {} dimensions of a value of sizes {:?}",
                given.len(),
                x.shape()
            )));
        }
        let mut indices = Vec::with_capacity(given.len());
        for &(_, index) in given {
            if !self.is_constant(index) {
                return Err(arg_error(
                    "indexing by a computed index is not exported; only constant indices are"
                        .into(),
                ));
            }
            indices.push(self.constant_tensor(index)?);
        }
        let picked: Vec<&ckpt_aten::eval::Tensor> = indices.iter().collect();
        let combined =
            ckpt_aten::eval::combined_index(&x.shape()[start..end], &picked).map_err(arg_error)?;
        let outer = |middle: &[u64]| -> Vec<u64> {
            let mut shape = x.shape()[..start].to_vec();
            shape.extend_from_slice(middle);
            shape.extend_from_slice(&x.shape()[end..]);
            shape
        };
        let merged = outer(&[x.shape()[start..end].iter().product()]);
        let merged = self.g.reshape(scope, x, &merged)?;
        let positions = combined.to_i64().map_err(arg_error)?;
        let taken = self.take_values(scope, &merged, start, &positions)?;
        self.g.reshape(scope, &taken, &outer(combined.dims()))
    }

    /// The entries of per-sample `axis` of `x` that constant 1-D `index` names, in its
    /// order: a Slice per run of consecutive indices, concatenated (no Gather).
    fn take_constant(
        &mut self,
        scope: &str,
        x: &Value,
        axis: usize,
        index: &str,
        negative: Negative,
    ) -> Result<Value, OnnxError> {
        if !self.is_constant(index) {
            return Err(arg_error(
                "indexing by a computed index is not exported; only constant indices are".into(),
            ));
        }
        let index = self.constant_tensor(index)?;
        if index.rank() > 1 {
            return Err(arg_error(format!(
                "indexing by an index of sizes {:?}",
                index.dims()
            )));
        }
        let mut values = index.to_i64().map_err(arg_error)?;
        if negative == Negative::FromTheEnd {
            from_the_end(&mut values, x.shape()[axis]);
        }
        self.take_values(scope, x, axis, &values)
    }

    /// The entries of per-sample `axis` of `x` at `positions`, in that order: a Slice per
    /// run of consecutive positions, concatenated (no Gather).
    pub(super) fn take_values(
        &mut self,
        scope: &str,
        x: &Value,
        axis: usize,
        positions: &[i64],
    ) -> Result<Value, OnnxError> {
        let runs = runs(positions, x.shape()[axis]).map_err(arg_error)?;
        let parts = runs
            .into_iter()
            .map(|run| match run {
                r if r.start == 0 && r.end == x.shape()[axis] => Ok(x.clone()),
                r => self.g.slice(scope, x, axis, r),
            })
            .collect::<Result<Vec<_>, _>>()?;
        match parts.as_slice() {
            [only] => Ok(only.clone()),
            several => {
                let refs: Vec<&Value> = several.iter().collect();
                self.g.concat(scope, &refs, axis)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negative_positions_count_from_the_end() {
        let mut positions = [-2, 1, -1, -5];
        from_the_end(&mut positions, 4);
        assert_eq!(positions, [2, 1, 3, -5]);
        assert!(runs(&positions, 4).is_err());
    }

    #[test]
    fn indices_group_into_runs() {
        assert_eq!(runs(&[0, 1, 2, 5, 4], 6), Ok(vec![0..3, 5..6, 4..5]));
        assert_eq!(runs(&[3, 3], 4), Ok(vec![3..4, 3..4]));
        assert!(runs(&[4], 4).is_err());
        assert!(runs(&[-1], 4).is_err());
        assert!(runs(&[], 4).is_err());
    }
}
