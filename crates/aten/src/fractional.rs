//! `fractional_max_pool2d`/`3d` with given `random_samples`, as torch's CPU kernel
//! computes them (`FractionalMaxPool2d.cpp`, `FractionalMaxPool3d.cpp`): every plane (a
//! sample's channel) has its own samples in `[0, 1)`, one per spatial axis, and each axis's
//! window starts follow from its sample by `generate_intervals`, in float32:
//! `⌊(i + u)·α⌋ − ⌊u·α⌋` with `α = (in − pool)/(out − 1)`, the last window ending at the
//! input's end. A window is the product of its axes' intervals, scanned row-major: a value
//! is taken when it is greater than the running maximum (from −∞) or NaN, and the index is
//! flat in the plane's spatial map, starting at the window's first point.
//!
//! The samples of a 2-D pool are `(w, h)`: the first is the width's, the second the
//! height's; a 3-D pool's are `(t, h, w)`, in the axes' order.
//!
//! The evaluator computes the pool here ([`pool`]); the lowering gathers each window's
//! points by the starts [`Windows`] lists.

/// Torch's `generate_intervals`: the start of each of the `output` windows of `pool`
/// points along an axis of `input`, from sample `u`; `None` when a window would leave the
/// axis (a sample outside `[0, 1)`, or sizes torch refuses).
pub fn intervals(u: f32, input: u64, output: u64, pool: u64) -> Option<Vec<u64>> {
    if output == 0 || pool == 0 || pool > input {
        return None;
    }
    let last = input - pool;
    let mut starts = Vec::with_capacity(output as usize);
    if output > 1 {
        let alpha = last as f32 / (output - 1) as f32;
        // C's float-to-int conversion truncates; `as i64` does too (and saturates).
        let base = (u * alpha) as i64;
        for i in 0..output - 1 {
            let start = ((i as f32 + u) * alpha) as i64 - base;
            if start < 0 || start as u64 > last {
                return None;
            }
            starts.push(start as u64);
        }
    }
    starts.push(last);
    Some(starts)
}

/// The windows of every plane: per plane, per spatial axis, the starts of its windows.
#[derive(Clone, Debug, PartialEq)]
pub struct Windows {
    /// The spatial sizes of the input.
    pub sizes: Vec<u64>,
    /// The window's extent along each spatial axis.
    pub kernel: Vec<u64>,
    /// The output's spatial sizes.
    pub out: Vec<u64>,
    /// `starts[plane][axis]`: the window starts along `axis` (`out[axis]` of them).
    pub starts: Vec<Vec<Vec<u64>>>,
}

impl Windows {
    /// The windows of `planes` planes of spatial `sizes` pooled by `kernel` to `out`, from
    /// `samples` (the `random_samples` tensor, row-major: `rank` per plane, the first
    /// `planes · rank` read).
    pub fn new(
        planes: u64,
        sizes: &[u64],
        kernel: &[u64],
        out: &[u64],
        samples: &[f32],
    ) -> Result<Windows, String> {
        let rank = sizes.len();
        if !(2..=3).contains(&rank) || kernel.len() != rank || out.len() != rank {
            return Err(format!(
                "fractional max pooling of a spatial map {sizes:?} by a kernel {kernel:?} to {out:?}: 2 or 3 spatial axes are pooled"
            ));
        }
        // torch reads the first `rank` samples of each plane in order, and no more (an
        // unbatched input reads the first sample's row of a batch of samples).
        let read = planes * rank as u64;
        let Some(samples) = samples.get(..read as usize) else {
            return Err(format!(
                "fractional max pooling of {planes} planes by {} random samples; torch reads {rank} per plane",
                samples.len()
            ));
        };
        let mut starts = Vec::with_capacity(planes as usize);
        for plane in samples.chunks(rank) {
            let mut axes = Vec::with_capacity(rank);
            for axis in 0..rank {
                // A 2-D pool's samples are (w, h); a 3-D pool's (t, h, w).
                let u = plane[if rank == 2 { 1 - axis } else { axis }];
                let s = intervals(u, sizes[axis], out[axis], kernel[axis]).ok_or_else(|| {
                    format!(
                        "fractional max pooling by the random sample {u} along an axis of {} to {} windows of {}: a sample in [0, 1) and windows within the input are pooled",
                        sizes[axis], out[axis], kernel[axis]
                    )
                })?;
                axes.push(s);
            }
            starts.push(axes);
        }
        Ok(Windows {
            sizes: sizes.to_vec(),
            kernel: kernel.to_vec(),
            out: out.to_vec(),
            starts,
        })
    }
}

/// The maxima and their indices (flat in the plane's spatial map) of every window of
/// `x` (`[planes, sizes…]`, row-major), as torch's kernel scans them.
pub fn pool(x: &[f32], w: &Windows) -> (Vec<f32>, Vec<i64>) {
    let rank = w.sizes.len();
    let plane: u64 = w.sizes.iter().product();
    let mut strides = vec![1u64; rank];
    for i in (0..rank.saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * w.sizes[i + 1];
    }
    let count: u64 = w.out.iter().product();
    let window: u64 = w.kernel.iter().product();
    let (mut values, mut indices) = (Vec::new(), Vec::new());
    for (p, starts) in w.starts.iter().enumerate() {
        let base = p as u64 * plane;
        for o in 0..count {
            let at = unflatten(o, &w.out);
            let first: u64 = (0..rank)
                .map(|i| starts[i][at[i] as usize] * strides[i])
                .sum();
            let (mut best, mut best_at) = (f32::NEG_INFINITY, first as i64);
            for k in 0..window {
                let offset = unflatten(k, &w.kernel);
                let flat = first + (0..rank).map(|i| offset[i] * strides[i]).sum::<u64>();
                let v = x[(base + flat) as usize];
                if v > best || v.is_nan() {
                    best = v;
                    best_at = flat as i64;
                }
            }
            values.push(best);
            indices.push(best_at);
        }
    }
    (values, indices)
}

/// Row-major flat position `flat` of a map of `dims` as its coordinates.
fn unflatten(mut flat: u64, dims: &[u64]) -> Vec<u64> {
    let mut at = vec![0; dims.len()];
    for i in (0..dims.len()).rev() {
        at[i] = flat % dims[i];
        flat /= dims[i];
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_follow_torch() {
        // α = (9 − 3)/(4 − 1) = 2: ⌊(i + ½)·2⌋ − ⌊½·2⌋ = 2i, the last at 9 − 3.
        assert_eq!(intervals(0.5, 9, 4, 3), Some(vec![0, 2, 4, 6]));
        assert_eq!(intervals(0.0, 5, 1, 2), Some(vec![3]));
        assert_eq!(intervals(0.5, 2, 1, 3), None);
        // Only the sample's place within a window moves the starts.
        assert_eq!(intervals(7.5, 9, 4, 3), intervals(0.5, 9, 4, 3));
    }

    #[test]
    fn two_d_samples_are_width_then_height() {
        // One plane 3×4, kernel 1×1 to 2×2: the height's sample is the second.
        let w = Windows::new(1, &[3, 4], &[1, 1], &[2, 2], &[0.0, 0.99]).unwrap();
        assert_eq!(w.starts[0][0], intervals(0.99, 3, 2, 1).unwrap());
        assert_eq!(w.starts[0][1], intervals(0.0, 4, 2, 1).unwrap());
    }

    #[test]
    fn pool_takes_the_first_maximum_and_the_last_nan() {
        let w = Windows {
            sizes: vec![1, 4],
            kernel: vec![1, 4],
            out: vec![1, 1],
            starts: vec![vec![vec![0], vec![0]]],
        };
        assert_eq!(pool(&[1.0, 3.0, 3.0, 2.0], &w), (vec![3.0], vec![1]));
        let (v, i) = pool(&[f32::NAN, 3.0, f32::NAN, 2.0], &w);
        assert!(v[0].is_nan());
        assert_eq!(i, [2]);
        let (v, i) = pool(&[f32::NEG_INFINITY; 4], &w);
        assert_eq!((v[0], i[0]), (f32::NEG_INFINITY, 0));
    }
}
