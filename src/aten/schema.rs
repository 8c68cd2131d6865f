//! The aten schemas: for every op the importers read, the evaluator computes or the ONNX
//! lowering translates, its arguments as torch declares them (`native_functions.yaml`),
//! positional and keyword-only, each with torch's default. This table is the one place they
//! are written: the TorchScript importer turns positional calls into named arguments with
//! it, a program node naming an argument its op does not have is refused with it, an argument a node
//! leaves out is read as its default from it ([`crate::aten::args::Args`]), and the op
//! documents print signatures from it.
//!
//! Rows are produced from torch's own schemas by `scripts/aten-schema OVERLOAD…`, and the
//! interop tier checks the whole table against torch 2.13 (through `docs/onnx-ops.md`, which
//! prints every row).

use super::program::Node;

/// A default value, as torch's schema declares it (`arg.default_value`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DefaultValue {
    /// `None` (an optional argument).
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    /// An int list; torch's `int[2] dilation=1` is `Ints(&[1])`, repeated to the rank by
    /// the reader ([`crate::aten::args::Args::ints`]).
    Ints(&'static [i64]),
    Str(&'static str),
}

impl std::fmt::Display for DefaultValue {
    /// As Python writes the value (`False`, `1e-05`, `[0, 1]`, `'none'`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DefaultValue::None => write!(f, "None"),
            DefaultValue::Bool(true) => write!(f, "True"),
            DefaultValue::Bool(false) => write!(f, "False"),
            DefaultValue::Int(i) => write!(f, "{i}"),
            DefaultValue::Float(x) => write!(f, "{x:?}"),
            DefaultValue::Ints(v) => {
                let items: Vec<String> = v.iter().map(i64::to_string).collect();
                write!(f, "[{}]", items.join(", "))
            }
            DefaultValue::Str(s) => write!(f, "'{s}'"),
        }
    }
}

/// One argument: its name, and its default (`None`: required).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arg {
    pub name: &'static str,
    pub default: Option<DefaultValue>,
}

/// A required argument.
const fn arg(name: &'static str) -> Arg {
    Arg {
        name,
        default: None,
    }
}

/// An argument with torch's default `default`.
const fn arg_or(name: &'static str, default: DefaultValue) -> Arg {
    Arg {
        name,
        default: Some(default),
    }
}

/// One overload's arguments.
#[derive(Debug, PartialEq)]
pub struct Schema {
    /// The overload as in `torch.ops.aten.<target>` (`conv2d.default`); `_operator.<name>`
    /// for the Python operators torch.export records on symbolic sizes.
    pub target: &'static str,
    /// Positional arguments, in order.
    pub args: &'static [Arg],
    /// Keyword-only arguments (after `*`).
    pub kwargs: &'static [Arg],
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

    /// Every argument, positional then keyword-only.
    pub fn arguments(&self) -> impl Iterator<Item = &'static Arg> {
        self.args.iter().chain(self.kwargs)
    }

    /// Whether `name` is one of the arguments.
    pub fn has(&self, name: &str) -> bool {
        self.arguments().any(|a| a.name == name)
    }

    /// Argument `name`'s default (`None`: no such argument, or a required one).
    pub fn default(&self, name: &str) -> Option<DefaultValue> {
        self.arguments()
            .find(|a| a.name == name)
            .and_then(|a| a.default)
    }

    /// The schema as a user reads it: `mean.dim(self, dim, keepdim, *, dtype)`.
    pub fn signature(&self) -> String {
        self.written(|a| a.name.to_owned())
    }

    /// The schema with torch's defaults, as the op documents print it (and the interop tier
    /// checks against torch): `mean.dim(self, dim, keepdim=False, *, dtype=None)`.
    #[cfg(test)]
    pub fn declaration(&self) -> String {
        self.written(|a| match a.default {
            Some(d) => format!("{}={d}", a.name),
            None => a.name.to_owned(),
        })
    }

    fn written(&self, arg: impl Fn(&Arg) -> String) -> String {
        let mut names: Vec<String> = self.args.iter().map(&arg).collect();
        if !self.kwargs.is_empty() {
            names.push("*".to_owned());
            names.extend(self.kwargs.iter().map(&arg));
        }
        format!("{}({})", self.target, names.join(", "))
    }
}

const fn schema(target: &'static str, args: &'static [Arg], kwargs: &'static [Arg]) -> Schema {
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

use DefaultValue as D;

/// Every schema, sorted by target.
pub const SCHEMAS: &[Schema] = &[
    schema("__and__.Tensor", &[arg("self"), arg("other")], &[]),
    schema("__or__.Tensor", &[arg("self"), arg("other")], &[]),
    schema(
        "_convolution.default",
        &[
            arg("input"),
            arg("weight"),
            arg("bias"),
            arg("stride"),
            arg("padding"),
            arg("dilation"),
            arg("transposed"),
            arg("output_padding"),
            arg("groups"),
            arg("benchmark"),
            arg("deterministic"),
            arg("cudnn_enabled"),
            arg("allow_tf32"),
        ],
        &[],
    ),
    schema(
        "_log_softmax.default",
        &[arg("self"), arg("dim"), arg("half_to_float")],
        &[],
    ),
    schema(
        "_native_batch_norm_legit.no_stats",
        &[
            arg("input"),
            arg("weight"),
            arg("bias"),
            arg("training"),
            arg("momentum"),
            arg("eps"),
        ],
        &[],
    ),
    schema(
        "_native_batch_norm_legit_functional.default",
        &[
            arg("input"),
            arg("weight"),
            arg("bias"),
            arg("running_mean"),
            arg("running_var"),
            arg("training"),
            arg("momentum"),
            arg("eps"),
        ],
        &[],
    ),
    schema(
        "_native_batch_norm_legit_no_training.default",
        &[
            arg("input"),
            arg("weight"),
            arg("bias"),
            arg("running_mean"),
            arg("running_var"),
            arg("momentum"),
            arg("eps"),
        ],
        &[],
    ),
    not_evaluated(
        schema(
            "_native_multi_head_attention.default",
            &[
                arg("query"),
                arg("key"),
                arg("value"),
                arg("embed_dim"),
                arg("num_head"),
                arg("qkv_weight"),
                arg("qkv_bias"),
                arg("proj_weight"),
                arg("proj_bias"),
                arg_or("mask", D::None),
                arg_or("need_weights", D::Bool(true)),
                arg_or("average_attn_weights", D::Bool(true)),
                arg_or("mask_type", D::None),
            ],
            &[],
        ),
        "a fused attention layer of constants alone has not been met; its lowering computes it",
    ),
    schema("_operator.mul", &[arg("a"), arg("b")], &[]),
    schema(
        "_safe_softmax.default",
        &[arg("self"), arg("dim"), arg_or("dtype", D::None)],
        &[],
    ),
    schema(
        "_softmax.default",
        &[arg("self"), arg("dim"), arg("half_to_float")],
        &[],
    ),
    schema(
        "_to_copy.default",
        &[arg("self")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
            arg_or("non_blocking", D::Bool(false)),
            arg_or("memory_format", D::None),
        ],
    ),
    not_evaluated(
        schema(
            "_transformer_encoder_layer_fwd.default",
            &[
                arg("src"),
                arg("embed_dim"),
                arg("num_heads"),
                arg("qkv_weight"),
                arg("qkv_bias"),
                arg("proj_weight"),
                arg("proj_bias"),
                arg("use_gelu"),
                arg("norm_first"),
                arg("eps"),
                arg("norm_weight_1"),
                arg("norm_bias_1"),
                arg("norm_weight_2"),
                arg("norm_bias_2"),
                arg("ffn_weight_1"),
                arg("ffn_bias_1"),
                arg("ffn_weight_2"),
                arg("ffn_bias_2"),
                arg_or("mask", D::None),
                arg_or("mask_type", D::None),
            ],
            &[],
        ),
        "a fused encoder layer of constants alone has not been met; its lowering computes it",
    ),
    schema("_unsafe_view.default", &[arg("self"), arg("size")], &[]),
    schema(
        "_upsample_bicubic2d_aa.default",
        &[
            arg("self"),
            arg("output_size"),
            arg("align_corners"),
            arg_or("scales_h", D::None),
            arg_or("scales_w", D::None),
        ],
        &[],
    ),
    schema(
        "_upsample_bicubic2d_aa.vec",
        &[
            arg("input"),
            arg("output_size"),
            arg("align_corners"),
            arg("scale_factors"),
        ],
        &[],
    ),
    schema(
        "_upsample_bilinear2d_aa.default",
        &[
            arg("self"),
            arg("output_size"),
            arg("align_corners"),
            arg_or("scales_h", D::None),
            arg_or("scales_w", D::None),
        ],
        &[],
    ),
    schema(
        "_upsample_bilinear2d_aa.vec",
        &[
            arg("input"),
            arg("output_size"),
            arg("align_corners"),
            arg("scale_factors"),
        ],
        &[],
    ),
    schema(
        "_upsample_nearest_exact1d.default",
        &[arg("self"), arg("output_size"), arg_or("scales", D::None)],
        &[],
    ),
    schema(
        "_upsample_nearest_exact1d.vec",
        &[arg("input"), arg("output_size"), arg("scale_factors")],
        &[],
    ),
    schema(
        "_upsample_nearest_exact2d.default",
        &[
            arg("self"),
            arg("output_size"),
            arg_or("scales_h", D::None),
            arg_or("scales_w", D::None),
        ],
        &[],
    ),
    schema(
        "_upsample_nearest_exact2d.vec",
        &[arg("input"), arg("output_size"), arg("scale_factors")],
        &[],
    ),
    schema(
        "_upsample_nearest_exact3d.default",
        &[
            arg("self"),
            arg("output_size"),
            arg_or("scales_d", D::None),
            arg_or("scales_h", D::None),
            arg_or("scales_w", D::None),
        ],
        &[],
    ),
    schema(
        "_upsample_nearest_exact3d.vec",
        &[arg("input"), arg("output_size"), arg("scale_factors")],
        &[],
    ),
    schema(
        "_weight_norm.default",
        &[arg("v"), arg("g"), arg_or("dim", D::Int(0))],
        &[],
    ),
    schema("abs.default", &[arg("self")], &[]),
    schema("acos.default", &[arg("self")], &[]),
    schema("acosh.default", &[arg("self")], &[]),
    schema(
        "adaptive_avg_pool1d.default",
        &[arg("self"), arg("output_size")],
        &[],
    ),
    schema(
        "adaptive_avg_pool2d.default",
        &[arg("self"), arg("output_size")],
        &[],
    ),
    schema(
        "adaptive_avg_pool3d.default",
        &[arg("self"), arg("output_size")],
        &[],
    ),
    schema(
        "adaptive_max_pool1d.default",
        &[arg("self"), arg("output_size")],
        &[],
    ),
    schema(
        "adaptive_max_pool2d.default",
        &[arg("self"), arg("output_size")],
        &[],
    ),
    schema(
        "adaptive_max_pool3d.default",
        &[arg("self"), arg("output_size")],
        &[],
    ),
    schema(
        "add.Scalar",
        &[arg("self"), arg("other"), arg_or("alpha", D::Int(1))],
        &[],
    ),
    schema(
        "add.Tensor",
        &[arg("self"), arg("other")],
        &[arg_or("alpha", D::Int(1))],
    ),
    schema(
        "add_.Tensor",
        &[arg("self"), arg("other")],
        &[arg_or("alpha", D::Int(1))],
    ),
    schema(
        "addcdiv.default",
        &[arg("self"), arg("tensor1"), arg("tensor2")],
        &[arg_or("value", D::Int(1))],
    ),
    schema(
        "addcmul.default",
        &[arg("self"), arg("tensor1"), arg("tensor2")],
        &[arg_or("value", D::Int(1))],
    ),
    schema(
        "addmm.default",
        &[arg("self"), arg("mat1"), arg("mat2")],
        &[arg_or("beta", D::Int(1)), arg_or("alpha", D::Int(1))],
    ),
    schema("adjoint.default", &[arg("self")], &[]),
    schema("alias.default", &[arg("self")], &[]),
    schema("alias_copy.default", &[arg("self")], &[]),
    schema(
        "all.dim",
        &[arg("self"), arg("dim"), arg_or("keepdim", D::Bool(false))],
        &[],
    ),
    schema(
        "all.dims",
        &[
            arg("self"),
            arg_or("dim", D::None),
            arg_or("keepdim", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "alpha_dropout.default",
        &[arg("input"), arg("p"), arg("train")],
        &[],
    ),
    schema(
        "alpha_dropout_.default",
        &[arg("self"), arg("p"), arg("train")],
        &[],
    ),
    schema(
        "amax.default",
        &[
            arg("self"),
            arg_or("dim", D::Ints(&[])),
            arg_or("keepdim", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "amin.default",
        &[
            arg("self"),
            arg_or("dim", D::Ints(&[])),
            arg_or("keepdim", D::Bool(false)),
        ],
        &[],
    ),
    schema("angle.default", &[arg("self")], &[]),
    schema(
        "any.dim",
        &[arg("self"), arg("dim"), arg_or("keepdim", D::Bool(false))],
        &[],
    ),
    schema(
        "any.dims",
        &[
            arg("self"),
            arg_or("dim", D::None),
            arg_or("keepdim", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "arange.default",
        &[arg("end")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema(
        "arange.start",
        &[arg("start"), arg("end")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema(
        "arange.start_step",
        &[arg("start"), arg("end"), arg_or("step", D::Int(1))],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema(
        "argmax.default",
        &[
            arg("self"),
            arg_or("dim", D::None),
            arg_or("keepdim", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "argmin.default",
        &[
            arg("self"),
            arg_or("dim", D::None),
            arg_or("keepdim", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "argsort.default",
        &[
            arg("self"),
            arg_or("dim", D::Int(-1)),
            arg_or("descending", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "argsort.stable",
        &[arg("self")],
        &[
            arg("stable"),
            arg_or("dim", D::Int(-1)),
            arg_or("descending", D::Bool(false)),
        ],
    ),
    schema("asin.default", &[arg("self")], &[]),
    schema("asinh.default", &[arg("self")], &[]),
    schema("atan.default", &[arg("self")], &[]),
    schema("atan2.default", &[arg("self"), arg("other")], &[]),
    schema("atanh.default", &[arg("self")], &[]),
    schema("atleast_1d.default", &[arg("self")], &[]),
    schema("atleast_2d.default", &[arg("self")], &[]),
    schema("atleast_3d.default", &[arg("self")], &[]),
    schema(
        "avg_pool1d.default",
        &[
            arg("self"),
            arg("kernel_size"),
            arg_or("stride", D::Ints(&[])),
            arg_or("padding", D::Ints(&[0])),
            arg_or("ceil_mode", D::Bool(false)),
            arg_or("count_include_pad", D::Bool(true)),
        ],
        &[],
    ),
    schema(
        "avg_pool2d.default",
        &[
            arg("self"),
            arg("kernel_size"),
            arg_or("stride", D::Ints(&[])),
            arg_or("padding", D::Ints(&[0])),
            arg_or("ceil_mode", D::Bool(false)),
            arg_or("count_include_pad", D::Bool(true)),
            arg_or("divisor_override", D::None),
        ],
        &[],
    ),
    schema(
        "avg_pool3d.default",
        &[
            arg("self"),
            arg("kernel_size"),
            arg_or("stride", D::Ints(&[])),
            arg_or("padding", D::Ints(&[0])),
            arg_or("ceil_mode", D::Bool(false)),
            arg_or("count_include_pad", D::Bool(true)),
            arg_or("divisor_override", D::None),
        ],
        &[],
    ),
    schema(
        "baddbmm.default",
        &[arg("self"), arg("batch1"), arg("batch2")],
        &[arg_or("beta", D::Int(1)), arg_or("alpha", D::Int(1))],
    ),
    schema(
        "batch_norm.default",
        &[
            arg("input"),
            arg("weight"),
            arg("bias"),
            arg("running_mean"),
            arg("running_var"),
            arg("training"),
            arg("momentum"),
            arg("eps"),
            arg("cudnn_enabled"),
        ],
        &[],
    ),
    schema("bitwise_and.Tensor", &[arg("self"), arg("other")], &[]),
    schema("bitwise_not.default", &[arg("self")], &[]),
    schema("bitwise_or.Tensor", &[arg("self"), arg("other")], &[]),
    schema("bmm.default", &[arg("self"), arg("mat2")], &[]),
    schema("broadcast_to.default", &[arg("self"), arg("size")], &[]),
    schema(
        "cat.default",
        &[arg("tensors"), arg_or("dim", D::Int(0))],
        &[],
    ),
    schema("ceil.default", &[arg("self")], &[]),
    schema(
        "celu.default",
        &[arg("self"), arg_or("alpha", D::Float(1.0))],
        &[],
    ),
    schema(
        "channel_shuffle.default",
        &[arg("self"), arg("groups")],
        &[],
    ),
    schema(
        "cholesky.default",
        &[arg("self"), arg_or("upper", D::Bool(false))],
        &[],
    ),
    schema(
        "cholesky_inverse.default",
        &[arg("self"), arg_or("upper", D::Bool(false))],
        &[],
    ),
    schema(
        "chunk.default",
        &[arg("self"), arg("chunks"), arg_or("dim", D::Int(0))],
        &[],
    ),
    schema(
        "clamp.Tensor",
        &[arg("self"), arg_or("min", D::None), arg_or("max", D::None)],
        &[],
    ),
    schema(
        "clamp.default",
        &[arg("self"), arg_or("min", D::None), arg_or("max", D::None)],
        &[],
    ),
    schema(
        "clamp_.Tensor",
        &[arg("self"), arg_or("min", D::None), arg_or("max", D::None)],
        &[],
    ),
    schema(
        "clamp_.default",
        &[arg("self"), arg_or("min", D::None), arg_or("max", D::None)],
        &[],
    ),
    schema("clamp_max.default", &[arg("self"), arg("max")], &[]),
    schema("clamp_min.default", &[arg("self"), arg("min")], &[]),
    schema(
        "clone.default",
        &[arg("self")],
        &[arg_or("memory_format", D::None)],
    ),
    schema(
        "col2im.default",
        &[
            arg("self"),
            arg("output_size"),
            arg("kernel_size"),
            arg("dilation"),
            arg("padding"),
            arg("stride"),
        ],
        &[],
    ),
    schema("conj_physical.default", &[arg("self")], &[]),
    schema(
        "constant_pad_nd.default",
        &[arg("self"), arg("pad"), arg_or("value", D::Int(0))],
        &[],
    ),
    schema(
        "contiguous.default",
        &[arg("self")],
        &[arg_or("memory_format", D::Int(0))],
    ),
    schema(
        "conv1d.default",
        &[
            arg("input"),
            arg("weight"),
            arg_or("bias", D::None),
            arg_or("stride", D::Ints(&[1])),
            arg_or("padding", D::Ints(&[0])),
            arg_or("dilation", D::Ints(&[1])),
            arg_or("groups", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "conv1d.padding",
        &[
            arg("input"),
            arg("weight"),
            arg_or("bias", D::None),
            arg_or("stride", D::Ints(&[1])),
            arg_or("padding", D::Str("valid")),
            arg_or("dilation", D::Ints(&[1])),
            arg_or("groups", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "conv2d.default",
        &[
            arg("input"),
            arg("weight"),
            arg_or("bias", D::None),
            arg_or("stride", D::Ints(&[1])),
            arg_or("padding", D::Ints(&[0])),
            arg_or("dilation", D::Ints(&[1])),
            arg_or("groups", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "conv2d.padding",
        &[
            arg("input"),
            arg("weight"),
            arg_or("bias", D::None),
            arg_or("stride", D::Ints(&[1])),
            arg_or("padding", D::Str("valid")),
            arg_or("dilation", D::Ints(&[1])),
            arg_or("groups", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "conv3d.default",
        &[
            arg("input"),
            arg("weight"),
            arg_or("bias", D::None),
            arg_or("stride", D::Ints(&[1])),
            arg_or("padding", D::Ints(&[0])),
            arg_or("dilation", D::Ints(&[1])),
            arg_or("groups", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "conv3d.padding",
        &[
            arg("input"),
            arg("weight"),
            arg_or("bias", D::None),
            arg_or("stride", D::Ints(&[1])),
            arg_or("padding", D::Str("valid")),
            arg_or("dilation", D::Ints(&[1])),
            arg_or("groups", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "conv_transpose1d.default",
        &[
            arg("input"),
            arg("weight"),
            arg_or("bias", D::None),
            arg_or("stride", D::Ints(&[1])),
            arg_or("padding", D::Ints(&[0])),
            arg_or("output_padding", D::Ints(&[0])),
            arg_or("groups", D::Int(1)),
            arg_or("dilation", D::Ints(&[1])),
        ],
        &[],
    ),
    schema(
        "conv_transpose2d.input",
        &[
            arg("input"),
            arg("weight"),
            arg_or("bias", D::None),
            arg_or("stride", D::Ints(&[1])),
            arg_or("padding", D::Ints(&[0])),
            arg_or("output_padding", D::Ints(&[0])),
            arg_or("groups", D::Int(1)),
            arg_or("dilation", D::Ints(&[1])),
        ],
        &[],
    ),
    schema(
        "conv_transpose3d.input",
        &[
            arg("input"),
            arg("weight"),
            arg_or("bias", D::None),
            arg_or("stride", D::Ints(&[1])),
            arg_or("padding", D::Ints(&[0])),
            arg_or("output_padding", D::Ints(&[0])),
            arg_or("groups", D::Int(1)),
            arg_or("dilation", D::Ints(&[1])),
        ],
        &[],
    ),
    schema(
        "convolution.default",
        &[
            arg("input"),
            arg("weight"),
            arg("bias"),
            arg("stride"),
            arg("padding"),
            arg("dilation"),
            arg("transposed"),
            arg("output_padding"),
            arg("groups"),
        ],
        &[],
    ),
    schema(
        "copy_.default",
        &[
            arg("self"),
            arg("src"),
            arg_or("non_blocking", D::Bool(false)),
        ],
        &[],
    ),
    schema("copysign.Scalar", &[arg("self"), arg("other")], &[]),
    schema("cos.default", &[arg("self")], &[]),
    schema("cosh.default", &[arg("self")], &[]),
    schema(
        "count_nonzero.default",
        &[arg("self"), arg_or("dim", D::None)],
        &[],
    ),
    schema("count_nonzero.dim_IntList", &[arg("self"), arg("dim")], &[]),
    schema(
        "cumprod.default",
        &[arg("self"), arg("dim")],
        &[arg_or("dtype", D::None)],
    ),
    schema(
        "cumsum.default",
        &[arg("self"), arg("dim")],
        &[arg_or("dtype", D::None)],
    ),
    schema("deg2rad.default", &[arg("self")], &[]),
    schema("det.default", &[arg("self")], &[]),
    schema("detach.default", &[arg("self")], &[]),
    schema("detach_.default", &[arg("self")], &[]),
    schema("detach_copy.default", &[arg("self")], &[]),
    schema(
        "diag.default",
        &[arg("self"), arg_or("diagonal", D::Int(0))],
        &[],
    ),
    schema(
        "diag_embed.default",
        &[
            arg("self"),
            arg_or("offset", D::Int(0)),
            arg_or("dim1", D::Int(-2)),
            arg_or("dim2", D::Int(-1)),
        ],
        &[],
    ),
    schema(
        "diagflat.default",
        &[arg("self"), arg_or("offset", D::Int(0))],
        &[],
    ),
    schema(
        "diagonal.default",
        &[
            arg("self"),
            arg_or("offset", D::Int(0)),
            arg_or("dim1", D::Int(0)),
            arg_or("dim2", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "diagonal_copy.default",
        &[
            arg("self"),
            arg_or("offset", D::Int(0)),
            arg_or("dim1", D::Int(0)),
            arg_or("dim2", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "diff.default",
        &[
            arg("self"),
            arg_or("n", D::Int(1)),
            arg_or("dim", D::Int(-1)),
            arg_or("prepend", D::None),
            arg_or("append", D::None),
        ],
        &[],
    ),
    schema("digamma.default", &[arg("self")], &[]),
    schema("div.Scalar", &[arg("self"), arg("other")], &[]),
    schema("div.Tensor", &[arg("self"), arg("other")], &[]),
    schema(
        "div.Tensor_mode",
        &[arg("self"), arg("other")],
        &[arg("rounding_mode")],
    ),
    schema("div_.Tensor", &[arg("self"), arg("other")], &[]),
    schema("divide.Scalar", &[arg("self"), arg("other")], &[]),
    schema("divide.Tensor", &[arg("self"), arg("other")], &[]),
    schema(
        "divide.Tensor_mode",
        &[arg("self"), arg("other")],
        &[arg("rounding_mode")],
    ),
    schema(
        "dropout.default",
        &[arg("input"), arg("p"), arg("train")],
        &[],
    ),
    schema(
        "dropout_.default",
        &[arg("self"), arg("p"), arg("train")],
        &[],
    ),
    schema("dsplit.array", &[arg("self"), arg("indices")], &[]),
    schema("dsplit.int", &[arg("self"), arg("sections")], &[]),
    schema(
        "einsum.default",
        &[arg("equation"), arg("tensors")],
        &[arg_or("path", D::None)],
    ),
    schema(
        "elu.default",
        &[
            arg("self"),
            arg_or("alpha", D::Int(1)),
            arg_or("scale", D::Int(1)),
            arg_or("input_scale", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "elu_.default",
        &[
            arg("self"),
            arg_or("alpha", D::Int(1)),
            arg_or("scale", D::Int(1)),
            arg_or("input_scale", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "embedding.default",
        &[
            arg("weight"),
            arg("indices"),
            arg_or("padding_idx", D::Int(-1)),
            arg_or("scale_grad_by_freq", D::Bool(false)),
            arg_or("sparse", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "empty.memory_format",
        &[arg("size")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
            arg_or("memory_format", D::None),
        ],
    ),
    schema(
        "empty_like.default",
        &[arg("self")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
            arg_or("memory_format", D::None),
        ],
    ),
    schema("eq.Scalar", &[arg("self"), arg("other")], &[]),
    schema("eq.Tensor", &[arg("self"), arg("other")], &[]),
    schema("erf.default", &[arg("self")], &[]),
    schema("erfc.default", &[arg("self")], &[]),
    schema("erfinv.default", &[arg("self")], &[]),
    schema("exp.default", &[arg("self")], &[]),
    schema("exp2.default", &[arg("self")], &[]),
    schema(
        "expand.default",
        &[arg("self"), arg("size")],
        &[arg_or("implicit", D::Bool(false))],
    ),
    schema("expand_as.default", &[arg("self"), arg("other")], &[]),
    schema(
        "expand_copy.default",
        &[arg("self"), arg("size")],
        &[arg_or("implicit", D::Bool(false))],
    ),
    schema("expm1.default", &[arg("self")], &[]),
    schema(
        "eye.default",
        &[arg("n")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema(
        "eye.m",
        &[arg("n"), arg("m")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema(
        "feature_alpha_dropout.default",
        &[arg("input"), arg("p"), arg("train")],
        &[],
    ),
    schema(
        "feature_alpha_dropout_.default",
        &[arg("self"), arg("p"), arg("train")],
        &[],
    ),
    schema(
        "feature_dropout.default",
        &[arg("input"), arg("p"), arg("train")],
        &[],
    ),
    schema(
        "feature_dropout_.default",
        &[arg("self"), arg("p"), arg("train")],
        &[],
    ),
    schema(
        "fft_fftshift.default",
        &[arg("self"), arg_or("dim", D::None)],
        &[],
    ),
    schema(
        "fft_hfft.default",
        &[
            arg("self"),
            arg_or("n", D::None),
            arg_or("dim", D::Int(-1)),
            arg_or("norm", D::None),
        ],
        &[],
    ),
    schema(
        "fft_hfft2.default",
        &[
            arg("self"),
            arg_or("s", D::None),
            arg_or("dim", D::Ints(&[-2, -1])),
            arg_or("norm", D::None),
        ],
        &[],
    ),
    schema(
        "fft_hfftn.default",
        &[
            arg("self"),
            arg_or("s", D::None),
            arg_or("dim", D::None),
            arg_or("norm", D::None),
        ],
        &[],
    ),
    schema(
        "fft_ifftshift.default",
        &[arg("self"), arg_or("dim", D::None)],
        &[],
    ),
    schema(
        "fft_irfft.default",
        &[
            arg("self"),
            arg_or("n", D::None),
            arg_or("dim", D::Int(-1)),
            arg_or("norm", D::None),
        ],
        &[],
    ),
    schema(
        "fft_irfft2.default",
        &[
            arg("self"),
            arg_or("s", D::None),
            arg_or("dim", D::Ints(&[-2, -1])),
            arg_or("norm", D::None),
        ],
        &[],
    ),
    schema(
        "fft_irfftn.default",
        &[
            arg("self"),
            arg_or("s", D::None),
            arg_or("dim", D::None),
            arg_or("norm", D::None),
        ],
        &[],
    ),
    schema("fill.Scalar", &[arg("self"), arg("value")], &[]),
    schema("fill_.Scalar", &[arg("self"), arg("value")], &[]),
    schema("fill_.Tensor", &[arg("self"), arg("value")], &[]),
    schema(
        "flatten.using_ints",
        &[
            arg("self"),
            arg_or("start_dim", D::Int(0)),
            arg_or("end_dim", D::Int(-1)),
        ],
        &[],
    ),
    schema("flip.default", &[arg("self"), arg("dims")], &[]),
    schema("fliplr.default", &[arg("self")], &[]),
    schema("flipud.default", &[arg("self")], &[]),
    schema("floor.default", &[arg("self")], &[]),
    schema("frac.default", &[arg("self")], &[]),
    schema(
        "full.default",
        &[arg("size"), arg("fill_value")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema(
        "full_like.default",
        &[arg("self"), arg("fill_value")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
            arg_or("memory_format", D::None),
        ],
    ),
    schema(
        "gather.default",
        &[arg("self"), arg("dim"), arg("index")],
        &[arg_or("sparse_grad", D::Bool(false))],
    ),
    schema("ge.Scalar", &[arg("self"), arg("other")], &[]),
    schema("ge.Tensor", &[arg("self"), arg("other")], &[]),
    schema(
        "gelu.default",
        &[arg("self")],
        &[arg_or("approximate", D::Str("none"))],
    ),
    schema(
        "glu.default",
        &[arg("self"), arg_or("dim", D::Int(-1))],
        &[],
    ),
    schema(
        "group_norm.default",
        &[
            arg("input"),
            arg("num_groups"),
            arg_or("weight", D::None),
            arg_or("bias", D::None),
            arg_or("eps", D::Float(1e-05)),
            arg_or("cudnn_enabled", D::Bool(true)),
        ],
        &[],
    ),
    not_evaluated(
        schema(
            "gru.input",
            &[
                arg("input"),
                arg("hx"),
                arg("params"),
                arg("has_biases"),
                arg("num_layers"),
                arg("dropout"),
                arg("train"),
                arg("bidirectional"),
                arg("batch_first"),
            ],
            &[],
        ),
        "a recurrent layer run over a constant sequence has not been met; its lowering computes it",
    ),
    schema("gt.Scalar", &[arg("self"), arg("other")], &[]),
    schema("gt.Tensor", &[arg("self"), arg("other")], &[]),
    schema(
        "hardshrink.default",
        &[arg("self"), arg_or("lambd", D::Float(0.5))],
        &[],
    ),
    schema("hardsigmoid.default", &[arg("self")], &[]),
    schema("hardsigmoid_.default", &[arg("self")], &[]),
    schema("hardswish.default", &[arg("self")], &[]),
    schema("hardswish_.default", &[arg("self")], &[]),
    schema(
        "hardtanh.default",
        &[
            arg("self"),
            arg_or("min_val", D::Int(-1)),
            arg_or("max_val", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "hardtanh_.default",
        &[
            arg("self"),
            arg_or("min_val", D::Int(-1)),
            arg_or("max_val", D::Int(1)),
        ],
        &[],
    ),
    schema("hsplit.array", &[arg("self"), arg("indices")], &[]),
    schema("hsplit.int", &[arg("self"), arg("sections")], &[]),
    schema("i0.default", &[arg("self")], &[]),
    schema(
        "im2col.default",
        &[
            arg("self"),
            arg("kernel_size"),
            arg("dilation"),
            arg("padding"),
            arg("stride"),
        ],
        &[],
    ),
    schema("index.Tensor", &[arg("self"), arg("indices")], &[]),
    schema(
        "index_select.default",
        &[arg("self"), arg("dim"), arg("index")],
        &[],
    ),
    schema(
        "instance_norm.default",
        &[
            arg("input"),
            arg("weight"),
            arg("bias"),
            arg("running_mean"),
            arg("running_var"),
            arg("use_input_stats"),
            arg("momentum"),
            arg("eps"),
            arg("cudnn_enabled"),
        ],
        &[],
    ),
    schema("inverse.default", &[arg("self")], &[]),
    schema("isfinite.default", &[arg("self")], &[]),
    schema("isinf.default", &[arg("self")], &[]),
    schema("isnan.default", &[arg("self")], &[]),
    schema("isneginf.default", &[arg("self")], &[]),
    schema("isposinf.default", &[arg("self")], &[]),
    schema("isreal.default", &[arg("self")], &[]),
    not_evaluated(
        schema("item.default", &[arg("self")], &[]),
        "its result is a number, not a tensor: a constant's is read where an argument names it",
    ),
    schema(
        "layer_norm.default",
        &[
            arg("input"),
            arg("normalized_shape"),
            arg_or("weight", D::None),
            arg_or("bias", D::None),
            arg_or("eps", D::Float(1e-05)),
            arg_or("cudnn_enable", D::Bool(true)),
        ],
        &[],
    ),
    schema("le.Scalar", &[arg("self"), arg("other")], &[]),
    schema("le.Tensor", &[arg("self"), arg("other")], &[]),
    schema(
        "leaky_relu.default",
        &[arg("self"), arg_or("negative_slope", D::Float(0.01))],
        &[],
    ),
    schema(
        "leaky_relu_.default",
        &[arg("self"), arg_or("negative_slope", D::Float(0.01))],
        &[],
    ),
    schema(
        "lerp.Scalar",
        &[arg("self"), arg("end"), arg("weight")],
        &[],
    ),
    schema(
        "lerp.Tensor",
        &[arg("self"), arg("end"), arg("weight")],
        &[],
    ),
    schema("lgamma.default", &[arg("self")], &[]),
    schema("lift_fresh_copy.default", &[arg("self")], &[]),
    schema(
        "linalg_cholesky.default",
        &[arg("self")],
        &[arg_or("upper", D::Bool(false))],
    ),
    schema("linalg_det.default", &[arg("A")], &[]),
    schema(
        "linalg_diagonal.default",
        &[arg("A")],
        &[
            arg_or("offset", D::Int(0)),
            arg_or("dim1", D::Int(-2)),
            arg_or("dim2", D::Int(-1)),
        ],
    ),
    schema("linalg_inv.default", &[arg("A")], &[]),
    schema(
        "linalg_matrix_norm.default",
        &[
            arg("self"),
            arg("ord"),
            arg_or("dim", D::Ints(&[-2, -1])),
            arg_or("keepdim", D::Bool(false)),
        ],
        &[arg_or("dtype", D::None)],
    ),
    schema(
        "linalg_matrix_norm.str_ord",
        &[
            arg("self"),
            arg_or("ord", D::Str("fro")),
            arg_or("dim", D::Ints(&[-2, -1])),
            arg_or("keepdim", D::Bool(false)),
        ],
        &[arg_or("dtype", D::None)],
    ),
    schema("linalg_matrix_power.default", &[arg("self"), arg("n")], &[]),
    schema(
        "linalg_norm.default",
        &[
            arg("self"),
            arg_or("ord", D::None),
            arg_or("dim", D::None),
            arg_or("keepdim", D::Bool(false)),
        ],
        &[arg_or("dtype", D::None)],
    ),
    schema(
        "linalg_norm.ord_str",
        &[
            arg("self"),
            arg("ord"),
            arg_or("dim", D::None),
            arg_or("keepdim", D::Bool(false)),
        ],
        &[arg_or("dtype", D::None)],
    ),
    schema("linalg_slogdet.default", &[arg("A")], &[]),
    schema(
        "linalg_vander.default",
        &[arg("x")],
        &[arg_or("N", D::None)],
    ),
    schema(
        "linalg_vector_norm.default",
        &[
            arg("self"),
            arg_or("ord", D::Int(2)),
            arg_or("dim", D::None),
            arg_or("keepdim", D::Bool(false)),
        ],
        &[arg_or("dtype", D::None)],
    ),
    schema(
        "linear.default",
        &[arg("input"), arg("weight"), arg_or("bias", D::None)],
        &[],
    ),
    schema(
        "linspace.Scalar_Tensor",
        &[arg("start"), arg("end"), arg("steps")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema(
        "linspace.Tensor_Scalar",
        &[arg("start"), arg("end"), arg("steps")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema(
        "linspace.Tensor_Tensor",
        &[arg("start"), arg("end"), arg("steps")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema("log.default", &[arg("self")], &[]),
    schema("log10.default", &[arg("self")], &[]),
    schema("log1p.default", &[arg("self")], &[]),
    schema("log2.default", &[arg("self")], &[]),
    schema("log_sigmoid.default", &[arg("self")], &[]),
    schema(
        "log_softmax.int",
        &[arg("self"), arg("dim"), arg_or("dtype", D::None)],
        &[],
    ),
    schema("logdet.default", &[arg("self")], &[]),
    schema("logical_and.default", &[arg("self"), arg("other")], &[]),
    schema("logical_not.default", &[arg("self")], &[]),
    schema("logical_or.default", &[arg("self"), arg("other")], &[]),
    schema("logit.default", &[arg("self"), arg_or("eps", D::None)], &[]),
    schema(
        "logspace.Scalar_Tensor",
        &[
            arg("start"),
            arg("end"),
            arg("steps"),
            arg_or("base", D::Float(10.0)),
        ],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema(
        "logspace.Tensor_Scalar",
        &[
            arg("start"),
            arg("end"),
            arg("steps"),
            arg_or("base", D::Float(10.0)),
        ],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema(
        "logspace.Tensor_Tensor",
        &[
            arg("start"),
            arg("end"),
            arg("steps"),
            arg_or("base", D::Float(10.0)),
        ],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema(
        "logsumexp.default",
        &[arg("self"), arg("dim"), arg_or("keepdim", D::Bool(false))],
        &[],
    ),
    not_evaluated(
        schema(
            "lstm.input",
            &[
                arg("input"),
                arg("hx"),
                arg("params"),
                arg("has_biases"),
                arg("num_layers"),
                arg("dropout"),
                arg("train"),
                arg("bidirectional"),
                arg("batch_first"),
            ],
            &[],
        ),
        "a recurrent layer run over a constant sequence has not been met; its lowering computes it",
    ),
    schema("lt.Scalar", &[arg("self"), arg("other")], &[]),
    schema("lt.Tensor", &[arg("self"), arg("other")], &[]),
    schema("mH.default", &[arg("self")], &[]),
    schema("mT.default", &[arg("self")], &[]),
    schema(
        "masked_fill.Scalar",
        &[arg("self"), arg("mask"), arg("value")],
        &[],
    ),
    schema(
        "masked_fill.Tensor",
        &[arg("self"), arg("mask"), arg("value")],
        &[],
    ),
    schema(
        "masked_fill_.Scalar",
        &[arg("self"), arg("mask"), arg("value")],
        &[],
    ),
    schema(
        "masked_fill_.Tensor",
        &[arg("self"), arg("mask"), arg("value")],
        &[],
    ),
    schema("matmul.default", &[arg("self"), arg("other")], &[]),
    schema("matrix_H.default", &[arg("self")], &[]),
    schema("matrix_power.default", &[arg("self"), arg("n")], &[]),
    schema(
        "max.dim",
        &[arg("self"), arg("dim"), arg_or("keepdim", D::Bool(false))],
        &[],
    ),
    schema("max.other", &[arg("self"), arg("other")], &[]),
    schema(
        "max_pool1d.default",
        &[
            arg("self"),
            arg("kernel_size"),
            arg_or("stride", D::Ints(&[])),
            arg_or("padding", D::Ints(&[0])),
            arg_or("dilation", D::Ints(&[1])),
            arg_or("ceil_mode", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "max_pool1d_with_indices.default",
        &[
            arg("self"),
            arg("kernel_size"),
            arg_or("stride", D::Ints(&[])),
            arg_or("padding", D::Ints(&[0])),
            arg_or("dilation", D::Ints(&[1])),
            arg_or("ceil_mode", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "max_pool2d.default",
        &[
            arg("self"),
            arg("kernel_size"),
            arg_or("stride", D::Ints(&[])),
            arg_or("padding", D::Ints(&[0])),
            arg_or("dilation", D::Ints(&[1])),
            arg_or("ceil_mode", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "max_pool2d_with_indices.default",
        &[
            arg("self"),
            arg("kernel_size"),
            arg_or("stride", D::Ints(&[])),
            arg_or("padding", D::Ints(&[0])),
            arg_or("dilation", D::Ints(&[1])),
            arg_or("ceil_mode", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "max_pool3d.default",
        &[
            arg("self"),
            arg("kernel_size"),
            arg_or("stride", D::Ints(&[])),
            arg_or("padding", D::Ints(&[0])),
            arg_or("dilation", D::Ints(&[1])),
            arg_or("ceil_mode", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "max_pool3d_with_indices.default",
        &[
            arg("self"),
            arg("kernel_size"),
            arg_or("stride", D::Ints(&[])),
            arg_or("padding", D::Ints(&[0])),
            arg_or("dilation", D::Ints(&[1])),
            arg_or("ceil_mode", D::Bool(false)),
        ],
        &[],
    ),
    schema("maximum.default", &[arg("self"), arg("other")], &[]),
    schema("mean.default", &[arg("self")], &[arg_or("dtype", D::None)]),
    schema(
        "mean.dim",
        &[arg("self"), arg("dim"), arg_or("keepdim", D::Bool(false))],
        &[arg_or("dtype", D::None)],
    ),
    schema("meshgrid.default", &[arg("tensors")], &[]),
    schema("meshgrid.indexing", &[arg("tensors")], &[arg("indexing")]),
    schema(
        "min.dim",
        &[arg("self"), arg("dim"), arg_or("keepdim", D::Bool(false))],
        &[],
    ),
    schema("min.other", &[arg("self"), arg("other")], &[]),
    schema("minimum.default", &[arg("self"), arg("other")], &[]),
    schema("mish.default", &[arg("self")], &[]),
    schema("mish_.default", &[arg("self")], &[]),
    schema("mm.default", &[arg("self"), arg("mat2")], &[]),
    schema(
        "movedim.int",
        &[arg("self"), arg("source"), arg("destination")],
        &[],
    ),
    schema(
        "movedim.intlist",
        &[arg("self"), arg("source"), arg("destination")],
        &[],
    ),
    schema("mul.Scalar", &[arg("self"), arg("other")], &[]),
    schema("mul.Tensor", &[arg("self"), arg("other")], &[]),
    schema("mul_.Tensor", &[arg("self"), arg("other")], &[]),
    schema("multiply.Scalar", &[arg("self"), arg("other")], &[]),
    schema("multiply.Tensor", &[arg("self"), arg("other")], &[]),
    schema("mvlgamma.default", &[arg("self"), arg("p")], &[]),
    schema(
        "nan_to_num.default",
        &[
            arg("self"),
            arg_or("nan", D::None),
            arg_or("posinf", D::None),
            arg_or("neginf", D::None),
        ],
        &[],
    ),
    schema(
        "nanmean.default",
        &[
            arg("self"),
            arg_or("dim", D::None),
            arg_or("keepdim", D::Bool(false)),
        ],
        &[arg_or("dtype", D::None)],
    ),
    schema(
        "nansum.default",
        &[
            arg("self"),
            arg_or("dim", D::None),
            arg_or("keepdim", D::Bool(false)),
        ],
        &[arg_or("dtype", D::None)],
    ),
    schema(
        "narrow.default",
        &[arg("self"), arg("dim"), arg("start"), arg("length")],
        &[],
    ),
    schema(
        "narrow_copy.default",
        &[arg("self"), arg("dim"), arg("start"), arg("length")],
        &[],
    ),
    schema(
        "native_channel_shuffle.default",
        &[arg("self"), arg("groups")],
        &[],
    ),
    schema(
        "native_layer_norm.default",
        &[
            arg("input"),
            arg("normalized_shape"),
            arg("weight"),
            arg("bias"),
            arg("eps"),
        ],
        &[],
    ),
    schema("ne.Scalar", &[arg("self"), arg("other")], &[]),
    schema("ne.Tensor", &[arg("self"), arg("other")], &[]),
    schema("neg.default", &[arg("self")], &[]),
    schema(
        "new_empty.default",
        &[arg("self"), arg("size")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema(
        "new_full.default",
        &[arg("self"), arg("size"), arg("fill_value")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema(
        "new_ones.default",
        &[arg("self"), arg("size")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema(
        "new_zeros.default",
        &[arg("self"), arg("size")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema("numpy_T.default", &[arg("self")], &[]),
    schema(
        "one_hot.default",
        &[arg("self"), arg_or("num_classes", D::Int(-1))],
        &[],
    ),
    schema(
        "ones.default",
        &[arg("size")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema(
        "ones_like.default",
        &[arg("self")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
            arg_or("memory_format", D::None),
        ],
    ),
    schema(
        "pad.default",
        &[
            arg("self"),
            arg("pad"),
            arg_or("mode", D::Str("constant")),
            arg_or("value", D::None),
        ],
        &[],
    ),
    schema("permute.default", &[arg("self"), arg("dims")], &[]),
    schema("permute_copy.default", &[arg("self"), arg("dims")], &[]),
    schema(
        "pixel_shuffle.default",
        &[arg("self"), arg("upscale_factor")],
        &[],
    ),
    schema(
        "pixel_unshuffle.default",
        &[arg("self"), arg("downscale_factor")],
        &[],
    ),
    schema("polygamma.default", &[arg("n"), arg("self")], &[]),
    schema("positive.default", &[arg("self")], &[]),
    schema("pow.Scalar", &[arg("self"), arg("exponent")], &[]),
    schema("pow.Tensor_Scalar", &[arg("self"), arg("exponent")], &[]),
    schema("pow.Tensor_Tensor", &[arg("self"), arg("exponent")], &[]),
    schema("prelu.default", &[arg("self"), arg("weight")], &[]),
    schema("prod.default", &[arg("self")], &[arg_or("dtype", D::None)]),
    schema(
        "prod.dim_int",
        &[arg("self"), arg("dim"), arg_or("keepdim", D::Bool(false))],
        &[arg_or("dtype", D::None)],
    ),
    schema("rad2deg.default", &[arg("self")], &[]),
    schema("ravel.default", &[arg("self")], &[]),
    schema("real.default", &[arg("self")], &[]),
    schema("reciprocal.default", &[arg("self")], &[]),
    schema(
        "reflection_pad2d.default",
        &[arg("self"), arg("padding")],
        &[],
    ),
    schema("relu.default", &[arg("self")], &[]),
    schema("relu6.default", &[arg("self")], &[]),
    schema("relu_.default", &[arg("self")], &[]),
    schema("remainder.Scalar", &[arg("self"), arg("other")], &[]),
    schema("remainder.Tensor", &[arg("self"), arg("other")], &[]),
    schema("repeat.default", &[arg("self"), arg("repeats")], &[]),
    schema(
        "repeat_interleave.self_int",
        &[arg("self"), arg("repeats"), arg_or("dim", D::None)],
        &[arg_or("output_size", D::None)],
    ),
    schema(
        "replication_pad2d.default",
        &[arg("self"), arg("padding")],
        &[],
    ),
    schema("reshape.default", &[arg("self"), arg("shape")], &[]),
    schema("reshape_as.default", &[arg("self"), arg("other")], &[]),
    schema("resolve_conj.default", &[arg("self")], &[]),
    schema("resolve_neg.default", &[arg("self")], &[]),
    schema(
        "rms_norm.default",
        &[
            arg("input"),
            arg("normalized_shape"),
            arg_or("weight", D::None),
            arg_or("eps", D::None),
        ],
        &[],
    ),
    schema(
        "roll.default",
        &[arg("self"), arg("shifts"), arg_or("dims", D::Ints(&[]))],
        &[],
    ),
    schema(
        "rot90.default",
        &[
            arg("self"),
            arg_or("k", D::Int(1)),
            arg_or("dims", D::Ints(&[0, 1])),
        ],
        &[],
    ),
    schema("round.decimals", &[arg("self")], &[arg("decimals")]),
    schema("round.default", &[arg("self")], &[]),
    schema("rsqrt.default", &[arg("self")], &[]),
    schema(
        "rsub.Scalar",
        &[arg("self"), arg("other"), arg_or("alpha", D::Int(1))],
        &[],
    ),
    schema(
        "rsub.Tensor",
        &[arg("self"), arg("other")],
        &[arg_or("alpha", D::Int(1))],
    ),
    schema(
        "scalar_tensor.default",
        &[arg("s")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema(
        "scaled_dot_product_attention.default",
        &[
            arg("query"),
            arg("key"),
            arg("value"),
            arg_or("attn_mask", D::None),
            arg_or("dropout_p", D::Float(0.0)),
            arg_or("is_causal", D::Bool(false)),
        ],
        &[
            arg_or("scale", D::None),
            arg_or("enable_gqa", D::Bool(false)),
        ],
    ),
    schema("select.int", &[arg("self"), arg("dim"), arg("index")], &[]),
    schema(
        "select_copy.int",
        &[arg("self"), arg("dim"), arg("index")],
        &[],
    ),
    schema("selu.default", &[arg("self")], &[]),
    schema("sgn.default", &[arg("self")], &[]),
    schema("sigmoid.default", &[arg("self")], &[]),
    schema("sigmoid_.default", &[arg("self")], &[]),
    schema("sign.default", &[arg("self")], &[]),
    schema("silu.default", &[arg("self")], &[]),
    schema("silu_.default", &[arg("self")], &[]),
    schema("sin.default", &[arg("self")], &[]),
    schema("sinc.default", &[arg("self")], &[]),
    schema("sinh.default", &[arg("self")], &[]),
    schema(
        "slice.Tensor",
        &[
            arg("self"),
            arg_or("dim", D::Int(0)),
            arg_or("start", D::None),
            arg_or("end", D::None),
            arg_or("step", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "slice_copy.Tensor",
        &[
            arg("self"),
            arg_or("dim", D::Int(0)),
            arg_or("start", D::None),
            arg_or("end", D::None),
            arg_or("step", D::Int(1)),
        ],
        &[],
    ),
    schema("slogdet.default", &[arg("self")], &[]),
    schema(
        "softmax.int",
        &[arg("self"), arg("dim"), arg_or("dtype", D::None)],
        &[],
    ),
    schema(
        "softplus.default",
        &[
            arg("self"),
            arg_or("beta", D::Int(1)),
            arg_or("threshold", D::Int(20)),
        ],
        &[],
    ),
    schema(
        "softshrink.default",
        &[arg("self"), arg_or("lambd", D::Float(0.5))],
        &[],
    ),
    schema("special_airy_ai.default", &[arg("x")], &[]),
    schema("special_bessel_j0.default", &[arg("self")], &[]),
    schema("special_bessel_j1.default", &[arg("self")], &[]),
    schema("special_bessel_y0.default", &[arg("self")], &[]),
    schema("special_bessel_y1.default", &[arg("self")], &[]),
    schema("special_digamma.default", &[arg("self")], &[]),
    schema("special_entr.default", &[arg("self")], &[]),
    schema("special_erfcx.default", &[arg("self")], &[]),
    schema("special_erfinv.default", &[arg("self")], &[]),
    schema("special_gammaln.default", &[arg("self")], &[]),
    schema("special_i0.default", &[arg("self")], &[]),
    schema("special_i0e.default", &[arg("self")], &[]),
    schema("special_i1.default", &[arg("self")], &[]),
    schema("special_i1e.default", &[arg("self")], &[]),
    schema("special_log_ndtr.default", &[arg("self")], &[]),
    schema("special_modified_bessel_i0.default", &[arg("self")], &[]),
    schema("special_modified_bessel_i1.default", &[arg("self")], &[]),
    schema("special_modified_bessel_k0.default", &[arg("self")], &[]),
    schema("special_modified_bessel_k1.default", &[arg("self")], &[]),
    schema(
        "special_multigammaln.default",
        &[arg("self"), arg("p")],
        &[],
    ),
    schema("special_ndtr.default", &[arg("self")], &[]),
    schema("special_ndtri.default", &[arg("self")], &[]),
    schema("special_polygamma.default", &[arg("n"), arg("self")], &[]),
    schema("special_psi.default", &[arg("self")], &[]),
    schema(
        "special_scaled_modified_bessel_k0.default",
        &[arg("x")],
        &[],
    ),
    schema(
        "special_scaled_modified_bessel_k1.default",
        &[arg("x")],
        &[],
    ),
    schema("special_spherical_bessel_j0.default", &[arg("x")], &[]),
    schema(
        "split.Tensor",
        &[arg("self"), arg("split_size"), arg_or("dim", D::Int(0))],
        &[],
    ),
    schema(
        "split_copy.Tensor",
        &[arg("self"), arg("split_size"), arg_or("dim", D::Int(0))],
        &[],
    ),
    schema(
        "split_with_sizes.default",
        &[arg("self"), arg("split_sizes"), arg_or("dim", D::Int(0))],
        &[],
    ),
    schema(
        "split_with_sizes_copy.default",
        &[arg("self"), arg("split_sizes"), arg_or("dim", D::Int(0))],
        &[],
    ),
    schema("sqrt.default", &[arg("self")], &[]),
    schema("square.default", &[arg("self")], &[]),
    schema("squeeze.default", &[arg("self")], &[]),
    schema("squeeze.dim", &[arg("self"), arg("dim")], &[]),
    schema("squeeze.dims", &[arg("self"), arg("dim")], &[]),
    schema("squeeze_copy.default", &[arg("self")], &[]),
    schema("squeeze_copy.dim", &[arg("self"), arg("dim")], &[]),
    schema("squeeze_copy.dims", &[arg("self"), arg("dim")], &[]),
    schema(
        "stack.default",
        &[arg("tensors"), arg_or("dim", D::Int(0))],
        &[],
    ),
    schema(
        "std.correction",
        &[arg("self"), arg_or("dim", D::None)],
        &[
            arg_or("correction", D::None),
            arg_or("keepdim", D::Bool(false)),
        ],
    ),
    schema(
        "std.default",
        &[arg("self"), arg_or("unbiased", D::Bool(true))],
        &[],
    ),
    schema(
        "std.dim",
        &[
            arg("self"),
            arg("dim"),
            arg_or("unbiased", D::Bool(true)),
            arg_or("keepdim", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "std_mean.correction",
        &[arg("self"), arg_or("dim", D::None)],
        &[
            arg_or("correction", D::None),
            arg_or("keepdim", D::Bool(false)),
        ],
    ),
    schema(
        "std_mean.default",
        &[arg("self"), arg_or("unbiased", D::Bool(true))],
        &[],
    ),
    schema(
        "std_mean.dim",
        &[
            arg("self"),
            arg("dim"),
            arg_or("unbiased", D::Bool(true)),
            arg_or("keepdim", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "sub.Scalar",
        &[arg("self"), arg("other"), arg_or("alpha", D::Int(1))],
        &[],
    ),
    schema(
        "sub.Tensor",
        &[arg("self"), arg("other")],
        &[arg_or("alpha", D::Int(1))],
    ),
    schema(
        "sub_.Tensor",
        &[arg("self"), arg("other")],
        &[arg_or("alpha", D::Int(1))],
    ),
    schema(
        "subtract.Tensor",
        &[arg("self"), arg("other")],
        &[arg_or("alpha", D::Int(1))],
    ),
    schema("sum.default", &[arg("self")], &[arg_or("dtype", D::None)]),
    schema(
        "sum.dim_IntList",
        &[arg("self"), arg("dim"), arg_or("keepdim", D::Bool(false))],
        &[arg_or("dtype", D::None)],
    ),
    schema("sum_to_size.default", &[arg("self"), arg("size")], &[]),
    schema("sym_size.int", &[arg("self"), arg("dim")], &[]),
    schema("t.default", &[arg("self")], &[]),
    schema("t_copy.default", &[arg("self")], &[]),
    schema("tan.default", &[arg("self")], &[]),
    schema("tanh.default", &[arg("self")], &[]),
    schema("tanh_.default", &[arg("self")], &[]),
    schema(
        "tensor_split.indices",
        &[arg("self"), arg("indices"), arg_or("dim", D::Int(0))],
        &[],
    ),
    schema(
        "tensor_split.sections",
        &[arg("self"), arg("sections"), arg_or("dim", D::Int(0))],
        &[],
    ),
    schema(
        "threshold.default",
        &[arg("self"), arg("threshold"), arg("value")],
        &[],
    ),
    schema("tile.default", &[arg("self"), arg("dims")], &[]),
    schema(
        "to.device",
        &[
            arg("self"),
            arg("device"),
            arg("dtype"),
            arg_or("non_blocking", D::Bool(false)),
            arg_or("copy", D::Bool(false)),
            arg_or("memory_format", D::None),
        ],
        &[],
    ),
    schema(
        "to.dtype",
        &[
            arg("self"),
            arg("dtype"),
            arg_or("non_blocking", D::Bool(false)),
            arg_or("copy", D::Bool(false)),
            arg_or("memory_format", D::None),
        ],
        &[],
    ),
    schema(
        "to.dtype_layout",
        &[arg("self")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
            arg_or("non_blocking", D::Bool(false)),
            arg_or("copy", D::Bool(false)),
            arg_or("memory_format", D::None),
        ],
    ),
    schema(
        "topk.default",
        &[
            arg("self"),
            arg("k"),
            arg_or("dim", D::Int(-1)),
            arg_or("largest", D::Bool(true)),
            arg_or("sorted", D::Bool(true)),
        ],
        &[],
    ),
    schema("trace.default", &[arg("self")], &[]),
    schema(
        "transpose.int",
        &[arg("self"), arg("dim0"), arg("dim1")],
        &[],
    ),
    schema(
        "transpose_copy.int",
        &[arg("self"), arg("dim0"), arg("dim1")],
        &[],
    ),
    schema(
        "tril.default",
        &[arg("self"), arg_or("diagonal", D::Int(0))],
        &[],
    ),
    schema(
        "triu.default",
        &[arg("self"), arg_or("diagonal", D::Int(0))],
        &[],
    ),
    schema("true_divide.Scalar", &[arg("self"), arg("other")], &[]),
    schema("true_divide.Tensor", &[arg("self"), arg("other")], &[]),
    schema("trunc.default", &[arg("self")], &[]),
    schema("type_as.default", &[arg("self"), arg("other")], &[]),
    schema("unbind.int", &[arg("self"), arg_or("dim", D::Int(0))], &[]),
    schema(
        "unbind_copy.int",
        &[arg("self"), arg_or("dim", D::Int(0))],
        &[],
    ),
    schema(
        "unflatten.int",
        &[arg("self"), arg("dim"), arg("sizes")],
        &[],
    ),
    schema(
        "unfold.default",
        &[arg("self"), arg("dimension"), arg("size"), arg("step")],
        &[],
    ),
    schema(
        "unfold_copy.default",
        &[arg("self"), arg("dimension"), arg("size"), arg("step")],
        &[],
    ),
    schema(
        "unsafe_chunk.default",
        &[arg("self"), arg("chunks"), arg_or("dim", D::Int(0))],
        &[],
    ),
    schema(
        "unsafe_split.Tensor",
        &[arg("self"), arg("split_size"), arg_or("dim", D::Int(0))],
        &[],
    ),
    schema(
        "unsafe_split_with_sizes.default",
        &[arg("self"), arg("split_sizes"), arg_or("dim", D::Int(0))],
        &[],
    ),
    schema("unsqueeze.default", &[arg("self"), arg("dim")], &[]),
    schema("unsqueeze_copy.default", &[arg("self"), arg("dim")], &[]),
    schema(
        "upsample_bicubic2d.default",
        &[
            arg("self"),
            arg("output_size"),
            arg("align_corners"),
            arg_or("scales_h", D::None),
            arg_or("scales_w", D::None),
        ],
        &[],
    ),
    schema(
        "upsample_bicubic2d.vec",
        &[
            arg("input"),
            arg("output_size"),
            arg("align_corners"),
            arg("scale_factors"),
        ],
        &[],
    ),
    schema(
        "upsample_bilinear2d.default",
        &[
            arg("self"),
            arg("output_size"),
            arg("align_corners"),
            arg_or("scales_h", D::None),
            arg_or("scales_w", D::None),
        ],
        &[],
    ),
    schema(
        "upsample_bilinear2d.vec",
        &[
            arg("input"),
            arg("output_size"),
            arg("align_corners"),
            arg("scale_factors"),
        ],
        &[],
    ),
    schema(
        "upsample_linear1d.default",
        &[
            arg("self"),
            arg("output_size"),
            arg("align_corners"),
            arg_or("scales", D::None),
        ],
        &[],
    ),
    schema(
        "upsample_linear1d.vec",
        &[
            arg("input"),
            arg("output_size"),
            arg("align_corners"),
            arg("scale_factors"),
        ],
        &[],
    ),
    schema(
        "upsample_nearest1d.default",
        &[arg("self"), arg("output_size"), arg_or("scales", D::None)],
        &[],
    ),
    schema(
        "upsample_nearest1d.vec",
        &[arg("input"), arg("output_size"), arg("scale_factors")],
        &[],
    ),
    schema(
        "upsample_nearest2d.default",
        &[
            arg("self"),
            arg("output_size"),
            arg_or("scales_h", D::None),
            arg_or("scales_w", D::None),
        ],
        &[],
    ),
    schema(
        "upsample_nearest2d.vec",
        &[arg("input"), arg("output_size"), arg("scale_factors")],
        &[],
    ),
    schema(
        "upsample_nearest3d.default",
        &[
            arg("self"),
            arg("output_size"),
            arg_or("scales_d", D::None),
            arg_or("scales_h", D::None),
            arg_or("scales_w", D::None),
        ],
        &[],
    ),
    schema(
        "upsample_nearest3d.vec",
        &[arg("input"), arg("output_size"), arg("scale_factors")],
        &[],
    ),
    schema(
        "upsample_trilinear3d.default",
        &[
            arg("self"),
            arg("output_size"),
            arg("align_corners"),
            arg_or("scales_d", D::None),
            arg_or("scales_h", D::None),
            arg_or("scales_w", D::None),
        ],
        &[],
    ),
    schema(
        "upsample_trilinear3d.vec",
        &[
            arg("input"),
            arg("output_size"),
            arg("align_corners"),
            arg("scale_factors"),
        ],
        &[],
    ),
    schema(
        "var.correction",
        &[arg("self"), arg_or("dim", D::None)],
        &[
            arg_or("correction", D::None),
            arg_or("keepdim", D::Bool(false)),
        ],
    ),
    schema(
        "var.default",
        &[arg("self"), arg_or("unbiased", D::Bool(true))],
        &[],
    ),
    schema(
        "var.dim",
        &[
            arg("self"),
            arg("dim"),
            arg_or("unbiased", D::Bool(true)),
            arg_or("keepdim", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "var_mean.correction",
        &[arg("self"), arg_or("dim", D::None)],
        &[
            arg_or("correction", D::None),
            arg_or("keepdim", D::Bool(false)),
        ],
    ),
    schema(
        "var_mean.default",
        &[arg("self"), arg_or("unbiased", D::Bool(true))],
        &[],
    ),
    schema(
        "var_mean.dim",
        &[
            arg("self"),
            arg("dim"),
            arg_or("unbiased", D::Bool(true)),
            arg_or("keepdim", D::Bool(false)),
        ],
        &[],
    ),
    schema("view.default", &[arg("self"), arg("size")], &[]),
    schema("view_as.default", &[arg("self"), arg("other")], &[]),
    schema("view_copy.default", &[arg("self"), arg("size")], &[]),
    schema("vsplit.array", &[arg("self"), arg("indices")], &[]),
    schema("vsplit.int", &[arg("self"), arg("sections")], &[]),
    schema(
        "where.Scalar",
        &[arg("condition"), arg("self"), arg("other")],
        &[],
    ),
    schema(
        "where.ScalarOther",
        &[arg("condition"), arg("self"), arg("other")],
        &[],
    ),
    schema(
        "where.ScalarSelf",
        &[arg("condition"), arg("self"), arg("other")],
        &[],
    ),
    schema(
        "where.self",
        &[arg("condition"), arg("self"), arg("other")],
        &[],
    ),
    schema("zero_.default", &[arg("self")], &[]),
    schema(
        "zeros.default",
        &[arg("size")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
        ],
    ),
    schema(
        "zeros_like.default",
        &[arg("self")],
        &[
            arg_or("dtype", D::None),
            arg_or("layout", D::None),
            arg_or("device", D::None),
            arg_or("pin_memory", D::None),
            arg_or("memory_format", D::None),
        ],
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
