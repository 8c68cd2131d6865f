//! `grid_sampler_2d`, `grid_sampler_3d` (and `grid_sampler`, which torch computes as one of
//! them by the input's rank) in opset 11, whose ONNX `GridSample` exists only from opset 16.
//!
//! By a constant grid (a buffer: the positions are known at export) in a static program,
//! every position's taps and weights are computed at export
//! ([`ckpt_aten::grid_sample::taps`], torch's 2-D or 3-D kernel) and the sampling is a
//! plan of gathers: per tap, the pixels read by GatherElements (ATC takes Gather from
//! constant tables only) within all samples' spatial maps laid end to end (`[C, N·S]`: the
//! grid holds one grid per sample), 0 where the tap is outside (`Where` by a constant
//! mask), times its weight, summed. The pixel offsets are float32 constants broadcast over
//! the channels and cast, so the maps hold at most 2^24 pixels together. With a dynamic
//! batch a constant grid is refused: GatherElements would need an index per sample.
//!
//! By a grid the graph computes, 2-D only: the steps of
//! [`ckpt_aten::grid_sample`] (torch's vectorized CPU kernel) written as element-wise
//! float32 nodes over each sample's `Ho·Wo` grid positions, and each tap read by
//! `GatherElements` along the sample's own flattened image `[C, H·W]`, so no sample reads
//! another's. A tap outside the image (zeros padding) reads index 0 and is then replaced by
//! 0 (`Where`), as torch's masked gather reads 0; the pixel offset `y·W + x` is computed
//! in float32, exact for images of at most 2^24 pixels, and cast to int64.

use crate::elem::ElemType;
use crate::graph::{Attr, GraphBuilder, Value, Weight};
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::grid_sample::{self, Axis, Interpolation, Padding, Settings, MAX_PIXELS};
use ckpt_aten::program::Node;

use super::super::emit;
use super::super::lower::Lowering;
use super::super::tensor::{self, Placement};
use super::{arg_error, OrShape};

/// The most constant tap entries (index, weight and mask per tap and position) a sampling
/// by a constant grid writes.
const MAX_TAP_ENTRIES: u64 = 1 << 24;

/// The float32 nodes of one grid sampling: every coordinate is per-sample `[1, P]`, every
/// channel read `[C, P]` (`P = Ho·Wo` positions).
struct Sampler<'g> {
    g: &'g mut GraphBuilder,
    scope: String,
    positions: u64,
    channels: u64,
    /// The image `[C, H·W]`.
    image: Value,
    /// `W`, the pixel offset of one row.
    width: u64,
    /// int64 zeros `[C, 1]`: a position's offset added to them is one index per channel.
    channel_zeros: Weight,
    zero: Weight,
    one: Weight,
}

impl Sampler<'_> {
    fn scalar(&mut self, value: f32) -> Weight {
        self.g
            .constant_scalar(&format!("{}.constant", self.scope), value)
    }

    /// `op(inputs…)` of coordinates, a `[1, P]` value of element type `elem`.
    fn at<const N: usize>(&mut self, op: &'static str, inputs: [&str; N], elem: ElemType) -> Value {
        let shape = [1, self.positions];
        emit::typed(self.g, op, &self.scope, inputs, &shape, elem)
    }

    fn float<const N: usize>(&mut self, op: &'static str, inputs: [&str; N]) -> Value {
        self.at(op, inputs, ElemType::Float32)
    }

    /// `op(a, constant)` for a float constant.
    fn by(&mut self, op: &'static str, a: &Value, value: f32) -> Value {
        let c = self.scalar(value);
        self.float(op, [a.name(), c.name()])
    }

    /// `op(inputs…)` of channel reads, `[C, P]`.
    fn channels<const N: usize>(&mut self, op: &'static str, inputs: [&str; N]) -> Value {
        let shape = [self.channels, self.positions];
        emit::typed(self.g, op, &self.scope, inputs, &shape, ElemType::Float32)
    }

    /// `unnormalize`: `(g + 1)·s`, and `− ½` without aligned corners.
    fn unnormalize(&mut self, axis: Axis, g: &Value) -> Value {
        let one = self.one.clone();
        let shifted = self.float("Add", [g.name(), one.name()]);
        let x = self.by("Mul", &shifted, axis.scaling_factor());
        if axis.align_corners {
            x
        } else {
            self.by("Sub", &x, 0.5)
        }
    }

    /// `clip_coordinates` as [`Axis::clip`]: `Where`s, so a NaN becomes 0.
    fn clip(&mut self, axis: Axis, x: &Value) -> Value {
        let zero = self.zero.clone();
        let above = self.at("Greater", [x.name(), zero.name()], ElemType::Bool);
        let low = self.float("Where", [above.name(), x.name(), zero.name()]);
        let top = self.scalar(axis.max_val());
        let below = self.at("Less", [low.name(), top.name()], ElemType::Bool);
        self.float("Where", [below.name(), low.name(), top.name()])
    }

    /// `reflect_coordinates` as [`Axis::reflect`]. An empty span maps every coordinate to
    /// 0: `x · 0` (NaN for an infinity or NaN), which the clip that follows makes 0.
    fn reflect(&mut self, axis: Axis, x: &Value) -> Value {
        if axis.empty() {
            let zero = self.zero.clone();
            return self.float("Mul", [x.name(), zero.name()]);
        }
        let low = axis.low();
        let from_low = if low == 0.0 {
            x.clone()
        } else {
            self.by("Sub", x, low)
        };
        let abs = self.float("Abs", [from_low.name()]);
        let twice = self.scalar(axis.twice_span());
        let ratio = self.float("Div", [abs.name(), twice.name()]);
        // `trunc` of a number at least 0 (or NaN) is its floor.
        let flips = self.float("Floor", [ratio.name()]);
        let whole = self.float("Mul", [flips.name(), twice.name()]);
        let extra = self.float("Sub", [abs.name(), whole.name()]);
        let back = self.float("Sub", [twice.name(), extra.name()]);
        let folded = self.float("Min", [extra.name(), back.name()]);
        if low == 0.0 {
            folded
        } else {
            self.by("Add", &folded, low)
        }
    }

    /// `compute_coordinates`: the padding applied to pixel coordinate `x`.
    fn padded(&mut self, axis: Axis, x: &Value, padding: Padding) -> Value {
        match padding {
            Padding::Zeros => x.clone(),
            Padding::Border => self.clip(axis, x),
            Padding::Reflection => {
                let reflected = self.reflect(axis, x);
                self.clip(axis, &reflected)
            }
        }
    }

    /// Whole-number coordinate `i` as a tap of `axis`: whether it is a pixel
    /// ([`Axis::holds`]), and the coordinate where it is, 0 where not (a valid index).
    fn tap(&mut self, axis: Axis, i: &Value) -> Tap {
        let low = self.scalar(-1.0);
        let size = self.scalar(axis.size as f32);
        let above = self.at("Greater", [i.name(), low.name()], ElemType::Bool);
        let below = self.at("Less", [i.name(), size.name()], ElemType::Bool);
        let holds = self.at("And", [above.name(), below.name()], ElemType::Bool);
        let zero = self.zero.clone();
        let at = self.float("Where", [holds.name(), i.name(), zero.name()]);
        Tap { holds, at }
    }

    /// The image read at column tap `x` and row tap `y`, per channel: 0 outside.
    fn read(&mut self, x: &Tap, y: &Tap) -> Value {
        let row = self.by("Mul", &y.at, self.width as f32);
        let offset = self.float("Add", [row.name(), x.at.name()]);
        let zeros = self.channel_zeros.clone();
        let shape = [self.channels, self.positions];
        let float_index = emit::typed(
            self.g,
            "Add",
            &self.scope,
            [offset.name(), zeros.name()],
            &shape,
            ElemType::Float32,
        );
        let index = emit::cast(self.g, &self.scope, &float_index, ElemType::Int64);
        let value = emit::single(self.g.typed_node(
            "GatherElements",
            &self.scope,
            vec![self.image.name().to_owned(), index.name().to_owned()],
            vec![("axis", Attr::Int(2))],
            vec![(shape.to_vec(), ElemType::Float32)],
        ));
        let both = self.at("And", [x.holds.name(), y.holds.name()], ElemType::Bool);
        let zero = self.zero.clone();
        self.channels("Where", [both.name(), value.name(), zero.name()])
    }

    /// `Σ weights[k] · reads[k]` of the four taps, added left to right with each product
    /// as torch writes it (`weight_first`: `w · v`, else `v · w`).
    fn blend(&mut self, reads: &[Value; 4], weights: &[Value; 4], weight_first: bool) -> Value {
        let term = |s: &mut Self, k: usize| {
            let (v, w) = (reads[k].name(), weights[k].name());
            if weight_first {
                s.channels("Mul", [w, v])
            } else {
                s.channels("Mul", [v, w])
            }
        };
        let mut sum = term(self, 0);
        for k in 1..4 {
            let next = term(self, k);
            sum = self.channels("Add", [sum.name(), next.name()]);
        }
        sum
    }

    /// The cubic convolution coefficients of fraction `t`
    /// ([`ckpt_aten::grid_sample::cubic_coefficients`]), in torch's order of operations.
    fn cubic(&mut self, t: &Value) -> [Value; 4] {
        const A: f32 = -0.75;
        let far = |s: &mut Self, x: &Value| {
            let ax = s.by("Mul", x, A);
            let a = s.by("Sub", &ax, 5.0 * A);
            let a = s.float("Mul", [a.name(), x.name()]);
            let a = s.by("Add", &a, 8.0 * A);
            let a = s.float("Mul", [a.name(), x.name()]);
            s.by("Sub", &a, 4.0 * A)
        };
        let near = |s: &mut Self, x: &Value| {
            let a = s.by("Mul", x, A + 2.0);
            let a = s.by("Sub", &a, A + 3.0);
            let a = s.float("Mul", [a.name(), x.name()]);
            let a = s.float("Mul", [a.name(), x.name()]);
            s.by("Add", &a, 1.0)
        };
        let plus_one = self.by("Add", t, 1.0);
        let one = self.one.clone();
        let one_minus = self.float("Sub", [one.name(), t.name()]);
        let two = self.scalar(2.0);
        let two_minus = self.float("Sub", [two.name(), t.name()]);
        [
            far(self, &plus_one),
            near(self, t),
            near(self, &one_minus),
            far(self, &two_minus),
        ]
    }
}

/// A tap along one axis: where it is a pixel, and its coordinate there (0 elsewhere).
struct Tap {
    holds: Value,
    at: Value,
}

impl Lowering<'_, '_> {
    /// `grid_sampler_2d`/`grid_sampler_3d`/`grid_sampler(input, grid, interpolation_mode,
    /// padding_mode, align_corners)`.
    pub(super) fn grid_sampler(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let settings = Settings::new(
            args.int("interpolation_mode").or_shape()?,
            args.int("padding_mode").or_shape()?,
            args.bool("align_corners").or_shape()?,
        )
        .map_err(arg_error)?;
        let (input, grid) = (
            args.tensor("input").or_shape()?,
            args.tensor("grid").or_shape()?,
        );
        // A constant grid the same for every sample of a batch (one expanded over it) is
        // sampled as a computed one, per sample.
        let per_sample =
            self.tensor(input)?.placement() != Placement::Static && self.uniform(grid).is_some();
        if self.is_constant(grid) && !per_sample {
            return self.sampled_at_constant_grid(node, scope, input, grid, settings);
        }
        if self.tensor(input)?.rank() == 5 {
            return Err(arg_error(format!(
                "grid_sampler of a 5-D input by the grid `{grid}`, which the graph computes or expands over a dynamic batch: the 3-D sampler is exported by a constant grid in a static program only (its taps and weights computed at export; export with --batch static)"
            )));
        }
        let x = self.activation(args.tensor("input").or_shape()?)?;
        let grid = self.activation(args.tensor("grid").or_shape()?)?;
        let (&[c, h, w], &[ho, wo, 2]) = (x.shape(), grid.shape()) else {
            return Err(arg_error(format!(
                "grid_sampler of per-sample {:?} by a grid {:?}: only an image [C, H, W] by a grid [Ho, Wo, 2] (grid_sampler_2d) is exported",
                x.shape(),
                grid.shape()
            )));
        };
        if h * w > MAX_PIXELS || h * w == 0 || c == 0 || ho * wo == 0 {
            return Err(arg_error(format!(
                "grid_sampler of per-sample {:?} by a grid {:?}: images of 1 to 2^24 pixels are sampled (pixel offsets are float32) at one position or more",
                x.shape(),
                grid.shape()
            )));
        }
        if self.g.opset().version() < 11 {
            return Err(arg_error(
                "grid_sampler reads each sample's pixels with GatherElements from opset 11; pass --opset 11".into(),
            ));
        }
        let positions = ho * wo;
        let image = self.g.reshape(scope, &x, &[c, h * w])?;
        let points = self.g.reshape(scope, &grid, &[positions, 2])?;
        let parts = self.g.split(scope, &points, 1, &[1, 1])?;
        let [gx, gy] = [&parts[0], &parts[1]].map(|p| self.g.reshape(scope, p, &[1, positions]));
        let (gx, gy) = (gx?, gy?);
        let channel_zeros = self.g.typed_constant(
            &format!("{scope}.channels"),
            vec![c, 1],
            &vec![0.0; c as usize],
            ElemType::Float32,
        )?;
        let zero = self.g.constant_scalar(&format!("{scope}.zero"), 0.0);
        let one = self.g.constant_scalar(&format!("{scope}.one"), 1.0);
        let mut s = Sampler {
            g: &mut self.g,
            scope: scope.to_owned(),
            positions,
            channels: c,
            image,
            width: w,
            channel_zeros,
            zero,
            one,
        };
        let align_corners = settings.align_corners;
        let (ax, ay) = (
            Axis {
                size: w,
                align_corners,
            },
            Axis {
                size: h,
                align_corners,
            },
        );
        let padding = settings.padding;
        let y = match settings.interpolation {
            Interpolation::Bilinear => {
                let ux = s.unnormalize(ax, &gx);
                let x = s.padded(ax, &ux, padding);
                let uy = s.unnormalize(ay, &gy);
                let y = s.padded(ay, &uy, padding);
                let x_w = s.float("Floor", [x.name()]);
                let y_n = s.float("Floor", [y.name()]);
                let west = s.float("Sub", [x.name(), x_w.name()]);
                let one = s.one.clone();
                let east = s.float("Sub", [one.name(), west.name()]);
                let north = s.float("Sub", [y.name(), y_n.name()]);
                let south = s.float("Sub", [one.name(), north.name()]);
                let nw = s.float("Mul", [south.name(), east.name()]);
                let ne = s.float("Mul", [south.name(), west.name()]);
                let sw = s.float("Mul", [north.name(), east.name()]);
                let se = s.float("Mul", [north.name(), west.name()]);
                let x_e = s.by("Add", &x_w, 1.0);
                let y_s = s.by("Add", &y_n, 1.0);
                let (tw, te) = (s.tap(ax, &x_w), s.tap(ax, &x_e));
                let (tn, ts) = (s.tap(ay, &y_n), s.tap(ay, &y_s));
                let reads = [
                    s.read(&tw, &tn),
                    s.read(&te, &tn),
                    s.read(&tw, &ts),
                    s.read(&te, &ts),
                ];
                s.blend(&reads, &[nw, ne, sw, se], false)
            }
            Interpolation::Nearest => {
                let ux = s.unnormalize(ax, &gx);
                let x = s.padded(ax, &ux, padding);
                let uy = s.unnormalize(ay, &gy);
                let y = s.padded(ay, &uy, padding);
                // ONNX `Round` rounds half to even, as `_mm256_round_ps` does.
                let xr = s.float("Round", [x.name()]);
                let yr = s.float("Round", [y.name()]);
                let (tx, ty) = (s.tap(ax, &xr), s.tap(ay, &yr));
                s.read(&tx, &ty)
            }
            Interpolation::Bicubic => {
                let x = s.unnormalize(ax, &gx);
                let y = s.unnormalize(ay, &gy);
                let ix = s.float("Floor", [x.name()]);
                let iy = s.float("Floor", [y.name()]);
                let tx = s.float("Sub", [x.name(), ix.name()]);
                let ty = s.float("Sub", [y.name(), iy.name()]);
                let cx = s.cubic(&tx);
                let cy = s.cubic(&ty);
                let taps = |s: &mut Sampler<'_>, axis: Axis, i: &Value| -> Vec<Tap> {
                    [-1.0f32, 0.0, 1.0, 2.0]
                        .iter()
                        .map(|&d| {
                            let at = if d == 0.0 {
                                i.clone()
                            } else {
                                s.by("Add", i, d)
                            };
                            let at = match padding {
                                Padding::Zeros => at,
                                // Padded coordinates are at least 0: truncation is `Floor`.
                                _ => {
                                    let p = s.padded(axis, &at, padding);
                                    s.float("Floor", [p.name()])
                                }
                            };
                            s.tap(axis, &at)
                        })
                        .collect()
                };
                let xs = taps(&mut s, ax, &ix);
                let ys = taps(&mut s, ay, &iy);
                let rows = [0, 1, 2, 3].map(|j| {
                    let reads = [0, 1, 2, 3].map(|i| s.read(&xs[i], &ys[j]));
                    s.blend(&reads, &cx, true)
                });
                s.blend(&rows, &cy, true)
            }
        };
        let y = self.g.reshape(scope, &y, &[c, ho, wo])?;
        self.bind(node, 0, y)
    }

    /// [`Lowering::grid_sampler`] by constant grid `grid`: the plan of gathers the module
    /// documentation describes.
    fn sampled_at_constant_grid(
        &mut self,
        node: &Node,
        scope: &str,
        input: &str,
        grid: &str,
        s: Settings,
    ) -> Result<(), OnnxError> {
        let t = self.tensor(input)?;
        if t.placement() != Placement::Static {
            return Err(arg_error(format!(
                "grid_sampler of `{input}` {} by the constant grid `{grid}`: its taps are gathered at constant positions in a static program only; export with --batch static",
                tensor::show(&t.sizes())
            )));
        }
        let points = self.constant_tensor(grid)?;
        // The tensor lifted, `[N, C, spatial…]`.
        let x = self.lifted_activation(input)?;
        let shape = x.shape().to_vec();
        let (n, rest) = match shape.split_first() {
            Some((&n, rest)) => (n, rest),
            None => (0, &shape[..]),
        };
        let gd = points.dims().to_vec();
        let rank = rest.len().saturating_sub(1);
        let fits = (2..=3).contains(&rank)
            && gd.len() == rank + 2
            && gd[0] == n
            && gd[rank + 1] == rank as u64;
        let plane: u64 = rest.iter().skip(1).product();
        if !fits || plane == 0 || n * plane > MAX_PIXELS || rest[0] == 0 {
            return Err(arg_error(format!(
                "grid_sampler of {} by a constant grid {gd:?}: an input [N, C, spatial…] of 2 or 3 spatial axes (1 to 2^24 pixels in all) by a grid [N, out…, 2 or 3] is sampled",
                tensor::show(&t.sizes())
            )));
        }
        let (c, sizes) = (rest[0], &rest[1..]);
        let out = &gd[1..=rank];
        let positions: u64 = out.iter().product();
        let rows = n * positions;
        // Per tap: the pixel each row reads (within all samples' maps end to end), its
        // weight, and whether it is inside.
        let mut tables: Vec<[Vec<f64>; 3]> = Vec::new();
        for (r, point) in points.to_f32().chunks(rank).enumerate() {
            let taps = grid_sample::taps(point, sizes, s).ok_or_else(|| {
                arg_error("grid_sampler: bicubic interpolation of a 5-D input, which torch does not compute".into())
            })?;
            tables.resize_with(taps.len(), Default::default);
            let base = r as u64 / positions * plane;
            for (table, tap) in tables.iter_mut().zip(&taps) {
                table[0].push((base + tap.offset.unwrap_or(0)) as f64);
                table[1].push(f64::from(tap.weight));
                table[2].push(f64::from(u8::from(tap.offset.is_some())));
            }
        }
        if tables.len() as u64 * rows > MAX_TAP_ENTRIES {
            return Err(arg_error(format!(
                "grid_sampler reads {} taps at each of {rows} positions; the export writes at most {MAX_TAP_ENTRIES} constant taps",
                tables.len()
            )));
        }
        // The pixels `[C, N·S]`, each sample's map after the one before.
        let x = self.g.reshape(scope, &x, &[n, c, plane])?;
        let x = self.g.transpose(scope, &x, &[1, 0, 2])?;
        let pixels = self.g.reshape(scope, &x, &[c, n * plane])?;
        let read = [c, rows];
        let g = &mut self.g;
        let channel_zeros = g.typed_constant(
            &format!("{scope}.channels"),
            vec![1, c, 1],
            &vec![0.0; c as usize],
            ElemType::Float32,
        )?;
        let nearest = s.interpolation == Interpolation::Nearest;
        let mut sum: Option<Value> = None;
        for [index, weight, inside] in &tables {
            let offsets = g.typed_constant(
                &format!("{scope}.tap"),
                vec![rows],
                index,
                ElemType::Float32,
            )?;
            let offsets = emit::typed(
                g,
                "Add",
                scope,
                [offsets.name(), channel_zeros.name()],
                &read,
                ElemType::Float32,
            );
            let offsets = emit::cast(g, scope, &offsets, ElemType::Int64);
            let mut term = emit::single(g.typed_node(
                "GatherElements",
                scope,
                vec![pixels.name().to_owned(), offsets.name().to_owned()],
                vec![("axis", Attr::Int(2))],
                vec![(read.to_vec(), ElemType::Float32)],
            ));
            if inside.contains(&0.0) {
                let mask = g.typed_constant(
                    &format!("{scope}.inside"),
                    vec![rows],
                    inside,
                    ElemType::Bool,
                )?;
                let zero = g.constant_scalar(&format!("{scope}.zero"), 0.0);
                term = emit::typed(
                    g,
                    "Where",
                    scope,
                    [mask.name(), term.name(), zero.name()],
                    &read,
                    ElemType::Float32,
                );
            }
            if !nearest {
                let weight = g.typed_constant(
                    &format!("{scope}.weight"),
                    vec![rows],
                    weight,
                    ElemType::Float32,
                )?;
                term = emit::typed(
                    g,
                    "Mul",
                    scope,
                    [term.name(), weight.name()],
                    &read,
                    ElemType::Float32,
                );
            }
            sum = Some(match sum {
                None => term,
                Some(acc) => emit::typed(
                    g,
                    "Add",
                    scope,
                    [acc.name(), term.name()],
                    &read,
                    ElemType::Float32,
                ),
            });
        }
        let Some(y) = sum else {
            return Err(arg_error("grid_sampler with no taps".into()));
        };
        let y = self.g.reshape(scope, &y, &[c, n, positions])?;
        let y = self.g.transpose(scope, &y, &[1, 0, 2])?;
        let mut dims = vec![n, c];
        dims.extend(out);
        let y = self.g.reshape(scope, &y, &dims)?;
        self.bind(node, 0, y)
    }
}
