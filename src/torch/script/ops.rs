//! The `torch.*` calls that traced code makes and the import reads. `torch.<name>(…)` is
//! the aten overload listed here whose op is `<name>`; its argument names, positional and
//! keyword-only, come from the aten schema table ([`crate::aten::schema`]), so a
//! positional TorchScript call becomes a call by schema name, as torch.export writes it.

use crate::aten::schema::{self, Schema};

/// `torch._convolution`. [`super::convert`] turns it into `conv{1,2,3}d` or
/// `conv_transpose{1,2,3}d` after checking the arguments those do not have.
pub const CONVOLUTION: &str = "_convolution.default";

/// `nn.MultiheadAttention`'s fused kernel, which a trace records on torch's fast path (eval
/// mode under `torch.no_grad()`). It returns (output, attention weights); the conversion
/// gives it both outputs.
pub const MULTI_HEAD_ATTENTION: &str = "_native_multi_head_attention.default";

/// `nn.LSTM`'s kernel. It returns (output, h_n, c_n); the conversion gives it the three
/// outputs, the final states with the batch second.
pub const LSTM: &str = "lstm.input";

/// `nn.GRU`'s kernel. It returns (output, h_n), like [`LSTM`].
pub const GRU: &str = "gru.input";

/// Every overload read, besides [`CONVOLUTION`], [`MULTI_HEAD_ATTENTION`], [`LSTM`] and
/// [`GRU`].
const TRACED: &[&str] = &[
    "conv1d.default",
    "conv2d.default",
    "conv3d.default",
    "conv_transpose1d.default",
    "conv_transpose2d.input",
    "conv_transpose3d.input",
    "batch_norm.default",
    "linear.default",
    "max_pool1d.default",
    "max_pool2d.default",
    "max_pool3d.default",
    "avg_pool1d.default",
    "avg_pool2d.default",
    "avg_pool3d.default",
    "adaptive_avg_pool1d.default",
    "adaptive_avg_pool2d.default",
    "adaptive_avg_pool3d.default",
    "mean.dim",
    "softmax.int",
    "sum.dim_IntList",
    "var.dim",
    "std.dim",
    "amax.default",
    "amin.default",
    // One to three positional numbers; [`super::convert`] picks the overload by count.
    "arange.start_step",
    "zeros.default",
    "ones.default",
    "full.default",
    "scalar_tensor.default",
    "gelu.default",
    "layer_norm.default",
    "log_softmax.int",
    "exp.default",
    "log.default",
    "sqrt.default",
    "rsqrt.default",
    "floor.default",
    "ceil.default",
    "round.default",
    // A number as `other` is read the same way (the `.Scalar` overload).
    "remainder.Tensor",
    "addcmul.default",
    "addcdiv.default",
    "neg.default",
    "abs.default",
    "reciprocal.default",
    "pow.Tensor_Scalar",
    "clamp.default",
    "clamp_min.default",
    "clamp_max.default",
    "maximum.default",
    "minimum.default",
    "rsub.Scalar",
    "elu.default",
    "leaky_relu.default",
    "leaky_relu_.default",
    "softplus.default",
    "mish.default",
    "prelu.default",
    "constant_pad_nd.default",
    "pad.default",
    "reflection_pad2d.default",
    "replication_pad2d.default",
    "instance_norm.default",
    "group_norm.default",
    "narrow.default",
    "index_select.default",
    "relu6.default",
    "relu.default",
    "relu_.default",
    "sigmoid.default",
    "sigmoid_.default",
    "tanh.default",
    "tanh_.default",
    "silu.default",
    "silu_.default",
    "hardswish.default",
    "hardswish_.default",
    "hardsigmoid.default",
    "hardsigmoid_.default",
    "hardtanh.default",
    "hardtanh_.default",
    "add.Tensor",
    "add_.Tensor",
    "sub.Tensor",
    "mul.Tensor",
    "mul_.Tensor",
    "div.Tensor",
    "cat.default",
    "stack.default",
    "flatten.using_ints",
    "view.default",
    "reshape.default",
    "dropout.default",
    "dropout_.default",
    "contiguous.default",
    "clone.default",
    "detach.default",
    "slice.Tensor",
    "permute.default",
    "reshape_as.default",
    "index.Tensor",
    "matmul.default",
    "select.int",
    "unsqueeze.default",
    // `torch.squeeze(x, d)`; a call without a dimension is refused by its shape rule.
    "squeeze.dim",
    "expand.default",
    "unflatten.int",
    "chunk.default",
    "split.Tensor",
    "split_with_sizes.default",
    "unbind.int",
    "transpose.int",
    "_transformer_encoder_layer_fwd.default",
    "upsample_nearest1d.vec",
    "upsample_nearest2d.vec",
    "upsample_nearest3d.vec",
    "upsample_linear1d.vec",
    "upsample_bilinear2d.vec",
    "upsample_trilinear3d.vec",
    "upsample_bicubic2d.vec",
    "scaled_dot_product_attention.default",
    // Integer and bool tensors (token ids, masks). A comparison's or `masked_fill`'s
    // overload is for a tensor operand; [`super::convert`] takes the `.Scalar` one when the
    // operand is a number.
    "embedding.default",
    "eq.Tensor",
    "ne.Tensor",
    "lt.Tensor",
    "le.Tensor",
    "gt.Tensor",
    "ge.Tensor",
    "logical_not.default",
    "logical_and.default",
    "logical_or.default",
    "bitwise_not.default",
    "__and__.Tensor",
    "__or__.Tensor",
    "where.self",
    "masked_fill.Tensor",
    "to.dtype",
    "argmax.default",
    "argmin.default",
];

/// Every overload whose calls become program nodes of its own (all but `CONVOLUTION`,
/// which becomes a `conv*` node).
pub fn targets() -> impl Iterator<Item = &'static str> {
    [MULTI_HEAD_ATTENTION, LSTM, GRU]
        .into_iter()
        .chain(TRACED.iter().copied())
}

/// The schema `torch.<name>` is read with.
pub fn lookup(name: &str) -> Option<&'static Schema> {
    std::iter::once(CONVOLUTION)
        .chain(targets())
        .filter_map(schema::lookup)
        .find(|s| s.name() == name)
}

/// Every op name read, for the unsupported-op error.
pub fn names() -> Vec<&'static str> {
    std::iter::once(CONVOLUTION)
        .chain(targets())
        .filter_map(schema::lookup)
        .map(Schema::name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_has_an_aten_schema_and_one_overload() {
        for target in std::iter::once(CONVOLUTION).chain(targets()) {
            assert!(schema::lookup(target).is_some(), "{target} has no schema");
        }
        assert_eq!(lookup("mean").map(|s| s.target), Some("mean.dim"));
        assert_eq!(lookup("_convolution").map(|s| s.args.len()), Some(13));
        assert!(lookup("grid_sampler").is_none());
        let mut names = names();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "an op is listed twice");
    }
}
