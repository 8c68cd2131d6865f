//! Max, average and adaptive average pooling over one to three spatial axes, and `mean`
//! over dimensions.

use crate::aten::program::{Argument, Node};
use crate::onnx::ops::PoolNd;
use crate::onnx::OnnxError;

use super::super::lower::Lowering;
use super::reduce::reduction_axes;
use super::{arg_error, OrShape};
use crate::aten::args::Args;

/// The pooling window of a `max_pool*d`/`avg_pool*d` node with `rank` spatial axes.
fn window(args: &Args<'_>, rank: usize, op: &str) -> Result<PoolNd, OnnxError> {
    let kernel = args.sizes_or("kernel_size", rank, &[]).or_shape()?;
    if kernel.len() != rank || kernel.contains(&0) {
        return Err(arg_error(format!("{op} without a kernel size")));
    }
    let kernel_i64: Vec<i64> = kernel.iter().map(|&k| k as i64).collect();
    Ok(PoolNd {
        stride: args.sizes_or("stride", rank, &kernel_i64).or_shape()?,
        pad: args.sizes_or("padding", rank, &[0]).or_shape()?,
        ceil: args.bool_or("ceil_mode", false).or_shape()?,
        kernel,
    })
}

impl<'p> Lowering<'p, '_> {
    /// `max_pool1d/2d/3d` (and `_with_indices`, whose indices are never produced) over
    /// `rank` spatial axes.
    pub(super) fn max_pool(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        rank: usize,
    ) -> Result<(), OnnxError> {
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let p = window(args, rank, "max pooling")?;
        if args.sizes_or("dilation", rank, &[1]).or_shape()? != vec![1; rank] {
            return Err(arg_error("dilated max pooling is not exported".into()));
        }
        let y = self.g.max_pool_nd(scope, &x, &p)?;
        self.bind(node, 0, y)?;
        self.unproduced_from(node, 1);
        Ok(())
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
        if args.optional_int("divisor_override").or_shape()?.is_some() {
            return Err(arg_error(
                "average pooling with divisor_override is not exported".into(),
            ));
        }
        let include_pad = args.bool_or("count_include_pad", true).or_shape()?;
        let y = self.g.average_pool_nd(scope, &x, &p, include_pad)?;
        self.bind(node, 0, y)
    }

    /// `adaptive_avg_pool1d/2d/3d`: nothing when the size already matches,
    /// GlobalAveragePool to all 1s, one AveragePool when each output size divides the
    /// input's.
    pub(super) fn adaptive_avg_pool(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        rank: usize,
    ) -> Result<(), OnnxError> {
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let out = args.sizes_or("output_size", rank, &[]).or_shape()?;
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
            return Err(arg_error(format!(
                "adaptive average pooling to {out:?} of a {sizes:?} map has uneven windows, which no ATC-safe op computes; export at an input size whose feature map is a multiple of {out:?}"
            )));
        };
        self.bind(node, 0, y)
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
        if self.tensor(input)?.batch_axis() != 0 {
            return self.reduce_moved_batch(node, args, scope, "ReduceMean");
        }
        let x = self.activation(input)?;
        let axes = reduction_axes(args, &x)?;
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
