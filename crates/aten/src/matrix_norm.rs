//! `linalg_matrix_norm` and `linalg_norm` as torch's references compute them
//! (`torch._refs.linalg.matrix_norm`, `torch._refs.linalg.norm`), one plan for the
//! evaluator and the lowering: the Frobenius norm is the vector 2-norm over both
//! dimensions; the orders 1 and ∞ (and −1, −∞) are the largest (smallest) sum of `|x|`
//! along one dimension, taken over the other. The nuclear norm (`'nuc'`) and the spectral
//! norms (±2) are the sum, the largest and the smallest of the singular values
//! ([`crate::spectrum`]) of the matrices torch's `dim` names (rows along its first).

use super::eval::axis;
use super::spectrum::SpectralNorm;

/// A norm order as torch's `ord` gives it: a name or a number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Order {
    /// `'fro'`.
    Frobenius,
    /// `'nuc'`.
    Nuclear,
    /// A number (`1`, `-inf`, …).
    Number(f64),
}

impl Order {
    /// The order torch names `name` (`'fro'` or `'nuc'`).
    pub fn named(name: &str) -> Result<Order, String> {
        match name {
            "fro" => Ok(Order::Frobenius),
            "nuc" => Ok(Order::Nuclear),
            _ => Err(format!(
                "a matrix norm of order '{name}' (torch takes 'fro' and 'nuc')"
            )),
        }
    }
}

/// How a matrix norm over two dimensions of a tensor is computed. Dimensions are torch's,
/// in range and distinct.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatrixNorm {
    /// The vector 2-norm over both dimensions (sorted).
    Frobenius([usize; 2]),
    /// `|x|` summed along `summed` (kept as size 1 when `keepdim`, removed otherwise),
    /// then the largest (`largest`) or smallest value along `extreme`, a dimension of the
    /// summed tensor. Order ±1 sums along the first of torch's `dim` and takes the
    /// extreme along the second; order ±∞ the other way round.
    Induced {
        summed: usize,
        extreme: usize,
        largest: bool,
    },
    /// A norm of the singular values of the matrices whose rows run along `dims[0]` and
    /// columns along `dims[1]` (torch's `dim`, in order): `linalg_matrix_norm` moves them
    /// last, takes `linalg_svdvals` and reduces them, both dimensions removed (size 1 when
    /// `keepdim`).
    Spectral {
        norm: SpectralNorm,
        dims: [usize; 2],
    },
}

impl MatrixNorm {
    /// The plan of `linalg_matrix_norm(A, ord, dim, keepdim)` for an `A` of rank `rank`.
    pub fn plan(ord: Order, dim: &[i64], rank: usize, keepdim: bool) -> Result<Self, String> {
        if rank < 2 {
            return Err(format!(
                "a matrix norm of a rank-{rank} tensor (torch needs at least 2 dimensions)"
            ));
        }
        let [first, second] = <[i64; 2]>::try_from(dim).map_err(|_| {
            format!(
                "a matrix norm over {} dimensions (torch takes 2)",
                dim.len()
            )
        })?;
        let (first, second) = (axis(first, rank)?, axis(second, rank)?);
        if first == second {
            return Err(format!(
                "a matrix norm over dimension {first} twice (torch needs two different ones)"
            ));
        }
        let number = match ord {
            Order::Frobenius => {
                return Ok(MatrixNorm::Frobenius([
                    first.min(second),
                    first.max(second),
                ]))
            }
            Order::Nuclear => {
                return Ok(MatrixNorm::Spectral {
                    norm: SpectralNorm::Nuclear,
                    dims: [first, second],
                })
            }
            Order::Number(n) => n,
        };
        let (summed, mut extreme) = match number.abs() {
            1.0 => (first, second),
            f64::INFINITY => (second, first),
            2.0 => {
                return Ok(MatrixNorm::Spectral {
                    norm: if number > 0.0 {
                        SpectralNorm::Largest
                    } else {
                        SpectralNorm::Smallest
                    },
                    dims: [first, second],
                })
            }
            _ => {
                return Err(format!(
                    "a matrix norm of order {number} (torch takes ±1, ±2, ±inf, 'fro' and 'nuc')"
                ))
            }
        };
        if !keepdim && summed < extreme {
            extreme -= 1;
        }
        Ok(MatrixNorm::Induced {
            summed,
            extreme,
            largest: number > 0.0,
        })
    }
}

/// What `linalg_norm` computes.
#[derive(Clone, Debug, PartialEq)]
pub enum Norm {
    /// The vector norm of order `ord` over `dim` (`None`: every dimension).
    Vector { ord: f64, dim: Option<Vec<i64>> },
    /// A matrix norm.
    Matrix(MatrixNorm),
}

impl Norm {
    /// The plan of `linalg_norm(A, ord, dim, keepdim)` for an `A` of rank `rank`, as
    /// `torch._refs.linalg.norm` decides: a matrix norm when `ord` is given and `dim` names
    /// two dimensions (or is `None` and `A` is 2-D, the dimensions 0 and 1); otherwise the
    /// vector norm of order `ord` (2 when `None`).
    pub fn plan(
        ord: Option<Order>,
        dim: Option<&[i64]>,
        rank: usize,
        keepdim: bool,
    ) -> Result<Self, String> {
        match (dim, ord) {
            (Some(d), _) if !(1..=2).contains(&d.len()) => {
                return Err(format!(
                    "linalg_norm over {} dimensions (torch takes 1 or 2)",
                    d.len()
                ))
            }
            (None, Some(_)) if !(1..=2).contains(&rank) => {
                return Err(format!(
                    "linalg_norm with an order and no dimensions of a rank-{rank} tensor (torch needs 1-D or 2-D)"
                ))
            }
            _ => {}
        }
        let matrix = match dim {
            Some(d) => d.len() == 2,
            None => rank == 2,
        };
        match ord {
            Some(ord) if matrix => {
                let dim = dim.unwrap_or(&[0, 1]);
                MatrixNorm::plan(ord, dim, rank, keepdim).map(Norm::Matrix)
            }
            Some(Order::Number(ord)) => Ok(Norm::Vector {
                ord,
                dim: dim.map(<[i64]>::to_vec),
            }),
            Some(_) => Err(
                "a vector norm of a named order (torch takes 'fro' and 'nuc' for matrices only)"
                    .into(),
            ),
            None => Ok(Norm::Vector {
                ord: 2.0,
                dim: dim.map(<[i64]>::to_vec),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_one_and_infinity_sum_along_one_dimension_and_take_the_extreme_along_the_other() {
        let plan = |ord, keep| MatrixNorm::plan(Order::Number(ord), &[-2, -1], 3, keep).unwrap();
        assert_eq!(
            plan(1.0, false),
            MatrixNorm::Induced {
                summed: 1,
                extreme: 1,
                largest: true
            }
        );
        assert_eq!(
            plan(1.0, true),
            MatrixNorm::Induced {
                summed: 1,
                extreme: 2,
                largest: true
            }
        );
        assert_eq!(
            plan(f64::NEG_INFINITY, false),
            MatrixNorm::Induced {
                summed: 2,
                extreme: 1,
                largest: false
            }
        );
        assert_eq!(
            MatrixNorm::plan(Order::Frobenius, &[2, 0], 3, false),
            Ok(MatrixNorm::Frobenius([0, 2]))
        );
    }

    #[test]
    fn norms_of_singular_values_keep_torchs_dimension_order() {
        assert_eq!(
            MatrixNorm::plan(Order::Nuclear, &[2, 0], 3, false),
            Ok(MatrixNorm::Spectral {
                norm: SpectralNorm::Nuclear,
                dims: [2, 0]
            })
        );
        assert_eq!(
            MatrixNorm::plan(Order::Number(-2.0), &[-2, -1], 3, true),
            Ok(MatrixNorm::Spectral {
                norm: SpectralNorm::Smallest,
                dims: [1, 2]
            })
        );
        assert!(MatrixNorm::plan(Order::Number(3.0), &[0, 1], 2, false).is_err());
        assert!(MatrixNorm::plan(Order::Frobenius, &[1, -1], 2, false).is_err());
        assert!(MatrixNorm::plan(Order::Frobenius, &[0, 1], 1, false).is_err());
    }

    #[test]
    fn linalg_norm_is_a_matrix_norm_only_with_an_order_over_two_dimensions() {
        assert_eq!(
            Norm::plan(None, None, 2, false),
            Ok(Norm::Vector {
                ord: 2.0,
                dim: None
            })
        );
        assert_eq!(
            Norm::plan(Some(Order::Number(1.0)), None, 2, false),
            Ok(Norm::Matrix(MatrixNorm::Induced {
                summed: 0,
                extreme: 0,
                largest: true
            }))
        );
        assert_eq!(
            Norm::plan(Some(Order::Number(3.0)), Some(&[1]), 3, false),
            Ok(Norm::Vector {
                ord: 3.0,
                dim: Some(vec![1])
            })
        );
        assert!(Norm::plan(Some(Order::Frobenius), Some(&[1]), 3, false).is_err());
        assert!(Norm::plan(Some(Order::Number(1.0)), None, 3, false).is_err());
    }
}
