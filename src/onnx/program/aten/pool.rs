//! Max, average and adaptive average pooling, and `mean` over dimensions.

use crate::onnx::ops::Pool2d;
use crate::onnx::OnnxError;
use crate::torch::pt2::schema::{Argument, Node};

use super::super::args::Args;
use super::super::lower::Lowering;
use super::reduce::reduction_axes;
use super::{arg_error, pair, reject_extra, OrShape};

impl<'p> Lowering<'p, '_> {
    pub(super) fn max_pool(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(
            args,
            &[
                "self",
                "kernel_size",
                "stride",
                "padding",
                "dilation",
                "ceil_mode",
            ],
        )?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let kernel = args.sizes_or("kernel_size", 2, &[]).or_shape()?;
        if kernel.len() != 2 {
            return Err(arg_error("max_pool2d without a kernel size".into()));
        }
        let kernel_i64: Vec<i64> = kernel.iter().map(|&k| k as i64).collect();
        if args.sizes_or("dilation", 2, &[1]).or_shape()? != [1, 1] {
            return Err(arg_error("dilated max pooling is not exported".into()));
        }
        let p = Pool2d {
            kernel: pair(kernel)?,
            stride: pair(args.sizes_or("stride", 2, &kernel_i64).or_shape()?)?,
            pad: pair(args.sizes_or("padding", 2, &[0]).or_shape()?)?,
            ceil: args.bool_or("ceil_mode", false).or_shape()?,
        };
        let y = self.g.max_pool(scope, &x, p)?;
        self.bind(node, 0, y)?;
        self.unproduced_from(node, 1);
        Ok(())
    }

    pub(super) fn avg_pool(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(
            args,
            &[
                "self",
                "kernel_size",
                "stride",
                "padding",
                "ceil_mode",
                "count_include_pad",
                "divisor_override",
            ],
        )?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let kernel = args.sizes_or("kernel_size", 2, &[]).or_shape()?;
        if kernel.len() != 2 {
            return Err(arg_error("avg_pool2d without a kernel size".into()));
        }
        let kernel_i64: Vec<i64> = kernel.iter().map(|&k| k as i64).collect();
        let pad = pair(args.sizes_or("padding", 2, &[0]).or_shape()?)?;
        let include_pad = args.bool_or("count_include_pad", true).or_shape()?;
        if args.optional_int("divisor_override").or_shape()?.is_some()
            || args.bool_or("ceil_mode", false).or_shape()?
            || (!include_pad && pad != [0, 0])
        {
            return Err(arg_error(
                "avg_pool2d with ceil_mode, divisor_override or count_include_pad=False over padding is not exported".into(),
            ));
        }
        let p = Pool2d {
            kernel: pair(kernel)?,
            stride: pair(args.sizes_or("stride", 2, &kernel_i64).or_shape()?)?,
            pad,
            ceil: false,
        };
        let y = self.g.average_pool(scope, &x, p)?;
        self.bind(node, 0, y)
    }

    /// `AdaptiveAvgPool2d`: nothing when the size already matches, GlobalAveragePool to
    /// 1×1, one AveragePool when each output size divides the input's.
    pub(super) fn adaptive_avg_pool(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "output_size"])?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let out = pair(args.sizes_or("output_size", 2, &[]).or_shape()?)?;
        let &[_, h, w] = x.shape() else {
            return Err(arg_error(format!(
                "adaptive_avg_pool2d of per-sample {:?}",
                x.shape()
            )));
        };
        let y = if [h, w] == out {
            x
        } else if out == [1, 1] {
            self.g.global_average_pool(scope, &x)?
        } else if out[0] > 0 && out[1] > 0 && h % out[0] == 0 && w % out[1] == 0 {
            let k = [h / out[0], w / out[1]];
            let p = Pool2d {
                kernel: k,
                stride: k,
                pad: [0, 0],
                ceil: false,
            };
            self.g.average_pool(scope, &x, p)?
        } else {
            return Err(arg_error(format!(
                "AdaptiveAvgPool2d({out:?}) on a {h}×{w} map has uneven windows, which no ATC-safe op computes; export at an input size whose feature map is a multiple of {out:?}"
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
        reject_extra(args, &["self", "dim", "keepdim", "dtype"])?;
        if !matches!(args.get("dtype"), None | Some(Argument::None)) {
            return Err(arg_error("mean with a dtype is not exported".into()));
        }
        let x = self.activation(args.tensor("self").or_shape()?)?;
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
