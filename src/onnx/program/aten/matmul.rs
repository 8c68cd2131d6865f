//! Matrix products: `matmul`, `bmm` and `baddbmm`. The batch must be one of the leading
//! dimensions the product batches over (on the same dimension of both operands, the same
//! number of times), so the ONNX MatMul is exact; a product over the batch dimension mixes
//! samples. Leading dimensions must agree: torch's broadcasting of them is not exported.

use crate::aten::program::{Argument, Node};
use crate::onnx::graph::{Value, Weight};
use crate::onnx::OnnxError;

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::super::tensor::{self, Placement, Size, Tensor};
use super::{arg_error, OrShape};
use crate::aten::args::Args;

impl<'p> Lowering<'p, '_> {
    /// `einsum(equation, [activation, constant])` with one letter per dimension and no
    /// ellipsis (MViT's and SAM's relative positions, `"bhwc,hkc->bhwk"`): letters in
    /// both operands and the output are batched over, letters in both but not the output
    /// are summed, and every other letter is kept. The activation's dimensions are moved
    /// to `[shared, kept, summed]` and viewed as `[shared, M, K]` (the batch folded into
    /// `M`), the constant is laid out as `[shared, K, kept]` at export, one MatMul
    /// multiplies them, and the result is viewed and moved to the output's order.
    pub(super) fn einsum(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let equation = match args.get("equation") {
            Some(Argument::String(e)) => e.replace(' ', ""),
            _ => return Err(arg_error("argument `equation` is not a string".into())),
        };
        let unsupported = || {
            arg_error(format!(
                "einsum {equation:?} is exported for one operand whose letters it permutes, or two operands (an activation and a constant, or two activations batched over the batch's letter), one letter per dimension, no ellipsis and no letter summed within one operand"
            ))
        };
        let (inputs, output) = equation.split_once("->").ok_or_else(unsupported)?;
        if let [x_name] = args.tensors("tensors").or_shape()? {
            // One operand and the same letters in another order (XLNet's `"ijbn->bnij"`):
            // a permutation.
            let x = self.tensor(x_name)?;
            let mut sorted_in: Vec<char> = inputs.chars().collect();
            let mut sorted_out: Vec<char> = output.chars().collect();
            sorted_in.sort_unstable();
            sorted_out.sort_unstable();
            let distinct = sorted_in.windows(2).all(|w| w[0] != w[1]);
            if !distinct || sorted_in != sorted_out || x.rank() != inputs.len() {
                return Err(unsupported());
            }
            let order: Vec<usize> = (output.chars())
                .filter_map(|ch| inputs.chars().position(|x| x == ch))
                .collect();
            let y = x.transposed(&mut self.g, scope, &order)?;
            return self.bind_tensor(node, 0, y);
        }
        let (la, lc) = inputs.split_once(',').ok_or_else(unsupported)?;
        let [a_name, c_name] = args.tensors("tensors").or_shape()? else {
            return Err(unsupported());
        };
        let distinct = |s: &str| {
            let mut seen: Vec<char> = s.chars().collect();
            seen.sort_unstable();
            seen.dedup();
            seen.len() == s.len() && s.chars().all(|c| c.is_ascii_alphabetic())
        };
        if !(distinct(la) && distinct(lc) && distinct(output)) {
            return Err(unsupported());
        }
        if !self.is_constant(c_name) {
            let (a, b) = (self.tensor(a_name)?, self.tensor(c_name)?);
            let y = self
                .einsum_activations(scope, [la, lc, output], a, b)?
                .ok_or_else(unsupported)?;
            return self.bind_tensor(node, 0, y);
        }
        let a = self.tensor(a_name)?;
        let c = self.constant_tensor(c_name)?;
        if a.rank() != la.len() || c.rank() != lc.len() {
            return Err(unsupported());
        }
        // A constant of size 1 on the batch's letter (the same for every sample, expanded
        // over the batch: XLNet's relative positions) broadcasts over it, so that letter
        // is the activation's alone.
        let batch_letter = a.batch_axis().and_then(|k| la.chars().nth(k));
        let (lc, c) = match batch_letter.and_then(|b| lc.chars().position(|ch| ch == b)) {
            Some(at) if c.dims()[at] == 1 => {
                let dims: Vec<i64> = (c.dims().iter().enumerate())
                    .filter(|&(i, _)| i != at)
                    .map(|(_, &d)| d as i64)
                    .collect();
                let letters: String = lc.chars().filter(|&ch| Some(ch) != batch_letter).collect();
                (letters, c.reshape(&dims).map_err(arg_error)?)
            }
            _ => (lc.to_owned(), c),
        };
        let lc = lc.as_str();
        let in_out = |ch: char| output.contains(ch);
        let shared: Vec<char> = la
            .chars()
            .filter(|&ch| lc.contains(ch) && in_out(ch))
            .collect();
        let summed: Vec<char> = la
            .chars()
            .filter(|&ch| lc.contains(ch) && !in_out(ch))
            .collect();
        let kept_a: Vec<char> = la.chars().filter(|&ch| !lc.contains(ch)).collect();
        let kept_c: Vec<char> = lc.chars().filter(|&ch| !la.contains(ch)).collect();
        let covered = output.chars().all(|ch| la.contains(ch) || lc.contains(ch))
            && kept_a.iter().chain(&kept_c).all(|&ch| in_out(ch));
        if !covered || summed.is_empty() {
            return Err(unsupported());
        }
        let pos = |s: &str, ch: char| s.chars().position(|x| x == ch).unwrap_or(0);
        // The activation as [shared, kept, summed], viewed as [shared, M, K].
        let order_a: Vec<usize> = shared
            .iter()
            .chain(&kept_a)
            .chain(&summed)
            .map(|&ch| pos(la, ch))
            .collect();
        let (a_axis, a_sizes) = (a.batch_axis(), a.sizes());
        let moved = a.transposed(&mut self.g, scope, &order_a)?;
        let sizes = moved.sizes();
        let (s_sizes, rest) = sizes.split_at(shared.len());
        let (kept_sizes, k_sizes) = rest.split_at(kept_a.len());
        if let Some(a_axis) = a_axis.filter(|_| s_sizes.iter().chain(k_sizes).any(|s| s.batch)) {
            return Err(tensor::mixes_samples("einsum", a_axis, &a_sizes));
        }
        let rows = kept_sizes.iter().fold(Size::fixed(1), |m, s| Size {
            count: m.count * s.count,
            batch: m.batch || s.batch,
        });
        let depth: u64 = k_sizes.iter().map(|s| s.count).product();
        let mut matrix: Vec<Size> = s_sizes.to_vec();
        matrix.extend([rows, Size::fixed(depth)]);
        let x = moved.reshaped(&mut self.g, scope, &matrix)?;
        // The constant as [shared, K, kept] at export.
        let order_c: Vec<usize> = shared
            .iter()
            .chain(&summed)
            .chain(&kept_c)
            .map(|&ch| pos(lc, ch))
            .collect();
        let cols: u64 = kept_c.iter().map(|&ch| c.dims()[pos(lc, ch)]).product();
        let mut dims: Vec<i64> = s_sizes.iter().map(|s| s.count as i64).collect();
        dims.extend([depth as i64, cols as i64]);
        let laid = c
            .permute(&order_c)
            .and_then(|t| t.reshape(&dims))
            .map_err(arg_error)?;
        let w = self.g.folded(
            &format!("{scope}.einsum"),
            laid.dims().to_vec(),
            &laid.to_f32(),
        )?;
        let mut shape = x.value().shape().to_vec();
        if let Some(last) = shape.last_mut() {
            *last = cols;
        }
        let inputs = vec![x.value().name().to_owned(), w.name().to_owned()];
        let product = self
            .g
            .node("MatMul", scope, inputs, vec![], vec![shape])
            .swap_remove(0);
        let y = x.with_value(product)?;
        // Back to [shared, kept_a, kept_c], then the output's order.
        let mut unfolded: Vec<Size> = s_sizes.to_vec();
        unfolded.extend(kept_sizes);
        unfolded.extend(kept_c.iter().map(|&ch| Size::fixed(c.dims()[pos(lc, ch)])));
        let y = y.reshaped(&mut self.g, scope, &unfolded)?;
        let now: String = shared.iter().chain(&kept_a).chain(&kept_c).collect();
        let order_out: Vec<usize> = output.chars().map(|ch| pos(&now, ch)).collect();
        let y = y.transposed(&mut self.g, scope, &order_out)?;
        self.bind_tensor(node, 0, y)
    }

    /// `einsum` of two activations (`[la, lb, output]`, letters distinct within each; UNETR's
    /// attention, `"blxd,blyd->blxy"`): the batch on one letter of both, kept in the
    /// output, so it is batched over; letters of both operands in the output batched
    /// over, letters of both not in it summed, letters of one kept (a letter of one
    /// operand only and not in the output, or sizes that differ, give `None`). Each
    /// operand is moved to `[shared, kept, summed]` / `[shared, summed, kept]` and viewed
    /// as matrices, one MatMul multiplies them, and the result is viewed and moved to the
    /// output's order.
    fn einsum_activations(
        &mut self,
        scope: &str,
        [la, lb, output]: [&str; 3],
        a: Tensor,
        b: Tensor,
    ) -> Result<Option<Tensor>, OnnxError> {
        if a.rank() != la.len() || b.rank() != lb.len() {
            return Ok(None);
        }
        let letter = |s: &str, k: Option<usize>| k.and_then(|k| s.chars().nth(k));
        let batch = letter(la, a.batch_axis());
        let (a_sizes, b_sizes) = (a.sizes(), b.sizes());
        let pos = |s: &str, ch: char| s.chars().position(|x| x == ch).unwrap_or(0);
        let agree = la
            .chars()
            .filter(|&ch| lb.contains(ch))
            .all(|ch| a_sizes[pos(la, ch)] == b_sizes[pos(lb, ch)]);
        let in_out = |ch: char| output.contains(ch);
        let shared: Vec<char> = la
            .chars()
            .filter(|&ch| lb.contains(ch) && in_out(ch))
            .collect();
        let summed: Vec<char> = la
            .chars()
            .filter(|&ch| lb.contains(ch) && !in_out(ch))
            .collect();
        let kept_a: Vec<char> = la.chars().filter(|&ch| !lb.contains(ch)).collect();
        let kept_b: Vec<char> = lb.chars().filter(|&ch| !la.contains(ch)).collect();
        let covered = output.len() == shared.len() + kept_a.len() + kept_b.len()
            && kept_a.iter().chain(&kept_b).all(|&ch| in_out(ch));
        // A static export has no batch to batch over.
        let batched = (a.placement(), b.placement()) == (Placement::Static, Placement::Static)
            || (batch.is_some_and(|ch| shared.contains(&ch))
                && batch == letter(lb, b.batch_axis()));
        if !agree || !covered || !batched {
            return Ok(None);
        }
        let order = |s: &str, groups: [&[char]; 3]| -> Vec<usize> {
            groups
                .iter()
                .flat_map(|g| g.iter())
                .map(|&ch| pos(s, ch))
                .collect()
        };
        let count = |sizes: &[Size], s: &str, group: &[char]| -> u64 {
            group.iter().map(|&ch| sizes[pos(s, ch)].count).product()
        };
        let s_sizes: Vec<Size> = shared.iter().map(|&ch| a_sizes[pos(la, ch)]).collect();
        let (m, k, n) = (
            count(&a_sizes, la, &kept_a),
            count(&a_sizes, la, &summed),
            count(&b_sizes, lb, &kept_b),
        );
        let matrix = |rows: u64, cols: u64| {
            let mut v = s_sizes.clone();
            v.extend([Size::fixed(rows), Size::fixed(cols)]);
            v
        };
        let x = a
            .transposed(&mut self.g, scope, &order(la, [&shared, &kept_a, &summed]))?
            .reshaped(&mut self.g, scope, &matrix(m, k))?;
        let w = b
            .transposed(&mut self.g, scope, &order(lb, [&shared, &summed, &kept_b]))?
            .reshaped(&mut self.g, scope, &matrix(k, n))?;
        let y = self.product(&x, &w, scope)?;
        let mut unfolded = s_sizes.clone();
        unfolded.extend(kept_a.iter().map(|&ch| a_sizes[pos(la, ch)]));
        unfolded.extend(kept_b.iter().map(|&ch| b_sizes[pos(lb, ch)]));
        let y = y.reshaped(&mut self.g, scope, &unfolded)?;
        let now: String = shared.iter().chain(&kept_a).chain(&kept_b).collect();
        let order_out: Vec<usize> = output.chars().map(|ch| pos(&now, ch)).collect();
        Ok(Some(y.transposed(&mut self.g, scope, &order_out)?))
    }

    /// `matmul(self, other)`: two activations of one rank (at least 3), or an activation
    /// (at least 2-D, the batch not last) times a constant `[K, N]` matrix.
    pub(super) fn matmul(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let y = self.matrix_product(args, "self", "other", scope)?;
        self.bind_tensor(node, 0, y)
    }

    /// `mm(self, mat2)`: [`Lowering::matmul`] of two matrices.
    pub(super) fn mm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let y = self.matrix_product(args, "self", "mat2", scope)?;
        self.bind_tensor(node, 0, y)
    }

    /// `addmm(self, mat1, mat2, beta, alpha)`: `beta · self + alpha · (mat1 × mat2)`, the
    /// product as [`Lowering::matmul`]'s (what `linear` decomposes into: a batch of rows
    /// times a transposed weight, plus the bias).
    pub(super) fn addmm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let y = self.matrix_product(args, "mat1", "mat2", scope)?;
        self.plus_scaled_input(node, args, y, "addmm", scope)
    }

    /// Argument `left` times argument `right`: two activations of one rank (at least 3),
    /// or an activation (at least 2-D, the batch not last) times a constant `[K, N]` matrix
    /// or a stack of them.
    fn matrix_product(
        &mut self,
        args: &Args<'_>,
        left: &str,
        right: &str,
        scope: &str,
    ) -> Result<Tensor, OnnxError> {
        let a = self.tensor(args.tensor(left).or_shape()?)?;
        let other = args.tensor(right).or_shape()?;
        Ok(if self.is_constant(other) {
            let w = self.weight(&self.constant(other)?)?;
            if a.rank() < 2 {
                return Err(arg_error(format!(
                    "matmul of {} by `{}`: a vector is not exported",
                    tensor::show(&a.sizes()),
                    w.name()
                )));
            }
            a.sample_axis(a.rank() - 1, "matmul")?;
            let y = if w.dims().len() > 2 {
                self.batched_matmul(&a, &w, scope)?
            } else {
                self.g.matmul(scope, a.value(), &w)?
            };
            a.with_value(y)?
        } else {
            let b = self.tensor(other)?;
            self.product(&a, &b, scope)?
        })
    }

    /// `MatMul` of activation `a` `[…, M, K]` by a stack of constant matrices `[…, K, N]`
    /// (torchvision MViT's per-frame relative positions): the constant's leading sizes must
    /// each be 1 or the activation's (not the batch's), so the result keeps `a`'s sizes but
    /// the last.
    fn batched_matmul(&mut self, a: &Tensor, w: &Weight, scope: &str) -> Result<Value, OnnxError> {
        let sizes = a.sizes();
        let dims = w.dims();
        let (lead, [k, n]) = dims.split_at(dims.len() - 2) else {
            return Err(arg_error(format!(
                "`{}` is not a stack of matrices",
                w.name()
            )));
        };
        let fits = dims.len() <= sizes.len()
            && sizes[sizes.len() - 1].count == *k
            && lead
                .iter()
                .zip(&sizes[sizes.len() - dims.len()..])
                .all(|(&d, s)| d == 1 || (!s.batch && s.count == d));
        if !fits {
            return Err(arg_error(format!(
                "matmul of {} by `{}` {dims:?}: only a stack of matrices matching the activation's leading sizes (not the batch) is exported",
                tensor::show(&sizes),
                w.name()
            )));
        }
        let mut shape = a.value().shape().to_vec();
        if let Some(last) = shape.last_mut() {
            *last = *n;
        }
        let inputs = vec![a.value().name().to_owned(), w.name().to_owned()];
        Ok(self
            .g
            .node("MatMul", scope, inputs, vec![], vec![shape])
            .swap_remove(0))
    }

    /// `bmm(self, mat2)`: `[N, n, m] × [N, m, p]`.
    pub(super) fn bmm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let a = self.tensor(args.tensor("self").or_shape()?)?;
        let b = self.tensor(args.tensor("mat2").or_shape()?)?;
        let y = self.product(&a, &b, scope)?;
        self.bind_tensor(node, 0, y)
    }

    /// `baddbmm(self, batch1, batch2, beta, alpha)`: `beta · self + alpha · (batch1 ×
    /// batch2)`; `self` is an activation or a constant that broadcasts to the product
    /// without the batch; with `beta = 0` it is not read (as in torch).
    pub(super) fn baddbmm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let a = self.tensor(args.tensor("batch1").or_shape()?)?;
        let b = self.tensor(args.tensor("batch2").or_shape()?)?;
        let y = self.product(&a, &b, scope)?;
        self.plus_scaled_input(node, args, y, "baddbmm", scope)
    }

    /// `beta · self + alpha · y` bound to `node`'s output, for the `addmm`-like `op`
    /// whose product is `y`: `self` is an activation or a constant that broadcasts to the
    /// product without the batch; with `beta = 0` it is not read (as in torch).
    fn plus_scaled_input(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        mut y: Tensor,
        op: &str,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let beta = args.float_or("beta", 1.0).or_shape()? as f32;
        let alpha = args.float_or("alpha", 1.0).or_shape()? as f32;
        if alpha != 1.0 {
            let c = self.g.constant_scalar(&format!("{scope}.alpha"), alpha);
            y = y.with_constant(&mut self.g, scope, "Mul", &c, false)?;
        }
        if beta == 0.0 {
            return self.bind_tensor(node, 0, y);
        }
        let input = args.tensor("self").or_shape()?;
        let y = if self.is_constant(input) {
            let mut c = self.weight(&self.constant(input)?)?;
            if beta != 1.0 {
                let values: Vec<f32> = self.read(&self.constant(input)?)?;
                let scaled: Vec<f32> = values.iter().map(|v| v * beta).collect();
                c = self
                    .g
                    .weight(&format!("{}.beta", c.name()), c.dims().to_vec(), &scaled)?;
            }
            y.with_constant(&mut self.g, scope, "Add", &c, false)?
        } else {
            let mut s = self.tensor(input)?;
            if !s.same_batch(&y) {
                return Err(arg_error(format!(
                    "{op} adds {} to a product of {}",
                    tensor::show(&s.sizes()),
                    tensor::show(&y.sizes())
                )));
            }
            if beta != 1.0 {
                let c = self.g.constant_scalar(&format!("{scope}.beta"), beta);
                s = s.with_constant(&mut self.g, scope, "Mul", &c, false)?;
            }
            let sum = emit::binary(
                &mut self.g,
                "Add",
                scope,
                Operand::Activation(s.value()),
                Operand::Activation(y.value()),
            )?;
            y.with_value(sum)?
        };
        self.bind_tensor(node, 0, y)
    }

    /// `a × b` over the last two dimensions; the leading ones, the batch among them,
    /// must be equal (in a static export, any two matrices or stacks of them). Operands with the batch in different places are refused as mixing
    /// samples: the batch on a contracted dimension sums over samples, and on a row of one
    /// and a column of the other (timm csatv2's `q @ k.transpose(-1, -2)` of `[B, N]`
    /// rows) pairs every sample with every other.
    fn product(&mut self, a: &Tensor, b: &Tensor, scope: &str) -> Result<Tensor, OnnxError> {
        if let (Some(i), Some(j)) = (a.batch_axis(), b.batch_axis()) {
            if !a.same_batch(b) {
                let contracted_b = b.rank().saturating_sub(2);
                let how = if i + 1 == a.rank() || j == contracted_b {
                    "sums over the batch"
                } else {
                    "pairs each sample of one operand with every sample of the other"
                };
                return Err(arg_error(format!(
                    "the matrix product of {} and {} {how}: it mixes samples; only ops that treat each sample alike are exported",
                    tensor::show(&a.sizes()),
                    tensor::show(&b.sizes())
                )));
            }
        }
        if a.value().shape().len() < 2 || !a.same_batch(b) {
            return Err(arg_error(format!(
                "matrix product of {} and {}: operands of equal rank with two dimensions besides the batch (on the same dimension in both) are exported",
                tensor::show(&a.sizes()),
                tensor::show(&b.sizes())
            )));
        }
        a.sample_axis(a.rank() - 1, "matmul")?;
        a.sample_axis(a.rank() - 2, "matmul")?;
        let y = self.g.matmul_activations(scope, a.value(), b.value())?;
        a.with_value(y)
    }
}
