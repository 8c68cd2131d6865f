//! `searchsorted` as torch's CPU kernel searches (`aten/src/ATen/native/Bucketization.cpp`):
//! a binary search over the whole sorted axis whose steps are fixed by its length, so the
//! evaluator runs it and the lowering unrolls it ([`steps`]) to the same positions on any
//! input, sorted or not. The lower bound moves right while `!(x[mid] >= v)` and the upper
//! while `!(x[mid] > v)`, so a NaN `v` finds the end.

use crate::aten::args::Args;
use crate::aten::program::{Argument, Node};

/// Whether `node` (`searchsorted.Scalar`) asks for the upper bound: `side`, which torch
/// checks against `right`, else `right`; a `sorter` is refused.
pub fn upper(node: &Node) -> Result<bool, String> {
    let args = Args(node);
    if !matches!(args.get("sorter"), None | Some(Argument::None)) {
        return Err("searchsorted with a `sorter` is not exported".into());
    }
    let right = args.bool("right")?;
    match args.get("side") {
        None | Some(Argument::None) => Ok(right),
        Some(Argument::String(side)) => match (side.as_str(), right) {
            ("left", false) => Ok(false),
            ("right", _) => Ok(true),
            ("left", true) => Err("searchsorted with side='left' and right=True".into()),
            (other, _) => Err(format!("searchsorted side '{other}'")),
        },
        Some(other) => Err(format!("argument `side` is {}", other.kind())),
    }
}

/// Whether the search moves right past `at` (the value at the middle) for `v`.
pub fn past(at: f32, v: f32, upper: bool) -> bool {
    use std::cmp::Ordering::{Equal, Greater};
    match at.partial_cmp(&v) {
        Some(Greater) => false,
        Some(Equal) => upper,
        // Less, or unordered (a NaN): neither `>` nor `>=` holds.
        _ => true,
    }
}

/// The number of halvings that empties a range of `n` entries: the bit length of `n`.
pub fn steps(n: u64) -> u32 {
    u64::BITS - n.leading_zeros()
}

/// The position torch's search finds for `v` in `sorted`.
pub fn position(sorted: &[f32], v: f32, upper: bool) -> usize {
    let (mut start, mut end) = (0, sorted.len());
    while start < end {
        let mid = start + (end - start) / 2;
        if past(sorted[mid], v, upper) {
            start = mid + 1;
        } else {
            end = mid;
        }
    }
    start
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_torchs_and_nan_finds_the_end() {
        let x = [1.0, 2.0, 2.0, 3.0];
        assert_eq!(position(&x, 2.0, false), 1);
        assert_eq!(position(&x, 2.0, true), 3);
        assert_eq!(position(&x, f32::NAN, false), 4);
        assert_eq!(position(&x, f32::NEG_INFINITY, true), 0);
        // A NaN in the sequence: the search's own path decides.
        assert_eq!(position(&[1.0, 2.0, f32::NAN], 1.5, false), 1);
        assert_eq!(steps(0), 0);
        assert_eq!(steps(4), 3);
        assert_eq!(steps(7), 3);
    }

    #[test]
    fn the_unrolled_steps_end_every_search() {
        for n in 0..40u64 {
            let (mut longest, mut len) = (0, n);
            while len > 0 {
                longest += 1;
                len /= 2;
            }
            assert_eq!(steps(n), longest);
        }
    }
}
