//! `grid_sampler_2d` (`F.grid_sample` of a 4-D input) as torch's CPU kernel computes it in
//! float32: the vectorized kernel of `aten/src/ATen/native/cpu/GridSamplerKernel.cpp`
//! (`ComputeLocationBase`, `ComputeLocation`, `ApplyGridSample`), which every float32
//! input whose gather offsets fit 32 bits runs. Each output position `(h, w)` of a sample
//! reads that sample's image at the coordinates `grid[h, w] = (x, y)` in `[-1, 1]`:
//!
//! - unnormalized to pixels: `(g + 1)·(size − 1)/2` with corners aligned, else
//!   `(g + 1)·size/2 − ½`;
//! - padded: border clips to `[0, size − 1]` (a NaN to 0), reflection reflects about the
//!   edges (the corner pixels' centres when aligned, their outer edges otherwise) and clips;
//! - interpolated: bilinear over the four neighbours (`floor`), nearest at `round`
//!   (half to even, `_mm256_round_ps`), bicubic over sixteen (cubic convolution with
//!   `A = −0.75`, each tap's coordinate padded on its own);
//! - a tap outside the image (zeros padding) reads 0, its value, not its weight, zeroed.
//!
//! The evaluator computes it here ([`sample`]); the lowering writes the same steps as ONNX
//! nodes, in the same order of float32 operations.

/// How the value between pixels is made (`interpolation_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interpolation {
    Bilinear,
    Nearest,
    Bicubic,
}

/// What a coordinate outside the image reads (`padding_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Padding {
    Zeros,
    Border,
    Reflection,
}

/// A node's sampling settings, read once for the evaluator and the lowering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    pub interpolation: Interpolation,
    pub padding: Padding,
    pub align_corners: bool,
}

impl Settings {
    /// torch's enum values (`GridSamplerInterpolation`, `GridSamplerPadding`).
    pub fn new(interpolation: i64, padding: i64, align_corners: bool) -> Result<Settings, String> {
        let interpolation = match interpolation {
            0 => Interpolation::Bilinear,
            1 => Interpolation::Nearest,
            2 => Interpolation::Bicubic,
            m => {
                return Err(format!(
                "grid_sampler interpolation_mode {m} (torch has 0 bilinear, 1 nearest, 2 bicubic)"
            ))
            }
        };
        let padding = match padding {
            0 => Padding::Zeros,
            1 => Padding::Border,
            2 => Padding::Reflection,
            m => {
                return Err(format!(
                    "grid_sampler padding_mode {m} (torch has 0 zeros, 1 border, 2 reflection)"
                ))
            }
        };
        Ok(Settings {
            interpolation,
            padding,
            align_corners,
        })
    }
}

/// The largest image (`H·W`) sampled: pixel offsets are computed in float32, exact up to
/// 2^24.
pub const MAX_PIXELS: u64 = 1 << 24;

/// One spatial axis of `size` pixels: torch's `ComputeLocationBase` constants.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Axis {
    pub size: u64,
    pub align_corners: bool,
}

impl Axis {
    /// The unnormalizing scale: `(size − 1)/2` aligned, `size/2` otherwise.
    pub fn scaling_factor(self) -> f32 {
        if self.align_corners {
            (self.size as f32 - 1.0) / 2.0
        } else {
            self.size as f32 / 2.0
        }
    }

    /// The largest coordinate clipped to, `size − 1`.
    pub fn max_val(self) -> f32 {
        self.size as f32 - 1.0
    }

    /// The lower reflection edge: 0 aligned, −½ otherwise.
    pub fn low(self) -> f32 {
        if self.align_corners {
            0.0
        } else {
            -0.5
        }
    }

    /// Twice the reflection span: `2·(size − 1)` aligned, `2·size` otherwise.
    pub fn twice_span(self) -> f32 {
        if self.align_corners {
            (self.size as f32 - 1.0) * 2.0
        } else {
            self.size as f32 * 2.0
        }
    }

    /// Whether reflection maps every coordinate to 0 (aligned corners on one pixel).
    pub fn empty(self) -> bool {
        self.align_corners && self.size <= 1
    }

    /// `unnormalize`: `(g + 1)·s`, and `− ½` without aligned corners.
    pub fn unnormalize(self, g: f32) -> f32 {
        let x = (g + 1.0) * self.scaling_factor();
        if self.align_corners {
            x
        } else {
            x - 0.5
        }
    }

    /// `clip_coordinates`: `min(max(x, 0), size − 1)` as `_mm256_max_ps(x, 0)` takes it,
    /// so a NaN becomes 0.
    pub fn clip(self, x: f32) -> f32 {
        let low = if x > 0.0 { x } else { 0.0 };
        if low < self.max_val() {
            low
        } else {
            self.max_val()
        }
    }

    /// `reflect_coordinates`: `|x − low|` folded into `[0, span]` by the whole double
    /// flips it holds, then `low` added back.
    pub fn reflect(self, x: f32) -> f32 {
        if self.empty() {
            return 0.0;
        }
        let twice = self.twice_span();
        let low = self.low();
        let abs = (x - low).abs();
        let flips = (abs / twice).trunc();
        let extra = abs - flips * twice;
        let back = twice - extra;
        let folded = if extra.is_nan() || back.is_nan() {
            f32::NAN
        } else {
            extra.min(back)
        };
        folded + low
    }

    /// `compute_coordinates`: the padding applied to a pixel coordinate.
    pub fn padded(self, x: f32, padding: Padding) -> f32 {
        match padding {
            Padding::Zeros => x,
            Padding::Border => self.clip(x),
            Padding::Reflection => self.clip(self.reflect(x)),
        }
    }

    /// Whether integer coordinate `i` (a float) is a pixel of this axis: torch compares
    /// the truncated int32, which for a whole number agrees with `−1 < i < size`.
    pub fn holds(self, i: f32) -> bool {
        i > -1.0 && i < self.size as f32
    }
}

/// The cubic convolution coefficients of the four taps around fraction `t`
/// (`get_cubic_coefficients`, `A = −0.75`), in torch's order of operations.
pub fn cubic_coefficients(t: f32) -> [f32; 4] {
    const A: f32 = -0.75;
    let far = |x: f32| ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A;
    let near = |x: f32| ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0;
    [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]
}

/// One sample's output `[C, Ho, Wo]` from its image `image` (`[C, H, W]`, row-major) and
/// grid `grid` (`[Ho, Wo, 2]`).
pub fn sample(
    image: &[f32],
    [c, h, w]: [u64; 3],
    grid: &[f32],
    positions: u64,
    s: Settings,
) -> Vec<f32> {
    let (ax, ay) = (
        Axis {
            size: w,
            align_corners: s.align_corners,
        },
        Axis {
            size: h,
            align_corners: s.align_corners,
        },
    );
    let read = |ch: u64, x: f32, y: f32| -> f32 {
        // `x`, `y` whole numbers: masked taps read 0.
        if ax.holds(x) && ay.holds(y) {
            image[(ch * h * w + y as u64 * w + x as u64) as usize]
        } else {
            0.0
        }
    };
    let mut out = vec![0f32; (c * positions) as usize];
    for p in 0..positions {
        let (gx, gy) = (grid[(2 * p) as usize], grid[(2 * p + 1) as usize]);
        for ch in 0..c {
            let value = match s.interpolation {
                Interpolation::Bilinear => {
                    let x = ax.padded(ax.unnormalize(gx), s.padding);
                    let y = ay.padded(ay.unnormalize(gy), s.padding);
                    let (x_w, y_n) = (x.floor(), y.floor());
                    let (we, no) = (x - x_w, y - y_n);
                    let (e, so) = (1.0 - we, 1.0 - no);
                    let (nw, ne, sw, se) = (so * e, so * we, no * e, no * we);
                    read(ch, x_w, y_n) * nw
                        + read(ch, x_w + 1.0, y_n) * ne
                        + read(ch, x_w, y_n + 1.0) * sw
                        + read(ch, x_w + 1.0, y_n + 1.0) * se
                }
                Interpolation::Nearest => {
                    let x = ax.padded(ax.unnormalize(gx), s.padding).round_ties_even();
                    let y = ay.padded(ay.unnormalize(gy), s.padding).round_ties_even();
                    read(ch, x, y)
                }
                Interpolation::Bicubic => {
                    let (x, y) = (ax.unnormalize(gx), ay.unnormalize(gy));
                    let (ix, iy) = (x.floor(), y.floor());
                    let (cx, cy) = (cubic_coefficients(x - ix), cubic_coefficients(y - iy));
                    let tap = |dx: f32, dy: f32| {
                        let tx = ax.padded(ix + dx, s.padding).trunc();
                        let ty = ay.padded(iy + dy, s.padding).trunc();
                        read(ch, tx, ty)
                    };
                    let rows: Vec<f32> = (0..4)
                        .map(|i| {
                            let dy = i as f32 - 1.0;
                            cx[0] * tap(-1.0, dy)
                                + cx[1] * tap(0.0, dy)
                                + cx[2] * tap(1.0, dy)
                                + cx[3] * tap(2.0, dy)
                        })
                        .collect();
                    cy[0] * rows[0] + cy[1] * rows[1] + cy[2] * rows[2] + cy[3] * rows[3]
                }
            };
            out[(ch * positions + p) as usize] = value;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(i: i64, p: i64, align: bool) -> Settings {
        Settings::new(i, p, align).unwrap()
    }

    #[test]
    fn coordinates_unnormalize_and_pad_as_torch() {
        let aligned = Axis {
            size: 5,
            align_corners: true,
        };
        assert_eq!(aligned.unnormalize(-1.0), 0.0);
        assert_eq!(aligned.unnormalize(1.0), 4.0);
        let half = Axis {
            size: 4,
            align_corners: false,
        };
        assert_eq!(half.unnormalize(-1.0), -0.5);
        assert_eq!(half.unnormalize(1.0), 3.5);
        // Reflection about the outer edges −½ and 3.5, then clipped.
        assert_eq!(half.padded(-1.0, Padding::Reflection), 0.0);
        assert_eq!(half.padded(4.5, Padding::Reflection), 2.5);
        assert_eq!(half.padded(9.0, Padding::Reflection), 1.0);
        assert_eq!(aligned.padded(-3.0, Padding::Reflection), 3.0);
        assert_eq!(aligned.padded(f32::NAN, Padding::Border), 0.0);
        assert_eq!(aligned.padded(f32::INFINITY, Padding::Reflection), 0.0);
        let one = Axis {
            size: 1,
            align_corners: true,
        };
        assert_eq!(one.padded(7.0, Padding::Reflection), 0.0);
    }

    #[test]
    fn bilinear_zeros_reads_zero_outside_and_blends_inside() {
        // A 1×2 image [1, 3], corners aligned: x = 0 is the middle of the two pixels.
        let image = [1.0, 3.0];
        let grid = [0.0, 0.0, 3.0, 0.0];
        let out = sample(&image, [1, 1, 2], &grid, 2, settings(0, 0, true));
        assert_eq!(out, [2.0, 0.0]);
        let border = sample(&image, [1, 1, 2], &grid, 2, settings(0, 1, true));
        assert_eq!(border, [2.0, 3.0]);
    }

    #[test]
    fn nearest_rounds_half_to_even() {
        // Four pixels, aligned: g = −1/3 is x = 1, g = 0 is x = 1.5, which rounds to 2.
        let image = [10.0, 11.0, 12.0, 13.0];
        let grid = [0.0, 0.0];
        let out = sample(&image, [1, 1, 4], &grid, 1, settings(1, 0, true));
        assert_eq!(out, [12.0]);
    }

    #[test]
    fn bicubic_coefficients_sum_to_one() {
        for t in [0.0f32, 0.3, 0.5, 0.99] {
            let sum: f32 = cubic_coefficients(t).iter().sum();
            assert!((sum - 1.0).abs() < 1e-6);
        }
        // On a pixel centre bicubic reads the pixel.
        let image = [1.0, 2.0, 4.0, 8.0];
        let out = sample(&image, [1, 2, 2], &[-1.0, -1.0], 1, settings(2, 1, true));
        assert_eq!(out, [1.0]);
    }

    #[test]
    fn unknown_modes_are_refused() {
        assert!(Settings::new(3, 0, false).is_err());
        assert!(Settings::new(0, 3, false).is_err());
    }
}
