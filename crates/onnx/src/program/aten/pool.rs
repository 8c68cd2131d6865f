//! Max, average and adaptive average pooling over one to three spatial axes, and `mean`
//! over dimensions.

use crate::cann;
use crate::graph::Value;
use crate::ops::{window_out, ConvNd, PoolNd};
use crate::OnnxError;
use ckpt_aten::eval::swept;
use ckpt_aten::program::{Argument, Node};

use super::super::lower::Lowering;
use super::reduce::reduction_axes;
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

/// The pooling window of a `max_pool*d`/`avg_pool*d` node with `rank` spatial axes.
fn window(args: &Args<'_>, rank: usize, op: &str) -> Result<PoolNd, OnnxError> {
    let kernel = args.sizes("kernel_size", rank).or_shape()?;
    if kernel.len() != rank || kernel.contains(&0) {
        return Err(arg_error(format!("{op} without a kernel size")));
    }
    let kernel_i64: Vec<i64> = kernel.iter().map(|&k| k as i64).collect();
    Ok(PoolNd {
        stride: args.sizes_or("stride", rank, &kernel_i64).or_shape()?,
        pad: args.sizes("padding", rank).or_shape()?,
        ceil: args.bool("ceil_mode").or_shape()?,
        kernel,
    })
}

/// ATC's parser sends a 1-D or 2-D `AveragePool` whose kernel has more than
/// [`cann::AI_CPU_KERNEL_ELEMENTS`] elements or a stride above [`cann::AI_CPU_STRIDE`] to an
/// AI CPU kernel that pads with zeros, always counts them and
/// pools VALID: `count_include_pad=False` over padding and a `ceil_mode` that adds a
/// window would compute other values or sizes there, so those are refused.
fn ai_cpu_keeps_meaning(sizes: &[u64], p: &PoolNd, include_pad: bool) -> Result<(), OnnxError> {
    let elements: u64 = p.kernel.iter().product();
    let (max_elements, max_stride) = (cann::AI_CPU_KERNEL_ELEMENTS, cann::AI_CPU_STRIDE);
    let on_ai_core = i64::try_from(elements).is_ok_and(|e| e <= max_elements)
        && p.stride
            .iter()
            .all(|&s| i64::try_from(s).is_ok_and(|s| s <= max_stride));
    if p.kernel.len() > 2 || on_ai_core {
        return Ok(());
    }
    let uncounted = !include_pad && p.pad.iter().any(|&pad| pad > 0);
    let extra_window = p.ceil
        && (0..p.kernel.len()).any(|i| {
            let size = sizes.get(i).copied().unwrap_or(0);
            let at = |ceil| window_out(size, p.pad[i], p.kernel[i], p.stride[i], ceil);
            at(true) != at(false)
        });
    if uncounted || extra_window {
        let what = if uncounted {
            "count_include_pad=False over padding"
        } else {
            "ceil_mode adding a window"
        };
        return Err(arg_error(format!(
            "average pooling with a {:?} kernel and stride {:?} runs on ATC's AI CPU, which ignores {what}; use a kernel of at most {max_elements} elements and strides up to {max_stride}, or padding counted and no ceil_mode",
            p.kernel, p.stride
        )));
    }
    Ok(())
}

impl<'p> Lowering<'p, '_> {
    /// A pool's input over `rank` spatial axes with its channel axis: an unbatched input
    /// (channels first, the batch along them) pools each channel alone, so it gains one
    /// channel per sample (a Reshape), which the caller drops again; `true` then.
    pub(super) fn lift_unbatched(
        &mut self,
        scope: &str,
        x: Value,
        rank: usize,
    ) -> Result<(Value, bool), OnnxError> {
        if x.shape().len() != rank {
            return Ok((x, false));
        }
        let lifted: Vec<u64> = std::iter::once(1)
            .chain(x.shape().iter().copied())
            .collect();
        Ok((self.g.reshape(scope, &x, &lifted)?, true))
    }

    /// `v`, a result of pooling an input [`Lowering::lift_unbatched`] lifted, without the
    /// channel per sample it gained (a Reshape) when `unbatched`.
    pub(super) fn unlift_unbatched(
        &mut self,
        scope: &str,
        v: Value,
        unbatched: bool,
    ) -> Result<Value, OnnxError> {
        if unbatched {
            let shape = v.shape()[1..].to_vec();
            self.g.reshape(scope, &v, &shape)
        } else {
            Ok(v)
        }
    }

    /// `max_pool1d/2d/3d` and `_with_indices` over `rank` spatial axes, batched or not (an
    /// unbatched input pools each channel alone, the batch along them): ONNX `MaxPool`,
    /// unless the indices are read or the window is dilated, which ATC's `MaxPool` cannot
    /// compute: then torch's own scan ([`Lowering::max_pool_scan`]).
    pub(super) fn max_pool(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        rank: usize,
    ) -> Result<(), OnnxError> {
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let p = window(args, rank, "max pooling")?;
        let dilation = args.sizes("dilation", rank).or_shape()?;
        if dilation.len() != rank || dilation.contains(&0) {
            return Err(arg_error(format!("max pooling with dilation {dilation:?}")));
        }
        let (x, unbatched) = self.lift_unbatched(scope, x, rank)?;
        if x.shape().len() != rank + 1 {
            return Err(arg_error(format!(
                "max pooling over {rank} spatial axes of per-sample {:?}",
                x.shape()
            )));
        }
        let indexed = node
            .outputs
            .get(1)
            .and_then(Argument::tensor_name)
            .is_some_and(|name| !self.readers_of(name).is_empty());
        let (y, indices) = if indexed || dilation.iter().any(|&d| d != 1) {
            let (y, indices) = self.max_pool_scan(scope, &x, &p, &dilation)?;
            (y, indexed.then_some(indices))
        } else {
            (self.g.max_pool_nd(scope, &x, &p)?, None)
        };
        let y = self.unlift_unbatched(scope, y, unbatched)?;
        self.bind(node, 0, y)?;
        match indices {
            Some(indices) => {
                let indices = self.unlift_unbatched(scope, indices, unbatched)?;
                self.bind(node, 1, indices)
            }
            None => {
                self.unproduced_from(node, 1);
                Ok(())
            }
        }
    }

    /// `avg_pool1d/2d/3d` over `rank` spatial axes; `ceil_mode` and `count_include_pad` are
    /// AveragePool's own attributes, and both count a window as torch does (padding
    /// counted or not, a ceil-mode window's part beyond the padding never).
    pub(super) fn avg_pool(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        rank: usize,
    ) -> Result<(), OnnxError> {
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let p = window(args, rank, "average pooling")?;
        // An unbatched input pools each channel alone, the batch along them.
        let (x, unbatched) = self.lift_unbatched(scope, x, rank)?;
        let y = if let Some(divisor) = args.optional_int("divisor_override").or_shape()? {
            let y = self.window_sum(scope, &x, &p)?;
            let divisor = self
                .g
                .constant_scalar(&format!("{scope}.divisor"), divisor as f32);
            self.g.div_constant(scope, &y, &divisor)?
        } else {
            let include_pad = args.bool("count_include_pad").or_shape()?;
            ai_cpu_keeps_meaning(&x.shape()[1..], &p, include_pad)?;
            self.g.average_pool_nd(scope, &x, &p, include_pad)?
        };
        let y = self.unlift_unbatched(scope, y, unbatched)?;
        self.bind(node, 0, y)
    }

    /// The sum over each window of `x` (`[C, spatial…]`), the padding counting 0, as torch's
    /// average pooling sums before dividing by `divisor_override`: the input padded with
    /// zeros (also where a `ceil_mode` window reaches beyond), then a depthwise `Conv` by
    /// a kernel of ones.
    fn window_sum(&mut self, scope: &str, x: &Value, p: &PoolNd) -> Result<Value, OnnxError> {
        let rank = p.kernel.len();
        let (channels, sizes) = match x.shape().split_first() {
            Some((&c, sizes)) if sizes.len() == rank => (c, sizes.to_vec()),
            _ => {
                return Err(arg_error(format!(
                    "average pooling over {rank} spatial axes of per-sample {:?}",
                    x.shape()
                )))
            }
        };
        let mut begin = vec![0i64; rank + 2];
        let mut end = vec![0i64; rank + 2];
        let mut padded = x.shape().to_vec();
        for i in 0..rank {
            let (k, s, pad) = (p.kernel[i], p.stride[i], p.pad[i]);
            let o = swept(sizes[i], k, s, pad, 1, p.ceil)
                .map_err(|e| arg_error(format!("average pooling of {sizes:?}: {e}")))?;
            // Exactly what the `o` windows cover, so that the Conv makes no other window.
            let reach = (o - 1) * s + k;
            begin[i + 2] = pad as i64;
            end[i + 2] = reach as i64 - (sizes[i] + pad) as i64;
            padded[i + 1] = reach;
        }
        // A window sum needs no padding past its last window: a negative end crops.
        let mut source = x.clone();
        for i in 0..rank {
            if end[i + 2] < 0 {
                let keep = (sizes[i] as i64 + end[i + 2]) as u64;
                source = self.g.slice(scope, &source, i + 1, 0..keep)?;
                end[i + 2] = 0;
            }
        }
        if begin.iter().chain(&end).any(|&v| v != 0) {
            begin.extend(end);
            source = self.emit_pad(scope, &source, begin, padded, "constant", 0.0);
        }
        let elements: u64 = p.kernel.iter().product();
        let dims: Vec<u64> = [channels, 1].into_iter().chain(p.kernel.clone()).collect();
        let ones = vec![1.0; (channels * elements) as usize];
        let w = self.g.folded(&format!("{scope}.ones"), dims, &ones)?;
        let conv = ConvNd {
            stride: p.stride.clone(),
            pad: vec![0; rank],
            dilation: vec![1; rank],
            groups: channels,
        };
        self.g.conv_nd(scope, &source, &w, None, &conv)
    }

    /// `adaptive_avg_pool1d/2d/3d`, batched or not: nothing when the size already matches,
    /// GlobalAveragePool to all 1s, one AveragePool when each output size divides the
    /// input's, else torch's uneven windows ([`Lowering::adaptive_windows`]).
    pub(super) fn adaptive_avg_pool(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        rank: usize,
    ) -> Result<(), OnnxError> {
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let out = args.sizes("output_size", rank).or_shape()?;
        let (x, unbatched) = self.lift_unbatched(scope, x, rank)?;
        let sizes = match x.shape().split_first() {
            Some((_, sizes)) if sizes.len() == rank && out.len() == rank => sizes.to_vec(),
            _ => {
                return Err(arg_error(format!(
                    "adaptive pooling to {out:?} of per-sample {:?}",
                    x.shape()
                )))
            }
        };
        let y = if sizes == out {
            x
        } else if out.iter().all(|&o| o == 1) {
            self.g.global_average_pool(scope, &x)?
        } else if sizes.iter().zip(&out).all(|(&i, &o)| o > 0 && i % o == 0) {
            let kernel: Vec<u64> = sizes.iter().zip(&out).map(|(&i, &o)| i / o).collect();
            let p = PoolNd {
                stride: kernel.clone(),
                kernel,
                pad: vec![0; rank],
                ceil: false,
            };
            self.g.average_pool_nd(scope, &x, &p, true)?
        } else {
            self.adaptive_windows(scope, x, &out)?
        };
        let y = if unbatched {
            self.g.reshape(scope, &y, &out)?
        } else {
            y
        };
        self.bind(node, 0, y)
    }

    /// Adaptive average pooling of `x` `[C, spatial…]` to `out` with uneven windows, one
    /// spatial axis at a time: output `j` of an axis of `n` is the mean of inputs
    /// `⌊j·n/out⌋ .. ⌈(j+1)·n/out⌉` (torch's windows), a Slice and a ReduceMean each, then
    /// one Concat. The mean over a box is the mean over each axis in turn, as every window
    /// along an axis has one length; a NaN or infinity stays in its own windows.
    fn adaptive_windows(&mut self, scope: &str, x: Value, out: &[u64]) -> Result<Value, OnnxError> {
        let mut y = x;
        for (k, &size) in out.iter().enumerate() {
            let axis = k + 1;
            let n = y.shape()[axis];
            if n == size {
                continue;
            }
            let mut pieces = Vec::with_capacity(size as usize);
            for j in 0..size {
                let (start, end) = (j * n / size, ((j + 1) * n).div_ceil(size));
                let window = if end - start == n {
                    y.clone()
                } else {
                    self.g.slice(scope, &y, axis, start..end)?
                };
                pieces.push(if end - start == 1 {
                    window
                } else {
                    self.g.reduce_mean(scope, &window, &[axis], true)?
                });
            }
            let refs: Vec<&Value> = pieces.iter().collect();
            y = self.g.concat(scope, &refs, axis)?;
        }
        Ok(y)
    }

    pub(super) fn mean(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        if !matches!(args.get("dtype"), None | Some(Argument::None)) {
            return Err(arg_error("mean with a dtype is not exported".into()));
        }
        let input = args.tensor("self").or_shape()?;
        if self.tensor(input)?.batch_axis().is_some_and(|a| a != 0) {
            return self.reduce_moved_batch(node, args, scope, "ReduceMean", 0);
        }
        let x = self.lifted_activation(input)?;
        let axes = reduction_axes(args, &x, self.is_lifted())?;
        let keep = args.bool_or("keepdim", false).or_shape()?;
        let y = if x.shape().len() == 3 && axes == [1, 2] {
            let pooled = self.g.global_average_pool(scope, &x)?;
            if keep {
                pooled
            } else {
                self.g.reshape(scope, &pooled, &x.shape()[..1])?
            }
        } else {
            self.g.reduce_mean(scope, &x, &axes, keep)?
        };
        self.bind(node, 0, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(kernel: u64, stride: u64, pad: u64, ceil: bool) -> PoolNd {
        PoolNd {
            kernel: vec![kernel; 2],
            stride: vec![stride; 2],
            pad: vec![pad; 2],
            ceil,
        }
    }

    #[test]
    fn ai_cpu_pools_refuse_what_that_kernel_ignores() {
        // 16×16 = 256 elements: the AI CPU path.
        let err = ai_cpu_keeps_meaning(&[40, 40], &pool(16, 1, 2, false), false).unwrap_err();
        assert!(err.to_string().contains("count_include_pad=False"), "{err}");
        // Padding counted anyway, or no padding: the same values there.
        assert!(ai_cpu_keeps_meaning(&[40, 40], &pool(16, 1, 2, false), true).is_ok());
        assert!(ai_cpu_keeps_meaning(&[40, 40], &pool(16, 1, 0, false), false).is_ok());
        // ceil_mode adds a window on 41 (41 − 16 = 25, not a multiple of 2)…
        let err = ai_cpu_keeps_meaning(&[41, 41], &pool(16, 2, 0, true), true).unwrap_err();
        assert!(err.to_string().contains("ceil_mode"), "{err}");
        // …but not on 40 (24 is).
        assert!(ai_cpu_keeps_meaning(&[40, 40], &pool(16, 2, 0, true), true).is_ok());
        // A stride above 63 takes the same path; 15×15 with stride 2 does not.
        assert!(ai_cpu_keeps_meaning(&[200, 200], &pool(3, 64, 1, false), false).is_err());
        assert!(ai_cpu_keeps_meaning(&[41, 41], &pool(15, 2, 1, true), false).is_ok());
    }
}
