//! The `torch.fft` transforms whose result is real ([`ckpt_aten::fourier`]): a
//! complex-to-real transform of a real input as MatMuls by its constant cos/sin matrices,
//! one axis at a time (the axis moved last and back by Transposes), the real and imaginary
//! parts carried as two activations; `fftshift`/`ifftshift` as rolls. Every axis
//! transformed or rolled is a per-sample one: an FFT along the batch mixes samples and is
//! refused.

use crate::graph::Weight;
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::fourier::{self, Pass};
use ckpt_aten::program::Node;

use super::super::lower::Lowering;
use super::super::tensor::Tensor;
use super::{arg_error, OrShape};

impl Lowering<'_, '_> {
    /// `x` times the constant `[input, output]` matrix `w` along torch axis `axis`.
    fn times_along(
        &mut self,
        scope: &str,
        x: &Tensor,
        axis: usize,
        w: &Weight,
    ) -> Result<Tensor, OnnxError> {
        let last = x.rank() - 1;
        let mut swap: Vec<usize> = (0..=last).collect();
        swap.swap(axis, last);
        let moved = x.clone().transposed(&mut self.g, scope, &swap)?;
        let product = self.g.matmul(scope, moved.value(), w)?;
        moved
            .with_value(product)?
            .transposed(&mut self.g, scope, &swap)
    }

    /// Matrix `m` of a pass as a weight named `name`.
    fn pass_weight(&mut self, name: &str, p: &Pass, m: &[f64]) -> Result<Weight, OnnxError> {
        let values: Vec<f32> = m.iter().map(|&v| v as f32).collect();
        self.g
            .weight(name, vec![p.input as u64, p.output as u64], &values)
    }

    fn sum(&mut self, scope: &str, a: &Tensor, b: &Tensor) -> Result<Tensor, OnnxError> {
        let value = self.g.add(scope, a.value(), b.value())?;
        a.with_value(value)
    }

    /// `irfft`/`irfft2`/`irfftn`/`hfft`/`hfft2`/`hfftn` of a real activation.
    pub(super) fn real_fft(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let op = super::registry::aten_name(node);
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        for axis in fourier::transform_axes(node, op, x.rank()).map_err(arg_error)? {
            x.sample_axis(axis, op)?;
        }
        let sizes: Vec<u64> = x.sizes().iter().map(|s| s.count).collect();
        let passes = fourier::real_transform(node, op, &sizes).map_err(arg_error)?;
        let label = node.label();
        let (mut re, mut im): (Tensor, Option<Tensor>) = (x, None);
        for (k, p) in passes.iter().enumerate() {
            let axis = p.axis;
            let last = k + 1 == passes.len();
            let cos = self.pass_weight(&format!("{label}.fft{k}.cos"), p, &p.cos)?;
            let rc = self.times_along(scope, &re, axis, &cos)?;
            let im_next = if last {
                None
            } else {
                let sin = self.pass_weight(&format!("{label}.fft{k}.sin"), p, &p.sin)?;
                let rs = self.times_along(scope, &re, axis, &sin)?;
                Some(match &im {
                    Some(i) => {
                        let ic = self.times_along(scope, i, axis, &cos)?;
                        self.sum(scope, &rs, &ic)?
                    }
                    None => rs,
                })
            };
            re = match &im {
                Some(i) => {
                    let negated: Vec<f64> = p.sin.iter().map(|v| -v).collect();
                    let negsin =
                        self.pass_weight(&format!("{label}.fft{k}.negsin"), p, &negated)?;
                    let is = self.times_along(scope, i, axis, &negsin)?;
                    self.sum(scope, &rc, &is)?
                }
                None => rc,
            };
            im = im_next;
        }
        self.bind_tensor(node, 0, re)
    }

    /// `fftshift`/`ifftshift`: rolls by half of each size.
    pub(super) fn fft_shift(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let x = self.tensor(args.tensor("self").or_shape()?)?;
        let sizes: Vec<u64> = x.sizes().iter().map(|s| s.count).collect();
        let op = super::registry::aten_name(node);
        let shifts = fourier::shifts(node, op, &sizes).map_err(arg_error)?;
        let y = self.rolled(scope, x, &shifts, op)?;
        self.bind_tensor(node, 0, y)
    }
}
