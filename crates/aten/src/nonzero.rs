//! `nonzero_static` (`torch.nonzero_static`): the coordinates of the first `size` nonzero
//! entries in row-major order, one row each, rows past the last nonzero entry filled
//! with `fill_value` (torch's CPU kernel: `nonzero_static_out_cpu`), which the evaluator
//! computes and the ONNX lowering writes as one-hot picks.

/// The coordinates of every entry of a tensor of sizes `dims`, row-major.
pub fn coordinates(dims: &[u64]) -> impl Iterator<Item = Vec<u64>> + '_ {
    let count: u64 = dims.iter().product();
    (0..count).map(move |flat| {
        let mut rest = flat;
        let mut at = vec![0; dims.len()];
        for (axis, &size) in dims.iter().enumerate().rev() {
            at[axis] = rest % size;
            rest /= size;
        }
        at
    })
}

/// `nonzero_static` of entries `nonzero` (whether each is nonzero, row-major) of a tensor
/// of sizes `dims`: `size` rows of `dims.len()` coordinates.
pub fn nonzero_static(dims: &[u64], nonzero: &[bool], size: u64, fill: i64) -> Vec<i64> {
    let rank = dims.len();
    let mut rows: Vec<i64> = coordinates(dims)
        .zip(nonzero)
        .filter(|(_, &nz)| nz)
        .take(size as usize)
        .flat_map(|(at, _)| at.into_iter().map(|c| c as i64))
        .collect();
    rows.resize(size as usize * rank, fill);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_nonzero_entries_then_the_fill() {
        let nz = [false, true, false, true, true, false];
        assert_eq!(
            nonzero_static(&[2, 3], &nz, 4, -1),
            [0, 1, 1, 0, 1, 1, -1, -1]
        );
        assert_eq!(nonzero_static(&[2, 3], &nz, 2, -1), [0, 1, 1, 0]);
    }
}
