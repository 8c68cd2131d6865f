//! `convolution_backward`'s gradient of the input, for a stored weight: the transpose of
//! the convolution's linear map, as torch computes it (`convolution_backward` in
//! `torch/_decomp/decompositions.py` and the kernels it names): a transposed convolution
//! for a convolution, a convolution for a transposed one. The gradients of the weight and
//! bias sum over every sample and are refused when asked for and read.

use crate::ops::ConvNd;
use crate::OnnxError;
use ckpt_aten::args::Args;
use ckpt_aten::program::Node;

use super::super::emit::{self, ConvTranspose};
use super::super::lower::Lowering;
use super::norm_backward::output_mask;
use super::{arg_error, OrShape};

impl Lowering<'_, '_> {
    /// `convolution_backward`'s first output, by the weight `[O, C/groups, k…]` of the
    /// forward convolution: `ConvTranspose` of the output gradient with the forward's
    /// stride, padding, dilation and groups, and as `output_padding` the input positions
    /// the forward's last window left unread (`size − ((out − 1)·s − 2p + d·(k − 1) + 1)`,
    /// torch's rule), so that the gradient has the input's size; for a transposed
    /// forward (weight `[C, O/groups, k…]`), the `Conv` of the output gradient by that
    /// weight with the same stride, padding, dilation and groups.
    pub(super) fn convolution_backward(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let mask = output_mask(args)?;
        self.refuse_parameter_grads(node, "convolution_backward", mask)?;
        if !mask[0] {
            self.unproduced_output(node, 0);
            return Ok(());
        }
        let grad = self.activation(args.tensor("grad_output").or_shape()?)?;
        let input = self.activation(args.tensor("input").or_shape()?)?;
        let weight = self.constant(args.tensor("weight").or_shape()?)?;
        let rank = self.conv_rank(&weight)?;
        let stride = args.sizes("stride", rank).or_shape()?;
        let pad = args.sizes("padding", rank).or_shape()?;
        let dilation = args.sizes("dilation", rank).or_shape()?;
        let groups = Self::groups(args)?;
        let w = self.weight(&weight)?;
        let (sizes, out) = match (input.shape().split_first(), grad.shape().split_first()) {
            (Some((_, sizes)), Some((_, out))) if sizes.len() == rank && out.len() == rank => {
                (sizes.to_vec(), out.to_vec())
            }
            _ => {
                return Err(arg_error(format!(
                    "convolution_backward of a gradient of per-sample {:?} for an input of {:?}",
                    grad.shape(),
                    input.shape()
                )))
            }
        };
        let y = if args.bool("transposed").or_shape()? {
            let p = ConvNd {
                stride,
                pad,
                dilation,
                groups,
            };
            self.g.conv_nd(scope, &grad, &w, None, &p)?
        } else {
            let kernel = &w.dims()[2..];
            let output_padding = (0..rank)
                .map(|i| {
                    let reach = (out[i].checked_sub(1)? * stride[i]
                        + dilation[i] * kernel[i].checked_sub(1)?
                        + 1)
                    .checked_sub(2 * pad[i])?;
                    sizes[i].checked_sub(reach)
                })
                .collect::<Option<Vec<u64>>>()
                .ok_or_else(|| {
                    arg_error(format!(
                        "convolution_backward of {out:?} outputs for an input of {sizes:?}: the windows reach past the input"
                    ))
                })?;
            let p = ConvTranspose {
                stride,
                pad,
                output_padding,
                dilation,
                groups,
            };
            emit::conv_transpose(&mut self.g, scope, &grad, &w, None, &p)?
        };
        if y.shape() != input.shape() {
            return Err(arg_error(format!(
                "convolution_backward gives per-sample {:?} for an input of {:?}",
                y.shape(),
                input.shape()
            )));
        }
        self.bind(node, 0, y)
    }
}
