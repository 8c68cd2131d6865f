//! Ops that add, drop or pick dimensions (unsqueeze, squeeze, select, unflatten, expand),
//! wherever the batch is, and `linear`'s product by a stored weight.

use crate::onnx::graph::Value;
use crate::onnx::OnnxError;
use crate::torch::pt2::schema::{Argument, Node, SymInt};

use super::super::args::Args;
use super::super::emit::{self, Operand};
use super::super::lower::{Constant, Lowering};
use super::super::tensor;
use super::{arg_error, reject_extra, OrShape};

impl<'p> Lowering<'p, '_> {
    /// `unsqueeze(self, dim)`: a new size-1 dimension, a Reshape.
    pub(super) fn unsqueeze(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "dim"])?;
        let input = args.tensor("self").or_shape()?;
        let x = self.tensor(input)?;
        tensor::axis(args.int_or("dim", 0).or_shape()?, x.rank() + 1)?;
        self.view_as_recorded(node, input, scope)
    }

    /// `squeeze(self, dim)` / `squeeze(self, dims)`: size-1 dimensions dropped (others
    /// kept, as torch does), a Reshape; the batch is never dropped.
    pub(super) fn squeeze(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "dim", "dims"])?;
        let input = args.tensor("self").or_shape()?;
        let x = self.tensor(input)?;
        let dims = match (args.get("dim"), args.get("dims")) {
            (Some(Argument::Int(d)), None) => vec![*d],
            (None, Some(Argument::Ints(ds))) => ds.clone(),
            _ => {
                return Err(arg_error(
                    "squeeze without dimensions is not exported (it could drop the batch at batch 1); name the dimension".into(),
                ))
            }
        };
        for &d in &dims {
            if tensor::axis(d, x.rank())? == x.batch_axis() {
                return Err(arg_error(
                    "squeeze of the batch dimension would freeze the batch at 1".into(),
                ));
            }
        }
        self.view_as_recorded(node, input, scope)
    }

    /// `select(self, dim, index)`: `x[:, i]` on a dimension other than the batch, a Slice
    /// and a Reshape dropping the dimension.
    pub(super) fn select(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "dim", "index"])?;
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let dim = tensor::axis(args.int_or("dim", 0).or_shape()?, x.rank())?;
        let Some(Argument::Int(index)) = args.get("index") else {
            return Err(arg_error("select needs a constant index".into()));
        };
        let size = x.value().shape()[x.sample_axis(dim, "select")?] as i64;
        let i = if *index < 0 { index + size } else { *index };
        if !(0..size).contains(&i) {
            return Err(arg_error(format!(
                "index {index} is out of range for size {size}"
            )));
        }
        let row = x.sliced(&mut self.g, scope, "select", dim, i as u64..i as u64 + 1)?;
        let target = self.recorded_sizes(node, 0)?;
        let y = row.reshaped(&mut self.g, scope, &target)?;
        self.bind_tensor(node, 0, y)
    }

    /// `unflatten(self, dim, sizes)`: one dimension split into several, as torch recorded
    /// the result.
    pub(super) fn unflatten(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "dim", "sizes"])?;
        self.view_as_recorded(node, args.tensor("self").or_shape()?, scope)
    }

    /// `x` (`[…, K]`) times the transpose of constant `weight` (`[N, K]`), plus `bias`.
    pub(super) fn linear_value(
        &mut self,
        x: &Value,
        weight: &Constant,
        bias: Option<&Constant>,
        scope: &str,
    ) -> Result<Value, OnnxError> {
        let &[n, k] = self.constant_dims(weight)?.as_slice() else {
            return Err(arg_error(format!("`{weight}` is not a 2-D linear weight")));
        };
        let values = self.read(weight)?;
        let transposed = super::conv::transpose_2d(&values, n, k)
            .ok_or_else(|| arg_error(format!("`{weight}` does not hold {n}×{k} values")))?;
        let w = self
            .g
            .weight(&format!("{weight}.transposed"), vec![k, n], &transposed)?;
        let y = self.g.matmul(scope, x, &w)?;
        match bias {
            Some(b) => {
                let b = self.weight(b)?;
                emit::binary(
                    &mut self.g,
                    "Add",
                    scope,
                    Operand::Activation(&y),
                    Operand::Constant(&b),
                )
            }
            None => Ok(y),
        }
    }

    /// `expand(self, size)` of a constant over the batch (`class_token.expand(n, -1,
    /// -1)`): the size list leads with the batch and keeps every other size.
    pub(super) fn expand(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        _scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "size", "implicit"])?;
        if args.bool_or("implicit", false).or_shape()? {
            return Err(arg_error("implicit expand is not exported".into()));
        }
        let x = args.tensor("self").or_shape()?;
        let constant = self.constant(x).map_err(|_| {
            arg_error(
                "expand of a computed tensor is not exported, only of a parameter or buffer over the batch (like a class token)".into(),
            )
        })?;
        let dims = self.constant_dims(&constant)?;
        let sizes: Vec<SymInt> = match args.get("size") {
            Some(Argument::Ints(v)) => v.iter().map(|&i| SymInt::Int(i)).collect(),
            Some(Argument::SymInts(v)) => v.clone(),
            _ => return Err(arg_error("argument `size` is not a size list".into())),
        };
        let leads = match sizes.first() {
            Some(SymInt::Name(name)) => self.is_batch_symbol(name),
            Some(other) => self.batch.is(other),
            None => false,
        };
        let keeps_rest = sizes.len() == dims.len()
            && dims.first() == Some(&1)
            && sizes[1..]
                .iter()
                .zip(&dims[1..])
                .all(|(s, &d)| matches!(s, SymInt::Int(i) if *i == -1 || *i == d as i64));
        if !leads || !keeps_rest {
            return Err(arg_error(format!(
                "expand of `{constant}` {dims:?} is exported only over the batch (a leading 1 expanded to the batch, other sizes kept)"
            )));
        }
        self.bind_expanded(node, constant)
    }

    /// Expanded constant `c` of per-sample `shape`, built from activation `like` as
    /// `0 · like[…:1…] + c` so that it follows the batch with no op computing it (the
    /// checkpoint ViT's class token does the same). Every axis where `like` differs from
    /// `shape` must be of size 1 in `shape`.
    pub(super) fn expanded_like(
        &mut self,
        c: &Constant,
        shape: &[u64],
        like: &Value,
        scope: &str,
    ) -> Result<Value, OnnxError> {
        if like.shape().len() != shape.len() {
            return Err(arg_error(format!(
                "`{c}` expanded to {shape:?} beside a {:?} tensor",
                like.shape()
            )));
        }
        let mut x = like.clone();
        for (axis, (&want, &have)) in shape.iter().zip(like.shape()).enumerate() {
            match (want, have) {
                (w, h) if w == h => {}
                (1, _) => x = self.g.slice(scope, &x, axis, 0..1)?,
                _ => {
                    return Err(arg_error(format!(
                        "`{c}` expanded to {shape:?} cannot be made from a {:?} tensor",
                        like.shape()
                    )))
                }
            }
        }
        let zero = self.g.constant_scalar(&format!("{scope}.zero"), 0.0);
        let zeros = self.g.mul_constant(scope, &x, &zero)?;
        let constant = self.weight(c)?;
        self.g.add_constant(scope, &zeros, &constant)
    }

    /// `sym_size.int`: only the batch dimension's size is a symbol (the batch times its
    /// factor).
    pub(super) fn sym_size(&mut self, node: &Node, args: &Args<'_>) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let dim = tensor::axis(args.int_or("dim", 0).or_shape()?, x.rank())?;
        if dim != x.batch_axis() {
            return Err(arg_error("it reads a fixed dimension as a symbol".into()));
        }
        self.bind_batch_times(node, x.factor())
    }

    /// `_operator.mul` of the batch times a constant and a positive constant (torch's
    /// `bsz * num_heads`, `B * C * nh`).
    pub(super) fn symbolic_mul(&mut self, node: &Node, args: &Args<'_>) -> Result<(), OnnxError> {
        reject_extra(args, &["a", "b"])?;
        let batch = |name: &str| match args.get(name) {
            Some(Argument::SymInt(SymInt::Name(n))) => self.batch_times(n),
            _ => None,
        };
        let constant = |name: &str| match args.get(name) {
            Some(Argument::Int(i)) if *i > 0 => Some(*i as u64),
            _ => None,
        };
        let product = match (batch("a"), constant("b"), constant("a"), batch("b")) {
            (Some(k), Some(c), _, _) | (_, _, Some(c), Some(k)) => k.checked_mul(c),
            _ => None,
        };
        let count = product.ok_or_else(|| {
            arg_error(
                "only the batch times a positive constant is exported as a symbolic product".into(),
            )
        })?;
        self.bind_batch_times(node, count)
    }
}
