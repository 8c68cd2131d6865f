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
//!
//! `grid_sampler_3d` (`F.grid_sample` of a 5-D input) runs torch's scalar CPU kernel
//! (`grid_sampler_3d_cpu_impl` in `GridSampler.cpp`, the coordinates of `GridSampler.h`):
//! unnormalized as `((g + 1)/2)·(size − 1)` aligned, else `((g + 1)·size − 1)/2`; clipped
//! by `std::min`/`std::max` (a NaN becomes `size − 1`); reflected by `fmod` and the parity
//! of the whole flips; a coordinate that is not finite or beyond int32 made −100 (outside);
//! trilinear over the eight neighbours, each weight the product of its three distances to
//! the opposite corner, a tap outside the image skipped; nearest at `nearbyint` (half to
//! even). Bicubic has no 3-D kernel in torch.
//!
//! Where the grid is a constant, each position's reads are [`Tap`]s computed at export
//! ([`taps`]): the pixel each reads, or none, and its weight; the lowering then gathers
//! the pixels and sums their weighted values.

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

/// One read of a sampled position: the pixel's flat offset in the image's spatial map
/// (`None`: outside it, reading 0), and the weight its value is multiplied by.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tap {
    pub offset: Option<u64>,
    pub weight: f32,
}

/// The taps of grid point `point` (`(x, y)` or `(x, y, z)`) in an image of spatial sizes
/// `sizes` (`[H, W]` or `[D, H, W]`), in the order torch sums them: the 2-D kernel's
/// ([`taps_2d`]) or the 3-D one's ([`taps_3d`]). `None` for another rank or a bicubic
/// 3-D sampling, which torch does not compute.
pub fn taps(point: &[f32], sizes: &[u64], s: Settings) -> Option<Vec<Tap>> {
    match (point, sizes) {
        (&[x, y], &[h, w]) => Some(taps_2d(x, y, [h, w], s)),
        (&[x, y, z], &[d, h, w]) if s.interpolation != Interpolation::Bicubic => {
            Some(taps_3d([x, y, z], [d, h, w], s))
        }
        _ => None,
    }
}

/// The 2-D kernel's taps of grid point `(gx, gy)` in an image `[h, w]`: bilinear's four
/// (`nw, ne, sw, se`), nearest's one (weight 1), bicubic's sixteen row by row, each
/// weighted by its column's coefficient times its row's (torch weighs each row's sum by
/// the row's coefficient: the same terms, rounded once more).
pub fn taps_2d(gx: f32, gy: f32, [h, w]: [u64; 2], s: Settings) -> Vec<Tap> {
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
    let tap = |x: f32, y: f32, weight: f32| Tap {
        // `x`, `y` whole numbers: masked taps read 0.
        offset: (ax.holds(x) && ay.holds(y)).then(|| y as u64 * w + x as u64),
        weight,
    };
    match s.interpolation {
        Interpolation::Bilinear => {
            let x = ax.padded(ax.unnormalize(gx), s.padding);
            let y = ay.padded(ay.unnormalize(gy), s.padding);
            let (x_w, y_n) = (x.floor(), y.floor());
            let (we, no) = (x - x_w, y - y_n);
            let (e, so) = (1.0 - we, 1.0 - no);
            vec![
                tap(x_w, y_n, so * e),
                tap(x_w + 1.0, y_n, so * we),
                tap(x_w, y_n + 1.0, no * e),
                tap(x_w + 1.0, y_n + 1.0, no * we),
            ]
        }
        Interpolation::Nearest => {
            let x = ax.padded(ax.unnormalize(gx), s.padding).round_ties_even();
            let y = ay.padded(ay.unnormalize(gy), s.padding).round_ties_even();
            vec![tap(x, y, 1.0)]
        }
        Interpolation::Bicubic => {
            let (x, y) = (ax.unnormalize(gx), ay.unnormalize(gy));
            let (ix, iy) = (x.floor(), y.floor());
            let (cx, cy) = (cubic_coefficients(x - ix), cubic_coefficients(y - iy));
            let mut taps = Vec::with_capacity(16);
            for (j, &ry) in cy.iter().enumerate() {
                let ty = ay.padded(iy + j as f32 - 1.0, s.padding).trunc();
                for (i, &rx) in cx.iter().enumerate() {
                    let tx = ax.padded(ix + i as f32 - 1.0, s.padding).trunc();
                    taps.push(tap(tx, ty, rx * ry));
                }
            }
            taps
        }
    }
}

/// torch's scalar `grid_sampler_compute_source_index`: grid coordinate `g` of an axis of
/// `size` pixels unnormalized, padded and kept within int32 (−100 otherwise).
fn source_index(g: f32, size: u64, s: Settings) -> f32 {
    let n = size as f32;
    let x = if s.align_corners {
        ((g + 1.0) / 2.0) * (n - 1.0)
    } else {
        ((g + 1.0) * n - 1.0) / 2.0
    };
    // `std::min(size − 1, std::max(x, 0))`: a NaN passes the max and loses the min.
    let clip = |x: f32| {
        let low = if x < 0.0 { 0.0 } else { x };
        if low < n - 1.0 {
            low
        } else {
            n - 1.0
        }
    };
    let x = match s.padding {
        Padding::Zeros => x,
        Padding::Border => clip(x),
        Padding::Reflection => {
            let (twice_low, twice_high) = if s.align_corners {
                (0, 2 * (size as i64 - 1))
            } else {
                (-1, 2 * size as i64 - 1)
            };
            clip(reflect(x, twice_low, twice_high))
        }
    };
    // `safe_downgrade_to_int_range`.
    if (-2_147_483_648.0..=2_147_483_646.0).contains(&x) {
        x
    } else {
        -100.0
    }
}

/// torch's scalar `reflect_coordinates` between `twice_low/2` and `twice_high/2`: by
/// `fmod` and the parity of the whole flips (`static_cast<int>` of their floor, which on
/// x86 is `INT_MIN`, even, where it does not fit).
fn reflect(x: f32, twice_low: i64, twice_high: i64) -> f32 {
    if twice_low == twice_high {
        return 0.0;
    }
    let min = twice_low as f32 / 2.0;
    let span = (twice_high - twice_low) as f32 / 2.0;
    let x = (x - min).abs();
    let extra = x % span;
    let floor = (x / span).floor();
    let flips = if (-2_147_483_648.0..2_147_483_648.0).contains(&floor) {
        floor as i32
    } else {
        i32::MIN
    };
    if flips % 2 == 0 {
        extra + min
    } else {
        span - extra + min
    }
}

/// The 3-D kernel's taps of grid point `(x, y, z)` in an image `[d, h, w]`: trilinear's
/// eight (`tnw, tne, tsw, tse, bnw, bne, bsw, bse`), nearest's one (weight 1).
pub fn taps_3d([gx, gy, gz]: [f32; 3], [d, h, w]: [u64; 3], s: Settings) -> Vec<Tap> {
    let (ix, iy, iz) = (
        source_index(gx, w, s),
        source_index(gy, h, s),
        source_index(gz, d, s),
    );
    let tap = |x: f32, y: f32, z: f32, weight: f32| {
        let (x, y, z) = (x as i64, y as i64, z as i64);
        let inside =
            (0..w as i64).contains(&x) && (0..h as i64).contains(&y) && (0..d as i64).contains(&z);
        Tap {
            offset: inside.then(|| (z as u64 * h + y as u64) * w + x as u64),
            weight,
        }
    };
    match s.interpolation {
        Interpolation::Nearest => vec![tap(
            ix.round_ties_even(),
            iy.round_ties_even(),
            iz.round_ties_even(),
            1.0,
        )],
        _ => {
            let (x0, y0, z0) = (ix.floor(), iy.floor(), iz.floor());
            let (x1, y1, z1) = (x0 + 1.0, y0 + 1.0, z0 + 1.0);
            vec![
                tap(x0, y0, z0, (x1 - ix) * (y1 - iy) * (z1 - iz)),
                tap(x1, y0, z0, (ix - x0) * (y1 - iy) * (z1 - iz)),
                tap(x0, y1, z0, (x1 - ix) * (iy - y0) * (z1 - iz)),
                tap(x1, y1, z0, (ix - x0) * (iy - y0) * (z1 - iz)),
                tap(x0, y0, z1, (x1 - ix) * (y1 - iy) * (iz - z0)),
                tap(x1, y0, z1, (ix - x0) * (y1 - iy) * (iz - z0)),
                tap(x0, y1, z1, (x1 - ix) * (iy - y0) * (iz - z0)),
                tap(x1, y1, z1, (ix - x0) * (iy - y0) * (iz - z0)),
            ]
        }
    }
}

/// One sample's output `[C, P]` from its image `image` (`[C, spatial…]`, row-major, of
/// spatial `sizes`) and grid `grid` (`[P, rank]`), as torch's 2-D kernel (`rank` 2) or
/// 3-D kernel (`rank` 3) computes it. `None` where [`taps`] is.
pub fn sample(
    image: &[f32],
    channels: u64,
    sizes: &[u64],
    grid: &[f32],
    s: Settings,
) -> Option<Vec<f32>> {
    let rank = sizes.len();
    let plane: u64 = sizes.iter().product();
    let positions = grid.len() / rank.max(1);
    let mut out = vec![0f32; channels as usize * positions];
    for (p, point) in grid.chunks(rank).enumerate() {
        if rank == 2 && s.interpolation == Interpolation::Bicubic {
            let [h, w] = [sizes[0], sizes[1]];
            for ch in 0..channels {
                let at = &image[(ch * plane) as usize..((ch + 1) * plane) as usize];
                out[ch as usize * positions + p] = bicubic_2d(at, [h, w], point, s);
            }
            continue;
        }
        let taps = taps(point, sizes, s)?;
        for ch in 0..channels {
            let at = &image[(ch * plane) as usize..((ch + 1) * plane) as usize];
            let read = |t: &Tap| t.offset.map_or(0.0, |o| at[o as usize]);
            out[ch as usize * positions + p] = if rank == 2 {
                // The 2-D kernel reads 0 outside and sums every product, from the first.
                let mut sum = read(&taps[0]) * taps[0].weight;
                for t in &taps[1..] {
                    sum += read(t) * t.weight;
                }
                sum
            } else if s.interpolation == Interpolation::Nearest {
                read(&taps[0])
            } else {
                // The 3-D kernel adds the taps inside to 0, skipping the others.
                taps.iter()
                    .filter(|t| t.offset.is_some())
                    .fold(0.0, |sum, t| sum + read(t) * t.weight)
            };
        }
    }
    Some(out)
}

/// The 2-D kernel's bicubic value at `point` of one channel `image` `[h, w]`: each row's
/// four taps weighted by the column coefficients, then the rows by the row coefficients.
fn bicubic_2d(image: &[f32], [h, w]: [u64; 2], point: &[f32], s: Settings) -> f32 {
    let taps = taps_2d(point[0], point[1], [h, w], s);
    let (ay, ax) = (
        Axis {
            size: h,
            align_corners: s.align_corners,
        },
        Axis {
            size: w,
            align_corners: s.align_corners,
        },
    );
    let (x, y) = (ax.unnormalize(point[0]), ay.unnormalize(point[1]));
    let (cx, cy) = (
        cubic_coefficients(x - x.floor()),
        cubic_coefficients(y - y.floor()),
    );
    let read = |t: &Tap| t.offset.map_or(0.0, |o| image[o as usize]);
    let rows: Vec<f32> = taps
        .chunks(4)
        .map(|row| {
            cx[0] * read(&row[0])
                + cx[1] * read(&row[1])
                + cx[2] * read(&row[2])
                + cx[3] * read(&row[3])
        })
        .collect();
    cy[0] * rows[0] + cy[1] * rows[1] + cy[2] * rows[2] + cy[3] * rows[3]
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
        let out = sample(&image, 1, &[1, 2], &grid, settings(0, 0, true)).unwrap();
        assert_eq!(out, [2.0, 0.0]);
        let border = sample(&image, 1, &[1, 2], &grid, settings(0, 1, true)).unwrap();
        assert_eq!(border, [2.0, 3.0]);
    }

    #[test]
    fn nearest_rounds_half_to_even() {
        // Four pixels, aligned: g = −1/3 is x = 1, g = 0 is x = 1.5, which rounds to 2.
        let image = [10.0, 11.0, 12.0, 13.0];
        let grid = [0.0, 0.0];
        let out = sample(&image, 1, &[1, 4], &grid, settings(1, 0, true)).unwrap();
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
        let out = sample(&image, 1, &[2, 2], &[-1.0, -1.0], settings(2, 1, true)).unwrap();
        assert_eq!(out, [1.0]);
    }

    #[test]
    fn trilinear_skips_taps_outside_and_weighs_by_the_opposite_corner() {
        // A 2×1×2 image, aligned: the centre of the four pixels averages them.
        let image = [1.0, 3.0, 5.0, 7.0];
        let out = sample(
            &image,
            1,
            &[2, 1, 2],
            &[0.0, 0.0, 0.0],
            settings(0, 0, true),
        )
        .unwrap();
        assert_eq!(out, [4.0]);
        // Beyond the right edge: the taps inside alone, the others skipped.
        let out = sample(
            &image,
            1,
            &[2, 1, 2],
            &[3.0, 0.0, -1.0],
            settings(0, 0, true),
        )
        .unwrap();
        assert_eq!(out, [0.0]);
        let out = sample(
            &image,
            1,
            &[2, 1, 2],
            &[3.0, 0.0, -1.0],
            settings(0, 1, true),
        )
        .unwrap();
        assert_eq!(out, [3.0]);
    }

    #[test]
    fn scalar_coordinates_follow_torchs_scalar_kernel() {
        let s = settings(0, 1, false);
        // A NaN passes std::max and loses std::min: the last pixel.
        assert_eq!(source_index(f32::NAN, 4, s), 3.0);
        // Zeros padding keeps the coordinate; an infinity leaves the image (−100).
        assert_eq!(
            source_index(f32::INFINITY, 4, settings(0, 0, false)),
            -100.0
        );
        // Reflection about the outer edges −½ and 3.5 (odd flips count from the far edge).
        assert_eq!(reflect(4.5, -1, 7), 2.5);
        assert_eq!(reflect(-1.0, -1, 7), 0.0);
        assert_eq!(reflect(9.0, -1, 7), 1.0);
        // Nearest in 3-D rounds half to even, one tap of weight 1.
        let nearest = taps_3d([0.0, 0.0, 0.0], [1, 1, 4], settings(1, 0, true));
        assert_eq!(
            nearest,
            [Tap {
                offset: Some(2),
                weight: 1.0
            }]
        );
        assert!(taps(&[0.0, 0.0, 0.0], &[1, 1, 4], settings(2, 0, true)).is_none());
    }

    #[test]
    fn unknown_modes_are_refused() {
        assert!(Settings::new(3, 0, false).is_err());
        assert!(Settings::new(0, 3, false).is_err());
    }
}
