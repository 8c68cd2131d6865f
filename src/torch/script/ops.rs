//! The `torch.*` ops that traced code calls and the import understands: each with the aten
//! overload it is and that overload's argument names (from `native_functions.yaml`), so a
//! positional TorchScript call becomes a call by schema name, as torch.export writes it.

/// One op: `torch.<name>(positional…, *, keyword…)` is aten `<overload>`.
pub struct OpSchema {
    /// The name after `torch.`.
    pub name: &'static str,
    /// The aten overload (`relu.default`), as in `torch.ops.aten.<overload>`.
    pub overload: &'static str,
    /// Positional argument names in schema order.
    pub args: &'static [&'static str],
    /// Keyword-only argument names.
    pub kwargs: &'static [&'static str],
}

impl OpSchema {
    /// The schema as a user reads it: `max_pool2d(self, kernel_size, stride, …)`.
    pub fn signature(&self) -> String {
        let mut names: Vec<String> = self.args.iter().map(|a| (*a).to_owned()).collect();
        if !self.kwargs.is_empty() {
            names.push("*".into());
            names.extend(self.kwargs.iter().map(|a| (*a).to_owned()));
        }
        format!("torch.{}({})", self.name, names.join(", "))
    }
}

const fn op(
    name: &'static str,
    overload: &'static str,
    args: &'static [&'static str],
    kwargs: &'static [&'static str],
) -> OpSchema {
    OpSchema {
        name,
        overload,
        args,
        kwargs,
    }
}

const SELF: &[&str] = &["self"];
const BINARY: &[&str] = &["self", "other"];
const ALPHA: &[&str] = &["alpha"];
const MEMORY_FORMAT: &[&str] = &["memory_format"];
const NONE: &[&str] = &[];
/// `conv1d/2d/3d`'s arguments.
const CONV: &[&str] = &[
    "input", "weight", "bias", "stride", "padding", "dilation", "groups",
];
/// `conv_transpose1d/2d/3d`'s arguments.
const CONV_TRANSPOSE: &[&str] = &[
    "input",
    "weight",
    "bias",
    "stride",
    "padding",
    "output_padding",
    "groups",
    "dilation",
];
/// `max_pool1d/2d/3d`'s arguments.
const MAX_POOL: &[&str] = &[
    "self",
    "kernel_size",
    "stride",
    "padding",
    "dilation",
    "ceil_mode",
];
/// `avg_pool1d`'s arguments.
const AVG_POOL_1D: &[&str] = &[
    "self",
    "kernel_size",
    "stride",
    "padding",
    "ceil_mode",
    "count_include_pad",
];
/// `avg_pool2d/3d`'s arguments.
const AVG_POOL: &[&str] = &[
    "self",
    "kernel_size",
    "stride",
    "padding",
    "ceil_mode",
    "count_include_pad",
    "divisor_override",
];
const ADAPTIVE: &[&str] = &["self", "output_size"];
const ADD_SCALED: &[&str] = &["self", "tensor1", "tensor2"];
/// `upsample_nearest*d.vec`'s arguments.
const NEAREST: &[&str] = &["input", "output_size", "scale_factors"];
/// `upsample_linear1d`/`bilinear2d`/`trilinear3d`/`bicubic2d.vec`'s arguments.
const INTERPOLATED: &[&str] = &["input", "output_size", "align_corners", "scale_factors"];
/// A factory's keyword arguments (placement; `dtype` is read, the rest do not change values).
const FACTORY: &[&str] = &["dtype", "layout", "device", "pin_memory"];

/// `torch._convolution`'s schema. [`super::convert`] turns it into `conv{1,2,3}d` or
/// `conv_transpose{1,2,3}d` after checking the arguments those do not have.
pub const CONVOLUTION: OpSchema = op(
    "_convolution",
    "_convolution.default",
    &[
        "input",
        "weight",
        "bias",
        "stride",
        "padding",
        "dilation",
        "transposed",
        "output_padding",
        "groups",
        "benchmark",
        "deterministic",
        "cudnn_enabled",
        "allow_tf32",
    ],
    NONE,
);

/// `nn.MultiheadAttention`'s fused kernel, which a trace records on torch's fast path (eval
/// mode under `torch.no_grad()`). It returns (output, attention weights); the conversion
/// gives it both outputs.
pub const MULTI_HEAD_ATTENTION: OpSchema = op(
    "_native_multi_head_attention",
    "_native_multi_head_attention.default",
    &[
        "query",
        "key",
        "value",
        "embed_dim",
        "num_head",
        "qkv_weight",
        "qkv_bias",
        "proj_weight",
        "proj_bias",
        "mask",
        "need_weights",
        "average_attn_weights",
        "mask_type",
    ],
    NONE,
);

/// The arguments of `torch.lstm`/`torch.gru` as a layer with a batched input calls them.
const RECURRENT: &[&str] = &[
    "input",
    "hx",
    "params",
    "has_biases",
    "num_layers",
    "dropout",
    "train",
    "bidirectional",
    "batch_first",
];

/// `nn.LSTM`'s kernel. It returns (output, h_n, c_n); the conversion gives it the three
/// outputs, the final states with the batch second.
pub const LSTM: OpSchema = op("lstm", "lstm.input", RECURRENT, NONE);

/// `nn.GRU`'s kernel. It returns (output, h_n), like [`LSTM`].
pub const GRU: OpSchema = op("gru", "gru.input", RECURRENT, NONE);

/// Every op read, besides [`CONVOLUTION`], [`MULTI_HEAD_ATTENTION`], [`LSTM`] and [`GRU`].
pub const OPS: &[OpSchema] = &[
    op("conv1d", "conv1d.default", CONV, NONE),
    op("conv2d", "conv2d.default", CONV, NONE),
    op("conv3d", "conv3d.default", CONV, NONE),
    op(
        "conv_transpose1d",
        "conv_transpose1d.default",
        CONV_TRANSPOSE,
        NONE,
    ),
    op(
        "conv_transpose2d",
        "conv_transpose2d.input",
        CONV_TRANSPOSE,
        NONE,
    ),
    op(
        "conv_transpose3d",
        "conv_transpose3d.input",
        CONV_TRANSPOSE,
        NONE,
    ),
    op(
        "batch_norm",
        "batch_norm.default",
        &[
            "input",
            "weight",
            "bias",
            "running_mean",
            "running_var",
            "training",
            "momentum",
            "eps",
            "cudnn_enabled",
        ],
        NONE,
    ),
    op(
        "linear",
        "linear.default",
        &["input", "weight", "bias"],
        NONE,
    ),
    op("max_pool1d", "max_pool1d.default", MAX_POOL, NONE),
    op("max_pool2d", "max_pool2d.default", MAX_POOL, NONE),
    op("max_pool3d", "max_pool3d.default", MAX_POOL, NONE),
    op("avg_pool1d", "avg_pool1d.default", AVG_POOL_1D, NONE),
    op("avg_pool2d", "avg_pool2d.default", AVG_POOL, NONE),
    op("avg_pool3d", "avg_pool3d.default", AVG_POOL, NONE),
    op(
        "adaptive_avg_pool1d",
        "adaptive_avg_pool1d.default",
        ADAPTIVE,
        NONE,
    ),
    op(
        "adaptive_avg_pool2d",
        "adaptive_avg_pool2d.default",
        ADAPTIVE,
        NONE,
    ),
    op(
        "adaptive_avg_pool3d",
        "adaptive_avg_pool3d.default",
        ADAPTIVE,
        NONE,
    ),
    op("mean", "mean.dim", &["self", "dim", "keepdim"], &["dtype"]),
    op("softmax", "softmax.int", &["self", "dim", "dtype"], NONE),
    op(
        "sum",
        "sum.dim_IntList",
        &["self", "dim", "keepdim"],
        &["dtype"],
    ),
    op(
        "var",
        "var.dim",
        &["self", "dim", "unbiased", "keepdim"],
        NONE,
    ),
    op(
        "std",
        "std.dim",
        &["self", "dim", "unbiased", "keepdim"],
        NONE,
    ),
    op("amax", "amax.default", &["self", "dim", "keepdim"], NONE),
    op("amin", "amin.default", &["self", "dim", "keepdim"], NONE),
    // One to three positional numbers; [`super::convert`] picks the overload by count.
    op(
        "arange",
        "arange.start_step",
        &["start", "end", "step"],
        FACTORY,
    ),
    op("zeros", "zeros.default", &["size"], FACTORY),
    op("ones", "ones.default", &["size"], FACTORY),
    op("full", "full.default", &["size", "fill_value"], FACTORY),
    op("scalar_tensor", "scalar_tensor.default", &["s"], FACTORY),
    op("gelu", "gelu.default", SELF, &["approximate"]),
    op(
        "layer_norm",
        "layer_norm.default",
        &[
            "input",
            "normalized_shape",
            "weight",
            "bias",
            "eps",
            "cudnn_enable",
        ],
        NONE,
    ),
    op(
        "log_softmax",
        "log_softmax.int",
        &["self", "dim", "dtype"],
        NONE,
    ),
    op("exp", "exp.default", SELF, NONE),
    op("log", "log.default", SELF, NONE),
    op("sqrt", "sqrt.default", SELF, NONE),
    op("rsqrt", "rsqrt.default", SELF, NONE),
    op("floor", "floor.default", SELF, NONE),
    op("ceil", "ceil.default", SELF, NONE),
    op("round", "round.default", SELF, NONE),
    // A number as `other` is read the same way (the `.Scalar` overload).
    op("remainder", "remainder.Tensor", BINARY, NONE),
    op("addcmul", "addcmul.default", ADD_SCALED, &["value"]),
    op("addcdiv", "addcdiv.default", ADD_SCALED, &["value"]),
    op("neg", "neg.default", SELF, NONE),
    op("abs", "abs.default", SELF, NONE),
    op("reciprocal", "reciprocal.default", SELF, NONE),
    op("pow", "pow.Tensor_Scalar", &["self", "exponent"], NONE),
    op("clamp", "clamp.default", &["self", "min", "max"], NONE),
    op("clamp_min", "clamp_min.default", &["self", "min"], NONE),
    op("clamp_max", "clamp_max.default", &["self", "max"], NONE),
    op("maximum", "maximum.default", BINARY, NONE),
    op("minimum", "minimum.default", BINARY, NONE),
    op("rsub", "rsub.Scalar", BINARY, ALPHA),
    op(
        "elu",
        "elu.default",
        &["self", "alpha", "scale", "input_scale"],
        NONE,
    ),
    op(
        "leaky_relu",
        "leaky_relu.default",
        &["self", "negative_slope"],
        NONE,
    ),
    op(
        "leaky_relu_",
        "leaky_relu_.default",
        &["self", "negative_slope"],
        NONE,
    ),
    op(
        "softplus",
        "softplus.default",
        &["self", "beta", "threshold"],
        NONE,
    ),
    op("mish", "mish.default", SELF, NONE),
    op("prelu", "prelu.default", &["self", "weight"], NONE),
    op(
        "constant_pad_nd",
        "constant_pad_nd.default",
        &["self", "pad", "value"],
        NONE,
    ),
    op(
        "pad",
        "pad.default",
        &["self", "pad", "mode", "value"],
        NONE,
    ),
    op(
        "reflection_pad2d",
        "reflection_pad2d.default",
        &["self", "padding"],
        NONE,
    ),
    op(
        "replication_pad2d",
        "replication_pad2d.default",
        &["self", "padding"],
        NONE,
    ),
    op(
        "instance_norm",
        "instance_norm.default",
        &[
            "input",
            "weight",
            "bias",
            "running_mean",
            "running_var",
            "use_input_stats",
            "momentum",
            "eps",
            "cudnn_enabled",
        ],
        NONE,
    ),
    op(
        "group_norm",
        "group_norm.default",
        &[
            "input",
            "num_groups",
            "weight",
            "bias",
            "eps",
            "cudnn_enabled",
        ],
        NONE,
    ),
    op(
        "narrow",
        "narrow.default",
        &["self", "dim", "start", "length"],
        NONE,
    ),
    op(
        "index_select",
        "index_select.default",
        &["self", "dim", "index"],
        NONE,
    ),
    op("relu6", "relu6.default", SELF, NONE),
    op("relu", "relu.default", SELF, NONE),
    op("relu_", "relu_.default", SELF, NONE),
    op("sigmoid", "sigmoid.default", SELF, NONE),
    op("sigmoid_", "sigmoid_.default", SELF, NONE),
    op("tanh", "tanh.default", SELF, NONE),
    op("tanh_", "tanh_.default", SELF, NONE),
    op("silu", "silu.default", SELF, NONE),
    op("silu_", "silu_.default", SELF, NONE),
    op("hardswish", "hardswish.default", SELF, NONE),
    op("hardswish_", "hardswish_.default", SELF, NONE),
    op("hardsigmoid", "hardsigmoid.default", SELF, NONE),
    op("hardsigmoid_", "hardsigmoid_.default", SELF, NONE),
    op(
        "hardtanh",
        "hardtanh.default",
        &["self", "min_val", "max_val"],
        NONE,
    ),
    op(
        "hardtanh_",
        "hardtanh_.default",
        &["self", "min_val", "max_val"],
        NONE,
    ),
    op("add", "add.Tensor", BINARY, ALPHA),
    op("add_", "add_.Tensor", BINARY, ALPHA),
    op("sub", "sub.Tensor", BINARY, ALPHA),
    op("mul", "mul.Tensor", BINARY, NONE),
    op("mul_", "mul_.Tensor", BINARY, NONE),
    op("div", "div.Tensor", BINARY, NONE),
    op("cat", "cat.default", &["tensors", "dim"], NONE),
    op("stack", "stack.default", &["tensors", "dim"], NONE),
    op(
        "flatten",
        "flatten.using_ints",
        &["self", "start_dim", "end_dim"],
        NONE,
    ),
    op("view", "view.default", &["self", "size"], NONE),
    op("reshape", "reshape.default", &["self", "shape"], NONE),
    op("dropout", "dropout.default", &["input", "p", "train"], NONE),
    op(
        "dropout_",
        "dropout_.default",
        &["input", "p", "train"],
        NONE,
    ),
    op("contiguous", "contiguous.default", SELF, MEMORY_FORMAT),
    op("clone", "clone.default", SELF, MEMORY_FORMAT),
    op("detach", "detach.default", SELF, NONE),
    op(
        "slice",
        "slice.Tensor",
        &["self", "dim", "start", "end", "step"],
        NONE,
    ),
    op("permute", "permute.default", &["self", "dims"], NONE),
    op("reshape_as", "reshape_as.default", &["self", "other"], NONE),
    op("index", "index.Tensor", &["self", "indices"], NONE),
    op("matmul", "matmul.default", BINARY, NONE),
    op("select", "select.int", &["self", "dim", "index"], NONE),
    op("unsqueeze", "unsqueeze.default", &["self", "dim"], NONE),
    // `torch.squeeze(x, d)`; a call without a dimension is refused by its shape rule.
    op("squeeze", "squeeze.dim", &["self", "dim"], NONE),
    op("expand", "expand.default", &["self", "size"], &["implicit"]),
    op(
        "unflatten",
        "unflatten.int",
        &["self", "dim", "sizes"],
        NONE,
    ),
    op("chunk", "chunk.default", &["self", "chunks", "dim"], NONE),
    op(
        "split",
        "split.Tensor",
        &["self", "split_size", "dim"],
        NONE,
    ),
    op(
        "split_with_sizes",
        "split_with_sizes.default",
        &["self", "split_sizes", "dim"],
        NONE,
    ),
    op("unbind", "unbind.int", &["self", "dim"], NONE),
    op(
        "transpose",
        "transpose.int",
        &["self", "dim0", "dim1"],
        NONE,
    ),
    op(
        "_transformer_encoder_layer_fwd",
        "_transformer_encoder_layer_fwd.default",
        &[
            "src",
            "embed_dim",
            "num_heads",
            "qkv_weight",
            "qkv_bias",
            "proj_weight",
            "proj_bias",
            "use_gelu",
            "norm_first",
            "eps",
            "norm_weight_1",
            "norm_bias_1",
            "norm_weight_2",
            "norm_bias_2",
            "ffn_weight_1",
            "ffn_bias_1",
            "ffn_weight_2",
            "ffn_bias_2",
            "mask",
            "mask_type",
        ],
        NONE,
    ),
    op(
        "upsample_nearest1d",
        "upsample_nearest1d.vec",
        NEAREST,
        NONE,
    ),
    op(
        "upsample_nearest2d",
        "upsample_nearest2d.vec",
        NEAREST,
        NONE,
    ),
    op(
        "upsample_nearest3d",
        "upsample_nearest3d.vec",
        NEAREST,
        NONE,
    ),
    op(
        "upsample_linear1d",
        "upsample_linear1d.vec",
        INTERPOLATED,
        NONE,
    ),
    op(
        "upsample_bilinear2d",
        "upsample_bilinear2d.vec",
        INTERPOLATED,
        NONE,
    ),
    op(
        "upsample_trilinear3d",
        "upsample_trilinear3d.vec",
        INTERPOLATED,
        NONE,
    ),
    op(
        "upsample_bicubic2d",
        "upsample_bicubic2d.vec",
        INTERPOLATED,
        NONE,
    ),
    op(
        "scaled_dot_product_attention",
        "scaled_dot_product_attention.default",
        &[
            "query",
            "key",
            "value",
            "attn_mask",
            "dropout_p",
            "is_causal",
        ],
        &["scale", "enable_gqa"],
    ),
];

/// The ops on integer and bool tensors (token ids, masks). A comparison's or
/// `masked_fill`'s overload is for a tensor operand; [`super::convert`] takes the
/// `.Scalar` one when the operand is a number.
pub const TYPED_OPS: &[OpSchema] = &[
    op(
        "embedding",
        "embedding.default",
        &[
            "weight",
            "indices",
            "padding_idx",
            "scale_grad_by_freq",
            "sparse",
        ],
        NONE,
    ),
    op("eq", "eq.Tensor", BINARY, NONE),
    op("ne", "ne.Tensor", BINARY, NONE),
    op("lt", "lt.Tensor", BINARY, NONE),
    op("le", "le.Tensor", BINARY, NONE),
    op("gt", "gt.Tensor", BINARY, NONE),
    op("ge", "ge.Tensor", BINARY, NONE),
    op("logical_not", "logical_not.default", SELF, NONE),
    op("logical_and", "logical_and.default", BINARY, NONE),
    op("logical_or", "logical_or.default", BINARY, NONE),
    op("bitwise_not", "bitwise_not.default", SELF, NONE),
    op("__and__", "__and__.Tensor", BINARY, NONE),
    op("__or__", "__or__.Tensor", BINARY, NONE),
    op("where", "where.self", &["condition", "self", "other"], NONE),
    op(
        "masked_fill",
        "masked_fill.Tensor",
        &["self", "mask", "value"],
        NONE,
    ),
    op(
        "to",
        "to.dtype",
        &["self", "dtype", "non_blocking", "copy", "memory_format"],
        NONE,
    ),
    op(
        "argmax",
        "argmax.default",
        &["self", "dim", "keepdim"],
        NONE,
    ),
    op(
        "argmin",
        "argmin.default",
        &["self", "dim", "keepdim"],
        NONE,
    ),
];

/// Every schema whose calls become program nodes of its own overload (all but
/// `CONVOLUTION`, which becomes a `conv*` node).
pub fn schemas() -> impl Iterator<Item = &'static OpSchema> {
    [&MULTI_HEAD_ATTENTION, &LSTM, &GRU]
        .into_iter()
        .chain(OPS)
        .chain(TYPED_OPS)
}

/// The schema of `torch.<name>`.
pub fn lookup(name: &str) -> Option<&'static OpSchema> {
    std::iter::once(&CONVOLUTION)
        .chain(schemas())
        .find(|op| op.name == name)
}

/// Every op name read, for the unsupported-op error.
pub fn names() -> Vec<&'static str> {
    std::iter::once(&CONVOLUTION)
        .chain(schemas())
        .map(|op| op.name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_read_as_torch_writes_them() {
        assert_eq!(
            lookup("mean").map(OpSchema::signature).as_deref(),
            Some("torch.mean(self, dim, keepdim, *, dtype)")
        );
        assert_eq!(lookup("_convolution").map(|o| o.args.len()), Some(13));
        assert!(lookup("grid_sampler").is_none());
        let mut names = names();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "an op is listed twice");
    }
}
