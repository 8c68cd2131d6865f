//! `searchsorted` as torch's CPU kernel searches (`aten/src/ATen/native/Bucketization.cpp`):
//! a binary search over the whole sorted axis whose steps are fixed by its length, so the
//! evaluator runs it and the lowering unrolls it ([`steps`]) to the same positions on any
//! input, sorted or not. The lower bound moves right while `!(x[mid] >= v)` and the upper
//! while `!(x[mid] > v)`, so a NaN `v` finds the end.

use crate::args::Args;
use crate::program::{Argument, Node};

/// Whether `node` (`searchsorted`) asks for the upper bound: `side`, which torch checks
/// against `right`, else `right`.
pub fn upper(node: &Node) -> Result<bool, String> {
    let args = Args(node);
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

/// How `searchsorted` of values of sizes `values` in a sequence of sizes `sequence` pairs
/// them (torch's `searchsorted_pre_check`): a 1-D sequence is searched for every value; an
/// N-D one row by row, for the values of the same leading indices (their sizes but the
/// last must be the sequence's). Returns the rows, the sequence's length and the values per
/// row.
pub fn rows(sequence: &[u64], values: &[u64]) -> Result<(usize, usize, usize), String> {
    let Some((&n, lead)) = sequence.split_last() else {
        return Err("searchsorted in a 0-d sequence (torch needs 1-D or more)".into());
    };
    let count = |d: &[u64]| d.iter().product::<u64>() as usize;
    if lead.is_empty() {
        return Ok((1, n as usize, count(values)));
    }
    match values.split_last() {
        Some((&m, v_lead)) if v_lead == lead => Ok((count(lead), n as usize, m as usize)),
        _ => Err(format!(
            "searchsorted of values of sizes {values:?} in a sequence of sizes {sequence:?}: torch needs the sizes but the last to match"
        )),
    }
}

/// A `sorter` of a sequence of sizes `sequence` as positions within each row (torch's
/// check: the sequence's sizes, every entry in `0..n`).
pub fn sorter_positions(
    sequence: &[u64],
    sorter_dims: &[u64],
    sorter: &[i64],
) -> Result<Vec<i64>, String> {
    let n = sequence.last().copied().unwrap_or(0) as i64;
    if sorter_dims != sequence {
        return Err(format!(
            "a sorter of sizes {sorter_dims:?} for a sequence of sizes {sequence:?} (torch needs them equal)"
        ));
    }
    match sorter.iter().find(|&&i| !(0..n).contains(&i)) {
        Some(i) => Err(format!(
            "sorter index {i} is out of range for a sequence of length {n}"
        )),
        None => Ok(sorter.to_vec()),
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
