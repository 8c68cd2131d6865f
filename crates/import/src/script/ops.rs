//! The `torch.*` calls that traced code makes and the import reads. `torch.<name>(…)` is
//! an overload of the aten schema table ([`ckpt_aten::schema`]) whose op is `<name>`: the
//! one row of that name, or for names with several rows the first of [`SHAPED`] and then the
//! table's rows whose argument types take the call's values ([`lookup`]). Its argument names,
//! positional and keyword-only, come from the table, so a positional TorchScript call
//! becomes a call by schema name, as torch.export writes it.

use ckpt_aten::schema::{self, Arg, ListSize, Schema};

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

/// `nn.RNN`'s kernel with `nonlinearity="tanh"`. It returns (output, h_n), like [`GRU`].
pub const RNN_TANH: &str = "rnn_tanh.input";

/// `nn.RNN`'s kernel with `nonlinearity="relu"`. It returns (output, h_n), like [`GRU`].
pub const RNN_RELU: &str = "rnn_relu.input";

/// `topk`'s kernel. It returns (values, indices), both of the sizes its shape rule gives;
/// the conversion gives it both outputs, the indices int64.
pub const TOPK: &str = "topk.default";

/// The overloads whose per-sample output sizes [`ckpt_aten::shape::infer`] computes by a rule
/// of its own (besides [`CONVOLUTION`], [`MULTI_HEAD_ATTENTION`], [`LSTM`], [`GRU`],
/// [`RNN_TANH`], [`RNN_RELU`] and [`TOPK`]):
/// ops on activations too large to evaluate, or whose rule also checks the batch stays
/// first. Every other overload's sizes are evaluated ([`super::convert`]). Listed first
/// among the rows of their name, they are also the overload a call by that name prefers.
pub const SHAPED: &[&str] = &[
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
    "_adaptive_avg_pool2d.default",
    "_adaptive_avg_pool3d.default",
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
    "rms_norm.default",
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
    "reflection_pad1d.default",
    "reflection_pad2d.default",
    "reflection_pad3d.default",
    "replication_pad1d.default",
    "replication_pad2d.default",
    "replication_pad3d.default",
    "instance_norm.default",
    "group_norm.default",
    "narrow.default",
    "index_select.default",
    "scatter.src",
    "scatter_add.default",
    "scatter_reduce.two",
    "index_put.default",
    "select_scatter.default",
    "slice_scatter.default",
    "masked_scatter.default",
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
    "matmul.default",
    "select.int",
    "unsqueeze.default",
    // `torch.squeeze(x, d)`; a call without a dimension is refused by its shape rule.
    "squeeze.dim",
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
    // `F.grid_sample` records `torch.grid_sampler`.
    "grid_sampler.default",
    "grid_sampler_2d.default",
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
    // In place into an activation (`x[:, 1:] += y` records `copy_` into the slice).
    "copy_.default",
    "one_hot.default",
];

/// Overloads with a rule of their own in [`ckpt_aten::shape::infer`] whose name a
/// [`SHAPED`] row holds already, so a call by that name does not prefer them: `clamp` by
/// tensor bounds (timm's clippable linears clamp by 0-d buffers), beside `clamp` by numbers.
pub const SHAPED_BESIDE: &[&str] = &["clamp.Tensor", "clamp_.Tensor"];

/// The convolutions padded by name (`padding="same"`, `"valid"`), which a call of a
/// [`SHAPED`] convolution's name takes when its padding is a string; their sizes come from
/// the aten evaluator, as for any op without a rule of its own.
pub const PADDED_BY_NAME: &[&str] = &["conv1d.padding", "conv2d.padding", "conv3d.padding"];

/// Every overload a traced call can name: every row of the aten schema table but the
/// Python operators on symbolic sizes, which traced code does not call.
pub fn targets() -> impl Iterator<Item = &'static str> {
    schema::SCHEMAS
        .iter()
        .map(|s| s.target)
        .filter(|t| !t.starts_with("_operator."))
}

/// Whether `target`'s output sizes come from [`ckpt_aten::shape::infer`] (see [`SHAPED`]).
pub fn shaped(target: &str) -> bool {
    [
        CONVOLUTION,
        MULTI_HEAD_ATTENTION,
        LSTM,
        GRU,
        RNN_TANH,
        RNN_RELU,
        TOPK,
    ]
    .contains(&target)
        || SHAPED.contains(&target)
        || SHAPED_BESIDE.contains(&target)
}

/// What a call passes for one argument, as the choice of overload sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Passed {
    Tensor,
    Int,
    Float,
    Bool,
    Str,
    None,
    List(Vec<Passed>),
}

impl Passed {
    /// The value's type as torch's schemas name it (`Tensor`, `int[]`), for errors.
    pub fn describe(&self) -> String {
        match self {
            Passed::Tensor => "Tensor".into(),
            Passed::Int => "int".into(),
            Passed::Float => "float".into(),
            Passed::Bool => "bool".into(),
            Passed::Str => "str".into(),
            Passed::None => "None".into(),
            Passed::List(items) => match items.first() {
                Some(first) if items.iter().all(|i| i == first) => {
                    format!("{}[]", first.describe())
                }
                _ => format!(
                    "[{}]",
                    items
                        .iter()
                        .map(Passed::describe)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            },
        }
    }
}

/// Whether a value passed as `passed` is one argument `arg` takes, as TorchScript's
/// schema matching decides it (`tryConvertToType`): exactly, or with `conversions` also a
/// number where a tensor goes (the 0-d tensor TorchScript makes of it). An `int` is a
/// `float` and a `Scalar`; dtypes, layouts and memory formats are ints in traced code, a
/// device a string; a list of fixed size (`int[2] stride`) also takes one number.
fn takes(arg: &Arg, passed: &Passed, conversions: bool) -> bool {
    match (passed, arg.list()) {
        (Passed::None, _) => arg.optional(),
        (Passed::List(items), Some(_)) => items
            .iter()
            .all(|item| element_takes(arg.element(), item, conversions)),
        (Passed::List(_), None) => false,
        (_, Some(ListSize::Any)) => false,
        (Passed::Tensor, Some(ListSize::Fixed)) => false,
        (single, _) => element_takes(arg.element(), single, conversions),
    }
}

/// [`takes`] for one value of type `element` (`Tensor?` in a `Tensor?[]` takes `None`).
fn element_takes(element: &str, passed: &Passed, conversions: bool) -> bool {
    let (element, optional) = match element.strip_suffix('?') {
        Some(e) => (e, true),
        None => (element, false),
    };
    match passed {
        Passed::None => optional,
        Passed::Tensor => element == "Tensor",
        Passed::Int => {
            matches!(
                element,
                "int" | "SymInt" | "float" | "Scalar" | "ScalarType" | "Layout" | "MemoryFormat"
            ) || (conversions && element == "Tensor")
        }
        Passed::Float => {
            matches!(element, "float" | "Scalar") || (conversions && element == "Tensor")
        }
        Passed::Bool => {
            matches!(element, "bool" | "Scalar") || (conversions && element == "Tensor")
        }
        Passed::Str => matches!(element, "str" | "Device" | "Dimname"),
        Passed::List(_) => false,
    }
}

/// The schema `torch.<name>` is read with when called with positional arguments `args`
/// and keyword arguments `kwargs`: the first row of that name that takes them all, the
/// preferred overloads ([`SHAPED`]) first, trying exact matches before conversions (as
/// TorchScript resolves an overloaded call). A row takes them when it has that many
/// positional arguments or more, every keyword, and each value is one its argument takes
/// ([`takes`]). `None` when no row of that name takes them.
///
/// The types are torch's ([`Arg::ty`]), so a call is read as the overload TorchScript
/// compiled it to: `torch.min(a, b)` of two tensors is `min.other` and `torch.min(a, 1)`
/// is `min.dim`; `torch.hsplit(x, 2)` is `hsplit.int` and `torch.hsplit(x, [1, 3])`
/// `hsplit.array`; `eq(x, 0)` is `eq.Scalar`.
pub fn lookup(name: &str, args: &[Passed], kwargs: &[(&str, Passed)]) -> Option<&'static Schema> {
    let rows = || {
        targets()
            .filter_map(schema::lookup)
            .filter(move |s| s.name() == name)
    };
    let ordered = || {
        rows()
            .filter(|s| shaped(s.target))
            .chain(rows().filter(|s| !shaped(s.target)))
    };
    let fits = |s: &Schema, conversions: bool| {
        args.len() <= s.args.len()
            && s.args
                .iter()
                .zip(args)
                .all(|(arg, passed)| takes(arg, passed, conversions))
            && kwargs.iter().all(|(key, passed)| {
                s.arguments()
                    .find(|a| a.name == *key)
                    .is_some_and(|arg| takes(arg, passed, conversions))
            })
    };
    // With conversions, rows whose `self` is a tensor first: a number passed there is, in
    // traced code, a size torch holds as a 0-d tensor (`NumToTensor`), so `n ** 0.5` of a
    // size is `pow.Tensor_Scalar`, not `pow.Scalar`. Among those, the row that converts
    // the fewest arguments: `clamp(size, 0)` converts its size, not its bound as well
    // (`clamp.default`, not `clamp.Tensor`).
    let self_tensor = |s: &&Schema| s.args.first().is_some_and(|a| a.ty == "Tensor");
    let conversions = |s: &Schema| {
        let positional = s.args.iter().zip(args).filter(|(a, p)| !takes(a, p, false));
        let named = kwargs.iter().filter(|(key, passed)| {
            s.arguments()
                .find(|a| a.name == *key)
                .is_some_and(|a| !takes(a, passed, false))
        });
        positional.count() + named.count()
    };
    ordered().find(|s| fits(s, false)).or_else(|| {
        let candidates = || ordered().filter(|s| fits(s, true));
        let first_of = |rows: Vec<&'static Schema>| {
            let fewest = rows.iter().map(|s| conversions(s)).min()?;
            rows.into_iter().find(|s| conversions(s) == fewest)
        };
        first_of(candidates().filter(self_tensor).collect())
            .or_else(|| first_of(candidates().filter(|s| !self_tensor(s)).collect()))
    })
}

/// The rows a call of `torch.<name>` may be read with, for the error when none takes it.
pub fn overloads(name: &str) -> Vec<&'static Schema> {
    targets()
        .filter_map(schema::lookup)
        .filter(|s| s.name() == name)
        .collect()
}

/// How many op names a traced call can name.
pub fn name_count() -> usize {
    let mut names: Vec<&str> = targets()
        .filter_map(schema::lookup)
        .map(Schema::name)
        .collect();
    names.dedup();
    names.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Passed::{Float, Int, Tensor};

    fn target(name: &str, args: &[Passed], kwargs: &[(&str, Passed)]) -> Option<&'static str> {
        lookup(name, args, kwargs).map(|s| s.target)
    }

    #[test]
    fn every_call_has_an_aten_schema_and_one_overload() {
        for target in [CONVOLUTION, MULTI_HEAD_ATTENTION, LSTM, GRU]
            .into_iter()
            .chain(SHAPED.iter().copied())
        {
            assert!(schema::lookup(target).is_some(), "{target} has no schema");
        }
        let ints = Passed::List(vec![Int]);
        assert_eq!(
            target("mean", &[Tensor, ints, Passed::Bool], &[]),
            Some("mean.dim")
        );
        let mut convolution = vec![Tensor, Tensor, Passed::None];
        convolution.extend(std::iter::repeat_n(Passed::List(vec![Int, Int]), 3));
        convolution.extend([Passed::Bool, Passed::List(vec![Int, Int]), Int]);
        convolution.extend(std::iter::repeat_n(Passed::Bool, 4));
        assert_eq!(
            lookup("_convolution", &convolution, &[]).map(|s| s.args.len()),
            Some(13)
        );
        assert!(lookup("_fused_adam", &[Tensor], &[]).is_none());
        let mut shaped: Vec<&str> = SHAPED
            .iter()
            .map(|t| t.split('.').next().unwrap())
            .collect();
        let count = shaped.len();
        shaped.sort_unstable();
        shaped.dedup();
        assert_eq!(shaped.len(), count, "an op is listed twice");
    }

    #[test]
    fn every_schema_row_is_read_and_calls_pick_the_overload_that_takes_them() {
        assert_eq!(targets().count() + 1, schema::SCHEMAS.len());
        assert_eq!(
            target("gather", &[Tensor, Int, Tensor], &[]),
            Some("gather.default")
        );
        assert_eq!(
            target("min", &[Tensor, Int, Passed::Bool], &[]),
            Some("min.dim")
        );
        let mode = [("rounding_mode", Passed::Str)];
        assert_eq!(
            target("div", &[Tensor, Tensor], &mode),
            Some("div.Tensor_mode")
        );
        assert_eq!(target("div", &[Tensor, Tensor], &[]), Some("div.Tensor"));
        assert_eq!(target("div", &[Tensor, Float], &[]), Some("div.Scalar"));
        assert!(lookup("gather", &[Tensor, Tensor, Tensor, Tensor, Tensor], &[]).is_none());
    }

    #[test]
    fn a_tensor_where_a_dimension_goes_picks_the_elementwise_overload() {
        // `torch.min(a, b)` of two tensors (T5's and MPNet's relative position buckets).
        for name in ["min", "max"] {
            assert_eq!(
                target(name, &[Tensor, Tensor], &[]),
                Some(format!("{name}.other").as_str())
            );
            assert_eq!(
                target(name, &[Tensor, Int], &[]),
                Some(format!("{name}.dim").as_str())
            );
        }
    }

    #[test]
    fn a_number_or_a_list_picks_the_overload_whose_type_takes_it() {
        // `torch.hsplit(x, 2)` and `torch.hsplit(x, [1, 3])`.
        assert_eq!(target("hsplit", &[Tensor, Int], &[]), Some("hsplit.int"));
        let indices = Passed::List(vec![Int, Int]);
        assert_eq!(
            target("hsplit", &[Tensor, indices.clone()], &[]),
            Some("hsplit.array")
        );
        assert_eq!(
            target("tensor_split", &[Tensor, indices, Int], &[]),
            Some("tensor_split.indices")
        );
        assert_eq!(
            target("tensor_split", &[Tensor, Int, Int], &[]),
            Some("tensor_split.sections")
        );
        // A number, a tensor, or a string where torch's overloads differ by type.
        assert_eq!(target("eq", &[Tensor, Int], &[]), Some("eq.Scalar"));
        assert_eq!(target("eq", &[Tensor, Tensor], &[]), Some("eq.Tensor"));
        assert_eq!(
            target("masked_fill", &[Tensor, Tensor, Float], &[]),
            Some("masked_fill.Scalar")
        );
        assert_eq!(
            target("clamp", &[Tensor, Float, Float], &[]),
            Some("clamp.default")
        );
        assert_eq!(
            target("clamp", &[Tensor, Passed::None, Tensor], &[]),
            Some("clamp.Tensor")
        );
        // timm's same padding, `max(size arithmetic, 0)` traced as `clamp(size, 0)`: the
        // size becomes a 0-d tensor, the bound stays a number.
        assert_eq!(target("clamp", &[Int, Int], &[]), Some("clamp.default"));
        assert_eq!(target("pow", &[Float, Tensor], &[]), Some("pow.Scalar"));
        assert_eq!(target("pow", &[Int, Float], &[]), Some("pow.Tensor_Scalar"));
        assert_eq!(
            target("pow", &[Tensor, Float], &[]),
            Some("pow.Tensor_Scalar")
        );
        let padding = Passed::Str;
        let conv = [
            Tensor,
            Tensor,
            Passed::None,
            Passed::List(vec![Int]),
            padding,
        ];
        assert_eq!(target("conv2d", &conv, &[]), Some("conv2d.padding"));
        // A number where only a tensor goes: the 0-d tensor TorchScript makes of it.
        assert_eq!(
            target("maximum", &[Tensor, Float], &[]),
            lookup("maximum", &[Tensor, Tensor], &[]).map(|s| s.target)
        );
    }
}
