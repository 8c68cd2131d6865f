//! `one_hot(i, C)` read only by a matmul with a constant table, through a permute that
//! keeps the classes last and a cast to float (timm's Gemma 4 position embeddings:
//! `F.one_hot(pos, 10240).permute(0, 2, 1, 3).float() @ table`), with constant indices:
//! the product is the table's rows at the indices, evaluated without the one-hot tensor
//! ([`crate::aten::eval::Tensor::one_hot_matmul`]), which would be far larger than the
//! product and than what the export folds.

use crate::aten::args::Args;
use crate::aten::program::{Argument, Node};
use crate::onnx::OnnxError;

use super::super::lower::Lowering;
use super::registry::{aten_name, is_assertion};

impl Lowering<'_, '_> {
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
