//! Solves by a factored matrix and the matrices of a factorisation's packed form
//! ([`ckpt_aten::solve`]): `triangular_solve`, `linalg_solve_triangular`,
//! `cholesky_solve` and `lu_solve` as one MatMul of the right-hand side by the solve's
//! matrix, computed at export for every matrix of a constant (its leading dimensions
//! broadcast with the activation's as torch's do), or, for a triangular or Cholesky
//! factor computed at run time, its program unrolled over the factor's entries (at most
//! 8×8, as the inverse is); `lu_unpack` of activation factors as constant masks and the
//! identity, its permutation from constant pivots; `ormqr` of activation reflectors as
//! each reflector applied to the other operand in turn (two MatMuls, a scale and a
//! subtraction), and their Householder product (`linalg_householder_product`, `orgqr`) as
//! the same applied to the identity's first columns. An LU solve by factors computed at
//! run time is refused ([`refused::SOLVE_BY_ACTIVATION`]).

use crate::elem::ElemType;
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::eval;
use ckpt_aten::program::Node;
use ckpt_aten::refused;
use ckpt_aten::solve::{self, Solve};

use super::super::emit::{self, Operand};
use super::super::lower::Lowering;
use super::super::tensor::{self, Tensor};
use super::matmul::Fixed;
use super::registry::aten_name;
use super::series::Graph;
use super::{arg_error, OrShape};

/// A constant's values with its sizes, read for a solve.
struct Matrices {
    dims: Vec<u64>,
    values: Vec<f64>,
    /// The order of its matrices (square).
    n: usize,
}

impl Lowering<'_, '_> {
    /// Argument `name` of `op` as a float32 activation of rank 2 at least.
    fn float_matrices(
        &mut self,
        args: &Args<'_>,
        name: &str,
        op: &str,
    ) -> Result<Tensor, OnnxError> {
        let x = self.tensor(args.tensor(name).or_shape()?)?;
        if x.value().elem() != ElemType::Float32 || x.rank() < 2 {
            return Err(arg_error(format!(
                "{op} of a rank-{} {} `{name}` is not exported (float32 matrices)",
                x.rank(),
                x.value().elem()
            )));
        }
        Ok(x)
    }

    /// The square float matrices of constant argument `name` of `op`; refused when the
    /// argument is computed at run time, or its matrices are empty.
    fn constant_matrices(
        &mut self,
        args: &Args<'_>,
        name: &str,
        op: &str,
    ) -> Result<Matrices, OnnxError> {
        let t = self.solve_constant(args, name, &format!("{op} by `{name}`,"))?;
        let dims = t.dims().to_vec();
        let r = dims.len();
        if r < 2 || dims[r - 1] != dims[r - 2] || matches!(t.values(), eval::Values::I64(_)) {
            return Err(arg_error(format!(
                "{op} by `{name}` of sizes {dims:?} (torch takes square float matrices)"
            )));
        }
        if dims[r - 1] == 0 {
            return Err(arg_error(format!(
                "{op} by empty matrices {dims:?}, which ATC does not compile"
            )));
        }
        let values = t.to_f32().into_iter().map(f64::from).collect();
        Ok(Matrices {
            n: dims[r - 1] as usize,
            dims,
            values,
        })
    }

    /// The constant argument `name` of a solve, refused as [`refused::SOLVE_BY_ACTIVATION`]
    /// when the program computes it (`what`: the argument as the refusal names it).
    fn solve_constant(
        &mut self,
        args: &Args<'_>,
        name: &str,
        what: &str,
    ) -> Result<eval::Tensor, OnnxError> {
        let value = args.tensor(name).or_shape()?;
        if !self.is_constant(value) {
            return Err(arg_error(format!(
                "{what} computed at run time: {}",
                refused::SOLVE_BY_ACTIVATION
            )));
        }
        self.constant_tensor(value)
    }

    /// The integer values of constant argument `name` of `op`, `lead` sizes then one per
    /// pivot; refused when computed at run time.
    fn constant_pivots(
        &mut self,
        args: &Args<'_>,
        name: &str,
        op: &str,
        lead: &[u64],
    ) -> Result<(Vec<i64>, usize), OnnxError> {
        let t = self.solve_constant(args, name, &format!("{op} by pivots `{name}`"))?;
        let dims = t.dims();
        let Some((&count, _)) = dims.split_last().filter(|(_, front)| *front == lead) else {
            return Err(arg_error(format!(
                "{op}'s pivots `{name}` of sizes {dims:?} for matrices whose leading sizes are {lead:?} (torch takes one row of pivots per matrix)"
            )));
        };
        Ok((t.to_i64().or_shape()?, count as usize))
    }

    /// `solve`'s matrix for every matrix of `m` (with its rows of 1-based `pivots`), as
    /// float32 of `m`'s sizes.
    fn solve_matrices(
        &self,
        op: &str,
        solve: Solve,
        m: &Matrices,
        pivots: &[i64],
    ) -> Result<eval::Tensor, OnnxError> {
        let n = m.n;
        let count = m.values.len() / (n * n).max(1);
        let mut out = Vec::with_capacity(m.values.len());
        for b in 0..count {
            let rows = if pivots.is_empty() {
                &[][..]
            } else {
                &pivots[b * n..(b + 1) * n]
            };
            let inverse = solve
                .matrix(&m.values[b * n * n..(b + 1) * n * n], rows, n)
                .map_err(|why| arg_error(format!("{op} by matrix {b}: {why}")))?;
            out.extend(inverse.into_iter().map(|v| v as f32));
        }
        eval::Tensor::f32(m.dims.clone(), out).or_shape()
    }

    /// `solve`'s matrices for argument `name` of `op`: computed at export of a constant
    /// ([`Lowering::solve_matrices`]), or the program ([`Solve::program`]) unrolled over
    /// the entries of an activation's matrices (at most 8×8, neither dimension the batch),
    /// as the inverse is; an LU solve by run-time factors is refused.
    fn solve_by(
        &mut self,
        args: &Args<'_>,
        name: &str,
        op: &str,
        solve: Solve,
        scope: &str,
    ) -> Result<By, OnnxError> {
        if self.is_constant(args.tensor(name).or_shape()?) {
            let m = self.constant_matrices(args, name, op)?;
            return Ok(By::Constant(self.solve_matrices(op, solve, &m, &[])?));
        }
        let (x, [n, _]) = self.matrix_input(args, name, op, true)?;
        let (like, terms) = self.entry_terms(scope, &x, op, n as u64, n as u64)?;
        let inverse = {
            let mut graph = Graph::new(&mut self.g, scope);
            solve.program(&mut graph, &terms, n).or_shape()?
        };
        Ok(By::Activation(self.assemble(scope, &inverse, n, n, &like)?))
    }

    /// Binds output 0 of `node` to the solution: `M·B` (`left`) or `B·M` of the solve's
    /// matrices `by` and the right-hand side `rhs`, refused unless torch recorded float32.
    fn bind_solution(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        by: By,
        [rhs, left]: [&str; 2],
    ) -> Result<(), OnnxError> {
        let op = aten_name(node);
        let recorded = self.recorded_elem(self.output_name(node, 0)?)?;
        if recorded != ElemType::Float32 {
            return Err(arg_error(format!(
                "{op} giving {recorded} is not exported (float32 only)"
            )));
        }
        let left = left == "left";
        let b_name = args.tensor(rhs).or_shape()?;
        let y = match (by, self.is_constant(b_name)) {
            (By::Constant(m), false) => {
                let b = self.float_matrices(args, rhs, op)?;
                self.constant_product(&b, Fixed::Computed(m), left, scope)?
            }
            (By::Activation(m), true) => {
                let b = self.constant_tensor(b_name)?;
                self.constant_product(&m, Fixed::Computed(b), !left, scope)?
            }
            (By::Activation(m), false) => {
                let b = self.float_matrices(args, rhs, op)?;
                if left {
                    self.product(&m, &b, scope)?
                } else {
                    self.product(&b, &m, scope)?
                }
            }
            (By::Constant(m), true) => {
                let b = self.constant_tensor(b_name)?;
                let x = if left {
                    eval::Tensor::matmul(&m, &b)
                } else {
                    eval::Tensor::matmul(&b, &m)
                };
                return self.bind_folded(node, 0, x.or_shape()?);
            }
        };
        self.bind_tensor(node, 0, y)
    }

    /// `triangular_solve(self, A, upper, transpose, unitriangular)`: the solution, and
    /// torch's copy of `A` broadcast to the solution's leading sizes (the same for every
    /// sample).
    pub(super) fn triangular_solve(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let op = aten_name(node);
        let solve = Solve::Triangular {
            upper: args.bool("upper").or_shape()?,
            transpose: args.bool("transpose").or_shape()?,
            unitriangular: args.bool("unitriangular").or_shape()?,
        };
        let by = self.solve_by(args, "A", op, solve, scope)?;
        self.bind_solution(node, args, scope, by, ["self", "left"])?;
        // torch's copy of A, broadcast to the solution's leading sizes.
        let a = args.tensor("A").or_shape()?;
        let recorded = self.recorded_sizes(node, 1)?;
        if !self.is_constant(a) {
            let x = self.tensor(a)?;
            if x.sizes() != recorded {
                return Err(arg_error(format!(
                    "{op}'s copy of `A` {} broadcast to {} is not exported (an activation `A` of the solution's leading sizes only)",
                    tensor::show(&x.sizes()),
                    tensor::show(&recorded)
                )));
            }
            return self.bind_tensor(node, 1, x);
        }
        let dims: Vec<u64> = recorded
            .iter()
            .map(|s| if s.batch { 1 } else { s.count })
            .collect();
        let copy = self.constant_tensor(a)?.expand(&dims).or_shape()?;
        let uniform = recorded.iter().any(|s| s.batch);
        self.bind_computed(node, 1, copy, uniform)
    }

    /// `linalg_solve_triangular(self, B, *, upper, left, unitriangular)`: `A⁻¹·B`
    /// (`left`) or `B·A⁻¹`.
    pub(super) fn solve_triangular(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let op = aten_name(node);
        let solve = Solve::Triangular {
            upper: args.bool("upper").or_shape()?,
            transpose: false,
            unitriangular: args.bool("unitriangular").or_shape()?,
        };
        let side = if args.bool("left").or_shape()? {
            "left"
        } else {
            "right"
        };
        let by = self.solve_by(args, "self", op, solve, scope)?;
        self.bind_solution(node, args, scope, by, ["B", side])
    }

    /// `cholesky_solve(self, input2, upper)`.
    pub(super) fn cholesky_solve(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let op = aten_name(node);
        let solve = Solve::Cholesky {
            upper: args.bool("upper").or_shape()?,
        };
        let by = self.solve_by(args, "input2", op, solve, scope)?;
        self.bind_solution(node, args, scope, by, ["self", "left"])
    }

    /// `lu_solve(self, LU_data, LU_pivots)`.
    pub(super) fn lu_solve(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let op = aten_name(node);
        let lu = self.constant_matrices(args, "LU_data", op)?;
        let lead = lu.dims[..lu.dims.len() - 2].to_vec();
        let (pivots, count) = self.constant_pivots(args, "LU_pivots", op, &lead)?;
        if count != lu.n {
            return Err(arg_error(format!(
                "{op} with {count} pivots per {n}×{n} matrix (torch takes {n})",
                n = lu.n
            )));
        }
        let matrices = self.solve_matrices(op, Solve::Lu, &lu, &pivots)?;
        self.bind_solution(node, args, scope, By::Constant(matrices), ["self", "left"])
    }

    /// `lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots)` of `rows`×`cols`
    /// activation factors: `P` (`rows`×`rows`) from constant pivots, computed at export;
    /// `L` (`rows`×`k`, `k = min(rows, cols)`) the factors' first `k` columns times the
    /// strictly lower mask plus the identity; `U` (`k`×`cols`) their first `k` rows times
    /// the upper mask. The matrices may not carry the batch (a mask by position would
    /// mix samples), nor may the pivots give each sample a permutation of its own.
    pub(super) fn lu_unpack(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let op = aten_name(node);
        if !args.bool("unpack_data").or_shape()? || !args.bool("unpack_pivots").or_shape()? {
            return Err(arg_error(format!(
                "{op} without unpacking the data or the pivots: torch returns empty tensors for them, which ATC does not compile"
            )));
        }
        let x = self.float_matrices(args, "LU_data", op)?;
        let rank = x.rank();
        if let Some(batch) = x.batch_axis().filter(|&a| a + 2 >= rank) {
            return Err(tensor::mixes_samples(op, batch, &x.sizes()));
        }
        let sizes = x.sizes();
        let (rows, cols) = (sizes[rank - 2].count, sizes[rank - 1].count);
        let k = rows.min(cols);
        if k == 0 {
            return Err(arg_error(format!(
                "{op} of empty matrices ({}), which ATC does not compile",
                tensor::show(&sizes)
            )));
        }
        // P, from the pivots alone: the same for every sample, or refused.
        let name = args.tensor("LU_pivots").or_shape()?;
        if self.is_constant(name) {
            let dims = self.constant_tensor(name)?.dims().to_vec();
            if let Some(why) = tensor::constant_meets_batch(op, name, &dims, &sizes[..rank - 1]) {
                return Err(arg_error(why));
            }
        }
        let lead: Vec<u64> = sizes[..rank - 2].iter().map(|s| s.count).collect();
        let (pivots, count) = self.constant_pivots(args, "LU_pivots", op, &lead)?;
        if count as u64 != k {
            return Err(arg_error(format!(
                "{op} with {count} pivots per {rows}×{cols} matrix (torch takes {k})"
            )));
        }
        let r = rows as usize;
        let mut p = Vec::with_capacity(pivots.len() / count * r * r);
        for row in pivots.chunks(count) {
            let order = solve::permutation(row, r).or_shape()?;
            p.extend(
                solve::permutation_matrix(&order)
                    .into_iter()
                    .map(|v| v as f32),
            );
        }
        let mut p_dims: Vec<u64> = sizes[..rank - 2]
            .iter()
            .map(|s| if s.batch { 1 } else { s.count })
            .collect();
        p_dims.extend([rows, rows]);
        let p = eval::Tensor::f32(p_dims, p).or_shape()?;
        self.bind_computed(node, 0, p, x.batch_axis().is_some())?;
        // L and U: the factors' leading columns and rows, masked.
        let left = if cols > k {
            x.sliced(&mut self.g, scope, op, rank - 1, 0..k)?
        } else {
            x.clone()
        };
        let top = if rows > k {
            x.sliced(&mut self.g, scope, op, rank - 2, 0..k)?
        } else {
            x
        };
        let mask = |r: u64, c: u64, keep: fn(u64, u64) -> bool| -> Vec<f32> {
            (0..r * c)
                .map(|at| f32::from(u8::from(keep(at / c, at % c))))
                .collect()
        };
        let below = self.g.folded(
            &format!("{scope}.below"),
            vec![rows, k],
            &mask(rows, k, |i, j| i > j),
        )?;
        let identity = self.g.folded(
            &format!("{scope}.identity"),
            vec![rows, k],
            &mask(rows, k, |i, j| i == j),
        )?;
        let upper = self.g.folded(
            &format!("{scope}.upper"),
            vec![k, cols],
            &mask(k, cols, |i, j| i <= j),
        )?;
        let l = left.with_constant(&mut self.g, scope, "Mul", &below, false)?;
        let l = l.with_constant(&mut self.g, scope, "Add", &identity, false)?;
        let u = top.with_constant(&mut self.g, scope, "Mul", &upper, false)?;
        self.bind_tensor(node, 1, l)?;
        self.bind_tensor(node, 2, u)
    }

    /// `ormqr(self, input2, input3, left, transpose)`: [`Lowering::reflect`] of
    /// `input3` (a constant or an activation).
    pub(super) fn ormqr(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let op = aten_name(node);
        let left = args.bool("left").or_shape()?;
        let transpose = args.bool("transpose").or_shape()?;
        let c_name = args.tensor("input3").or_shape()?;
        let other = if self.is_constant(c_name) {
            Side::Constant(self.constant_tensor(c_name)?)
        } else {
            Side::Activation(self.float_matrices(args, "input3", op)?)
        };
        let y = self.reflect(args, ["self", "input2"], other, [left, transpose], scope)?;
        self.bind_side(node, y)
    }

    /// `linalg_householder_product(input, tau)` and `orgqr(self, input2)`: the first `n`
    /// columns of `Q` for `[…, m, n]` reflectors, [`Lowering::reflect`] of the identity's
    /// first `n` columns from the left.
    pub(super) fn householder_product(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let names = match aten_name(node) {
            "orgqr.default" => ["self", "input2"],
            _ => ["input", "tau"],
        };
        let recorded = self.recorded_sizes(node, 0)?;
        let r = recorded.len();
        if r < 2 {
            return Err(arg_error(format!(
                "{} of a rank-{r} result (torch takes matrices)",
                aten_name(node)
            )));
        }
        let (m, n) = (recorded[r - 2].count, recorded[r - 1].count);
        let dims: Vec<u64> = recorded
            .iter()
            .map(|s| if s.batch { 1 } else { s.count })
            .collect();
        let eye: Vec<f32> = (0..m * n)
            .map(|at| f32::from(u8::from(at / n == at % n)))
            .collect();
        let identity = eval::Tensor::f32(vec![m, n], eye)
            .and_then(|t| t.expand(&dims))
            .or_shape()?;
        let y = self.reflect(args, names, Side::Constant(identity), [true, false], scope)?;
        self.bind_side(node, y)
    }

    /// Binds output 0 of `node` to `y`: an activation, or a constant (no reflector) the
    /// same for every sample.
    fn bind_side(&mut self, node: &Node, y: Side) -> Result<(), OnnxError> {
        match y {
            Side::Activation(a) => self.bind_tensor(node, 0, a),
            Side::Constant(c) => {
                let uniform = self.recorded_sizes(node, 0)?.iter().any(|s| s.batch);
                self.bind_computed(node, 0, c, uniform)
            }
        }
    }

    /// The reflectors of argument `names[0]` (`[…, mn, k]`, an activation) with their
    /// constant scales `names[1]` (`[…, t]`) applied to `y` (`[…, m, n]`) one at a time
    /// in [`solve::reflector_order`] (`[left, transpose]`, as `ormqr`'s): `vⱼ` column `j`
    /// of the reflectors times the constant mask below the diagonal plus the unit vector,
    /// and `Y ← Y − vⱼ·(tauⱼ·(vⱼᵀ·Y))` from the left, `Y ← Y − ((Y·vⱼ)·tauⱼ)·vⱼᵀ` from the
    /// right.
    fn reflect(
        &mut self,
        args: &Args<'_>,
        [reflectors, scales]: [&str; 2],
        mut y: Side,
        [left, transpose]: [bool; 2],
        scope: &str,
    ) -> Result<Side, OnnxError> {
        let op = aten_name(args.0);
        let x = self.float_matrices(args, reflectors, op)?;
        let rank = x.rank();
        if let Some(batch) = x.batch_axis().filter(|&a| a + 2 >= rank) {
            return Err(tensor::mixes_samples(op, batch, &x.sizes()));
        }
        let sizes = x.sizes();
        let (mn, k) = (sizes[rank - 2].count, sizes[rank - 1].count);
        let tau_name = args.tensor(scales).or_shape()?;
        if !self.is_constant(tau_name) {
            return Err(arg_error(format!(
                "{op} with scales `{scales}` computed at run time is not exported (constant scales only)"
            )));
        }
        let tau = self.constant_tensor(tau_name)?;
        let tau_dims = tau.dims().to_vec();
        let Some((&t, tau_lead)) = tau_dims.split_last() else {
            return Err(arg_error(format!(
                "{op}'s scales `{scales}` are 0-d (torch takes a row per matrix)"
            )));
        };
        if t > k || t > mn || mn * k == 0 {
            return Err(arg_error(format!(
                "{op} of {} reflectors with {t} scales (torch takes at most one per column and row; empty matrices ATC does not compile)",
                tensor::show(&sizes)
            )));
        }
        let columns = if k == 1 {
            vec![x.clone()]
        } else {
            x.split(&mut self.g, scope, op, rank - 1, &vec![1; k as usize])?
        };
        let tau_values = tau.to_f32();
        let order: Vec<usize> = (0..rank)
            .map(|a| {
                if a + 2 == rank {
                    rank - 1
                } else if a + 1 == rank {
                    rank - 2
                } else {
                    a
                }
            })
            .collect();
        for j in solve::reflector_order(t as usize, left, transpose) {
            // vⱼ: column j below the diagonal, 1 on it.
            let below: Vec<f32> = (0..mn).map(|i| f32::from(u8::from(i > j as u64))).collect();
            let unit: Vec<f32> = (0..mn)
                .map(|i| f32::from(u8::from(i == j as u64)))
                .collect();
            let below = self
                .g
                .folded(&format!("{scope}.below"), vec![mn, 1], &below)?;
            let unit = self
                .g
                .folded(&format!("{scope}.unit"), vec![mn, 1], &unit)?;
            let v = columns[j].with_constant(&mut self.g, scope, "Mul", &below, false)?;
            let v = v.with_constant(&mut self.g, scope, "Add", &unit, false)?;
            let vt = v.clone().transposed(&mut self.g, scope, &order)?;
            let scales: Vec<f32> = tau_values
                .iter()
                .skip(j)
                .step_by(t as usize)
                .copied()
                .collect();
            let mut scale_dims = tau_lead.to_vec();
            scale_dims.extend([1, 1]);
            let scale = self
                .g
                .folded(&format!("{scope}.tau"), scale_dims, &scales)?;
            let update = match (&y, left) {
                (Side::Constant(c), true) => {
                    self.constant_product(&vt, Fixed::Computed(c.clone()), false, scope)?
                }
                (Side::Constant(c), false) => {
                    self.constant_product(&v, Fixed::Computed(c.clone()), true, scope)?
                }
                (Side::Activation(a), true) => self.product(&vt, a, scope)?,
                (Side::Activation(a), false) => self.product(a, &v, scope)?,
            };
            let update = update.with_constant(&mut self.g, scope, "Mul", &scale, false)?;
            let update = if left {
                self.product(&v, &update, scope)?
            } else {
                self.product(&update, &vt, scope)?
            };
            y = Side::Activation(match y {
                Side::Constant(c) => {
                    let w =
                        self.g
                            .folded(&format!("{scope}.other"), c.dims().to_vec(), &c.to_f32())?;
                    update.with_constant(&mut self.g, scope, "Sub", &w, true)?
                }
                Side::Activation(a) => {
                    let d = emit::binary(
                        &mut self.g,
                        "Sub",
                        scope,
                        Operand::Activation(a.value()),
                        Operand::Activation(update.value()),
                    )?;
                    a.with_value(d)?
                }
            });
        }
        Ok(y)
    }
}

/// A solve's matrices: computed at export, or unrolled over an activation's entries.
enum By {
    Constant(eval::Tensor),
    Activation(Tensor),
}

/// The operand `ormqr` applies its reflectors to, as it stands.
enum Side {
    Constant(eval::Tensor),
    Activation(Tensor),
}
