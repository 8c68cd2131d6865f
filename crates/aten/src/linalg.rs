//! torch's linear algebra of small matrices, as torch's CPU kernels compute it, written
//! once over the series [`Algebra`](super::series::Algebra): the constant evaluator runs a
//! program on numbers, the ONNX lowering writes it as one node per operation on each
//! matrix entry (an activation holding that entry of every matrix of the batch). The
//! algorithms are unrolled over the matrix order, which the program fixes, so a
//! data-dependent choice (LU's pivot) is a `Where`, never a branch; the graph grows as
//! n³, so orders above [`MAX_ORDER`] are refused.
//!
//! - LU with partial pivoting ([`lu`]) as LAPACK's `getrf` does it: at step `k`, the row
//!   whose entry in column `k` has the largest magnitude (the first on ties; a NaN never
//!   wins, as in `isamax`) is swapped with row `k` across the whole row, the column below
//!   is divided by the pivot (left as is when the pivot is zero: LAPACK skips it, the
//!   column being zero), and the rest takes the rank-1 update. torch factors `Aᵀ` when `A`
//!   is contiguous (`_linalg_det_out`, `_linalg_slogdet_out`), and so do [`det`] and
//!   [`slogdet`], so their pivots are torch's.
//! - `det = det(P)·∏ diag(U)`; `slogdet`: `sign = ∏ sgn(diag(U))·det(P)`, `logabsdet = Σ
//!   log|diag(U)|`; `logdet` is `logabsdet`, NaN where `sign` is −1 (`at::logdet`).
//! - The inverse solves `A·X = I` through the factors of `A` as `getrs('N')` does: the
//!   identity's rows swapped as `A`'s were (`laswp`), `L·Y = Pᵀ`, `U·X = Y`. torch's
//!   `linalg_inv_ex` factors `A` itself (its `info` names `A`'s first zero pivot, and a
//!   singular `A` gives the infinities and NaNs of these divisions by zero).
//! - Cholesky as `potf2` (lower): `l_jj = √(a_jj − Σ l_jk²)`, the column below scaled by
//!   `1/l_jj`; the upper factor is computed from the upper triangle (the lower algorithm
//!   on `Aᵀ`, transposed back), the other triangle zero. Where a leading minor is not
//!   positive definite, `potf2` stops: that column's diagonal holds `a_jj − Σ l_jk²`, and
//!   the rest of the triangle the input's entries, as `linalg_cholesky_ex` returns them
//!   with `info` the minor's order (`cholesky` raises there).
//! - `cholesky_inverse` of a triangular factor as `potri`: the factor's inverse `X` by
//!   substitution (`trtri`), then `Xᵀ·X` (lower) or `X·Xᵀ` (upper), only the factor's
//!   triangle read.
//! - `matrix_power` by torch's binary decomposition ([`power_steps`]).
//! - `linalg_lu_factor`, `linalg_lu_factor_ex`, `_lu_with_info` (`torch.lu`) and
//!   `linalg_lu` factor `A` itself (torch copies it column-major for `getrf`), of any
//!   `rows`×`cols` in `min(rows, cols)` steps: the packed factors, the 1-based int32 pivots
//!   (`ipiv`), `info` (the first exactly zero pivot, 1-based, else 0), or `lu_unpack`'s
//!   `P`, `L`, `U`.
//! - QR by Householder reflectors as `geqr2` ([`geqrf`], `dlarfg`'s signs: `R`'s diagonal
//!   is `−sign(α)·‖column‖`, negative for a positive pivot, as torch returns it) and `Q`
//!   as `org2r` builds it; `linalg_qr` reduced or complete, `qr` (`some`), `geqrf`. For
//!   finite entries only: an infinity or NaN meets LAPACK's scaled norms, which the graph
//!   does not reproduce (it propagates NaN), and the evaluator refuses such constants.

use super::args::Args;
use super::decompose::Fn;
use super::program::Argument;
use super::series::{Ops, Result};
use super::spectrum;
use ckpt_formats::torch::dtype::DType;

/// The largest matrix order unrolled: the graph of a factorisation grows as n³.
pub const MAX_ORDER: u64 = 8;

/// The sizes `rows`×`cols` of the matrices in the last two dimensions of `sizes`, which
/// `op` takes: at least 2-D, square when `square`, at most [`MAX_ORDER`] either way.
pub fn matrix_sizes(
    op: &str,
    sizes: &[u64],
    square: bool,
) -> std::result::Result<(usize, usize), String> {
    let r = sizes.len();
    if r < 2 {
        return Err(format!(
            "{op} of a rank-{r} tensor (torch takes matrices: at least 2-D)"
        ));
    }
    let (rows, cols) = (sizes[r - 2], sizes[r - 1]);
    if square && rows != cols {
        return Err(format!(
            "{op} of {rows}×{cols} matrices (torch takes square ones)"
        ));
    }
    if rows.max(cols) > MAX_ORDER {
        return Err(format!(
            "{op} of {rows}×{cols} matrices: the factorisation is unrolled over the order, its graph growing as n³, and is exported up to {MAX_ORDER}×{MAX_ORDER}"
        ));
    }
    Ok((rows as usize, cols as usize))
}

/// The transpose of the `n`×`n` row-major `m`.
pub fn transpose<V: Clone>(m: &[V], n: usize) -> Vec<V> {
    transpose_of(m, n, n)
}

/// The transpose (`cols`×`rows`) of the `rows`×`cols` row-major `m`.
pub fn transpose_of<V: Clone>(m: &[V], rows: usize, cols: usize) -> Vec<V> {
    (0..rows * cols)
        .map(|at| m[(at % rows) * cols + at / rows].clone())
        .collect()
}

/// An LU factorisation `P·A = L·U` of a `rows`×`cols` matrix, LAPACK's packed form.
pub struct Lu<V> {
    /// Row-major `rows`×`cols`: `U` on and above the diagonal, `L` (unit diagonal implied)
    /// below.
    pub lu: Vec<V>,
    /// For step `k` (`k < min(rows, cols)`), whether row `i` (`k < i < rows`, in order)
    /// was swapped with row `k` (at most one is).
    pub swaps: Vec<Vec<V>>,
    /// For step `k`, the row (0-based) swapped with row `k`, `k` itself when none.
    pub pivots: Vec<V>,
    /// `det(P)`: ±1.
    pub sign: V,
    /// For step `k`, whether its pivot is exactly zero (the column then left unscaled).
    pub zero_pivots: Vec<V>,
}

impl<V: Clone> Lu<V> {
    /// LAPACK's `info`: the first step (1-based) whose pivot is exactly zero, else 0.
    pub fn info<A: Ops<V = V>>(&self, a: &mut A) -> Result<V> {
        // The first zero pivot wins: chosen from the last step back.
        let mut info = a.number(0.0);
        for (k, zero) in self.zero_pivots.iter().enumerate().rev() {
            info = a.select_c(zero, (k + 1) as f64, &info)?;
        }
        Ok(info)
    }
}

/// `m` (`rows`×`cols`, row-major) factorised as LAPACK's `getrf` does (see the module
/// docs): `min(rows, cols)` steps.
pub fn lu<A: Ops>(a: &mut A, mut m: Vec<A::V>, rows: usize, cols: usize) -> Result<Lu<A::V>> {
    let at = |i: usize, j: usize| i * cols + j;
    let steps = rows.min(cols);
    let mut sign = a.number(1.0);
    let mut swaps = Vec::with_capacity(steps);
    let mut pivots = Vec::with_capacity(steps);
    let mut zero_pivots = Vec::with_capacity(steps);
    for k in 0..steps {
        // The pivot: the first largest magnitude in column k, from row k down.
        let mut best = a.f1(Fn::Abs, &m[at(k, k)])?;
        let mut row = a.number(k as f64);
        for i in k + 1..rows {
            let v = a.f1(Fn::Abs, &m[at(i, k)])?;
            let larger = a.f2(Fn::Greater, &v, &best)?;
            best = a.select(&larger, &v, &best)?;
            let index = a.number(i as f64);
            row = a.select(&larger, &index, &row)?;
        }
        let flags: Vec<A::V> = (k + 1..rows)
            .map(|i| a.equal_c(&row, i as f64))
            .collect::<Result<_>>()?;
        for j in 0..cols {
            let mut pivot_row = m[at(k, j)].clone();
            for (i, flag) in (k + 1..rows).zip(&flags) {
                pivot_row = a.select(flag, &m[at(i, j)], &pivot_row)?;
            }
            for (i, flag) in (k + 1..rows).zip(&flags) {
                m[at(i, j)] = a.select(flag, &m[at(k, j)], &m[at(i, j)])?;
            }
            m[at(k, j)] = pivot_row;
        }
        if k + 1 < rows {
            let kept = a.equal_c(&row, k as f64)?;
            let flipped = a.f1(Fn::Neg, &sign)?;
            sign = a.select(&kept, &sign, &flipped)?;
        }
        swaps.push(flags);
        pivots.push(row);
        let pivot = m[at(k, k)].clone();
        let zero = a.equal_c(&pivot, 0.0)?;
        for i in k + 1..rows {
            let q = a.div(&m[at(i, k)], &pivot)?;
            m[at(i, k)] = a.select(&zero, &m[at(i, k)], &q)?;
        }
        zero_pivots.push(zero);
        for i in k + 1..rows {
            for j in k + 1..cols {
                let t = a.mul(&m[at(i, k)], &m[at(k, j)])?;
                m[at(i, j)] = a.sub(&m[at(i, j)], &t)?;
            }
        }
    }
    Ok(Lu {
        lu: m,
        swaps,
        pivots,
        sign,
        zero_pivots,
    })
}

/// Whether `m` (`rows`×`cols`, row-major) is singular to float32 precision: a pivot of
/// its LU factors (those [`det`] takes: of `mᵀ`) is at most `max(rows, cols) · ε · max|m|`,
/// ε float32's. torch computes such a matrix's log-determinant, inverse or LU `info` from
/// its LAPACK kernel's rounding (a pivot that exact arithmetic makes 0 comes out as noise,
/// or the kernel reports the matrix singular), which no other order of the same operations
/// reproduces.
pub fn singular_in_float32(m: &[f64], [rows, cols]: [usize; 2]) -> Result<bool> {
    use super::series::Scalar;
    let scale = m.iter().fold(0f64, |acc, v| acc.max(v.abs()));
    let f = lu(&mut Scalar, transpose_of(m, rows, cols), cols, rows)?;
    let tiny = rows.max(cols) as f64 * f64::from(f32::EPSILON) * scale;
    Ok(tiny.is_finite() && (0..rows.min(cols)).any(|i| f.lu[i * rows + i].abs() <= tiny))
}

/// `det(m)` as `torch.linalg.det` computes it (the factors of `mᵀ`).
pub fn det<A: Ops>(a: &mut A, m: &[A::V], n: usize) -> Result<A::V> {
    let f = lu(a, transpose(m, n), n, n)?;
    let mut product = a.number(1.0);
    for i in 0..n {
        product = if i == 0 {
            f.lu[0].clone()
        } else {
            a.mul(&product, &f.lu[i * n + i])?
        };
    }
    a.mul(&f.sign, &product)
}

/// `(sign, logabsdet)` of `m` as `torch.linalg.slogdet` computes them.
pub fn slogdet<A: Ops>(a: &mut A, m: &[A::V], n: usize) -> Result<(A::V, A::V)> {
    let f = lu(a, transpose(m, n), n, n)?;
    let mut signs = a.number(1.0);
    let mut logs = a.number(0.0);
    for i in 0..n {
        let u = &f.lu[i * n + i];
        // torch's sgn of a real: 1, −1, else 0 (NaN and −0 included).
        let positive = a.greater_c(u, 0.0)?;
        let negative = a.less_c(u, 0.0)?;
        let zero = a.number(0.0);
        let s = a.select_c(&negative, -1.0, &zero)?;
        let s = a.select_c(&positive, 1.0, &s)?;
        let magnitude = a.f1(Fn::Abs, u)?;
        let log = a.f1(Fn::Log, &magnitude)?;
        if i == 0 {
            (signs, logs) = (s, log);
        } else {
            signs = a.mul(&signs, &s)?;
            logs = a.add(&logs, &log)?;
        }
    }
    let sign = a.mul(&signs, &f.sign)?;
    Ok((sign, logs))
}

/// `torch.logdet(m)`: `logabsdet`, NaN where the determinant's sign is −1.
pub fn logdet<A: Ops>(a: &mut A, m: &[A::V], n: usize) -> Result<A::V> {
    let (sign, logabsdet) = slogdet(a, m, n)?;
    let negative = a.equal_c(&sign, -1.0)?;
    a.select_c(&negative, f64::NAN, &logabsdet)
}

/// `m⁻¹` (`n`×`n`, row-major) as `torch.linalg.inv` computes it (see the module docs).
pub fn inverse<A: Ops>(a: &mut A, m: &[A::V], n: usize) -> Result<Vec<A::V>> {
    let f = lu(a, m.to_vec(), n, n)?;
    inverse_from(a, &f, n)
}

/// The inverse of the `n`×`n` matrix `f` factors, as `getrs('N')` solves `A·X = I`.
fn inverse_from<A: Ops>(a: &mut A, f: &Lu<A::V>, n: usize) -> Result<Vec<A::V>> {
    let at = |i: usize, j: usize| i * n + j;
    // B = Pᵀ·I: the identity's rows swapped as the factorisation swapped A's (`laswp`).
    let mut x: Vec<A::V> = (0..n * n)
        .map(|k| a.number(if k / n == k % n { 1.0 } else { 0.0 }))
        .collect();
    for (k, flags) in f.swaps.iter().enumerate() {
        for (i, flag) in (k + 1..n).zip(flags) {
            for j in 0..n {
                let (top, other) = (x[at(k, j)].clone(), x[at(i, j)].clone());
                x[at(k, j)] = a.select(flag, &other, &top)?;
                x[at(i, j)] = a.select(flag, &top, &other)?;
            }
        }
    }
    for col in 0..n {
        // L·Y = B (unit diagonal): y_i = b_i − Σ_{k<i} l_ik·y_k.
        for i in 1..n {
            let mut t = x[at(i, col)].clone();
            for k in 0..i {
                let p = a.mul(&f.lu[at(i, k)], &x[at(k, col)])?;
                t = a.sub(&t, &p)?;
            }
            x[at(i, col)] = t;
        }
        // U·X = Y: x_i = (y_i − Σ_{k>i} u_ik·x_k) / u_ii, from the last row up.
        for i in (0..n).rev() {
            let mut t = x[at(i, col)].clone();
            for k in i + 1..n {
                let p = a.mul(&f.lu[at(i, k)], &x[at(k, col)])?;
                t = a.sub(&t, &p)?;
            }
            x[at(i, col)] = a.div(&t, &f.lu[at(i, i)])?;
        }
    }
    Ok(x)
}

/// A Cholesky factor, and where `potrf` stopped.
pub struct Cholesky<V> {
    /// Row-major, zero in the other triangle.
    pub factor: Vec<V>,
    /// For column `j`, whether `a_jj − Σ l_jk²` is positive (not NaN): `potrf` stops at
    /// the first that is not.
    pub positive: Vec<V>,
}

impl<V: Clone> Cholesky<V> {
    /// `potrf`'s `info`: the order of the first leading minor that is not positive
    /// definite, else 0.
    pub fn info<A: Ops<V = V>>(&self, a: &mut A) -> Result<V> {
        let mut info = a.number(0.0);
        for (j, positive) in self.positive.iter().enumerate().rev() {
            let order = a.number((j + 1) as f64);
            info = a.select(positive, &info, &order)?;
        }
        Ok(info)
    }
}

/// The lower Cholesky factor of `m` by `potf2` (only its lower triangle read). Where a
/// column's `a_jj − Σ l_jk²` is not positive, `potf2` stores it on the diagonal and stops:
/// that column below the diagonal, and every later one, keep the input's entries.
fn cholesky_lower<A: Ops>(a: &mut A, m: &[A::V], n: usize) -> Result<Cholesky<A::V>> {
    // The factor as computed, read by the later columns; `factor`, what potf2 leaves.
    let mut l: Vec<A::V> = (0..n * n).map(|_| a.number(0.0)).collect();
    let mut factor = l.clone();
    let mut positive = Vec::with_capacity(n);
    // Whether every column so far was positive.
    let mut going: Option<A::V> = None;
    for j in 0..n {
        let mut d = m[j * n + j].clone();
        if j > 0 {
            let mut dot = a.mul(&l[j * n], &l[j * n])?;
            for k in 1..j {
                let p = a.mul(&l[j * n + k], &l[j * n + k])?;
                dot = a.add(&dot, &p)?;
            }
            d = a.sub(&d, &dot)?;
        }
        let here = a.greater_c(&d, 0.0)?;
        let stopped_here = match &going {
            Some(before) => a.select(before, &d, &m[j * n + j])?,
            None => d.clone(),
        };
        let still = match &going {
            Some(before) => a.and(before, &here)?,
            None => here.clone(),
        };
        positive.push(here);
        let diagonal = a.f1(Fn::Sqrt, &d)?;
        let scale = a.c_div(1.0, &diagonal)?;
        factor[j * n + j] = a.select(&still, &diagonal, &stopped_here)?;
        l[j * n + j] = diagonal;
        for i in j + 1..n {
            let mut t = m[i * n + j].clone();
            for k in 0..j {
                let p = a.mul(&l[i * n + k], &l[j * n + k])?;
                t = a.sub(&t, &p)?;
            }
            l[i * n + j] = a.mul(&t, &scale)?;
            factor[i * n + j] = a.select(&still, &l[i * n + j], &m[i * n + j])?;
        }
        going = Some(still);
    }
    Ok(Cholesky { factor, positive })
}

/// `torch.linalg.cholesky(m, upper=upper)`: the factor, zero in the other triangle.
pub fn cholesky<A: Ops>(a: &mut A, m: &[A::V], n: usize, upper: bool) -> Result<Cholesky<A::V>> {
    if upper {
        let c = cholesky_lower(a, &transpose(m, n), n)?;
        Ok(Cholesky {
            factor: transpose(&c.factor, n),
            positive: c.positive,
        })
    } else {
        cholesky_lower(a, m, n)
    }
}

/// `torch.cholesky_inverse(f, upper)`: `(L·Lᵀ)⁻¹` of the lower factor `L` (or `(Uᵀ·U)⁻¹`
/// of the upper one), reading only the factor's triangle.
pub fn cholesky_inverse<A: Ops>(a: &mut A, f: &[A::V], n: usize, upper: bool) -> Result<Vec<A::V>> {
    // The lower factor L (Uᵀ for an upper one): A = L·Lᵀ, A⁻¹ = L⁻ᵀ·L⁻¹.
    let l = if upper { transpose(f, n) } else { f.to_vec() };
    // X = L⁻¹, lower triangular, by forward substitution column by column.
    let mut x: Vec<A::V> = (0..n * n).map(|_| a.number(0.0)).collect();
    for col in 0..n {
        for i in col..n {
            let mut t = a.number(if i == col { 1.0 } else { 0.0 });
            for k in col..i {
                let p = a.mul(&l[i * n + k], &x[k * n + col])?;
                t = a.sub(&t, &p)?;
            }
            x[i * n + col] = a.div(&t, &l[i * n + i])?;
        }
    }
    // Xᵀ·X, summing over the rows where X is nonzero (k ≥ max(i, j)).
    let mut y: Vec<A::V> = Vec::with_capacity(n * n);
    for i in 0..n {
        for j in 0..n {
            let from = i.max(j);
            let mut s = a.mul(&x[from * n + i], &x[from * n + j])?;
            for k in from + 1..n {
                let p = a.mul(&x[k * n + i], &x[k * n + j])?;
                s = a.add(&s, &p)?;
            }
            y.push(s);
        }
    }
    Ok(y)
}

/// A function of matrices planned here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    Det,
    Slogdet,
    Logdet,
    Inverse,
    /// The inverse and LAPACK's `info` of the factors it solves with.
    InverseEx,
    /// `upper` read from the node's `upper` argument.
    Cholesky,
    /// The factor and `potrf`'s `info`.
    CholeskyEx,
    CholeskyInverse,
    /// `getrf`'s packed factors and 1-based pivots.
    LuFactor,
    /// [`Function::LuFactor`] and `getrf`'s `info`.
    LuFactorEx,
    /// The unpacked `P`, `L`, `U` of `getrf`'s factors.
    Lu,
    /// `geqrf`'s packed Householder reflectors and their `tau`.
    Geqrf,
    /// `Q` (built by `orgqr`) and `R` ([`Options::complete`] or reduced).
    Qr,
    /// The ascending eigenvalues of the symmetric matrix of the `UPLO` triangle
    /// ([`spectrum::eigvalsh`]).
    Eigvalsh,
    /// The descending singular values ([`spectrum::svdvals`]).
    Svdvals,
    /// The number of singular values above torch's tolerance, int64
    /// ([`spectrum::matrix_rank`]).
    MatrixRank,
    /// The pseudo-inverse ([`spectrum::pinv`]).
    Pinv,
    /// `torch.pinverse`: [`Function::Pinv`] with `rtol = rcond`, `atol = 0`.
    Pinverse,
    /// The 2-norm condition number `σ_max/σ_min` (`σ_min/σ_max` for `p = −2`).
    Cond,
}

/// What a node's arguments choose of a [`Function`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Options {
    /// The Cholesky functions' `upper`: the upper factor, from the upper triangle;
    /// eigvalsh's `UPLO = 'U'` (torch reads either case): the upper triangle.
    pub upper: bool,
    /// QR's `mode='complete'` (`some=False`): `Q` square and `R` as tall as the input.
    pub complete: bool,
    /// `hermitian` of matrix_rank and pinv.
    pub hermitian: bool,
    /// `atol` and `rtol` where given (pinverse's `rcond` is its `rtol`, its `atol` 0, as
    /// torch's `linalg_pinv(input, rcond, hermitian)` passes them).
    pub atol: Option<f64>,
    pub rtol: Option<f64>,
    /// cond's `p = −2`: `σ_min/σ_max`.
    pub reciprocal: bool,
}

impl Options {
    /// `f`'s options from its node's arguments; torch's CPU kernels refuse LU without
    /// pivoting, and QR's mode `'r'` returns an empty `Q`, which ATC does not compile.
    pub fn read(f: Function, args: &Args<'_>) -> std::result::Result<Options, String> {
        if !args.bool_or("pivot", true)? {
            return Err("LU without pivoting (torch's CPU kernels pivot always)".into());
        }
        let complete = match (f, args.get("mode")) {
            (Function::Qr, Some(Argument::String(mode))) => match mode.as_str() {
                "reduced" => false,
                "complete" => true,
                other => {
                    return Err(format!(
                        "QR of mode '{other}': its Q is an empty tensor, which ATC does not compile"
                    ))
                }
            },
            (Function::Qr, _) => !args.bool_or("some", true)?,
            _ => false,
        };
        let upper = match args.get("UPLO") {
            None => args.bool_or("upper", false)?,
            Some(Argument::String(uplo)) => match uplo.as_str() {
                "U" | "u" => true,
                "L" | "l" => false,
                _ => return Err(format!("UPLO '{uplo}' (torch takes 'L' or 'U')")),
            },
            Some(other) => return Err(format!("UPLO is {}, expected 'L' or 'U'", other.kind())),
        };
        let tolerance = |name: &str| match args.get(name) {
            None | Some(Argument::None) => Ok(None),
            Some(Argument::Float(v)) => Ok(Some(*v)),
            Some(Argument::Int(v)) => Ok(Some(*v as f64)),
            Some(other) => Err(format!(
                "`{name}` given as {} is not exported (a number only)",
                other.kind()
            )),
        };
        let (atol, rtol) = if f == Function::Pinverse {
            (Some(0.0), Some(args.float("rcond")?))
        } else {
            (tolerance("atol")?, tolerance("rtol")?)
        };
        let reciprocal = match args.get("p") {
            None | Some(Argument::None) | Some(Argument::Int(2)) => false,
            Some(Argument::Int(-2)) => true,
            Some(Argument::Float(p)) if p.abs() == 2.0 => *p < 0.0,
            Some(other) => {
                return Err(format!(
                    "cond of order {other:?} is not exported (only None and ±2, the ratio of singular values)"
                ))
            }
        };
        Ok(Options {
            upper,
            complete,
            hermitian: args.bool_or("hermitian", false)?,
            atol,
            rtol,
            reciprocal,
        })
    }
}

/// What one result of a [`Function`] holds per input matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Form {
    /// The sizes that replace the input's two matrix dimensions: none for one number per
    /// matrix.
    pub dims: Vec<usize>,
    /// torch's element type of the result: float32, or int32 for LAPACK's pivots and
    /// `info` (whole numbers).
    pub dtype: DType,
}

impl Form {
    fn number(dtype: DType) -> Form {
        Form {
            dims: Vec::new(),
            dtype,
        }
    }

    fn matrix(rows: usize, cols: usize) -> Form {
        Form {
            dims: vec![rows, cols],
            dtype: DType::Float32,
        }
    }

    /// The number of entries per input matrix.
    #[allow(clippy::len_without_is_empty, reason = "a matrix form, never empty")]
    pub fn len(&self) -> usize {
        self.dims.iter().product()
    }
}

impl Function {
    /// Whether the function takes square matrices only (LU and QR take any).
    pub fn square(self) -> bool {
        !matches!(
            self,
            Function::LuFactor
                | Function::LuFactorEx
                | Function::Lu
                | Function::Geqrf
                | Function::Qr
                | Function::Svdvals
                | Function::MatrixRank
                | Function::Pinv
                | Function::Pinverse
                | Function::Cond
        )
    }

    /// What each result holds, for `rows`×`cols` input matrices (torch's outputs, in order).
    pub fn forms(self, rows: usize, cols: usize, options: Options) -> Vec<Form> {
        let steps = rows.min(cols);
        let info = Form::number(DType::Int32);
        match self {
            Function::Det | Function::Logdet => vec![Form::number(DType::Float32)],
            Function::Slogdet => vec![Form::number(DType::Float32); 2],
            Function::Inverse | Function::Cholesky | Function::CholeskyInverse => {
                vec![Form::matrix(rows, cols)]
            }
            Function::InverseEx | Function::CholeskyEx => vec![Form::matrix(rows, cols), info],
            Function::LuFactor | Function::LuFactorEx => {
                let pivots = Form {
                    dims: vec![steps],
                    dtype: DType::Int32,
                };
                let mut forms = vec![Form::matrix(rows, cols), pivots];
                if self == Function::LuFactorEx {
                    forms.push(info);
                }
                forms
            }
            Function::Lu => vec![
                Form::matrix(rows, rows),
                Form::matrix(rows, steps),
                Form::matrix(steps, cols),
            ],
            Function::Geqrf => vec![
                Form::matrix(rows, cols),
                Form {
                    dims: vec![steps],
                    dtype: DType::Float32,
                },
            ],
            Function::Qr if options.complete => {
                vec![Form::matrix(rows, rows), Form::matrix(rows, cols)]
            }
            Function::Qr => vec![Form::matrix(rows, steps), Form::matrix(steps, cols)],
            Function::Eigvalsh | Function::Svdvals => vec![Form {
                dims: vec![steps],
                dtype: DType::Float32,
            }],
            Function::MatrixRank => vec![Form::number(DType::Int64)],
            Function::Pinv | Function::Pinverse => vec![Form::matrix(cols, rows)],
            Function::Cond => vec![Form::number(DType::Float32)],
        }
    }
}

/// The aten overloads computed by a [`Function`] of their matrix argument (named as in
/// the schema).
pub const FUNCTIONS: &[(&str, &str, Function)] = &[
    ("linalg_det.default", "A", Function::Det),
    ("det.default", "self", Function::Det),
    ("linalg_slogdet.default", "A", Function::Slogdet),
    ("slogdet.default", "self", Function::Slogdet),
    ("logdet.default", "self", Function::Logdet),
    ("linalg_inv.default", "A", Function::Inverse),
    ("inverse.default", "self", Function::Inverse),
    ("linalg_inv_ex.default", "A", Function::InverseEx),
    ("linalg_cholesky.default", "self", Function::Cholesky),
    ("cholesky.default", "self", Function::Cholesky),
    ("linalg_cholesky_ex.default", "self", Function::CholeskyEx),
    (
        "cholesky_inverse.default",
        "self",
        Function::CholeskyInverse,
    ),
    ("linalg_lu_factor.default", "A", Function::LuFactor),
    ("linalg_lu_factor_ex.default", "A", Function::LuFactorEx),
    ("_lu_with_info.default", "self", Function::LuFactorEx),
    ("linalg_lu.default", "A", Function::Lu),
    ("geqrf.default", "self", Function::Geqrf),
    ("linalg_qr.default", "A", Function::Qr),
    ("qr.default", "self", Function::Qr),
    ("linalg_eigvalsh.default", "self", Function::Eigvalsh),
    ("linalg_svdvals.default", "A", Function::Svdvals),
    (
        "linalg_matrix_rank.atol_rtol_tensor",
        "input",
        Function::MatrixRank,
    ),
    (
        "linalg_matrix_rank.atol_rtol_float",
        "self",
        Function::MatrixRank,
    ),
    ("linalg_pinv.atol_rtol_tensor", "self", Function::Pinv),
    ("linalg_pinv.atol_rtol_float", "self", Function::Pinv),
    ("pinverse.default", "self", Function::Pinverse),
    ("linalg_cond.default", "self", Function::Cond),
];

/// The row of [`FUNCTIONS`] for overload `target`: its input's name and its function.
pub fn function(target: &str) -> Option<(&'static str, Function)> {
    FUNCTIONS
        .iter()
        .find(|(t, _, _)| *t == target)
        .map(|&(_, input, f)| (input, f))
}

/// The results of `f` (with `options`) of `m` (`rows`×`cols`, row-major): per result of
/// [`Function::forms`], its entries row-major.
pub fn apply<A: Ops>(
    a: &mut A,
    f: Function,
    options: Options,
    m: &[A::V],
    [rows, cols]: [usize; 2],
) -> Result<Vec<Vec<A::V>>> {
    let n = rows;
    let upper = options.upper;
    let tolerances = |a: &mut A| {
        let atol = options.atol.map(|v| a.number(v));
        let rtol = options.rtol.map(|v| a.number(v));
        spectrum::tolerances(a, atol, rtol, rows, cols)
    };
    if options.hermitian && rows != cols {
        return Err(format!(
            "hermitian {rows}×{cols} matrices (torch takes square ones)"
        ));
    }
    Ok(match f {
        Function::Det => vec![vec![det(a, m, n)?]],
        Function::Slogdet => {
            let (sign, log) = slogdet(a, m, n)?;
            vec![vec![sign], vec![log]]
        }
        Function::Logdet => vec![vec![logdet(a, m, n)?]],
        Function::Inverse => vec![inverse(a, m, n)?],
        Function::InverseEx => {
            let factors = lu(a, m.to_vec(), n, n)?;
            let info = factors.info(a)?;
            vec![inverse_from(a, &factors, n)?, vec![info]]
        }
        Function::Cholesky => vec![cholesky(a, m, n, upper)?.factor],
        Function::CholeskyEx => {
            let c = cholesky(a, m, n, upper)?;
            let info = c.info(a)?;
            vec![c.factor, vec![info]]
        }
        Function::CholeskyInverse => vec![cholesky_inverse(a, m, n, upper)?],
        Function::LuFactor | Function::LuFactorEx => {
            let factors = lu(a, m.to_vec(), rows, cols)?;
            let pivots = factors
                .pivots
                .iter()
                .map(|p| a.add_c(p, 1.0))
                .collect::<Result<_>>()?;
            let mut outs = vec![factors.lu.clone(), pivots];
            if f == Function::LuFactorEx {
                outs.push(vec![factors.info(a)?]);
            }
            outs
        }
        Function::Lu => {
            let factors = lu(a, m.to_vec(), rows, cols)?;
            unpack(a, &factors, rows, cols)?.into()
        }
        Function::Geqrf => {
            let qr = geqrf(a, m.to_vec(), rows, cols)?;
            vec![qr.packed, qr.tau]
        }
        Function::Qr => {
            let qr = geqrf(a, m.to_vec(), rows, cols)?;
            let q_cols = if options.complete {
                rows
            } else {
                rows.min(cols)
            };
            let q = orgqr(a, &qr, rows, cols, q_cols)?;
            let r = (0..q_cols * cols)
                .map(|at| {
                    let (i, j) = (at / cols, at % cols);
                    if j >= i {
                        qr.packed[i * cols + j].clone()
                    } else {
                        a.number(0.0)
                    }
                })
                .collect();
            vec![q, r]
        }
        Function::Eigvalsh => vec![spectrum::eigvalsh(a, m, n, upper)?],
        Function::Svdvals => vec![spectrum::svdvals(a, m, rows, cols)?],
        Function::MatrixRank => {
            let t = tolerances(a)?;
            vec![vec![spectrum::matrix_rank(
                a,
                m,
                rows,
                cols,
                t,
                options.hermitian,
            )?]]
        }
        Function::Pinv | Function::Pinverse => {
            let t = tolerances(a)?;
            vec![spectrum::pinv(a, m, rows, cols, t, options.hermitian)?]
        }
        Function::Cond => vec![vec![spectrum::cond(a, m, rows, cols, options.reciprocal)?]],
    })
}

/// A QR factorisation by Householder reflectors, LAPACK's packed form.
pub struct Qr<V> {
    /// Row-major `rows`×`cols`: `R` on and above the diagonal, below it each reflector's
    /// vector `v` (its first entry, 1, implied).
    pub packed: Vec<V>,
    /// Per step, the reflector's scale: `H = I − tau·v·vᵀ`.
    pub tau: Vec<V>,
}

/// `m` (`rows`×`cols`, row-major) reduced to `R` as LAPACK's `geqr2` does: at step `k`,
/// `dlarfg` on column `k` from the diagonal down (`α` the diagonal entry, `x` below it):
/// where `x` is zero, `tau = 0` and nothing changes; else `β = −sign(α)·√(α² + |x|²)` (`−√…`
/// for α = 0), `tau = (β − α)/β`, `v = x/(α − β)`, and the diagonal becomes `β`. The
/// reflector then applies to the columns on the right (`dlarf`). A last step with no row
/// below the diagonal has `tau = 0`.
pub fn geqrf<A: Ops>(a: &mut A, mut m: Vec<A::V>, rows: usize, cols: usize) -> Result<Qr<A::V>> {
    let at = |i: usize, j: usize| i * cols + j;
    let steps = rows.min(cols);
    let mut tau = Vec::with_capacity(steps);
    for k in 0..steps {
        if k + 1 >= rows {
            tau.push(a.number(0.0));
            continue;
        }
        let alpha = m[at(k, k)].clone();
        let mut squares = a.mul(&m[at(k + 1, k)], &m[at(k + 1, k)])?;
        for i in k + 2..rows {
            let sq = a.mul(&m[at(i, k)], &m[at(i, k)])?;
            squares = a.add(&squares, &sq)?;
        }
        let zero = a.equal_c(&squares, 0.0)?;
        let alpha_squared = a.mul(&alpha, &alpha)?;
        let total = a.add(&alpha_squared, &squares)?;
        let norm = a.f1(Fn::Sqrt, &total)?;
        let negative = a.less_c(&alpha, 0.0)?;
        let minus = a.f1(Fn::Neg, &norm)?;
        let beta = a.select(&negative, &norm, &minus)?;
        let gap = a.sub(&beta, &alpha)?;
        let t = a.div(&gap, &beta)?;
        let zero_tau = a.number(0.0);
        tau.push(a.select(&zero, &zero_tau, &t)?);
        let d = a.sub(&alpha, &beta)?;
        let scale = a.c_div(1.0, &d)?;
        for i in k + 1..rows {
            let v = a.mul(&m[at(i, k)], &scale)?;
            m[at(i, k)] = a.select(&zero, &m[at(i, k)], &v)?;
        }
        m[at(k, k)] = a.select(&zero, &alpha, &beta)?;
        // H·A on the columns to the right: w = vᵀ·a_j, a_j −= tau·w·v.
        for j in k + 1..cols {
            let mut w = m[at(k, j)].clone();
            for i in k + 1..rows {
                let p = a.mul(&m[at(i, k)], &m[at(i, j)])?;
                w = a.add(&w, &p)?;
            }
            let tw = a.mul(&tau[k], &w)?;
            m[at(k, j)] = a.sub(&m[at(k, j)], &tw)?;
            for i in k + 1..rows {
                let p = a.mul(&tw, &m[at(i, k)])?;
                m[at(i, j)] = a.sub(&m[at(i, j)], &p)?;
            }
        }
    }
    Ok(Qr { packed: m, tau })
}

/// The first `q_cols` columns of `Q = H₀·H₁·…` from `geqrf`'s reflectors, as `orgqr`
/// builds it: the identity's columns, the reflectors applied from the last.
fn orgqr<A: Ops>(
    a: &mut A,
    f: &Qr<A::V>,
    rows: usize,
    cols: usize,
    q_cols: usize,
) -> Result<Vec<A::V>> {
    let at = |i: usize, j: usize| i * q_cols + j;
    let mut q: Vec<A::V> = (0..rows * q_cols)
        .map(|k| a.number(if k / q_cols == k % q_cols { 1.0 } else { 0.0 }))
        .collect();
    for k in (0..f.tau.len()).rev() {
        if k + 1 >= rows {
            continue; // tau = 0: H is the identity.
        }
        for j in 0..q_cols {
            let mut w = q[at(k, j)].clone();
            for i in k + 1..rows {
                let p = a.mul(&f.packed[i * cols + k], &q[at(i, j)])?;
                w = a.add(&w, &p)?;
            }
            let tw = a.mul(&f.tau[k], &w)?;
            q[at(k, j)] = a.sub(&q[at(k, j)], &tw)?;
            for i in k + 1..rows {
                let p = a.mul(&tw, &f.packed[i * cols + k])?;
                q[at(i, j)] = a.sub(&q[at(i, j)], &p)?;
            }
        }
    }
    Ok(q)
}

/// torch's `lu_unpack` of the factors of a `rows`×`cols` matrix: `P` (`rows`×`rows`, with
/// `P[perm[c]][c] = 1` for the row order `perm` the swaps leave), `L` (`rows`×`k`, unit
/// diagonal) and `U` (`k`×`cols`), `k = min(rows, cols)`; `A = P·L·U`.
fn unpack<A: Ops>(a: &mut A, f: &Lu<A::V>, rows: usize, cols: usize) -> Result<[Vec<A::V>; 3]> {
    let steps = rows.min(cols);
    let mut perm: Vec<A::V> = (0..rows).map(|i| a.number(i as f64)).collect();
    for (k, flags) in f.swaps.iter().enumerate() {
        for (i, flag) in (k + 1..rows).zip(flags) {
            let (top, other) = (perm[k].clone(), perm[i].clone());
            perm[k] = a.select(flag, &other, &top)?;
            perm[i] = a.select(flag, &top, &other)?;
        }
    }
    let mut p = Vec::with_capacity(rows * rows);
    for r in 0..rows {
        for owner in &perm {
            let here = a.equal_c(owner, r as f64)?;
            let zero = a.number(0.0);
            p.push(a.select_c(&here, 1.0, &zero)?);
        }
    }
    let l = (0..rows * steps)
        .map(|at| {
            let (i, j) = (at / steps, at % steps);
            match i.cmp(&j) {
                std::cmp::Ordering::Greater => f.lu[i * cols + j].clone(),
                std::cmp::Ordering::Equal => a.number(1.0),
                std::cmp::Ordering::Less => a.number(0.0),
            }
        })
        .collect();
    let u = (0..steps * cols)
        .map(|at| {
            let (i, j) = (at / cols, at % cols);
            if j >= i {
                f.lu[i * cols + j].clone()
            } else {
                a.number(0.0)
            }
        })
        .collect();
    Ok([p, l, u])
}

/// `linalg_vander(x, N)`'s columns for entries `x`: torch's row of ones, then the
/// cumulative products `x, x·x, (x·x)·x, …` (`N` columns in all, the input's last size by
/// default; torch needs `N > 1`).
pub fn vander<A: Ops>(a: &mut A, x: &A::V, columns: u64) -> Result<Vec<A::V>> {
    if columns < 2 {
        return Err(format!("vander with N = {columns} (torch needs N > 1)"));
    }
    // Ones shaped as `x`, whatever its values: a `Where` of two ones.
    let finite = a.f1(Fn::IsNan, x)?;
    let one = a.number(1.0);
    let mut out = vec![a.select_c(&finite, 1.0, &one)?, x.clone()];
    for _ in 2..columns {
        let last = out[out.len() - 1].clone();
        out.push(a.mul(&last, x)?);
    }
    Ok(out)
}

/// One step of [`power_steps`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// `z ← z·z`.
    Square,
    /// `result ← result·z`, or `result ← z` for the first.
    Multiply,
    /// `result ← result·A` (torch's `|n| = 3`: `(A·A)·A`).
    TimesBase,
}

/// torch's `linalg_matrix_power` for `|n| ≥ 1` (`n` negative inverts first): starting with
/// `z = A`, for each bit of `|n|` from the least significant, `z` squared (but for the
/// first bit) and, where the bit is 1, the result multiplied by `z`; `|n| = 3` is torch's
/// special case `(A·A)·A` (`|n| = 2`, `A·A`, is what the loop gives).
pub fn power_steps(n: i64) -> Vec<Step> {
    if n.unsigned_abs() == 3 {
        return vec![Step::Square, Step::Multiply, Step::TimesBase];
    }
    let mut steps = Vec::new();
    let mut m = n.unsigned_abs();
    let mut first = true;
    while m > 0 {
        if !first {
            steps.push(Step::Square);
        }
        first = false;
        if m % 2 == 1 {
            steps.push(Step::Multiply);
        }
        m /= 2;
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::super::series::Scalar;
    use super::*;

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-9)
    }

    #[test]
    fn lu_pivots_on_the_first_largest_magnitude() {
        // Column 0: |−3| and |3| tie; the first (row 1) is the pivot.
        let m = vec![1.0, 2.0, 0.0, -3.0, 1.0, 1.0, 3.0, 0.0, 2.0];
        let f = lu(&mut Scalar, m, 3, 3).unwrap();
        assert_eq!(f.swaps[0], [1.0, 0.0]);
        assert_eq!(f.lu[0], -3.0);
        assert_eq!(f.sign, -1.0);
        // A zero pivot column is left alone, no division by zero.
        let f = lu(&mut Scalar, vec![0.0, 1.0, 0.0, 2.0], 2, 2).unwrap();
        assert_eq!(f.lu, [0.0, 1.0, 0.0, 2.0]);
    }

    #[test]
    fn determinants_follow_torch_signs() {
        let m = [2.0, 1.0, 0.0, 1.0, 3.0, 1.0, 0.0, 1.0, 4.0];
        assert!((det(&mut Scalar, &m, 3).unwrap() - 18.0).abs() < 1e-12);
        let swap = [0.0, 1.0, 1.0, 0.0];
        assert_eq!(det(&mut Scalar, &swap, 2).unwrap(), -1.0);
        let (sign, log) = slogdet(&mut Scalar, &swap, 2).unwrap();
        assert_eq!((sign, log), (-1.0, 0.0));
        assert!(logdet(&mut Scalar, &swap, 2).unwrap().is_nan());
        let singular = [1.0, 2.0, 2.0, 4.0];
        assert_eq!(det(&mut Scalar, &singular, 2).unwrap(), 0.0);
        let (sign, log) = slogdet(&mut Scalar, &singular, 2).unwrap();
        assert_eq!((sign, log), (0.0, f64::NEG_INFINITY));
        assert_eq!(
            logdet(&mut Scalar, &singular, 2).unwrap(),
            f64::NEG_INFINITY
        );
    }

    #[test]
    fn a_matrix_singular_to_float32_precision_is_told_apart() {
        let singular = [1.0, 2.0, 3.0, 2.0, 4.0, 6.0, 1.0, 0.0, 1.0];
        assert_eq!(singular_in_float32(&singular, [3, 3]), Ok(true));
        let nearly = [1.0, 2.0, 2.0, 4.0 + 1e-9];
        assert_eq!(singular_in_float32(&nearly, [2, 2]), Ok(true));
        let regular = [2.0, 1.0, 0.0, 1.0, 3.0, 1.0, 0.0, 1.0, 4.0];
        assert_eq!(singular_in_float32(&regular, [3, 3]), Ok(false));
        let infinite = [f64::INFINITY, 1.0, 1.0, 2.0];
        assert_eq!(singular_in_float32(&infinite, [2, 2]), Ok(false));
    }

    #[test]
    fn the_inverse_undoes_the_matrix() {
        let m = [0.0, 2.0, 1.0, 1.0, 1.0, 0.0, 3.0, 0.0, 1.0];
        let x = inverse(&mut Scalar, &m, 3).unwrap();
        let product: Vec<f64> = (0..9)
            .map(|at| (0..3).map(|k| m[at / 3 * 3 + k] * x[k * 3 + at % 3]).sum())
            .collect();
        assert!(close(
            &product,
            &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
        ));
    }

    #[test]
    fn cholesky_factors_and_inverts() {
        let m = [4.0, 2.0, 2.0, 5.0];
        assert!(close(
            &cholesky(&mut Scalar, &m, 2, false).unwrap().factor,
            &[2.0, 0.0, 1.0, 2.0]
        ));
        assert!(close(
            &cholesky(&mut Scalar, &m, 2, true).unwrap().factor,
            &[2.0, 1.0, 0.0, 2.0]
        ));
        let l = [2.0, 0.0, 1.0, 2.0];
        let inv = cholesky_inverse(&mut Scalar, &l, 2, false).unwrap();
        assert!(close(
            &inv,
            &[5.0 / 16.0, -2.0 / 16.0, -2.0 / 16.0, 4.0 / 16.0]
        ));
        let u = [2.0, 1.0, 0.0, 2.0];
        assert!(close(
            &cholesky_inverse(&mut Scalar, &u, 2, true).unwrap(),
            &inv
        ));
    }

    #[test]
    fn powers_follow_torchs_binary_decomposition() {
        use Step::{Multiply as M, Square as S, TimesBase as A};
        assert_eq!(power_steps(1), [M]);
        assert_eq!(power_steps(2), [S, M]);
        assert_eq!(power_steps(3), [S, M, A]);
        assert_eq!(power_steps(-4), [S, S, M]);
        assert_eq!(power_steps(5), [M, S, S, M]);
    }

    /// `p·l·u` of `rows`×`rows`, `rows`×`k` and `k`×`cols` matrices.
    fn product(p: &[f64], l: &[f64], u: &[f64], rows: usize, cols: usize) -> Vec<f64> {
        let k = rows.min(cols);
        let lu: Vec<f64> = (0..rows * cols)
            .map(|at| {
                (0..k)
                    .map(|t| l[at / cols * k + t] * u[t * cols + at % cols])
                    .sum()
            })
            .collect();
        (0..rows * cols)
            .map(|at| {
                (0..rows)
                    .map(|t| p[at / cols * rows + t] * lu[t * cols + at % cols])
                    .sum()
            })
            .collect()
    }

    #[test]
    fn lu_of_wide_tall_and_square_matrices_rebuilds_them() {
        let wide = [
            1.0, -2.0, 3.0, 0.5, 4.0, 2.0, 1.0, -1.0, 0.0, 3.0, -3.0, 0.5, 2.0, 1.0, 1.0,
        ];
        for (rows, cols) in [(3, 5), (5, 3), (3, 3)] {
            let m = &wide[..rows * cols];
            let out = apply(
                &mut Scalar,
                Function::Lu,
                Options::default(),
                m,
                [rows, cols],
            )
            .unwrap();
            let forms = Function::Lu.forms(rows, cols, Options::default());
            assert_eq!(
                out.iter().map(Vec::len).collect::<Vec<_>>(),
                forms.iter().map(Form::len).collect::<Vec<_>>()
            );
            assert!(
                close(&product(&out[0], &out[1], &out[2], rows, cols), m),
                "{rows}×{cols}"
            );
        }
        // The 1-based pivots of the first largest magnitude: |−3| in column 0 (row 3 of 3).
        let m = [1.0, 2.0, 0.0, 0.5, 4.0, 2.0, -3.0, 1.0, 1.0];
        let out = apply(
            &mut Scalar,
            Function::LuFactorEx,
            Options::default(),
            &m,
            [3, 3],
        )
        .unwrap();
        assert_eq!(out[1][0], 3.0);
        assert_eq!(out[2], [0.0]);
    }

    #[test]
    fn qr_follows_lapacks_reflector_signs_and_rebuilds_the_matrix() {
        let m = [1.0, 2.0, 3.0, 4.0, -1.0, 0.5, 2.0, 0.0, 1.0, 1.0, -2.0, 3.0];
        for (rows, cols) in [(2, 2), (3, 4), (4, 3)] {
            for complete in [false, true] {
                let options = Options {
                    upper: false,
                    complete,
                    ..Options::default()
                };
                let m = &m[..rows * cols];
                let out = apply(&mut Scalar, Function::Qr, options, m, [rows, cols]).unwrap();
                let q_cols = out[0].len() / rows;
                let qr: Vec<f64> = (0..rows * cols)
                    .map(|at| {
                        (0..q_cols)
                            .map(|t| out[0][at / cols * q_cols + t] * out[1][t * cols + at % cols])
                            .sum()
                    })
                    .collect();
                assert!(close(&qr, m), "{rows}×{cols} complete={complete}");
                let qtq: Vec<f64> = (0..q_cols * q_cols)
                    .map(|at| {
                        (0..rows)
                            .map(|t| {
                                out[0][t * q_cols + at / q_cols] * out[0][t * q_cols + at % q_cols]
                            })
                            .sum()
                    })
                    .collect();
                let eye: Vec<f64> = (0..q_cols * q_cols)
                    .map(|at| f64::from(u8::from(at / q_cols == at % q_cols)))
                    .collect();
                assert!(close(&qtq, &eye));
            }
        }
        // β = −sign(α)·‖column‖: R's diagonal is negative for a positive pivot, as torch's.
        let out = apply(
            &mut Scalar,
            Function::Geqrf,
            Options::default(),
            &m[..4],
            [2, 2],
        )
        .unwrap();
        assert!((out[0][0] + 10f64.sqrt()).abs() < 1e-12);
        assert!((out[1][0] - (1.0 + 1.0 / 10f64.sqrt())).abs() < 1e-12);
        assert_eq!(out[1][1], 0.0);
        // A column already reduced is left alone (tau 0).
        let out = apply(
            &mut Scalar,
            Function::Geqrf,
            Options::default(),
            &[2.0, 1.0, 0.0, 3.0],
            [2, 2],
        )
        .unwrap();
        assert_eq!(out, [vec![2.0, 1.0, 0.0, 3.0], vec![0.0, 0.0]]);
    }

    #[test]
    fn info_names_the_first_zero_pivot_or_failing_minor() {
        let singular = [1.0, 2.0, 2.0, 4.0];
        let out = apply(
            &mut Scalar,
            Function::LuFactorEx,
            Options::default(),
            &singular,
            [2, 2],
        )
        .unwrap();
        assert_eq!(out[2], [2.0]);
        let zero = [0.0; 4];
        let out = apply(
            &mut Scalar,
            Function::LuFactorEx,
            Options::default(),
            &zero,
            [2, 2],
        )
        .unwrap();
        assert_eq!(out[2], [1.0]);
        let out = apply(
            &mut Scalar,
            Function::InverseEx,
            Options::default(),
            &singular,
            [2, 2],
        )
        .unwrap();
        assert_eq!(out[1], [2.0]);
        let indefinite = [1.0, 2.0, 2.0, 1.0];
        for upper in [false, true] {
            let out = apply(
                &mut Scalar,
                Function::CholeskyEx,
                Options {
                    upper,
                    ..Options::default()
                },
                &indefinite,
                [2, 2],
            )
            .unwrap();
            assert_eq!(out[1], [2.0]);
        }
        let negative = [-1.0, 0.0, 0.0, 1.0];
        let out = apply(
            &mut Scalar,
            Function::CholeskyEx,
            Options::default(),
            &negative,
            [2, 2],
        )
        .unwrap();
        assert_eq!(out[1], [1.0]);
        let definite = [4.0, 2.0, 2.0, 5.0];
        let out = apply(
            &mut Scalar,
            Function::CholeskyEx,
            Options::default(),
            &definite,
            [2, 2],
        )
        .unwrap();
        assert_eq!(out[1], [0.0]);
    }

    #[test]
    fn orders_above_the_cap_are_refused_by_size() {
        assert_eq!(matrix_sizes("det", &[2, 5, 5], true), Ok((5, 5)));
        assert!(matrix_sizes("det", &[9, 9], true)
            .unwrap_err()
            .contains("9×9"));
        assert!(matrix_sizes("det", &[2, 3], true).is_err());
        assert_eq!(matrix_sizes("lu", &[2, 3], false), Ok((2, 3)));
        assert!(matrix_sizes("lu", &[2, 9], false).is_err());
        assert!(matrix_sizes("det", &[3], true).is_err());
    }
}
