//! `repeat` (torch's tile): of an activation along fixed dimensions, one `Tile`; of a
//! constant to a multiple of the batch along one dimension (DeBERTa's relative position
//! keys, `pos_key.repeat(B·H // H, 1, 1)`, and its position indices
//! `c2p_pos.expand(B·H, L, L)`), the constant tiled for one sample and laid out with the
//! batch outermost, which is torch's order: row `n·f + j` of the `f·N` result is row
//! `j mod d` of the `d`-row constant, whatever sample `n` it is in.

use crate::elem::ElemType;
use crate::graph::{Value, Weight};
use crate::OnnxError;
use ckpt_aten::eval;
use ckpt_aten::program::{Argument, Node};

use super::super::emit;
use super::super::lower::Lowering;
use super::super::tensor::{self, Size, Tensor};
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

impl<'p> Lowering<'p, '_> {
    /// `repeat(self, repeats)` of an activation: the input viewed with a size-1 dimension
    /// for each extra leading repeat, then a `Tile` by the repeat counts, 1 on the
    /// dimension that carries the batch. Repeating that dimension is refused
    /// ([`batch_repeated`]). The counts are read off torch's recorded result.
    pub(super) fn repeat(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let target = self.recorded_sizes(node, 0)?;
        let offset = target.len().checked_sub(x.rank()).ok_or_else(|| {
            arg_error(format!(
                "repeat of {} to {}, fewer dimensions than its input has",
                tensor::show(&x.sizes()),
                tensor::show(&target)
            ))
        })?;
        let mut viewed = vec![Size::fixed(1); offset];
        viewed.extend(x.sizes());
        let mut repeats = Vec::with_capacity(target.len());
        for (have, want) in viewed.iter().zip(&target) {
            let count = match (have.batch, want.batch) {
                (true, true) if have == want => 1,
                (false, false) if have.count == 0 && want.count == 0 => 1,
                (false, false) if have.count > 0 && want.count % have.count == 0 => {
                    want.count / have.count
                }
                (false, false) => {
                    return Err(arg_error(format!(
                        "repeat of {} to {}: the sizes are not multiples",
                        tensor::show(&x.sizes()),
                        tensor::show(&target)
                    )))
                }
                _ => return Err(batch_repeated(&x.sizes(), &target)),
            };
            repeats.push(count as i64);
        }
        let mut y = x.reshaped(&mut self.g, scope, &viewed)?;
        if repeats.iter().any(|&r| r != 1) {
            let counts = self.g.constant_i64(&format!("{scope}.repeats"), &repeats);
            let shape: Vec<u64> = target
                .iter()
                .filter(|s| !s.batch)
                .map(|s| s.count)
                .collect();
            let inputs = vec![y.value().name().to_owned(), counts.name().to_owned()];
            let tiled = self
                .g
                .node("Tile", scope, inputs, vec![], vec![shape])
                .swap_remove(0);
            y = y.with_value(tiled)?;
        }
        self.bind_tensor(node, 0, y)
    }

    /// `repeat` or `expand` of a parameter, buffer or folded constant to a multiple `f·N`
    /// of the batch along one dimension, `f > 1` (see the module docs), bound as an
    /// activation; `false` for any other node, which folding or the op's row handles.
    pub(super) fn tile_over_batch(&mut self, node: &Node, op: &str) -> Result<bool, OnnxError> {
        let args = Args(node);
        let list = match op {
            "repeat.default" => "repeats",
            "tile.default" => "dims",
            "expand.default" => "size",
            _ => return Ok(false),
        };
        let Ok(input) = args.tensor("self") else {
            return Ok(false);
        };
        let symbolic = matches!(args.get(list), Some(Argument::SymInts(_)));
        if !symbolic || !self.is_constant(input) || self.uniform_axis(input).is_some() {
            return Ok(false);
        }
        let target = self.recorded_sizes(node, 0)?;
        let Some(axis) = target.iter().position(|s| s.batch && s.count > 1) else {
            return Ok(false);
        };
        let c = self.constant_tensor(input)?;
        let offset = target
            .len()
            .checked_sub(c.rank())
            .ok_or_else(|| arg_error(format!("{op} to fewer dimensions than its input has")))?;
        // Each sample's part: the constant tiled (or broadcast) to `f` rows along `axis`.
        let per_sample: Vec<u64> = target.iter().map(|s| s.count).collect();
        let mut counts = Vec::with_capacity(target.len());
        for (i, &want) in per_sample.iter().enumerate() {
            let have = i.checked_sub(offset).map_or(1, |j| c.dims()[j]);
            let count = match op {
                "expand.default" => want,
                _ if have > 0 && want % have == 0 => want / have,
                _ => {
                    return Err(arg_error(format!(
                        "repeat of `{input}` {:?} to {}: the sizes are not multiples",
                        c.dims(),
                        tensor::show(&target)
                    )))
                }
            };
            counts.push(count as i64);
        }
        let mut one = node.clone();
        for arg in &mut one.inputs {
            if arg.name == list {
                arg.arg = Argument::Ints(counts.clone());
            }
        }
        let tiled = eval::evaluate(&one, &|name| (name == input).then(|| c.clone()))
            .map_err(|what| arg_error(format!("evaluating it on constants: {what}")))?;
        let [tiled] = <[eval::Tensor; 1]>::try_from(tiled)
            .map_err(|_| arg_error(format!("{op} evaluated to several tensors")))?;
        let scope = Self::scope(node);
        let elem = self.recorded_elem(self.output_name(node, 0)?)?;
        let values: Vec<f64> = tiled.to_f32().into_iter().map(f64::from).collect();
        let constant = self.g.typed_constant(
            &format!("{scope}.repeat"),
            per_sample.clone(),
            &values,
            elem,
        )?;
        let y = self.over_batch(&scope, &constant, &per_sample, axis, elem)?;
        self.bind_tensor(node, 0, y)?;
        Ok(true)
    }

    /// `constant` (one sample's part, of sizes `dims`) for every sample, as an activation
    /// whose batch merges into dimension `axis`, outermost (torch's order for a constant
    /// expanded or repeated over the batch and then viewed): zeros with the batch first
    /// plus the constant (an Or for bool), the batch moved next to `axis`, then merged.
    pub(super) fn over_batch(
        &mut self,
        scope: &str,
        constant: &Weight,
        dims: &[u64],
        axis: usize,
        elem: ElemType,
    ) -> Result<Tensor, OnnxError> {
        let zeros = self.zeros(scope, dims.len(), elem)?;
        let op = if elem == ElemType::Bool { "Or" } else { "Add" };
        let sum = emit::single(self.g.typed_node(
            op,
            scope,
            vec![zeros.name().to_owned(), constant.name().to_owned()],
            vec![],
            vec![(dims.to_vec(), elem)],
        ));
        let mut perm: Vec<usize> = (1..=axis).collect();
        perm.push(0);
        perm.extend(axis + 1..=dims.len());
        let moved = Tensor::rows(sum, 1).transposed(&mut self.g, scope, &perm)?;
        let mut merged: Vec<Size> = dims.iter().map(|&d| Size::fixed(d)).collect();
        merged[axis] = Size::batch(dims[axis]);
        moved.reshaped(&mut self.g, scope, &merged)
    }

    /// Zeros of element type `elem` with the batch first and `rank` size-1 dimensions
    /// after it, made from the first graph input without reading its values' magnitude
    /// (`x < x` is false for every number, NaN and infinities included).
    pub(super) fn zeros(
        &mut self,
        scope: &str,
        rank: usize,
        elem: ElemType,
    ) -> Result<Value, OnnxError> {
        let mut x = self.carrier.clone();
        for axis in 0..x.shape().len() {
            if x.shape()[axis] != 1 {
                x = self.g.slice(scope, &x, axis, 0..1)?;
            }
        }
        if x.elem() == ElemType::Bool {
            x = emit::cast(&mut self.g, scope, &x, ElemType::Int32);
        }
        let x = self.g.reshape(scope, &x, &vec![1; rank])?;
        let inputs = vec![x.name().to_owned(), x.name().to_owned()];
        let never = self
            .g
            .typed_node(
                "Less",
                scope,
                inputs,
                vec![],
                vec![(vec![1; rank], ElemType::Bool)],
            )
            .swap_remove(0);
        Ok(emit::cast(&mut self.g, scope, &never, elem))
    }
}

/// Why `repeat` along the dimension that carries the batch is refused: torch's result
/// holds `k` copies of the whole batch one after another (its row `i` is input row
/// `i mod N`), so a sample's rows are `N` apart, while an activation of `k·N` rows holds
/// each sample's `k` rows together (the layout every op of the lowering keeps, and the
/// only one a `k·N` dimension means), and a graph output's `dim_param` names the batch,
/// never a multiple of it.
fn batch_repeated(from: &[Size], to: &[Size]) -> OnnxError {
    arg_error(format!(
        "repeat of {} to {} repeats the dimension that carries the batch: torch's result puts the copies of the whole batch one after another (its row i is input row i mod N), a layout no activation of ckpt holds (a dimension of k·N keeps each sample's k rows together) and no output dim_param names (it is the batch, not a multiple of it); export the program at a fixed batch and convert it with `--batch static`",
        tensor::show(from),
        tensor::show(to)
    ))
}
