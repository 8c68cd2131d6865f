//! `torch.histc` as torch's CPU kernel counts (`histogram_histc_out` over
//! `histogramdd_cpu_contiguous` with `LINEAR_INTERPOLATION`): `bins` equal bins between
//! two outer edges, each entry's bin found by one float32 division, which the evaluator
//! computes on numbers and the ONNX lowering writes as nodes.

/// The outer edges `[left, right]` of `histc`'s bins (`histc_select_outer_bin_edges`):
/// `min` and `max`, or, when they are equal, the input's `extrema` (`None` for an empty
/// input); equal edges then widen by 1 each way. torch computes them in double and its
/// bins' edges are float32 (the ends of a float32 `linspace`).
pub fn outer_edges(min: f64, max: f64, extrema: Option<(f32, f32)>) -> Result<(f32, f32), String> {
    let (mut left, mut right) = (min, max);
    if left == right {
        if let Some((low, high)) = extrema {
            (left, right) = (f64::from(low), f64::from(high));
        }
    }
    if left == right {
        (left, right) = (left - 1.0, right + 1.0);
    }
    if !left.is_finite() || !right.is_finite() {
        return Err(format!("histc: range of [{left}, {right}] is not finite"));
    }
    if left >= right {
        return Err(format!(
            "histc with min {min} and max {max}: torch needs max larger than min"
        ));
    }
    Ok((left as f32, right as f32))
}

/// Whether `histc`'s edges are the input's extrema (its `min` and `max` are equal).
pub fn edges_from_input(min: f64, max: f64) -> bool {
    min == max
}

/// Torch's domain for the number of bins.
pub fn check_bins(bins: i64) -> Result<u64, String> {
    u64::try_from(bins)
        .ok()
        .filter(|&b| b > 0)
        .ok_or_else(|| format!("histc with {bins} bins: torch needs bins > 0"))
}

/// The bin of entry `x`, or `None` outside `[left, right]` (and for NaN):
/// `(x − left)·bins / (right − left)` in float32, truncated, the right edge in the last
/// bin.
pub fn bin(x: f32, left: f32, right: f32, bins: u64) -> Option<u64> {
    if !(x >= left && x <= right) {
        return None;
    }
    let at = (x - left) * bins as f32 / (right - left);
    Some((at as u64).min(bins - 1))
}

/// `histc` of `values`: `bins` counts between the outer edges.
pub fn histc(values: &[f32], bins: u64, min: f64, max: f64) -> Result<Vec<f32>, String> {
    let extrema = values
        .iter()
        .try_fold(None, |range: Option<(f32, f32)>, &x| {
            if x.is_nan() {
                return Err("histc of a NaN: its range is not finite".to_string());
            }
            Ok(Some(match range {
                None => (x, x),
                Some((low, high)) => (low.min(x), high.max(x)),
            }))
        });
    let extrema = if edges_from_input(min, max) {
        extrema?
    } else {
        None
    };
    let (left, right) = outer_edges(min, max, extrema)?;
    let mut counts = vec![0.0f32; bins as usize];
    for &x in values {
        if let Some(b) = bin(x, left, right, bins) {
            counts[b as usize] += 1.0;
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_fall_in_equal_bins_the_right_edge_in_the_last() {
        let counts = histc(&[0.0, 0.5, 1.0, 1.5, 2.0, -0.1, 2.1, f32::NAN], 4, 0.0, 2.0);
        assert_eq!(counts, Ok(vec![1.0, 1.0, 1.0, 2.0]));
    }

    #[test]
    fn equal_bounds_take_the_inputs_extrema_and_equal_edges_widen() {
        assert_eq!(histc(&[1.0, 3.0], 2, 0.0, 0.0), Ok(vec![1.0, 1.0]));
        assert_eq!(outer_edges(0.0, 0.0, Some((2.0, 2.0))), Ok((1.0, 3.0)));
        assert_eq!(outer_edges(5.0, 5.0, None), Ok((4.0, 6.0)));
        assert!(outer_edges(3.0, 1.0, None).is_err());
        assert!(histc(&[1.0, f32::INFINITY], 2, 0.0, 0.0).is_err());
        assert!(check_bins(0).is_err());
    }
}
