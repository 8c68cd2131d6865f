//! The `torch.*` calls that traced code makes and the import reads. `torch.<name>(…)` is
//! an overload of the aten schema table ([`crate::aten::schema`]) whose op is `<name>`: the
//! one row of that name, or for names with several rows the first of [`SHAPED`] and then the
//! table's rows that takes the call's positional count and keywords. Its argument names,
//! positional and keyword-only, come from the table, so a positional TorchScript call
//! becomes a call by schema name, as torch.export writes it.

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

/// The overloads whose per-sample output sizes [`crate::aten::shape::infer`] computes by a rule
/// of its own (besides [`CONVOLUTION`], [`MULTI_HEAD_ATTENTION`], [`LSTM`] and [`GRU`]):
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

/// Whether `target`'s output sizes come from [`crate::aten::shape::infer`] (see [`SHAPED`]).
pub fn shaped(target: &str) -> bool {
    [CONVOLUTION, MULTI_HEAD_ATTENTION, LSTM, GRU].contains(&target) || SHAPED.contains(&target)
}

/// The argument names no row of torch's schemas types as a tensor (`dim` is an int, a list
/// of ints, an optional int or a dimension name), so a call passing a tensor there means
/// another overload: `torch.min(a, b)` of two tensors is `min.other`, `torch.min(a, 1)`
/// is `min.dim`. The interop tier checks this against torch's schemas.
pub const NEVER_TENSOR: &[&str] = &["dim"];

/// The rows of the schema table whose `self` is a number, not a tensor (torch's
/// `Scalar self`); every other row's `self` is a tensor. The interop tier checks this
/// against torch's schemas.
pub const SCALAR_SELF: &[&str] = &["pow.Scalar", "where.Scalar", "where.ScalarSelf"];

/// The schema `torch.<name>` is read with when called with positional arguments of which
/// `tensors` says which are tensors, and keywords `keywords`: the preferred overload
/// ([`SHAPED`]) if it takes them, else the first row of the table that does. A row takes
/// them when it has that many positional arguments or more, every keyword, and no tensor
/// falls on a [`NEVER_TENSOR`] argument. `None` when no row of that name takes them.
pub fn lookup(name: &str, tensors: &[bool], keywords: &[&str]) -> Option<&'static Schema> {
    let rows = || {
        targets()
            .filter_map(schema::lookup)
            .filter(move |s| s.name() == name)
    };
    let takes = |s: &&Schema| {
        tensors.len() <= s.args.len()
            && keywords.iter().all(|k| s.has(k))
            && !s
                .args
                .iter()
                .zip(tensors)
                .any(|(arg, &tensor)| tensor && NEVER_TENSOR.contains(&arg.name))
    };
    rows()
        .filter(|s| shaped(s.target))
        .chain(rows().filter(|s| !shaped(s.target)))
        .find(takes)
}

/// Every op name read, for the unsupported-op error.
pub fn names() -> Vec<&'static str> {
    let mut names: Vec<&str> = targets()
        .filter_map(schema::lookup)
        .map(Schema::name)
        .collect();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_call_has_an_aten_schema_and_one_overload() {
        for target in [CONVOLUTION, MULTI_HEAD_ATTENTION, LSTM, GRU]
            .into_iter()
            .chain(SHAPED.iter().copied())
        {
            assert!(schema::lookup(target).is_some(), "{target} has no schema");
        }
        let numbers =
            |n: usize| -> Vec<bool> { std::iter::once(true).chain(vec![false; n - 1]).collect() };
        assert_eq!(
            lookup("mean", &numbers(3), &[]).map(|s| s.target),
            Some("mean.dim")
        );
        assert_eq!(
            lookup("_convolution", &numbers(13), &[]).map(|s| s.args.len()),
            Some(13)
        );
        assert!(lookup("grid_sampler", &numbers(1), &[]).is_none());
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
            lookup("gather", &[true, false, true], &[]).map(|s| s.target),
            Some("gather.default")
        );
        assert_eq!(
            lookup("min", &[true, false, false], &[]).map(|s| s.target),
            Some("min.dim")
        );
        assert_eq!(
            lookup("div", &[true, true], &["rounding_mode"]).map(|s| s.target),
            Some("div.Tensor_mode")
        );
        assert_eq!(
            lookup("div", &[true, true], &[]).map(|s| s.target),
            Some("div.Tensor")
        );
        assert!(lookup("gather", &[true; 5], &[]).is_none());
    }

    #[test]
    fn a_tensor_where_a_dimension_goes_picks_the_elementwise_overload() {
        // `torch.min(a, b)` of two tensors (T5's and MPNet's relative position buckets).
        for name in ["min", "max"] {
            assert_eq!(
                lookup(name, &[true, true], &[]).map(|s| s.target),
                Some(format!("{name}.other").as_str())
            );
            assert_eq!(
                lookup(name, &[true, false], &[]).map(|s| s.target),
                Some(format!("{name}.dim").as_str())
            );
        }
    }
}
