//! `upsample_*` of a constant, one spatial axis at a time, with torch's source-index
//! rules: nearest (`floor(dst · scale)`), linear with or without aligned corners, and
//! bicubic (`A = −0.75`, edges clamped), and torch's antialiased bilinear and bicubic
//! filters. A scale factor given by the call is used as
//! `1 / factor`, as torch does, rather than the ratio of the sizes. `grid_sampler_2d` and
//! `grid_sampler_3d` of a constant sample it as [`crate::grid_sample`] says.

use super::tensor::{element_count, Tensor};
use super::Args;
use crate::grid_sample::{sample, Settings, MAX_PIXELS};
use crate::program::Argument;

/// How an axis is resampled.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Nearest,
    /// `_upsample_nearest_exact*d`: the sample under each output's centre.
    NearestExact,
    Linear,
    Cubic,
    /// `_upsample_bilinear2d_aa`/`_upsample_bicubic2d_aa`: torch's antialiased filters
    /// ([`antialiased_taps`]).
    Antialiased {
        cubic: bool,
    },
}

/// The source scale of one axis (torch's `area_pixel_compute_scale`).
fn scale(input: u64, output: u64, align_corners: bool, factor: Option<f64>) -> f32 {
    if align_corners {
        if output > 1 {
            (input as f32 - 1.0) / (output as f32 - 1.0)
        } else {
            0.0
        }
    } else {
        match factor {
            Some(f) if f > 0.0 => (1.0 / f) as f32,
            _ => input as f32 / output as f32,
        }
    }
}

/// Per output index, the source indices and their weights along one axis.
fn taps(
    mode: Mode,
    input: u64,
    output: u64,
    align: bool,
    factor: Option<f64>,
) -> Vec<Vec<(u64, f32)>> {
    let last = input as i64 - 1;
    (0..output)
        .map(|dst| match mode {
            Mode::Nearest => {
                let s = match factor {
                    Some(f) if f > 0.0 => (1.0 / f) as f32,
                    _ => input as f32 / output as f32,
                };
                let src = ((dst as f32 * s).floor() as i64).min(last);
                vec![(src as u64, 1.0)]
            }
            Mode::NearestExact => vec![(nearest_exact(dst, input, output, factor), 1.0)],
            Mode::Linear => {
                let s = scale(input, output, align, factor);
                let src = if align {
                    s * dst as f32
                } else {
                    (s * (dst as f32 + 0.5) - 0.5).max(0.0)
                };
                let i0 = (src.floor() as i64).min(last);
                let i1 = if i0 < last { i0 + 1 } else { i0 };
                let l1 = src - i0 as f32;
                vec![(i0 as u64, 1.0 - l1), (i1 as u64, l1)]
            }
            Mode::Cubic => {
                let s = scale(input, output, align, factor);
                let src = if align {
                    s * dst as f32
                } else {
                    s * (dst as f32 + 0.5) - 0.5
                };
                let i = src.floor() as i64;
                let t = src - i as f32;
                let w = cubic_weights(t);
                (0..4)
                    .map(|k| ((i - 1 + k as i64).clamp(0, last) as u64, w[k]))
                    .collect()
            }
            Mode::Antialiased { .. } => Vec::new(),
        })
        .collect()
}

/// torch's antialiased resampling weights along one axis
/// (`HelperInterpBase::_compute_indices_min_size_weights_aa`, in its `float` arithmetic):
/// output `i` reads the inputs within `support` of its centre `scale · (i + ½)`, where
/// `support` is the filter's half width (1 linear, 2 cubic) times the scale when
/// downsampling, each weighed by the filter (a triangle, or Keys' cubic with `a = −½`)
/// at its distance over the scale, normalised to sum 1. Per output, the source indices
/// and their weights.
pub fn antialiased_taps(
    input: u64,
    output: u64,
    align_corners: bool,
    factor: Option<f64>,
    cubic: bool,
) -> Vec<Vec<(u64, f32)>> {
    let filter = |x: f32| {
        let x = x.abs();
        if cubic {
            const A: f32 = -0.5;
            if x < 1.0 {
                ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0
            } else if x < 2.0 {
                (((x - 5.0) * x + 8.0) * x - 4.0) * A
            } else {
                0.0
            }
        } else if x < 1.0 {
            1.0 - x
        } else {
            0.0
        }
    };
    let s = scale(input, output, align_corners, factor);
    let half: f32 = if cubic { 2.0 } else { 1.0 };
    let support = if s >= 1.0 { half * s } else { half };
    let widest = (support.ceil() as i64) * 2 + 1;
    let invscale = if s >= 1.0 { 1.0 / s } else { 1.0 };
    (0..output)
        .map(|i| {
            let center = s * (i as f32 + 0.5);
            // `static_cast<int64_t>` truncates toward zero.
            let xmin = ((center - support + 0.5) as i64).max(0);
            let xsize =
                (((center + support + 0.5) as i64).min(input as i64) - xmin).clamp(0, widest);
            let weights: Vec<f32> = (0..xsize)
                .map(|j| filter((j as f32 + xmin as f32 - center + 0.5) * invscale))
                .collect();
            let total: f32 = weights.iter().sum();
            weights
                .into_iter()
                .enumerate()
                .map(|(j, w)| {
                    let w = if total != 0.0 { w / total } else { w };
                    ((xmin + j as i64) as u64, w)
                })
                .collect()
        })
        .collect()
}

/// torch's `nearest_exact_idx`: output `dst` reads input `min(⌊f32((dst + ½) · scale)⌋,
/// in − 1)`, the scale `1 / factor` or `in / out` in `f32`.
pub fn nearest_exact(dst: u64, input: u64, output: u64, factor: Option<f64>) -> u64 {
    let scale = match factor {
        Some(f) if f > 0.0 => (1.0 / f) as f32,
        _ => input as f32 / output as f32,
    };
    let src = (((dst as f64 + 0.5) * f64::from(scale)) as f32).floor() as u64;
    src.min(input - 1)
}

/// Keys' cubic convolution weights for the four taps around `t ∈ [0, 1)`, `A = −0.75`.
fn cubic_weights(t: f32) -> [f32; 4] {
    const A: f32 = -0.75;
    let near = |x: f32| ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    let far = |x: f32| ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]
}

/// `x` resampled along axis `at` to `output`.
fn along(
    x: &Tensor,
    at: usize,
    output: u64,
    weights: &[Vec<(u64, f32)>],
) -> Result<Tensor, String> {
    let outer: u64 = x.dims()[..at].iter().product();
    let inner: u64 = x.dims()[at + 1..].iter().product();
    let n = x.dims()[at];
    let mut dims = x.dims().to_vec();
    dims[at] = output;
    element_count(&dims)?;
    let v = x.to_f32();
    let mut y = Vec::with_capacity(dims.iter().product::<u64>() as usize);
    for o in 0..outer {
        for taps in weights {
            for q in 0..inner {
                y.push(
                    taps.iter()
                        .map(|&(i, w)| v[((o * n + i) * inner + q) as usize] * w)
                        .sum(),
                );
            }
        }
    }
    Tensor::f32(dims, y)
}

/// An `upsample_*` node over the last `n_sp` axes.
fn upsample(op: &str, a: &Args<'_>, n_sp: usize, mode: Mode) -> Result<Tensor, String> {
    let vec = op.ends_with(".vec");
    let x = a.tensor(if vec { "input" } else { "self" })?;
    if x.rank() < n_sp + 2 {
        return Err(format!("a {n_sp}-d resampling of {:?}", x.dims()));
    }
    let spatial = &x.dims()[x.rank() - n_sp..];
    let given_size = match a.node_arg("output_size") {
        None | Some(Argument::None) => None,
        Some(_) => Some(a.ints("output_size")?),
    };
    let factors: Vec<Option<f64>> = if vec {
        match a.node_arg("scale_factors") {
            None | Some(Argument::None) => vec![None; n_sp],
            Some(Argument::Floats(f)) if f.len() == n_sp => f.iter().map(|&v| Some(v)).collect(),
            got => return Err(Args::wrong("scale_factors", "one float per axis", got)),
        }
    } else {
        let names: &[&str] = match n_sp {
            1 => &["scales"],
            2 => &["scales_h", "scales_w"],
            _ => &["scales_d", "scales_h", "scales_w"],
        };
        names
            .iter()
            .map(|n| a.optional_number(n))
            .collect::<Result<_, _>>()?
    };
    let sizes: Vec<u64> = match given_size {
        Some(s) if s.len() == n_sp => s
            .iter()
            .map(|&v| u64::try_from(v).map_err(|_| format!("an output size {v}")))
            .collect::<Result<_, _>>()?,
        Some(s) => return Err(format!("an output size {s:?} for {n_sp} axes")),
        None => spatial
            .iter()
            .zip(&factors)
            .map(|(&i, f)| {
                f.map(|f| (i as f64 * f).floor() as u64)
                    .ok_or_else(|| "a resampling with neither size nor scale".to_owned())
            })
            .collect::<Result<_, _>>()?,
    };
    // The `.vec` overloads use the factors for the coordinates only when no size is given.
    let align = matches!(mode, Mode::Linear | Mode::Cubic | Mode::Antialiased { .. })
        && a.bool_or("align_corners", false)?;
    let mut y = x.clone();
    for i in 0..n_sp {
        let at = x.rank() - n_sp + i;
        if sizes[i] == 0 || spatial[i] == 0 {
            return Err("a resampling to or from size 0".into());
        }
        let weights = match mode {
            Mode::Antialiased { cubic } => {
                antialiased_taps(spatial[i], sizes[i], align, factors[i], cubic)
            }
            _ => taps(mode, spatial[i], sizes[i], align, factors[i]),
        };
        y = along(&y, at, sizes[i], &weights)?;
    }
    Ok(y)
}

/// `grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners)` and
/// `grid_sampler_3d` ([`crate::grid_sample`]), and `grid_sampler`, which torch
/// computes as one of them by the input's rank.
fn grid_sampler(a: &Args<'_>) -> Result<Tensor, String> {
    let x = a.tensor("input")?;
    let grid = a.tensor("grid")?;
    let s = Settings::new(
        a.int("interpolation_mode")?,
        a.int("padding_mode")?,
        a.bool("align_corners")?,
    )?;
    let (xd, gd) = (x.dims(), grid.dims());
    let rank = xd.len().saturating_sub(2);
    let fits = (2..=3).contains(&rank)
        && gd.len() == xd.len()
        && gd[0] == xd[0]
        && gd[gd.len() - 1] == rank as u64;
    if !fits || xd[2..].iter().product::<u64>() > MAX_PIXELS {
        return Err(format!(
            "grid_sampler of an input {xd:?} by a grid {gd:?}: a 4-D or 5-D input [N, C, spatial…] by a grid [N, out…, 2 or 3] of the same batch, of at most 2^24 pixels, is evaluated"
        ));
    }
    let (n, c) = (xd[0], xd[1]);
    let mut dims = vec![n, c];
    dims.extend(&gd[1..gd.len() - 1]);
    element_count(&dims)?;
    let (image, points) = (x.to_f32(), grid.to_f32());
    let per_image = (c * xd[2..].iter().product::<u64>()) as usize;
    let per_grid = gd[1..].iter().product::<u64>() as usize;
    let mut y = Vec::with_capacity(dims.iter().product::<u64>() as usize);
    for i in 0..n as usize {
        y.extend(
            sample(
                &image[i * per_image..(i + 1) * per_image],
                c,
                &xd[2..],
                &points[i * per_grid..(i + 1) * per_grid],
                s,
            )
            .ok_or(
                "grid_sampler: bicubic interpolation of a 5-D input, which torch does not compute",
            )?,
        );
    }
    Tensor::f32(dims, y)
}

/// The ops of this file, or `None` for another op.
pub(super) fn evaluate(op: &str, a: &Args<'_>) -> Option<Result<Vec<Tensor>, String>> {
    let (n_sp, mode) = match op {
        "grid_sampler_2d.default" | "grid_sampler_3d.default" | "grid_sampler.default" => {
            return Some(grid_sampler(a).map(|t| vec![t]))
        }
        "upsample_nearest1d.vec" | "upsample_nearest1d.default" => (1, Mode::Nearest),
        "upsample_nearest2d.vec" | "upsample_nearest2d.default" => (2, Mode::Nearest),
        "upsample_nearest3d.vec" | "upsample_nearest3d.default" => (3, Mode::Nearest),
        "_upsample_nearest_exact1d.vec" | "_upsample_nearest_exact1d.default" => {
            (1, Mode::NearestExact)
        }
        "_upsample_nearest_exact2d.vec" | "_upsample_nearest_exact2d.default" => {
            (2, Mode::NearestExact)
        }
        "_upsample_nearest_exact3d.vec" | "_upsample_nearest_exact3d.default" => {
            (3, Mode::NearestExact)
        }
        "upsample_linear1d.vec" | "upsample_linear1d.default" => (1, Mode::Linear),
        "upsample_bilinear2d.vec" | "upsample_bilinear2d.default" => (2, Mode::Linear),
        "upsample_trilinear3d.vec" | "upsample_trilinear3d.default" => (3, Mode::Linear),
        "upsample_bicubic2d.vec" | "upsample_bicubic2d.default" => (2, Mode::Cubic),
        "_upsample_bilinear2d_aa.vec" | "_upsample_bilinear2d_aa.default" => {
            (2, Mode::Antialiased { cubic: false })
        }
        "_upsample_bicubic2d_aa.vec" | "_upsample_bicubic2d_aa.default" => {
            (2, Mode::Antialiased { cubic: true })
        }
        _ => return None,
    };
    Some(upsample(op, a, n_sp, mode).map(|t| vec![t]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cubic_weights_sum_to_one_and_interpolate() {
        for t in [0.0f32, 0.25, 0.5, 0.9] {
            let w = cubic_weights(t);
            assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        }
        assert_eq!(cubic_weights(0.0), [0.0, 1.0, 0.0, 0.0]);
    }

    #[test]
    fn nearest_and_linear_taps_follow_torch() {
        let nearest = taps(Mode::Nearest, 2, 4, false, None);
        let picks: Vec<u64> = nearest.iter().map(|t| t[0].0).collect();
        assert_eq!(picks, [0, 0, 1, 1]);
        let linear = taps(Mode::Linear, 2, 4, true, None);
        let (first, second) = (linear[1][0], linear[1][1]);
        assert_eq!((first.0, second.0), (0, 1));
        assert!((first.1 - 2.0 / 3.0).abs() < 1e-6 && (second.1 - 1.0 / 3.0).abs() < 1e-6);
    }

    /// torch 2.13: `interpolate(arange(4.), size=2, mode="bilinear", antialias=True)`
    /// along one axis is [5/7, 16/7]: a triangle of half width 2 around 1 and 3, cut at
    /// the edges and normalised.
    #[test]
    fn antialiased_taps_widen_with_the_scale() {
        let taps = antialiased_taps(4, 2, false, None, false);
        let at = |t: &[(u64, f32)]| t.iter().map(|&(i, w)| i as f32 * w).sum::<f32>();
        assert!((at(&taps[0]) - 5.0 / 7.0).abs() < 1e-6, "{taps:?}");
        assert!((at(&taps[1]) - 16.0 / 7.0).abs() < 1e-6, "{taps:?}");
        // The same size: each output reads its own input alone.
        let same = antialiased_taps(3, 3, false, None, true);
        assert!(same.iter().enumerate().all(|(i, t)| t
            .iter()
            .all(|&(j, w)| w == if i as u64 == j { 1.0 } else { 0.0 })));
    }

    #[test]
    fn nearest_exact_reads_the_sample_under_each_centre() {
        // torch: interpolate(arange(4), size=3, mode="nearest-exact") is [0, 2, 3]; plain
        // nearest gives [0, 1, 2].
        let picks: Vec<u64> = (0..3).map(|d| nearest_exact(d, 4, 3, None)).collect();
        assert_eq!(picks, [0, 2, 3]);
        // scale_factor=0.6 on 4: two outputs at ⌊0.5/0.6⌋ and ⌊1.5/0.6⌋.
        let picks: Vec<u64> = (0..2).map(|d| nearest_exact(d, 4, 2, Some(0.6))).collect();
        assert_eq!(picks, [0, 2]);
    }
}
