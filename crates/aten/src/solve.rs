//! torch's solves by a matrix it is given factored, and the matrices derived from a
//! factorisation's packed form, as what each multiplies its other operand by: a solve
//! `op(A)·X = B` is `X = op(A)⁻¹·B`, the inverse computed once, in double precision, from
//! the factors as LAPACK reads them (only the named triangle, a unit diagonal where it is
//! implied), so that the lowering of a solve by a constant matrix is one matrix product.
//!
//! - `triangular_solve(B, A, upper, transpose, unitriangular)` (`trtrs`): `T⁻¹` of `A`'s
//!   triangle by substitution ([`triangular_inverse`]), transposed for `transpose`.
//! - `cholesky_solve(B, F, upper)` (`potrs`): `(F·Fᵀ)⁻¹` of a lower factor, `(Fᵀ·F)⁻¹` of
//!   an upper one, as `cholesky_inverse` computes it
//!   ([`cholesky_inverse`](super::linalg::cholesky_inverse)).
//! - `lu_solve(B, LU, pivots)` (`getrs('N')`): `A = P·L·U`, so `A⁻¹ = U⁻¹·L⁻¹·Pᵀ`, `P` the
//!   permutation of LAPACK's 1-based row interchanges ([`permutation`]: row `k` swapped
//!   with row `pivots[k] − 1`, in order, as `laswp` applies them, and as `lu_unpack`
//!   builds `P`).
//! - `ormqr(A, tau, C, left, transpose)` (`ormqr`): `Q = H₀·H₁·…·H_{t−1}` with
//!   `Hⱼ = I − tauⱼ·vⱼ·vⱼᵀ`, `vⱼ` column `j` of `A` below the diagonal with a 1 on it (each
//!   reflector applied, as `dorm2r` does, even the last: a caller's `tau` need not be
//!   `geqrf`'s); `Q·C`, `Qᵀ·C`, `C·Q` or `C·Qᵀ` one reflector at a time, in the order of
//!   [`reflector_order`]; `linalg_householder_product(A, tau)` (`orgqr`) is `Q·I` of the
//!   identity's first columns.

use super::linalg;
use super::series::{Ops, Scalar};

/// A solve by a factored matrix, with torch's flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Solve {
    /// `triangular_solve`: the `upper` or lower triangle, `Aᵀ` for `transpose`, the
    /// diagonal read as ones for `unitriangular`.
    Triangular {
        upper: bool,
        transpose: bool,
        unitriangular: bool,
    },
    /// `cholesky_solve` by the `upper` or lower Cholesky factor.
    Cholesky { upper: bool },
    /// `lu_solve` by the packed LU factors and their pivots.
    Lu,
}

/// `T⁻¹` of the triangular `n`×`n` matrix in the `upper` or lower triangle of `m`
/// (row-major; the other triangle not read), its diagonal ones when `unit`: column by
/// column by forward substitution (of `Tᵀ`, transposed back, for an upper one).
pub fn triangular_inverse<A: Ops>(
    a: &mut A,
    m: &[A::V],
    n: usize,
    upper: bool,
    unit: bool,
) -> super::series::Result<Vec<A::V>> {
    let l = if upper {
        linalg::transpose(m, n)
    } else {
        m.to_vec()
    };
    let mut x: Vec<A::V> = (0..n * n).map(|_| a.number(0.0)).collect();
    for col in 0..n {
        for i in col..n {
            let mut t = a.number(if i == col { 1.0 } else { 0.0 });
            for k in col..i {
                let p = a.mul(&l[i * n + k], &x[k * n + col])?;
                t = a.sub(&t, &p)?;
            }
            x[i * n + col] = if unit { t } else { a.div(&t, &l[i * n + i])? };
        }
    }
    Ok(if upper { linalg::transpose(&x, n) } else { x })
}

/// The row order LAPACK's 1-based `pivots` leave of `rows` rows: starting from `0..rows`,
/// entry `k` swapped with entry `pivots[k] − 1` for each `k` in order. `P` has
/// `P[order[c]][c] = 1`, and `A = P·L·U`. Refused where a pivot names no row.
pub fn permutation(pivots: &[i64], rows: usize) -> Result<Vec<usize>, String> {
    let mut order: Vec<usize> = (0..rows).collect();
    if pivots.len() > rows {
        return Err(format!(
            "{} pivots for matrices of {rows} rows (LAPACK gives one per row at most)",
            pivots.len()
        ));
    }
    for (k, &p) in pivots.iter().enumerate() {
        let row = usize::try_from(p)
            .ok()
            .and_then(|p| p.checked_sub(1))
            .filter(|&r| r < rows)
            .ok_or_else(|| {
                format!("pivot {p} names no row of a {rows}-row matrix (LAPACK's are 1 to {rows})")
            })?;
        order.swap(k, row);
    }
    Ok(order)
}

/// The `rows`×`rows` permutation matrix of [`permutation`]'s `order`, row-major.
pub fn permutation_matrix(order: &[usize]) -> Vec<f64> {
    let rows = order.len();
    let mut p = vec![0.0; rows * rows];
    for (c, &r) in order.iter().enumerate() {
        p[r * rows + c] = 1.0;
    }
    p
}

/// `x·y` of `n`×`n` row-major matrices.
fn times(x: &[f64], y: &[f64], n: usize) -> Vec<f64> {
    (0..n * n)
        .map(|at| (0..n).map(|k| x[at / n * n + k] * y[k * n + at % n]).sum())
        .collect()
}

impl Solve {
    /// The program of the `n`×`n` matrix `M` (row-major) whose product `M·B` is the
    /// solution, over the entries `m` of a triangular or Cholesky factor: `op(T)⁻¹` or
    /// `(F·Fᵀ)⁻¹`, written once for the evaluator's numbers and the lowering's unrolled
    /// graph. An LU solve's permutation is read from pivots known at export
    /// ([`Solve::matrix`]).
    pub fn program<A: Ops>(self, a: &mut A, m: &[A::V], n: usize) -> Result<Vec<A::V>, String> {
        match self {
            Solve::Triangular {
                upper,
                transpose,
                unitriangular,
            } => {
                let x = triangular_inverse(a, m, n, upper, unitriangular)?;
                Ok(if transpose {
                    linalg::transpose(&x, n)
                } else {
                    x
                })
            }
            Solve::Cholesky { upper } => linalg::cholesky_inverse(a, m, n, upper),
            Solve::Lu => Err("an LU solve's permutation is read from its pivots".into()),
        }
    }

    /// [`Solve::program`] of the factors `m` in double precision (with their 1-based
    /// `pivots` for [`Solve::Lu`]: `U⁻¹·L⁻¹·Pᵀ`). Refused where an entry is not finite: a
    /// singular factor (a zero on the diagonal), or an infinity or NaN in `m`, whose
    /// solution is what torch's kernel makes of them in its order of operations, which a
    /// product does not reproduce.
    pub fn matrix(self, m: &[f64], pivots: &[i64], n: usize) -> Result<Vec<f64>, String> {
        let s = &mut Scalar;
        let inverse = match self {
            Solve::Lu => {
                let u = triangular_inverse(s, m, n, true, false)?;
                let l = triangular_inverse(s, m, n, false, true)?;
                let p = permutation_matrix(&permutation(pivots, n)?);
                times(&times(&u, &l, n), &linalg::transpose(&p, n), n)
            }
            _ => self.program(s, m, n)?,
        };
        if inverse.iter().any(|v| !v.is_finite()) {
            return Err(
                "its matrix is singular or holds an infinity or NaN: torch's solution is the infinities and NaNs its kernel's substitution makes, in an order a matrix product does not reproduce".into(),
            );
        }
        Ok(inverse)
    }
}

/// The order `ormqr` applies its `count` reflectors `Hⱼ` in, to `C` from the left
/// (`left`) or the right: `Q·C = H₀·(H₁·(…·C))` from the last, `Qᵀ·C` from the first,
/// `C·Q = ((C·H₀)·H₁)·…` from the first, `C·Qᵀ` from the last (each `Hⱼ` symmetric).
pub fn reflector_order(count: usize, left: bool, transpose: bool) -> Vec<usize> {
    if left == transpose {
        (0..count).collect()
    } else {
        (0..count).rev().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-12)
    }

    fn identity(n: usize) -> Vec<f64> {
        (0..n * n)
            .map(|at| f64::from(u8::from(at / n == at % n)))
            .collect()
    }

    #[test]
    fn triangular_inverses_read_one_triangle() {
        // The other triangle's 9s are never read.
        let lower = [2.0, 9.0, 9.0, 1.0, 4.0, 9.0, 3.0, -1.0, 5.0];
        let x = Solve::Triangular {
            upper: false,
            transpose: false,
            unitriangular: false,
        }
        .matrix(&lower, &[], 3)
        .unwrap();
        let t = [2.0, 0.0, 0.0, 1.0, 4.0, 0.0, 3.0, -1.0, 5.0];
        assert!(close(&times(&t, &x, 3), &identity(3)));
        let upper = linalg::transpose(&lower, 3);
        let y = Solve::Triangular {
            upper: true,
            transpose: true,
            unitriangular: false,
        }
        .matrix(&upper, &[], 3)
        .unwrap();
        // (Uᵀ)⁻¹ of U = Tᵀ is T⁻¹.
        assert!(close(&y, &x));
        let unit = Solve::Triangular {
            upper: false,
            transpose: false,
            unitriangular: true,
        }
        .matrix(&lower, &[], 3)
        .unwrap();
        let t1 = [1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 3.0, -1.0, 1.0];
        assert!(close(&times(&t1, &unit, 3), &identity(3)));
    }

    #[test]
    fn a_singular_factor_is_refused() {
        let zero_diagonal = [1.0, 0.0, 2.0, 0.0];
        let solve = Solve::Triangular {
            upper: false,
            transpose: false,
            unitriangular: false,
        };
        assert!(solve.matrix(&zero_diagonal, &[], 2).is_err());
        assert!(Solve::Cholesky { upper: false }
            .matrix(&[f64::NAN, 0.0, 0.0, 1.0], &[], 2)
            .is_err());
    }

    #[test]
    fn lu_solves_invert_the_factored_matrix() {
        // A = [[0, 2], [1, 1]]: getrf swaps the rows (pivots [2, 2]), L = [[1, 0], [0, 1]],
        // U = [[1, 1], [0, 2]].
        let lu = [1.0, 1.0, 0.0, 2.0];
        let m = Solve::Lu.matrix(&lu, &[2, 2], 2).unwrap();
        let a = [0.0, 2.0, 1.0, 1.0];
        assert!(close(&times(&a, &m, 2), &identity(2)));
        assert!(Solve::Lu.matrix(&lu, &[3, 2], 2).is_err());
        assert!(Solve::Lu.matrix(&lu, &[0, 2], 2).is_err());
    }

    #[test]
    fn cholesky_solves_invert_the_product_of_the_factors() {
        let l = [2.0, 0.0, 1.0, 2.0];
        let a = [4.0, 2.0, 2.0, 5.0];
        let m = Solve::Cholesky { upper: false }.matrix(&l, &[], 2).unwrap();
        assert!(close(&times(&a, &m, 2), &identity(2)));
        let u = linalg::transpose(&l, 2);
        let m = Solve::Cholesky { upper: true }.matrix(&u, &[], 2).unwrap();
        assert!(close(&times(&a, &m, 2), &identity(2)));
    }

    #[test]
    fn permutations_apply_the_interchanges_in_order() {
        // Rows 0 ↔ 2, then 1 ↔ 2: the order [2, 0, 1].
        assert_eq!(permutation(&[3, 3, 3], 3), Ok(vec![2, 0, 1]));
        assert_eq!(
            permutation_matrix(&[2, 0, 1]),
            [0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]
        );
        // A wide matrix's factors: fewer pivots than rows.
        assert_eq!(permutation(&[2], 3), Ok(vec![1, 0, 2]));
    }

    #[test]
    fn reflectors_apply_in_lapacks_order() {
        assert_eq!(reflector_order(3, true, false), [2, 1, 0]);
        assert_eq!(reflector_order(3, true, true), [0, 1, 2]);
        assert_eq!(reflector_order(3, false, false), [0, 1, 2]);
        assert_eq!(reflector_order(3, false, true), [2, 1, 0]);
    }
}
