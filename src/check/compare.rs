//! How far an ONNX output is from torch's: the figures and the pass rule.
//!
//! `rel = max|onnx − torch| / max(1, max|torch|)`: the largest absolute difference, scaled by
//! the largest reference magnitude but never by less than 1, so outputs near zero are held to
//! an absolute bound instead of making an elementwise ratio explode. An output passes when
//! `rel <= tolerance` (default 1e-4, the interop tier's rule). Two NaNs, or two equal
//! infinities, at one position count as equal; a NaN or infinity on one side only is an
//! infinite difference, so it always fails.

use super::Array;

/// The figures of one output pair.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Difference {
    /// Largest `|onnx − torch|` over the elements (infinite when only one side is not finite).
    pub max_abs: f64,
    /// Largest finite `|torch|` (0 for an empty output).
    pub max_ref: f64,
    /// `max_abs / max(1, max_ref)`.
    pub rel: f64,
}

/// The result of comparing one output.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The shapes agree and the values were compared.
    Measured(Difference),
    /// torch and the ONNX graph returned different shapes: a failure at any tolerance.
    ShapeDiffers {
        /// torch's shape.
        torch: Vec<usize>,
        /// The ONNX output's shape.
        onnx: Vec<usize>,
    },
}

impl Outcome {
    /// Whether this output is within `tolerance` (see the module documentation).
    pub fn passes(&self, tolerance: f64) -> bool {
        match self {
            Outcome::Measured(d) => d.rel <= tolerance,
            Outcome::ShapeDiffers { .. } => false,
        }
    }
}

impl std::fmt::Display for Outcome {
    /// The figures (`max|diff| …, max|ref| …, rel …`) or the two shapes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Measured(d) => write!(
                f,
                "max|diff| {:.3e}, max|ref| {:.3e}, rel {:.3e}",
                d.max_abs, d.max_ref, d.rel
            ),
            Outcome::ShapeDiffers { torch, onnx } => {
                write!(f, "torch returned shape {torch:?}, the ONNX graph {onnx:?}")
            }
        }
    }
}

/// Compares `onnx` against the reference `torch`.
pub fn compare(torch: &Array, onnx: &Array) -> Outcome {
    if torch.shape != onnx.shape || torch.data.len() != onnx.data.len() {
        return Outcome::ShapeDiffers {
            torch: torch.shape.clone(),
            onnx: onnx.shape.clone(),
        };
    }
    let max_abs = torch
        .data
        .iter()
        .zip(&onnx.data)
        .map(|(&t, &o)| element_difference(f64::from(t), f64::from(o)))
        .fold(0.0, f64::max);
    let max_ref = torch
        .data
        .iter()
        .map(|&t| f64::from(t).abs())
        .filter(|t| t.is_finite())
        .fold(0.0, f64::max);
    Outcome::Measured(Difference {
        max_abs,
        max_ref,
        rel: max_abs / max_ref.max(1.0),
    })
}

/// `|t − o|`, with matching NaNs and equal infinities as 0 and any other non-finite result as
/// infinity (so `f64::max` never drops it).
fn element_difference(t: f64, o: f64) -> f64 {
    if t == o || (t.is_nan() && o.is_nan()) {
        return 0.0;
    }
    let d = (t - o).abs();
    if d.is_nan() {
        f64::INFINITY
    } else {
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(data: &[f32]) -> Array {
        Array {
            shape: vec![1, data.len()],
            data: data.to_vec(),
        }
    }

    fn measured(torch: &[f32], onnx: &[f32]) -> Difference {
        match compare(&array(torch), &array(onnx)) {
            Outcome::Measured(d) => d,
            other => panic!("expected figures, got {other:?}"),
        }
    }

    #[test]
    fn small_outputs_are_held_to_an_absolute_bound() {
        let d = measured(&[1e-6, -2e-6], &[3e-6, -2e-6]);
        assert!((d.max_abs - 2e-6).abs() < 1e-12);
        assert_eq!(d.rel, d.max_abs);
        assert!(Outcome::Measured(d).passes(crate::check::DEFAULT_TOLERANCE));
    }

    #[test]
    fn large_outputs_are_scaled_by_their_largest_magnitude() {
        let d = measured(&[100.0, -200.0], &[100.05, -200.0]);
        assert_eq!(d.max_ref, 200.0);
        assert!((d.rel - 0.05 / 200.0).abs() < 1e-7);
        assert!(!Outcome::Measured(d).passes(crate::check::DEFAULT_TOLERANCE));
        assert!(Outcome::Measured(d).passes(1e-3));
    }

    #[test]
    fn a_nan_or_infinity_on_one_side_fails() {
        assert_eq!(measured(&[1.0, 2.0], &[1.0, f32::NAN]).rel, f64::INFINITY);
        assert_eq!(measured(&[f32::INFINITY], &[1.0]).max_abs, f64::INFINITY);
        assert_eq!(
            measured(&[f32::INFINITY], &[f32::NEG_INFINITY]).max_abs,
            f64::INFINITY
        );
    }

    #[test]
    fn matching_nans_and_infinities_are_equal() {
        let d = measured(
            &[f32::NAN, f32::INFINITY, 3.0],
            &[f32::NAN, f32::INFINITY, 3.0],
        );
        assert_eq!(d.max_abs, 0.0);
        assert_eq!(d.max_ref, 3.0);
    }

    #[test]
    fn different_shapes_fail_at_any_tolerance() {
        let torch = array(&[1.0, 2.0]);
        let onnx = Array {
            shape: vec![2, 1],
            data: vec![1.0, 2.0],
        };
        let outcome = compare(&torch, &onnx);
        assert_eq!(
            outcome,
            Outcome::ShapeDiffers {
                torch: vec![1, 2],
                onnx: vec![2, 1]
            }
        );
        assert!(!outcome.passes(f64::INFINITY));
    }
}
