//! Order statistics as torch computes them (`aten/src/ATen/native/Sorting.cpp`): the
//! values along one axis sorted ascending with NaN last, a fractional rank, and the values
//! at the ranks around it. `quantile`/`nanquantile` follow `quantile_compute`; the
//! medians are the same rule at `q = 0.5` with `interpolation='lower'` (torch's
//! `median_impl`: the `(n − 1) / 2`-th value, the lower of the two middles; `nanmedian`
//! the `(c − 1) / 2`-th of the `c` values that are not NaN, the first when there is none).
//! The evaluator and the lowering both follow this plan.

use crate::args::Args;
use crate::program::{Argument, Node};

/// How `quantile` reads a rank between two sorted values (torch's `interpolation=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interpolation {
    /// `lerp` of the values below and above by the rank's fraction.
    Linear,
    /// The value below (rank floored).
    Lower,
    /// The value above (rank ceiled).
    Higher,
    /// `lerp` of the values below and above by 0.5.
    Midpoint,
    /// The value at the rank rounded half to even (`round_`).
    Nearest,
}

/// Which values along the axis an order statistic reduces: the whole tensor flattened
/// (`dim` absent) or one dimension, kept as size 1 or dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Along {
    /// torch's dimension, `None` for the whole tensor.
    pub dim: Option<i64>,
    /// Whether the reduced dimension stays (every dimension, for the whole tensor).
    pub keep: bool,
}

/// One order statistic of the values along an axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quantile {
    /// The quantile, in float32 as torch holds it (`scalar_tensor(q, self.options())`).
    pub q: f32,
    pub interpolation: Interpolation,
    /// `nanquantile`/`nanmedian`: ranks among the values that are not NaN; otherwise a NaN
    /// anywhere along the axis makes the result NaN.
    pub skip_nan: bool,
    /// Whether the op also returns the index of its value (`median.dim`, `nanmedian.dim`).
    pub indexed: bool,
}

/// The order-statistic ops this plan computes.
pub const OPS: [&str; 8] = [
    "median.default",
    "median.dim",
    "nanmedian.default",
    "nanmedian.dim",
    "quantile.scalar",
    "nanquantile.scalar",
    "quantile.default",
    "nanquantile.default",
];

/// Whether `node` is `quantile`/`nanquantile` of a tensor `q` (0-d or 1-D: a statistic per
/// entry, [`plan_at`]), stacked in front of the reduced dimensions.
pub fn of_tensor_q(node: &Node) -> bool {
    node.target.ends_with("quantile.default")
}

/// The statistic `node` (one of [`OPS`] but those [`of_tensor_q`]) computes and what it
/// reduces, or why torch refuses it.
pub fn plan(node: &Node) -> Result<(Quantile, Along), String> {
    plan_at(node, None)
}

/// [`plan`], and for `quantile`/`nanquantile` of a tensor `q`, the statistic at its entry
/// `q` (float32, as torch holds it).
pub fn plan_at(node: &Node, tensor_q: Option<f32>) -> Result<(Quantile, Along), String> {
    let args = Args(node);
    let op = node
        .target
        .strip_prefix("torch.ops.aten.")
        .unwrap_or(&node.target);
    let skip_nan = op.starts_with("nan");
    let median = |indexed| Quantile {
        q: 0.5,
        interpolation: Interpolation::Lower,
        skip_nan,
        indexed,
    };
    match op {
        "median.default" | "nanmedian.default" => Ok((
            median(false),
            Along {
                dim: None,
                keep: false,
            },
        )),
        "median.dim" | "nanmedian.dim" => Ok((
            median(true),
            Along {
                dim: Some(args.int("dim")?),
                keep: args.bool("keepdim")?,
            },
        )),
        "quantile.scalar" | "nanquantile.scalar" | "quantile.default" | "nanquantile.default" => {
            let q = match tensor_q {
                Some(q) => f64::from(q),
                None if op.ends_with(".scalar") => args.float("q")?,
                None => return Err("quantile of a tensor q read without its entries".into()),
            };
            if !(0.0..=1.0).contains(&q) {
                return Err(format!("quantile q = {q}: torch needs 0 ≤ q ≤ 1"));
            }
            let interpolation = match args.get("interpolation") {
                None | Some(Argument::None) => Interpolation::Linear,
                Some(Argument::String(mode)) => match mode.as_str() {
                    "linear" => Interpolation::Linear,
                    "lower" => Interpolation::Lower,
                    "higher" => Interpolation::Higher,
                    "midpoint" => Interpolation::Midpoint,
                    "nearest" => Interpolation::Nearest,
                    other => return Err(format!("quantile interpolation '{other}'")),
                },
                Some(other) => return Err(format!("argument `interpolation` is {}", other.kind())),
            };
            let quantile = Quantile {
                q: q as f32,
                interpolation,
                skip_nan,
                indexed: false,
            };
            let along = Along {
                dim: args.optional_int("dim")?,
                keep: args.bool("keepdim")?,
            };
            Ok((quantile, along))
        }
        other => Err(format!("`{other}` is not an order statistic")),
    }
}

/// Where a statistic reads the sorted values: the position below, and with `Some`, the
/// position above and the weight `lerp` gives it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reading {
    pub below: f32,
    pub above: Option<(f32, f32)>,
}

impl Quantile {
    /// The fractional rank (in float32, as torch computes it) among `n` sorted values of
    /// which `present` are not NaN: `q · (present − 1)` floored at 0 when NaN is skipped;
    /// else `q · (n − 1)`, or the last position when a NaN is there (whose value is NaN).
    pub fn rank(&self, n: u64, present: u64) -> f32 {
        if self.skip_nan {
            (self.q * (present as f32 - 1.0)).max(0.0)
        } else if present < n {
            (n - 1) as f32
        } else {
            self.q * (n - 1) as f32
        }
    }

    /// The positions `rank` reads, as `quantile_compute` adjusts it: floored (`lower`),
    /// ceiled (`higher`), rounded half to even (`nearest`), or between its floor and ceiling
    /// with weight its fraction (`linear`) or 0.5 (`midpoint`).
    pub fn reading(&self, rank: f32) -> Reading {
        let at = |below: f32| Reading { below, above: None };
        match self.interpolation {
            Interpolation::Lower => at(rank.floor()),
            Interpolation::Higher => at(rank.ceil()),
            Interpolation::Nearest => at(rank.round_ties_even()),
            Interpolation::Linear => Reading {
                below: rank.floor(),
                above: Some((rank.ceil(), rank - rank.floor())),
            },
            Interpolation::Midpoint => Reading {
                below: rank.floor(),
                above: Some((rank.ceil(), 0.5)),
            },
        }
    }

    /// The statistic of `sorted` (ascending, NaN last; not empty).
    pub fn of_sorted(&self, sorted: &[f32]) -> f32 {
        let present = sorted.iter().filter(|v| !v.is_nan()).count() as u64;
        let reading = self.reading(self.rank(sorted.len() as u64, present));
        let at = |p: f32| sorted[(p as usize).min(sorted.len() - 1)];
        match reading.above {
            None => at(reading.below),
            Some((above, weight)) => lerp(at(reading.below), at(above), weight),
        }
    }
}

/// torch's `lerp(start, end, weight)` (`ATen/native/Lerp.h`): `start + w·(end − start)`
/// for `|w| < 0.5`, else `end − (end − start)·(1 − w)`, so either end is met exactly.
pub fn lerp(start: f32, end: f32, weight: f32) -> f32 {
    if weight.abs() < 0.5 {
        start + weight * (end - start)
    } else {
        end - (end - start) * (1.0 - weight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quantile(q: f32, interpolation: Interpolation, skip_nan: bool) -> Quantile {
        Quantile {
            q,
            interpolation,
            skip_nan,
            indexed: false,
        }
    }

    #[test]
    fn the_median_is_the_lower_middle_and_nan_propagates_unless_skipped() {
        let median = quantile(0.5, Interpolation::Lower, false);
        assert_eq!(median.of_sorted(&[1., 2., 3., 4.]), 2.);
        assert!(median.of_sorted(&[1., 2., f32::NAN]).is_nan());
        let nanmedian = quantile(0.5, Interpolation::Lower, true);
        assert_eq!(nanmedian.of_sorted(&[1., 2., 3., f32::NAN, f32::NAN]), 2.);
        assert!(nanmedian.of_sorted(&[f32::NAN, f32::NAN]).is_nan());
    }

    #[test]
    fn interpolations_read_as_torch_reads_them() {
        let v = [1., 2., 3., 4., 5., 6.];
        let at = |q, mode| quantile(q, mode, false).of_sorted(&v);
        assert_eq!(at(0.5, Interpolation::Linear), 3.5);
        assert_eq!(at(0.5, Interpolation::Midpoint), 3.5);
        assert_eq!(at(0.5, Interpolation::Lower), 3.);
        assert_eq!(at(0.5, Interpolation::Higher), 4.);
        // rank 2.5 rounds half to even.
        assert_eq!(at(0.5, Interpolation::Nearest), 3.);
        // lerp of two infinities by one half is NaN, as in torch.
        let inf = quantile(0.5, Interpolation::Midpoint, false);
        assert!(inf.of_sorted(&[f32::INFINITY, f32::INFINITY]).is_nan());
    }
}
