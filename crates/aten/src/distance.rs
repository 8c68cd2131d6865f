//! Distances between rows (`torch.cdist`, `torch.pdist`) as torch's CPU kernels compute
//! them (`DistanceOpsKernel.cpp`): per pair of rows, a norm of their differences, which
//! the evaluator computes on numbers and the ONNX lowering writes as nodes.

/// The norm a distance takes of the differences `d` of two rows, chosen by torch's `p`
/// (the `Dist<T>` kernels: `zdist_calc`, `odist_calc`, `tdist_calc`, `idist_calc`,
/// `pdist_calc`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Norm {
    /// p = 0: how many differences are nonzero.
    Count,
    /// p = 1: `Σ |d|`.
    Sum,
    /// p = 2: `√(Σ d²)`.
    Euclidean,
    /// p = ∞: `max |d|`.
    Max,
    /// Any other p > 0: `(Σ |d|ᵖ)^(1/p)`.
    Power(f64),
}

/// How a kernel's running maximum (p = ∞) meets a NaN difference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NanInMax {
    /// `cdist`'s scalar loop takes `std::max(agg, d)`, which keeps `agg`: the NaN is
    /// skipped.
    Skipped,
    /// `pdist`'s vectorized maximum returns the NaN.
    Kept,
}

impl Norm {
    /// The norm of torch's `p`; torch refuses a negative or NaN `p`.
    pub fn of_p(op: &str, p: f64) -> Result<Norm, String> {
        Ok(match p {
            p if p.is_nan() || p < 0.0 => {
                return Err(format!("{op} with p = {p}: torch needs p ≥ 0"))
            }
            0.0 => Norm::Count,
            1.0 => Norm::Sum,
            2.0 => Norm::Euclidean,
            p if p.is_infinite() => Norm::Max,
            p => Norm::Power(p),
        })
    }

    /// The distance of the differences `diffs`, accumulated in float32 in their order, as
    /// torch's scalar loop does. A NaN difference makes every norm NaN (p = 0 counts
    /// `min(ceil(|d|), 1)`, NaN for a NaN), but the maximum as `nan` says.
    pub fn distance(self, diffs: impl Iterator<Item = f32>, nan: NanInMax) -> f32 {
        let mut total = 0.0f32;
        for d in diffs.map(f32::abs) {
            total = match self {
                Norm::Count if d.is_nan() => f32::NAN,
                Norm::Count => total + if d == 0.0 { 0.0 } else { 1.0 },
                Norm::Sum => total + d,
                Norm::Euclidean => total + d * d,
                Norm::Max if d.is_nan() && nan == NanInMax::Kept => f32::NAN,
                Norm::Max if total.is_nan() => total,
                Norm::Max => total.max(d),
                Norm::Power(p) => total + d.powf(p as f32),
            };
        }
        match self {
            Norm::Euclidean => total.sqrt(),
            Norm::Power(p) => total.powf((1.0 / p) as f32),
            Norm::Count | Norm::Sum | Norm::Max => total,
        }
    }
}

/// Rows above which torch's `cdist` (compute_mode 0, its default) computes p = 2 by a
/// matrix product, `|a|² + |b|² − 2a·b` (`use_mm_for_euclid_dist_if_necessary` in
/// `cdist_impl`).
pub const MM_ROWS: u64 = 25;

/// Refused when torch computes this `cdist` through a matrix product, whose cancellation
/// a computation of the differences does not reproduce.
pub fn cdist_directly(norm: Norm, compute_mode: i64, rows1: u64, rows2: u64) -> Result<(), String> {
    let by_product = norm == Norm::Euclidean
        && (compute_mode == 1 || (compute_mode == 0 && rows1.max(rows2) > MM_ROWS));
    if by_product {
        return Err(format!(
            "cdist with p = 2 of {rows1} and {rows2} rows: torch computes it as |a|² + |b|² − 2a·b (a matrix product, above {MM_ROWS} rows or with compute_mode 1), whose rounding a graph of the differences would not reproduce; pass compute_mode='donot_use_mm_for_euclid_dist'"
        ));
    }
    Ok(())
}

/// The pairs `(i, j)`, `i < j`, of `rows` rows, in the order of `pdist`'s result: row 0
/// with rows 1, 2, …, then row 1 with rows 2, …
pub fn pairs(rows: u64) -> impl Iterator<Item = (u64, u64)> {
    (0..rows).flat_map(move |i| (i + 1..rows).map(move |j| (i, j)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_p_names_torchs_norm() {
        assert_eq!(Norm::of_p("cdist", 0.0), Ok(Norm::Count));
        assert_eq!(Norm::of_p("cdist", f64::INFINITY), Ok(Norm::Max));
        assert_eq!(Norm::of_p("cdist", 1.5), Ok(Norm::Power(1.5)));
        assert!(Norm::of_p("pdist", -1.0).is_err());
        assert!(Norm::of_p("pdist", f64::NAN).is_err());
    }

    #[test]
    fn distances_of_differences() {
        let d = [3.0f32, -4.0, 0.0];
        let kept = NanInMax::Kept;
        assert_eq!(Norm::Count.distance(d.into_iter(), kept), 2.0);
        assert_eq!(Norm::Sum.distance(d.into_iter(), kept), 7.0);
        assert_eq!(Norm::Euclidean.distance(d.into_iter(), kept), 5.0);
        assert_eq!(Norm::Max.distance(d.into_iter(), kept), 4.0);
    }

    #[test]
    fn a_nan_difference_is_nan_but_in_cdists_maximum() {
        let d = [f32::NAN, 2.0];
        assert!(Norm::Count
            .distance(d.into_iter(), NanInMax::Skipped)
            .is_nan());
        assert!(Norm::Max.distance(d.into_iter(), NanInMax::Kept).is_nan());
        assert_eq!(Norm::Max.distance(d.into_iter(), NanInMax::Skipped), 2.0);
    }

    #[test]
    fn pairs_follow_pdists_order() {
        let all: Vec<_> = pairs(4).collect();
        assert_eq!(all, [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]);
        assert_eq!(pairs(1).count(), 0);
    }

    #[test]
    fn euclidean_cdist_over_25_rows_is_a_matrix_product() {
        assert!(cdist_directly(Norm::Euclidean, 0, 25, 3).is_ok());
        assert!(cdist_directly(Norm::Euclidean, 0, 26, 3).is_err());
        assert!(cdist_directly(Norm::Euclidean, 1, 2, 3).is_err());
        assert!(cdist_directly(Norm::Euclidean, 2, 90, 3).is_ok());
        assert!(cdist_directly(Norm::Sum, 1, 90, 3).is_ok());
    }
}
