//! Eigenvalues of symmetric matrices and singular values of small matrices, and what
//! torch derives from them (rank, pseudo-inverse, condition number, spectral and nuclear
//! norms), written once over the series [`Ops`](super::series::Ops) like
//! [`linalg`](super::linalg): unrolled over the matrix sizes, every data-dependent choice
//! a `Where`, so one program is evaluated on numbers and emitted as element-wise ONNX
//! nodes over the matrices' entries.
//!
//! torch computes these with LAPACK (`syevd`, `gesdd`); the values (not the vectors) of a
//! decomposition are unique, so any convergent algorithm reproduces them to rounding:
//! - symmetric eigenvalues by the cyclic Jacobi method (Golub & Van Loan, "Matrix
//!   Computations", 8.5: `sym.schur2` and the row-cyclic sweep), a fixed number of sweeps
//!   ([`eigen_sweeps`]) after which float32 has converged for every order up to
//!   [`MAX_ORDER`](super::linalg::MAX_ORDER);
//! - singular values by the one-sided Jacobi method (Hestenes): the columns of an `m`×`n`
//!   matrix (`m ≥ n`; `Aᵀ` otherwise) rotated pairwise until orthogonal, each singular
//!   value a final column's norm ([`svd_sweeps`] sweeps).
//!
//! The vectors are another matter: LAPACK picks each vector's sign (and a basis of a
//! repeated eigenvalue's space) by its own rounding, which no other algorithm reproduces,
//! so only sign-invariant products of them are exported (the pseudo-inverse).

use super::decompose::Fn;
use super::linalg::transpose_of as transpose;
use super::series::{Ops, Result};

/// Jacobi sweeps for an `n`×`n` symmetric matrix: one more than float32 needs on hard
/// inputs (repeated, clustered, zero and negative eigenvalues, scales from 1e−6 to 1e3;
/// the tests below check it), each further sweep squaring the off-diagonal.
pub fn eigen_sweeps(n: usize) -> usize {
    match n {
        0..=2 => 1,
        3 => 4,
        4 | 5 => 5,
        _ => 6,
    }
}

/// One-sided Jacobi sweeps over `n` columns, as [`eigen_sweeps`] (one more than float32
/// needs).
pub fn svd_sweeps(n: usize) -> usize {
    match n {
        0..=2 => 1,
        3 => 4,
        4 => 5,
        5 => 6,
        _ => 7,
    }
}

/// The Jacobi rotation `(c, s)` that makes the off-diagonal `2×2` entry `[[app, apq],
/// [apq, aqq]]` zero (`sym.schur2`): `θ = (aqq − app) / (2·apq)`, `t = sgn(θ) / (|θ| +
/// √(θ² + 1))` (`sgn(0) = 1`), `c = 1/√(1 + t²)`, `s = t·c`. Where `apq` is 0 (θ NaN or
/// infinite) `t` is 0, no rotation; a huge `θ` (θ² infinite) gives `t = ±0` as well.
/// Returns `(t, c, s)`.
fn rotation<A: Ops>(a: &mut A, app: &A::V, aqq: &A::V, apq: &A::V) -> Result<(A::V, A::V, A::V)> {
    let difference = a.sub(aqq, app)?;
    let twice = a.mul_c(apq, 2.0)?;
    let theta = a.div(&difference, &twice)?;
    let magnitude = a.f1(Fn::Abs, &theta)?;
    let square = a.mul(&theta, &theta)?;
    let square = a.add_c(&square, 1.0)?;
    let root = a.f1(Fn::Sqrt, &square)?;
    let denominator = a.add(&magnitude, &root)?;
    let negative = a.less_c(&theta, 0.0)?;
    let one = a.number(1.0);
    let sign = a.select_c(&negative, -1.0, &one)?;
    let t = a.div(&sign, &denominator)?;
    let zero = a.equal_c(apq, 0.0)?;
    let nought = a.number(0.0);
    let t = a.select(&zero, &nought, &t)?;
    let t2 = a.mul(&t, &t)?;
    let t2 = a.add_c(&t2, 1.0)?;
    let root = a.f1(Fn::Sqrt, &t2)?;
    let c = a.c_div(1.0, &root)?;
    let s = a.mul(&t, &c)?;
    Ok((t, c, s))
}

/// `(x, y) ← (c·x − s·y, s·x + c·y)`: columns `p` and `q` of a rotated matrix.
fn rotate<A: Ops>(a: &mut A, c: &A::V, s: &A::V, x: &A::V, y: &A::V) -> Result<(A::V, A::V)> {
    let cx = a.mul(c, x)?;
    let sy = a.mul(s, y)?;
    let sx = a.mul(s, x)?;
    let cy = a.mul(c, y)?;
    Ok((a.sub(&cx, &sy)?, a.add(&sx, &cy)?))
}

/// Columns `p < q` of `columns` rotated by [`rotate`].
fn rotate_columns<A: Ops>(
    a: &mut A,
    c: &A::V,
    s: &A::V,
    columns: &mut [Vec<A::V>],
    p: usize,
    q: usize,
) -> Result<()> {
    let (left, right) = columns.split_at_mut(q);
    for (x, y) in left[p].iter_mut().zip(right[0].iter_mut()) {
        let (rotated_x, rotated_y) = rotate(a, c, s, x, y)?;
        *x = rotated_x;
        *y = rotated_y;
    }
    Ok(())
}

/// The symmetric `n`×`n` matrix (row-major) whose triangle is `m`'s lower one (`upper`:
/// the upper one), as `torch.linalg.eigvalsh(m, UPLO)` reads it.
pub fn symmetric<V: Clone>(m: &[V], n: usize, upper: bool) -> Vec<V> {
    (0..n * n)
        .map(|at| {
            let (i, j) = (at / n, at % n);
            let (low, high) = (i.min(j), i.max(j));
            if upper {
                m[low * n + high].clone()
            } else {
                m[high * n + low].clone()
            }
        })
        .collect()
}

/// An eigen-decomposition `S = V·diag(values)·Vᵀ` of a symmetric matrix, the values in
/// no particular order.
pub struct Eigen<V> {
    pub values: Vec<V>,
    /// Row-major `n`×`n`, the eigenvectors its columns; present when asked for.
    pub vectors: Option<Vec<V>>,
}

/// The cyclic Jacobi method on the symmetric `s` (`n`×`n`, row-major, both triangles
/// read): [`eigen_sweeps`] row-cyclic sweeps of rotations `S ← Jᵀ·S·J` (`J` by
/// `rotation`), the rotated pair's off-diagonal set to 0, the rotations accumulated into
/// `V` when `vectors`.
pub fn jacobi<A: Ops>(a: &mut A, mut s: Vec<A::V>, n: usize, vectors: bool) -> Result<Eigen<A::V>> {
    let mut v: Option<Vec<A::V>> = vectors.then(|| {
        (0..n * n)
            .map(|at| a.number(if at / n == at % n { 1.0 } else { 0.0 }))
            .collect()
    });
    for _ in 0..eigen_sweeps(n) {
        for p in 0..n {
            for q in p + 1..n {
                let apq = s[p * n + q].clone();
                let (t, c, sn) = rotation(a, &s[p * n + p], &s[q * n + q], &apq)?;
                let shift = a.mul(&t, &apq)?;
                let app = a.sub(&s[p * n + p], &shift)?;
                let aqq = a.add(&s[q * n + q], &shift)?;
                for k in (0..n).filter(|&k| k != p && k != q) {
                    let (kp, kq) = rotate(a, &c, &sn, &s[k * n + p], &s[k * n + q])?;
                    s[k * n + p] = kp.clone();
                    s[p * n + k] = kp;
                    s[k * n + q] = kq.clone();
                    s[q * n + k] = kq;
                }
                s[p * n + p] = app;
                s[q * n + q] = aqq;
                let zero = a.number(0.0);
                s[p * n + q] = zero.clone();
                s[q * n + p] = zero;
                if let Some(v) = v.as_mut() {
                    for k in 0..n {
                        let (kp, kq) = rotate(a, &c, &sn, &v[k * n + p], &v[k * n + q])?;
                        v[k * n + p] = kp;
                        v[k * n + q] = kq;
                    }
                }
            }
        }
    }
    Ok(Eigen {
        values: (0..n).map(|i| s[i * n + i].clone()).collect(),
        vectors: v,
    })
}

/// `values` sorted ascending by compare-exchanges (`Less` and two `Where`s each, a bubble
/// network of `n(n−1)/2`). A NaN compares false, so it is never exchanged: its neighbours
/// stay where they are (the rotations spread a NaN input to every value anyway).
pub fn sort_ascending<A: Ops>(a: &mut A, mut values: Vec<A::V>) -> Result<Vec<A::V>> {
    let n = values.len();
    for end in (1..n).rev() {
        for i in 0..end {
            let swap = a.f2(Fn::Less, &values[i + 1], &values[i])?;
            let low = a.select(&swap, &values[i + 1], &values[i])?;
            let high = a.select(&swap, &values[i], &values[i + 1])?;
            values[i] = low;
            values[i + 1] = high;
        }
    }
    Ok(values)
}

/// `torch.linalg.eigvalsh(m, UPLO)`: the eigenvalues of the symmetric matrix whose
/// triangle is `m`'s lower (`upper`: upper) one, ascending.
pub fn eigvalsh<A: Ops>(a: &mut A, m: &[A::V], n: usize, upper: bool) -> Result<Vec<A::V>> {
    let e = jacobi(a, symmetric(m, n, upper), n, false)?;
    sort_ascending(a, e.values)
}

/// A one-sided Jacobi decomposition of an `m`×`n` matrix `A` (`m ≥ n`): `A·V = B`, `V`
/// orthogonal, `B`'s columns orthogonal, so the singular values are `B`'s column norms.
pub struct Hestenes<V> {
    /// Row-major `m`×`n`.
    pub b: Vec<V>,
    /// Row-major `n`×`n`; present when asked for.
    pub v: Option<Vec<V>>,
    /// `‖b_j‖` for each column, in no particular order.
    pub values: Vec<V>,
}

/// `Σ x_k·y_k`.
fn dot<A: Ops>(a: &mut A, x: &[A::V], y: &[A::V]) -> Result<A::V> {
    let mut sum = a.mul(&x[0], &y[0])?;
    for (x, y) in x.iter().zip(y).skip(1) {
        let p = a.mul(x, y)?;
        sum = a.add(&sum, &p)?;
    }
    Ok(sum)
}

/// The one-sided Jacobi method on `m` (`rows`×`cols`, row-major, `rows ≥ cols ≥ 1`):
/// [`svd_sweeps`] cyclic sweeps over the column pairs `(p, q)`, each rotated by the
/// `rotation` of their Gram entries `(‖a_p‖², ‖a_q‖², a_p·a_q)`, computed afresh from the
/// columns.
pub fn hestenes<A: Ops>(
    a: &mut A,
    m: &[A::V],
    rows: usize,
    cols: usize,
    vectors: bool,
) -> Result<Hestenes<A::V>> {
    let mut columns: Vec<Vec<A::V>> = (0..cols)
        .map(|j| (0..rows).map(|i| m[i * cols + j].clone()).collect())
        .collect();
    let mut v: Option<Vec<Vec<A::V>>> = vectors.then(|| {
        (0..cols)
            .map(|j| {
                (0..cols)
                    .map(|i| a.number(if i == j { 1.0 } else { 0.0 }))
                    .collect()
            })
            .collect()
    });
    for _ in 0..svd_sweeps(cols) {
        for p in 0..cols {
            for q in p + 1..cols {
                let alpha = dot(a, &columns[p], &columns[p])?;
                let beta = dot(a, &columns[q], &columns[q])?;
                let gamma = dot(a, &columns[p], &columns[q])?;
                let (_, c, s) = rotation(a, &alpha, &beta, &gamma)?;
                rotate_columns(a, &c, &s, &mut columns, p, q)?;
                if let Some(v) = v.as_mut() {
                    rotate_columns(a, &c, &s, v, p, q)?;
                }
            }
        }
    }
    let values = columns
        .iter()
        .map(|column| {
            let squares = dot(a, column, column)?;
            a.f1(Fn::Sqrt, &squares)
        })
        .collect::<Result<_>>()?;
    let row_major = |columns: &[Vec<A::V>], rows: usize| -> Vec<A::V> {
        (0..rows * columns.len())
            .map(|at| columns[at % columns.len()][at / columns.len()].clone())
            .collect()
    };
    Ok(Hestenes {
        b: row_major(&columns, rows),
        v: v.map(|v| row_major(&v, cols)),
        values,
    })
}

/// The singular values of `m` (`rows`×`cols`), in no particular order: [`hestenes`] on
/// `m`, or on `mᵀ` when it has more columns than rows (the same values).
fn singular_values<A: Ops>(a: &mut A, m: &[A::V], rows: usize, cols: usize) -> Result<Vec<A::V>> {
    if rows >= cols {
        Ok(hestenes(a, m, rows, cols, false)?.values)
    } else {
        Ok(hestenes(a, &transpose(m, rows, cols), cols, rows, false)?.values)
    }
}

/// `torch.linalg.svdvals(m)`: the `min(rows, cols)` singular values, descending.
pub fn svdvals<A: Ops>(a: &mut A, m: &[A::V], rows: usize, cols: usize) -> Result<Vec<A::V>> {
    let values = singular_values(a, m, rows, cols)?;
    descending(a, values)
}

/// The largest (`largest`) or smallest of `values` (a NaN never wins).
fn extreme<A: Ops>(a: &mut A, values: &[A::V], largest: bool) -> Result<A::V> {
    let mut best = values[0].clone();
    for v in &values[1..] {
        let better = if largest {
            a.f2(Fn::Greater, v, &best)?
        } else {
            a.f2(Fn::Less, v, &best)?
        };
        best = a.select(&better, v, &best)?;
    }
    Ok(best)
}

/// `Σ values`.
fn sum<A: Ops>(a: &mut A, values: &[A::V]) -> Result<A::V> {
    let mut total = values[0].clone();
    for v in &values[1..] {
        total = a.add(&total, v)?;
    }
    Ok(total)
}

/// `torch.linalg.matrix_norm(m, ord)` for the orders of singular values: 2 (the largest),
/// −2 (the smallest), `'nuc'` (their sum).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpectralNorm {
    Largest,
    Smallest,
    Nuclear,
}

/// The [`SpectralNorm`] of `m` (`rows`×`cols`), as `linalg_matrix_norm` takes it from
/// `linalg_svdvals`.
pub fn spectral_norm<A: Ops>(
    a: &mut A,
    norm: SpectralNorm,
    m: &[A::V],
    rows: usize,
    cols: usize,
) -> Result<A::V> {
    let values = singular_values(a, m, rows, cols)?;
    match norm {
        SpectralNorm::Largest => extreme(a, &values, true),
        SpectralNorm::Smallest => extreme(a, &values, false),
        SpectralNorm::Nuclear => {
            let sorted = descending(a, values)?;
            sum(a, &sorted)
        }
    }
}

/// Unordered singular values in torch's descending order.
fn descending<A: Ops>(a: &mut A, values: Vec<A::V>) -> Result<Vec<A::V>> {
    let mut values = sort_ascending(a, values)?;
    values.reverse();
    Ok(values)
}

/// `torch.linalg.cond(m, p)` for `p` None or 2 (`σ_max / σ_min`) and −2 (`σ_min / σ_max`),
/// as `linalg_cond` takes them from `linalg_svdvals`.
pub fn cond<A: Ops>(
    a: &mut A,
    m: &[A::V],
    rows: usize,
    cols: usize,
    inverse: bool,
) -> Result<A::V> {
    let values = singular_values(a, m, rows, cols)?;
    let largest = extreme(a, &values, true)?;
    let smallest = extreme(a, &values, false)?;
    if inverse {
        a.div(&smallest, &largest)
    } else {
        a.div(&largest, &smallest)
    }
}

/// The tolerances `(atol, rtol)` of `linalg_matrix_rank` and `linalg_pinv` as torch's
/// `get_atol_rtol` settles them for an `rows`×`cols` float32 input: `atol` 0 when not
/// given; `rtol` as given, else `ε·max(rows, cols)` (ε float32's) when `atol` is not
/// given, else 0 where `atol > 0` and that default elsewhere.
pub fn tolerances<A: Ops>(
    a: &mut A,
    atol: Option<A::V>,
    rtol: Option<A::V>,
    rows: usize,
    cols: usize,
) -> Result<(A::V, A::V)> {
    let default = f64::from(f32::EPSILON) * rows.max(cols) as f64;
    let rtol = match (&atol, rtol) {
        (_, Some(rtol)) => rtol,
        (None, None) => a.number(default),
        (Some(atol), None) => {
            let positive = a.greater_c(atol, 0.0)?;
            let fallback = a.number(default);
            a.select_c(&positive, 0.0, &fallback)?
        }
    };
    let atol = atol.unwrap_or_else(|| a.number(0.0));
    Ok((atol, rtol))
}

/// `|v|` of each of `values`: the singular values of a symmetric matrix, from its
/// eigenvalues.
fn magnitudes<A: Ops>(a: &mut A, values: &[A::V]) -> Result<Vec<A::V>> {
    values.iter().map(|v| a.f1(Fn::Abs, v)).collect()
}

/// `max(atol, rtol·largest)`, torch's threshold above which a singular value counts.
fn threshold<A: Ops>(a: &mut A, atol: &A::V, rtol: &A::V, largest: &A::V) -> Result<A::V> {
    let relative = a.mul(rtol, largest)?;
    let above = a.f2(Fn::Greater, &relative, atol)?;
    a.select(&above, &relative, atol)
}

/// `torch.linalg.matrix_rank(m, atol, rtol, hermitian)` as `matrix_rank_impl` counts it:
/// the singular values (`hermitian`: the magnitudes of `eigvalsh(m)`, its lower triangle)
/// above `threshold`, as a float count (torch's int64 result converted by the caller).
pub fn matrix_rank<A: Ops>(
    a: &mut A,
    m: &[A::V],
    rows: usize,
    cols: usize,
    (atol, rtol): (A::V, A::V),
    hermitian: bool,
) -> Result<A::V> {
    let values = if hermitian {
        let e = jacobi(a, symmetric(m, rows, false), rows, false)?;
        magnitudes(a, &e.values)?
    } else {
        singular_values(a, m, rows, cols)?
    };
    let largest = extreme(a, &values, true)?;
    let tol = threshold(a, &atol, &rtol, &largest)?;
    let counted = values
        .iter()
        .map(|v| {
            let above = a.f2(Fn::Greater, v, &tol)?;
            a.f1(Fn::Float, &above)
        })
        .collect::<Result<Vec<_>>>()?;
    sum(a, &counted)
}

/// `torch.linalg.pinv(m, atol, rtol, hermitian)` (`cols`×`rows`, row-major) as
/// `linalg_pinv` computes it, `V·diag(σ⁺)·Uᵀ` with `σ⁺ = 1/σ` above `threshold` and 0
/// elsewhere, written without the vectors' signs: with `A·V = B = U·Σ` from [`hestenes`],
/// `pinv = Σ_j v_j·b_jᵀ·σ⁺_j/σ_j` (on `mᵀ`, transposed back, when `rows < cols`).
/// `hermitian`: from the Jacobi eigen-decomposition of `m`'s lower triangle, `V·diag(λ⁺)·Vᵀ`
/// with `λ⁺ = 1/λ` where `|λ|` is above the threshold of the largest `|λ|`.
pub fn pinv<A: Ops>(
    a: &mut A,
    m: &[A::V],
    rows: usize,
    cols: usize,
    (atol, rtol): (A::V, A::V),
    hermitian: bool,
) -> Result<Vec<A::V>> {
    if hermitian {
        let n = rows;
        let e = jacobi(a, symmetric(m, n, false), n, true)?;
        let vectors = e.vectors.ok_or("the eigenvectors were not accumulated")?;
        let magnitudes = magnitudes(a, &e.values)?;
        let largest = extreme(a, &magnitudes, true)?;
        let tol = threshold(a, &atol, &rtol, &largest)?;
        let weights = e
            .values
            .iter()
            .zip(&magnitudes)
            .map(|(value, magnitude)| {
                let kept = a.f2(Fn::Greater, magnitude, &tol)?;
                let inverse = a.c_div(1.0, value)?;
                let zero = a.number(0.0);
                a.select(&kept, &inverse, &zero)
            })
            .collect::<Result<Vec<_>>>()?;
        return weighted_products(a, &vectors, &vectors, &weights, n, n);
    }
    if rows < cols {
        let p = pinv(
            a,
            &transpose(m, rows, cols),
            cols,
            rows,
            (atol, rtol),
            false,
        )?;
        return Ok(transpose(&p, rows, cols));
    }
    let h = hestenes(a, m, rows, cols, true)?;
    let v = h.v.ok_or("the rotations were not accumulated")?;
    let largest = extreme(a, &h.values, true)?;
    let tol = threshold(a, &atol, &rtol, &largest)?;
    let weights = h
        .values
        .iter()
        .map(|sigma| {
            let kept = a.f2(Fn::Greater, sigma, &tol)?;
            let square = a.mul(sigma, sigma)?;
            let inverse = a.c_div(1.0, &square)?;
            let zero = a.number(0.0);
            a.select(&kept, &inverse, &zero)
        })
        .collect::<Result<Vec<_>>>()?;
    weighted_products(a, &v, &h.b, &weights, cols, rows)
}

/// `X·diag(w)·Yᵀ` for `X` (`n`×`k`) and `Y` (`r`×`k`), row-major: `n`×`r`.
fn weighted_products<A: Ops>(
    a: &mut A,
    x: &[A::V],
    y: &[A::V],
    w: &[A::V],
    n: usize,
    r: usize,
) -> Result<Vec<A::V>> {
    let k = w.len();
    let scaled: Vec<A::V> = (0..n * k)
        .map(|at| a.mul(&x[at], &w[at % k]))
        .collect::<Result<_>>()?;
    let mut out = Vec::with_capacity(n * r);
    for i in 0..n {
        for j in 0..r {
            out.push(dot(a, &scaled[i * k..(i + 1) * k], &y[j * k..(j + 1) * k])?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::series::{Algebra, Scalar};
    use super::*;

    /// The graph's arithmetic: every operation rounded to float32.
    struct Single;

    impl Algebra for Single {
        type V = f64;
        fn number(&mut self, c: f64) -> f64 {
            f64::from(c as f32)
        }
        fn apply(&mut self, f: Fn, operands: &[&f64]) -> Result<f64> {
            let values: Vec<f64> = operands.iter().map(|v| **v).collect();
            Ok(f64::from(f.apply(&values)? as f32))
        }
        fn float32(&mut self, v: &f64) -> f64 {
            f64::from(*v as f32)
        }
        fn lookup(&mut self, index: &f64, table: &[f64]) -> Result<f64> {
            Scalar.lookup(index, table)
        }
    }

    /// A deterministic stream of numbers in [−1, 1) (a linear congruential generator).
    struct Stream(u64);

    impl Stream {
        fn next(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        }
    }

    /// A random orthogonal `n`×`n` matrix: Gram–Schmidt on random columns (row-major).
    fn orthogonal(r: &mut Stream, n: usize) -> Vec<f64> {
        let mut q: Vec<Vec<f64>> = Vec::new();
        while q.len() < n {
            let mut v: Vec<f64> = (0..n).map(|_| r.next()).collect();
            for u in &q {
                let d: f64 = v.iter().zip(u).map(|(a, b)| a * b).sum();
                v.iter_mut().zip(u).for_each(|(a, b)| *a -= d * b);
            }
            let norm = v.iter().map(|a| a * a).sum::<f64>().sqrt();
            if norm > 1e-3 {
                q.push(v.iter().map(|a| a / norm).collect());
            }
        }
        (0..n * n).map(|at| q[at % n][at / n]).collect()
    }

    /// `Q·diag(d)·Wᵀ` for `Q` `rows`×`rows`, `W` `cols`×`cols`, `d` of `min` entries.
    fn compose(q: &[f64], d: &[f64], w: &[f64], rows: usize, cols: usize) -> Vec<f64> {
        (0..rows * cols)
            .map(|at| {
                let (i, j) = (at / cols, at % cols);
                d.iter()
                    .enumerate()
                    .map(|(k, dk)| q[i * rows + k] * dk * w[j * cols + k])
                    .sum()
            })
            .collect()
    }

    /// `x` rounded to float32 entries, as torch's input holds it.
    fn single(x: Vec<f64>) -> Vec<f64> {
        x.into_iter().map(|v| f64::from(v as f32)).collect()
    }

    /// Within the interop tolerance `1e−4·max(1, max|expected|)`, with margin.
    fn assert_close(got: &[f64], expected: &[f64], what: &str) {
        let scale = expected.iter().fold(1f64, |m, v| m.max(v.abs()));
        let worst = got
            .iter()
            .zip(expected)
            .fold(0f64, |m, (g, e)| m.max((g - e).abs()));
        assert!(
            got.len() == expected.len() && worst <= 1e-5 * scale,
            "{what}: {got:?} vs {expected:?} (off by {worst})"
        );
    }

    /// Hard spectra: repeated, clustered, zero, negative, widely scaled.
    fn spectra(r: &mut Stream, n: usize) -> Vec<Vec<f64>> {
        let mut out = vec![
            vec![1.0; n],
            (0..n).map(|i| 1.0 + 1e-4 * i as f64).collect(),
            (0..n)
                .map(|i| if i % 2 == 0 { 0.0 } else { -3.0 })
                .collect(),
            (0..n)
                .map(|i| 10f64.powi(i as i32 * 9 / n as i32 - 6))
                .collect(),
            (0..n).map(|i| (i as f64 - 2.0).round()).collect(),
        ];
        for _ in 0..40 {
            out.push((0..n).map(|_| 9.0 * r.next()).collect());
        }
        out
    }

    #[test]
    fn jacobi_converges_in_float32_on_hard_spectra() {
        let mut r = Stream(7);
        for n in 1..=8 {
            for mut d in spectra(&mut r, n) {
                let q = orthogonal(&mut r, n);
                let m = single(compose(&q, &d, &q, n, n));
                let got = eigvalsh(&mut Single, &m, n, false).unwrap();
                d.sort_by(f64::total_cmp);
                assert_close(&got, &d, &format!("eigvalsh {n}×{n} of {d:?}"));
            }
        }
    }

    #[test]
    fn one_sided_jacobi_gives_singular_values_in_float32() {
        let mut r = Stream(11);
        for (rows, cols) in [
            (1, 1),
            (2, 2),
            (3, 2),
            (2, 3),
            (3, 3),
            (5, 5),
            (5, 4),
            (3, 8),
            (8, 8),
        ] {
            let k = rows.min(cols);
            for d in spectra(&mut r, k) {
                let mut d: Vec<f64> = d.iter().map(|v| v.abs()).collect();
                let (q, w) = (orthogonal(&mut r, rows), orthogonal(&mut r, cols));
                let m = single(compose(&q, &d, &w, rows, cols));
                let got = svdvals(&mut Single, &m, rows, cols).unwrap();
                d.sort_by(|a, b| b.total_cmp(a));
                assert_close(&got, &d, &format!("svdvals {rows}×{cols} of {d:?}"));
            }
        }
    }

    #[test]
    fn only_the_named_triangle_is_read() {
        // The lower triangle is diag(1, 3); the upper one has a 4 off the diagonal.
        let m = [1.0, 4.0, 0.0, 3.0];
        assert_eq!(eigvalsh(&mut Scalar, &m, 2, false).unwrap(), [1.0, 3.0]);
        let upper = eigvalsh(&mut Scalar, &m, 2, true).unwrap();
        assert_close(&upper, &[2.0 - 17f64.sqrt(), 2.0 + 17f64.sqrt()], "UPLO U");
        // A diagonal input takes no rotation, its values only sorted.
        let d = [5.0, 0.0, 0.0, 0.0, -2.0, 0.0, 0.0, 0.0, 0.0];
        assert_eq!(
            eigvalsh(&mut Scalar, &d, 3, false).unwrap(),
            [-2.0, 0.0, 5.0]
        );
    }

    #[test]
    fn sorting_leaves_a_nan_in_place() {
        let sorted = sort_ascending(&mut Scalar, vec![3.0, 1.0, 2.0]).unwrap();
        assert_eq!(sorted, [1.0, 2.0, 3.0]);
        let with_nan = sort_ascending(&mut Scalar, vec![f64::NAN, 1.0, 0.0]).unwrap();
        assert!(with_nan[0].is_nan() && with_nan[1..] == [0.0, 1.0]);
    }

    #[test]
    fn rank_counts_values_above_torchs_threshold() {
        let mut r = Stream(3);
        let (q, w) = (orthogonal(&mut r, 4), orthogonal(&mut r, 3));
        let m = single(compose(&q, &[5.0, 1.0, 0.0], &w, 4, 3));
        let default = tolerances(&mut Scalar, None, None, 4, 3).unwrap();
        assert_eq!(default, (0.0, 4.0 * f64::from(f32::EPSILON)));
        assert_eq!(matrix_rank(&mut Single, &m, 4, 3, default, false), Ok(2.0));
        // atol given: rtol 0 where atol > 0.
        let atol = tolerances(&mut Scalar, Some(2.0), None, 4, 3).unwrap();
        assert_eq!(atol, (2.0, 0.0));
        assert_eq!(matrix_rank(&mut Single, &m, 4, 3, atol, false), Ok(1.0));
        let zero = tolerances(&mut Scalar, Some(0.0), None, 4, 3).unwrap();
        assert_eq!(zero.1, default.1);
        let relative = tolerances(&mut Scalar, None, Some(0.5), 4, 3).unwrap();
        assert_eq!(matrix_rank(&mut Single, &m, 4, 3, relative, false), Ok(1.0));
        // Hermitian: the magnitudes of the eigenvalues, −4 counting as 4.
        let s = single(compose(&q, &[-4.0, 1.0, 0.0, 1e-9], &q, 4, 4));
        let t = tolerances(&mut Scalar, None, None, 4, 4).unwrap();
        assert_eq!(matrix_rank(&mut Single, &s, 4, 4, t, true), Ok(2.0));
        let t = tolerances(&mut Scalar, Some(1.5), None, 4, 4).unwrap();
        assert_eq!(matrix_rank(&mut Single, &s, 4, 4, t, true), Ok(1.0));
    }

    /// `Q·diag(d⁺)·Wᵀ`'s transpose: the pseudo-inverse of `compose(q, d, w)`.
    fn exact_pinv(q: &[f64], d: &[f64], w: &[f64], rows: usize, cols: usize) -> Vec<f64> {
        let inverse: Vec<f64> = d
            .iter()
            .map(|v| if *v == 0.0 { 0.0 } else { 1.0 / v })
            .collect();
        compose(w, &inverse, q, cols, rows)
    }

    #[test]
    fn the_pseudo_inverse_inverts_the_kept_singular_values() {
        let mut r = Stream(5);
        for (rows, cols) in [(2, 2), (3, 2), (2, 3), (5, 5), (4, 5), (8, 3)] {
            let k = rows.min(cols);
            for d in [
                (0..k).map(|i| 1.0 + i as f64).collect::<Vec<_>>(),
                (0..k).map(|i| if i == 0 { 0.0 } else { 2.0 }).collect(),
                vec![3.0; k],
            ] {
                let (q, w) = (orthogonal(&mut r, rows), orthogonal(&mut r, cols));
                let m = single(compose(&q, &d, &w, rows, cols));
                let t = tolerances(&mut Scalar, None, None, rows, cols).unwrap();
                let got = pinv(&mut Single, &m, rows, cols, t, false).unwrap();
                let expected = exact_pinv(&q, &d, &w, rows, cols);
                assert_close(&got, &expected, &format!("pinv {rows}×{cols} of {d:?}"));
            }
        }
        // Hermitian, with a negative, a zero and a repeated eigenvalue.
        for n in [2, 3, 5] {
            let d: Vec<f64> = (0..n).map(|i| [-2.0, 0.0, 0.5, 0.5, 4.0][i % 5]).collect();
            let q = orthogonal(&mut r, n);
            let m = single(compose(&q, &d, &q, n, n));
            let t = tolerances(&mut Scalar, None, None, n, n).unwrap();
            let got = pinv(&mut Single, &m, n, n, t, true).unwrap();
            assert_close(
                &got,
                &exact_pinv(&q, &d, &q, n, n),
                &format!("hermitian pinv of {d:?}"),
            );
        }
    }

    #[test]
    fn norms_and_condition_numbers_come_from_the_extreme_values() {
        let mut r = Stream(9);
        let (q, w) = (orthogonal(&mut r, 3), orthogonal(&mut r, 2));
        let m = single(compose(&q, &[4.0, 0.5], &w, 3, 2));
        let norm = |n| spectral_norm(&mut Single, n, &m, 3, 2).unwrap();
        assert_close(&[norm(SpectralNorm::Largest)], &[4.0], "ord 2");
        assert_close(&[norm(SpectralNorm::Smallest)], &[0.5], "ord −2");
        assert_close(&[norm(SpectralNorm::Nuclear)], &[4.5], "nuc");
        assert_close(
            &[cond(&mut Single, &m, 3, 2, false).unwrap()],
            &[8.0],
            "cond",
        );
        assert_close(
            &[cond(&mut Single, &m, 3, 2, true).unwrap()],
            &[0.125],
            "cond −2",
        );
    }

    /// Counts the operations a program emits: one ONNX node each on activations.
    struct Count(usize);

    impl Algebra for Count {
        type V = ();
        fn number(&mut self, _: f64) {}
        fn apply(&mut self, _: Fn, _: &[&()]) -> Result<()> {
            self.0 += 1;
            Ok(())
        }
        fn float32(&mut self, _: &()) {}
        fn lookup(&mut self, _: &(), _: &[f64]) -> Result<()> {
            self.0 += 1;
            Ok(())
        }
    }

    #[test]
    fn graphs_stay_small_at_the_orders_torch_tests() {
        let m = vec![(); 25];
        let mut count = Count(0);
        eigvalsh(&mut count, &m, 5, false).unwrap();
        assert!(count.0 < 5000, "eigvalsh 5×5: {} nodes", count.0);
        let mut count = Count(0);
        svdvals(&mut count, &m, 5, 5).unwrap();
        assert!(count.0 < 6000, "svdvals 5×5: {} nodes", count.0);
    }
}
