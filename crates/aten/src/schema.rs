//! The aten schemas: for every op the importers read, the evaluator computes or the ONNX
//! lowering translates, its arguments as torch declares them (`native_functions.yaml`),
//! positional and keyword-only, each with torch's default. This table is the one place they
//! are written: the TorchScript importer turns positional calls into named arguments with
//! it, a program node naming an argument its op does not have is refused with it, an argument a node
//! leaves out is read as its default from it ([`crate::args::Args`]), and the op
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
    /// the reader ([`crate::args::Args::ints`]).
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

/// One argument: its name, its type, and its default (`None`: required).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arg {
    pub name: &'static str,
    /// The type as torch's schema spells it, alias annotations dropped: `Tensor`, `Tensor?`
    /// (optional: `None` is a value it takes), `Tensor[]` and `int[2]` (lists; a list of
    /// fixed size also takes one number, repeated), `Tensor?[]`, `SymInt`, `Scalar` (a
    /// number of any kind), `ScalarType?`, `str`, … ([`Arg::element`], [`Arg::list`]).
    pub ty: &'static str,
    pub default: Option<DefaultValue>,
}

/// How many elements a list argument holds: `int[]` any number, `int[2]` two (and one
/// number in its place is repeated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListSize {
    Any,
    Fixed,
}

impl Arg {
    /// Whether `None` is a value the argument takes (`int?`, `Tensor?`, `int[1]?`).
    pub fn optional(&self) -> bool {
        self.ty.ends_with('?')
    }

    /// The type of the argument, or of each element of a list: `int` of `int[1]?`,
    /// `Tensor?` of `Tensor?[]`.
    pub fn element(&self) -> &'static str {
        let ty = self.ty.strip_suffix('?').unwrap_or(self.ty);
        ty.split_once('[').map_or(ty, |(element, _)| element)
    }

    /// Whether the argument is a list, and of what size (`None`: not a list).
    pub fn list(&self) -> Option<ListSize> {
        let ty = self.ty.strip_suffix('?').unwrap_or(self.ty);
        match ty.split_once('[')?.1 {
            "]" => Some(ListSize::Any),
            _ => Some(ListSize::Fixed),
        }
    }
}

/// A required argument of type `ty`.
const fn arg(name: &'static str, ty: &'static str) -> Arg {
    Arg {
        name,
        ty,
        default: None,
    }
}

/// An argument of type `ty` with torch's default `default`.
const fn arg_or(name: &'static str, ty: &'static str, default: DefaultValue) -> Arg {
    Arg {
        name,
        ty,
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
    /// [`crate::eval::evaluate`]); every other op with all-constant inputs is computed
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

    /// The schema with torch's types and defaults, as the op documents print it (and the
    /// interop tier checks against torch):
    /// `mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)`.
    pub fn declaration(&self) -> String {
        self.written(|a| match a.default {
            Some(d) => format!("{} {}={d}", a.ty, a.name),
            None => format!("{} {}", a.ty, a.name),
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
    ("concat.default", "cat.default"),
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
    schema(
        "__and__.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "__and__.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "__or__.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "__or__.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "__xor__.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "__xor__.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "_adaptive_avg_pool2d.default",
        &[arg("self", "Tensor"), arg("output_size", "SymInt[2]")],
        &[],
    ),
    not_evaluated(
        schema(
            "_adaptive_avg_pool2d_backward.default",
            &[arg("grad_output", "Tensor"), arg("self", "Tensor")],
            &[],
        ),
        "a gradient of constants alone has not been met; its lowering computes it",
    ),
    schema(
        "_adaptive_avg_pool3d.default",
        &[arg("self", "Tensor"), arg("output_size", "SymInt[3]")],
        &[],
    ),
    schema(
        "_cdist_forward.default",
        &[
            arg("x1", "Tensor"),
            arg("x2", "Tensor"),
            arg("p", "float"),
            arg("compute_mode", "int?"),
        ],
        &[],
    ),
    schema(
        "_convolution.default",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor"),
            arg("bias", "Tensor?"),
            arg("stride", "SymInt[]"),
            arg("padding", "SymInt[]"),
            arg("dilation", "SymInt[]"),
            arg("transposed", "bool"),
            arg("output_padding", "SymInt[]"),
            arg("groups", "SymInt"),
            arg("benchmark", "bool"),
            arg("deterministic", "bool"),
            arg("cudnn_enabled", "bool"),
            arg("allow_tf32", "bool"),
        ],
        &[],
    ),
    not_evaluated(
        schema("_local_scalar_dense.default", &[arg("self", "Tensor")], &[]),
        "its result is a number, not a tensor: a constant's is read where an argument names it",
    ),
    schema(
        "_log_softmax.default",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg("half_to_float", "bool"),
        ],
        &[],
    ),
    schema(
        "_lu_with_info.default",
        &[
            arg("self", "Tensor"),
            arg_or("pivot", "bool", D::Bool(true)),
            arg_or("check_errors", "bool", D::Bool(true)),
        ],
        &[],
    ),
    schema(
        "_native_batch_norm_legit.default",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor?"),
            arg("bias", "Tensor?"),
            arg("running_mean", "Tensor"),
            arg("running_var", "Tensor"),
            arg("training", "bool"),
            arg("momentum", "float"),
            arg("eps", "float"),
        ],
        &[],
    ),
    schema(
        "_native_batch_norm_legit.no_stats",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor?"),
            arg("bias", "Tensor?"),
            arg("training", "bool"),
            arg("momentum", "float"),
            arg("eps", "float"),
        ],
        &[],
    ),
    schema(
        "_native_batch_norm_legit_functional.default",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor?"),
            arg("bias", "Tensor?"),
            arg("running_mean", "Tensor"),
            arg("running_var", "Tensor"),
            arg("training", "bool"),
            arg("momentum", "float"),
            arg("eps", "float"),
        ],
        &[],
    ),
    schema(
        "_native_batch_norm_legit_no_training.default",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor?"),
            arg("bias", "Tensor?"),
            arg("running_mean", "Tensor"),
            arg("running_var", "Tensor"),
            arg("momentum", "float"),
            arg("eps", "float"),
        ],
        &[],
    ),
    not_evaluated(
        schema(
            "_native_multi_head_attention.default",
            &[
                arg("query", "Tensor"),
                arg("key", "Tensor"),
                arg("value", "Tensor"),
                arg("embed_dim", "int"),
                arg("num_head", "int"),
                arg("qkv_weight", "Tensor"),
                arg("qkv_bias", "Tensor"),
                arg("proj_weight", "Tensor"),
                arg("proj_bias", "Tensor"),
                arg_or("mask", "Tensor?", D::None),
                arg_or("need_weights", "bool", D::Bool(true)),
                arg_or("average_attn_weights", "bool", D::Bool(true)),
                arg_or("mask_type", "int?", D::None),
            ],
            &[],
        ),
        "a fused attention layer of constants alone has not been met; its lowering computes it",
    ),
    schema(
        "_operator.mul",
        &[arg("a", "SymInt"), arg("b", "SymInt")],
        &[],
    ),
    schema(
        "_pdist_forward.default",
        &[arg("self", "Tensor"), arg_or("p", "float", D::Float(2.0))],
        &[],
    ),
    schema(
        "_safe_softmax.default",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg_or("dtype", "ScalarType?", D::None),
        ],
        &[],
    ),
    schema(
        "_softmax.default",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg("half_to_float", "bool"),
        ],
        &[],
    ),
    schema("_softmax_backward_data.default", &[arg("grad_output", "Tensor"), arg("output", "Tensor"), arg("dim", "int"), arg("input_dtype", "ScalarType")], &[]),
    schema(
        "_to_copy.default",
        &[arg("self", "Tensor")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
            arg_or("non_blocking", "bool", D::Bool(false)),
            arg_or("memory_format", "MemoryFormat?", D::None),
        ],
    ),
    not_evaluated(
        schema(
            "_transformer_encoder_layer_fwd.default",
            &[
                arg("src", "Tensor"),
                arg("embed_dim", "int"),
                arg("num_heads", "int"),
                arg("qkv_weight", "Tensor"),
                arg("qkv_bias", "Tensor"),
                arg("proj_weight", "Tensor"),
                arg("proj_bias", "Tensor"),
                arg("use_gelu", "bool"),
                arg("norm_first", "bool"),
                arg("eps", "float"),
                arg("norm_weight_1", "Tensor"),
                arg("norm_bias_1", "Tensor"),
                arg("norm_weight_2", "Tensor"),
                arg("norm_bias_2", "Tensor"),
                arg("ffn_weight_1", "Tensor"),
                arg("ffn_bias_1", "Tensor"),
                arg("ffn_weight_2", "Tensor"),
                arg("ffn_bias_2", "Tensor"),
                arg_or("mask", "Tensor?", D::None),
                arg_or("mask_type", "int?", D::None),
            ],
            &[],
        ),
        "a fused encoder layer of constants alone has not been met; its lowering computes it",
    ),
    schema("_unsafe_masked_index.default", &[arg("self", "Tensor"), arg("mask", "Tensor"), arg("indices", "Tensor?[]"), arg("fill", "Scalar")], &[]),
    not_evaluated(
        schema("_unsafe_masked_index_put_accumulate.default", &[arg("self", "Tensor"), arg("mask", "Tensor"), arg("indices", "Tensor?[]"), arg("values", "Tensor")], &[]),
        "its put is `index_put`, which the evaluator does not compute: it holds a bool mask and an int64 index alike",
    ),
    schema(
        "_unsafe_view.default",
        &[arg("self", "Tensor"), arg("size", "SymInt[]")],
        &[],
    ),
    schema(
        "_upsample_bicubic2d_aa.default",
        &[
            arg("self", "Tensor"),
            arg("output_size", "SymInt[2]"),
            arg("align_corners", "bool"),
            arg_or("scales_h", "float?", D::None),
            arg_or("scales_w", "float?", D::None),
        ],
        &[],
    ),
    schema(
        "_upsample_bicubic2d_aa.vec",
        &[
            arg("input", "Tensor"),
            arg("output_size", "SymInt[]?"),
            arg("align_corners", "bool"),
            arg("scale_factors", "float[]?"),
        ],
        &[],
    ),
    schema(
        "_upsample_bilinear2d_aa.default",
        &[
            arg("self", "Tensor"),
            arg("output_size", "SymInt[2]"),
            arg("align_corners", "bool"),
            arg_or("scales_h", "float?", D::None),
            arg_or("scales_w", "float?", D::None),
        ],
        &[],
    ),
    schema(
        "_upsample_bilinear2d_aa.vec",
        &[
            arg("input", "Tensor"),
            arg("output_size", "SymInt[]?"),
            arg("align_corners", "bool"),
            arg("scale_factors", "float[]?"),
        ],
        &[],
    ),
    schema(
        "_upsample_nearest_exact1d.default",
        &[
            arg("self", "Tensor"),
            arg("output_size", "SymInt[1]"),
            arg_or("scales", "float?", D::None),
        ],
        &[],
    ),
    schema(
        "_upsample_nearest_exact1d.vec",
        &[
            arg("input", "Tensor"),
            arg("output_size", "SymInt[]?"),
            arg("scale_factors", "float[]?"),
        ],
        &[],
    ),
    schema(
        "_upsample_nearest_exact2d.default",
        &[
            arg("self", "Tensor"),
            arg("output_size", "SymInt[2]"),
            arg_or("scales_h", "float?", D::None),
            arg_or("scales_w", "float?", D::None),
        ],
        &[],
    ),
    schema(
        "_upsample_nearest_exact2d.vec",
        &[
            arg("input", "Tensor"),
            arg("output_size", "SymInt[]?"),
            arg("scale_factors", "float[]?"),
        ],
        &[],
    ),
    schema(
        "_upsample_nearest_exact3d.default",
        &[
            arg("self", "Tensor"),
            arg("output_size", "SymInt[3]"),
            arg_or("scales_d", "float?", D::None),
            arg_or("scales_h", "float?", D::None),
            arg_or("scales_w", "float?", D::None),
        ],
        &[],
    ),
    schema(
        "_upsample_nearest_exact3d.vec",
        &[
            arg("input", "Tensor"),
            arg("output_size", "SymInt[]?"),
            arg("scale_factors", "float[]?"),
        ],
        &[],
    ),
    schema(
        "_weight_norm.default",
        &[
            arg("v", "Tensor"),
            arg("g", "Tensor"),
            arg_or("dim", "int", D::Int(0)),
        ],
        &[],
    ),
    schema("abs.default", &[arg("self", "Tensor")], &[]),
    schema("acos.default", &[arg("self", "Tensor")], &[]),
    schema("acosh.default", &[arg("self", "Tensor")], &[]),
    schema(
        "adaptive_avg_pool1d.default",
        &[arg("self", "Tensor"), arg("output_size", "int[1]")],
        &[],
    ),
    schema(
        "adaptive_avg_pool2d.default",
        &[arg("self", "Tensor"), arg("output_size", "SymInt[2]")],
        &[],
    ),
    schema(
        "adaptive_avg_pool3d.default",
        &[arg("self", "Tensor"), arg("output_size", "SymInt[3]")],
        &[],
    ),
    schema(
        "adaptive_max_pool1d.default",
        &[arg("self", "Tensor"), arg("output_size", "int[1]")],
        &[],
    ),
    schema(
        "adaptive_max_pool2d.default",
        &[arg("self", "Tensor"), arg("output_size", "int[2]")],
        &[],
    ),
    schema(
        "adaptive_max_pool3d.default",
        &[arg("self", "Tensor"), arg("output_size", "int[3]")],
        &[],
    ),
    schema(
        "add.Scalar",
        &[
            arg("self", "Tensor"),
            arg("other", "Scalar"),
            arg_or("alpha", "Scalar", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "add.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[arg_or("alpha", "Scalar", D::Int(1))],
    ),
    schema(
        "add_.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[arg_or("alpha", "Scalar", D::Int(1))],
    ),
    schema("addbmm.default", &[arg("self", "Tensor"), arg("batch1", "Tensor"), arg("batch2", "Tensor")], &[arg_or("beta", "Scalar", D::Int(1)), arg_or("alpha", "Scalar", D::Int(1))]),
    schema(
        "addcdiv.default",
        &[
            arg("self", "Tensor"),
            arg("tensor1", "Tensor"),
            arg("tensor2", "Tensor"),
        ],
        &[arg_or("value", "Scalar", D::Int(1))],
    ),
    schema(
        "addcmul.default",
        &[
            arg("self", "Tensor"),
            arg("tensor1", "Tensor"),
            arg("tensor2", "Tensor"),
        ],
        &[arg_or("value", "Scalar", D::Int(1))],
    ),
    schema(
        "addmm.default",
        &[
            arg("self", "Tensor"),
            arg("mat1", "Tensor"),
            arg("mat2", "Tensor"),
        ],
        &[
            arg_or("beta", "Scalar", D::Int(1)),
            arg_or("alpha", "Scalar", D::Int(1)),
        ],
    ),
    schema("addmv.default", &[arg("self", "Tensor"), arg("mat", "Tensor"), arg("vec", "Tensor")], &[arg_or("beta", "Scalar", D::Int(1)), arg_or("alpha", "Scalar", D::Int(1))]),
    schema("addr.default", &[arg("self", "Tensor"), arg("vec1", "Tensor"), arg("vec2", "Tensor")], &[arg_or("beta", "Scalar", D::Int(1)), arg_or("alpha", "Scalar", D::Int(1))]),
    schema("adjoint.default", &[arg("self", "Tensor")], &[]),
    schema("alias.default", &[arg("self", "Tensor")], &[]),
    schema("alias_copy.default", &[arg("self", "Tensor")], &[]),
    schema("all.default", &[arg("self", "Tensor")], &[]),
    schema(
        "all.dim",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "all.dims",
        &[
            arg("self", "Tensor"),
            arg_or("dim", "int[]?", D::None),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "alpha_dropout.default",
        &[
            arg("input", "Tensor"),
            arg("p", "float"),
            arg("train", "bool"),
        ],
        &[],
    ),
    schema(
        "alpha_dropout_.default",
        &[
            arg("self", "Tensor"),
            arg("p", "float"),
            arg("train", "bool"),
        ],
        &[],
    ),
    schema(
        "amax.default",
        &[
            arg("self", "Tensor"),
            arg_or("dim", "int[1]", D::Ints(&[])),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "amin.default",
        &[
            arg("self", "Tensor"),
            arg_or("dim", "int[1]", D::Ints(&[])),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "aminmax.default",
        &[arg("self", "Tensor")],
        &[
            arg_or("dim", "int?", D::None),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
    ),
    schema("angle.default", &[arg("self", "Tensor")], &[]),
    schema("any.default", &[arg("self", "Tensor")], &[]),
    schema(
        "any.dim",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "any.dims",
        &[
            arg("self", "Tensor"),
            arg_or("dim", "int[]?", D::None),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "arange.default",
        &[arg("end", "Scalar")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "arange.start",
        &[arg("start", "Scalar"), arg("end", "Scalar")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "arange.start_step",
        &[
            arg("start", "Scalar"),
            arg("end", "Scalar"),
            arg_or("step", "Scalar", D::Int(1)),
        ],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "argmax.default",
        &[
            arg("self", "Tensor"),
            arg_or("dim", "int?", D::None),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "argmin.default",
        &[
            arg("self", "Tensor"),
            arg_or("dim", "int?", D::None),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "argsort.default",
        &[
            arg("self", "Tensor"),
            arg_or("dim", "int", D::Int(-1)),
            arg_or("descending", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "argsort.stable",
        &[arg("self", "Tensor")],
        &[
            arg("stable", "bool"),
            arg_or("dim", "int", D::Int(-1)),
            arg_or("descending", "bool", D::Bool(false)),
        ],
    ),
    schema("asin.default", &[arg("self", "Tensor")], &[]),
    schema("asinh.default", &[arg("self", "Tensor")], &[]),
    schema("atan.default", &[arg("self", "Tensor")], &[]),
    schema(
        "atan2.default",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "atan2.out",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[arg("out", "Tensor")],
    ),
    schema("atanh.default", &[arg("self", "Tensor")], &[]),
    schema("atleast_1d.default", &[arg("self", "Tensor")], &[]),
    schema("atleast_2d.default", &[arg("self", "Tensor")], &[]),
    schema("atleast_3d.default", &[arg("self", "Tensor")], &[]),
    schema(
        "avg_pool1d.default",
        &[
            arg("self", "Tensor"),
            arg("kernel_size", "int[1]"),
            arg_or("stride", "int[1]", D::Ints(&[])),
            arg_or("padding", "int[1]", D::Ints(&[0])),
            arg_or("ceil_mode", "bool", D::Bool(false)),
            arg_or("count_include_pad", "bool", D::Bool(true)),
        ],
        &[],
    ),
    schema(
        "avg_pool2d.default",
        &[
            arg("self", "Tensor"),
            arg("kernel_size", "int[2]"),
            arg_or("stride", "int[2]", D::Ints(&[])),
            arg_or("padding", "int[2]", D::Ints(&[0])),
            arg_or("ceil_mode", "bool", D::Bool(false)),
            arg_or("count_include_pad", "bool", D::Bool(true)),
            arg_or("divisor_override", "int?", D::None),
        ],
        &[],
    ),
    not_evaluated(
        schema(
            "avg_pool2d_backward.default",
            &[
                arg("grad_output", "Tensor"),
                arg("self", "Tensor"),
                arg("kernel_size", "int[2]"),
                arg("stride", "int[2]"),
                arg("padding", "int[2]"),
                arg("ceil_mode", "bool"),
                arg("count_include_pad", "bool"),
                arg("divisor_override", "int?"),
            ],
            &[],
        ),
        "a gradient of constants alone has not been met; its lowering computes it",
    ),
    schema(
        "avg_pool3d.default",
        &[
            arg("self", "Tensor"),
            arg("kernel_size", "int[3]"),
            arg_or("stride", "int[3]", D::Ints(&[])),
            arg_or("padding", "int[3]", D::Ints(&[0])),
            arg_or("ceil_mode", "bool", D::Bool(false)),
            arg_or("count_include_pad", "bool", D::Bool(true)),
            arg_or("divisor_override", "int?", D::None),
        ],
        &[],
    ),
    schema(
        "baddbmm.default",
        &[
            arg("self", "Tensor"),
            arg("batch1", "Tensor"),
            arg("batch2", "Tensor"),
        ],
        &[
            arg_or("beta", "Scalar", D::Int(1)),
            arg_or("alpha", "Scalar", D::Int(1)),
        ],
    ),
    schema(
        "batch_norm.default",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor?"),
            arg("bias", "Tensor?"),
            arg("running_mean", "Tensor?"),
            arg("running_var", "Tensor?"),
            arg("training", "bool"),
            arg("momentum", "float"),
            arg("eps", "float"),
            arg("cudnn_enabled", "bool"),
        ],
        &[],
    ),
    schema("bilinear.default", &[arg("input1", "Tensor"), arg("input2", "Tensor"), arg("weight", "Tensor"), arg_or("bias", "Tensor?", D::None)], &[]),
    schema("binary_cross_entropy.default", &[arg("self", "Tensor"), arg("target", "Tensor"), arg_or("weight", "Tensor?", D::None), arg_or("reduction", "int", D::Int(1))], &[]),
    schema("binary_cross_entropy_with_logits.default", &[arg("self", "Tensor"), arg("target", "Tensor"), arg_or("weight", "Tensor?", D::None), arg_or("pos_weight", "Tensor?", D::None), arg_or("reduction", "int", D::Int(1))], &[]),
    schema(
        "bitwise_and.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "bitwise_and.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema("bitwise_not.default", &[arg("self", "Tensor")], &[]),
    schema(
        "bitwise_or.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "bitwise_or.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "bitwise_xor.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "bitwise_xor.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema("block_diag.default", &[arg("tensors", "Tensor[]")], &[]),
    schema(
        "bmm.default",
        &[arg("self", "Tensor"), arg("mat2", "Tensor")],
        &[],
    ),
    schema("broadcast_tensors.default", &[arg("tensors", "Tensor[]")], &[]),
    schema(
        "broadcast_to.default",
        &[arg("self", "Tensor"), arg("size", "SymInt[]")],
        &[],
    ),
    schema("bucketize.Tensor", &[arg("self", "Tensor"), arg("boundaries", "Tensor")], &[arg_or("out_int32", "bool", D::Bool(false)), arg_or("right", "bool", D::Bool(false))]),
    schema("cartesian_prod.default", &[arg("tensors", "Tensor[]")], &[]),
    schema(
        "cat.default",
        &[arg("tensors", "Tensor[]"), arg_or("dim", "int", D::Int(0))],
        &[],
    ),
    schema(
        "cdist.default",
        &[
            arg("x1", "Tensor"),
            arg("x2", "Tensor"),
            arg_or("p", "float", D::Float(2.0)),
            arg_or("compute_mode", "int?", D::None),
        ],
        &[],
    ),
    schema("ceil.default", &[arg("self", "Tensor")], &[]),
    schema(
        "celu.default",
        &[
            arg("self", "Tensor"),
            arg_or("alpha", "Scalar", D::Float(1.0)),
        ],
        &[],
    ),
    schema(
        "channel_shuffle.default",
        &[arg("self", "Tensor"), arg("groups", "SymInt")],
        &[],
    ),
    schema(
        "cholesky.default",
        &[
            arg("self", "Tensor"),
            arg_or("upper", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "cholesky_inverse.default",
        &[
            arg("self", "Tensor"),
            arg_or("upper", "bool", D::Bool(false)),
        ],
        &[],
    ),
    not_evaluated(
        schema("cholesky_solve.default", &[arg("self", "Tensor"), arg("input2", "Tensor"), arg_or("upper", "bool", D::Bool(false))], &[]),
        "a solve of constants alone has not been met; its lowering multiplies by the solve's matrix computed at export",
    ),
    schema(
        "chunk.default",
        &[
            arg("self", "Tensor"),
            arg("chunks", "int"),
            arg_or("dim", "int", D::Int(0)),
        ],
        &[],
    ),
    schema(
        "clamp.Tensor",
        &[
            arg("self", "Tensor"),
            arg_or("min", "Tensor?", D::None),
            arg_or("max", "Tensor?", D::None),
        ],
        &[],
    ),
    schema(
        "clamp.default",
        &[
            arg("self", "Tensor"),
            arg_or("min", "Scalar?", D::None),
            arg_or("max", "Scalar?", D::None),
        ],
        &[],
    ),
    schema(
        "clamp_.Tensor",
        &[
            arg("self", "Tensor"),
            arg_or("min", "Tensor?", D::None),
            arg_or("max", "Tensor?", D::None),
        ],
        &[],
    ),
    schema(
        "clamp_.default",
        &[
            arg("self", "Tensor"),
            arg_or("min", "Scalar?", D::None),
            arg_or("max", "Scalar?", D::None),
        ],
        &[],
    ),
    schema("clamp_max.Tensor", &[arg("self", "Tensor"), arg("max", "Tensor")], &[]),
    schema(
        "clamp_max.default",
        &[arg("self", "Tensor"), arg("max", "Scalar")],
        &[],
    ),
    schema("clamp_min.Tensor", &[arg("self", "Tensor"), arg("min", "Tensor")], &[]),
    schema(
        "clamp_min.default",
        &[arg("self", "Tensor"), arg("min", "Scalar")],
        &[],
    ),
    schema(
        "clone.default",
        &[arg("self", "Tensor")],
        &[arg_or("memory_format", "MemoryFormat?", D::None)],
    ),
    schema(
        "col2im.default",
        &[
            arg("self", "Tensor"),
            arg("output_size", "SymInt[2]"),
            arg("kernel_size", "int[2]"),
            arg("dilation", "int[2]"),
            arg("padding", "int[2]"),
            arg("stride", "int[2]"),
        ],
        &[],
    ),
    schema(
        "concat.default",
        &[arg("tensors", "Tensor[]"), arg_or("dim", "int", D::Int(0))],
        &[],
    ),
    schema("conj_physical.default", &[arg("self", "Tensor")], &[]),
    schema(
        "constant_pad_nd.default",
        &[
            arg("self", "Tensor"),
            arg("pad", "SymInt[]"),
            arg_or("value", "Scalar", D::Int(0)),
        ],
        &[],
    ),
    schema(
        "contiguous.default",
        &[arg("self", "Tensor")],
        &[arg_or("memory_format", "MemoryFormat", D::Int(0))],
    ),
    schema(
        "conv1d.default",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor"),
            arg_or("bias", "Tensor?", D::None),
            arg_or("stride", "SymInt[1]", D::Ints(&[1])),
            arg_or("padding", "SymInt[1]", D::Ints(&[0])),
            arg_or("dilation", "SymInt[1]", D::Ints(&[1])),
            arg_or("groups", "SymInt", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "conv1d.padding",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor"),
            arg_or("bias", "Tensor?", D::None),
            arg_or("stride", "SymInt[1]", D::Ints(&[1])),
            arg_or("padding", "str", D::Str("valid")),
            arg_or("dilation", "SymInt[1]", D::Ints(&[1])),
            arg_or("groups", "SymInt", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "conv2d.default",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor"),
            arg_or("bias", "Tensor?", D::None),
            arg_or("stride", "SymInt[2]", D::Ints(&[1])),
            arg_or("padding", "SymInt[2]", D::Ints(&[0])),
            arg_or("dilation", "SymInt[2]", D::Ints(&[1])),
            arg_or("groups", "SymInt", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "conv2d.padding",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor"),
            arg_or("bias", "Tensor?", D::None),
            arg_or("stride", "SymInt[2]", D::Ints(&[1])),
            arg_or("padding", "str", D::Str("valid")),
            arg_or("dilation", "SymInt[2]", D::Ints(&[1])),
            arg_or("groups", "SymInt", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "conv3d.default",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor"),
            arg_or("bias", "Tensor?", D::None),
            arg_or("stride", "SymInt[3]", D::Ints(&[1])),
            arg_or("padding", "SymInt[3]", D::Ints(&[0])),
            arg_or("dilation", "SymInt[3]", D::Ints(&[1])),
            arg_or("groups", "SymInt", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "conv3d.padding",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor"),
            arg_or("bias", "Tensor?", D::None),
            arg_or("stride", "SymInt[3]", D::Ints(&[1])),
            arg_or("padding", "str", D::Str("valid")),
            arg_or("dilation", "SymInt[3]", D::Ints(&[1])),
            arg_or("groups", "SymInt", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "conv_transpose1d.default",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor"),
            arg_or("bias", "Tensor?", D::None),
            arg_or("stride", "SymInt[1]", D::Ints(&[1])),
            arg_or("padding", "SymInt[1]", D::Ints(&[0])),
            arg_or("output_padding", "SymInt[1]", D::Ints(&[0])),
            arg_or("groups", "SymInt", D::Int(1)),
            arg_or("dilation", "SymInt[1]", D::Ints(&[1])),
        ],
        &[],
    ),
    schema(
        "conv_transpose2d.input",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor"),
            arg_or("bias", "Tensor?", D::None),
            arg_or("stride", "SymInt[2]", D::Ints(&[1])),
            arg_or("padding", "SymInt[2]", D::Ints(&[0])),
            arg_or("output_padding", "SymInt[2]", D::Ints(&[0])),
            arg_or("groups", "SymInt", D::Int(1)),
            arg_or("dilation", "SymInt[2]", D::Ints(&[1])),
        ],
        &[],
    ),
    schema(
        "conv_transpose3d.input",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor"),
            arg_or("bias", "Tensor?", D::None),
            arg_or("stride", "SymInt[3]", D::Ints(&[1])),
            arg_or("padding", "SymInt[3]", D::Ints(&[0])),
            arg_or("output_padding", "SymInt[3]", D::Ints(&[0])),
            arg_or("groups", "SymInt", D::Int(1)),
            arg_or("dilation", "SymInt[3]", D::Ints(&[1])),
        ],
        &[],
    ),
    schema(
        "convolution.default",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor"),
            arg("bias", "Tensor?"),
            arg("stride", "SymInt[]"),
            arg("padding", "SymInt[]"),
            arg("dilation", "SymInt[]"),
            arg("transposed", "bool"),
            arg("output_padding", "SymInt[]"),
            arg("groups", "SymInt"),
        ],
        &[],
    ),
    not_evaluated(
        schema(
            "convolution_backward.default",
            &[
                arg("grad_output", "Tensor"),
                arg("input", "Tensor"),
                arg("weight", "Tensor"),
                arg("bias_sizes", "SymInt[]?"),
                arg("stride", "SymInt[]"),
                arg("padding", "SymInt[]"),
                arg("dilation", "SymInt[]"),
                arg("transposed", "bool"),
                arg("output_padding", "SymInt[]"),
                arg("groups", "SymInt"),
                arg("output_mask", "bool[3]"),
            ],
            &[],
        ),
        "a gradient of constants alone has not been met; its lowering computes it",
    ),
    schema(
        "copy.default",
        &[
            arg("self", "Tensor"),
            arg("src", "Tensor"),
            arg_or("non_blocking", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "copy_.default",
        &[
            arg("self", "Tensor"),
            arg("src", "Tensor"),
            arg_or("non_blocking", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "copysign.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema("copysign.Tensor", &[arg("self", "Tensor"), arg("other", "Tensor")], &[]),
    schema("cos.default", &[arg("self", "Tensor")], &[]),
    schema("cosh.default", &[arg("self", "Tensor")], &[]),
    not_evaluated(schema("cosine_embedding_loss.default", &[arg("input1", "Tensor"), arg("input2", "Tensor"), arg("target", "Tensor"), arg_or("margin", "float", D::Float(0.0)), arg_or("reduction", "int", D::Int(1))], &[]), "a loss or distance of constants alone has not been met; its lowering computes it"),
    not_evaluated(schema("cosine_similarity.default", &[arg("x1", "Tensor"), arg("x2", "Tensor"), arg_or("dim", "int", D::Int(1)), arg_or("eps", "float", D::Float(1e-08))], &[]), "a loss or distance of constants alone has not been met; its lowering computes it"),
    schema(
        "count_nonzero.default",
        &[arg("self", "Tensor"), arg_or("dim", "int?", D::None)],
        &[],
    ),
    schema(
        "count_nonzero.dim_IntList",
        &[arg("self", "Tensor"), arg("dim", "int[]")],
        &[],
    ),
    schema("cross.default", &[arg("self", "Tensor"), arg("other", "Tensor"), arg_or("dim", "int?", D::None)], &[]),
    not_evaluated(schema("cross_entropy_loss.default", &[arg("self", "Tensor"), arg("target", "Tensor"), arg_or("weight", "Tensor?", D::None), arg_or("reduction", "int", D::Int(1)), arg_or("ignore_index", "SymInt", D::Int(-100)), arg_or("label_smoothing", "float", D::Float(0.0))], &[]), "a loss or distance of constants alone has not been met; its lowering computes it"),
    schema(
        "cummax.default",
        &[arg("self", "Tensor"), arg("dim", "int")],
        &[],
    ),
    schema(
        "cummin.default",
        &[arg("self", "Tensor"), arg("dim", "int")],
        &[],
    ),
    schema(
        "cumprod.default",
        &[arg("self", "Tensor"), arg("dim", "int")],
        &[arg_or("dtype", "ScalarType?", D::None)],
    ),
    schema(
        "cumsum.default",
        &[arg("self", "Tensor"), arg("dim", "int")],
        &[arg_or("dtype", "ScalarType?", D::None)],
    ),
    schema(
        "cumulative_trapezoid.dx",
        &[arg("y", "Tensor")],
        &[
            arg_or("dx", "Scalar", D::Int(1)),
            arg_or("dim", "int", D::Int(-1)),
        ],
    ),
    schema("cumulative_trapezoid.x", &[arg("y", "Tensor"), arg("x", "Tensor")], &[arg_or("dim", "int", D::Int(-1))]),
    schema("deg2rad.default", &[arg("self", "Tensor")], &[]),
    schema("det.default", &[arg("self", "Tensor")], &[]),
    schema("detach.default", &[arg("self", "Tensor")], &[]),
    schema("detach_.default", &[arg("self", "Tensor")], &[]),
    schema("detach_copy.default", &[arg("self", "Tensor")], &[]),
    schema(
        "diag.default",
        &[arg("self", "Tensor"), arg_or("diagonal", "int", D::Int(0))],
        &[],
    ),
    schema(
        "diag_embed.default",
        &[
            arg("self", "Tensor"),
            arg_or("offset", "int", D::Int(0)),
            arg_or("dim1", "int", D::Int(-2)),
            arg_or("dim2", "int", D::Int(-1)),
        ],
        &[],
    ),
    schema(
        "diagflat.default",
        &[arg("self", "Tensor"), arg_or("offset", "int", D::Int(0))],
        &[],
    ),
    schema(
        "diagonal.default",
        &[
            arg("self", "Tensor"),
            arg_or("offset", "int", D::Int(0)),
            arg_or("dim1", "int", D::Int(0)),
            arg_or("dim2", "int", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "diagonal_copy.default",
        &[
            arg("self", "Tensor"),
            arg_or("offset", "int", D::Int(0)),
            arg_or("dim1", "int", D::Int(0)),
            arg_or("dim2", "int", D::Int(1)),
        ],
        &[],
    ),
    schema("diagonal_scatter.default", &[arg("self", "Tensor"), arg("src", "Tensor"), arg_or("offset", "int", D::Int(0)), arg_or("dim1", "int", D::Int(0)), arg_or("dim2", "int", D::Int(1))], &[]),
    schema(
        "diff.default",
        &[
            arg("self", "Tensor"),
            arg_or("n", "int", D::Int(1)),
            arg_or("dim", "int", D::Int(-1)),
            arg_or("prepend", "Tensor?", D::None),
            arg_or("append", "Tensor?", D::None),
        ],
        &[],
    ),
    schema("digamma.default", &[arg("self", "Tensor")], &[]),
    not_evaluated(schema("dist.default", &[arg("self", "Tensor"), arg("other", "Tensor"), arg_or("p", "Scalar", D::Int(2))], &[]), "a loss or distance of constants alone has not been met; its lowering computes it"),
    schema(
        "div.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "div.Scalar_mode",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[arg("rounding_mode", "str?")],
    ),
    schema(
        "div.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "div.Tensor_mode",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[arg("rounding_mode", "str?")],
    ),
    schema(
        "div_.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "divide.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "divide.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "divide.Tensor_mode",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[arg("rounding_mode", "str?")],
    ),
    schema("dot.default", &[arg("self", "Tensor"), arg("tensor", "Tensor")], &[]),
    schema(
        "dropout.default",
        &[
            arg("input", "Tensor"),
            arg("p", "float"),
            arg("train", "bool"),
        ],
        &[],
    ),
    schema(
        "dropout_.default",
        &[
            arg("self", "Tensor"),
            arg("p", "float"),
            arg("train", "bool"),
        ],
        &[],
    ),
    schema(
        "dsplit.array",
        &[arg("self", "Tensor"), arg("indices", "int[]")],
        &[],
    ),
    schema(
        "dsplit.int",
        &[arg("self", "Tensor"), arg("sections", "int")],
        &[],
    ),
    schema(
        "einsum.default",
        &[arg("equation", "str"), arg("tensors", "Tensor[]")],
        &[arg_or("path", "int[]?", D::None)],
    ),
    schema(
        "elu.default",
        &[
            arg("self", "Tensor"),
            arg_or("alpha", "Scalar", D::Int(1)),
            arg_or("scale", "Scalar", D::Int(1)),
            arg_or("input_scale", "Scalar", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "elu_.default",
        &[
            arg("self", "Tensor"),
            arg_or("alpha", "Scalar", D::Int(1)),
            arg_or("scale", "Scalar", D::Int(1)),
            arg_or("input_scale", "Scalar", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "embedding.default",
        &[
            arg("weight", "Tensor"),
            arg("indices", "Tensor"),
            arg_or("padding_idx", "SymInt", D::Int(-1)),
            arg_or("scale_grad_by_freq", "bool", D::Bool(false)),
            arg_or("sparse", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema("embedding_bag.default", &[arg("weight", "Tensor"), arg("indices", "Tensor"), arg("offsets", "Tensor"), arg_or("scale_grad_by_freq", "bool", D::Bool(false)), arg_or("mode", "int", D::Int(0)), arg_or("sparse", "bool", D::Bool(false)), arg_or("per_sample_weights", "Tensor?", D::None), arg_or("include_last_offset", "bool", D::Bool(false))], &[]),
    schema("embedding_bag.padding_idx", &[arg("weight", "Tensor"), arg("indices", "Tensor"), arg("offsets", "Tensor"), arg("scale_grad_by_freq", "bool"), arg("mode", "int"), arg("sparse", "bool"), arg("per_sample_weights", "Tensor?"), arg("include_last_offset", "bool"), arg("padding_idx", "int?")], &[]),
    schema("embedding_renorm.default", &[arg("self", "Tensor"), arg("indices", "Tensor"), arg("max_norm", "float"), arg("norm_type", "float")], &[]),
    schema("embedding_renorm_.default", &[arg("self", "Tensor"), arg("indices", "Tensor"), arg("max_norm", "float"), arg("norm_type", "float")], &[]),
    schema(
        "empty.memory_format",
        &[arg("size", "SymInt[]")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
            arg_or("memory_format", "MemoryFormat?", D::None),
        ],
    ),
    schema(
        "empty_like.default",
        &[arg("self", "Tensor")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
            arg_or("memory_format", "MemoryFormat?", D::None),
        ],
    ),
    schema(
        "empty_strided.default",
        &[arg("size", "SymInt[]"), arg("stride", "SymInt[]")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "eq.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "eq.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema("erf.default", &[arg("self", "Tensor")], &[]),
    schema("erfc.default", &[arg("self", "Tensor")], &[]),
    schema("erfinv.default", &[arg("self", "Tensor")], &[]),
    schema("exp.default", &[arg("self", "Tensor")], &[]),
    schema("exp2.default", &[arg("self", "Tensor")], &[]),
    schema(
        "expand.default",
        &[arg("self", "Tensor"), arg("size", "SymInt[]")],
        &[arg_or("implicit", "bool", D::Bool(false))],
    ),
    schema(
        "expand_as.default",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "expand_copy.default",
        &[arg("self", "Tensor"), arg("size", "SymInt[]")],
        &[arg_or("implicit", "bool", D::Bool(false))],
    ),
    schema("expm1.default", &[arg("self", "Tensor")], &[]),
    schema(
        "eye.default",
        &[arg("n", "SymInt")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "eye.m",
        &[arg("n", "SymInt"), arg("m", "SymInt")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "feature_alpha_dropout.default",
        &[
            arg("input", "Tensor"),
            arg("p", "float"),
            arg("train", "bool"),
        ],
        &[],
    ),
    schema(
        "feature_alpha_dropout_.default",
        &[
            arg("self", "Tensor"),
            arg("p", "float"),
            arg("train", "bool"),
        ],
        &[],
    ),
    schema(
        "feature_dropout.default",
        &[
            arg("input", "Tensor"),
            arg("p", "float"),
            arg("train", "bool"),
        ],
        &[],
    ),
    schema(
        "feature_dropout_.default",
        &[
            arg("self", "Tensor"),
            arg("p", "float"),
            arg("train", "bool"),
        ],
        &[],
    ),
    schema(
        "fft_fftshift.default",
        &[arg("self", "Tensor"), arg_or("dim", "int[1]?", D::None)],
        &[],
    ),
    schema(
        "fft_hfft.default",
        &[
            arg("self", "Tensor"),
            arg_or("n", "SymInt?", D::None),
            arg_or("dim", "int", D::Int(-1)),
            arg_or("norm", "str?", D::None),
        ],
        &[],
    ),
    schema(
        "fft_hfft2.default",
        &[
            arg("self", "Tensor"),
            arg_or("s", "SymInt[1]?", D::None),
            arg_or("dim", "int[1]", D::Ints(&[-2, -1])),
            arg_or("norm", "str?", D::None),
        ],
        &[],
    ),
    schema(
        "fft_hfftn.default",
        &[
            arg("self", "Tensor"),
            arg_or("s", "SymInt[1]?", D::None),
            arg_or("dim", "int[1]?", D::None),
            arg_or("norm", "str?", D::None),
        ],
        &[],
    ),
    schema(
        "fft_ifftshift.default",
        &[arg("self", "Tensor"), arg_or("dim", "int[1]?", D::None)],
        &[],
    ),
    schema(
        "fft_irfft.default",
        &[
            arg("self", "Tensor"),
            arg_or("n", "SymInt?", D::None),
            arg_or("dim", "int", D::Int(-1)),
            arg_or("norm", "str?", D::None),
        ],
        &[],
    ),
    schema(
        "fft_irfft2.default",
        &[
            arg("self", "Tensor"),
            arg_or("s", "SymInt[1]?", D::None),
            arg_or("dim", "int[1]", D::Ints(&[-2, -1])),
            arg_or("norm", "str?", D::None),
        ],
        &[],
    ),
    schema(
        "fft_irfftn.default",
        &[
            arg("self", "Tensor"),
            arg_or("s", "SymInt[1]?", D::None),
            arg_or("dim", "int[1]?", D::None),
            arg_or("norm", "str?", D::None),
        ],
        &[],
    ),
    schema(
        "fill.Scalar",
        &[arg("self", "Tensor"), arg("value", "Scalar")],
        &[],
    ),
    schema(
        "fill_.Scalar",
        &[arg("self", "Tensor"), arg("value", "Scalar")],
        &[],
    ),
    schema(
        "fill_.Tensor",
        &[arg("self", "Tensor"), arg("value", "Tensor")],
        &[],
    ),
    schema(
        "flatten.using_ints",
        &[
            arg("self", "Tensor"),
            arg_or("start_dim", "int", D::Int(0)),
            arg_or("end_dim", "int", D::Int(-1)),
        ],
        &[],
    ),
    schema(
        "flip.default",
        &[arg("self", "Tensor"), arg("dims", "int[]")],
        &[],
    ),
    schema("fliplr.default", &[arg("self", "Tensor")], &[]),
    schema("flipud.default", &[arg("self", "Tensor")], &[]),
    schema("floor.default", &[arg("self", "Tensor")], &[]),
    schema(
        "floor_divide.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "floor_divide.default",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema("fmax.default", &[arg("self", "Tensor"), arg("other", "Tensor")], &[]),
    schema("fmin.default", &[arg("self", "Tensor"), arg("other", "Tensor")], &[]),
    schema(
        "fmod.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "fmod.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema("frac.default", &[arg("self", "Tensor")], &[]),
    schema("fractional_max_pool2d.default", &[arg("self", "Tensor"), arg("kernel_size", "int[2]"), arg("output_size", "int[2]"), arg("random_samples", "Tensor")], &[]),
    schema("fractional_max_pool3d.default", &[arg("self", "Tensor"), arg("kernel_size", "int[3]"), arg("output_size", "int[3]"), arg("random_samples", "Tensor")], &[]),
    schema("frexp.Tensor", &[arg("self", "Tensor")], &[]),
    schema(
        "full.default",
        &[arg("size", "SymInt[]"), arg("fill_value", "Scalar")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "full_like.default",
        &[arg("self", "Tensor"), arg("fill_value", "Scalar")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
            arg_or("memory_format", "MemoryFormat?", D::None),
        ],
    ),
    schema(
        "gather.default",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg("index", "Tensor"),
        ],
        &[arg_or("sparse_grad", "bool", D::Bool(false))],
    ),
    schema(
        "ge.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "ge.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "gelu.default",
        &[arg("self", "Tensor")],
        &[arg_or("approximate", "str", D::Str("none"))],
    ),
    schema("geqrf.default", &[arg("self", "Tensor")], &[]),
    schema(
        "glu.default",
        &[arg("self", "Tensor"), arg_or("dim", "int", D::Int(-1))],
        &[],
    ),
    schema(
        "gradient.scalarint",
        &[arg("self", "Tensor")],
        &[
            arg_or("spacing", "Scalar?", D::None),
            arg_or("dim", "int?", D::None),
            arg_or("edge_order", "int", D::Int(1)),
        ],
    ),
    schema(
        "gradient.scalarrayarray",
        &[arg("self", "Tensor")],
        &[
            arg("spacing", "Scalar[]"),
            arg("dim", "int[]"),
            arg_or("edge_order", "int", D::Int(1)),
        ],
    ),
    schema(
        "gradient.scalarrayint",
        &[arg("self", "Tensor")],
        &[
            arg("spacing", "Scalar[]"),
            arg_or("dim", "int?", D::None),
            arg_or("edge_order", "int", D::Int(1)),
        ],
    ),
    schema("gradient.tensorarray", &[arg("self", "Tensor")], &[arg("spacing", "Tensor[]"), arg("dim", "int[]"), arg_or("edge_order", "int", D::Int(1))]),
    schema("gradient.tensorarrayint", &[arg("self", "Tensor")], &[arg("spacing", "Tensor[]"), arg_or("dim", "int?", D::None), arg_or("edge_order", "int", D::Int(1))]),
    schema(
        "grid_sampler.default",
        &[
            arg("input", "Tensor"),
            arg("grid", "Tensor"),
            arg("interpolation_mode", "int"),
            arg("padding_mode", "int"),
            arg("align_corners", "bool"),
        ],
        &[],
    ),
    schema(
        "grid_sampler_2d.default",
        &[
            arg("input", "Tensor"),
            arg("grid", "Tensor"),
            arg("interpolation_mode", "int"),
            arg("padding_mode", "int"),
            arg("align_corners", "bool"),
        ],
        &[],
    ),
    schema("grid_sampler_3d.default", &[arg("input", "Tensor"), arg("grid", "Tensor"), arg("interpolation_mode", "int"), arg("padding_mode", "int"), arg("align_corners", "bool")], &[]),
    schema(
        "group_norm.default",
        &[
            arg("input", "Tensor"),
            arg("num_groups", "int"),
            arg_or("weight", "Tensor?", D::None),
            arg_or("bias", "Tensor?", D::None),
            arg_or("eps", "float", D::Float(1e-05)),
            arg_or("cudnn_enabled", "bool", D::Bool(true)),
        ],
        &[],
    ),
    not_evaluated(
        schema(
            "gru.input",
            &[
                arg("input", "Tensor"),
                arg("hx", "Tensor"),
                arg("params", "Tensor[]"),
                arg("has_biases", "bool"),
                arg("num_layers", "int"),
                arg("dropout", "float"),
                arg("train", "bool"),
                arg("bidirectional", "bool"),
                arg("batch_first", "bool"),
            ],
            &[],
        ),
        "a recurrent layer run over a constant sequence has not been met; its lowering computes it",
    ),
    schema("gru_cell.default", &[arg("input", "Tensor"), arg("hx", "Tensor"), arg("w_ih", "Tensor"), arg("w_hh", "Tensor"), arg_or("b_ih", "Tensor?", D::None), arg_or("b_hh", "Tensor?", D::None)], &[]),
    schema(
        "gt.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "gt.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "hardshrink.default",
        &[
            arg("self", "Tensor"),
            arg_or("lambd", "Scalar", D::Float(0.5)),
        ],
        &[],
    ),
    schema("hardsigmoid.default", &[arg("self", "Tensor")], &[]),
    schema("hardsigmoid_.default", &[arg("self", "Tensor")], &[]),
    schema("hardswish.default", &[arg("self", "Tensor")], &[]),
    schema("hardswish_.default", &[arg("self", "Tensor")], &[]),
    schema(
        "hardtanh.default",
        &[
            arg("self", "Tensor"),
            arg_or("min_val", "Scalar", D::Int(-1)),
            arg_or("max_val", "Scalar", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "hardtanh_.default",
        &[
            arg("self", "Tensor"),
            arg_or("min_val", "Scalar", D::Int(-1)),
            arg_or("max_val", "Scalar", D::Int(1)),
        ],
        &[],
    ),
    schema("heaviside.default", &[arg("self", "Tensor"), arg("values", "Tensor")], &[]),
    schema("hinge_embedding_loss.default", &[arg("self", "Tensor"), arg("target", "Tensor"), arg_or("margin", "float", D::Float(1.0)), arg_or("reduction", "int", D::Int(1))], &[]),
    schema(
        "histc.default",
        &[
            arg("self", "Tensor"),
            arg_or("bins", "int", D::Int(100)),
            arg_or("min", "Scalar", D::Int(0)),
            arg_or("max", "Scalar", D::Int(0)),
        ],
        &[],
    ),
    schema(
        "histogram.bin_ct",
        &[arg("self", "Tensor"), arg_or("bins", "int", D::Int(100))],
        &[
            arg_or("range", "float[]?", D::None),
            arg_or("weight", "Tensor?", D::None),
            arg_or("density", "bool", D::Bool(false)),
        ],
    ),
    schema(
        "histogram.bins_tensor",
        &[arg("self", "Tensor"), arg("bins", "Tensor")],
        &[
            arg_or("weight", "Tensor?", D::None),
            arg_or("density", "bool", D::Bool(false)),
        ],
    ),
    schema(
        "hsplit.array",
        &[arg("self", "Tensor"), arg("indices", "int[]")],
        &[],
    ),
    schema(
        "hsplit.int",
        &[arg("self", "Tensor"), arg("sections", "int")],
        &[],
    ),
    schema("huber_loss.default", &[arg("self", "Tensor"), arg("target", "Tensor"), arg_or("reduction", "int", D::Int(1)), arg_or("delta", "float", D::Float(1.0))], &[]),
    schema("hypot.default", &[arg("self", "Tensor"), arg("other", "Tensor")], &[]),
    schema("i0.default", &[arg("self", "Tensor")], &[]),
    schema(
        "im2col.default",
        &[
            arg("self", "Tensor"),
            arg("kernel_size", "int[2]"),
            arg("dilation", "int[2]"),
            arg("padding", "int[2]"),
            arg("stride", "int[2]"),
        ],
        &[],
    ),
    schema(
        "index.Tensor",
        &[arg("self", "Tensor"), arg("indices", "Tensor?[]")],
        &[],
    ),
    schema("index_add.default", &[arg("self", "Tensor"), arg("dim", "int"), arg("index", "Tensor"), arg("source", "Tensor")], &[arg_or("alpha", "Scalar", D::Int(1))]),
    schema("index_copy.default", &[arg("self", "Tensor"), arg("dim", "int"), arg("index", "Tensor"), arg("source", "Tensor")], &[]),
    schema("index_fill.int_Scalar", &[arg("self", "Tensor"), arg("dim", "int"), arg("index", "Tensor"), arg("value", "Scalar")], &[]),
    schema("index_fill.int_Tensor", &[arg("self", "Tensor"), arg("dim", "int"), arg("index", "Tensor"), arg("value", "Tensor")], &[]),
    not_evaluated(
        schema(
            "index_put.default",
            &[
                arg("self", "Tensor"),
                arg("indices", "Tensor?[]"),
                arg("values", "Tensor"),
                arg_or("accumulate", "bool", D::Bool(false)),
            ],
            &[],
        ),
        "the evaluator holds a bool mask and an int64 index alike (as 0s and 1s), and index_put reads them differently",
    ),
    schema("index_reduce.default", &[arg("self", "Tensor"), arg("dim", "int"), arg("index", "Tensor"), arg("source", "Tensor"), arg("reduce", "str")], &[arg_or("include_self", "bool", D::Bool(true))]),
    schema(
        "index_select.default",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg("index", "Tensor"),
        ],
        &[],
    ),
    schema("inner.default", &[arg("self", "Tensor"), arg("other", "Tensor")], &[]),
    schema(
        "instance_norm.default",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor?"),
            arg("bias", "Tensor?"),
            arg("running_mean", "Tensor?"),
            arg("running_var", "Tensor?"),
            arg("use_input_stats", "bool"),
            arg("momentum", "float"),
            arg("eps", "float"),
            arg("cudnn_enabled", "bool"),
        ],
        &[],
    ),
    schema("inverse.default", &[arg("self", "Tensor")], &[]),
    schema("isclose.default", &[arg("self", "Tensor"), arg("other", "Tensor"), arg_or("rtol", "float", D::Float(1e-05)), arg_or("atol", "float", D::Float(1e-08)), arg_or("equal_nan", "bool", D::Bool(false))], &[]),
    schema("isfinite.default", &[arg("self", "Tensor")], &[]),
    schema("isin.Tensor_Tensor", &[arg("elements", "Tensor"), arg("test_elements", "Tensor")], &[arg_or("assume_unique", "bool", D::Bool(false)), arg_or("invert", "bool", D::Bool(false))]),
    schema("isinf.default", &[arg("self", "Tensor")], &[]),
    schema("isnan.default", &[arg("self", "Tensor")], &[]),
    schema("isneginf.default", &[arg("self", "Tensor")], &[]),
    schema("isposinf.default", &[arg("self", "Tensor")], &[]),
    schema("isreal.default", &[arg("self", "Tensor")], &[]),
    not_evaluated(
        schema("item.default", &[arg("self", "Tensor")], &[]),
        "its result is a number, not a tensor: a constant's is read where an argument names it",
    ),
    schema("kl_div.default", &[arg("self", "Tensor"), arg("target", "Tensor"), arg_or("reduction", "int", D::Int(1))], &[arg_or("log_target", "bool", D::Bool(false))]),
    schema("kron.default", &[arg("self", "Tensor"), arg("other", "Tensor")], &[]),
    schema(
        "kthvalue.default",
        &[
            arg("self", "Tensor"),
            arg("k", "SymInt"),
            arg_or("dim", "int", D::Int(-1)),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema("l1_loss.default", &[arg("self", "Tensor"), arg("target", "Tensor"), arg_or("reduction", "int", D::Int(1))], &[]),
    schema(
        "layer_norm.default",
        &[
            arg("input", "Tensor"),
            arg("normalized_shape", "SymInt[]"),
            arg_or("weight", "Tensor?", D::None),
            arg_or("bias", "Tensor?", D::None),
            arg_or("eps", "float", D::Float(1e-05)),
            arg_or("cudnn_enable", "bool", D::Bool(true)),
        ],
        &[],
    ),
    schema("ldexp.Tensor", &[arg("self", "Tensor"), arg("other", "Tensor")], &[]),
    schema(
        "le.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "le.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "leaky_relu.default",
        &[
            arg("self", "Tensor"),
            arg_or("negative_slope", "Scalar", D::Float(0.01)),
        ],
        &[],
    ),
    schema(
        "leaky_relu_.default",
        &[
            arg("self", "Tensor"),
            arg_or("negative_slope", "Scalar", D::Float(0.01)),
        ],
        &[],
    ),
    schema(
        "lerp.Scalar",
        &[
            arg("self", "Tensor"),
            arg("end", "Tensor"),
            arg("weight", "Scalar"),
        ],
        &[],
    ),
    schema(
        "lerp.Tensor",
        &[
            arg("self", "Tensor"),
            arg("end", "Tensor"),
            arg("weight", "Tensor"),
        ],
        &[],
    ),
    schema("lgamma.default", &[arg("self", "Tensor")], &[]),
    schema("lift_fresh_copy.default", &[arg("self", "Tensor")], &[]),
    schema(
        "linalg_cholesky.default",
        &[arg("self", "Tensor")],
        &[arg_or("upper", "bool", D::Bool(false))],
    ),
    schema(
        "linalg_cholesky_ex.default",
        &[arg("self", "Tensor")],
        &[
            arg_or("upper", "bool", D::Bool(false)),
            arg_or("check_errors", "bool", D::Bool(false)),
        ],
    ),
    schema(
        "linalg_cond.default",
        &[arg("self", "Tensor"), arg_or("p", "Scalar?", D::None)],
        &[],
    ),
    schema("linalg_cross.default", &[arg("self", "Tensor"), arg("other", "Tensor")], &[arg_or("dim", "int", D::Int(-1))]),
    schema("linalg_det.default", &[arg("A", "Tensor")], &[]),
    schema(
        "linalg_diagonal.default",
        &[arg("A", "Tensor")],
        &[
            arg_or("offset", "int", D::Int(0)),
            arg_or("dim1", "int", D::Int(-2)),
            arg_or("dim2", "int", D::Int(-1)),
        ],
    ),
    schema(
        "linalg_eigvalsh.default",
        &[arg("self", "Tensor"), arg_or("UPLO", "str", D::Str("L"))],
        &[],
    ),
    not_evaluated(
        schema("linalg_householder_product.default", &[arg("input", "Tensor"), arg("tau", "Tensor")], &[]),
        "reflectors of constants alone have not been met; its lowering applies them one at a time",
    ),
    schema("linalg_inv.default", &[arg("A", "Tensor")], &[]),
    schema(
        "linalg_inv_ex.default",
        &[arg("A", "Tensor")],
        &[arg_or("check_errors", "bool", D::Bool(false))],
    ),
    schema(
        "linalg_lu.default",
        &[arg("A", "Tensor")],
        &[arg_or("pivot", "bool", D::Bool(true))],
    ),
    schema(
        "linalg_lu_factor.default",
        &[arg("A", "Tensor")],
        &[arg_or("pivot", "bool", D::Bool(true))],
    ),
    schema(
        "linalg_lu_factor_ex.default",
        &[arg("A", "Tensor")],
        &[
            arg_or("pivot", "bool", D::Bool(true)),
            arg_or("check_errors", "bool", D::Bool(false)),
        ],
    ),
    schema(
        "linalg_matrix_norm.default",
        &[
            arg("self", "Tensor"),
            arg("ord", "Scalar"),
            arg_or("dim", "int[]", D::Ints(&[-2, -1])),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[arg_or("dtype", "ScalarType?", D::None)],
    ),
    schema(
        "linalg_matrix_norm.str_ord",
        &[
            arg("self", "Tensor"),
            arg_or("ord", "str", D::Str("fro")),
            arg_or("dim", "int[]", D::Ints(&[-2, -1])),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[arg_or("dtype", "ScalarType?", D::None)],
    ),
    schema(
        "linalg_matrix_power.default",
        &[arg("self", "Tensor"), arg("n", "int")],
        &[],
    ),
    schema(
        "linalg_matrix_rank.atol_rtol_float",
        &[arg("self", "Tensor")],
        &[
            arg_or("atol", "float?", D::None),
            arg_or("rtol", "float?", D::None),
            arg_or("hermitian", "bool", D::Bool(false)),
        ],
    ),
    schema(
        "linalg_matrix_rank.atol_rtol_tensor",
        &[arg("input", "Tensor")],
        &[
            arg_or("atol", "Tensor?", D::None),
            arg_or("rtol", "Tensor?", D::None),
            arg_or("hermitian", "bool", D::Bool(false)),
        ],
    ),
    schema(
        "linalg_norm.default",
        &[
            arg("self", "Tensor"),
            arg_or("ord", "Scalar?", D::None),
            arg_or("dim", "int[1]?", D::None),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[arg_or("dtype", "ScalarType?", D::None)],
    ),
    schema(
        "linalg_norm.ord_str",
        &[
            arg("self", "Tensor"),
            arg("ord", "str"),
            arg_or("dim", "int[1]?", D::None),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[arg_or("dtype", "ScalarType?", D::None)],
    ),
    schema(
        "linalg_pinv.atol_rtol_float",
        &[arg("self", "Tensor")],
        &[
            arg_or("atol", "float?", D::None),
            arg_or("rtol", "float?", D::None),
            arg_or("hermitian", "bool", D::Bool(false)),
        ],
    ),
    schema(
        "linalg_pinv.atol_rtol_tensor",
        &[arg("self", "Tensor")],
        &[
            arg_or("atol", "Tensor?", D::None),
            arg_or("rtol", "Tensor?", D::None),
            arg_or("hermitian", "bool", D::Bool(false)),
        ],
    ),
    schema(
        "linalg_qr.default",
        &[arg("A", "Tensor"), arg_or("mode", "str", D::Str("reduced"))],
        &[],
    ),
    schema("linalg_slogdet.default", &[arg("A", "Tensor")], &[]),
    not_evaluated(
        schema("linalg_solve_triangular.default", &[arg("self", "Tensor"), arg("B", "Tensor")], &[arg("upper", "bool"), arg_or("left", "bool", D::Bool(true)), arg_or("unitriangular", "bool", D::Bool(false))]),
        "a solve of constants alone has not been met; its lowering multiplies by the solve's matrix computed at export",
    ),
    schema(
        "linalg_svdvals.default",
        &[arg("A", "Tensor")],
        &[arg_or("driver", "str?", D::None)],
    ),
    schema(
        "linalg_vander.default",
        &[arg("x", "Tensor")],
        &[arg_or("N", "SymInt?", D::None)],
    ),
    schema(
        "linalg_vector_norm.default",
        &[
            arg("self", "Tensor"),
            arg_or("ord", "Scalar", D::Int(2)),
            arg_or("dim", "int[1]?", D::None),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[arg_or("dtype", "ScalarType?", D::None)],
    ),
    schema(
        "linear.default",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor"),
            arg_or("bias", "Tensor?", D::None),
        ],
        &[],
    ),
    schema(
        "linspace.Scalar_Tensor",
        &[
            arg("start", "Scalar"),
            arg("end", "Tensor"),
            arg("steps", "int"),
        ],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "linspace.Tensor_Scalar",
        &[
            arg("start", "Tensor"),
            arg("end", "Scalar"),
            arg("steps", "int"),
        ],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "linspace.Tensor_Tensor",
        &[
            arg("start", "Tensor"),
            arg("end", "Tensor"),
            arg("steps", "int"),
        ],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "linspace.default",
        &[
            arg("start", "Scalar"),
            arg("end", "Scalar"),
            arg("steps", "int"),
        ],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema("log.default", &[arg("self", "Tensor")], &[]),
    schema("log10.default", &[arg("self", "Tensor")], &[]),
    schema("log1p.default", &[arg("self", "Tensor")], &[]),
    schema("log2.default", &[arg("self", "Tensor")], &[]),
    schema("log_sigmoid.default", &[arg("self", "Tensor")], &[]),
    schema(
        "log_softmax.int",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg_or("dtype", "ScalarType?", D::None),
        ],
        &[],
    ),
    schema("logaddexp.default", &[arg("self", "Tensor"), arg("other", "Tensor")], &[]),
    schema("logaddexp2.default", &[arg("self", "Tensor"), arg("other", "Tensor")], &[]),
    schema(
        "logcumsumexp.default",
        &[arg("self", "Tensor"), arg("dim", "int")],
        &[],
    ),
    schema("logdet.default", &[arg("self", "Tensor")], &[]),
    schema(
        "logical_and.default",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema("logical_not.default", &[arg("self", "Tensor")], &[]),
    schema(
        "logical_or.default",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "logical_xor.default",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "logit.default",
        &[arg("self", "Tensor"), arg_or("eps", "float?", D::None)],
        &[],
    ),
    schema(
        "logspace.Scalar_Tensor",
        &[
            arg("start", "Scalar"),
            arg("end", "Tensor"),
            arg("steps", "int"),
            arg_or("base", "float", D::Float(10.0)),
        ],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "logspace.Tensor_Scalar",
        &[
            arg("start", "Tensor"),
            arg("end", "Scalar"),
            arg("steps", "int"),
            arg_or("base", "float", D::Float(10.0)),
        ],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "logspace.Tensor_Tensor",
        &[
            arg("start", "Tensor"),
            arg("end", "Tensor"),
            arg("steps", "int"),
            arg_or("base", "float", D::Float(10.0)),
        ],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "logspace.default",
        &[
            arg("start", "Scalar"),
            arg("end", "Scalar"),
            arg("steps", "int"),
            arg_or("base", "float", D::Float(10.0)),
        ],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "logsumexp.default",
        &[
            arg("self", "Tensor"),
            arg("dim", "int[1]"),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    not_evaluated(
        schema(
            "lstm.input",
            &[
                arg("input", "Tensor"),
                arg("hx", "Tensor[]"),
                arg("params", "Tensor[]"),
                arg("has_biases", "bool"),
                arg("num_layers", "int"),
                arg("dropout", "float"),
                arg("train", "bool"),
                arg("bidirectional", "bool"),
                arg("batch_first", "bool"),
            ],
            &[],
        ),
        "a recurrent layer run over a constant sequence has not been met; its lowering computes it",
    ),
    schema("lstm_cell.default", &[arg("input", "Tensor"), arg("hx", "Tensor[]"), arg("w_ih", "Tensor"), arg("w_hh", "Tensor"), arg_or("b_ih", "Tensor?", D::None), arg_or("b_hh", "Tensor?", D::None)], &[]),
    schema(
        "lt.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "lt.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    not_evaluated(
        schema("lu_solve.default", &[arg("self", "Tensor"), arg("LU_data", "Tensor"), arg("LU_pivots", "Tensor")], &[]),
        "a solve of constants alone has not been met; its lowering multiplies by the solve's matrix computed at export",
    ),
    not_evaluated(
        schema("lu_unpack.default", &[arg("LU_data", "Tensor"), arg("LU_pivots", "Tensor"), arg_or("unpack_data", "bool", D::Bool(true)), arg_or("unpack_pivots", "bool", D::Bool(true))], &[]),
        "unpacking constant factors alone has not been met; its lowering masks them and computes the permutation at export",
    ),
    schema("mH.default", &[arg("self", "Tensor")], &[]),
    schema("mT.default", &[arg("self", "Tensor")], &[]),
    schema("margin_ranking_loss.default", &[arg("input1", "Tensor"), arg("input2", "Tensor"), arg("target", "Tensor"), arg_or("margin", "float", D::Float(0.0)), arg_or("reduction", "int", D::Int(1))], &[]),
    schema(
        "masked_fill.Scalar",
        &[
            arg("self", "Tensor"),
            arg("mask", "Tensor"),
            arg("value", "Scalar"),
        ],
        &[],
    ),
    schema(
        "masked_fill.Tensor",
        &[
            arg("self", "Tensor"),
            arg("mask", "Tensor"),
            arg("value", "Tensor"),
        ],
        &[],
    ),
    schema(
        "masked_fill_.Scalar",
        &[
            arg("self", "Tensor"),
            arg("mask", "Tensor"),
            arg("value", "Scalar"),
        ],
        &[],
    ),
    schema(
        "masked_fill_.Tensor",
        &[
            arg("self", "Tensor"),
            arg("mask", "Tensor"),
            arg("value", "Tensor"),
        ],
        &[],
    ),
    schema(
        "masked_scatter.default",
        &[
            arg("self", "Tensor"),
            arg("mask", "Tensor"),
            arg("source", "Tensor"),
        ],
        &[],
    ),
    schema(
        "matmul.default",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema("matrix_H.default", &[arg("self", "Tensor")], &[]),
    schema(
        "matrix_power.default",
        &[arg("self", "Tensor"), arg("n", "int")],
        &[],
    ),
    schema("max.default", &[arg("self", "Tensor")], &[]),
    schema(
        "max.dim",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "max.other",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "max_pool1d.default",
        &[
            arg("self", "Tensor"),
            arg("kernel_size", "int[1]"),
            arg_or("stride", "int[1]", D::Ints(&[])),
            arg_or("padding", "int[1]", D::Ints(&[0])),
            arg_or("dilation", "int[1]", D::Ints(&[1])),
            arg_or("ceil_mode", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "max_pool1d_with_indices.default",
        &[
            arg("self", "Tensor"),
            arg("kernel_size", "int[1]"),
            arg_or("stride", "int[1]", D::Ints(&[])),
            arg_or("padding", "int[1]", D::Ints(&[0])),
            arg_or("dilation", "int[1]", D::Ints(&[1])),
            arg_or("ceil_mode", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "max_pool2d.default",
        &[
            arg("self", "Tensor"),
            arg("kernel_size", "int[2]"),
            arg_or("stride", "int[2]", D::Ints(&[])),
            arg_or("padding", "int[2]", D::Ints(&[0])),
            arg_or("dilation", "int[2]", D::Ints(&[1])),
            arg_or("ceil_mode", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "max_pool2d_with_indices.default",
        &[
            arg("self", "Tensor"),
            arg("kernel_size", "int[2]"),
            arg_or("stride", "int[2]", D::Ints(&[])),
            arg_or("padding", "int[2]", D::Ints(&[0])),
            arg_or("dilation", "int[2]", D::Ints(&[1])),
            arg_or("ceil_mode", "bool", D::Bool(false)),
        ],
        &[],
    ),
    not_evaluated(
        schema(
            "max_pool2d_with_indices_backward.default",
            &[
                arg("grad_output", "Tensor"),
                arg("self", "Tensor"),
                arg("kernel_size", "int[2]"),
                arg("stride", "int[2]"),
                arg("padding", "int[2]"),
                arg("dilation", "int[2]"),
                arg("ceil_mode", "bool"),
                arg("indices", "Tensor"),
            ],
            &[],
        ),
        "a gradient of constants alone has not been met; its lowering computes it",
    ),
    schema(
        "max_pool3d.default",
        &[
            arg("self", "Tensor"),
            arg("kernel_size", "int[3]"),
            arg_or("stride", "int[3]", D::Ints(&[])),
            arg_or("padding", "int[3]", D::Ints(&[0])),
            arg_or("dilation", "int[3]", D::Ints(&[1])),
            arg_or("ceil_mode", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "max_pool3d_with_indices.default",
        &[
            arg("self", "Tensor"),
            arg("kernel_size", "int[3]"),
            arg_or("stride", "int[3]", D::Ints(&[])),
            arg_or("padding", "int[3]", D::Ints(&[0])),
            arg_or("dilation", "int[3]", D::Ints(&[1])),
            arg_or("ceil_mode", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema("max_unpool2d.default", &[arg("self", "Tensor"), arg("indices", "Tensor"), arg("output_size", "SymInt[2]")], &[]),
    schema("max_unpool3d.default", &[arg("self", "Tensor"), arg("indices", "Tensor"), arg("output_size", "SymInt[3]"), arg("stride", "int[3]"), arg("padding", "int[3]")], &[]),
    schema(
        "maximum.default",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "mean.default",
        &[arg("self", "Tensor")],
        &[arg_or("dtype", "ScalarType?", D::None)],
    ),
    schema(
        "mean.dim",
        &[
            arg("self", "Tensor"),
            arg("dim", "int[1]?"),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[arg_or("dtype", "ScalarType?", D::None)],
    ),
    schema("median.default", &[arg("self", "Tensor")], &[]),
    schema(
        "median.dim",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema("meshgrid.default", &[arg("tensors", "Tensor[]")], &[]),
    schema(
        "meshgrid.indexing",
        &[arg("tensors", "Tensor[]")],
        &[arg("indexing", "str")],
    ),
    schema("min.default", &[arg("self", "Tensor")], &[]),
    schema(
        "min.dim",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "min.other",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "minimum.default",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema("mish.default", &[arg("self", "Tensor")], &[]),
    schema("mish_.default", &[arg("self", "Tensor")], &[]),
    schema(
        "mm.default",
        &[arg("self", "Tensor"), arg("mat2", "Tensor")],
        &[],
    ),
    schema(
        "movedim.int",
        &[
            arg("self", "Tensor"),
            arg("source", "int"),
            arg("destination", "int"),
        ],
        &[],
    ),
    schema(
        "movedim.intlist",
        &[
            arg("self", "Tensor"),
            arg("source", "int[]"),
            arg("destination", "int[]"),
        ],
        &[],
    ),
    schema("mse_loss.default", &[arg("self", "Tensor"), arg("target", "Tensor"), arg_or("reduction", "int", D::Int(1))], &[]),
    schema("msort.default", &[arg("self", "Tensor")], &[]),
    schema(
        "mul.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "mul.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "mul_.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    not_evaluated(schema("multi_margin_loss.default", &[arg("self", "Tensor"), arg("target", "Tensor"), arg_or("p", "Scalar", D::Int(1)), arg_or("margin", "Scalar", D::Int(1)), arg_or("weight", "Tensor?", D::None), arg_or("reduction", "int", D::Int(1))], &[]), "a loss or distance of constants alone has not been met; its lowering computes it"),
    not_evaluated(schema("multilabel_margin_loss.default", &[arg("self", "Tensor"), arg("target", "Tensor"), arg_or("reduction", "int", D::Int(1))], &[]), "a loss or distance of constants alone has not been met; its lowering computes it"),
    schema(
        "multiply.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "multiply.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema("mv.default", &[arg("self", "Tensor"), arg("vec", "Tensor")], &[]),
    schema(
        "mvlgamma.default",
        &[arg("self", "Tensor"), arg("p", "int")],
        &[],
    ),
    schema(
        "nan_to_num.default",
        &[
            arg("self", "Tensor"),
            arg_or("nan", "float?", D::None),
            arg_or("posinf", "float?", D::None),
            arg_or("neginf", "float?", D::None),
        ],
        &[],
    ),
    schema(
        "nanmean.default",
        &[
            arg("self", "Tensor"),
            arg_or("dim", "int[1]?", D::None),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[arg_or("dtype", "ScalarType?", D::None)],
    ),
    schema("nanmedian.default", &[arg("self", "Tensor")], &[]),
    schema(
        "nanmedian.dim",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema("nanquantile.default", &[arg("self", "Tensor"), arg("q", "Tensor"), arg_or("dim", "int?", D::None), arg_or("keepdim", "bool", D::Bool(false))], &[arg_or("interpolation", "str", D::Str("linear"))]),
    schema(
        "nanquantile.scalar",
        &[
            arg("self", "Tensor"),
            arg("q", "float"),
            arg_or("dim", "int?", D::None),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[arg_or("interpolation", "str", D::Str("linear"))],
    ),
    schema(
        "nansum.default",
        &[
            arg("self", "Tensor"),
            arg_or("dim", "int[1]?", D::None),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[arg_or("dtype", "ScalarType?", D::None)],
    ),
    schema(
        "narrow.default",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg("start", "SymInt"),
            arg("length", "SymInt"),
        ],
        &[],
    ),
    schema(
        "narrow_copy.default",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg("start", "SymInt"),
            arg("length", "SymInt"),
        ],
        &[],
    ),
    schema(
        "native_batch_norm.default",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor?"),
            arg("bias", "Tensor?"),
            arg("running_mean", "Tensor?"),
            arg("running_var", "Tensor?"),
            arg("training", "bool"),
            arg("momentum", "float"),
            arg("eps", "float"),
        ],
        &[],
    ),
    schema(
        "native_channel_shuffle.default",
        &[arg("self", "Tensor"), arg("groups", "SymInt")],
        &[],
    ),
    schema("native_dropout_backward.default", &[arg("grad_output", "Tensor"), arg("mask", "Tensor"), arg("scale", "float")], &[]),
    schema(
        "native_group_norm.default",
        &[
            arg("input", "Tensor"),
            arg("weight", "Tensor?"),
            arg("bias", "Tensor?"),
            arg("N", "SymInt"),
            arg("C", "SymInt"),
            arg("HxW", "SymInt"),
            arg("group", "int"),
            arg("eps", "float"),
        ],
        &[],
    ),
    not_evaluated(
        schema(
            "native_group_norm_backward.default",
            &[
                arg("grad_out", "Tensor"),
                arg("input", "Tensor"),
                arg("mean", "Tensor"),
                arg("rstd", "Tensor"),
                arg("weight", "Tensor?"),
                arg("N", "SymInt"),
                arg("C", "SymInt"),
                arg("HxW", "SymInt"),
                arg("group", "int"),
                arg("output_mask", "bool[3]"),
            ],
            &[],
        ),
        "a gradient of constants alone has not been met; its lowering computes it",
    ),
    schema(
        "native_layer_norm.default",
        &[
            arg("input", "Tensor"),
            arg("normalized_shape", "SymInt[]"),
            arg("weight", "Tensor?"),
            arg("bias", "Tensor?"),
            arg("eps", "float"),
        ],
        &[],
    ),
    not_evaluated(
        schema(
            "native_layer_norm_backward.default",
            &[
                arg("grad_out", "Tensor"),
                arg("input", "Tensor"),
                arg("normalized_shape", "SymInt[]"),
                arg("mean", "Tensor"),
                arg("rstd", "Tensor"),
                arg("weight", "Tensor?"),
                arg("bias", "Tensor?"),
                arg("output_mask", "bool[3]"),
            ],
            &[],
        ),
        "a gradient of constants alone has not been met; its lowering computes it",
    ),
    schema(
        "ne.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "ne.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema("neg.default", &[arg("self", "Tensor")], &[]),
    schema(
        "new_empty.default",
        &[arg("self", "Tensor"), arg("size", "SymInt[]")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "new_empty_strided.default",
        &[
            arg("self", "Tensor"),
            arg("size", "SymInt[]"),
            arg("stride", "SymInt[]"),
        ],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "new_full.default",
        &[
            arg("self", "Tensor"),
            arg("size", "SymInt[]"),
            arg("fill_value", "Scalar"),
        ],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "new_ones.default",
        &[arg("self", "Tensor"), arg("size", "SymInt[]")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "new_zeros.default",
        &[arg("self", "Tensor"), arg("size", "SymInt[]")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    not_evaluated(schema("nll_loss.default", &[arg("self", "Tensor"), arg("target", "Tensor"), arg_or("weight", "Tensor?", D::None), arg_or("reduction", "int", D::Int(1)), arg_or("ignore_index", "SymInt", D::Int(-100))], &[]), "a loss or distance of constants alone has not been met; its lowering computes it"),
    not_evaluated(schema("nll_loss2d.default", &[arg("self", "Tensor"), arg("target", "Tensor"), arg_or("weight", "Tensor?", D::None), arg_or("reduction", "int", D::Int(1)), arg_or("ignore_index", "SymInt", D::Int(-100))], &[]), "a loss or distance of constants alone has not been met; its lowering computes it"),
    not_evaluated(schema("nll_loss_nd.default", &[arg("self", "Tensor"), arg("target", "Tensor"), arg_or("weight", "Tensor?", D::None), arg_or("reduction", "int", D::Int(1)), arg_or("ignore_index", "SymInt", D::Int(-100))], &[]), "a loss or distance of constants alone has not been met; its lowering computes it"),
    schema(
        "nonzero_static.default",
        &[arg("self", "Tensor")],
        &[arg("size", "SymInt"), arg_or("fill_value", "int", D::Int(-1))],
    ),
    schema("numpy_T.default", &[arg("self", "Tensor")], &[]),
    schema(
        "one_hot.default",
        &[
            arg("self", "Tensor"),
            arg_or("num_classes", "int", D::Int(-1)),
        ],
        &[],
    ),
    schema(
        "ones.default",
        &[arg("size", "SymInt[]")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "ones_like.default",
        &[arg("self", "Tensor")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
            arg_or("memory_format", "MemoryFormat?", D::None),
        ],
    ),
    not_evaluated(
        schema("orgqr.default", &[arg("self", "Tensor"), arg("input2", "Tensor")], &[]),
        "reflectors of constants alone have not been met; its lowering applies them one at a time",
    ),
    not_evaluated(
        schema("ormqr.default", &[arg("self", "Tensor"), arg("input2", "Tensor"), arg("input3", "Tensor"), arg_or("left", "bool", D::Bool(true)), arg_or("transpose", "bool", D::Bool(false))], &[]),
        "reflectors of constants alone have not been met; its lowering applies them one at a time",
    ),
    schema(
        "outer.default",
        &[arg("self", "Tensor"), arg("vec2", "Tensor")],
        &[],
    ),
    schema(
        "pad.default",
        &[
            arg("self", "Tensor"),
            arg("pad", "SymInt[]"),
            arg_or("mode", "str", D::Str("constant")),
            arg_or("value", "float?", D::None),
        ],
        &[],
    ),
    schema("pairwise_distance.default", &[arg("x1", "Tensor"), arg("x2", "Tensor"), arg_or("p", "float", D::Float(2.0)), arg_or("eps", "float", D::Float(1e-06)), arg_or("keepdim", "bool", D::Bool(false))], &[]),
    schema(
        "pdist.default",
        &[arg("self", "Tensor"), arg_or("p", "float", D::Float(2.0))],
        &[],
    ),
    schema(
        "permute.default",
        &[arg("self", "Tensor"), arg("dims", "int[]")],
        &[],
    ),
    schema(
        "permute_copy.default",
        &[arg("self", "Tensor"), arg("dims", "int[]")],
        &[],
    ),
    schema(
        "pinverse.default",
        &[
            arg("self", "Tensor"),
            arg_or("rcond", "float", D::Float(1e-15)),
        ],
        &[],
    ),
    schema(
        "pixel_shuffle.default",
        &[arg("self", "Tensor"), arg("upscale_factor", "int")],
        &[],
    ),
    schema(
        "pixel_unshuffle.default",
        &[arg("self", "Tensor"), arg("downscale_factor", "int")],
        &[],
    ),
    schema("poisson_nll_loss.default", &[arg("input", "Tensor"), arg("target", "Tensor"), arg("log_input", "bool"), arg("full", "bool"), arg("eps", "float"), arg("reduction", "int")], &[]),
    schema(
        "polygamma.default",
        &[arg("n", "int"), arg("self", "Tensor")],
        &[],
    ),
    schema("positive.default", &[arg("self", "Tensor")], &[]),
    schema(
        "pow.Scalar",
        &[arg("self", "Scalar"), arg("exponent", "Tensor")],
        &[],
    ),
    schema(
        "pow.Tensor_Scalar",
        &[arg("self", "Tensor"), arg("exponent", "Scalar")],
        &[],
    ),
    schema(
        "pow.Tensor_Tensor",
        &[arg("self", "Tensor"), arg("exponent", "Tensor")],
        &[],
    ),
    schema(
        "prelu.default",
        &[arg("self", "Tensor"), arg("weight", "Tensor")],
        &[],
    ),
    schema(
        "prod.default",
        &[arg("self", "Tensor")],
        &[arg_or("dtype", "ScalarType?", D::None)],
    ),
    schema(
        "prod.dim_int",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[arg_or("dtype", "ScalarType?", D::None)],
    ),
    schema("put.default", &[arg("self", "Tensor"), arg("index", "Tensor"), arg("source", "Tensor"), arg_or("accumulate", "bool", D::Bool(false))], &[]),
    schema(
        "qr.default",
        &[arg("self", "Tensor"), arg_or("some", "bool", D::Bool(true))],
        &[],
    ),
    schema("quantile.default", &[arg("self", "Tensor"), arg("q", "Tensor"), arg_or("dim", "int?", D::None), arg_or("keepdim", "bool", D::Bool(false))], &[arg_or("interpolation", "str", D::Str("linear"))]),
    schema(
        "quantile.scalar",
        &[
            arg("self", "Tensor"),
            arg("q", "float"),
            arg_or("dim", "int?", D::None),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[arg_or("interpolation", "str", D::Str("linear"))],
    ),
    schema("rad2deg.default", &[arg("self", "Tensor")], &[]),
    schema("ravel.default", &[arg("self", "Tensor")], &[]),
    schema("real.default", &[arg("self", "Tensor")], &[]),
    schema("reciprocal.default", &[arg("self", "Tensor")], &[]),
    schema(
        "reflection_pad1d.default",
        &[arg("self", "Tensor"), arg("padding", "SymInt[2]")],
        &[],
    ),
    schema(
        "reflection_pad2d.default",
        &[arg("self", "Tensor"), arg("padding", "SymInt[4]")],
        &[],
    ),
    schema(
        "reflection_pad3d.default",
        &[arg("self", "Tensor"), arg("padding", "SymInt[6]")],
        &[],
    ),
    schema("relu.default", &[arg("self", "Tensor")], &[]),
    schema("relu6.default", &[arg("self", "Tensor")], &[]),
    schema("relu_.default", &[arg("self", "Tensor")], &[]),
    schema(
        "remainder.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "remainder.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "renorm.default",
        &[
            arg("self", "Tensor"),
            arg("p", "Scalar"),
            arg("dim", "int"),
            arg("maxnorm", "Scalar"),
        ],
        &[],
    ),
    schema(
        "repeat.default",
        &[arg("self", "Tensor"), arg("repeats", "SymInt[]")],
        &[],
    ),
    schema(
        "repeat_interleave.self_int",
        &[
            arg("self", "Tensor"),
            arg("repeats", "SymInt"),
            arg_or("dim", "int?", D::None),
        ],
        &[arg_or("output_size", "SymInt?", D::None)],
    ),
    schema(
        "replication_pad1d.default",
        &[arg("self", "Tensor"), arg("padding", "SymInt[2]")],
        &[],
    ),
    schema(
        "replication_pad2d.default",
        &[arg("self", "Tensor"), arg("padding", "SymInt[4]")],
        &[],
    ),
    schema(
        "replication_pad3d.default",
        &[arg("self", "Tensor"), arg("padding", "SymInt[6]")],
        &[],
    ),
    schema(
        "reshape.default",
        &[arg("self", "Tensor"), arg("shape", "SymInt[]")],
        &[],
    ),
    schema(
        "reshape_as.default",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema("resolve_conj.default", &[arg("self", "Tensor")], &[]),
    schema("resolve_neg.default", &[arg("self", "Tensor")], &[]),
    schema(
        "rms_norm.default",
        &[
            arg("input", "Tensor"),
            arg("normalized_shape", "SymInt[]"),
            arg_or("weight", "Tensor?", D::None),
            arg_or("eps", "float?", D::None),
        ],
        &[],
    ),
    schema(
        "rnn_relu.input",
        &[
            arg("input", "Tensor"),
            arg("hx", "Tensor"),
            arg("params", "Tensor[]"),
            arg("has_biases", "bool"),
            arg("num_layers", "int"),
            arg("dropout", "float"),
            arg("train", "bool"),
            arg("bidirectional", "bool"),
            arg("batch_first", "bool"),
        ],
        &[],
    ),
    schema("rnn_relu_cell.default", &[arg("input", "Tensor"), arg("hx", "Tensor"), arg("w_ih", "Tensor"), arg("w_hh", "Tensor"), arg_or("b_ih", "Tensor?", D::None), arg_or("b_hh", "Tensor?", D::None)], &[]),
    not_evaluated(
        schema(
            "rnn_tanh.input",
            &[
                arg("input", "Tensor"),
                arg("hx", "Tensor"),
                arg("params", "Tensor[]"),
                arg("has_biases", "bool"),
                arg("num_layers", "int"),
                arg("dropout", "float"),
                arg("train", "bool"),
                arg("bidirectional", "bool"),
                arg("batch_first", "bool"),
            ],
            &[],
        ),
        "a recurrent layer run over a constant sequence has not been met; its lowering computes it",
    ),
    schema("rnn_tanh_cell.default", &[arg("input", "Tensor"), arg("hx", "Tensor"), arg("w_ih", "Tensor"), arg("w_hh", "Tensor"), arg_or("b_ih", "Tensor?", D::None), arg_or("b_hh", "Tensor?", D::None)], &[]),
    schema(
        "roll.default",
        &[
            arg("self", "Tensor"),
            arg("shifts", "SymInt[1]"),
            arg_or("dims", "int[1]", D::Ints(&[])),
        ],
        &[],
    ),
    schema(
        "rot90.default",
        &[
            arg("self", "Tensor"),
            arg_or("k", "int", D::Int(1)),
            arg_or("dims", "int[]", D::Ints(&[0, 1])),
        ],
        &[],
    ),
    schema(
        "round.decimals",
        &[arg("self", "Tensor")],
        &[arg("decimals", "int")],
    ),
    schema("round.default", &[arg("self", "Tensor")], &[]),
    schema("rsqrt.default", &[arg("self", "Tensor")], &[]),
    schema(
        "rsub.Scalar",
        &[
            arg("self", "Tensor"),
            arg("other", "Scalar"),
            arg_or("alpha", "Scalar", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "rsub.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[arg_or("alpha", "Scalar", D::Int(1))],
    ),
    schema(
        "scalar_tensor.default",
        &[arg("s", "Scalar")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "scaled_dot_product_attention.default",
        &[
            arg("query", "Tensor"),
            arg("key", "Tensor"),
            arg("value", "Tensor"),
            arg_or("attn_mask", "Tensor?", D::None),
            arg_or("dropout_p", "float", D::Float(0.0)),
            arg_or("is_causal", "bool", D::Bool(false)),
        ],
        &[
            arg_or("scale", "float?", D::None),
            arg_or("enable_gqa", "bool", D::Bool(false)),
        ],
    ),
    schema("scatter.reduce", &[arg("self", "Tensor"), arg("dim", "int"), arg("index", "Tensor"), arg("src", "Tensor")], &[arg("reduce", "str")]),
    schema(
        "scatter.src",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg("index", "Tensor"),
            arg("src", "Tensor"),
        ],
        &[],
    ),
    schema(
        "scatter.value",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg("index", "Tensor"),
            arg("value", "Scalar"),
        ],
        &[],
    ),
    schema("scatter.value_reduce", &[arg("self", "Tensor"), arg("dim", "int"), arg("index", "Tensor"), arg("value", "Scalar")], &[arg("reduce", "str")]),
    schema(
        "scatter_add.default",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg("index", "Tensor"),
            arg("src", "Tensor"),
        ],
        &[],
    ),
    schema(
        "scatter_reduce.two",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg("index", "Tensor"),
            arg("src", "Tensor"),
            arg("reduce", "str"),
        ],
        &[arg_or("include_self", "bool", D::Bool(true))],
    ),
    schema(
        "searchsorted.Scalar",
        &[arg("sorted_sequence", "Tensor"), arg("self", "Scalar")],
        &[
            arg_or("out_int32", "bool", D::Bool(false)),
            arg_or("right", "bool", D::Bool(false)),
            arg_or("side", "str?", D::None),
            arg_or("sorter", "Tensor?", D::None),
        ],
    ),
    schema("searchsorted.Tensor", &[arg("sorted_sequence", "Tensor"), arg("self", "Tensor")], &[arg_or("out_int32", "bool", D::Bool(false)), arg_or("right", "bool", D::Bool(false)), arg_or("side", "str?", D::None), arg_or("sorter", "Tensor?", D::None)]),
    schema("segment_reduce.default", &[arg("data", "Tensor"), arg("reduce", "str")], &[arg_or("lengths", "Tensor?", D::None), arg_or("indices", "Tensor?", D::None), arg_or("offsets", "Tensor?", D::None), arg_or("axis", "int", D::Int(0)), arg_or("unsafe", "bool", D::Bool(false)), arg_or("initial", "Scalar?", D::None)]),
    schema(
        "select.int",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg("index", "SymInt"),
        ],
        &[],
    ),
    schema(
        "select_copy.int",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg("index", "SymInt"),
        ],
        &[],
    ),
    schema(
        "select_scatter.default",
        &[
            arg("self", "Tensor"),
            arg("src", "Tensor"),
            arg("dim", "int"),
            arg("index", "SymInt"),
        ],
        &[],
    ),
    schema("selu.default", &[arg("self", "Tensor")], &[]),
    schema("sgn.default", &[arg("self", "Tensor")], &[]),
    schema("sigmoid.default", &[arg("self", "Tensor")], &[]),
    schema("sigmoid_.default", &[arg("self", "Tensor")], &[]),
    schema("sign.default", &[arg("self", "Tensor")], &[]),
    schema("silu.default", &[arg("self", "Tensor")], &[]),
    schema("silu_.default", &[arg("self", "Tensor")], &[]),
    schema("sin.default", &[arg("self", "Tensor")], &[]),
    schema("sinc.default", &[arg("self", "Tensor")], &[]),
    schema("sinh.default", &[arg("self", "Tensor")], &[]),
    schema(
        "slice.Tensor",
        &[
            arg("self", "Tensor"),
            arg_or("dim", "int", D::Int(0)),
            arg_or("start", "SymInt?", D::None),
            arg_or("end", "SymInt?", D::None),
            arg_or("step", "SymInt", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "slice_copy.Tensor",
        &[
            arg("self", "Tensor"),
            arg_or("dim", "int", D::Int(0)),
            arg_or("start", "SymInt?", D::None),
            arg_or("end", "SymInt?", D::None),
            arg_or("step", "SymInt", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "slice_scatter.default",
        &[
            arg("self", "Tensor"),
            arg("src", "Tensor"),
            arg_or("dim", "int", D::Int(0)),
            arg_or("start", "SymInt?", D::None),
            arg_or("end", "SymInt?", D::None),
            arg_or("step", "SymInt", D::Int(1)),
        ],
        &[],
    ),
    schema("slogdet.default", &[arg("self", "Tensor")], &[]),
    schema("smooth_l1_loss.default", &[arg("self", "Tensor"), arg("target", "Tensor"), arg_or("reduction", "int", D::Int(1)), arg_or("beta", "float", D::Float(1.0))], &[]),
    schema("soft_margin_loss.default", &[arg("self", "Tensor"), arg("target", "Tensor"), arg_or("reduction", "int", D::Int(1))], &[]),
    schema(
        "softmax.int",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg_or("dtype", "ScalarType?", D::None),
        ],
        &[],
    ),
    schema(
        "softplus.default",
        &[
            arg("self", "Tensor"),
            arg_or("beta", "Scalar", D::Int(1)),
            arg_or("threshold", "Scalar", D::Int(20)),
        ],
        &[],
    ),
    schema(
        "softshrink.default",
        &[
            arg("self", "Tensor"),
            arg_or("lambd", "Scalar", D::Float(0.5)),
        ],
        &[],
    ),
    schema(
        "sort.default",
        &[
            arg("self", "Tensor"),
            arg_or("dim", "int", D::Int(-1)),
            arg_or("descending", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "sort.stable",
        &[arg("self", "Tensor")],
        &[
            arg("stable", "bool?"),
            arg_or("dim", "int", D::Int(-1)),
            arg_or("descending", "bool", D::Bool(false)),
        ],
    ),
    schema("special_airy_ai.default", &[arg("x", "Tensor")], &[]),
    schema("special_bessel_j0.default", &[arg("self", "Tensor")], &[]),
    schema("special_bessel_j1.default", &[arg("self", "Tensor")], &[]),
    schema("special_bessel_y0.default", &[arg("self", "Tensor")], &[]),
    schema("special_bessel_y1.default", &[arg("self", "Tensor")], &[]),
    schema("special_digamma.default", &[arg("self", "Tensor")], &[]),
    schema("special_entr.default", &[arg("self", "Tensor")], &[]),
    schema("special_erfcx.default", &[arg("self", "Tensor")], &[]),
    schema("special_erfinv.default", &[arg("self", "Tensor")], &[]),
    schema("special_gammaln.default", &[arg("self", "Tensor")], &[]),
    schema("special_i0.default", &[arg("self", "Tensor")], &[]),
    schema("special_i0e.default", &[arg("self", "Tensor")], &[]),
    schema("special_i1.default", &[arg("self", "Tensor")], &[]),
    schema("special_i1e.default", &[arg("self", "Tensor")], &[]),
    schema("special_log_ndtr.default", &[arg("self", "Tensor")], &[]),
    schema(
        "special_modified_bessel_i0.default",
        &[arg("self", "Tensor")],
        &[],
    ),
    schema(
        "special_modified_bessel_i1.default",
        &[arg("self", "Tensor")],
        &[],
    ),
    schema(
        "special_modified_bessel_k0.default",
        &[arg("self", "Tensor")],
        &[],
    ),
    schema(
        "special_modified_bessel_k1.default",
        &[arg("self", "Tensor")],
        &[],
    ),
    schema(
        "special_multigammaln.default",
        &[arg("self", "Tensor"), arg("p", "int")],
        &[],
    ),
    schema("special_ndtr.default", &[arg("self", "Tensor")], &[]),
    schema("special_ndtri.default", &[arg("self", "Tensor")], &[]),
    schema(
        "special_polygamma.default",
        &[arg("n", "int"), arg("self", "Tensor")],
        &[],
    ),
    schema("special_psi.default", &[arg("self", "Tensor")], &[]),
    schema(
        "special_scaled_modified_bessel_k0.default",
        &[arg("x", "Tensor")],
        &[],
    ),
    schema(
        "special_scaled_modified_bessel_k1.default",
        &[arg("x", "Tensor")],
        &[],
    ),
    schema(
        "special_spherical_bessel_j0.default",
        &[arg("x", "Tensor")],
        &[],
    ),
    schema("special_xlog1py.default", &[arg("self", "Tensor"), arg("other", "Tensor")], &[]),
    schema(
        "split.Tensor",
        &[
            arg("self", "Tensor"),
            arg("split_size", "SymInt"),
            arg_or("dim", "int", D::Int(0)),
        ],
        &[],
    ),
    schema(
        "split_copy.Tensor",
        &[
            arg("self", "Tensor"),
            arg("split_size", "SymInt"),
            arg_or("dim", "int", D::Int(0)),
        ],
        &[],
    ),
    schema(
        "split_with_sizes.default",
        &[
            arg("self", "Tensor"),
            arg("split_sizes", "SymInt[]"),
            arg_or("dim", "int", D::Int(0)),
        ],
        &[],
    ),
    schema(
        "split_with_sizes_copy.default",
        &[
            arg("self", "Tensor"),
            arg("split_sizes", "SymInt[]"),
            arg_or("dim", "int", D::Int(0)),
        ],
        &[],
    ),
    schema("sqrt.default", &[arg("self", "Tensor")], &[]),
    schema("square.default", &[arg("self", "Tensor")], &[]),
    schema("squeeze.default", &[arg("self", "Tensor")], &[]),
    schema(
        "squeeze.dim",
        &[arg("self", "Tensor"), arg("dim", "int")],
        &[],
    ),
    schema(
        "squeeze.dims",
        &[arg("self", "Tensor"), arg("dim", "int[]")],
        &[],
    ),
    schema("squeeze_copy.default", &[arg("self", "Tensor")], &[]),
    schema(
        "squeeze_copy.dim",
        &[arg("self", "Tensor"), arg("dim", "int")],
        &[],
    ),
    schema(
        "squeeze_copy.dims",
        &[arg("self", "Tensor"), arg("dim", "int[]")],
        &[],
    ),
    schema(
        "stack.default",
        &[arg("tensors", "Tensor[]"), arg_or("dim", "int", D::Int(0))],
        &[],
    ),
    schema(
        "std.correction",
        &[arg("self", "Tensor"), arg_or("dim", "int[1]?", D::None)],
        &[
            arg_or("correction", "Scalar?", D::None),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
    ),
    schema(
        "std.default",
        &[
            arg("self", "Tensor"),
            arg_or("unbiased", "bool", D::Bool(true)),
        ],
        &[],
    ),
    schema(
        "std.dim",
        &[
            arg("self", "Tensor"),
            arg("dim", "int[1]?"),
            arg_or("unbiased", "bool", D::Bool(true)),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "std_mean.correction",
        &[arg("self", "Tensor"), arg_or("dim", "int[1]?", D::None)],
        &[
            arg_or("correction", "Scalar?", D::None),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
    ),
    schema(
        "std_mean.default",
        &[
            arg("self", "Tensor"),
            arg_or("unbiased", "bool", D::Bool(true)),
        ],
        &[],
    ),
    schema(
        "std_mean.dim",
        &[
            arg("self", "Tensor"),
            arg("dim", "int[1]?"),
            arg_or("unbiased", "bool", D::Bool(true)),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "sub.Scalar",
        &[
            arg("self", "Tensor"),
            arg("other", "Scalar"),
            arg_or("alpha", "Scalar", D::Int(1)),
        ],
        &[],
    ),
    schema(
        "sub.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[arg_or("alpha", "Scalar", D::Int(1))],
    ),
    schema(
        "sub_.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[arg_or("alpha", "Scalar", D::Int(1))],
    ),
    schema(
        "subtract.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[arg_or("alpha", "Scalar", D::Int(1))],
    ),
    schema(
        "sum.default",
        &[arg("self", "Tensor")],
        &[arg_or("dtype", "ScalarType?", D::None)],
    ),
    schema(
        "sum.dim_IntList",
        &[
            arg("self", "Tensor"),
            arg("dim", "int[1]?"),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[arg_or("dtype", "ScalarType?", D::None)],
    ),
    schema(
        "sum_to_size.default",
        &[arg("self", "Tensor"), arg("size", "SymInt[]")],
        &[],
    ),
    schema("sym_numel.default", &[arg("self", "Tensor")], &[]),
    schema(
        "sym_size.int",
        &[arg("self", "Tensor"), arg("dim", "int")],
        &[],
    ),
    schema("t.default", &[arg("self", "Tensor")], &[]),
    schema("t_copy.default", &[arg("self", "Tensor")], &[]),
    schema("take.default", &[arg("self", "Tensor"), arg("index", "Tensor")], &[]),
    schema("take_along_dim.default", &[arg("self", "Tensor"), arg("indices", "Tensor"), arg_or("dim", "int?", D::None)], &[]),
    schema("tan.default", &[arg("self", "Tensor")], &[]),
    schema("tanh.default", &[arg("self", "Tensor")], &[]),
    schema("tanh_.default", &[arg("self", "Tensor")], &[]),
    schema(
        "tensor_split.indices",
        &[
            arg("self", "Tensor"),
            arg("indices", "SymInt[]"),
            arg_or("dim", "int", D::Int(0)),
        ],
        &[],
    ),
    schema(
        "tensor_split.sections",
        &[
            arg("self", "Tensor"),
            arg("sections", "SymInt"),
            arg_or("dim", "int", D::Int(0)),
        ],
        &[],
    ),
    schema("tensor_split.tensor_indices_or_sections", &[arg("self", "Tensor"), arg("tensor_indices_or_sections", "Tensor"), arg_or("dim", "int", D::Int(0))], &[]),
    schema("tensordot.default", &[arg("self", "Tensor"), arg("other", "Tensor"), arg("dims_self", "int[]"), arg("dims_other", "int[]")], &[]),
    schema(
        "threshold.default",
        &[
            arg("self", "Tensor"),
            arg("threshold", "Scalar"),
            arg("value", "Scalar"),
        ],
        &[],
    ),
    schema(
        "tile.default",
        &[arg("self", "Tensor"), arg("dims", "SymInt[]")],
        &[],
    ),
    schema(
        "to.device",
        &[
            arg("self", "Tensor"),
            arg("device", "Device"),
            arg("dtype", "ScalarType"),
            arg_or("non_blocking", "bool", D::Bool(false)),
            arg_or("copy", "bool", D::Bool(false)),
            arg_or("memory_format", "MemoryFormat?", D::None),
        ],
        &[],
    ),
    schema(
        "to.dtype",
        &[
            arg("self", "Tensor"),
            arg("dtype", "ScalarType"),
            arg_or("non_blocking", "bool", D::Bool(false)),
            arg_or("copy", "bool", D::Bool(false)),
            arg_or("memory_format", "MemoryFormat?", D::None),
        ],
        &[],
    ),
    schema(
        "to.dtype_layout",
        &[arg("self", "Tensor")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
            arg_or("non_blocking", "bool", D::Bool(false)),
            arg_or("copy", "bool", D::Bool(false)),
            arg_or("memory_format", "MemoryFormat?", D::None),
        ],
    ),
    schema(
        "topk.default",
        &[
            arg("self", "Tensor"),
            arg("k", "SymInt"),
            arg_or("dim", "int", D::Int(-1)),
            arg_or("largest", "bool", D::Bool(true)),
            arg_or("sorted", "bool", D::Bool(true)),
        ],
        &[],
    ),
    schema("trace.default", &[arg("self", "Tensor")], &[]),
    schema(
        "transpose.int",
        &[
            arg("self", "Tensor"),
            arg("dim0", "int"),
            arg("dim1", "int"),
        ],
        &[],
    ),
    schema(
        "transpose_copy.int",
        &[
            arg("self", "Tensor"),
            arg("dim0", "int"),
            arg("dim1", "int"),
        ],
        &[],
    ),
    schema(
        "trapezoid.dx",
        &[arg("y", "Tensor")],
        &[
            arg_or("dx", "Scalar", D::Int(1)),
            arg_or("dim", "int", D::Int(-1)),
        ],
    ),
    schema("trapezoid.x", &[arg("y", "Tensor"), arg("x", "Tensor")], &[arg_or("dim", "int", D::Int(-1))]),
    schema(
        "trapz.dx",
        &[arg("y", "Tensor")],
        &[
            arg_or("dx", "float", D::Float(1.0)),
            arg_or("dim", "int", D::Int(-1)),
        ],
    ),
    schema("trapz.x", &[arg("y", "Tensor"), arg("x", "Tensor")], &[arg_or("dim", "int", D::Int(-1))]),
    not_evaluated(
        schema("triangular_solve.default", &[arg("self", "Tensor"), arg("A", "Tensor"), arg_or("upper", "bool", D::Bool(true)), arg_or("transpose", "bool", D::Bool(false)), arg_or("unitriangular", "bool", D::Bool(false))], &[]),
        "a solve of constants alone has not been met; its lowering multiplies by the solve's matrix computed at export",
    ),
    schema(
        "tril.default",
        &[
            arg("self", "Tensor"),
            arg_or("diagonal", "SymInt", D::Int(0)),
        ],
        &[],
    ),
    not_evaluated(schema("triplet_margin_loss.default", &[arg("anchor", "Tensor"), arg("positive", "Tensor"), arg("negative", "Tensor"), arg_or("margin", "float", D::Float(1.0)), arg_or("p", "float", D::Float(2.0)), arg_or("eps", "float", D::Float(1e-06)), arg_or("swap", "bool", D::Bool(false)), arg_or("reduction", "int", D::Int(1))], &[]), "a loss or distance of constants alone has not been met; its lowering computes it"),
    schema(
        "triu.default",
        &[
            arg("self", "Tensor"),
            arg_or("diagonal", "SymInt", D::Int(0)),
        ],
        &[],
    ),
    schema(
        "true_divide.Scalar",
        &[arg("self", "Tensor"), arg("other", "Scalar")],
        &[],
    ),
    schema(
        "true_divide.Tensor",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema("trunc.default", &[arg("self", "Tensor")], &[]),
    schema(
        "type_as.default",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "unbind.int",
        &[arg("self", "Tensor"), arg_or("dim", "int", D::Int(0))],
        &[],
    ),
    schema(
        "unbind_copy.int",
        &[arg("self", "Tensor"), arg_or("dim", "int", D::Int(0))],
        &[],
    ),
    schema(
        "unflatten.int",
        &[
            arg("self", "Tensor"),
            arg("dim", "int"),
            arg("sizes", "SymInt[]"),
        ],
        &[],
    ),
    schema(
        "unfold.default",
        &[
            arg("self", "Tensor"),
            arg("dimension", "int"),
            arg("size", "int"),
            arg("step", "int"),
        ],
        &[],
    ),
    schema(
        "unfold_copy.default",
        &[
            arg("self", "Tensor"),
            arg("dimension", "int"),
            arg("size", "int"),
            arg("step", "int"),
        ],
        &[],
    ),
    schema(
        "unsafe_chunk.default",
        &[
            arg("self", "Tensor"),
            arg("chunks", "int"),
            arg_or("dim", "int", D::Int(0)),
        ],
        &[],
    ),
    schema(
        "unsafe_split.Tensor",
        &[
            arg("self", "Tensor"),
            arg("split_size", "SymInt"),
            arg_or("dim", "int", D::Int(0)),
        ],
        &[],
    ),
    schema(
        "unsafe_split_with_sizes.default",
        &[
            arg("self", "Tensor"),
            arg("split_sizes", "SymInt[]"),
            arg_or("dim", "int", D::Int(0)),
        ],
        &[],
    ),
    schema(
        "unsqueeze.default",
        &[arg("self", "Tensor"), arg("dim", "int")],
        &[],
    ),
    schema(
        "unsqueeze_copy.default",
        &[arg("self", "Tensor"), arg("dim", "int")],
        &[],
    ),
    schema(
        "upsample_bicubic2d.default",
        &[
            arg("self", "Tensor"),
            arg("output_size", "SymInt[2]"),
            arg("align_corners", "bool"),
            arg_or("scales_h", "float?", D::None),
            arg_or("scales_w", "float?", D::None),
        ],
        &[],
    ),
    schema(
        "upsample_bicubic2d.vec",
        &[
            arg("input", "Tensor"),
            arg("output_size", "SymInt[]?"),
            arg("align_corners", "bool"),
            arg("scale_factors", "float[]?"),
        ],
        &[],
    ),
    schema(
        "upsample_bilinear2d.default",
        &[
            arg("self", "Tensor"),
            arg("output_size", "SymInt[2]"),
            arg("align_corners", "bool"),
            arg_or("scales_h", "float?", D::None),
            arg_or("scales_w", "float?", D::None),
        ],
        &[],
    ),
    schema(
        "upsample_bilinear2d.vec",
        &[
            arg("input", "Tensor"),
            arg("output_size", "SymInt[]?"),
            arg("align_corners", "bool"),
            arg("scale_factors", "float[]?"),
        ],
        &[],
    ),
    schema(
        "upsample_linear1d.default",
        &[
            arg("self", "Tensor"),
            arg("output_size", "SymInt[1]"),
            arg("align_corners", "bool"),
            arg_or("scales", "float?", D::None),
        ],
        &[],
    ),
    schema(
        "upsample_linear1d.vec",
        &[
            arg("input", "Tensor"),
            arg("output_size", "SymInt[]?"),
            arg("align_corners", "bool"),
            arg("scale_factors", "float[]?"),
        ],
        &[],
    ),
    schema(
        "upsample_nearest1d.default",
        &[
            arg("self", "Tensor"),
            arg("output_size", "SymInt[1]"),
            arg_or("scales", "float?", D::None),
        ],
        &[],
    ),
    schema(
        "upsample_nearest1d.vec",
        &[
            arg("input", "Tensor"),
            arg("output_size", "SymInt[]?"),
            arg("scale_factors", "float[]?"),
        ],
        &[],
    ),
    schema(
        "upsample_nearest2d.default",
        &[
            arg("self", "Tensor"),
            arg("output_size", "SymInt[2]"),
            arg_or("scales_h", "float?", D::None),
            arg_or("scales_w", "float?", D::None),
        ],
        &[],
    ),
    schema(
        "upsample_nearest2d.vec",
        &[
            arg("input", "Tensor"),
            arg("output_size", "SymInt[]?"),
            arg("scale_factors", "float[]?"),
        ],
        &[],
    ),
    schema(
        "upsample_nearest3d.default",
        &[
            arg("self", "Tensor"),
            arg("output_size", "SymInt[3]"),
            arg_or("scales_d", "float?", D::None),
            arg_or("scales_h", "float?", D::None),
            arg_or("scales_w", "float?", D::None),
        ],
        &[],
    ),
    schema(
        "upsample_nearest3d.vec",
        &[
            arg("input", "Tensor"),
            arg("output_size", "SymInt[]?"),
            arg("scale_factors", "float[]?"),
        ],
        &[],
    ),
    schema(
        "upsample_trilinear3d.default",
        &[
            arg("self", "Tensor"),
            arg("output_size", "SymInt[3]"),
            arg("align_corners", "bool"),
            arg_or("scales_d", "float?", D::None),
            arg_or("scales_h", "float?", D::None),
            arg_or("scales_w", "float?", D::None),
        ],
        &[],
    ),
    schema(
        "upsample_trilinear3d.vec",
        &[
            arg("input", "Tensor"),
            arg("output_size", "SymInt[]?"),
            arg("align_corners", "bool"),
            arg("scale_factors", "float[]?"),
        ],
        &[],
    ),
    schema(
        "var.correction",
        &[arg("self", "Tensor"), arg_or("dim", "int[1]?", D::None)],
        &[
            arg_or("correction", "Scalar?", D::None),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
    ),
    schema(
        "var.default",
        &[
            arg("self", "Tensor"),
            arg_or("unbiased", "bool", D::Bool(true)),
        ],
        &[],
    ),
    schema(
        "var.dim",
        &[
            arg("self", "Tensor"),
            arg("dim", "int[1]?"),
            arg_or("unbiased", "bool", D::Bool(true)),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema(
        "var_mean.correction",
        &[arg("self", "Tensor"), arg_or("dim", "int[1]?", D::None)],
        &[
            arg_or("correction", "Scalar?", D::None),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
    ),
    schema(
        "var_mean.default",
        &[
            arg("self", "Tensor"),
            arg_or("unbiased", "bool", D::Bool(true)),
        ],
        &[],
    ),
    schema(
        "var_mean.dim",
        &[
            arg("self", "Tensor"),
            arg("dim", "int[1]?"),
            arg_or("unbiased", "bool", D::Bool(true)),
            arg_or("keepdim", "bool", D::Bool(false)),
        ],
        &[],
    ),
    schema("vdot.default", &[arg("self", "Tensor"), arg("other", "Tensor")], &[]),
    schema(
        "view.default",
        &[arg("self", "Tensor"), arg("size", "SymInt[]")],
        &[],
    ),
    schema(
        "view_as.default",
        &[arg("self", "Tensor"), arg("other", "Tensor")],
        &[],
    ),
    schema(
        "view_copy.default",
        &[arg("self", "Tensor"), arg("size", "SymInt[]")],
        &[],
    ),
    schema(
        "vsplit.array",
        &[arg("self", "Tensor"), arg("indices", "int[]")],
        &[],
    ),
    schema(
        "vsplit.int",
        &[arg("self", "Tensor"), arg("sections", "int")],
        &[],
    ),
    schema(
        "where.Scalar",
        &[
            arg("condition", "Tensor"),
            arg("self", "Scalar"),
            arg("other", "Scalar"),
        ],
        &[],
    ),
    schema(
        "where.ScalarOther",
        &[
            arg("condition", "Tensor"),
            arg("self", "Tensor"),
            arg("other", "Scalar"),
        ],
        &[],
    ),
    schema(
        "where.ScalarSelf",
        &[
            arg("condition", "Tensor"),
            arg("self", "Scalar"),
            arg("other", "Tensor"),
        ],
        &[],
    ),
    schema(
        "where.self",
        &[
            arg("condition", "Tensor"),
            arg("self", "Tensor"),
            arg("other", "Tensor"),
        ],
        &[],
    ),
    schema("xlogy.Tensor", &[arg("self", "Tensor"), arg("other", "Tensor")], &[]),
    schema("zero_.default", &[arg("self", "Tensor")], &[]),
    schema(
        "zeros.default",
        &[arg("size", "SymInt[]")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
        ],
    ),
    schema(
        "zeros_like.default",
        &[arg("self", "Tensor")],
        &[
            arg_or("dtype", "ScalarType?", D::None),
            arg_or("layout", "Layout?", D::None),
            arg_or("device", "Device?", D::None),
            arg_or("pin_memory", "bool?", D::None),
            arg_or("memory_format", "MemoryFormat?", D::None),
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
        assert!(lookup("_fused_adam.default").is_none());
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
            r#"{"target": "_fused_adam.default", "outputs": [], "inputs": []}"#,
        )
        .unwrap();
        assert!(check(&unknown).is_err());
    }
}
