//! Max pooling as torch's CPU kernel scans each window (`cpu_max_pool`): the maximum and
//! its index, for `max_pool*d_with_indices` whose indices are read, and for dilated
//! windows. ATC cannot take either from ONNX `MaxPool`: its parser plugin
//! (`max_pool_plugin.cc`) fails a node with a second output ("The output of Indices is not
//! support") and builds `MaxPoolV3`, which has no dilation, for 2-D windows.
//!
//! The window is swept one kernel offset at a time, in torch's order (row-major over the
//! offsets): a strided Slice of the input padded with −∞ gives that offset's value in
//! every window, and the running maximum takes it where it is greater or NaN (torch's
//! `val > maxval || isnan(val)`), the running index with it. An index is the flat
//! position in the input's spatial map (`h·W + w`), starting at each window's first
//! position inside the input, as torch's kernel starts.

use crate::elem::ElemType;
use crate::graph::{GraphBuilder, Value};
use crate::ops::PoolNd;
use crate::OnnxError;
use ckpt_aten::eval::{adaptive_window, swept};

use super::super::emit;
use super::super::lower::Lowering;
use super::arg_error;

/// The flat positions (`h·W + w`, in the spatial map `sizes`) of one point in every window
/// of an output map `out`: the point at `offset` of each window (`start` is the window's
/// origin, `o·stride − pad`), or, with `offset` `None`, each window's first point inside
/// the map (torch's starting index). Row-major over `out`.
fn positions(
    sizes: &[u64],
    out: &[u64],
    p: &PoolNd,
    dilation: &[u64],
    offset: Option<&[u64]>,
) -> Vec<f64> {
    let rank = sizes.len();
    let count: u64 = out.iter().product();
    let mut values = Vec::with_capacity(count as usize);
    for flat in 0..count {
        let mut rest = flat;
        let mut at = vec![0i64; rank];
        for i in (0..rank).rev() {
            let o = (rest % out[i]) as i64;
            rest /= out[i];
            let start = o * p.stride[i] as i64 - p.pad[i] as i64;
            at[i] = match offset {
                Some(offset) => start + (offset[i] * dilation[i]) as i64,
                None => {
                    // torch: `while (ih0 < 0) ih0 += dilation`.
                    let d = dilation[i] as i64;
                    if start < 0 {
                        start + (-start + d - 1) / d * d
                    } else {
                        start
                    }
                }
            };
        }
        let position = at
            .iter()
            .zip(sizes)
            .fold(0i64, |acc, (&a, &n)| acc * n as i64 + a);
        values.push(position as f64);
    }
    values
}

/// The output map of a window sweep over `sizes` (torch's `pooling_output_shape`).
fn output_sizes(sizes: &[u64], p: &PoolNd, dilation: &[u64]) -> Result<Vec<u64>, OnnxError> {
    (0..sizes.len())
        .map(|i| {
            swept(
                sizes[i],
                p.kernel[i],
                p.stride[i],
                p.pad[i],
                dilation[i],
                p.ceil,
            )
            .map_err(|e| arg_error(format!("max pooling of {sizes:?}: {e}")))
        })
        .collect()
}

impl Lowering<'_, '_> {
    /// Refuses a graph below opset 10, where Slice has no steps: a scan of `what` reads
    /// strided Slices.
    fn strided_slices_for(&self, what: &str) -> Result<(), OnnxError> {
        if self.g.opset().version() < 10 {
            return Err(arg_error(format!(
                "{what} reads strided Slices, which need opset 10; pass --opset 11"
            )));
        }
        Ok(())
    }

    /// The maximum of each window of `x` (`[C, spatial…]`) and its flat index (int64), as
    /// torch's max pooling computes both.
    pub(super) fn max_pool_scan(
        &mut self,
        scope: &str,
        x: &Value,
        p: &PoolNd,
        dilation: &[u64],
    ) -> Result<(Value, Value), OnnxError> {
        self.strided_slices_for("max pooling with its indices or dilation")?;
        let rank = p.kernel.len();
        let sizes = x.shape()[1..].to_vec();
        let out = output_sizes(&sizes, p, dilation)?;
        let channels = x.shape()[0];
        let mapped: Vec<u64> = std::iter::once(channels).chain(out.clone()).collect();
        // −∞ around the input, so that every offset's Slice stays inside: before, the
        // padding; after, what the last window reaches beyond the input.
        let mut begin = vec![0i64; rank + 2];
        let mut end = vec![0i64; rank + 2];
        let mut padded = x.shape().to_vec();
        for i in 0..rank {
            let reach = (out[i] - 1) * p.stride[i] + (p.kernel[i] - 1) * dilation[i] + 1;
            let after = reach.saturating_sub(sizes[i] + p.pad[i]);
            begin[i + 2] = p.pad[i] as i64;
            end[i + 2] = after as i64;
            padded[i + 1] += p.pad[i] + after;
        }
        let source = if begin.iter().chain(&end).all(|&v| v == 0) {
            x.clone()
        } else {
            begin.extend(end);
            self.emit_pad(scope, x, begin, padded, "constant", f32::NEG_INFINITY)
        };
        let axes: Vec<i64> = (2..rank as i64 + 2).collect();
        let steps: Vec<i64> = p.stride.iter().map(|&s| s as i64).collect();
        let first = positions(&sizes, &out, p, dilation, None);
        let mut index = self
            .g
            .typed_constant(
                &format!("{scope}.first"),
                out.clone(),
                &first,
                ElemType::Int64,
            )?
            .name()
            .to_owned();
        let mut maximum = self
            .g
            .constant_scalar(&format!("{scope}.low"), f32::NEG_INFINITY)
            .name()
            .to_owned();
        let mut scanned = None;
        let offsets: u64 = p.kernel.iter().product();
        for flat in 0..offsets {
            let mut rest = flat;
            let mut offset = vec![0u64; rank];
            for i in (0..rank).rev() {
                offset[i] = rest % p.kernel[i];
                rest /= p.kernel[i];
            }
            let starts: Vec<i64> = (0..rank)
                .map(|i| (offset[i] * dilation[i]) as i64)
                .collect();
            let ends: Vec<i64> = (0..rank)
                .map(|i| starts[i] + ((out[i] - 1) * p.stride[i]) as i64 + 1)
                .collect();
            let g = &mut self.g;
            let inputs = vec![
                source.name().to_owned(),
                g.constant_i64(&format!("{scope}.starts"), &starts)
                    .name()
                    .to_owned(),
                g.constant_i64(&format!("{scope}.ends"), &ends)
                    .name()
                    .to_owned(),
                g.constant_i64(&format!("{scope}.axes"), &axes)
                    .name()
                    .to_owned(),
                g.constant_i64(&format!("{scope}.steps"), &steps)
                    .name()
                    .to_owned(),
            ];
            let value = emit::single(g.node("Slice", scope, inputs, vec![], vec![mapped.clone()]));
            let flag = |g: &mut GraphBuilder, op: &'static str, inputs: Vec<String>| {
                emit::single(g.typed_node(
                    op,
                    scope,
                    inputs,
                    vec![],
                    vec![(mapped.clone(), ElemType::Bool)],
                ))
            };
            let greater = flag(g, "Greater", vec![value.name().to_owned(), maximum.clone()]);
            let nan = flag(g, "IsNaN", vec![value.name().to_owned()]);
            let take = flag(
                g,
                "Or",
                vec![greater.name().to_owned(), nan.name().to_owned()],
            );
            let here = positions(&sizes, &out, p, dilation, Some(&offset));
            let here =
                g.typed_constant(&format!("{scope}.at"), out.clone(), &here, ElemType::Int64)?;
            let choose = |g: &mut GraphBuilder, a: &str, b: String, elem| {
                emit::single(g.typed_node(
                    "Where",
                    scope,
                    vec![take.name().to_owned(), a.to_owned(), b],
                    vec![],
                    vec![(mapped.clone(), elem)],
                ))
            };
            let values = choose(g, value.name(), maximum, ElemType::Float32);
            let indices = choose(g, here.name(), index, ElemType::Int64);
            maximum = values.name().to_owned();
            index = indices.name().to_owned();
            scanned = Some((values, indices));
        }
        scanned.ok_or_else(|| arg_error(format!("max pooling with a kernel of {:?}", p.kernel)))
    }
}

/// The entry each adaptive window along an axis of `size` pooled to `out` reads at step
/// `q` of the scan: its `q`-th, or its last when shorter (a repeated entry changes
/// nothing: neither greater than itself nor a new NaN's place).
fn adaptive_step(size: u64, out: u64, q: u64) -> Vec<u64> {
    (0..out)
        .map(|j| {
            let (start, end) = adaptive_window(j, size, out);
            (start + q).min(end - 1)
        })
        .collect()
}

/// `positions` split into runs of evenly increasing entries, each `(first, step, count)`:
/// one strided Slice each.
fn runs(positions: &[u64]) -> Vec<(u64, u64, u64)> {
    let mut runs: Vec<(u64, u64, u64)> = Vec::new();
    for &p in positions {
        match runs.last_mut() {
            Some((first, step, count)) if *count == 1 && p > *first => {
                *step = p - *first;
                *count = 2;
            }
            Some((first, step, count)) if *count > 1 && p == *first + *step * *count => {
                *count += 1;
            }
            _ => runs.push((p, 1, 1)),
        }
    }
    runs
}

impl Lowering<'_, '_> {
    /// Entries `positions` (in order) of `x` along per-sample axis `axis`: a strided Slice
    /// per run of evenly spaced positions, joined by a Concat.
    fn picked(
        &mut self,
        scope: &str,
        x: &Value,
        axis: usize,
        positions: &[u64],
        elem: ElemType,
    ) -> Result<Value, OnnxError> {
        let mut pieces = Vec::new();
        for (first, step, count) in runs(positions) {
            let mut shape = x.shape().to_vec();
            shape[axis] = count;
            let g = &mut self.g;
            let end = first + step * (count - 1) + 1;
            let inputs = vec![
                x.name().to_owned(),
                g.constant_i64(&format!("{scope}.starts"), &[first as i64])
                    .name()
                    .to_owned(),
                g.constant_i64(&format!("{scope}.ends"), &[end as i64])
                    .name()
                    .to_owned(),
                g.constant_i64(&format!("{scope}.axes"), &[axis as i64 + 1])
                    .name()
                    .to_owned(),
                g.constant_i64(&format!("{scope}.steps"), &[step as i64])
                    .name()
                    .to_owned(),
            ];
            pieces.push(emit::single(g.typed_node(
                "Slice",
                scope,
                inputs,
                vec![],
                vec![(shape, elem)],
            )));
        }
        if pieces.len() == 1 {
            return Ok(pieces.swap_remove(0));
        }
        let refs: Vec<&Value> = pieces.iter().collect();
        self.g.concat(scope, &refs, axis)
    }

    /// The flat position in the spatial map (`[C, spatial…]` after the first axis) of every
    /// entry of `x`, int64: a zero of the input's shape (`x < x` is false, NaN included)
    /// plus the positions, an activation a scan narrows.
    pub(super) fn spatial_positions(&mut self, scope: &str, x: &Value) -> Result<Value, OnnxError> {
        let sizes = x.shape()[1..].to_vec();
        let shape = x.shape().to_vec();
        let count: u64 = sizes.iter().product();
        let flat: Vec<f64> = (0..count).map(|i| i as f64).collect();
        let g = &mut self.g;
        let at = g.typed_constant(&format!("{scope}.at"), sizes, &flat, ElemType::Int64)?;
        let never = emit::typed(
            g,
            "Less",
            scope,
            [x.name(), x.name()],
            &shape,
            ElemType::Bool,
        );
        let zero = emit::cast(g, scope, &never, ElemType::Int64);
        Ok(emit::typed(
            g,
            "Add",
            scope,
            [zero.name(), at.name()],
            &shape,
            ElemType::Int64,
        ))
    }

    /// One step of torch's window scan: candidate value `v` taken over the running maximum
    /// `best` where it is greater or NaN (torch's `val > maxval || isnan(val)`), and with
    /// `indices` (the candidate's, the running maximum's) the index alike.
    pub(super) fn scan_step(
        &mut self,
        scope: &str,
        best: &Value,
        v: &Value,
        indices: Option<(&Value, &Value)>,
    ) -> (Value, Option<Value>) {
        let mapped = v.shape().to_vec();
        let g = &mut self.g;
        let flag = |g: &mut GraphBuilder, op: &'static str, inputs: Vec<String>| {
            emit::single(g.typed_node(
                op,
                scope,
                inputs,
                vec![],
                vec![(mapped.clone(), ElemType::Bool)],
            ))
        };
        let greater = flag(
            g,
            "Greater",
            vec![v.name().to_owned(), best.name().to_owned()],
        );
        let nan = flag(g, "IsNaN", vec![v.name().to_owned()]);
        let take = flag(
            g,
            "Or",
            vec![greater.name().to_owned(), nan.name().to_owned()],
        );
        let choose = |g: &mut GraphBuilder, a: &Value, b: &Value, elem| {
            emit::typed(
                g,
                "Where",
                scope,
                [take.name(), a.name(), b.name()],
                &mapped,
                elem,
            )
        };
        (
            choose(g, v, best, ElemType::Float32),
            indices.map(|(i, best_at)| choose(g, i, best_at, ElemType::Int64)),
        )
    }

    /// Adaptive max pooling of `x` (`[C, spatial…]`) to `out` with its indices, as torch's
    /// CPU kernel scans each window (row-major, a value taken when greater or NaN, the
    /// index flat in the spatial map from the window's first point). One spatial axis at
    /// a time, the last first: the first maximum in row-major order is the first along
    /// the outer axes of the first along the inner ones, and the last NaN likewise, so
    /// each axis is scanned alone over its windows, a strided Slice per step.
    pub(super) fn adaptive_max_scan(
        &mut self,
        scope: &str,
        x: &Value,
        out: &[u64],
    ) -> Result<(Value, Value), OnnxError> {
        self.strided_slices_for("adaptive max pooling with its indices")?;
        let sizes = x.shape()[1..].to_vec();
        let mut index = self.spatial_positions(scope, x)?;
        let mut value = x.clone();
        for k in (0..sizes.len()).rev() {
            let (axis, size, to) = (k + 1, sizes[k], out[k]);
            if size == to {
                continue;
            }
            let longest = (0..to)
                .map(|j| {
                    let (start, end) = adaptive_window(j, size, to);
                    end - start
                })
                .max()
                .unwrap_or(1);
            let first = adaptive_step(size, to, 0);
            let mut best = self.picked(scope, &value, axis, &first, ElemType::Float32)?;
            let mut best_at = self.picked(scope, &index, axis, &first, ElemType::Int64)?;
            for q in 1..longest {
                let step = adaptive_step(size, to, q);
                let v = self.picked(scope, &value, axis, &step, ElemType::Float32)?;
                let i = self.picked(scope, &index, axis, &step, ElemType::Int64)?;
                let (taken, taken_at) = self.scan_step(scope, &best, &v, Some((&i, &best_at)));
                best = taken;
                best_at = taken_at.unwrap_or(best_at);
            }
            value = best;
            index = best_at;
        }
        Ok((value, index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(kernel: u64, stride: u64, pad: u64, ceil: bool) -> PoolNd {
        PoolNd {
            kernel: vec![kernel],
            stride: vec![stride],
            pad: vec![pad],
            ceil,
        }
    }

    #[test]
    fn windows_start_at_their_first_point_inside_the_map() {
        // 7 wide, kernel 3, stride 2, pad 1: windows at −1, 1, 3, 5; torch starts the
        // first at 0.
        let p = window(3, 2, 1, false);
        assert_eq!(output_sizes(&[7], &p, &[1]).unwrap(), [4]);
        assert_eq!(positions(&[7], &[4], &p, &[1], None), [0., 1., 3., 5.]);
        assert_eq!(
            positions(&[7], &[4], &p, &[1], Some(&[2])),
            [1., 3., 5., 7.]
        );
        // Dilation 2 from −1 steps to 1: `while (ih0 < 0) ih0 += dilation`.
        let p = window(2, 1, 1, false);
        assert_eq!(output_sizes(&[5], &p, &[2]).unwrap(), [5]);
        assert_eq!(positions(&[5], &[5], &p, &[2], None), [1., 0., 1., 2., 3.]);
    }

    #[test]
    fn adaptive_steps_slice_evenly_spaced_runs() {
        // 4 pooled to 3: windows 0..2, 1..3, 2..4.
        assert_eq!(adaptive_step(4, 3, 0), [0, 1, 2]);
        assert_eq!(adaptive_step(4, 3, 1), [1, 2, 3]);
        // 3 pooled to 5 (windows overlap, some repeat): 0..1, 0..2, 1..2, 1..3, 2..3.
        assert_eq!(adaptive_step(3, 5, 1), [0, 1, 1, 2, 2]);
        assert_eq!(runs(&[0, 1, 1, 2, 2]), [(0, 1, 2), (1, 1, 2), (2, 1, 1)]);
        assert_eq!(runs(&[0, 2, 4, 5]), [(0, 2, 3), (5, 1, 1)]);
    }

    #[test]
    fn positions_are_flat_in_the_spatial_map() {
        let p = PoolNd {
            kernel: vec![2, 2],
            stride: vec![2, 2],
            pad: vec![0, 0],
            ceil: false,
        };
        // A 4×6 map pooled 2×2: windows at (0, 0), (0, 2), (0, 4), (2, 0)…; offset (1, 1).
        assert_eq!(
            positions(&[4, 6], &[2, 3], &p, &[1, 1], Some(&[1, 1])),
            [7., 9., 11., 19., 21., 23.]
        );
    }
}
