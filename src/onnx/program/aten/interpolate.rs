//! torch's 1-D interpolation weights as a matrix, for resizes ATC's `Resize` cannot do
//! (bicubic, and 1-D or 3-D inputs): a resize along one axis is then a `MatMul` by a
//! constant `[in, out]` matrix, and a separable N-D resize one such product per axis.
//! Source coordinates follow torch's `area_pixel_compute_source_index` with the output
//! size's own scale (`in / out`; exact scale factors give the same).

/// How one output sample is made from the input along an axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kernel {
    /// `upsample_nearest*d`: the sample at `⌊dst · in/out⌋`.
    Nearest,
    /// `upsample_linear1d`/`bilinear2d`/`trilinear3d`: two neighbours.
    Linear { align_corners: bool },
    /// `upsample_bicubic2d`: four neighbours, cubic convolution with A = −0.75, indices
    /// clamped to the edge.
    Cubic { align_corners: bool },
}

/// torch's cubic convolution coefficient.
const A: f64 = -0.75;

/// The weight of a neighbour at distance `x` (`|x| ≤ 1`).
fn near(x: f64) -> f64 {
    ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
}

/// The weight of a neighbour at distance `x` (`1 < |x| < 2`).
fn far(x: f64) -> f64 {
    ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A
}

/// The source coordinate of output `dst`.
fn source(dst: u64, input: u64, output: u64, align_corners: bool, cubic: bool) -> f64 {
    if align_corners {
        if output > 1 {
            dst as f64 * (input - 1) as f64 / (output - 1) as f64
        } else {
            0.0
        }
    } else {
        let real = (dst as f64 + 0.5) * input as f64 / output as f64 - 0.5;
        // torch clamps a negative coordinate to 0 except for cubic.
        if cubic {
            real
        } else {
            real.max(0.0)
        }
    }
}

/// The row-major `[input, output]` matrix `M` with `y = x · M` resizing a row `x` of
/// `input` samples to `output` samples as torch does. Both sizes are positive.
pub(super) fn matrix(input: u64, output: u64, kernel: Kernel) -> Vec<f32> {
    let (rows, cols) = (input as usize, output as usize);
    let mut m = vec![0f64; rows * cols];
    let last = input as i64 - 1;
    let mut add = |src: i64, dst: usize, w: f64| {
        let row = src.clamp(0, last) as usize;
        m[row * cols + dst] += w;
    };
    for dst in 0..output {
        let d = dst as usize;
        match kernel {
            Kernel::Nearest => {
                let src = (dst as f64 * input as f64 / output as f64).floor() as i64;
                add(src.min(last), d, 1.0);
            }
            Kernel::Linear { align_corners } => {
                let real = source(dst, input, output, align_corners, false);
                let i0 = real.floor() as i64;
                let t = real - i0 as f64;
                add(i0, d, 1.0 - t);
                add((i0 + 1).min(last), d, t);
            }
            Kernel::Cubic { align_corners } => {
                let real = source(dst, input, output, align_corners, true);
                let i0 = real.floor() as i64;
                let t = real - i0 as f64;
                let weights = [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)];
                for (k, w) in (-1..=2).zip(weights) {
                    add(i0 + k, d, w);
                }
            }
        }
    }
    m.into_iter().map(|w| w as f32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(m: &[f32], cols: usize, c: usize) -> Vec<f32> {
        m.iter().skip(c).step_by(cols).copied().collect()
    }

    #[test]
    fn nearest_doubling_repeats_each_sample() {
        let m = matrix(2, 4, Kernel::Nearest);
        assert_eq!(m, [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0]);
    }

    #[test]
    fn linear_weights_follow_the_coordinate_rule() {
        // Half-pixel: output 1 of 4 from 2 sits at 0.25 between samples 0 and 1.
        let m = matrix(
            2,
            4,
            Kernel::Linear {
                align_corners: false,
            },
        );
        assert_eq!(column(&m, 4, 0), [1.0, 0.0]);
        assert_eq!(column(&m, 4, 1), [0.75, 0.25]);
        // Corners aligned: the ends map onto the ends.
        let m = matrix(
            3,
            5,
            Kernel::Linear {
                align_corners: true,
            },
        );
        assert_eq!(column(&m, 5, 4), [0.0, 0.0, 1.0]);
        assert_eq!(column(&m, 5, 1), [0.5, 0.5, 0.0]);
    }

    #[test]
    fn cubic_columns_sum_to_one_and_clamp_at_the_edges() {
        let m = matrix(
            5,
            10,
            Kernel::Cubic {
                align_corners: false,
            },
        );
        for c in 0..10 {
            let sum: f32 = column(&m, 10, c).iter().sum();
            assert!((sum - 1.0).abs() < 1e-6, "column {c} sums to {sum}");
        }
        // Same size, corners aligned: the identity.
        let m = matrix(
            3,
            3,
            Kernel::Cubic {
                align_corners: true,
            },
        );
        assert_eq!(m, [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    }
}
