//! Nearest, (bi/tri)linear and bicubic upsampling over one to three spatial axes: 2-D
//! nearest and bilinear as ONNX `Resize` with constant scales where that computes torch's
//! samples in onnxruntime and on ATC ([`super::interpolate::onnx_resize_agrees`]), the
//! others as one MatMul by a constant interpolation matrix per axis.

use crate::graph::Value;
use crate::OnnxError;
use ckpt_aten::eval;
use ckpt_aten::program::{Argument, Node};

use super::super::emit::{self, Interpolation};
use super::super::lower::Lowering;
use super::interpolate::{matrix, onnx_resize_agrees, Kernel};
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

/// Which `upsample_*` family a node is; `align_corners` is read for all but nearest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Upsample {
    Nearest,
    NearestExact,
    Linear,
    Cubic,
    /// torch's antialiased bilinear (or bicubic) filters.
    Antialiased {
        cubic: bool,
    },
}

impl Upsample {
    /// The interpolation kernel; `align_corners` means nothing to nearest.
    fn kernel(self, align_corners: bool) -> Kernel {
        match self {
            Upsample::Nearest => Kernel::Nearest,
            Upsample::NearestExact => Kernel::NearestExact,
            Upsample::Linear => Kernel::Linear { align_corners },
            Upsample::Cubic => Kernel::Cubic { align_corners },
            Upsample::Antialiased { cubic } => Kernel::Antialiased {
                cubic,
                align_corners,
            },
        }
    }
}

/// The per-axis scale arguments of the `.default` overloads, by spatial rank.
fn scale_names(rank: usize) -> &'static [&'static str] {
    match rank {
        1 => &["scales"],
        2 => &["scales_h", "scales_w"],
        _ => &["scales_d", "scales_h", "scales_w"],
    }
}

/// The scale factor the call gives for each of the `rank` spatial axes (`None` for all
/// when it gives output sizes): torch then maps sources by `1 / factor`, not by the ratio
/// of the sizes, wherever the product is not a whole size.
fn scale_factors(args: &Args<'_>, rank: usize) -> Result<Vec<Option<f64>>, OnnxError> {
    let factors: Vec<f64> = match args.optional_floats("scale_factors").or_shape()? {
        Some(f) => f.to_vec(),
        None => scale_names(rank)
            .iter()
            .filter_map(|k| match args.get(k) {
                Some(Argument::Float(f)) => Some(*f),
                _ => None,
            })
            .collect(),
    };
    match factors.len() {
        0 => Ok(vec![None; rank]),
        n if n == rank => Ok(factors.into_iter().map(Some).collect()),
        _ => Err(arg_error(format!(
            "scale factors {factors:?} for {rank} spatial axes"
        ))),
    }
}

/// Whether every factor gives its output size exactly (the sizes' ratio is then torch's
/// scale, which ONNX `Resize` can take).
fn exact(factors: &[Option<f64>], sizes: &[u64], out: &[u64]) -> bool {
    factors
        .iter()
        .zip(sizes.iter().zip(out))
        .all(|(f, (&i, &o))| f.is_none_or(|f| f * i as f64 == o as f64))
}

impl<'p> Lowering<'p, '_> {
    /// `upsample_<how>{rank}d` (`.vec` or `.default`): the output sizes are the recorded
    /// ones (torch's `⌊in · factor⌋` for scale factors), the sources torch's for the
    /// factors given.
    pub(super) fn upsample(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        rank: usize,
        how: Upsample,
    ) -> Result<(), OnnxError> {
        // The `.vec` overloads name the tensor `input`, the others `self`.
        let tensor = if args.get("input").is_some() {
            "input"
        } else {
            "self"
        };
        let input = args.tensor(tensor).or_shape()?;
        if self.is_constant(input) {
            return self.upsample_constant(node, args, input, rank, how);
        }
        let x = self.activation(input)?;
        let out_name = self.output_name(node, 0)?;
        let recorded = self.recorded_shape(out_name)?;
        let (Some((_, sizes)), Some((_, out))) = (x.shape().split_first(), recorded.split_first())
        else {
            return Err(arg_error(format!("upsampling to per-sample {recorded:?}")));
        };
        if sizes.len() != rank || out.len() != rank {
            return Err(arg_error(format!(
                "{rank}-D upsampling of per-sample {:?} to {recorded:?}",
                x.shape()
            )));
        }
        let factors = scale_factors(args, rank)?;
        let align_corners = args.bool_or("align_corners", false).or_shape()?;
        let kernel = how.kernel(align_corners);
        // ATC's `Resize` takes 4-D inputs only; elsewhere, on any axis where `Resize`
        // would read other samples than torch, and for factors that are not the sizes'
        // ratio, one MatMul per axis.
        let as_resize = rank == 2
            && exact(&factors, sizes, out)
            && sizes
                .iter()
                .zip(out)
                .all(|(&i, &o)| onnx_resize_agrees(i, o, kernel));
        let y = match kernel {
            Kernel::Nearest if as_resize => emit::resize(
                &mut self.g,
                scope,
                node.label(),
                &x,
                out,
                Interpolation::Nearest,
            )?,
            Kernel::Linear { align_corners } if as_resize => {
                let mode = Interpolation::Linear { align_corners };
                emit::resize(&mut self.g, scope, node.label(), &x, out, mode)?
            }
            _ => self.separable_resize(scope, node.label(), x, out, kernel, &factors)?,
        };
        self.bind(node, 0, y)
    }

    /// An upsampling of constant `input` (a position embedding resized to the input's
    /// grid): computed at export with the same interpolation matrices, one axis at a
    /// time, and bound like any folded constant.
    fn upsample_constant(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        input: &str,
        rank: usize,
        how: Upsample,
    ) -> Result<(), OnnxError> {
        let mut y = self.constant_tensor(input)?;
        let target: Vec<u64> = self
            .recorded_sizes(node, 0)?
            .iter()
            .map(|s| s.count)
            .collect();
        let first = y
            .rank()
            .checked_sub(rank)
            .filter(|_| target.len() == y.rank());
        let Some(first) = first else {
            return Err(arg_error(format!(
                "{rank}-D upsampling of a constant of {:?} to {target:?}",
                y.dims()
            )));
        };
        let factors = scale_factors(args, rank)?;
        let align_corners = args.bool_or("align_corners", false).or_shape()?;
        let kernel = how.kernel(align_corners);
        let last = y.rank() - 1;
        for (axis, &to) in target.iter().enumerate().skip(first) {
            let from = y.dims()[axis];
            let factor = factors[axis - first];
            if from == to && factor.is_none() {
                continue;
            }
            // `x · M` along the last axis is `linear` by `Mᵀ` (`[to, from]`).
            let m = matrix(from, to, kernel, factor);
            let mt: Vec<f32> = (0..to as usize)
                .flat_map(|j| (0..from as usize).map(move |i| (i, j)))
                .map(|(i, j)| m[i * to as usize + j])
                .collect();
            let weight = eval::Tensor::f32(vec![to, from], mt).map_err(arg_error)?;
            let mut order: Vec<usize> = (0..=last).collect();
            order.swap(axis, last);
            y = y
                .permute(&order)
                .and_then(|t| t.linear(&weight))
                .and_then(|t| t.permute(&order))
                .map_err(arg_error)?;
        }
        let uniform = self.uniform_axis(input).is_some();
        self.bind_computed(node, 0, y, uniform)
    }

    /// `x` `[C, spatial…]` resized to `[C, out…]` one spatial axis at a time, each a MatMul
    /// by its constant interpolation matrix (`<names>.axis<k>`), the axis moved last and
    /// back by Transposes: for resizes `Resize` cannot write with torch's meaning (cubic,
    /// 1-D and 3-D, ratios where onnxruntime's coordinates differ from torch's).
    fn separable_resize(
        &mut self,
        scope: &str,
        names: &str,
        x: Value,
        out: &[u64],
        kernel: Kernel,
        factors: &[Option<f64>],
    ) -> Result<Value, OnnxError> {
        let last = x.shape().len() - 1;
        let mut y = x;
        for (k, &size) in out.iter().enumerate() {
            let axis = k + 1;
            let input = y.shape()[axis];
            if input == size && factors[k].is_none() {
                continue;
            }
            let m = self.g.weight(
                &format!("{names}.axis{k}"),
                vec![input, size],
                &matrix(input, size, kernel, factors[k]),
            )?;
            let mut swap: Vec<usize> = (0..=last).collect();
            swap.swap(axis, last);
            y = if axis == last {
                self.g.matmul(scope, &y, &m)?
            } else {
                let moved = self.g.transpose(scope, &y, &swap)?;
                let resized = self.g.matmul(scope, &moved, &m)?;
                self.g.transpose(scope, &resized, &swap)?
            };
        }
        Ok(y)
    }
}
