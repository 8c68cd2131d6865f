//! torch's 1-D interpolation weights as a matrix, for resizes ATC's `Resize` cannot do
//! (bicubic, and 1-D or 3-D inputs): a resize along one axis is then a `MatMul` by a
//! constant `[in, out]` matrix, and a separable N-D resize one such product per axis.
//! Source coordinates follow torch's `area_pixel_compute_source_index` with torch's scale
//! (`area_pixel_compute_scale`: `1 / factor` when the call gives a scale factor, else the
//! sizes' own `in / out`), and nearest indices torch's `nearest_idx` in its own `f32`
//! arithmetic.
//!
//! [`onnx_resize_agrees`] says when ONNX `Resize` with the scale [`resize_scale`] computes
//! the same samples as torch in onnxruntime and in what ATC's parser makes of it.

use crate::program::emit::resize_scale;

/// How one output sample is made from the input along an axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kernel {
    /// `upsample_nearest*d`: the sample at [`nearest_source`].
    Nearest,
    /// `_upsample_nearest_exact*d`: the sample under the output's centre
    /// ([`ckpt_aten::eval::nearest_exact`]).
    NearestExact,
    /// `upsample_linear1d`/`bilinear2d`/`trilinear3d`: two neighbours.
    Linear { align_corners: bool },
    /// `upsample_bicubic2d`: four neighbours, cubic convolution with A = −0.75, indices
    /// clamped to the edge.
    Cubic { align_corners: bool },
    /// `_upsample_bilinear2d_aa`/`_upsample_bicubic2d_aa`: torch's antialiased filters
    /// ([`ckpt_aten::eval::antialiased_taps`]).
    Antialiased { cubic: bool, align_corners: bool },
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

/// The scale of an axis without aligned corners (torch's `compute_scales_value`): `1 /
/// factor` for a positive scale factor the call gives, else `in / out`.
fn unaligned_scale(input: u64, output: u64, factor: Option<f64>) -> f64 {
    match factor {
        Some(f) if f > 0.0 => 1.0 / f,
        _ => input as f64 / output as f64,
    }
}

/// The source coordinate of output `dst`.
fn source(
    dst: u64,
    input: u64,
    output: u64,
    align_corners: bool,
    cubic: bool,
    factor: Option<f64>,
) -> f64 {
    if align_corners {
        if output > 1 {
            dst as f64 * (input - 1) as f64 / (output - 1) as f64
        } else {
            0.0
        }
    } else {
        let real = (dst as f64 + 0.5) * unaligned_scale(input, output, factor) - 0.5;
        // torch clamps a negative coordinate to 0 except for cubic.
        if cubic {
            real
        } else {
            real.max(0.0)
        }
    }
}

/// torch's `nearest_idx`: output `dst` of `output` samples reads input sample
/// `min(⌊f32(dst) · f32(in/out)⌋, in − 1)` in `f32` arithmetic (not the exact ratio: for
/// 14 → 16 the two differ), with the exact shortcuts torch takes for equal sizes and for
/// doubling. ATC's `ResizeNearestNeighborV2` without half-pixel centres computes the same
/// product (TensorFlow's legacy nearest rule).
pub(super) fn nearest_source(dst: u64, input: u64, output: u64, factor: Option<f64>) -> u64 {
    if output == input {
        dst
    } else if output == 2 * input {
        dst >> 1
    } else {
        let scale = match factor {
            Some(f) if f > 0.0 => (1.0 / f) as f32,
            _ => input as f32 / output as f32,
        };
        ((dst as f32 * scale).floor() as u64).min(input - 1)
    }
}

/// Whether ONNX `Resize` (opset 11, `scales` [`resize_scale`]) of one axis from `input` to
/// `output` samples gives torch's values both in onnxruntime and after ATC's parser, which
/// sizes the output as `⌊input · scale⌋` (exact by the choice of scale) and resamples with
/// `ResizeNearestNeighborV2`/`ResizeBilinearV2` from the sizes, not the scale:
/// - nearest: onnxruntime reads sample `⌊f32(dst) / scale⌋`, which must be
///   [`nearest_source`] for every output (ATC's rule is torch's);
/// - linear, corners aligned: every runtime uses `dst · (in − 1)/(out − 1)`;
/// - linear, half-pixel: written `pytorch_half_pixel`, the only half-pixel mode ATC maps
///   to half-pixel centres; onnxruntime then reads sample 0 for an output of length 1
///   where torch and ATC read `in/2 − 1/2`, so such an axis must have input length 1;
/// - cubic: ATC's parser has no cubic `Resize`;
/// - nearest-exact: ATC's parser never reads `nearest_mode` and its device floors
///   `dst · in/out`, never the centre.
pub(super) fn onnx_resize_agrees(input: u64, output: u64, kernel: Kernel) -> bool {
    match kernel {
        Kernel::Nearest => {
            let scale = resize_scale(input, output);
            (0..output).all(|dst| {
                let onnx = ((dst as f32 / scale).floor() as u64).min(input - 1);
                onnx == nearest_source(dst, input, output, None)
            })
        }
        Kernel::Linear {
            align_corners: true,
        } => true,
        Kernel::Linear {
            align_corners: false,
        } => output > 1 || input == 1,
        Kernel::Cubic { .. } | Kernel::NearestExact | Kernel::Antialiased { .. } => false,
    }
}

/// The row-major `[input, output]` matrix `M` with `y = x · M` resizing a row `x` of
/// `input` samples to `output` samples as torch does, with the call's scale `factor` when
/// it gives one. Both sizes are positive.
pub(super) fn matrix(input: u64, output: u64, kernel: Kernel, factor: Option<f64>) -> Vec<f32> {
    let (rows, cols) = (input as usize, output as usize);
    let mut m = vec![0f64; rows * cols];
    let last = input as i64 - 1;
    let mut add = |src: i64, dst: usize, w: f64| {
        let row = src.clamp(0, last) as usize;
        m[row * cols + dst] += w;
    };
    if let Kernel::Antialiased {
        cubic,
        align_corners,
    } = kernel
    {
        let taps = ckpt_aten::eval::antialiased_taps(input, output, align_corners, factor, cubic);
        for (d, taps) in taps.iter().enumerate() {
            for &(src, w) in taps {
                add(src as i64, d, f64::from(w));
            }
        }
    }
    for dst in 0..output {
        let d = dst as usize;
        match kernel {
            Kernel::Antialiased { .. } => {}
            Kernel::Nearest => {
                add(nearest_source(dst, input, output, factor) as i64, d, 1.0);
            }
            Kernel::NearestExact => {
                let src = ckpt_aten::eval::nearest_exact(dst, input, output, factor);
                add(src as i64, d, 1.0);
            }
            Kernel::Linear { align_corners } => {
                let real = source(dst, input, output, align_corners, false, factor);
                let i0 = real.floor() as i64;
                let t = real - i0 as f64;
                add(i0, d, 1.0 - t);
                add((i0 + 1).min(last), d, t);
            }
            Kernel::Cubic { align_corners } => {
                let real = source(dst, input, output, align_corners, true, factor);
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
        let m = matrix(2, 4, Kernel::Nearest, None);
        assert_eq!(m, [1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0]);
    }

    #[test]
    fn nearest_follows_torchs_f32_product_not_the_exact_ratio() {
        // 14 → 16: output 8 reads sample 8 · 0.875 = 7 (onnxruntime's 8 / f32(16/14)
        // falls just below 7 and reads 6).
        let picked: Vec<u64> = (0..16).map(|d| nearest_source(d, 14, 16, None)).collect();
        assert_eq!(picked, [0, 0, 1, 2, 3, 4, 5, 6, 7, 7, 8, 9, 10, 11, 12, 13]);
        assert_eq!(nearest_source(5, 3, 6, None), 2);
        assert_eq!(nearest_source(9, 4, 4, None), 9);
    }

    #[test]
    fn resize_agrees_only_where_onnxruntime_reads_torchs_samples() {
        // Most integer upscales agree; 14 → 16 and 20 → 24 nearest do not (onnxruntime
        // divides by f32(out/in) and reads other samples than torch), nor does 2 → 82,
        // where torch's f32(2/82) rounds down.
        assert!(onnx_resize_agrees(7, 28, Kernel::Nearest));
        assert!(!onnx_resize_agrees(14, 16, Kernel::Nearest));
        assert!(!onnx_resize_agrees(20, 24, Kernel::Nearest));
        assert!(!onnx_resize_agrees(2, 82, Kernel::Nearest));
        let half = Kernel::Linear {
            align_corners: false,
        };
        assert!(onnx_resize_agrees(7, 31, half));
        assert!(!onnx_resize_agrees(5, 1, half));
        assert!(onnx_resize_agrees(1, 1, half));
        assert!(!onnx_resize_agrees(
            4,
            8,
            Kernel::Cubic {
                align_corners: true
            }
        ));
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
            None,
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
            None,
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
            None,
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
            None,
        );
        assert_eq!(m, [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]);
    }

    #[test]
    fn a_scale_factor_sets_the_source_scale_as_in_torch() {
        // torch: interpolate(arange(4), scale_factor=1.7, mode="nearest") is [0, 0, 1, 1, 2, 2]
        // (⌊dst / 1.7⌋), where the sizes' ratio 4/6 would read [0, 0, 1, 2, 2, 3].
        let picks: Vec<u64> = (0..6).map(|d| nearest_source(d, 4, 6, Some(1.7))).collect();
        assert_eq!(picks, [0, 0, 1, 1, 2, 2]);
        let m = matrix(
            4,
            2,
            Kernel::Linear {
                align_corners: false,
            },
            Some(0.6),
        );
        // Output 1 sits at 1.5 / 0.6 − 0.5 = 2 exactly.
        assert_eq!(column(&m, 2, 1), [0.0, 0.0, 1.0, 0.0]);
    }
}
