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
//!   is contiguous (`_linalg_det_out`, `_linalg_slogdet_out`, `_linalg_solve_ex_out`), and
//!   so do [`det`], [`slogdet`] and [`inverse`], so their pivots are torch's.
//! - `det = det(P)·∏ diag(U)`; `slogdet`: `sign = ∏ sgn(diag(U))·det(P)`, `logabsdet = Σ
//!   log|diag(U)|`; `logdet` is `logabsdet`, NaN where `sign` is −1 (`at::logdet`).
//! - The inverse solves `A·X = I` through the factors of `Aᵀ` as `getrs('T')` does:
//!   `Uᵀ·Y = I`, `Lᵀ·Z = Y`, then the row swaps undone in reverse order (`laswp`, −1).
//! - Cholesky as `potf2` (lower): `l_jj = √(a_jj − Σ l_jk²)`, the column below scaled by
//!   `1/l_jj`; the upper factor is computed from the upper triangle (the lower algorithm
//!   on `Aᵀ`, transposed back), the other triangle zero. An input that is not positive
//!   definite, where torch raises, gives NaN.
//! - `cholesky_inverse` of a triangular factor as `potri`: the factor's inverse `X` by
//!   substitution (`trtri`), then `Xᵀ·X` (lower) or `X·Xᵀ` (upper), only the factor's
//!   triangle read.
//! - `matrix_power` by torch's binary decomposition ([`power_steps`]).

use super::decompose::Fn;
use super::series::{Ops, Result};

/// The largest matrix order unrolled: the graph of a factorisation grows as n³.
pub const MAX_ORDER: u64 = 8;

/// The order `n` of the square matrices in the last two dimensions of `sizes`, which
/// `op` takes: at least 2-D, square, at most [`MAX_ORDER`].
pub fn order(op: &str, sizes: &[u64]) -> std::result::Result<usize, String> {
    let r = sizes.len();
    if r < 2 {
        return Err(format!(
            "{op} of a rank-{r} tensor (torch takes matrices: at least 2-D)"
        ));
    }
    let (rows, cols) = (sizes[r - 2], sizes[r - 1]);
    if rows != cols {
        return Err(format!(
            "{op} of {rows}×{cols} matrices (torch takes square ones)"
        ));
    }
    if rows > MAX_ORDER {
        return Err(format!(
            "{op} of {rows}×{rows} matrices: the factorisation is unrolled over the order, its graph growing as n³, and is exported up to {MAX_ORDER}×{MAX_ORDER}"
        ));
    }
    Ok(rows as usize)
}

/// The transpose of the `n`×`n` row-major `m`.
pub fn transpose<V: Clone>(m: &[V], n: usize) -> Vec<V> {
    (0..n * n)
        .map(|at| m[(at % n) * n + at / n].clone())
        .collect()
}

/// An LU factorisation `P·A = L·U` of an `n`×`n` matrix, LAPACK's packed form.
pub struct Lu<V> {
    /// Row-major: `U` on and above the diagonal, `L` (unit diagonal implied) below.
    pub lu: Vec<V>,
    /// For step `k`, whether row `i` (`k < i < n`, in order) was swapped with row `k`
    /// (at most one is).
    pub swaps: Vec<Vec<V>>,
    /// `det(P)`: ±1.
    pub sign: V,
}

/// `m` (`n`×`n`, row-major) factorised as LAPACK's `getrf` does (see the module docs).
pub fn lu<A: Ops>(a: &mut A, mut m: Vec<A::V>, n: usize) -> Result<Lu<A::V>> {
    let mut sign = a.number(1.0);
    let mut swaps = Vec::with_capacity(n);
    for k in 0..n {
        // The pivot: the first largest magnitude in column k, from row k down.
        let mut best = a.f1(Fn::Abs, &m[k * n + k])?;
        let mut at = a.number(k as f64);
        for i in k + 1..n {
            let v = a.f1(Fn::Abs, &m[i * n + k])?;
            let larger = a.f2(Fn::Greater, &v, &best)?;
            best = a.select(&larger, &v, &best)?;
            let index = a.number(i as f64);
            at = a.select(&larger, &index, &at)?;
        }
        let flags: Vec<A::V> = (k + 1..n)
            .map(|i| a.equal_c(&at, i as f64))
            .collect::<Result<_>>()?;
        for j in 0..n {
            let mut pivot_row = m[k * n + j].clone();
            for (i, flag) in (k + 1..n).zip(&flags) {
                pivot_row = a.select(flag, &m[i * n + j], &pivot_row)?;
            }
            for (i, flag) in (k + 1..n).zip(&flags) {
                m[i * n + j] = a.select(flag, &m[k * n + j], &m[i * n + j])?;
            }
            m[k * n + j] = pivot_row;
        }
        if k + 1 < n {
            let kept = a.equal_c(&at, k as f64)?;
            let flipped = a.f1(Fn::Neg, &sign)?;
            sign = a.select(&kept, &sign, &flipped)?;
        }
        swaps.push(flags);
        let pivot = m[k * n + k].clone();
        let zero = a.equal_c(&pivot, 0.0)?;
        for i in k + 1..n {
            let q = a.div(&m[i * n + k], &pivot)?;
            m[i * n + k] = a.select(&zero, &m[i * n + k], &q)?;
        }
        for i in k + 1..n {
            for j in k + 1..n {
                let t = a.mul(&m[i * n + k], &m[k * n + j])?;
                m[i * n + j] = a.sub(&m[i * n + j], &t)?;
            }
        }
    }
    Ok(Lu { lu: m, swaps, sign })
}

/// Whether `m` (`n`×`n`, row-major) is singular to float32 precision: a pivot of its LU
/// factors (those [`det`] takes) is at most `n · ε · max|m|`, ε float32's. torch computes
/// such a matrix's log-determinant or inverse from its LAPACK kernel's rounding (a pivot
/// that exact arithmetic makes 0 comes out as noise, or the kernel reports the matrix
/// singular), which no other order of the same operations reproduces.
pub fn singular_in_float32(m: &[f64], n: usize) -> Result<bool> {
    use super::series::Scalar;
    let scale = m.iter().fold(0f64, |acc, v| acc.max(v.abs()));
    let f = lu(&mut Scalar, transpose(m, n), n)?;
    let tiny = n as f64 * f64::from(f32::EPSILON) * scale;
    Ok(tiny.is_finite() && (0..n).any(|i| f.lu[i * n + i].abs() <= tiny))
}

/// `det(m)` as `torch.linalg.det` computes it (the factors of `mᵀ`).
pub fn det<A: Ops>(a: &mut A, m: &[A::V], n: usize) -> Result<A::V> {
    let f = lu(a, transpose(m, n), n)?;
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
    let f = lu(a, transpose(m, n), n)?;
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
    let f = lu(a, transpose(m, n), n)?;
    let at = |i: usize, j: usize| i * n + j;
    let mut x: Vec<A::V> = (0..n * n)
        .map(|k| a.number(if k / n == k % n { 1.0 } else { 0.0 }))
        .collect();
    for col in 0..n {
        // Uᵀ·Y = B: y_i = (b_i − Σ_{k<i} u_ki·y_k) / u_ii.
        for i in 0..n {
            let mut t = x[at(i, col)].clone();
            for k in 0..i {
                let p = a.mul(&f.lu[at(k, i)], &x[at(k, col)])?;
                t = a.sub(&t, &p)?;
            }
            x[at(i, col)] = a.div(&t, &f.lu[at(i, i)])?;
        }
        // Lᵀ·Z = Y: z_i = y_i − Σ_{k>i} l_ki·z_k, from the last row up.
        for i in (0..n).rev() {
            let mut t = x[at(i, col)].clone();
            for k in i + 1..n {
                let p = a.mul(&f.lu[at(k, i)], &x[at(k, col)])?;
                t = a.sub(&t, &p)?;
            }
            x[at(i, col)] = t;
        }
    }
    // The row swaps of the factorisation, undone from the last.
    for k in (0..n).rev() {
        for (i, flag) in (k + 1..n).zip(&f.swaps[k]) {
            for j in 0..n {
                let (top, other) = (x[at(k, j)].clone(), x[at(i, j)].clone());
                x[at(k, j)] = a.select(flag, &other, &top)?;
                x[at(i, j)] = a.select(flag, &top, &other)?;
            }
        }
    }
    Ok(x)
}

/// The lower Cholesky factor of `m` by `potf2` (only its lower triangle read).
fn cholesky_lower<A: Ops>(a: &mut A, m: &[A::V], n: usize) -> Result<Vec<A::V>> {
    let mut l: Vec<A::V> = (0..n * n).map(|_| a.number(0.0)).collect();
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
        let diagonal = a.f1(Fn::Sqrt, &d)?;
        let scale = a.c_div(1.0, &diagonal)?;
        l[j * n + j] = diagonal;
        for i in j + 1..n {
            let mut t = m[i * n + j].clone();
            for k in 0..j {
                let p = a.mul(&l[i * n + k], &l[j * n + k])?;
                t = a.sub(&t, &p)?;
            }
            l[i * n + j] = a.mul(&t, &scale)?;
        }
    }
    Ok(l)
}

/// `torch.linalg.cholesky(m, upper=upper)`: the factor, zero in the other triangle.
pub fn cholesky<A: Ops>(a: &mut A, m: &[A::V], n: usize, upper: bool) -> Result<Vec<A::V>> {
    if upper {
        let l = cholesky_lower(a, &transpose(m, n), n)?;
        Ok(transpose(&l, n))
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

/// A function of square matrices planned here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    Det,
    Slogdet,
    Logdet,
    Inverse,
    /// `upper` read from the node's `upper` argument.
    Cholesky,
    CholeskyInverse,
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
    ("linalg_cholesky.default", "self", Function::Cholesky),
    ("cholesky.default", "self", Function::Cholesky),
    (
        "cholesky_inverse.default",
        "self",
        Function::CholeskyInverse,
    ),
];

/// The row of [`FUNCTIONS`] for overload `target`: its input's name and its function.
pub fn function(target: &str) -> Option<(&'static str, Function)> {
    FUNCTIONS
        .iter()
        .find(|(t, _, _)| *t == target)
        .map(|&(_, input, f)| (input, f))
}

/// One result of a [`Function`] of one matrix.
pub enum Output<V> {
    /// A number per matrix (the matrix dimensions dropped).
    Number(V),
    /// An `n`×`n` matrix, row-major.
    Matrix(Vec<V>),
}

/// The results of `f` (with `upper` for the Cholesky functions) of `m` (`n`×`n`).
pub fn apply<A: Ops>(
    a: &mut A,
    f: Function,
    upper: bool,
    m: &[A::V],
    n: usize,
) -> Result<Vec<Output<A::V>>> {
    Ok(match f {
        Function::Det => vec![Output::Number(det(a, m, n)?)],
        Function::Slogdet => {
            let (sign, log) = slogdet(a, m, n)?;
            vec![Output::Number(sign), Output::Number(log)]
        }
        Function::Logdet => vec![Output::Number(logdet(a, m, n)?)],
        Function::Inverse => vec![Output::Matrix(inverse(a, m, n)?)],
        Function::Cholesky => vec![Output::Matrix(cholesky(a, m, n, upper)?)],
        Function::CholeskyInverse => vec![Output::Matrix(cholesky_inverse(a, m, n, upper)?)],
    })
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
        let f = lu(&mut Scalar, m, 3).unwrap();
        assert_eq!(f.swaps[0], [1.0, 0.0]);
        assert_eq!(f.lu[0], -3.0);
        assert_eq!(f.sign, -1.0);
        // A zero pivot column is left alone, no division by zero.
        let f = lu(&mut Scalar, vec![0.0, 1.0, 0.0, 2.0], 2).unwrap();
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
        assert_eq!(singular_in_float32(&singular, 3), Ok(true));
        let nearly = [1.0, 2.0, 2.0, 4.0 + 1e-9];
        assert_eq!(singular_in_float32(&nearly, 2), Ok(true));
        let regular = [2.0, 1.0, 0.0, 1.0, 3.0, 1.0, 0.0, 1.0, 4.0];
        assert_eq!(singular_in_float32(&regular, 3), Ok(false));
        let infinite = [f64::INFINITY, 1.0, 1.0, 2.0];
        assert_eq!(singular_in_float32(&infinite, 2), Ok(false));
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
            &cholesky(&mut Scalar, &m, 2, false).unwrap(),
            &[2.0, 0.0, 1.0, 2.0]
        ));
        assert!(close(
            &cholesky(&mut Scalar, &m, 2, true).unwrap(),
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

    #[test]
    fn orders_above_the_cap_are_refused_by_size() {
        assert_eq!(order("det", &[2, 5, 5]), Ok(5));
        assert!(order("det", &[9, 9]).unwrap_err().contains("9×9"));
        assert!(order("det", &[2, 3]).is_err());
        assert!(order("det", &[3]).is_err());
    }
}
