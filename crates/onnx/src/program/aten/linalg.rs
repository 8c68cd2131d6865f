//! torch's linear algebra of small matrices ([`ckpt_aten::linalg`]): the matrices of the
//! last two dimensions split into their entries (two Splits; each entry an activation
//! holding that entry of every matrix), the plan's program written over them with the
//! series algebra (one element-wise node per operation, a pivot choice a `Where`), and
//! the result's entries put back together by Concats (an entry the program knows at
//! export, such as a zero above a Cholesky factor, by one `Where` with a constant mask).
//! Neither matrix dimension may carry the batch: a matrix would mix samples.
//! `matrix_power` multiplies whole matrices (MatMul), `vander` and `trace` are element-wise
//! over the same entries.

use crate::elem::ElemType;
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::linalg::{self, Step};
use ckpt_aten::program::Node;
use ckpt_aten::series::Algebra;
use ckpt_aten::spectrum::{self, SpectralNorm};
use ckpt_formats::torch::dtype::DType;

use super::super::emit;
use super::super::lower::Lowering;
use super::super::tensor::{self, Size, Tensor};
use super::series::{Graph, Term};
use super::{arg_error, OrShape};

impl Lowering<'_, '_> {
    /// The float32 matrix argument `name` of `op`, square ones when `square`,
    /// with their sizes; refused when a matrix dimension carries the batch.
    pub(super) fn matrix_input(
        &mut self,
        args: &Args<'_>,
        name: &str,
        op: &str,
        square: bool,
    ) -> Result<(Tensor, [usize; 2]), OnnxError> {
        let x = self.tensor(args.tensor(name).or_shape()?)?;
        if x.value().elem() != ElemType::Float32 {
            return Err(arg_error(format!(
                "{op} of a {} tensor is not exported (float32 only)",
                x.value().elem()
            )));
        }
        let sizes: Vec<u64> = x.sizes().iter().map(|s| s.count).collect();
        let (rows, cols) = linalg::matrix_sizes(op, &sizes, square).map_err(arg_error)?;
        let rank = x.rank();
        if let Some(batch) = x.batch_axis().filter(|&a| a + 2 >= rank) {
            return Err(tensor::mixes_samples(op, batch, &x.sizes()));
        }
        if rows * cols == 0 {
            return Err(arg_error(format!(
                "{op} of empty matrices ({}), which ATC does not compile",
                tensor::show(&x.sizes())
            )));
        }
        Ok((x, [rows, cols]))
    }

    /// Refused unless torch recorded result `k` of `op` as `elem` (float32 results from
    /// float32 matrices, int results where torch's are).
    fn check_output(
        &self,
        node: &Node,
        k: usize,
        op: &str,
        elem: ElemType,
    ) -> Result<(), OnnxError> {
        let recorded = self.recorded_elem(self.output_name(node, k)?)?;
        if recorded != elem {
            return Err(arg_error(format!(
                "{op} giving {recorded} is not exported ({elem} only)"
            )));
        }
        Ok(())
    }

    /// The entries of the matrices of `x`'s last two dimensions (`rows`×`cols`), row-major,
    /// each of sizes `[…, 1, 1]`.
    fn entries(
        &mut self,
        scope: &str,
        x: &Tensor,
        op: &str,
        rows: u64,
        cols: u64,
    ) -> Result<Vec<Tensor>, OnnxError> {
        let rank = x.rank();
        let row_tensors = if rows == 1 {
            vec![x.clone()]
        } else {
            x.split(&mut self.g, scope, op, rank - 2, &vec![1; rows as usize])?
        };
        let mut out = Vec::with_capacity((rows * cols) as usize);
        for r in row_tensors {
            if cols == 1 {
                out.push(r);
            } else {
                out.extend(r.split(&mut self.g, scope, op, rank - 1, &vec![1; cols as usize])?);
            }
        }
        Ok(out)
    }

    /// The entries of [`Self::entries`] as the program's terms, with the first entry, whose
    /// layout every result entry takes.
    pub(super) fn entry_terms(
        &mut self,
        scope: &str,
        x: &Tensor,
        op: &str,
        rows: u64,
        cols: u64,
    ) -> Result<(Tensor, Vec<Term>), OnnxError> {
        let entries = self.entries(scope, x, op, rows, cols)?;
        let terms = entries
            .iter()
            .map(|e| Term::Value(e.value().clone()))
            .collect();
        Ok((entries[0].clone(), terms))
    }

    /// A `rows`×`cols` matrix from program entries `terms` (row-major) on the layout of
    /// `like` (an entry): activations concatenated, numbers set by one `Where`.
    pub(super) fn assemble(
        &mut self,
        scope: &str,
        terms: &[Term],
        rows: usize,
        cols: usize,
        like: &Tensor,
    ) -> Result<Tensor, OnnxError> {
        let placeholder = terms
            .iter()
            .find_map(|t| match t {
                Term::Value(v) => Some(v.clone()),
                Term::Number(_) => None,
            })
            .unwrap_or_else(|| like.value().clone());
        let rank = like.rank();
        let entry = |t: &Term| match t {
            Term::Value(v) => like.with_value(v.clone()),
            Term::Number(_) => like.with_value(placeholder.clone()),
        };
        let mut row_tensors = Vec::with_capacity(rows);
        for r in 0..rows {
            let row: Vec<Tensor> = terms[r * cols..(r + 1) * cols]
                .iter()
                .map(entry)
                .collect::<Result<_, _>>()?;
            row_tensors.push(if cols == 1 {
                row[0].clone()
            } else {
                Tensor::concat(&mut self.g, scope, &row, rank - 1)?
            });
        }
        let matrix = if rows == 1 {
            row_tensors[0].clone()
        } else {
            Tensor::concat(&mut self.g, scope, &row_tensors, rank - 2)?
        };
        let numbers: Vec<Option<f64>> = terms
            .iter()
            .map(|t| match t {
                Term::Number(c) => Some(*c),
                Term::Value(_) => None,
            })
            .collect();
        if numbers.iter().all(Option::is_none) {
            return Ok(matrix);
        }
        self.with_numbers(scope, &matrix, [rows, cols], &numbers)
    }

    /// A function of matrices ([`linalg::FUNCTIONS`]): determinants, inverses, Cholesky
    /// and LU factors; each result shaped by its [`linalg::Form`].
    pub(super) fn matrix_function(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let target = super::registry::aten_name(node);
        let Some((input, f)) = linalg::function(target) else {
            return Err(arg_error(format!("{target} is not a matrix function")));
        };
        let (x, [rows, cols]) = self.matrix_input(args, input, target, f.square())?;
        let options = linalg::Options::read(f, args).map_err(arg_error)?;
        let (like, terms) = self.entry_terms(scope, &x, target, rows as u64, cols as u64)?;
        let outputs = {
            let mut graph = Graph::new(&mut self.g, scope);
            linalg::apply(&mut graph, f, options, &terms, [rows, cols]).or_shape()?
        };
        let mut lead = x.sizes();
        lead.truncate(lead.len() - 2);
        for (k, (form, terms)) in f.forms(rows, cols, options).iter().zip(outputs).enumerate() {
            let y = match form.dims[..] {
                [r, c] => self.assemble(scope, &terms, r, c, &like)?,
                _ => {
                    let row = self.assemble(scope, &terms, 1, form.len(), &like)?;
                    let mut sizes = lead.clone();
                    sizes.extend(form.dims.iter().map(|&d| Size::fixed(d as u64)));
                    row.reshaped(&mut self.g, scope, &sizes)?
                }
            };
            let elem = match form.dtype {
                DType::Int32 => ElemType::Int32,
                DType::Int64 => ElemType::Int64,
                _ => ElemType::Float32,
            };
            self.check_output(node, k, target, elem)?;
            let y = if elem == ElemType::Float32 {
                y
            } else {
                let v = emit::cast(&mut self.g, scope, y.value(), elem);
                y.with_value(v)?
            };
            self.bind_tensor(node, k, y)?;
        }
        Ok(())
    }

    /// `linalg_matrix_norm(self, ord, dim, keepdim)` for the norms of singular values
    /// ([`spectrum::spectral_norm`]): `dim`'s two dimensions (`[rows, cols]`) moved last by
    /// a Transpose as torch's `_move_to_end` does, the program over their entries, one
    /// number per matrix reshaped to torch's result (both dimensions removed, or size 1
    /// with `keepdim`).
    pub(super) fn spectral_norm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        norm: SpectralNorm,
        [rows_at, cols_at]: [usize; 2],
    ) -> Result<(), OnnxError> {
        let target = super::registry::aten_name(node);
        self.same_dtype(node, args, target)?;
        self.check_output(node, 0, target, ElemType::Float32)?;
        let keep = args.bool("keepdim").or_shape()?;
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        if x.value().elem() != ElemType::Float32 {
            return Err(arg_error(format!(
                "{target} of a {} tensor is not exported (float32 only)",
                x.value().elem()
            )));
        }
        if let Some(batch) = x.batch_axis().filter(|&a| a == rows_at || a == cols_at) {
            return Err(tensor::mixes_samples(target, batch, &x.sizes()));
        }
        let sizes = x.sizes();
        let order: Vec<usize> = (0..x.rank())
            .filter(|&a| a != rows_at && a != cols_at)
            .chain([rows_at, cols_at])
            .collect();
        let moved = x.transposed(&mut self.g, scope, &order)?;
        let counts: Vec<u64> = moved.sizes().iter().map(|s| s.count).collect();
        let (rows, cols) = linalg::matrix_sizes(target, &counts, false).map_err(arg_error)?;
        if rows * cols == 0 {
            return Err(arg_error(format!(
                "{target} of empty matrices ({}), which ATC does not compile",
                tensor::show(&sizes)
            )));
        }
        let (like, terms) = self.entry_terms(scope, &moved, target, rows as u64, cols as u64)?;
        let value = {
            let mut graph = Graph::new(&mut self.g, scope);
            spectrum::spectral_norm(&mut graph, norm, &terms, rows, cols).or_shape()?
        };
        let one = self.assemble(scope, &[value], 1, 1, &like)?;
        let result: Vec<Size> = sizes
            .iter()
            .enumerate()
            .filter_map(|(a, s)| match a == rows_at || a == cols_at {
                false => Some(*s),
                true => keep.then(|| Size::fixed(1)),
            })
            .collect();
        let y = one.reshaped(&mut self.g, scope, &result)?;
        self.bind_tensor(node, 0, y)
    }

    /// `linalg_matrix_power(self, n)`: the identity for `n = 0`, else torch's products
    /// ([`linalg::power_steps`]) as MatMuls, of the inverse for a negative `n`.
    pub(super) fn matrix_power(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let target = super::registry::aten_name(node);
        let (x, [n, _]) = self.matrix_input(args, "self", target, true)?;
        self.check_output(node, 0, target, ElemType::Float32)?;
        let power = args.int("n").or_shape()?;
        let base = if power < 0 {
            let (like, terms) = self.entry_terms(scope, &x, target, n as u64, n as u64)?;
            let inverse = {
                let mut graph = Graph::new(&mut self.g, scope);
                linalg::inverse(&mut graph, &terms, n).or_shape()?
            };
            self.assemble(scope, &inverse, n, n, &like)?
        } else {
            x.clone()
        };
        if power == 0 {
            let identity: Vec<Term> = (0..n * n)
                .map(|k| Term::Number(if k / n == k % n { 1.0 } else { 0.0 }))
                .collect();
            let y = self.assemble_over(scope, &identity, n, &x)?;
            return self.bind_tensor(node, 0, y);
        }
        let (mut z, mut result): (Tensor, Option<Tensor>) = (base.clone(), None);
        for step in linalg::power_steps(power) {
            match step {
                Step::Square => z = self.times(scope, &z, &z)?,
                Step::Multiply => {
                    result = Some(match result {
                        Some(r) => self.times(scope, &r, &z)?,
                        None => z.clone(),
                    })
                }
                Step::TimesBase => {
                    let r =
                        result.ok_or_else(|| arg_error("a power step before a product".into()))?;
                    result = Some(self.times(scope, &r, &base)?);
                }
            }
        }
        let y = result.ok_or_else(|| arg_error("a matrix power with no product".into()))?;
        self.bind_tensor(node, 0, y)
    }

    /// A matrix of numbers only (`terms`, `n`×`n`) on the layout of `x`: one `Where` over
    /// `x` itself, whose values it replaces all.
    fn assemble_over(
        &mut self,
        scope: &str,
        terms: &[Term],
        n: usize,
        x: &Tensor,
    ) -> Result<Tensor, OnnxError> {
        let numbers: Vec<Option<f64>> = terms
            .iter()
            .map(|t| match t {
                Term::Number(c) => Some(*c),
                Term::Value(_) => Some(0.0),
            })
            .collect();
        self.with_numbers(scope, x, [n, n], &numbers)
    }

    /// `matrix` (its last two dimensions `rows`×`cols`) with the entries `numbers` knows
    /// replaced by those numbers: one `Where` over it, the same for every sample.
    fn with_numbers(
        &mut self,
        scope: &str,
        matrix: &Tensor,
        [rows, cols]: [usize; 2],
        numbers: &[Option<f64>],
    ) -> Result<Tensor, OnnxError> {
        let rank = matrix.rank();
        let mut dims = vec![1u64; rank];
        dims[rank - 2] = rows as u64;
        dims[rank - 1] = cols as u64;
        let mask: Vec<f64> = numbers
            .iter()
            .map(|c| f64::from(u8::from(c.is_some())))
            .collect();
        let values: Vec<f64> = numbers.iter().map(|c| c.unwrap_or(0.0)).collect();
        let mask = self.g.typed_constant(
            &format!("{scope}.known"),
            dims.clone(),
            &mask,
            ElemType::Bool,
        )?;
        let values =
            self.g
                .typed_constant(&format!("{scope}.values"), dims, &values, ElemType::Float32)?;
        let shape = matrix.value().shape().to_vec();
        let y = self
            .g
            .typed_node(
                "Where",
                scope,
                vec![
                    mask.name().to_owned(),
                    values.name().to_owned(),
                    matrix.value().name().to_owned(),
                ],
                vec![],
                vec![(shape, ElemType::Float32)],
            )
            .swap_remove(0);
        matrix.with_value(y)
    }

    /// `a·b` of two activations of the same layout (MatMul over the last two dimensions).
    fn times(&mut self, scope: &str, a: &Tensor, b: &Tensor) -> Result<Tensor, OnnxError> {
        let y = self.g.matmul_activations(scope, a.value(), b.value())?;
        a.with_value(y)
    }

    /// `linalg_vander(x, *, N)`: the columns of [`linalg::vander`] (a row of ones, then
    /// cumulative products) along a new last dimension, which cannot carry the batch; a
    /// 0-d `x` as its one-entry 1-d view, as torch reads it.
    pub(super) fn vander(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("x").or_shape()?)?;
        if x.value().elem() != ElemType::Float32 {
            return Err(arg_error(format!(
                "vander of a {} tensor is not exported (float32)",
                x.value().elem()
            )));
        }
        // torch reads a 0-d `x` as its one-entry 1-d view.
        let x = match x.rank() {
            0 => x.reshaped(&mut self.g, scope, &[Size::fixed(1)])?,
            _ => x,
        };
        let rank = x.rank();
        if x.batch_axis().is_some_and(|a| a + 1 == rank) {
            return Err(tensor::mixes_samples("vander", rank - 1, &x.sizes()));
        }
        let sizes = x.sizes();
        let columns = match args.optional_int("N").or_shape()? {
            Some(n) => u64::try_from(n).map_err(|_| arg_error(format!("vander with N = {n}")))?,
            None => sizes[rank - 1].count,
        };
        let mut grown = sizes;
        grown.push(Size::fixed(1));
        let column = x.reshaped(&mut self.g, scope, &grown)?;
        let terms = {
            let mut graph = Graph::new(&mut self.g, scope);
            let input = Term::Value(column.value().clone());
            linalg::vander(&mut graph, &input, columns).or_shape()?
        };
        let y = self.assemble(scope, &terms, 1, columns as usize, &column)?;
        self.bind_tensor(node, 0, y)
    }

    /// `trace(self)`: the sum of a matrix's diagonal, entry by entry from the first.
    pub(super) fn trace(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        if x.rank() != 2 || x.value().elem() != ElemType::Float32 {
            return Err(arg_error(format!(
                "trace of a rank-{} {} tensor is not exported (a float32 matrix)",
                x.rank(),
                x.value().elem()
            )));
        }
        if let Some(batch) = x.batch_axis() {
            return Err(tensor::mixes_samples("trace", batch, &x.sizes()));
        }
        let sizes = x.sizes();
        let (rows, cols) = (sizes[0].count, sizes[1].count);
        if rows * cols == 0 || rows.max(cols) > 64 {
            return Err(arg_error(format!(
                "trace of a {} matrix is not exported (1 to 64 rows and columns)",
                tensor::show(&sizes)
            )));
        }
        let entries = self.entries(scope, &x, "trace", rows, cols)?;
        let like = entries[0].clone();
        let sum = {
            let mut graph = Graph::new(&mut self.g, scope);
            let mut sum = Term::Value(like.value().clone());
            for i in 1..rows.min(cols) as usize {
                let d = Term::Value(entries[i * cols as usize + i].value().clone());
                sum = graph
                    .apply(ckpt_aten::decompose::Fn::Add, &[&sum, &d])
                    .or_shape()?;
            }
            sum
        };
        let one = self.assemble(scope, &[sum], 1, 1, &like)?;
        let y = one.reshaped(&mut self.g, scope, &[])?;
        self.bind_tensor(node, 0, y)
    }
}
