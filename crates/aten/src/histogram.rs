//! `torch.histc` and `torch.histogram` with a bin count as torch's CPU kernel counts
//! (`histogramdd_cpu_contiguous`): `bins` equal bins between two outer edges, each
//! entry's bin found by one float32 division (`histc`: `LINEAR_INTERPOLATION`), which
//! `histogram` corrects against its float32 `linspace` edges by a search among the
//! neighbouring edges (`LINEAR_INTERPOLATION_WITH_LOCAL_SEARCH`), and `histogram` by a
//! tensor of edges, where each entry's bin is the one torch's binary search finds
//! (`BINARY_SEARCH`); the evaluator computes them on numbers and the ONNX lowering writes
//! them as nodes.

use super::spaced;

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

/// The least and greatest of `values` (`None` when empty), as torch's `aminmax` gives
/// them; a NaN makes `op`'s range not finite, which torch refuses.
fn extrema(op: &str, values: &[f32]) -> Result<Option<(f32, f32)>, String> {
    values
        .iter()
        .try_fold(None, |seen: Option<(f32, f32)>, &x| {
            if x.is_nan() {
                return Err(format!("{op} of a NaN: its range is not finite"));
            }
            Ok(Some(match seen {
                None => (x, x),
                Some((low, high)) => (low.min(x), high.max(x)),
            }))
        })
}

/// `histc` of `values`: `bins` counts between the outer edges.
pub fn histc(values: &[f32], bins: u64, min: f64, max: f64) -> Result<Vec<f32>, String> {
    let extrema = if edges_from_input(min, max) {
        extrema("histc", values)?
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

/// The outer edges of `histogram`'s bins (`select_outer_bin_edges`): `range`, or the
/// input's `extrema` (`None` for an empty input: 0 and 0); equal edges widen by ½ each
/// way. As float32, the ends of its `linspace` edges.
pub fn histogram_outer_edges(
    range: Option<(f64, f64)>,
    extrema: Option<(f32, f32)>,
) -> Result<(f32, f32), String> {
    let (mut left, mut right) = match (range, extrema) {
        (Some(r), _) => r,
        (None, Some((low, high))) => (f64::from(low), f64::from(high)),
        (None, None) => (0.0, 0.0),
    };
    if !left.is_finite() || !right.is_finite() {
        return Err(format!(
            "histogram: range of [{left}, {right}] is not finite"
        ));
    }
    if left > right {
        return Err(format!(
            "histogram of range [{left}, {right}]: torch needs min ≤ max"
        ));
    }
    if left == right {
        (left, right) = (left - 0.5, right + 0.5);
    }
    Ok((left as f32, right as f32))
}

/// The window of edges `histogram`'s search reads for an entry whose division gave bin
/// `at` of `bins`: edges `first..end` (`pos − 1` to `pos + 1`, within the `bins + 1`).
pub fn search_window(at: u64, bins: u64) -> (u64, u64) {
    (at.saturating_sub(1), (at + 2).min(bins + 1))
}

/// The bin of entry `x` among `edges` (`bins + 1`, increasing), or `None` outside them:
/// [`bin`]'s guess, then the last edge of its window at or below `x`, the right edge in
/// the last bin.
pub fn searched_bin(x: f32, edges: &[f32]) -> Option<u64> {
    let bins = edges.len() as u64 - 1;
    let (left, right) = (edges[0], edges[bins as usize]);
    if !(x >= left && x <= right) {
        return None;
    }
    let at = ((x - left) * bins as f32 / (right - left)) as u64;
    let (first, end) = search_window(at, bins);
    let at_or_below = (first..end).filter(|&k| edges[k as usize] <= x).count() as u64;
    Some((first + at_or_below).saturating_sub(1).min(bins - 1))
}

/// `histogram(values, bins, range, weight, density)`: the counts (or summed weights, or
/// with `density` those divided by their total and each bin's width) and the edges.
pub fn histogram(
    values: &[f32],
    weights: Option<&[f32]>,
    bins: u64,
    range: Option<(f64, f64)>,
    density: bool,
) -> Result<(Vec<f32>, Vec<f32>), String> {
    let extrema = match range {
        Some(_) => None,
        None => extrema("histogram", values)?,
    };
    let (left, right) = histogram_outer_edges(range, extrema)?;
    let edges = spaced::linspace(left, right, bins + 1);
    let mut hist = vec![0.0f32; bins as usize];
    for (i, &x) in values.iter().enumerate() {
        if let Some(b) = searched_bin(x, &edges) {
            hist[b as usize] += weights.map_or(1.0, |w| w[i]);
        }
    }
    if density {
        densities(&mut hist, &edges);
    }
    Ok((hist, edges))
}

/// Edges given as a tensor, checked as torch's binary search needs them: at least two
/// (one bin), none NaN, non-decreasing (`std::upper_bound` finds a bin only in sorted
/// edges).
pub fn check_edges(edges: &[f32]) -> Result<u64, String> {
    if edges.len() < 2 {
        return Err(format!(
            "histogram by {} edges: no bin (a dimension of size 0, an empty tensor, which ATC does not compile)",
            edges.len()
        ));
    }
    if edges.iter().any(|e| e.is_nan()) || edges.windows(2).any(|w| w[1] < w[0]) {
        return Err("histogram by edges that are not increasing (or hold a NaN): torch's binary search needs them sorted".into());
    }
    Ok(edges.len() as u64 - 1)
}

/// The bin of entry `x` among sorted `edges` (checked by [`check_edges`]) as torch's
/// binary search finds it: the count of edges at or below `x` (`std::upper_bound`), less
/// one, the right edge in the last bin; `None` outside the outer edges (and for NaN).
pub fn edge_bin(x: f32, edges: &[f32]) -> Option<u64> {
    let bins = edges.len() as u64 - 1;
    if !(x >= edges[0] && x <= edges[bins as usize]) {
        return None;
    }
    let at_or_below = edges.iter().filter(|&&e| e <= x).count() as u64;
    Some((at_or_below - 1).min(bins - 1))
}

/// `histogram(values, bins: Tensor, weight, density)`: the counts (or summed weights, or
/// with `density` those divided by their total and each bin's width) in the bins between
/// `edges`.
pub fn histogram_by_edges(
    values: &[f32],
    weights: Option<&[f32]>,
    edges: &[f32],
    density: bool,
) -> Result<Vec<f32>, String> {
    let bins = check_edges(edges)?;
    let mut hist = vec![0.0f32; bins as usize];
    for (i, &x) in values.iter().enumerate() {
        if let Some(b) = edge_bin(x, edges) {
            hist[b as usize] += weights.map_or(1.0, |w| w[i]);
        }
    }
    if density {
        densities(&mut hist, edges);
    }
    Ok(hist)
}

/// `hist` divided by its total and each bin's width (`histogramdd_out`'s `density`).
fn densities(hist: &mut [f32], edges: &[f32]) {
    let total: f32 = hist.iter().sum();
    for (k, h) in hist.iter_mut().enumerate() {
        *h = *h / total / (edges[k + 1] - edges[k]);
    }
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

    #[test]
    fn histogram_searches_its_edges_and_widens_equal_ones_by_a_half() {
        let (hist, edges) = histogram(&[0.0, 0.5, 1.0, 2.0], None, 2, None, false).unwrap();
        assert_eq!((hist, edges), (vec![2.0, 2.0], vec![0.0, 1.0, 2.0]));
        assert_eq!(
            histogram_outer_edges(Some((1.0, 1.0)), None),
            Ok((0.5, 1.5))
        );
        assert_eq!(histogram_outer_edges(None, None), Ok((-0.5, 0.5)));
        let (density, _) = histogram(&[0.0, 0.5, 1.0, 2.0], None, 2, None, true).unwrap();
        assert_eq!(density, vec![0.5, 0.5]);
        assert_eq!(search_window(0, 4), (0, 2));
        assert_eq!(search_window(4, 4), (3, 5));
    }

    #[test]
    fn edges_bin_as_torchs_binary_search() {
        let edges = [0.0, 1.0, 1.0, 3.0];
        assert_eq!(edge_bin(0.5, &edges), Some(0));
        // Equal edges: the search moves past both, into the bin after them.
        assert_eq!(edge_bin(1.0, &edges), Some(2));
        assert_eq!(edge_bin(3.0, &edges), Some(2));
        assert_eq!(edge_bin(3.5, &edges), None);
        assert_eq!(edge_bin(f32::NAN, &edges), None);
        assert!(check_edges(&[1.0, 0.0]).is_err());
        assert!(check_edges(&[1.0]).is_err());
        let hist = histogram_by_edges(&[0.5, 1.0, 2.0, 9.0], None, &[0.0, 1.0, 3.0], true);
        assert_eq!(hist, Ok(vec![1.0 / 3.0, 1.0 / 3.0]));
    }
}
