//! `cartesian_prod` of 1-D tensors as the indices torch's composite op
//! (`aten/src/ATen/native/Itertools.cpp`) reads: it flattens the `meshgrid` of its inputs
//! ("ij"), the last index running fastest. The evaluator and the lowering both read the
//! tensors at these indices.

/// The most tuples written: each is a row of the result.
pub const MAX_TUPLES: u64 = 1 << 20;

/// The indices into each input of `cartesian_prod` of inputs of `sizes` entries: one list
/// per input, the last running fastest.
pub fn product(sizes: &[u64]) -> Result<Vec<Vec<u64>>, String> {
    let count = sizes
        .iter()
        .try_fold(1u64, |c, &s| c.checked_mul(s))
        .filter(|&c| c <= MAX_TUPLES)
        .ok_or_else(|| format!("a product of more than {MAX_TUPLES} tuples"))?;
    Ok(sizes
        .iter()
        .enumerate()
        .map(|(k, _)| {
            let inner: u64 = sizes[k + 1..].iter().product();
            (0..count).map(|p| (p / inner) % sizes[k]).collect()
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_product_runs_the_last_index_fastest() {
        assert_eq!(
            product(&[2, 3]).unwrap(),
            [vec![0, 0, 0, 1, 1, 1], vec![0, 1, 2, 0, 1, 2]]
        );
        assert!(product(&[1 << 11, 1 << 11]).is_err());
    }
}
