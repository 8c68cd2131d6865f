//! `one_hot(i, C)` of an int64 activation with `C` given: `Equal` of each index with
//! 0…C−1, cast to int64 ([`Lowering::one_hot`]).
//!
//! `one_hot(i, C)` read only by a matmul with a constant table, through a permute that
//! keeps the classes last and a cast to float (timm's Gemma 4 position embeddings:
//! `F.one_hot(pos, 10240).permute(0, 2, 1, 3).float() @ table`), with constant indices:
//! the product is the table's rows at the indices, evaluated without the one-hot tensor
//! ([`ckpt_aten::eval::Tensor::one_hot_matmul`]), which would be far larger than the
//! product and than what the export folds.

use crate::elem::ElemType;
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::program::{Argument, Node};

use super::super::emit;
use super::super::lower::Lowering;
use super::registry::{aten_name, is_assertion};
use super::{arg_error, OrShape};

impl Lowering<'_, '_> {
    /// `one_hot(self, num_classes)` of an int64 activation: each index compared with
    /// 0…C−1 along a new last axis (`Equal`), as int64. `num_classes = -1` (the largest
    /// index plus one) sizes the result by the values, which ATC cannot compile. torch
    /// refuses an index outside 0…C−1 at run time, where the file gives a row of zeros.
    pub(super) fn one_hot(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let classes = args.int("num_classes").or_shape()?;
        let classes = u64::try_from(classes).ok().filter(|&c| c > 0).ok_or_else(|| {
            arg_error(format!(
                "one_hot with num_classes={classes}: the result is sized by the largest index, a value, and ATC compiles static shapes only; give the number of classes"
            ))
        })?;
        let x = self.any_activation(args.tensor("self").or_shape()?)?;
        if x.elem() != ElemType::Int64 {
            return Err(arg_error(format!(
                "one_hot of a {} tensor (torch takes int64)",
                x.elem()
            )));
        }
        let mut column = x.shape().to_vec();
        column.push(1);
        let x = self.g.reshape(scope, &x, &column)?;
        let range: Vec<i64> = (0..classes as i64).collect();
        let range = self.g.constant_i64(&format!("{scope}.classes"), &range);
        let mut shape = x.shape().to_vec();
        if let Some(last) = shape.last_mut() {
            *last = classes;
        }
        let hit = emit::typed(
            &mut self.g,
            "Equal",
            scope,
            [x.name(), range.name()],
            &shape,
            ElemType::Bool,
        );
        let y = emit::cast(&mut self.g, scope, &hit, ElemType::Int64);
        self.bind(node, 0, y)
    }

    /// Folds the chain from `one_hot` node `node` to the matmul reading it, when it has
    /// that form and its indices are constant: binds the matmul's result and marks the
    /// nodes in between as done. Returns whether it did.
    pub(super) fn one_hot_lookup(&mut self, node: &Node) -> Result<bool, OnnxError> {
        let fail = |what: String| OnnxError::Shape { what };
        let args = Args(node);
        let Some(index) = args.tensor("self").ok() else {
            return Ok(false);
        };
        if !self.is_constant(index) {
            return Ok(false);
        }
        let classes = match args.int("num_classes") {
            Ok(c) if c > 0 => c as u64,
            _ => return Ok(false),
        };
        let uniform = self.uniform_axis(index);
        let mut value = self.output_name(node, 0)?.to_owned();
        let mut order: Option<Vec<usize>> = None;
        let mut chain = Vec::new();
        loop {
            let readers: Vec<usize> = self
                .readers_of(&value)
                .iter()
                .copied()
                .filter(|&r| !is_assertion(aten_name(&self.graph.nodes[r])))
                .collect();
            let &[r] = readers.as_slice() else {
                return Ok(false);
            };
            let next = &self.graph.nodes[r];
            let next_args = Args(next);
            match aten_name(next) {
                "permute.default" if order.is_none() => {
                    let Some(Argument::Ints(dims)) = next_args.get("dims") else {
                        return Ok(false);
                    };
                    let rank = dims.len();
                    let order_of: Option<Vec<usize>> = dims
                        .iter()
                        .map(|&d| usize::try_from(if d < 0 { d + rank as i64 } else { d }).ok())
                        .collect();
                    match order_of {
                        Some(o) if o.last() == Some(&(rank - 1)) => order = Some(o),
                        _ => return Ok(false),
                    }
                }
                "to.dtype" | "to.device" | "to.dtype_layout" | "_to_copy.default" => {}
                "matmul.default" => {
                    let other = next_args.tensor("other").map_err(fail)?;
                    if next_args.tensor("self").map_err(fail)? != value
                        || !self.is_constant(other)
                        || self.uniform_axis(other).is_some()
                    {
                        return Ok(false);
                    }
                    let mut indices = self.constant_tensor(index)?;
                    if let Some(o) = &order {
                        indices = indices.permute(&o[..o.len() - 1]).map_err(fail)?;
                    }
                    let table = self.constant_tensor(other)?;
                    let product = indices
                        .one_hot_matmul(classes, &table)
                        .map_err(|e| fail(format!("evaluating one_hot(…) @ `{other}`: {e}")))?;
                    let Some(Argument::Tensor(out)) = next.outputs.first() else {
                        return Ok(false);
                    };
                    // A uniform index stays uniform where its batch axis stays in place.
                    match uniform {
                        Some(axis)
                            if order.as_ref().map_or(axis, |o| {
                                o.iter().position(|&a| a == axis).unwrap_or(usize::MAX)
                            }) == axis
                                && product.dims().get(axis) == Some(&1) =>
                        {
                            self.bind_uniform_as(next, out, product)?
                        }
                        Some(_) => return Ok(false),
                        None => self.bind_folded_as(next, out, product)?,
                    }
                    chain.push(r);
                    self.absorbed.extend(chain);
                    return Ok(true);
                }
                _ => return Ok(false),
            }
            chain.push(r);
            value = self.output_name(next, 0)?.to_owned();
        }
    }
}
