//! Ops returning a list of tensors: `split`, `split_with_sizes`, `chunk` (an ONNX `Split`,
//! its sizes an attribute before opset 13 and an input from 13 on) and `unbind` (a
//! `Split` into pieces of 1, each reshaped without the split dimension). The pieces are
//! sized as torch sizes them ([`piece_sizes`]), and checked against the recorded ones.

use crate::OnnxError;
use ckpt_aten::program::{Node, SymInt};
use ckpt_aten::shape::split::{by_constant, piece_sizes, pieces_of, split_dim, Pieces};

use super::super::lower::Lowering;
use super::super::tensor;
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

impl<'p> Lowering<'p, '_> {
    /// `split.Tensor`, `split_with_sizes.default`, `chunk.default` or `unbind.int` (`op`).
    pub(super) fn split(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        op: &str,
    ) -> Result<(), OnnxError> {
        let how = pieces_of(node, op)
            .ok_or_else(|| arg_error(format!("`{op}` is not a splitting op")))?
            .or_shape()?;
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let dim = tensor::axis(split_dim(node, op, x.rank()).or_shape()?, x.rank())?;
        let axis = x.sample_axis(dim, op)?;
        let sizes = piece_sizes(x.value().shape()[axis], how).or_shape()?;
        let pieces = if sizes.len() == 1 {
            vec![x]
        } else {
            x.split(&mut self.g, scope, op, dim, &sizes)?
        };
        let pieces = if how == Pieces::Each {
            pieces
                .into_iter()
                .map(|piece| {
                    let mut target = piece.sizes();
                    target.remove(dim);
                    piece.reshaped(&mut self.g, scope, &target)
                })
                .collect::<Result<Vec<_>, _>>()?
        } else {
            pieces
        };
        self.bind_list(node, pieces)
    }

    /// `tensor_split.tensor_indices_or_sections` with a constant tensor: split as the
    /// overload the tensor stands for ([`by_constant`]).
    pub(super) fn split_by_tensor(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let name = args.tensor("tensor_indices_or_sections").or_shape()?;
        if !self.is_constant(name) {
            return Err(arg_error(format!(
                "tensor_split at the positions `{name}` holds is exported when they are constants, not computed by the graph"
            )));
        }
        let cuts = self.constant_tensor(name)?;
        let split = by_constant(node, cuts.dims(), &cuts.to_i64().or_shape()?).or_shape()?;
        let op = ckpt_aten::schema::canonical(split.target.trim_start_matches("torch.ops.aten."));
        self.size_pieces(&split, op)?;
        self.split(&split, &Args(&split), scope, op)
    }

    /// Records the sizes of the pieces `node` (splitting op `op`) makes, which torch.export
    /// leaves as symbols of their own when the positions came from a tensor.
    fn size_pieces(&mut self, node: &Node, op: &str) -> Result<(), OnnxError> {
        let how = pieces_of(node, op)
            .ok_or_else(|| arg_error(format!("`{op}` is not a splitting op")))?
            .or_shape()?;
        let x = self.tensor(Args(node).tensor("self").or_shape()?)?;
        let dim = tensor::axis(split_dim(node, op, x.rank()).or_shape()?, x.rank())?;
        let axis = x.sample_axis(dim, op)?;
        let sizes = piece_sizes(x.value().shape()[axis], how).or_shape()?;
        let names = node.outputs.iter().flat_map(|o| o.tensor_names());
        for (name, size) in names.zip(sizes) {
            let mut meta = self.meta(name)?.clone();
            if let Some(recorded) = meta.sizes.get_mut(dim) {
                *recorded = SymInt::Int(size as i64);
            }
            self.expanded.insert(name.to_owned(), meta);
        }
        Ok(())
    }
}
