//! Ops that add, drop or pick dimensions (unsqueeze, squeeze, select, expand),
//! wherever the batch is, and `linear`'s product by a stored weight.

use crate::elem::ElemType;
use crate::graph::Value;
use crate::OnnxError;
use ckpt_aten::program::{Argument, Node, SymInt};

use super::super::emit::{self, Operand};
use super::super::lower::{Constant, Lowering};
use super::super::tensor::{self, Placement, Size};
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;
use ckpt_aten::dim::Dim;
use ckpt_aten::schema;

impl<'p> Lowering<'p, '_> {
    /// `unsqueeze(self, dim)`: a new size-1 dimension, a Reshape.
    pub(super) fn unsqueeze(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let input = args.tensor("self").or_shape()?;
        let x = self.tensor(input)?;
        let at = tensor::axis(args.int("dim").or_shape()?, x.rank() + 1)?;
        let mut target = x.sizes();
        target.insert(at, Size::fixed(1));
        self.view_to(node, input, target, scope)
    }

    /// `atleast_1d`/`atleast_2d`/`atleast_3d` (`least`): torch's sizes
    /// ([`schema::at_least`]), a Reshape.
    pub(super) fn at_least(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        least: usize,
    ) -> Result<(), OnnxError> {
        let input = args.tensor("self").or_shape()?;
        let x = self.tensor(input)?;
        let target = schema::at_least(&x.sizes(), least, Size::fixed(1));
        self.view_to(node, input, target, scope)
    }

    /// `squeeze(self, dim)` / `squeeze(self, dims)`: size-1 dimensions dropped (others
    /// kept, as torch does), a Reshape; the batch is never dropped. A 0-d tensor's
    /// dimension 0 is its one entry, which stays (torch's `squeeze` of a 0-d tensor is
    /// itself).
    pub(super) fn squeeze(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let input = args.tensor("self").or_shape()?;
        let x = self.tensor(input)?;
        // `squeeze.dims` names its list `dim` too; `squeeze.default` squeezes every size-1
        // dimension but the batch (torch's rule at a batch that is not 1).
        let dims: Vec<i64> = match args.get("dim") {
            Some(Argument::Int(d)) => vec![*d],
            Some(Argument::Ints(ds)) => ds.clone(),
            None => x
                .sizes()
                .iter()
                .enumerate()
                .filter(|(_, s)| !s.batch && s.count == 1)
                .map(|(i, _)| i as i64)
                .collect(),
            Some(other) => return Err(arg_error(format!("argument `dim` is {}", other.kind()))),
        };
        let mut drop = vec![false; x.rank()];
        for &d in &dims {
            let Dim::Axis(axis) = tensor::dim(d, x.rank())? else {
                continue;
            };
            if Some(axis) == x.batch_axis() {
                return Err(arg_error(
                    "squeeze of the batch dimension would freeze the batch at 1".into(),
                ));
            }
            drop[axis] = true;
        }
        let target = x
            .sizes()
            .into_iter()
            .zip(drop)
            .filter(|(s, drop)| !(*drop && s.count == 1))
            .map(|(s, _)| s)
            .collect();
        self.view_to(node, input, target, scope)
    }

    /// `select(self, dim, index)`: `x[:, i]` on a dimension other than the batch, a Slice
    /// and a Reshape dropping the dimension.
    pub(super) fn select(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let dim = tensor::axis(args.int("dim").or_shape()?, x.rank())?;
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

    /// `x` (`[…, K]`) times the transpose of constant `weight` (`[N, K]`), plus `bias`.
    pub(super) fn linear_value(
        &mut self,
        x: &Value,
        weight: &Constant,
        bias: Option<&Constant>,
        scope: &str,
    ) -> Result<Value, OnnxError> {
        let w = self.transposed_weight(weight)?;
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

    /// `expand(self, size)` / `expand_as(self, other)` that reach the lowering (a constant
    /// expanded over the batch is folded as the same for every sample, see
    /// [`Lowering::fold_constant`]): a float activation with its batch first grown along
    /// size-1 dimensions to torch's recorded sizes, as a `Mul` by ones of those sizes
    /// (ATC takes no `Expand` with a dynamic batch). Other sizes, ranks or a size list
    /// holding a multiple of the batch are refused.
    pub(super) fn expand(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let input = args.tensor("self").or_shape()?;
        if self.is_constant(input) {
            return Err(arg_error(format!(
                "expand of `{input}` to sizes that are not fixed sizes and the batch once is not exported"
            )));
        }
        let x = self.tensor(input)?;
        let target = self.recorded_sizes(node, 0)?;
        if target == x.sizes() {
            // To its own sizes (diffusers' `timesteps.expand(sample.shape[0])`): any dtype.
            return self.bind_tensor(node, 0, x);
        }
        self.activation(input)?;
        if x.placement() == Placement::Static {
            return self.expand_static(node, x, &target, scope);
        }
        let value = self.activation(input)?;
        let grows = target.len() == x.rank()
            && Some(target[0]) == x.factor().map(tensor::Size::batch)
            && target[1..]
                .iter()
                .zip(value.shape())
                .all(|(t, &d)| !t.batch && (t.count == d || d == 1));
        if !grows {
            return Err(arg_error(format!(
                "expand of {} to {} is exported only along size-1 dimensions of a tensor with the batch first",
                tensor::show(&x.sizes()),
                tensor::show(&target)
            )));
        }
        let shape: Vec<u64> = target[1..].iter().map(|t| t.count).collect();
        let count = shape.iter().product::<u64>() as usize;
        let mut dims = vec![1];
        dims.extend(&shape);
        let ones = self
            .g
            .folded(&format!("{scope}.ones"), dims, &vec![1.0; count])?;
        let inputs = vec![value.name().to_owned(), ones.name().to_owned()];
        let mut outputs = self.g.node("Mul", scope, inputs, vec![], vec![shape]);
        let y = outputs.swap_remove(0);
        let y = tensor::Tensor::from_rows(self.rows_read()?, y);
        self.bind_tensor(node, 0, y)
    }

    /// [`Lowering::expand`] of static float activation `x` to `target`: along any size-1
    /// dimension, and to more dimensions in front as torch allows (size-1 ones added by a
    /// Reshape first), as a `Mul` by ones of `target`'s sizes.
    fn expand_static(
        &mut self,
        node: &Node,
        x: tensor::Tensor,
        target: &[tensor::Size],
        scope: &str,
    ) -> Result<(), OnnxError> {
        let sizes = x.sizes();
        let grows = target.len() >= sizes.len()
            && sizes
                .iter()
                .rev()
                .zip(target.iter().rev())
                .all(|(s, t)| s.count == t.count || s.count == 1);
        if !grows {
            return Err(arg_error(format!(
                "expand of {} to {} is exported only along size-1 dimensions",
                tensor::show(&sizes),
                tensor::show(target)
            )));
        }
        let mut padded = vec![tensor::Size::fixed(1); target.len() - sizes.len()];
        padded.extend(sizes);
        let x = x.reshaped(&mut self.g, scope, &padded)?;
        let lifted = self.lift(&x, scope)?;
        let shape: Vec<u64> = target.iter().map(|t| t.count).collect();
        let count = shape.iter().product::<u64>() as usize;
        let mut dims = vec![1];
        dims.extend(&shape);
        let ones = self
            .g
            .folded(&format!("{scope}.ones"), dims, &vec![1.0; count])?;
        let inputs = vec![lifted.name().to_owned(), ones.name().to_owned()];
        let y = self
            .g
            .node("Mul", scope, inputs, vec![], vec![shape])
            .swap_remove(0);
        let y = self.unlift(y, scope)?;
        self.bind_tensor(node, 0, y)
    }

    /// `repeat_interleave(self, repeats, dim)` of a float activation by a fixed count:
    /// each entry along `dim` repeated in place, as a Reshape adding a size-1 axis after
    /// `dim`, a `Mul` by ones with `repeats` there, and a Reshape merging the two. Along
    /// the batch (GCViT's global query per window) the batch's factor grows by `repeats`,
    /// each sample's copies next to each other, as torch orders them. Without `dim`, the
    /// entries of the flattened tensor.
    pub(super) fn repeat_interleave(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let input = args.tensor("self").or_shape()?;
        let t = self.tensor(input)?;
        if t.value().elem() != crate::elem::ElemType::Float32 {
            return Err(arg_error(format!(
                "`{input}` holds {} values; repeat_interleave is exported on float32 tensors",
                t.value().elem()
            )));
        }
        let repeats = u64::try_from(args.int("repeats").or_shape()?)
            .ok()
            .filter(|&r| r > 0)
            .ok_or_else(|| arg_error("repeat_interleave by a count that is not positive".into()))?;
        let (t, dim) = match args.optional_int("dim").or_shape()? {
            Some(dim) => {
                let dim = tensor::axis(dim, t.rank())?;
                (t, dim)
            }
            // torch repeats the flattened tensor's entries (a batch folded into them, each
            // sample's entries together).
            None => {
                let sizes = t.sizes();
                let flat = tensor::Size {
                    count: sizes.iter().map(|s| s.count).product::<u64>(),
                    batch: sizes.iter().any(|s| s.batch),
                };
                (t.reshaped(&mut self.g, scope, &[flat])?, 0)
            }
        };
        let mut lifted = t.sizes();
        lifted.insert(dim + 1, tensor::Size::fixed(1));
        let x = t.reshaped(&mut self.g, scope, &lifted)?;
        let batch = x.batch_axis();
        let mut ones_dims = Vec::with_capacity(lifted.len());
        let mut shape = Vec::with_capacity(lifted.len() - 1);
        for (i, size) in lifted.iter().enumerate() {
            let count = if i == dim + 1 { repeats } else { size.count };
            ones_dims.push(if Some(i) == batch { 1 } else { count });
            if Some(i) != batch {
                shape.push(count);
            }
        }
        let count = ones_dims.iter().product::<u64>();
        ckpt_aten::eval::element_count(&ones_dims).map_err(arg_error)?;
        let ones = self.g.folded(
            &format!("{scope}.ones"),
            ones_dims,
            &vec![1.0; count as usize],
        )?;
        let inputs = vec![x.value().name().to_owned(), ones.name().to_owned()];
        let value = self
            .g
            .node("Mul", scope, inputs, vec![], vec![shape])
            .swap_remove(0);
        let y = x.with_value(value)?;
        let target = self.recorded_sizes(node, 0)?;
        let y = y.reshaped(&mut self.g, scope, &target)?;
        self.bind_tensor(node, 0, y)
    }

    /// `broadcast_tensors(tensors)`: each tensor at the sizes torch recorded for it (their
    /// common broadcast): an activation already at them as it is, a constant expanded at
    /// export, or beside the batch of the first activation ([`Lowering::expanded_like`]).
    /// An activation that would grow is refused.
    pub(super) fn broadcast_tensors(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let inputs = args.tensors("tensors").or_shape()?;
        let [Argument::Tensors(outputs)] = node.outputs.as_slice() else {
            return Err(arg_error("its output is not a list of tensors".into()));
        };
        if outputs.len() != inputs.len() {
            return Err(arg_error(format!(
                "{} tensors broadcast to {} outputs",
                inputs.len(),
                outputs.len()
            )));
        }
        let like = inputs.iter().find(|t| !self.is_constant(t));
        for (input, output) in inputs.iter().zip(outputs) {
            let recorded = self.recorded_name_sizes(output)?;
            if !self.is_constant(input) {
                let x = self.tensor(input)?;
                if x.sizes() != recorded {
                    return Err(arg_error(format!(
                        "broadcast_tensors grows activation `{input}` from {} to {}; only constants are expanded (broadcast the operands in the op that uses them)",
                        tensor::show(&x.sizes()),
                        tensor::show(&recorded)
                    )));
                }
                self.bind_name(output, x)?;
                continue;
            }
            let counts: Vec<u64> = recorded.iter().map(|s| s.count).collect();
            let batch = recorded.iter().position(|s| s.batch);
            match (batch, like) {
                (None, _) => {
                    let c = self.constant_tensor(input)?.expand(&counts).or_shape()?;
                    self.bind_folded_as(node, output, c)?;
                }
                (Some(0), Some(like)) => {
                    let rows = self.activation(like)?;
                    let c = self.constant(input)?;
                    let y = self.expanded_like(&c, &counts[1..], &rows, scope)?;
                    let y = tensor::Tensor::from_rows(self.rows_read()?, y);
                    self.bind_name(output, y)?;
                }
                _ => {
                    return Err(arg_error(format!(
                    "broadcast_tensors expands constant `{input}` to {}, with the batch not first",
                    tensor::show(&recorded)
                )))
                }
            }
        }
        Ok(())
    }

    /// Expanded constant `c` of per-sample `shape`, built beside activation `like` as
    /// `Where(like[…:1…] < like[…:1…], c, c)` so that it follows the batch with no op
    /// computing it. The condition only lends its shape: either branch is `c`, so a NaN or
    /// ±∞ in `like` never reaches the result (as `0 · like + c` would let it). `c` must
    /// have `shape`'s sizes, or 1, on every per-sample axis, and `like` the same rank.
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
        // `like` cut to size 1 wherever its size differs; the Where broadcasts the rest.
        let mut x = like.clone();
        for (axis, (&want, &have)) in shape.iter().zip(like.shape()).enumerate() {
            if want != have {
                x = self.g.slice(scope, &x, axis, 0..1)?;
            }
        }
        // Any comparison gives the shape; `Less` takes float32 at every opset (`Equal`
        // only from 11).
        let rows = emit::typed(
            &mut self.g,
            "Less",
            scope,
            [x.name(), x.name()],
            x.shape(),
            ElemType::Bool,
        );
        let constant = self.weight(c)?;
        let c = constant.name().to_owned();
        Ok(emit::single(self.g.typed_node(
            "Where",
            scope,
            vec![rows.name().to_owned(), c.clone(), c],
            vec![],
            vec![(shape.to_vec(), ElemType::Float32)],
        )))
    }

    /// `sym_size.int`: only the batch dimension's size is a symbol (the batch times its
    /// factor).
    pub(super) fn sym_size(&mut self, node: &Node, args: &Args<'_>) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let dim = tensor::axis(args.int("dim").or_shape()?, x.rank())?;
        let (Some(batch), Some(factor)) = (x.batch_axis(), x.factor()) else {
            return Err(arg_error(
                "it reads a size of a static tensor as a symbol".into(),
            ));
        };
        if dim != batch {
            return Err(arg_error("it reads a fixed dimension as a symbol".into()));
        }
        self.bind_batch_times(node, factor)
    }

    /// `sym_numel(self)` of an activation: the batch times the other sizes' product.
    pub(super) fn sym_numel(&mut self, node: &Node, args: &Args<'_>) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let Some(factor) = x.factor() else {
            return Err(arg_error(
                "it reads the element count of a static tensor as a symbol".into(),
            ));
        };
        let per_sample: u64 = x.value().shape().iter().product();
        self.bind_batch_times(node, factor * per_sample)
    }

    /// `copy(self, src)`, torch's functional copy: `src` in the element type of `self`,
    /// of the same sizes (a copy that broadcasts is refused).
    pub(super) fn copy(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let (target, source) = (
            args.tensor("self").or_shape()?,
            args.tensor("src").or_shape()?,
        );
        let (target, source) = (self.tensor(target)?, self.tensor(source)?);
        if target.sizes() != source.sizes() {
            return Err(arg_error(format!(
                "a copy of {} into {}: only a copy of the same sizes and batch layout is exported",
                tensor::show(&source.sizes()),
                tensor::show(&target.sizes())
            )));
        }
        let elem = self.recorded_elem(self.output_name(node, 0)?)?;
        let y = emit::cast(&mut self.g, scope, source.value(), elem);
        self.bind_tensor(node, 0, source.with_value(y)?)
    }

    /// `item()` of a one-element constant (ultralytics' `new_full(…, strides[i])`): a
    /// number known at export. Of a computed tensor it is a value read back from the data,
    /// which a graph cannot follow.
    pub(super) fn item(&mut self, node: &Node, args: &Args<'_>) -> Result<(), OnnxError> {
        let name = args.tensor("self").or_shape()?;
        if !self.is_constant(name) || self.uniform_axis(name).is_some() {
            return Err(arg_error(format!(
                "item() of `{name}`, a computed tensor, reads a number back from the data; only a constant's is exported"
            )));
        }
        let t = self.constant_tensor(name)?;
        let &[value] = t.to_f32().as_slice() else {
            return Err(arg_error(format!(
                "item() of `{name}`, sizes {:?}, which is not one element",
                t.dims()
            )));
        };
        let value = match t.to_i64() {
            Ok(v) if matches!(t.values(), ckpt_aten::eval::Values::I64(_)) => v[0] as f64,
            _ => f64::from(value),
        };
        self.bind_number(node, value)
    }

    /// `_operator.mul` of the batch times a constant and a positive constant (torch's
    /// `bsz * num_heads`, `B * C * nh`).
    pub(super) fn symbolic_mul(&mut self, node: &Node, args: &Args<'_>) -> Result<(), OnnxError> {
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
