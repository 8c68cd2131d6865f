//! The gradients of pooling with respect to its input, as torch's backward kernels
//! compute them: `max_pool2d_with_indices_backward` (each output's gradient added at the
//! input position its index names), `avg_pool2d_backward` (each output's gradient divided
//! by its window's divisor and added over the window) and `_adaptive_avg_pool2d_backward`
//! (the same over torch's adaptive windows). Each keeps every sample and channel alone.

use crate::elem::ElemType;
use crate::graph::Value;
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::eval::{adaptive_window, swept};
use ckpt_aten::program::Node;

use super::super::emit::{self, ConvTranspose};
use super::super::lower::Lowering;
use super::{arg_error, OrShape};

/// The most entries per sample of the comparison of every output's index with every input
/// position that max-pooling's gradient builds (as bools, 16 MiB).
const MAX_INDEX_MATCHES: u64 = 1 << 24;

/// The window of output `o` along one axis of `size` inputs, as torch's
/// `cpu_avg_pool_backward` bounds it: its start `o·stride − pad`, its end clipped to the
/// padded input, the number of positions it covers counting padding, and its range of
/// positions inside the input.
fn avg_window(o: u64, size: u64, k: u64, s: u64, pad: u64) -> (u64, std::ops::Range<u64>) {
    let start = (o * s) as i64 - pad as i64;
    let end = (start + k as i64).min((size + pad) as i64);
    let counted = (end - start).max(0) as u64;
    let inside = start.max(0) as u64..end.clamp(0, size as i64) as u64;
    (counted, inside)
}

impl Lowering<'_, '_> {
    /// `grad_output`, `self` and, when given, the int64 `indices` of a 2-D pooling backward
    /// node as `[C, spatial…]` activations (an unbatched `[C, H, W]` sample lifted to one
    /// channel per sample, `true` then), with the input's spatial sizes.
    fn pooled_operands(
        &mut self,
        args: &Args<'_>,
        scope: &str,
        indexed: bool,
    ) -> Result<(Vec<Value>, Vec<u64>, bool), OnnxError> {
        let rank = 2;
        let grad = self.activation(args.tensor("grad_output").or_shape()?)?;
        let input = self.activation(args.tensor("self").or_shape()?)?;
        let mut values = vec![grad];
        if indexed {
            values.push(self.any_activation(args.tensor("indices").or_shape()?)?);
        }
        let unbatched = input.shape().len() == rank;
        let (input, _) = self.lift_unbatched(scope, input, rank)?;
        let mut lifted = Vec::with_capacity(values.len());
        for v in values {
            lifted.push(self.lift_unbatched(scope, v, rank)?.0);
        }
        let channels = input.shape().first().copied();
        let fits = input.shape().len() == rank + 1
            && lifted
                .iter()
                .all(|v| v.shape().len() == rank + 1 && v.shape().first().copied() == channels);
        if !fits {
            return Err(arg_error(format!(
                "a pooling gradient of per-sample {:?} for an input of per-sample {:?}",
                lifted
                    .iter()
                    .map(|v| v.shape().to_vec())
                    .collect::<Vec<_>>(),
                input.shape()
            )));
        }
        Ok((lifted, input.shape()[1..].to_vec(), unbatched))
    }

    /// Binds the gradient `g` (`[C, spatial…]`) as the node's result, without the channel
    /// [`Lowering::pooled_operands`] added when the input was unbatched.
    fn bind_pooled_grad(
        &mut self,
        node: &Node,
        scope: &str,
        g: Value,
        unbatched: bool,
    ) -> Result<(), OnnxError> {
        let g = self.unlift_unbatched(scope, g, unbatched)?;
        self.bind(node, 0, g)
    }

    /// `max_pool2d_with_indices_backward`, as torch's `cpu_max_pool_backward` (and its
    /// scatter-add decomposition) computes it: the gradient at input position `p` of a
    /// channel is the sum of the output gradients whose index is `p` (an index of −1 adds
    /// nowhere); the window arguments are not read. Each output's index is compared with
    /// every flat position (`Equal` against 0…H·W−1), the gradient kept where they match
    /// (`Where`, so a NaN or infinity reaches only its own position) and summed over the
    /// outputs (`ReduceSum`).
    pub(super) fn max_pool_backward(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let (values, sizes, unbatched) = self.pooled_operands(args, scope, true)?;
        let [grad, indices] = values.as_slice() else {
            return Err(arg_error(
                "max pooling's gradient without its indices".into(),
            ));
        };
        if indices.elem() != ElemType::Int64 || indices.shape() != grad.shape() {
            return Err(arg_error(format!(
                "max pooling's gradient of per-sample {:?} with {} indices of {:?}",
                grad.shape(),
                indices.elem(),
                indices.shape()
            )));
        }
        let channels = grad.shape()[0];
        let taps: u64 = grad.shape()[1..].iter().product();
        let positions: u64 = sizes.iter().product();
        let matches = channels.saturating_mul(taps).saturating_mul(positions);
        if matches > MAX_INDEX_MATCHES {
            return Err(arg_error(format!(
                "max pooling's gradient of {channels} channels of {taps} outputs onto {positions} input positions compares {matches} index pairs per sample, more than the {MAX_INDEX_MATCHES} exported"
            )));
        }
        let grad = self.g.reshape(scope, grad, &[channels, taps, 1])?;
        let indices = self.g.reshape(scope, indices, &[channels, taps, 1])?;
        let flat: Vec<i64> = (0..positions as i64).collect();
        let flat = self.g.constant_i64(&format!("{scope}.positions"), &flat);
        let shape = [channels, taps, positions];
        let hit = emit::typed(
            &mut self.g,
            "Equal",
            scope,
            [indices.name(), flat.name()],
            &shape,
            ElemType::Bool,
        );
        let zero = self.g.constant_scalar(&format!("{scope}.zero"), 0.0);
        let kept = emit::typed(
            &mut self.g,
            "Where",
            scope,
            [hit.name(), grad.name(), zero.name()],
            &shape,
            ElemType::Float32,
        );
        let summed = self.g.reduce("ReduceSum", scope, &kept, &[1], false)?;
        let out: Vec<u64> = std::iter::once(channels).chain(sizes).collect();
        let g = self.g.reshape(scope, &summed, &out)?;
        self.bind_pooled_grad(node, scope, g, unbatched)
    }

    /// `avg_pool2d_backward`, as torch's `cpu_avg_pool_backward` computes it: each output's
    /// gradient divided by its window's divisor (`divisor_override`, else the window's
    /// size within the padded input with `count_include_pad`, else within the input; a
    /// constant map, one entry per output) and added at every input position of the
    /// window: a depthwise `ConvTranspose` by a kernel of ones over the padded input, of
    /// which the input's part is kept (a `Slice`, and zeros where the last window stops
    /// short of the input's end).
    pub(super) fn avg_pool_backward(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let rank = 2;
        let kernel = args.sizes("kernel_size", rank).or_shape()?;
        let kernel_i64: Vec<i64> = kernel.iter().map(|&k| k as i64).collect();
        let stride = args.sizes_or("stride", rank, &kernel_i64).or_shape()?;
        let pad = args.sizes("padding", rank).or_shape()?;
        let ceil = args.bool("ceil_mode").or_shape()?;
        let include_pad = args.bool("count_include_pad").or_shape()?;
        let divisor = args.optional_int("divisor_override").or_shape()?;
        if kernel.len() != rank || kernel.contains(&0) || stride.contains(&0) {
            return Err(arg_error(format!(
                "average pooling's gradient with kernel {kernel:?} and stride {stride:?}"
            )));
        }
        if divisor.is_some_and(|d| d <= 0) {
            return Err(arg_error(format!(
                "average pooling's gradient with divisor_override={divisor:?} (torch takes a positive one)"
            )));
        }
        let (values, sizes, unbatched) = self.pooled_operands(args, scope, false)?;
        let [grad] = values.as_slice() else {
            return Err(arg_error("average pooling's gradient without one".into()));
        };
        let channels = grad.shape()[0];
        let mut out = Vec::with_capacity(rank);
        for i in 0..rank {
            let o = swept(sizes[i], kernel[i], stride[i], pad[i], 1, ceil)
                .map_err(|e| arg_error(format!("average pooling's gradient for {sizes:?}: {e}")))?;
            out.push(o);
        }
        if grad.shape()[1..] != out[..] {
            return Err(arg_error(format!(
                "average pooling's gradient of per-sample {:?} for {out:?} windows of {sizes:?}",
                grad.shape()
            )));
        }
        // One divisor per output: a product of one factor per axis.
        let factors: Vec<Vec<(u64, u64)>> = (0..rank)
            .map(|i| {
                (0..out[i])
                    .map(|o| {
                        let (counted, inside) =
                            avg_window(o, sizes[i], kernel[i], stride[i], pad[i]);
                        (counted, inside.end.saturating_sub(inside.start))
                    })
                    .collect()
            })
            .collect();
        let mut divisors = Vec::with_capacity((out[0] * out[1]) as usize);
        for &(counted_h, inside_h) in &factors[0] {
            for &(counted_w, inside_w) in &factors[1] {
                let d = match divisor {
                    Some(d) => d as u64,
                    None if include_pad => counted_h * counted_w,
                    None => inside_h * inside_w,
                };
                if d == 0 {
                    return Err(arg_error(format!(
                        "average pooling's gradient for {sizes:?} has a window of no input position, which torch divides by 0"
                    )));
                }
                divisors.push(d as f32);
            }
        }
        let divisors = self
            .g
            .folded(&format!("{scope}.divisors"), out.clone(), &divisors)?;
        let scaled = self.g.div_constant(scope, grad, &divisors)?;
        let elements: u64 = kernel.iter().product();
        let dims: Vec<u64> = [channels, 1].into_iter().chain(kernel.clone()).collect();
        let ones = vec![1.0; (channels * elements) as usize];
        let ones = self.g.folded(&format!("{scope}.ones"), dims, &ones)?;
        let p = ConvTranspose {
            stride: stride.clone(),
            pad: vec![0; rank],
            output_padding: vec![0; rank],
            dilation: vec![1; rank],
            groups: channels,
        };
        // The sums over the padded input from its first padded position.
        let mut g = emit::conv_transpose(&mut self.g, scope, &scaled, &ones, None, &p)?;
        // Pads of the batch axis and each per-sample axis, begins then ends.
        let mut short = vec![0i64; 2 * (rank + 2)];
        for i in 0..rank {
            let reach = g.shape()[i + 1];
            let end = (pad[i] + sizes[i]).min(reach);
            if pad[i] > 0 || end < reach {
                g = self.g.slice(scope, &g, i + 1, pad[i]..end)?;
            }
            short[rank + 4 + i] = (sizes[i] - (end - pad[i])) as i64;
        }
        if short.iter().any(|&s| s != 0) {
            let shape: Vec<u64> = std::iter::once(channels).chain(sizes).collect();
            g = self.emit_pad(scope, &g, short, shape, "constant", 0.0);
        }
        self.bind_pooled_grad(node, scope, g, unbatched)
    }

    /// `_adaptive_avg_pool2d_backward`, as torch's `cpu_adaptive_avg_pool_backward`
    /// computes it: output `j` of an axis of `n` inputs averages inputs
    /// `⌊j·n/out⌋ .. ⌈(j+1)·n/out⌉`, so its gradient is divided by that window's length
    /// along each axis in turn (`Div` by constants) and each input position sums the
    /// outputs whose windows hold it, one axis at a time (a `Slice` and a `ReduceSum`
    /// each, then one `Concat`).
    pub(super) fn adaptive_avg_pool_backward(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let rank = 2;
        let (values, sizes, unbatched) = self.pooled_operands(args, scope, false)?;
        let [grad] = values.as_slice() else {
            return Err(arg_error("adaptive pooling's gradient without one".into()));
        };
        let out = grad.shape()[1..].to_vec();
        if out.contains(&0) || sizes.contains(&0) {
            return Err(arg_error(format!(
                "adaptive pooling's gradient of per-sample {:?} for an input of {sizes:?}",
                grad.shape()
            )));
        }
        let mut g = grad.clone();
        for i in 0..rank {
            let lengths: Vec<f32> = (0..out[i])
                .map(|j| {
                    let (start, end) = adaptive_window(j, sizes[i], out[i]);
                    (end - start) as f32
                })
                .collect();
            if lengths.iter().any(|&l| l != 1.0) {
                let mut dims = vec![1; rank - i];
                dims[0] = out[i];
                let lengths = self.g.folded(&format!("{scope}.lengths"), dims, &lengths)?;
                g = self.g.div_constant(scope, &g, &lengths)?;
            }
        }
        for i in 0..rank {
            let axis = i + 1;
            let (n, o) = (sizes[i], out[i]);
            let mut pieces = Vec::with_capacity(n as usize);
            for p in 0..n {
                let holding: Vec<u64> = (0..o)
                    .filter(|&j| {
                        let (start, end) = adaptive_window(j, n, o);
                        (start..end).contains(&p)
                    })
                    .collect();
                let (Some(&first), Some(&last)) = (holding.first(), holding.last()) else {
                    return Err(arg_error(format!(
                        "adaptive pooling's gradient: input {p} of {n} is in no window of {o}"
                    )));
                };
                let window = if last + 1 - first == o {
                    g.clone()
                } else {
                    self.g.slice(scope, &g, axis, first..last + 1)?
                };
                pieces.push(if first == last {
                    window
                } else {
                    self.g.reduce("ReduceSum", scope, &window, &[axis], true)?
                });
            }
            let refs: Vec<&Value> = pieces.iter().collect();
            g = self.g.concat(scope, &refs, axis)?;
        }
        self.bind_pooled_grad(node, scope, g, unbatched)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn avg_windows_count_padding_but_not_past_it() {
        // Input 5, kernel 3, stride 2, padding 1: windows start at −1, 1, 3.
        assert_eq!(avg_window(0, 5, 3, 2, 1), (3, 0..2));
        assert_eq!(avg_window(1, 5, 3, 2, 1), (3, 1..4));
        // The last window reaches 6 = 5 + 1 (padding) and no further.
        assert_eq!(avg_window(2, 5, 3, 2, 1), (3, 3..5));
        // A ceil_mode window past the padding counts only up to it.
        assert_eq!(avg_window(3, 5, 3, 2, 1), (1, 5..5));
    }
}
