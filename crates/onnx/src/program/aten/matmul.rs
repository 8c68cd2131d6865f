//! Matrix products: `matmul` and the ops torch defines by it (`mm`, `mv`, `bmm`, `addmm`,
//! `addmv`, `baddbmm`), `outer` and `addr`, and `einsum`. Of two activations, the batch
//! must be one of the leading dimensions the product batches over (on the same dimension
//! of both operands), so the ONNX MatMul is exact; of an activation and a constant (a
//! stored weight, a fixed projection), in either order, the leading dimensions broadcast
//! as torch's do. A product that sums over the batch, or pairs samples with each other or
//! with entries of a constant by their position in the batch, mixes samples and is
//! refused.

use crate::graph::Weight;
use crate::OnnxError;
use ckpt_aten::eval;
use ckpt_aten::program::{Argument, Node};

use super::super::emit::{self, Operand};
use super::super::lower::{Constant, Lowering};
use super::super::tensor::{self, Placement, Size, Tensor};
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

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

    /// `matmul`, `mm`, `bmm`, `mv`, `dot`, `vdot` ([`Multiply::Matmul`]) and `outer`
    /// ([`Multiply::Outer`]): the product of arguments `left` and `right` (schema names)
    /// bound to output 0.
    pub(super) fn product_op(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        how: Multiply,
        [left, right]: [&str; 2],
        scope: &str,
    ) -> Result<(), OnnxError> {
        let y = self.multiply_args(args, how, left, right, scope)?;
        self.bind_product(node, y)
    }

    /// `addmm`, `addmv`, `baddbmm` ([`Multiply::Matmul`]) and `addr` ([`Multiply::Outer`]):
    /// `beta · self + alpha · (left × right)` ([`Lowering::plus_scaled_input`]; `op` names
    /// the op in its errors). `addmm` is what `linear` decomposes into: a batch of rows
    /// times a transposed weight, plus the bias.
    pub(super) fn scaled_product_op(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        how: Multiply,
        [left, right]: [&str; 2],
        op: &str,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let y = self.multiply_args(args, how, left, right, scope)?;
        self.plus_scaled_input(node, args, y, op, scope)
    }

    /// Arguments `left` and `right` multiplied as `how` says.
    fn multiply_args(
        &mut self,
        args: &Args<'_>,
        how: Multiply,
        left: &str,
        right: &str,
        scope: &str,
    ) -> Result<Product, OnnxError> {
        match how {
            Multiply::Matmul => self.matrix_product(args, left, right, scope),
            Multiply::Outer => self.outer_product(args, left, right, scope),
        }
    }

    /// Binds output 0 of `node` to `y`.
    fn bind_product(&mut self, node: &Node, y: Product) -> Result<(), OnnxError> {
        match y {
            Product::Activation(t) => self.bind_tensor(node, 0, t),
            Product::Constant(c) => self.bind_folded(node, 0, c),
        }
    }

    /// torch's `outer` of vectors `left` and `right`: `left.reshape(n, 1) * right`, an
    /// element-wise product (one multiplication per entry, as torch computes it). Of an
    /// activation and a constant; of two constants, computed at export.
    fn outer_product(
        &mut self,
        args: &Args<'_>,
        left: &str,
        right: &str,
        scope: &str,
    ) -> Result<Product, OnnxError> {
        let (a, b) = (
            args.tensor(left).or_shape()?,
            args.tensor(right).or_shape()?,
        );
        match (self.is_constant(a), self.is_constant(b)) {
            (true, true) => {
                let (x, y) = (self.constant_tensor(a)?, self.constant_tensor(b)?);
                Ok(Product::Constant(
                    x.outer(&y).map_err(arg_error)?,
                ))
            }
            (false, true) => {
                let x = self.tensor(a)?;
                let sizes = x.sizes();
                let [n] = sizes[..] else {
                    return Err(arg_error(format!(
                        "outer of {}: its operands are vectors",
                        tensor::show(&sizes)
                    )));
                };
                let column = x.reshaped(&mut self.g, scope, &[n, Size::fixed(1)])?;
                let w = self.constant_weight(b)?;
                let y = column.with_constant(&mut self.g, scope, "Mul", &w, false)?;
                Ok(Product::Activation(y))
            }
            (true, false) => {
                let c = self.constant_tensor(a)?;
                let column = c.reshape(&[-1, 1]).map_err(arg_error)?;
                let w = self.g.folded(
                    &format!("{scope}.column"),
                    column.dims().to_vec(),
                    &column.to_f32(),
                )?;
                let y = self.tensor(b)?;
                let y = y.with_constant(&mut self.g, scope, "Mul", &w, true)?;
                Ok(Product::Activation(y))
            }
            (false, false) => Err(arg_error(
                "outer of two activations is not exported; it is exported when one operand is a constant".into(),
            )),
        }
    }

    /// `beta · self + alpha · y` bound to `node`'s output, for the `addmm`-like `op`
    /// whose product is `y`: `self` is an activation or a constant that broadcasts to the
    /// product without the batch; with `beta = 0` it is not read (as in torch).
    fn plus_scaled_input(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        y: Product,
        op: &str,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let beta = args.float_or("beta", 1.0).or_shape()? as f32;
        let alpha = args.float_or("alpha", 1.0).or_shape()? as f32;
        let mut y = match y {
            Product::Activation(y) => y,
            Product::Constant(p) => {
                // The product of constants, computed at export, added to the activation.
                let p = p.map(|v| alpha * v);
                if beta == 0.0 {
                    return self.bind_folded(node, 0, p);
                }
                let mut s = self.tensor(args.tensor("self").or_shape()?)?;
                if beta != 1.0 {
                    let c = self.g.constant_scalar(&format!("{scope}.beta"), beta);
                    s = s.with_constant(&mut self.g, scope, "Mul", &c, false)?;
                }
                let w =
                    self.g
                        .folded(&format!("{scope}.product"), p.dims().to_vec(), &p.to_f32())?;
                let y = s.with_constant(&mut self.g, scope, "Add", &w, false)?;
                return self.bind_tensor(node, 0, y);
            }
        };
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

    /// torch's `matmul` of arguments `left` and `right` ([`Lowering::multiply`]).
    fn matrix_product(
        &mut self,
        args: &Args<'_>,
        left: &str,
        right: &str,
        scope: &str,
    ) -> Result<Product, OnnxError> {
        let a = self.factor(args.tensor(left).or_shape()?)?;
        let b = self.factor(args.tensor(right).or_shape()?)?;
        self.multiply(a, b, scope)
    }

    /// Program value `name` as an operand of a product.
    fn factor(&mut self, name: &str) -> Result<Factor, OnnxError> {
        Ok(if self.is_constant(name) {
            Factor::Fixed(Fixed::Named {
                name: name.to_owned(),
                constant: self.constant(name)?,
            })
        } else {
            Factor::Activation(self.tensor(name)?)
        })
    }

    /// A constant operand's values.
    fn fixed_tensor(&mut self, c: Fixed) -> Result<eval::Tensor, OnnxError> {
        match c {
            Fixed::Named { name, .. } => self.constant_tensor(&name),
            Fixed::Computed(t) => Ok(t),
        }
    }

    /// Torch's sizes of an operand.
    fn factor_sizes(&self, f: &Factor) -> Result<Vec<Size>, OnnxError> {
        Ok(match f {
            Factor::Activation(t) => t.sizes(),
            Factor::Fixed(Fixed::Named { constant, .. }) => (self.constant_dims(constant)?)
                .into_iter()
                .map(Size::fixed)
                .collect(),
            Factor::Fixed(Fixed::Computed(t)) => t.dims().iter().map(|&d| Size::fixed(d)).collect(),
        })
    }

    /// torch's `matmul` of `a` and `b`: of an activation and a constant in either order
    /// ([`Lowering::constant_product`]), of two activations ([`Lowering::product`]), or
    /// of two constants (computed at export, where the node reads an activation
    /// elsewhere: `addmm`'s `self`).
    fn multiply(&mut self, a: Factor, b: Factor, scope: &str) -> Result<Product, OnnxError> {
        Ok(match (a, b) {
            (Factor::Fixed(p), Factor::Fixed(q)) => {
                let (x, y) = (self.fixed_tensor(p)?, self.fixed_tensor(q)?);
                Product::Constant(eval::Tensor::matmul(&x, &y).map_err(arg_error)?)
            }
            (Factor::Activation(x), Factor::Fixed(c)) => {
                Product::Activation(self.constant_product(&x, c, false, scope)?)
            }
            (Factor::Fixed(c), Factor::Activation(x)) => {
                Product::Activation(self.constant_product(&x, c, true, scope)?)
            }
            (Factor::Activation(x), Factor::Activation(y)) => {
                Product::Activation(self.product(&x, &y, scope)?)
            }
        })
    }

    /// `f` permuted by `order` and viewed as a matrix: its first `rows` dimensions (after
    /// the permutation) merged into one, the rest into the other.
    fn as_matrix(
        &mut self,
        f: Factor,
        order: &[usize],
        rows: usize,
        scope: &str,
    ) -> Result<Factor, OnnxError> {
        Ok(match f {
            Factor::Activation(t) => {
                let t = t.transposed(&mut self.g, scope, order)?;
                let sizes = t.sizes();
                let target = [merged(&sizes[..rows]), merged(&sizes[rows..])];
                Factor::Activation(t.reshaped(&mut self.g, scope, &target)?)
            }
            Factor::Fixed(c) => {
                let t = self.fixed_tensor(c)?.permute(order).map_err(arg_error)?;
                let count = |s: &[u64]| s.iter().product::<u64>() as i64;
                let matrix = [count(&t.dims()[..rows]), count(&t.dims()[rows..])];
                Factor::Fixed(Fixed::Computed(t.reshape(&matrix).map_err(arg_error)?))
            }
        })
    }

    /// `addbmm(self, batch1, batch2, beta, alpha)`: `beta · self + alpha · Σᵢ batch1[i] ×
    /// batch2[i]`, as one matrix product of `batch1` viewed as `[n, B·m]` (its stack moved
    /// among its columns) and `batch2` as `[B·m, p]`, which sums over the stack and each
    /// product's columns at once. A stack that carries the batch would be summed over
    /// samples: refused as mixing them.
    pub(super) fn addbmm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let b1 = self.factor(args.tensor("batch1").or_shape()?)?;
        let b2 = self.factor(args.tensor("batch2").or_shape()?)?;
        for f in [&b1, &b2] {
            if let Factor::Activation(t) = f {
                if t.batch_axis() == Some(0) {
                    return Err(tensor::mixes_samples("addbmm", 0, &t.sizes()));
                }
            }
        }
        let b1 = self.as_matrix(b1, &[1, 0, 2], 1, scope)?;
        let b2 = self.as_matrix(b2, &[0, 1, 2], 2, scope)?;
        let y = self.multiply(b1, b2, scope)?;
        self.plus_scaled_input(node, args, y, "addbmm", scope)
    }

    /// `tensordot(self, other, dims_self, dims_other)`: [`Lowering::contract`].
    pub(super) fn tensordot(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let a = self.factor(args.tensor("self").or_shape()?)?;
        let b = self.factor(args.tensor("other").or_shape()?)?;
        let dims_a = args.optional_ints("dims_self").or_shape()?.unwrap_or(&[]);
        let dims_b = args.optional_ints("dims_other").or_shape()?.unwrap_or(&[]);
        self.contract(node, a, b, [dims_a, dims_b], scope)
    }

    /// `inner(self, other)`: torch's `tensordot` over the last dimension of both
    /// ([`Lowering::contract`]); of a 0-d tensor (torch's product by a number), refused.
    pub(super) fn inner(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let a = self.factor(args.tensor("self").or_shape()?)?;
        let b = self.factor(args.tensor("other").or_shape()?)?;
        let (sa, sb) = (self.factor_sizes(&a)?, self.factor_sizes(&b)?);
        if sa.is_empty() || sb.is_empty() {
            return Err(arg_error(format!(
                "inner of {} and {}: of a 0-d tensor it is a product by a number, which is not exported here; write it as `*`",
                tensor::show(&sa),
                tensor::show(&sb)
            )));
        }
        self.contract(node, a, b, [&[-1], &[-1]], scope)
    }

    /// `a` and `b` contracted over dimensions `dims[0]` and `dims[1]`: both laid out as
    /// matrices as torch's `tensordot` lays them out ([`eval::tensordot_orders`]), one
    /// product, and the result viewed as the free dimensions of `a` then of `b`. A
    /// contracted dimension that carries the batch would sum over samples: refused as
    /// mixing them; so is a dimension of size 1 contracted with a longer one (torch sums
    /// the longer one first).
    fn contract(
        &mut self,
        node: &Node,
        a: Factor,
        b: Factor,
        [dims_a, dims_b]: [&[i64]; 2],
        scope: &str,
    ) -> Result<(), OnnxError> {
        let (sa, sb) = (self.factor_sizes(&a)?, self.factor_sizes(&b)?);
        let (oa, ob) =
            eval::tensordot_orders(sa.len(), sb.len(), dims_a, dims_b).map_err(arg_error)?;
        let (free_a, contracted) = oa.split_at(sa.len() - dims_a.len());
        let (contracted_b, free_b) = ob.split_at(dims_b.len());
        for (sizes, dims) in [(&sa, contracted), (&sb, contracted_b)] {
            if let Some(&d) = dims.iter().find(|&&d| sizes[d].batch) {
                return Err(tensor::mixes_samples("tensordot", d, sizes));
            }
        }
        for (&i, &j) in contracted.iter().zip(contracted_b) {
            if sa[i] != sb[j] {
                return Err(arg_error(format!(
                    "tensordot of {} and {} contracts dimension {i} with dimension {j}, of other sizes: torch sums a dimension of size 1 first, which is not exported",
                    tensor::show(&sa),
                    tensor::show(&sb)
                )));
            }
        }
        let mut out: Vec<Size> = free_a.iter().map(|&d| sa[d]).collect();
        out.extend(free_b.iter().map(|&d| sb[d]));
        let a = self.as_matrix(a, &oa, free_a.len(), scope)?;
        let b = self.as_matrix(b, &ob, contracted_b.len(), scope)?;
        match self.multiply(a, b, scope)? {
            Product::Activation(y) => {
                let y = y.reshaped(&mut self.g, scope, &out)?;
                self.bind_tensor(node, 0, y)
            }
            Product::Constant(c) => self.bind_folded(node, 0, c),
        }
    }

    /// `kron(self, other)` of an activation and a constant: torch's views of both
    /// ([`eval::kron_views`]), their element-wise product (one multiplication per entry,
    /// as torch computes it) and each adjacent pair of dimensions merged.
    pub(super) fn kron(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let (a, b) = (
            args.tensor("self").or_shape()?,
            args.tensor("other").or_shape()?,
        );
        let (x, c, constant_first) = match (self.is_constant(a), self.is_constant(b)) {
            (false, true) => (self.tensor(a)?, self.constant_tensor(b)?, false),
            (true, false) => (self.tensor(b)?, self.constant_tensor(a)?, true),
            _ => {
                return Err(arg_error(
                    "kron of two activations is not exported; it is exported when one operand is a constant".into(),
                ))
            }
        };
        let (xs, one) = (x.sizes(), Size::fixed(1));
        let cs: Vec<Size> = c.dims().iter().map(|&d| Size::fixed(d)).collect();
        let (xv, cv) = if constant_first {
            let (cv, xv) = eval::kron_views(&cs, &xs, one);
            (xv, cv)
        } else {
            eval::kron_views(&xs, &cs, one)
        };
        // The batch's pair merged with a constant's size in front of it would interleave
        // samples (each sample's rows apart), which no placement describes.
        if let Some(at) = xv.iter().position(|s| s.batch) {
            if at % 2 == 1 && cv[at - 1].count != 1 {
                return Err(arg_error(format!(
                    "kron of `{a}` and `{b}`: the constant's size {} stands in front of the batch ({}), so the result interleaves samples, which mixes them; only ops that treat each sample alike are exported",
                    cv[at - 1].count,
                    tensor::show(&xs)
                )));
            }
        }
        let x = x.reshaped(&mut self.g, scope, &xv)?;
        let view: Vec<i64> = cv.iter().map(|s| s.count as i64).collect();
        let c = c.reshape(&view).map_err(arg_error)?;
        let w = self
            .g
            .folded(&format!("{scope}.kron"), c.dims().to_vec(), &c.to_f32())?;
        let y = x.with_constant(&mut self.g, scope, "Mul", &w, constant_first)?;
        let pairs: Vec<Size> = y.sizes().chunks(2).map(merged).collect();
        let y = y.reshaped(&mut self.g, scope, &pairs)?;
        self.bind_tensor(node, 0, y)
    }

    /// Constant values of sizes `dims` as a weight of at least two dimensions: a vector
    /// promoted as torch's `matmul` promotes it (`[1, K]` on the left, `[K, 1]` on the
    /// right).
    fn matrix_weight(
        &mut self,
        scope: &str,
        dims: &[u64],
        values: Vec<f32>,
        left: bool,
    ) -> Result<Weight, OnnxError> {
        let dims = match dims {
            [k] if left => vec![1, *k],
            [k] => vec![*k, 1],
            _ => dims.to_vec(),
        };
        self.g.folded(&format!("{scope}.matrix"), dims, &values)
    }

    /// torch's `matmul` of activation `x` by constant `fixed` (`fixed × x` when
    /// `constant_first`), one ONNX MatMul: a vector is promoted to a matrix as torch
    /// promotes it (a row on the left, a column on the right; the constant at export, the
    /// activation by a Reshape) and the added axis dropped from the result; the leading
    /// dimensions broadcast as torch's do, so the batch may move (a `[N, K]` activation by
    /// a `[S, K, M]` stack is `[S, N, M]`). Refused as mixing samples: the batch on the
    /// contracted dimension (the product would sum over samples), or a leading dimension of
    /// the constant other than 1 beside the batch (each sample would take a matrix of its
    /// own by its position in the batch).
    pub(super) fn constant_product(
        &mut self,
        x: &Tensor,
        fixed: Fixed,
        constant_first: bool,
        scope: &str,
    ) -> Result<Tensor, OnnxError> {
        let (label, dims) = match &fixed {
            Fixed::Named { constant: c, .. } => (format!("`{c}`"), self.constant_dims(c)?),
            Fixed::Computed(t) => ("a constant".to_owned(), t.dims().to_vec()),
        };
        let operands = if constant_first {
            format!("{label} {dims:?} and {}", tensor::show(&x.sizes()))
        } else {
            format!("{} and {label} {dims:?}", tensor::show(&x.sizes()))
        };
        if x.rank() == 0 || dims.is_empty() {
            return Err(arg_error(format!(
                "matrix product of {operands}: torch refuses a 0-d operand"
            )));
        }
        let (vector_left, vector_right) = if constant_first {
            (dims.len() == 1, x.rank() == 1)
        } else {
            (x.rank() == 1, dims.len() == 1)
        };
        let w = match (&fixed, &dims[..]) {
            (Fixed::Named { constant: c, .. }, [_, _, ..]) => self.weight(c)?,
            (Fixed::Named { constant: c, .. }, _) => {
                let values = self.read(c)?;
                self.matrix_weight(scope, &dims, values, constant_first)?
            }
            (Fixed::Computed(t), _) => {
                self.matrix_weight(scope, &dims, t.to_f32(), constant_first)?
            }
        };
        let x = match x.sizes()[..] {
            [k] => {
                let matrix = if constant_first {
                    [k, Size::fixed(1)]
                } else {
                    [Size::fixed(1), k]
                };
                x.clone().reshaped(&mut self.g, scope, &matrix)?
            }
            _ => x.clone(),
        };
        let ws: Vec<Size> = w.dims().iter().map(|&d| Size::fixed(d)).collect();
        let xs = x.sizes();
        let (l, r) = if constant_first {
            (&ws, &xs)
        } else {
            (&xs, &ws)
        };
        let (l_rows, l_depth) = (l[l.len() - 2], l[l.len() - 1]);
        let (r_depth, r_cols) = (r[r.len() - 2], r[r.len() - 1]);
        if l_depth.batch || r_depth.batch {
            return Err(arg_error(format!(
                "the matrix product of {operands} sums over the batch (the dimension it contracts carries it): it mixes samples; only ops that treat each sample alike are exported"
            )));
        }
        if l_depth.count != r_depth.count {
            return Err(arg_error(format!(
                "matrix product of {operands}: the sizes do not multiply"
            )));
        }
        let lead = l.len().max(r.len()) - 2;
        let at = |s: &[Size], i: usize| {
            (i + s.len())
                .checked_sub(lead + 2)
                .map_or(Size::fixed(1), |j| s[j])
        };
        let mut sizes = Vec::with_capacity(lead + 2);
        for i in 0..lead {
            let (p, q) = (at(l, i), at(r, i));
            let size = match (p.batch, q.batch) {
                (true, _) | (_, true) => {
                    let (batch, other) = if p.batch { (p, q) } else { (q, p) };
                    if other.count != 1 {
                        return Err(arg_error(format!(
                            "the matrix product of {operands}: the constant's leading dimension of size {} lines up with the batch, so each sample would take a matrix of its own by its position in the batch, which mixes samples; a constant may have size 1 there only (a program exported at fixed sizes and converted with `--batch static` broadcasts it as torch does)",
                            other.count
                        )));
                    }
                    batch
                }
                _ if p.count == q.count || q.count == 1 => p,
                _ if p.count == 1 => q,
                _ => {
                    return Err(arg_error(format!(
                        "matrix product of {operands}: {}",
                        tensor::unbroadcast(false)
                    )))
                }
            };
            sizes.push(size);
        }
        sizes.extend([l_rows, r_cols]);
        let shape: Vec<u64> = sizes.iter().filter(|s| !s.batch).map(|s| s.count).collect();
        let (xn, wn) = (x.value().name().to_owned(), w.name().to_owned());
        let inputs = if constant_first {
            vec![wn, xn]
        } else {
            vec![xn, wn]
        };
        let value = self
            .g
            .node("MatMul", scope, inputs, vec![], vec![shape])
            .swap_remove(0);
        let y = Tensor::placed(value, &sizes)?;
        // The axes the promotion of a vector added.
        if vector_right {
            sizes.pop();
        }
        if vector_left {
            sizes.remove(lead);
        }
        y.reshaped(&mut self.g, scope, &sizes)
    }

    /// `a × b` over the last two dimensions; the leading ones, the batch among them,
    /// must be equal (in a static export, any two matrices or stacks of them). Operands with the batch in different places are refused as mixing
    /// samples: the batch on a contracted dimension sums over samples, and on a row of one
    /// and a column of the other (timm csatv2's `q @ k.transpose(-1, -2)` of `[B, N]`
    /// rows) pairs every sample with every other.
    pub(super) fn product(
        &mut self,
        a: &Tensor,
        b: &Tensor,
        scope: &str,
    ) -> Result<Tensor, OnnxError> {
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

/// A constant operand of a product: a constant of the program as it is (written as its
/// initializer), or values the export laid out (a stack of matrices viewed as one).
/// How [`Lowering::product_op`] and [`Lowering::scaled_product_op`] multiply their
/// operands.
#[derive(Clone, Copy)]
pub(super) enum Multiply {
    /// torch's `matmul` ([`Lowering::matrix_product`]).
    Matmul,
    /// torch's `outer` of vectors ([`Lowering::outer_product`]).
    Outer,
}

pub(super) enum Fixed {
    Named { name: String, constant: Constant },
    Computed(eval::Tensor),
}

/// An operand of a product.
enum Factor {
    Activation(Tensor),
    Fixed(Fixed),
}

/// A matrix product's value: an activation, or the product of constants computed at export.
enum Product {
    Activation(Tensor),
    Constant(eval::Tensor),
}

/// Sizes merged into one (a view's): their counts multiplied, the batch if one carries it.
fn merged(sizes: &[Size]) -> Size {
    sizes.iter().fold(Size::fixed(1), |m, s| Size {
        count: m.count * s.count,
        batch: m.batch || s.batch,
    })
}
