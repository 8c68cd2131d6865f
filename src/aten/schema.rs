//! The aten schemas: for every op the importers read, the evaluator computes or the ONNX
//! lowering translates, its argument names as torch declares them (`native_functions.yaml`),
//! positional and keyword-only. This table is the one place they are written: the
//! TorchScript importer turns positional calls into named arguments with it, a program
//! node naming an argument its op does not have is refused with it, and the op documents
//! print signatures from it.
//!
//! Rows are produced from torch's own schemas by `scripts/aten-schema OVERLOAD…`, and the
//! interop tier checks the whole table against torch 2.13 (through `docs/onnx-ops.md`, which
//! prints every row).

use super::program::Node;

/// One overload's arguments.
#[derive(Debug, PartialEq, Eq)]
pub struct Schema {
    /// The overload as in `torch.ops.aten.<target>` (`conv2d.default`); `_operator.<name>`
    /// for the Python operators torch.export records on symbolic sizes.
    pub target: &'static str,
    /// Positional argument names, in order.
    pub args: &'static [&'static str],
    /// Keyword-only argument names (after `*`).
    pub kwargs: &'static [&'static str],
    /// Why the op is not evaluated on constants (`None`: it is, by
    /// [`crate::aten::eval::evaluate`]); every other op with all-constant inputs is computed
    /// at export, so that no model is blocked by one.
    pub not_evaluated: Option<&'static str>,
}

impl Schema {
    /// The op's name without the overload (`conv2d`).
    pub fn name(&self) -> &'static str {
        self.target
            .rsplit_once('.')
            .map_or(self.target, |(name, _)| name)
    }

    /// Whether `name` is one of the arguments.
    pub fn has(&self, name: &str) -> bool {
        self.args.contains(&name) || self.kwargs.contains(&name)
    }

    /// The schema as a user reads it: `mean.dim(self, dim, keepdim, *, dtype)`.
    pub fn signature(&self) -> String {
        let mut names: Vec<&str> = self.args.to_vec();
        if !self.kwargs.is_empty() {
            names.push("*");
            names.extend(self.kwargs);
        }
        format!("{}({})", self.target, names.join(", "))
    }
}

const fn schema(
    target: &'static str,
    args: &'static [&'static str],
    kwargs: &'static [&'static str],
) -> Schema {
    Schema {
        target,
        args,
        kwargs,
        not_evaluated: None,
    }
}

/// A row whose op is not evaluated on constants, for `reason`.
const fn not_evaluated(schema: Schema, reason: &'static str) -> Schema {
    Schema {
        not_evaluated: Some(reason),
        ..schema
    }
}

/// The schema of `node`'s op, after checking that the node names only arguments the op
/// has: a node given an argument its op does not declare (a newer overload, a misread
/// program) must not be translated as if it were absent. Errors are plain text; the caller
/// adds where the node is.
pub fn check(node: &Node) -> Result<&'static Schema, String> {
    let schema =
        lookup(&node.target).ok_or_else(|| format!("`{}` has no known schema", node.target))?;
    match node.inputs.iter().find(|a| !schema.has(&a.name)) {
        Some(extra) => Err(format!(
            "unexpected argument `{}` for {}",
            extra.name,
            schema.signature()
        )),
        None => Ok(schema),
    }
}

/// The schema of `target` (`conv2d.default`, with or without `torch.ops.aten.`).
pub fn lookup(target: &str) -> Option<&'static Schema> {
    let target = target.strip_prefix("torch.ops.aten.").unwrap_or(target);
    SCHEMAS.iter().find(|s| s.target == target)
}

/// torch's `*_copy` overloads, each with the view op it copies: torch defines every one as
/// that view followed by a copy (`torch._refs`' `_make_copy_from_view`), and values have no
/// aliasing here, so ckpt evaluates and lowers each as its view ([`canonical`]).
pub const COPIES: &[(&str, &str)] = &[
    ("alias_copy.default", "alias.default"),
    ("detach_copy.default", "detach.default"),
    ("diagonal_copy.default", "diagonal.default"),
    ("expand_copy.default", "expand.default"),
    ("narrow_copy.default", "narrow.default"),
    ("permute_copy.default", "permute.default"),
    ("select_copy.int", "select.int"),
    ("slice_copy.Tensor", "slice.Tensor"),
    ("split_copy.Tensor", "split.Tensor"),
    ("split_with_sizes_copy.default", "split_with_sizes.default"),
    ("squeeze_copy.default", "squeeze.default"),
    ("squeeze_copy.dim", "squeeze.dim"),
    ("squeeze_copy.dims", "squeeze.dims"),
    ("t_copy.default", "t.default"),
    ("transpose_copy.int", "transpose.int"),
    ("unbind_copy.int", "unbind.int"),
    ("unfold_copy.default", "unfold.default"),
    ("unsqueeze_copy.default", "unsqueeze.default"),
    ("view_copy.default", "view.default"),
];

/// torch's alias overloads, each with the overload it names: `native_functions.yaml`
/// declares each as "alias for" that op, with the same arguments (the schema rows of both
/// are in [`SCHEMAS`]), so ckpt evaluates and lowers each as the op it names
/// ([`canonical`]).
pub const ALIASES: &[(&str, &str)] = &[
    ("divide.Scalar", "div.Scalar"),
    ("divide.Tensor", "div.Tensor"),
    ("divide.Tensor_mode", "div.Tensor_mode"),
    ("multiply.Scalar", "mul.Scalar"),
    ("multiply.Tensor", "mul.Tensor"),
    ("special_digamma.default", "digamma.default"),
    ("special_erfinv.default", "erfinv.default"),
    ("special_gammaln.default", "lgamma.default"),
    ("special_i0.default", "i0.default"),
    ("special_multigammaln.default", "mvlgamma.default"),
    ("special_polygamma.default", "polygamma.default"),
    ("special_psi.default", "digamma.default"),
    ("subtract.Tensor", "sub.Tensor"),
    ("true_divide.Scalar", "div.Scalar"),
    ("true_divide.Tensor", "div.Tensor"),
];

/// The op `target` (without `torch.ops.aten.`) is computed as: the view a copy of
/// [`COPIES`] copies, the op an alias of [`ALIASES`] names, any other target itself.
pub fn canonical(target: &str) -> &str {
    COPIES
        .iter()
        .chain(ALIASES)
        .find(|(copy, _)| *copy == target)
        .map_or(target, |(_, view)| view)
}

/// The sizes `atleast_1d`/`atleast_2d`/`atleast_3d` (`least`: 1, 2, 3) give a tensor of
/// sizes `sizes`, by torch's rule: a 0-d tensor becomes `[1, …]`, a 1-D one `[1, n]` (and
/// `[1, n, 1]` for 3-D), a 2-D one `[a, b, 1]` for 3-D; others are kept.
pub fn at_least<T: Clone>(sizes: &[T], least: usize, one: T) -> Vec<T> {
    let mut out = sizes.to_vec();
    match (sizes.len(), least) {
        (0, _) => out = vec![one; least],
        (1, 2) => out.insert(0, one),
        (1, 3) => {
            out.insert(0, one.clone());
            out.push(one);
        }
        (2, 3) => out.push(one),
        _ => {}
    }
    out
}

/// Every schema, sorted by target.
pub const SCHEMAS: &[Schema] = &[
    schema("__and__.Tensor", &["self", "other"], &[]),
    schema("__or__.Tensor", &["self", "other"], &[]),
    schema(
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
        &[],
    ),
    schema(
        "_log_softmax.default",
        &["self", "dim", "half_to_float"],
        &[],
    ),
    schema(
        "_native_batch_norm_legit.no_stats",
        &["input", "weight", "bias", "training", "momentum", "eps"],
        &[],
    ),
    schema(
        "_native_batch_norm_legit_functional.default",
        &[
            "input",
            "weight",
            "bias",
            "running_mean",
            "running_var",
            "training",
            "momentum",
            "eps",
        ],
        &[],
    ),
    schema(
        "_native_batch_norm_legit_no_training.default",
        &[
            "input",
            "weight",
            "bias",
            "running_mean",
            "running_var",
            "momentum",
            "eps",
        ],
        &[],
    ),
    not_evaluated(
        schema(
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
            &[],
        ),
        "a fused attention layer of constants alone has not been met; its lowering computes it",
    ),
    schema("_operator.mul", &["a", "b"], &[]),
    schema("_safe_softmax.default", &["self", "dim", "dtype"], &[]),
    schema("_softmax.default", &["self", "dim", "half_to_float"], &[]),
    schema(
        "_to_copy.default",
        &["self"],
        &[
            "dtype",
            "layout",
            "device",
            "pin_memory",
            "non_blocking",
            "memory_format",
        ],
    ),
    not_evaluated(
        schema(
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
            &[],
        ),
        "a fused encoder layer of constants alone has not been met; its lowering computes it",
    ),
    schema("_unsafe_view.default", &["self", "size"], &[]),
    schema(
        "_upsample_bicubic2d_aa.default",
        &[
            "self",
            "output_size",
            "align_corners",
            "scales_h",
            "scales_w",
        ],
        &[],
    ),
    schema(
        "_upsample_bicubic2d_aa.vec",
        &["input", "output_size", "align_corners", "scale_factors"],
        &[],
    ),
    schema(
        "_upsample_bilinear2d_aa.default",
        &[
            "self",
            "output_size",
            "align_corners",
            "scales_h",
            "scales_w",
        ],
        &[],
    ),
    schema(
        "_upsample_bilinear2d_aa.vec",
        &["input", "output_size", "align_corners", "scale_factors"],
        &[],
    ),
    schema(
        "_upsample_nearest_exact1d.default",
        &["self", "output_size", "scales"],
        &[],
    ),
    schema(
        "_upsample_nearest_exact1d.vec",
        &["input", "output_size", "scale_factors"],
        &[],
    ),
    schema(
        "_upsample_nearest_exact2d.default",
        &["self", "output_size", "scales_h", "scales_w"],
        &[],
    ),
    schema(
        "_upsample_nearest_exact2d.vec",
        &["input", "output_size", "scale_factors"],
        &[],
    ),
    schema(
        "_upsample_nearest_exact3d.default",
        &["self", "output_size", "scales_d", "scales_h", "scales_w"],
        &[],
    ),
    schema(
        "_upsample_nearest_exact3d.vec",
        &["input", "output_size", "scale_factors"],
        &[],
    ),
    schema("_weight_norm.default", &["v", "g", "dim"], &[]),
    schema("abs.default", &["self"], &[]),
    schema("acos.default", &["self"], &[]),
    schema("acosh.default", &["self"], &[]),
    schema("adaptive_avg_pool1d.default", &["self", "output_size"], &[]),
    schema("adaptive_avg_pool2d.default", &["self", "output_size"], &[]),
    schema("adaptive_avg_pool3d.default", &["self", "output_size"], &[]),
    schema("adaptive_max_pool1d.default", &["self", "output_size"], &[]),
    schema("adaptive_max_pool2d.default", &["self", "output_size"], &[]),
    schema("adaptive_max_pool3d.default", &["self", "output_size"], &[]),
    schema("add.Scalar", &["self", "other", "alpha"], &[]),
    schema("add.Tensor", &["self", "other"], &["alpha"]),
    schema("add_.Tensor", &["self", "other"], &["alpha"]),
    schema(
        "addcdiv.default",
        &["self", "tensor1", "tensor2"],
        &["value"],
    ),
    schema(
        "addcmul.default",
        &["self", "tensor1", "tensor2"],
        &["value"],
    ),
    schema(
        "addmm.default",
        &["self", "mat1", "mat2"],
        &["beta", "alpha"],
    ),
    schema("adjoint.default", &["self"], &[]),
    schema("alias.default", &["self"], &[]),
    schema("alias_copy.default", &["self"], &[]),
    schema("all.dim", &["self", "dim", "keepdim"], &[]),
    schema("all.dims", &["self", "dim", "keepdim"], &[]),
    schema("alpha_dropout.default", &["input", "p", "train"], &[]),
    schema("alpha_dropout_.default", &["self", "p", "train"], &[]),
    schema("amax.default", &["self", "dim", "keepdim"], &[]),
    schema("amin.default", &["self", "dim", "keepdim"], &[]),
    schema("angle.default", &["self"], &[]),
    schema("any.dim", &["self", "dim", "keepdim"], &[]),
    schema("any.dims", &["self", "dim", "keepdim"], &[]),
    schema(
        "arange.default",
        &["end"],
        &["dtype", "layout", "device", "pin_memory"],
    ),
    schema(
        "arange.start",
        &["start", "end"],
        &["dtype", "layout", "device", "pin_memory"],
    ),
    schema(
        "arange.start_step",
        &["start", "end", "step"],
        &["dtype", "layout", "device", "pin_memory"],
    ),
    schema("argmax.default", &["self", "dim", "keepdim"], &[]),
    schema("argmin.default", &["self", "dim", "keepdim"], &[]),
    schema("argsort.default", &["self", "dim", "descending"], &[]),
    schema(
        "argsort.stable",
        &["self"],
        &["stable", "dim", "descending"],
    ),
    schema("asin.default", &["self"], &[]),
    schema("asinh.default", &["self"], &[]),
    schema("atan.default", &["self"], &[]),
    schema("atan2.default", &["self", "other"], &[]),
    schema("atanh.default", &["self"], &[]),
    schema("atleast_1d.default", &["self"], &[]),
    schema("atleast_2d.default", &["self"], &[]),
    schema("atleast_3d.default", &["self"], &[]),
    schema(
        "avg_pool1d.default",
        &[
            "self",
            "kernel_size",
            "stride",
            "padding",
            "ceil_mode",
            "count_include_pad",
        ],
        &[],
    ),
    schema(
        "avg_pool2d.default",
        &[
            "self",
            "kernel_size",
            "stride",
            "padding",
            "ceil_mode",
            "count_include_pad",
            "divisor_override",
        ],
        &[],
    ),
    schema(
        "avg_pool3d.default",
        &[
            "self",
            "kernel_size",
            "stride",
            "padding",
            "ceil_mode",
            "count_include_pad",
            "divisor_override",
        ],
        &[],
    ),
    schema(
        "baddbmm.default",
        &["self", "batch1", "batch2"],
        &["beta", "alpha"],
    ),
    schema(
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
        &[],
    ),
    schema("bitwise_and.Tensor", &["self", "other"], &[]),
    schema("bitwise_not.default", &["self"], &[]),
    schema("bitwise_or.Tensor", &["self", "other"], &[]),
    schema("bmm.default", &["self", "mat2"], &[]),
    schema("broadcast_to.default", &["self", "size"], &[]),
    schema("cat.default", &["tensors", "dim"], &[]),
    schema("ceil.default", &["self"], &[]),
    schema("celu.default", &["self", "alpha"], &[]),
    schema("channel_shuffle.default", &["self", "groups"], &[]),
    schema("cholesky.default", &["self", "upper"], &[]),
    schema("cholesky_inverse.default", &["self", "upper"], &[]),
    schema("chunk.default", &["self", "chunks", "dim"], &[]),
    schema("clamp.Tensor", &["self", "min", "max"], &[]),
    schema("clamp.default", &["self", "min", "max"], &[]),
    schema("clamp_.Tensor", &["self", "min", "max"], &[]),
    schema("clamp_.default", &["self", "min", "max"], &[]),
    schema("clamp_max.default", &["self", "max"], &[]),
    schema("clamp_min.default", &["self", "min"], &[]),
    schema("clone.default", &["self"], &["memory_format"]),
    schema(
        "col2im.default",
        &[
            "self",
            "output_size",
            "kernel_size",
            "dilation",
            "padding",
            "stride",
        ],
        &[],
    ),
    schema("conj_physical.default", &["self"], &[]),
    schema("constant_pad_nd.default", &["self", "pad", "value"], &[]),
    schema("contiguous.default", &["self"], &["memory_format"]),
    schema(
        "conv1d.default",
        &[
            "input", "weight", "bias", "stride", "padding", "dilation", "groups",
        ],
        &[],
    ),
    schema(
        "conv1d.padding",
        &[
            "input", "weight", "bias", "stride", "padding", "dilation", "groups",
        ],
        &[],
    ),
    schema(
        "conv2d.default",
        &[
            "input", "weight", "bias", "stride", "padding", "dilation", "groups",
        ],
        &[],
    ),
    schema(
        "conv2d.padding",
        &[
            "input", "weight", "bias", "stride", "padding", "dilation", "groups",
        ],
        &[],
    ),
    schema(
        "conv3d.default",
        &[
            "input", "weight", "bias", "stride", "padding", "dilation", "groups",
        ],
        &[],
    ),
    schema(
        "conv3d.padding",
        &[
            "input", "weight", "bias", "stride", "padding", "dilation", "groups",
        ],
        &[],
    ),
    schema(
        "conv_transpose1d.default",
        &[
            "input",
            "weight",
            "bias",
            "stride",
            "padding",
            "output_padding",
            "groups",
            "dilation",
        ],
        &[],
    ),
    schema(
        "conv_transpose2d.input",
        &[
            "input",
            "weight",
            "bias",
            "stride",
            "padding",
            "output_padding",
            "groups",
            "dilation",
        ],
        &[],
    ),
    schema(
        "conv_transpose3d.input",
        &[
            "input",
            "weight",
            "bias",
            "stride",
            "padding",
            "output_padding",
            "groups",
            "dilation",
        ],
        &[],
    ),
    schema(
        "convolution.default",
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
        ],
        &[],
    ),
    schema("copy_.default", &["self", "src", "non_blocking"], &[]),
    schema("copysign.Scalar", &["self", "other"], &[]),
    schema("cos.default", &["self"], &[]),
    schema("cosh.default", &["self"], &[]),
    schema("count_nonzero.default", &["self", "dim"], &[]),
    schema("count_nonzero.dim_IntList", &["self", "dim"], &[]),
    schema("cumprod.default", &["self", "dim"], &["dtype"]),
    schema("cumsum.default", &["self", "dim"], &["dtype"]),
    schema("deg2rad.default", &["self"], &[]),
    schema("det.default", &["self"], &[]),
    schema("detach.default", &["self"], &[]),
    schema("detach_.default", &["self"], &[]),
    schema("detach_copy.default", &["self"], &[]),
    schema("diag.default", &["self", "diagonal"], &[]),
    schema(
        "diag_embed.default",
        &["self", "offset", "dim1", "dim2"],
        &[],
    ),
    schema("diagflat.default", &["self", "offset"], &[]),
    schema("diagonal.default", &["self", "offset", "dim1", "dim2"], &[]),
    schema(
        "diagonal_copy.default",
        &["self", "offset", "dim1", "dim2"],
        &[],
    ),
    schema(
        "diff.default",
        &["self", "n", "dim", "prepend", "append"],
        &[],
    ),
    schema("digamma.default", &["self"], &[]),
    schema("div.Scalar", &["self", "other"], &[]),
    schema("div.Tensor", &["self", "other"], &[]),
    schema("div.Tensor_mode", &["self", "other"], &["rounding_mode"]),
    schema("div_.Tensor", &["self", "other"], &[]),
    schema("divide.Scalar", &["self", "other"], &[]),
    schema("divide.Tensor", &["self", "other"], &[]),
    schema("divide.Tensor_mode", &["self", "other"], &["rounding_mode"]),
    schema("dropout.default", &["input", "p", "train"], &[]),
    schema("dropout_.default", &["self", "p", "train"], &[]),
    schema("dsplit.array", &["self", "indices"], &[]),
    schema("dsplit.int", &["self", "sections"], &[]),
    schema("einsum.default", &["equation", "tensors"], &["path"]),
    schema(
        "elu.default",
        &["self", "alpha", "scale", "input_scale"],
        &[],
    ),
    schema(
        "elu_.default",
        &["self", "alpha", "scale", "input_scale"],
        &[],
    ),
    schema(
        "embedding.default",
        &[
            "weight",
            "indices",
            "padding_idx",
            "scale_grad_by_freq",
            "sparse",
        ],
        &[],
    ),
    schema(
        "empty.memory_format",
        &["size"],
        &["dtype", "layout", "device", "pin_memory", "memory_format"],
    ),
    schema(
        "empty_like.default",
        &["self"],
        &["dtype", "layout", "device", "pin_memory", "memory_format"],
    ),
    schema("eq.Scalar", &["self", "other"], &[]),
    schema("eq.Tensor", &["self", "other"], &[]),
    schema("erf.default", &["self"], &[]),
    schema("erfc.default", &["self"], &[]),
    schema("erfinv.default", &["self"], &[]),
    schema("exp.default", &["self"], &[]),
    schema("exp2.default", &["self"], &[]),
    schema("expand.default", &["self", "size"], &["implicit"]),
    schema("expand_as.default", &["self", "other"], &[]),
    schema("expand_copy.default", &["self", "size"], &["implicit"]),
    schema("expm1.default", &["self"], &[]),
    schema(
        "eye.default",
        &["n"],
        &["dtype", "layout", "device", "pin_memory"],
    ),
    schema(
        "eye.m",
        &["n", "m"],
        &["dtype", "layout", "device", "pin_memory"],
    ),
    schema(
        "feature_alpha_dropout.default",
        &["input", "p", "train"],
        &[],
    ),
    schema(
        "feature_alpha_dropout_.default",
        &["self", "p", "train"],
        &[],
    ),
    schema("feature_dropout.default", &["input", "p", "train"], &[]),
    schema("feature_dropout_.default", &["self", "p", "train"], &[]),
    schema("fft_fftshift.default", &["self", "dim"], &[]),
    schema("fft_hfft.default", &["self", "n", "dim", "norm"], &[]),
    schema("fft_hfft2.default", &["self", "s", "dim", "norm"], &[]),
    schema("fft_hfftn.default", &["self", "s", "dim", "norm"], &[]),
    schema("fft_ifftshift.default", &["self", "dim"], &[]),
    schema("fft_irfft.default", &["self", "n", "dim", "norm"], &[]),
    schema("fft_irfft2.default", &["self", "s", "dim", "norm"], &[]),
    schema("fft_irfftn.default", &["self", "s", "dim", "norm"], &[]),
    schema("fill.Scalar", &["self", "value"], &[]),
    schema("fill_.Scalar", &["self", "value"], &[]),
    schema("fill_.Tensor", &["self", "value"], &[]),
    schema("flatten.using_ints", &["self", "start_dim", "end_dim"], &[]),
    schema("flip.default", &["self", "dims"], &[]),
    schema("fliplr.default", &["self"], &[]),
    schema("flipud.default", &["self"], &[]),
    schema("floor.default", &["self"], &[]),
    schema("frac.default", &["self"], &[]),
    schema(
        "full.default",
        &["size", "fill_value"],
        &["dtype", "layout", "device", "pin_memory"],
    ),
    schema(
        "full_like.default",
        &["self", "fill_value"],
        &["dtype", "layout", "device", "pin_memory", "memory_format"],
    ),
    schema(
        "gather.default",
        &["self", "dim", "index"],
        &["sparse_grad"],
    ),
    schema("ge.Scalar", &["self", "other"], &[]),
    schema("ge.Tensor", &["self", "other"], &[]),
    schema("gelu.default", &["self"], &["approximate"]),
    schema("glu.default", &["self", "dim"], &[]),
    schema(
        "group_norm.default",
        &[
            "input",
            "num_groups",
            "weight",
            "bias",
            "eps",
            "cudnn_enabled",
        ],
        &[],
    ),
    not_evaluated(
        schema(
            "gru.input",
            &[
                "input",
                "hx",
                "params",
                "has_biases",
                "num_layers",
                "dropout",
                "train",
                "bidirectional",
                "batch_first",
            ],
            &[],
        ),
        "a recurrent layer run over a constant sequence has not been met; its lowering computes it",
    ),
    schema("gt.Scalar", &["self", "other"], &[]),
    schema("gt.Tensor", &["self", "other"], &[]),
    schema("hardshrink.default", &["self", "lambd"], &[]),
    schema("hardsigmoid.default", &["self"], &[]),
    schema("hardsigmoid_.default", &["self"], &[]),
    schema("hardswish.default", &["self"], &[]),
    schema("hardswish_.default", &["self"], &[]),
    schema("hardtanh.default", &["self", "min_val", "max_val"], &[]),
    schema("hardtanh_.default", &["self", "min_val", "max_val"], &[]),
    schema("hsplit.array", &["self", "indices"], &[]),
    schema("hsplit.int", &["self", "sections"], &[]),
    schema("i0.default", &["self"], &[]),
    schema(
        "im2col.default",
        &["self", "kernel_size", "dilation", "padding", "stride"],
        &[],
    ),
    schema("index.Tensor", &["self", "indices"], &[]),
    schema("index_select.default", &["self", "dim", "index"], &[]),
    schema(
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
        &[],
    ),
    schema("inverse.default", &["self"], &[]),
    schema("isfinite.default", &["self"], &[]),
    schema("isinf.default", &["self"], &[]),
    schema("isnan.default", &["self"], &[]),
    schema("isneginf.default", &["self"], &[]),
    schema("isposinf.default", &["self"], &[]),
    schema("isreal.default", &["self"], &[]),
    not_evaluated(
        schema("item.default", &["self"], &[]),
        "its result is a number, not a tensor: a constant's is read where an argument names it",
    ),
    schema(
        "layer_norm.default",
        &[
            "input",
            "normalized_shape",
            "weight",
            "bias",
            "eps",
            "cudnn_enable",
        ],
        &[],
    ),
    schema("le.Scalar", &["self", "other"], &[]),
    schema("le.Tensor", &["self", "other"], &[]),
    schema("leaky_relu.default", &["self", "negative_slope"], &[]),
    schema("leaky_relu_.default", &["self", "negative_slope"], &[]),
    schema("lerp.Scalar", &["self", "end", "weight"], &[]),
    schema("lerp.Tensor", &["self", "end", "weight"], &[]),
    schema("lgamma.default", &["self"], &[]),
    schema("lift_fresh_copy.default", &["self"], &[]),
    schema("linalg_cholesky.default", &["self"], &["upper"]),
    schema("linalg_det.default", &["A"], &[]),
    schema(
        "linalg_diagonal.default",
        &["A"],
        &["offset", "dim1", "dim2"],
    ),
    schema("linalg_inv.default", &["A"], &[]),
    schema("linalg_matrix_power.default", &["self", "n"], &[]),
    schema("linalg_slogdet.default", &["A"], &[]),
    schema("linalg_vander.default", &["x"], &["N"]),
    schema(
        "linalg_vector_norm.default",
        &["self", "ord", "dim", "keepdim"],
        &["dtype"],
    ),
    schema("linear.default", &["input", "weight", "bias"], &[]),
    schema("log.default", &["self"], &[]),
    schema("log10.default", &["self"], &[]),
    schema("log1p.default", &["self"], &[]),
    schema("log2.default", &["self"], &[]),
    schema("log_sigmoid.default", &["self"], &[]),
    schema("log_softmax.int", &["self", "dim", "dtype"], &[]),
    schema("logdet.default", &["self"], &[]),
    schema("logical_and.default", &["self", "other"], &[]),
    schema("logical_not.default", &["self"], &[]),
    schema("logical_or.default", &["self", "other"], &[]),
    schema("logit.default", &["self", "eps"], &[]),
    schema("logsumexp.default", &["self", "dim", "keepdim"], &[]),
    not_evaluated(
        schema(
            "lstm.input",
            &[
                "input",
                "hx",
                "params",
                "has_biases",
                "num_layers",
                "dropout",
                "train",
                "bidirectional",
                "batch_first",
            ],
            &[],
        ),
        "a recurrent layer run over a constant sequence has not been met; its lowering computes it",
    ),
    schema("lt.Scalar", &["self", "other"], &[]),
    schema("lt.Tensor", &["self", "other"], &[]),
    schema("mH.default", &["self"], &[]),
    schema("mT.default", &["self"], &[]),
    schema("masked_fill.Scalar", &["self", "mask", "value"], &[]),
    schema("masked_fill.Tensor", &["self", "mask", "value"], &[]),
    schema("masked_fill_.Scalar", &["self", "mask", "value"], &[]),
    schema("masked_fill_.Tensor", &["self", "mask", "value"], &[]),
    schema("matmul.default", &["self", "other"], &[]),
    schema("matrix_H.default", &["self"], &[]),
    schema("matrix_power.default", &["self", "n"], &[]),
    schema("max.dim", &["self", "dim", "keepdim"], &[]),
    schema("max.other", &["self", "other"], &[]),
    schema(
        "max_pool1d.default",
        &[
            "self",
            "kernel_size",
            "stride",
            "padding",
            "dilation",
            "ceil_mode",
        ],
        &[],
    ),
    schema(
        "max_pool1d_with_indices.default",
        &[
            "self",
            "kernel_size",
            "stride",
            "padding",
            "dilation",
            "ceil_mode",
        ],
        &[],
    ),
    schema(
        "max_pool2d.default",
        &[
            "self",
            "kernel_size",
            "stride",
            "padding",
            "dilation",
            "ceil_mode",
        ],
        &[],
    ),
    schema(
        "max_pool2d_with_indices.default",
        &[
            "self",
            "kernel_size",
            "stride",
            "padding",
            "dilation",
            "ceil_mode",
        ],
        &[],
    ),
    schema(
        "max_pool3d.default",
        &[
            "self",
            "kernel_size",
            "stride",
            "padding",
            "dilation",
            "ceil_mode",
        ],
        &[],
    ),
    schema(
        "max_pool3d_with_indices.default",
        &[
            "self",
            "kernel_size",
            "stride",
            "padding",
            "dilation",
            "ceil_mode",
        ],
        &[],
    ),
    schema("maximum.default", &["self", "other"], &[]),
    schema("mean.default", &["self"], &["dtype"]),
    schema("mean.dim", &["self", "dim", "keepdim"], &["dtype"]),
    schema("meshgrid.default", &["tensors"], &[]),
    schema("meshgrid.indexing", &["tensors"], &["indexing"]),
    schema("min.dim", &["self", "dim", "keepdim"], &[]),
    schema("min.other", &["self", "other"], &[]),
    schema("minimum.default", &["self", "other"], &[]),
    schema("mish.default", &["self"], &[]),
    schema("mish_.default", &["self"], &[]),
    schema("mm.default", &["self", "mat2"], &[]),
    schema("movedim.int", &["self", "source", "destination"], &[]),
    schema("movedim.intlist", &["self", "source", "destination"], &[]),
    schema("mul.Scalar", &["self", "other"], &[]),
    schema("mul.Tensor", &["self", "other"], &[]),
    schema("mul_.Tensor", &["self", "other"], &[]),
    schema("multiply.Scalar", &["self", "other"], &[]),
    schema("multiply.Tensor", &["self", "other"], &[]),
    schema("mvlgamma.default", &["self", "p"], &[]),
    schema(
        "nan_to_num.default",
        &["self", "nan", "posinf", "neginf"],
        &[],
    ),
    schema("nanmean.default", &["self", "dim", "keepdim"], &["dtype"]),
    schema("nansum.default", &["self", "dim", "keepdim"], &["dtype"]),
    schema("narrow.default", &["self", "dim", "start", "length"], &[]),
    schema(
        "narrow_copy.default",
        &["self", "dim", "start", "length"],
        &[],
    ),
    schema("native_channel_shuffle.default", &["self", "groups"], &[]),
    schema(
        "native_layer_norm.default",
        &["input", "normalized_shape", "weight", "bias", "eps"],
        &[],
    ),
    schema("ne.Scalar", &["self", "other"], &[]),
    schema("ne.Tensor", &["self", "other"], &[]),
    schema("neg.default", &["self"], &[]),
    schema(
        "new_empty.default",
        &["self", "size"],
        &["dtype", "layout", "device", "pin_memory"],
    ),
    schema(
        "new_full.default",
        &["self", "size", "fill_value"],
        &["dtype", "layout", "device", "pin_memory"],
    ),
    schema(
        "new_ones.default",
        &["self", "size"],
        &["dtype", "layout", "device", "pin_memory"],
    ),
    schema(
        "new_zeros.default",
        &["self", "size"],
        &["dtype", "layout", "device", "pin_memory"],
    ),
    schema("numpy_T.default", &["self"], &[]),
    schema("one_hot.default", &["self", "num_classes"], &[]),
    schema(
        "ones.default",
        &["size"],
        &["dtype", "layout", "device", "pin_memory"],
    ),
    schema(
        "ones_like.default",
        &["self"],
        &["dtype", "layout", "device", "pin_memory", "memory_format"],
    ),
    schema("pad.default", &["self", "pad", "mode", "value"], &[]),
    schema("permute.default", &["self", "dims"], &[]),
    schema("permute_copy.default", &["self", "dims"], &[]),
    schema("pixel_shuffle.default", &["self", "upscale_factor"], &[]),
    schema(
        "pixel_unshuffle.default",
        &["self", "downscale_factor"],
        &[],
    ),
    schema("polygamma.default", &["n", "self"], &[]),
    schema("positive.default", &["self"], &[]),
    schema("pow.Scalar", &["self", "exponent"], &[]),
    schema("pow.Tensor_Scalar", &["self", "exponent"], &[]),
    schema("pow.Tensor_Tensor", &["self", "exponent"], &[]),
    schema("prelu.default", &["self", "weight"], &[]),
    schema("prod.default", &["self"], &["dtype"]),
    schema("prod.dim_int", &["self", "dim", "keepdim"], &["dtype"]),
    schema("rad2deg.default", &["self"], &[]),
    schema("ravel.default", &["self"], &[]),
    schema("real.default", &["self"], &[]),
    schema("reciprocal.default", &["self"], &[]),
    schema("reflection_pad2d.default", &["self", "padding"], &[]),
    schema("relu.default", &["self"], &[]),
    schema("relu6.default", &["self"], &[]),
    schema("relu_.default", &["self"], &[]),
    schema("remainder.Scalar", &["self", "other"], &[]),
    schema("remainder.Tensor", &["self", "other"], &[]),
    schema("repeat.default", &["self", "repeats"], &[]),
    schema(
        "repeat_interleave.self_int",
        &["self", "repeats", "dim"],
        &["output_size"],
    ),
    schema("replication_pad2d.default", &["self", "padding"], &[]),
    schema("reshape.default", &["self", "shape"], &[]),
    schema("reshape_as.default", &["self", "other"], &[]),
    schema("resolve_conj.default", &["self"], &[]),
    schema("resolve_neg.default", &["self"], &[]),
    schema(
        "rms_norm.default",
        &["input", "normalized_shape", "weight", "eps"],
        &[],
    ),
    schema("roll.default", &["self", "shifts", "dims"], &[]),
    schema("rot90.default", &["self", "k", "dims"], &[]),
    schema("round.decimals", &["self"], &["decimals"]),
    schema("round.default", &["self"], &[]),
    schema("rsqrt.default", &["self"], &[]),
    schema("rsub.Scalar", &["self", "other", "alpha"], &[]),
    schema("rsub.Tensor", &["self", "other"], &["alpha"]),
    schema(
        "scalar_tensor.default",
        &["s"],
        &["dtype", "layout", "device", "pin_memory"],
    ),
    schema(
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
    schema("select.int", &["self", "dim", "index"], &[]),
    schema("select_copy.int", &["self", "dim", "index"], &[]),
    schema("selu.default", &["self"], &[]),
    schema("sgn.default", &["self"], &[]),
    schema("sigmoid.default", &["self"], &[]),
    schema("sigmoid_.default", &["self"], &[]),
    schema("sign.default", &["self"], &[]),
    schema("silu.default", &["self"], &[]),
    schema("silu_.default", &["self"], &[]),
    schema("sin.default", &["self"], &[]),
    schema("sinc.default", &["self"], &[]),
    schema("sinh.default", &["self"], &[]),
    schema(
        "slice.Tensor",
        &["self", "dim", "start", "end", "step"],
        &[],
    ),
    schema(
        "slice_copy.Tensor",
        &["self", "dim", "start", "end", "step"],
        &[],
    ),
    schema("slogdet.default", &["self"], &[]),
    schema("softmax.int", &["self", "dim", "dtype"], &[]),
    schema("softplus.default", &["self", "beta", "threshold"], &[]),
    schema("softshrink.default", &["self", "lambd"], &[]),
    schema("special_airy_ai.default", &["x"], &[]),
    schema("special_bessel_j0.default", &["self"], &[]),
    schema("special_bessel_j1.default", &["self"], &[]),
    schema("special_bessel_y0.default", &["self"], &[]),
    schema("special_bessel_y1.default", &["self"], &[]),
    schema("special_digamma.default", &["self"], &[]),
    schema("special_entr.default", &["self"], &[]),
    schema("special_erfcx.default", &["self"], &[]),
    schema("special_erfinv.default", &["self"], &[]),
    schema("special_gammaln.default", &["self"], &[]),
    schema("special_i0.default", &["self"], &[]),
    schema("special_i0e.default", &["self"], &[]),
    schema("special_i1.default", &["self"], &[]),
    schema("special_i1e.default", &["self"], &[]),
    schema("special_log_ndtr.default", &["self"], &[]),
    schema("special_modified_bessel_i0.default", &["self"], &[]),
    schema("special_modified_bessel_i1.default", &["self"], &[]),
    schema("special_modified_bessel_k0.default", &["self"], &[]),
    schema("special_modified_bessel_k1.default", &["self"], &[]),
    schema("special_multigammaln.default", &["self", "p"], &[]),
    schema("special_ndtr.default", &["self"], &[]),
    schema("special_ndtri.default", &["self"], &[]),
    schema("special_polygamma.default", &["n", "self"], &[]),
    schema("special_psi.default", &["self"], &[]),
    schema("special_scaled_modified_bessel_k0.default", &["x"], &[]),
    schema("special_scaled_modified_bessel_k1.default", &["x"], &[]),
    schema("special_spherical_bessel_j0.default", &["x"], &[]),
    schema("split.Tensor", &["self", "split_size", "dim"], &[]),
    schema("split_copy.Tensor", &["self", "split_size", "dim"], &[]),
    schema(
        "split_with_sizes.default",
        &["self", "split_sizes", "dim"],
        &[],
    ),
    schema(
        "split_with_sizes_copy.default",
        &["self", "split_sizes", "dim"],
        &[],
    ),
    schema("sqrt.default", &["self"], &[]),
    schema("square.default", &["self"], &[]),
    schema("squeeze.default", &["self"], &[]),
    schema("squeeze.dim", &["self", "dim"], &[]),
    schema("squeeze.dims", &["self", "dim"], &[]),
    schema("squeeze_copy.default", &["self"], &[]),
    schema("squeeze_copy.dim", &["self", "dim"], &[]),
    schema("squeeze_copy.dims", &["self", "dim"], &[]),
    schema("stack.default", &["tensors", "dim"], &[]),
    schema(
        "std.correction",
        &["self", "dim"],
        &["correction", "keepdim"],
    ),
    schema("std.default", &["self", "unbiased"], &[]),
    schema("std.dim", &["self", "dim", "unbiased", "keepdim"], &[]),
    schema(
        "std_mean.correction",
        &["self", "dim"],
        &["correction", "keepdim"],
    ),
    schema("std_mean.default", &["self", "unbiased"], &[]),
    schema("std_mean.dim", &["self", "dim", "unbiased", "keepdim"], &[]),
    schema("sub.Scalar", &["self", "other", "alpha"], &[]),
    schema("sub.Tensor", &["self", "other"], &["alpha"]),
    schema("sub_.Tensor", &["self", "other"], &["alpha"]),
    schema("subtract.Tensor", &["self", "other"], &["alpha"]),
    schema("sum.default", &["self"], &["dtype"]),
    schema("sum.dim_IntList", &["self", "dim", "keepdim"], &["dtype"]),
    schema("sum_to_size.default", &["self", "size"], &[]),
    schema("sym_size.int", &["self", "dim"], &[]),
    schema("t.default", &["self"], &[]),
    schema("t_copy.default", &["self"], &[]),
    schema("tan.default", &["self"], &[]),
    schema("tanh.default", &["self"], &[]),
    schema("tanh_.default", &["self"], &[]),
    schema("tensor_split.indices", &["self", "indices", "dim"], &[]),
    schema("tensor_split.sections", &["self", "sections", "dim"], &[]),
    schema("threshold.default", &["self", "threshold", "value"], &[]),
    schema("tile.default", &["self", "dims"], &[]),
    schema(
        "to.device",
        &[
            "self",
            "device",
            "dtype",
            "non_blocking",
            "copy",
            "memory_format",
        ],
        &[],
    ),
    schema(
        "to.dtype",
        &["self", "dtype", "non_blocking", "copy", "memory_format"],
        &[],
    ),
    schema(
        "to.dtype_layout",
        &["self"],
        &[
            "dtype",
            "layout",
            "device",
            "pin_memory",
            "non_blocking",
            "copy",
            "memory_format",
        ],
    ),
    schema(
        "topk.default",
        &["self", "k", "dim", "largest", "sorted"],
        &[],
    ),
    schema("trace.default", &["self"], &[]),
    schema("transpose.int", &["self", "dim0", "dim1"], &[]),
    schema("transpose_copy.int", &["self", "dim0", "dim1"], &[]),
    schema("tril.default", &["self", "diagonal"], &[]),
    schema("triu.default", &["self", "diagonal"], &[]),
    schema("true_divide.Scalar", &["self", "other"], &[]),
    schema("true_divide.Tensor", &["self", "other"], &[]),
    schema("trunc.default", &["self"], &[]),
    schema("type_as.default", &["self", "other"], &[]),
    schema("unbind.int", &["self", "dim"], &[]),
    schema("unbind_copy.int", &["self", "dim"], &[]),
    schema("unflatten.int", &["self", "dim", "sizes"], &[]),
    schema(
        "unfold.default",
        &["self", "dimension", "size", "step"],
        &[],
    ),
    schema(
        "unfold_copy.default",
        &["self", "dimension", "size", "step"],
        &[],
    ),
    schema("unsafe_chunk.default", &["self", "chunks", "dim"], &[]),
    schema("unsafe_split.Tensor", &["self", "split_size", "dim"], &[]),
    schema(
        "unsafe_split_with_sizes.default",
        &["self", "split_sizes", "dim"],
        &[],
    ),
    schema("unsqueeze.default", &["self", "dim"], &[]),
    schema("unsqueeze_copy.default", &["self", "dim"], &[]),
    schema(
        "upsample_bicubic2d.default",
        &[
            "self",
            "output_size",
            "align_corners",
            "scales_h",
            "scales_w",
        ],
        &[],
    ),
    schema(
        "upsample_bicubic2d.vec",
        &["input", "output_size", "align_corners", "scale_factors"],
        &[],
    ),
    schema(
        "upsample_bilinear2d.default",
        &[
            "self",
            "output_size",
            "align_corners",
            "scales_h",
            "scales_w",
        ],
        &[],
    ),
    schema(
        "upsample_bilinear2d.vec",
        &["input", "output_size", "align_corners", "scale_factors"],
        &[],
    ),
    schema(
        "upsample_linear1d.default",
        &["self", "output_size", "align_corners", "scales"],
        &[],
    ),
    schema(
        "upsample_linear1d.vec",
        &["input", "output_size", "align_corners", "scale_factors"],
        &[],
    ),
    schema(
        "upsample_nearest1d.default",
        &["self", "output_size", "scales"],
        &[],
    ),
    schema(
        "upsample_nearest1d.vec",
        &["input", "output_size", "scale_factors"],
        &[],
    ),
    schema(
        "upsample_nearest2d.default",
        &["self", "output_size", "scales_h", "scales_w"],
        &[],
    ),
    schema(
        "upsample_nearest2d.vec",
        &["input", "output_size", "scale_factors"],
        &[],
    ),
    schema(
        "upsample_nearest3d.default",
        &["self", "output_size", "scales_d", "scales_h", "scales_w"],
        &[],
    ),
    schema(
        "upsample_nearest3d.vec",
        &["input", "output_size", "scale_factors"],
        &[],
    ),
    schema(
        "upsample_trilinear3d.default",
        &[
            "self",
            "output_size",
            "align_corners",
            "scales_d",
            "scales_h",
            "scales_w",
        ],
        &[],
    ),
    schema(
        "upsample_trilinear3d.vec",
        &["input", "output_size", "align_corners", "scale_factors"],
        &[],
    ),
    schema(
        "var.correction",
        &["self", "dim"],
        &["correction", "keepdim"],
    ),
    schema("var.default", &["self", "unbiased"], &[]),
    schema("var.dim", &["self", "dim", "unbiased", "keepdim"], &[]),
    schema(
        "var_mean.correction",
        &["self", "dim"],
        &["correction", "keepdim"],
    ),
    schema("var_mean.default", &["self", "unbiased"], &[]),
    schema("var_mean.dim", &["self", "dim", "unbiased", "keepdim"], &[]),
    schema("view.default", &["self", "size"], &[]),
    schema("view_as.default", &["self", "other"], &[]),
    schema("view_copy.default", &["self", "size"], &[]),
    schema("vsplit.array", &["self", "indices"], &[]),
    schema("vsplit.int", &["self", "sections"], &[]),
    schema("where.Scalar", &["condition", "self", "other"], &[]),
    schema("where.ScalarOther", &["condition", "self", "other"], &[]),
    schema("where.ScalarSelf", &["condition", "self", "other"], &[]),
    schema("where.self", &["condition", "self", "other"], &[]),
    schema("zero_.default", &["self"], &[]),
    schema(
        "zeros.default",
        &["size"],
        &["dtype", "layout", "device", "pin_memory"],
    ),
    schema(
        "zeros_like.default",
        &["self"],
        &["dtype", "layout", "device", "pin_memory", "memory_format"],
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_with_one_row_per_target() {
        for pair in SCHEMAS.windows(2) {
            assert!(
                pair[0].target < pair[1].target,
                "{} and {} are out of order or repeated",
                pair[0].target,
                pair[1].target
            );
        }
    }

    #[test]
    fn signatures_read_as_torch_writes_them() {
        let mean = lookup("torch.ops.aten.mean.dim").map(Schema::signature);
        assert_eq!(
            mean.as_deref(),
            Some("mean.dim(self, dim, keepdim, *, dtype)")
        );
        assert_eq!(
            lookup("_convolution.default").map(|s| s.args.len()),
            Some(13)
        );
        assert_eq!(lookup("conv2d.default").map(Schema::name), Some("conv2d"));
        assert!(lookup("grid_sampler.default").is_none());
    }

    #[test]
    fn a_node_with_an_argument_its_op_lacks_is_refused() {
        let node = |args: &str| -> Node {
            serde_json::from_str(&format!(
                r#"{{"target": "torch.ops.aten.mean.dim", "outputs": [], "inputs": [{args}]}}"#
            ))
            .unwrap()
        };
        let fine = node(r#"{"name": "dtype", "arg": {"as_none": true}}"#);
        assert_eq!(check(&fine).map(|s| s.target), Ok("mean.dim"));
        let extra = node(r#"{"name": "correction", "arg": {"as_int": 1}}"#);
        assert_eq!(
            check(&extra).unwrap_err(),
            "unexpected argument `correction` for mean.dim(self, dim, keepdim, *, dtype)"
        );
        let unknown: Node = serde_json::from_str(
            r#"{"target": "grid_sampler.default", "outputs": [], "inputs": []}"#,
        )
        .unwrap();
        assert!(check(&unknown).is_err());
    }
}
