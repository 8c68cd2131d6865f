//! Evaluating aten ops on constants: what a program computes from its parameters, buffers
//! and constants alone (a reshaped layer scale, a standardised conv weight, a relative
//! position bias looked up through an index buffer) is computed once, at export, by
//! [`evaluate`], so the exported graph holds the result as an initializer.
//!
//! Only ops whose every tensor input is a constant are evaluated; `EVALUATED` lists them.
//! A node naming an argument its op's schema lacks is refused
//! ([`super::schema::check`]), and every op reads or refuses each argument of its schema
//! (ignoring only those that cannot change values: placement, memory format), so an
//! evaluation is exact or an error, never a silently different constant.

mod along;
mod distance;
mod dtype;
mod factory;
mod histogram;
mod linalg;
mod nonzero;
mod pointwise;
mod resample;
mod scatter;
mod segment;
mod tensor;
mod window;

pub use dtype::{is_integer, recorded};
pub use resample::{antialiased_taps, nearest_exact};
pub use tensor::{
    axis, broadcast, element_count, kron_views, tensordot_orders, Tensor, Values, MAX_ELEMENTS,
};
pub use window::{adaptive_window, swept};

/// The error function, for the decompositions and special functions that compute it.
pub fn erf(x: f64) -> f64 {
    pointwise::erf(x)
}

use dtype::FLOAT32;

use crate::dim::Dim;
use crate::program::{Argument, Node};
use crate::schema::DefaultValue;

use tensor::Reduction;

/// Whether [`evaluate`] computes `target` (with or without `torch.ops.aten.`): its schema
/// row, or the row of the view a copy copies or the op an alias names
/// (`schema::canonical`), gives no reason why not (`not_evaluated`). Which module computes
/// each row is tied to the table by `every_evaluated_row_is_computed_by_one_module`; a
/// compound op of [`crate::expand`] is computed at export as its steps, each
/// evaluated here.
pub fn is_evaluated(target: &str) -> bool {
    let target = target.strip_prefix("torch.ops.aten.").unwrap_or(target);
    super::schema::lookup(super::schema::canonical(target))
        .is_some_and(|row| row.not_evaluated.is_none())
}

/// The aten targets (without `torch.ops.aten.`) [`evaluate`] computes by its own match,
/// not by a decomposition, a special function, a relayout, a Fourier transform or a
/// linear-algebra function; their `*_copy` variants and aliases too ([`is_evaluated`]).
#[cfg(any(test, feature = "testing"))]
pub const EVALUATED: &[&str] = &[
    "all.default",
    "all.dim",
    "all.dims",
    "any.default",
    "any.dim",
    "any.dims",
    "count_nonzero.default",
    "count_nonzero.dim_IntList",
    "logsumexp.default",
    "nansum.default",
    "nanmean.default",
    "tensor_split.sections",
    "_safe_softmax.default",
    "sum_to_size.default",
    "var_mean.correction",
    "var_mean.dim",
    "var_mean.default",
    "std_mean.correction",
    "std_mean.dim",
    "std_mean.default",
    "unsafe_split.Tensor",
    "unsafe_split_with_sizes.default",
    "unsafe_chunk.default",
    "hsplit.int",
    "hsplit.array",
    "vsplit.int",
    "vsplit.array",
    "dsplit.int",
    "dsplit.array",
    "view.default",
    "reshape.default",
    "_unsafe_view.default",
    "reshape_as.default",
    "view_as.default",
    "flatten.using_ints",
    "unflatten.int",
    "permute.default",
    "transpose.int",
    "t.default",
    "mT.default",
    "mH.default",
    "adjoint.default",
    "unsqueeze.default",
    "squeeze.dim",
    "squeeze.dims",
    "select.int",
    "slice.Tensor",
    "narrow.default",
    "index.Tensor",
    "index_select.default",
    "expand.default",
    "broadcast_tensors.default",
    "expand_as.default",
    "broadcast_to.default",
    "repeat.default",
    "tile.default",
    "repeat_interleave.self_int",
    "split.Tensor",
    "split_with_sizes.default",
    "chunk.default",
    "unbind.int",
    "tensor_split.indices",
    "tensor_split.tensor_indices_or_sections",
    "flip.default",
    "_upsample_bicubic2d_aa.default",
    "_upsample_bicubic2d_aa.vec",
    "_upsample_bilinear2d_aa.default",
    "_upsample_bilinear2d_aa.vec",
    "_upsample_nearest_exact1d.default",
    "_upsample_nearest_exact1d.vec",
    "_upsample_nearest_exact2d.default",
    "_upsample_nearest_exact2d.vec",
    "_upsample_nearest_exact3d.default",
    "_upsample_nearest_exact3d.vec",
    "type_as.default",
    "_weight_norm.default",
    "one_hot.default",
    "matmul.default",
    "gather.default",
    "cat.default",
    "stack.default",
    "contiguous.default",
    "clone.default",
    "alias.default",
    "detach.default",
    "detach_.default",
    "lift_fresh_copy.default",
    "to.dtype",
    "to.dtype_layout",
    "to.device",
    "_to_copy.default",
    "add.Tensor",
    "add_.Tensor",
    "sub.Tensor",
    "sub_.Tensor",
    "mul.Tensor",
    "mul_.Tensor",
    "div.Tensor",
    "div_.Tensor",
    "softmax.int",
    "_softmax.default",
    "rsub.Tensor",
    "add.Scalar",
    "sub.Scalar",
    "mul.Scalar",
    "div.Scalar",
    "rsub.Scalar",
    "maximum.default",
    "minimum.default",
    "max.other",
    "min.other",
    "pow.Tensor_Scalar",
    "neg.default",
    "sqrt.default",
    "rsqrt.default",
    "exp.default",
    "log.default",
    "sigmoid.default",
    "tanh.default",
    "softplus.default",
    "abs.default",
    "reciprocal.default",
    "clamp.default",
    "clamp_min.default",
    "clamp_max.default",
    "clamp_.default",
    "clamp_.Tensor",
    "cdist.default",
    "_cdist_forward.default",
    "pdist.default",
    "histc.default",
    "histogram.bin_ct",
    "histogram.bins_tensor",
    "segment_reduce.default",
    "nonzero_static.default",
    "_pdist_forward.default",
    "isfinite.default",
    "lerp.Scalar",
    "mean.dim",
    "mean.default",
    "sum.dim_IntList",
    "sum.default",
    "amax.default",
    "amin.default",
    "max.default",
    "min.default",
    "aminmax.default",
    "var.correction",
    "var.dim",
    "var.default",
    "std.correction",
    "std.dim",
    "std.default",
    "linalg_vector_norm.default",
    "pairwise_distance.default",
    "linalg_matrix_norm.default",
    "linalg_matrix_norm.str_ord",
    "linalg_norm.default",
    "linalg_norm.ord_str",
    "linspace.Tensor_Scalar",
    "linspace.Tensor_Tensor",
    "linspace.Scalar_Tensor",
    "linspace.default",
    "logspace.Tensor_Scalar",
    "logspace.Tensor_Tensor",
    "logspace.Scalar_Tensor",
    "logspace.default",
    "cumsum.default",
    "div.Tensor_mode",
    "div.Scalar_mode",
    "floor_divide.default",
    "floor_divide.Scalar",
    "pow.Scalar",
    "sin.default",
    "cos.default",
    "floor.default",
    "ceil.default",
    "round.default",
    "relu.default",
    "relu_.default",
    "dropout.default",
    "linear.default",
    "conv2d.default",
    "logical_not.default",
    "bitwise_not.default",
    "eq.Tensor",
    "eq.Scalar",
    "ne.Tensor",
    "ne.Scalar",
    "lt.Tensor",
    "lt.Scalar",
    "le.Tensor",
    "le.Scalar",
    "gt.Tensor",
    "gt.Scalar",
    "ge.Tensor",
    "ge.Scalar",
    "where.self",
    "meshgrid.indexing",
    "meshgrid.default",
    "batch_norm.default",
    "_native_batch_norm_legit.no_stats",
    "_native_batch_norm_legit_functional.default",
    "__and__.Tensor",
    "__and__.Scalar",
    "__or__.Scalar",
    "__xor__.Tensor",
    "__xor__.Scalar",
    "__or__.Tensor",
    "_convolution.default",
    "_log_softmax.default",
    "_native_batch_norm_legit_no_training.default",
    "_operator.mul",
    "adaptive_avg_pool1d.default",
    "adaptive_avg_pool2d.default",
    "_adaptive_avg_pool2d.default",
    "_adaptive_avg_pool3d.default",
    "adaptive_avg_pool3d.default",
    "adaptive_max_pool1d.default",
    "adaptive_max_pool2d.default",
    "adaptive_max_pool3d.default",
    "fractional_max_pool2d.default",
    "fractional_max_pool3d.default",
    "addcdiv.default",
    "addcmul.default",
    "arange.default",
    "arange.start",
    "arange.start_step",
    "argmax.default",
    "argmin.default",
    "argsort.default",
    "argsort.stable",
    "median.default",
    "median.dim",
    "msort.default",
    "nanmedian.default",
    "nanmedian.dim",
    "nanquantile.scalar",
    "quantile.scalar",
    "nanquantile.default",
    "quantile.default",
    "avg_pool1d.default",
    "avg_pool2d.default",
    "avg_pool3d.default",
    "baddbmm.default",
    "bitwise_and.Tensor",
    "bitwise_or.Tensor",
    "bitwise_and.Scalar",
    "bitwise_or.Scalar",
    "bitwise_xor.Tensor",
    "bitwise_xor.Scalar",
    "bmm.default",
    "clamp.Tensor",
    "col2im.default",
    "constant_pad_nd.default",
    "conv1d.default",
    "conv1d.padding",
    "conv2d.padding",
    "conv3d.default",
    "conv3d.padding",
    "conv_transpose1d.default",
    "conv_transpose2d.input",
    "conv_transpose3d.input",
    "copy_.default",
    "copy.default",
    "dropout_.default",
    "einsum.default",
    "elu.default",
    "elu_.default",
    "embedding.default",
    "full.default",
    "gelu.default",
    "group_norm.default",
    "native_group_norm.default",
    "_native_batch_norm_legit.default",
    "native_batch_norm.default",
    "hardsigmoid.default",
    "hardsigmoid_.default",
    "hardswish.default",
    "hardswish_.default",
    "hardtanh.default",
    "hardtanh_.default",
    "im2col.default",
    "instance_norm.default",
    "layer_norm.default",
    "leaky_relu.default",
    "leaky_relu_.default",
    "log_softmax.int",
    "logical_and.default",
    "logical_or.default",
    "logical_xor.default",
    "masked_fill.Scalar",
    "masked_fill.Tensor",
    "masked_fill_.Scalar",
    "masked_fill_.Tensor",
    "max.dim",
    "max_pool1d.default",
    "max_pool1d_with_indices.default",
    "max_pool2d.default",
    "max_pool2d_with_indices.default",
    "max_pool3d.default",
    "max_pool3d_with_indices.default",
    "min.dim",
    "mish.default",
    "mish_.default",
    "ones.default",
    "pad.default",
    "prelu.default",
    "reflection_pad1d.default",
    "reflection_pad2d.default",
    "reflection_pad3d.default",
    "relu6.default",
    "fmod.Tensor",
    "fmod.Scalar",
    "remainder.Scalar",
    "remainder.Tensor",
    "replication_pad1d.default",
    "replication_pad2d.default",
    "replication_pad3d.default",
    "rms_norm.default",
    "roll.default",
    "scalar_tensor.default",
    "scaled_dot_product_attention.default",
    "sigmoid_.default",
    "silu.default",
    "silu_.default",
    "sym_size.int",
    "sym_numel.default",
    "tanh_.default",
    "topk.default",
    "kthvalue.default",
    "searchsorted.Scalar",
    "searchsorted.Tensor",
    "bucketize.Tensor",
    "renorm.default",
    "cartesian_prod.default",
    "frexp.Tensor",
    "cummax.default",
    "cummin.default",
    "sort.default",
    "sort.stable",
    "unfold.default",
    "grid_sampler.default",
    "grid_sampler_2d.default",
    "grid_sampler_3d.default",
    "upsample_bicubic2d.default",
    "upsample_bicubic2d.vec",
    "upsample_bilinear2d.default",
    "upsample_bilinear2d.vec",
    "upsample_linear1d.default",
    "upsample_linear1d.vec",
    "upsample_nearest1d.default",
    "upsample_nearest1d.vec",
    "upsample_nearest2d.default",
    "upsample_nearest2d.vec",
    "upsample_nearest3d.default",
    "upsample_nearest3d.vec",
    "upsample_trilinear3d.default",
    "upsample_trilinear3d.vec",
    "where.Scalar",
    "where.ScalarOther",
    "where.ScalarSelf",
    "zeros.default",
    "eye.default",
    "eye.m",
    "diff.default",
    "gradient.scalarint",
    "gradient.scalarrayint",
    "gradient.scalarrayarray",
    "gradient.tensorarray",
    "gradient.tensorarrayint",
    "logcumsumexp.default",
    "trapezoid.dx",
    "trapz.dx",
    "cumulative_trapezoid.dx",
    "zeros_like.default",
    "ones_like.default",
    "full_like.default",
    "empty_like.default",
    "empty.memory_format",
    "new_empty.default",
    "new_empty_strided.default",
    "empty_strided.default",
    "new_full.default",
    "new_ones.default",
    "new_zeros.default",
    "feature_dropout.default",
    "feature_dropout_.default",
    "alpha_dropout.default",
    "alpha_dropout_.default",
    "feature_alpha_dropout.default",
    "feature_alpha_dropout_.default",
    "triu.default",
    "tril.default",
    "hardshrink.default",
    "softshrink.default",
    "threshold.default",
    "glu.default",
    "pixel_shuffle.default",
    "pixel_unshuffle.default",
    "channel_shuffle.default",
    "native_channel_shuffle.default",
    "diag_embed.default",
    "diagonal.default",
    "linalg_diagonal.default",
    "diag.default",
    "diagflat.default",
    "trace.default",
    "linalg_matrix_power.default",
    "matrix_power.default",
    "linalg_vander.default",
    "ravel.default",
    "cumprod.default",
    "atleast_1d.default",
    "atleast_2d.default",
    "atleast_3d.default",
    "round.decimals",
    "fill_.Scalar",
    "fill.Scalar",
    "zero_.default",
    "fill_.Tensor",
    "squeeze.default",
    "mm.default",
    "mv.default",
    "outer.default",
    "addmm.default",
    "addmv.default",
    "addr.default",
    "addbmm.default",
    "kron.default",
    "tensordot.default",
    "dot.default",
    "vdot.default",
    "inner.default",
    "prod.dim_int",
    "prod.default",
    "convolution.default",
    "native_layer_norm.default",
    "scatter.src",
    "scatter.value",
    "scatter.reduce",
    "scatter.value_reduce",
    "scatter_add.default",
    "scatter_reduce.two",
    "select_scatter.default",
    "slice_scatter.default",
    "diagonal_scatter.default",
    "masked_scatter.default",
    "index_add.default",
    "index_copy.default",
    "index_fill.int_Scalar",
    "index_fill.int_Tensor",
    "index_reduce.default",
    "put.default",
    "max_unpool2d.default",
    "max_unpool3d.default",
    "take.default",
    "take_along_dim.default",
];

/// Node `node`'s outputs, computed from its tensor inputs, which `input` gives by value
/// name (every one must be a constant). Errors are plain text; the caller adds the node.
pub fn evaluate(
    node: &Node,
    input: &dyn Fn(&str) -> Option<Tensor>,
) -> Result<Vec<Tensor>, String> {
    let op = super::schema::canonical(
        node.target
            .strip_prefix("torch.ops.aten.")
            .unwrap_or(&node.target),
    );
    super::schema::check(node)?;
    let a = Args { node, input };
    let one = |t: Result<Tensor, String>| t.map(|t| vec![t]);
    if let Some(rule) = super::decompose::pointwise(op) {
        return one(decomposed(&a, rule));
    }
    if let Some(row) = super::special::special(op) {
        return one(special(&a, row));
    }
    if super::decompose::RELAYOUTS.contains(&op) {
        let mut x = a.tensor("self")?;
        for step in super::decompose::relayout(node, op, x.rank()).ok_or("not a layout op")?? {
            x = match step {
                super::decompose::Relayout::Flip(axes) => flipped(&x, &axes)?,
                super::decompose::Relayout::Permute(order) => x.permute(&order)?,
            };
        }
        return one(Ok(x));
    }
    match op {
        "tensor_split.tensor_indices_or_sections" => {
            let cuts = a.tensor("tensor_indices_or_sections")?;
            let split = super::shape::split::by_constant(node, cuts.dims(), &cuts.to_i64()?)?;
            evaluate(&split, input)
        }
        "view.default" | "reshape.default" | "_unsafe_view.default" => {
            let size = a.ints(if a.has("size") { "size" } else { "shape" })?;
            one(a.tensor("self")?.reshape(&size))
        }
        "reshape_as.default" | "view_as.default" => {
            let like: Vec<i64> = a
                .tensor("other")?
                .dims()
                .iter()
                .map(|&d| d as i64)
                .collect();
            one(a.tensor("self")?.reshape(&like))
        }
        // `ravel` is `flatten()` (`torch._refs.ravel`: `reshape(a, (-1,))`).
        "flatten.using_ints" | "ravel.default" => {
            let x = a.tensor("self")?;
            if x.rank() == 0 {
                return one(x.reshape(&[1]));
            }
            // `ravel` has neither dimension: it flattens them all.
            let start = axis(a.int_or("start_dim", 0)?, x.rank())?;
            let end = axis(a.int_or("end_dim", -1)?, x.rank())?;
            if start > end {
                return Err(format!("flatten from dimension {start} to {end}"));
            }
            let d: Vec<i64> = x.dims().iter().map(|&s| s as i64).collect();
            let mut size = d[..start].to_vec();
            size.push(d[start..=end].iter().product());
            size.extend(&d[end + 1..]);
            one(x.reshape(&size))
        }
        "unflatten.int" => {
            let x = a.tensor("self")?;
            let at = axis(a.int("dim")?, x.rank())?;
            let mut size: Vec<i64> = x.dims()[..at].iter().map(|&s| s as i64).collect();
            size.extend(a.ints("sizes")?);
            size.extend(x.dims()[at + 1..].iter().map(|&s| s as i64));
            one(x.reshape(&size))
        }
        "permute.default" => {
            let x = a.tensor("self")?;
            let order = a
                .ints("dims")?
                .into_iter()
                .map(|d| axis(d, x.rank()))
                .collect::<Result<Vec<_>, _>>()?;
            one(x.permute(&order))
        }
        "mT.default" | "mH.default" | "adjoint.default" => {
            // The last two dimensions swapped (the conjugate of a real tensor is itself).
            let x = a.tensor("self")?;
            let rank = x.rank();
            if rank < 2 {
                return Err(format!("{op} of a tensor of {rank} dimensions"));
            }
            let mut order: Vec<usize> = (0..rank).collect();
            order.swap(rank - 2, rank - 1);
            one(x.permute(&order))
        }
        "transpose.int" | "t.default" => {
            let x = a.tensor("self")?;
            let mut order: Vec<usize> = (0..x.rank()).collect();
            if x.rank() >= 2 || op == "transpose.int" {
                // A 0-d tensor's transpose (of its dimension 0 with itself) is the tensor.
                if let (Dim::Axis(p), Dim::Axis(q)) = (
                    Dim::wrap(a.int_or("dim0", 0)?, x.rank())?,
                    Dim::wrap(a.int_or("dim1", 1)?, x.rank())?,
                ) {
                    order.swap(p, q);
                }
            }
            one(x.permute(&order))
        }
        "unsqueeze.default" => {
            let x = a.tensor("self")?;
            let at = axis(a.int("dim")?, x.rank() + 1)?;
            let mut size: Vec<i64> = x.dims().iter().map(|&s| s as i64).collect();
            size.insert(at, 1);
            one(x.reshape(&size))
        }
        "squeeze.dim" | "squeeze.dims" | "squeeze.default" => {
            let x = a.tensor("self")?;
            let axes = if op == "squeeze.default" {
                (0..x.rank()).collect()
            } else {
                // A 0-d tensor's dimension 0 is its one entry, which stays.
                let mut axes = Vec::new();
                for d in a.ints("dim")? {
                    if let Dim::Axis(at) = Dim::wrap(d, x.rank())? {
                        axes.push(at);
                    }
                }
                axes
            };
            let size: Vec<i64> = (0..x.rank())
                .filter(|i| !(axes.contains(i) && x.dims()[*i] == 1))
                .map(|i| x.dims()[i] as i64)
                .collect();
            one(x.reshape(&size))
        }
        "select.int" => {
            let x = a.tensor("self")?;
            one(x.select(axis(a.int("dim")?, x.rank())?, a.int("index")?))
        }
        "slice.Tensor" => {
            let x = a.tensor("self")?;
            let at = axis(a.int("dim")?, x.rank())?;
            let step = u64::try_from(a.int("step")?).map_err(|_| "a negative slice step")?;
            one(x.slice(
                at,
                a.optional_int("start")?.unwrap_or(0),
                a.optional_int("end")?.unwrap_or(i64::MAX),
                step,
            ))
        }
        "narrow.default" => {
            let x = a.tensor("self")?;
            let start = a.int("start")?;
            let end = start
                .checked_add(a.int("length")?)
                .ok_or("narrow's end overflows")?;
            one(x.slice(axis(a.int("dim")?, x.rank())?, start, end, 1))
        }
        "atleast_1d.default" | "atleast_2d.default" | "atleast_3d.default" => {
            let x = a.tensor("self")?;
            let least = if op == "atleast_1d.default" {
                1
            } else if op == "atleast_2d.default" {
                2
            } else {
                3
            };
            let sizes: Vec<i64> = x.dims().iter().map(|&d| d as i64).collect();
            one(x.reshape(&super::schema::at_least(&sizes, least, 1)))
        }
        "round.decimals" => {
            // torch's kernel: `nearbyint(x · 10^d) / 10^d`, or `nearbyint(x / 10^−d) · 10^−d`
            // for d ≤ 0, in float32.
            let decimals = a.int("decimals")?;
            let scale = 10f64.powi(
                i32::try_from(decimals.unsigned_abs())
                    .map_err(|_| "round's decimals out of range")?,
            ) as f32;
            let x = a.tensor("self")?;
            one(Ok(if decimals > 0 {
                x.map(|v| (v * scale).round_ties_even() / scale)
            } else {
                x.map(|v| (v / scale).round_ties_even() * scale)
            }))
        }
        "pixel_shuffle.default" | "pixel_unshuffle.default" => {
            let x = a.tensor("self")?;
            let up = op == "pixel_shuffle.default";
            let r = a.int(if up {
                "upscale_factor"
            } else {
                "downscale_factor"
            })?;
            let rank = x.rank();
            let lead = rank
                .checked_sub(3)
                .ok_or("a pixel shuffle of fewer than 3 dimensions")?;
            let d = x.dims();
            let plan = super::shuffle::plan([d[lead], d[lead + 1], d[lead + 2]], r, up)?;
            let sizes = |tail: &[u64]| -> Vec<i64> {
                d[..lead].iter().chain(tail).map(|&s| s as i64).collect()
            };
            let order: Vec<usize> = (0..lead)
                .chain(plan.order.iter().map(|&o| lead + o))
                .collect();
            one(x
                .reshape(&sizes(&plan.split))?
                .permute(&order)?
                .reshape(&sizes(&plan.merged)))
        }
        "channel_shuffle.default" | "native_channel_shuffle.default" => {
            let x = a.tensor("self")?;
            let d = x.dims().to_vec();
            let groups = super::shuffle::channel_groups(&d, a.int("groups")?)?;
            let sizes: Vec<i64> = d.iter().map(|&s| s as i64).collect();
            let mut split = sizes.clone();
            split.splice(1..2, [groups[0] as i64, groups[1] as i64]);
            let mut order: Vec<usize> = (0..split.len()).collect();
            order.swap(1, 2);
            one(x.reshape(&split)?.permute(&order)?.reshape(&sizes))
        }
        "diag_embed.default" => one(diag_embedded(
            &a.tensor("self")?,
            a.int("offset")?,
            a.int("dim1")?,
            a.int("dim2")?,
        )),
        "diagonal.default" => one(diagonal(
            &a.tensor("self")?,
            a.int("offset")?,
            a.int("dim1")?,
            a.int("dim2")?,
        )),
        "linalg_diagonal.default" => one(diagonal(
            &a.tensor("A")?,
            a.int("offset")?,
            a.int("dim1")?,
            a.int("dim2")?,
        )),
        // `torch._refs.diag`: a 1-D tensor's matrix, a 2-D tensor's diagonal.
        "diag.default" => {
            let x = a.tensor("self")?;
            let offset = a.int("diagonal")?;
            match x.rank() {
                1 => one(diag_embedded(&x, offset, 0, 1)),
                2 => one(diagonal(&x, offset, 0, 1)),
                r => Err(format!(
                    "diag of a rank-{r} tensor (torch takes 1-D or 2-D)"
                )),
            }
        }
        // ATen's `diagflat`: `self.contiguous().view(-1).diag(offset)`.
        "diagflat.default" => {
            let x = a.tensor("self")?;
            let count = x.dims().iter().product::<u64>() as i64;
            one(diag_embedded(&x.reshape(&[count])?, a.int("offset")?, 0, 1))
        }
        // The sum of the main diagonal of a matrix (`torch._refs.trace`'s reduction), an
        // int64 for integer tensors.
        "trace.default" => {
            let x = a.tensor("self")?;
            if x.rank() != 2 {
                return Err(format!(
                    "trace of a rank-{} tensor (torch takes a matrix)",
                    x.rank()
                ));
            }
            let d = diagonal(&x, 0, 0, 1)?;
            one(match d.values() {
                Values::I64(_) => d.sum_i64(&[0], false),
                Values::F32(_) => d.reduce(&[0], false, Reduction::Sum),
            })
        }
        "glu.default" => {
            // The first half of `dim` times the sigmoid of the second.
            let x = a.tensor("self")?;
            let at = axis(a.int("dim")?, x.rank())?;
            let size = x.dims()[at] as i64;
            if size % 2 != 0 {
                return Err(format!("glu halves dimension {at} of odd size {size}"));
            }
            let half = size / 2;
            let (first, second) = (x.slice(at, 0, half, 1)?, x.slice(at, half, size, 1)?);
            one(Tensor::zip(
                &first,
                &second,
                |p, q| p * (1.0 / (1.0 + (-q).exp())),
                None,
            ))
        }
        "index_select.default" => {
            let x = a.tensor("self")?;
            one(x.index_axis(axis(a.int("dim")?, x.rank())?, &a.tensor("index")?))
        }
        "index.Tensor" => one(index(&a.tensor("self")?, &a.optional_tensors("indices")?)),
        "broadcast_tensors.default" => {
            let xs = a.tensors("tensors")?;
            let all: Vec<&[u64]> = xs.iter().map(Tensor::dims).collect();
            let dims = broadcast(&all)?;
            xs.iter().map(|x| x.expand(&dims)).collect()
        }
        "expand_as.default" => {
            let like = a.tensor("other")?;
            one(a.tensor("self")?.expand(like.dims()))
        }
        "expand.default" | "broadcast_to.default" => {
            let x = a.tensor("self")?;
            let size = a.ints("size")?;
            let offset = size
                .len()
                .checked_sub(x.rank())
                .ok_or("expand to fewer axes")?;
            let dims = size
                .iter()
                .enumerate()
                .map(|(i, &s)| match (s, i.checked_sub(offset)) {
                    (-1, Some(j)) => Ok(x.dims()[j]),
                    (s, _) => u64::try_from(s).map_err(|_| format!("expand size {s}")),
                })
                .collect::<Result<Vec<u64>, String>>()?;
            one(x.expand(&dims))
        }
        "repeat.default" | "tile.default" => {
            let x = a.tensor("self")?;
            let mut repeats = a.ints(if op == "tile.default" {
                "dims"
            } else {
                "repeats"
            })?;
            if op == "tile.default" && repeats.len() < x.rank() {
                // `tile` pads its list with leading ones; `repeat` refuses a short one.
                let mut padded = vec![1; x.rank() - repeats.len()];
                padded.extend(repeats);
                repeats = padded;
            }
            let offset = repeats
                .len()
                .checked_sub(x.rank())
                .ok_or("repeat with fewer repeats than axes")?;
            // Expand over a new axis before each one, then merge the pairs.
            let mut interleaved = Vec::new();
            let mut expanded = Vec::new();
            let mut merged = Vec::new();
            for (i, &r) in repeats.iter().enumerate() {
                let r = u64::try_from(r).map_err(|_| format!("repeat count {r}"))?;
                let size = i.checked_sub(offset).map_or(1, |j| x.dims()[j]);
                interleaved.extend([1, size as i64]);
                expanded.extend([r, size]);
                merged.push((r * size) as i64);
            }
            one(x.reshape(&interleaved)?.expand(&expanded)?.reshape(&merged))
        }
        "repeat_interleave.self_int" => {
            let x = a.tensor("self")?;
            let repeats =
                u64::try_from(a.int("repeats")?).map_err(|_| "a negative repeat count")?;
            let (x, at) = match a.optional_int("dim")? {
                Some(d) => (x.clone(), axis(d, x.rank())?),
                None => (x.reshape(&[-1])?, 0),
            };
            // Each entry along `at` repeated in place: a new axis after it, expanded, merged.
            let mut lifted: Vec<i64> = x.dims().iter().map(|&s| s as i64).collect();
            lifted.insert(at + 1, 1);
            let mut expanded: Vec<u64> = x.dims().to_vec();
            expanded.insert(at + 1, repeats);
            let mut merged: Vec<i64> = x.dims().iter().map(|&s| s as i64).collect();
            merged[at] *= repeats as i64;
            one(x.reshape(&lifted)?.expand(&expanded)?.reshape(&merged))
        }
        "split.Tensor"
        | "split_with_sizes.default"
        | "chunk.default"
        | "unbind.int"
        | "tensor_split.indices"
        | "tensor_split.sections"
        | "unsafe_split.Tensor"
        | "unsafe_split_with_sizes.default"
        | "unsafe_chunk.default"
        | "hsplit.int"
        | "hsplit.array"
        | "vsplit.int"
        | "vsplit.array"
        | "dsplit.int"
        | "dsplit.array" => {
            let how = crate::shape::split::pieces_of(node, op)
                .ok_or_else(|| format!("`{op}` is not a splitting op"))??;
            let x = a.tensor("self")?;
            let at = axis(
                crate::shape::split::split_dim(node, op, x.rank())?,
                x.rank(),
            )?;
            let sizes = crate::shape::split::piece_sizes(x.dims()[at], how)?;
            let mut start = 0;
            let mut pieces = Vec::with_capacity(sizes.len());
            for size in sizes {
                let piece = x.slice(at, start as i64, (start + size) as i64, 1)?;
                pieces.push(if op == "unbind.int" {
                    piece.select(at, 0)?
                } else {
                    piece
                });
                start += size;
            }
            Ok(pieces)
        }
        "_weight_norm.default" => {
            // `g · v / ‖v‖`, the norm over every dimension but `dim` (`nn.utils.weight_norm`).
            let v = a.tensor("v")?;
            let keep = Dim::wrap(a.int("dim")?, v.rank())?.view_axis();
            let axes: Vec<usize> = (0..v.rank()).filter(|&d| d != keep).collect();
            let norm = v.reduce(&axes, true, Reduction::Norm)?;
            let unit = Tensor::zip(&v, &norm, |p, q| p / q, None)?;
            one(Tensor::zip(&unit, &a.tensor("g")?, |p, q| p * q, None))
        }
        "type_as.default" => {
            let like = a.tensor("other")?;
            let dtype = match like.values() {
                Values::I64(_) => dtype::INT64,
                Values::F32(_) => FLOAT32,
            };
            one(dtype::convert(&a.tensor("self")?, dtype))
        }
        "one_hot.default" => {
            let x = a.tensor("self")?;
            let ids = x.to_i64()?;
            let classes = match a.int("num_classes")? {
                -1 => ids.iter().max().map_or(0, |m| m + 1),
                n => n,
            };
            let classes = u64::try_from(classes).map_err(|_| "one_hot of no classes")?;
            let mut dims = x.dims().to_vec();
            dims.push(classes);
            element_count(&dims)?;
            let mut values = vec![0i64; ids.len() * classes as usize];
            for (row, &id) in ids.iter().enumerate() {
                let id = u64::try_from(id)
                    .ok()
                    .filter(|&i| i < classes)
                    .ok_or_else(|| format!("one_hot class {id} of {classes}"))?;
                values[row * classes as usize + id as usize] = 1;
            }
            one(Tensor::i64(dims, values))
        }
        "flip.default" => {
            let x = a.tensor("self")?;
            // A 0-d tensor's dimension 0 (or −1) holds its one entry: nothing to reverse.
            let mut axes = Vec::new();
            for d in a.ints("dims")? {
                if let Dim::Axis(at) = Dim::wrap(d, x.rank())? {
                    axes.push(at);
                }
            }
            one(flipped(&x, &axes))
        }
        "gather.default" => one(gather(
            &a.tensor("self")?,
            a.int("dim")?,
            &a.tensor("index")?,
        )),
        "cat.default" | "stack.default" => {
            let parts = a.tensors("tensors")?;
            let rank = parts.first().map_or(0, Tensor::rank);
            if op == "cat.default" {
                return one(Tensor::cat(&parts, axis(a.int("dim")?, rank)?));
            }
            let at = axis(a.int("dim")?, rank + 1)?;
            let lifted = parts
                .iter()
                .map(|t| {
                    let mut size: Vec<i64> = t.dims().iter().map(|&s| s as i64).collect();
                    size.insert(at, 1);
                    t.reshape(&size)
                })
                .collect::<Result<Vec<_>, _>>()?;
            one(Tensor::cat(&lifted, at))
        }
        "contiguous.default"
        | "clone.default"
        | "alias.default"
        | "detach.default"
        | "detach_.default"
        | "lift_fresh_copy.default" => one(Ok(a.tensor("self")?)),
        "to.dtype" | "to.dtype_layout" | "to.device" | "_to_copy.default" => {
            let x = a.tensor("self")?;
            match a.dtype()? {
                None => one(Ok(x)),
                Some(dtype) => one(dtype::convert(&x, dtype)),
            }
        }
        "softmax.int" | "_softmax.default" | "_safe_softmax.default" => {
            if a.dtype()?.is_some_and(|d| d != FLOAT32) || a.bool_or("half_to_float", false)? {
                return Err("a softmax to a dtype other than float32".into());
            }
            let safe = op == "_safe_softmax.default";
            one(a
                .tensor("self")?
                .along_keeping_sizes(a.int("dim")?, |x, at| {
                    let high = x.reduce(&[at], true, Reduction::Max)?;
                    let e = Tensor::zip(x, &high, |p, q| (p - q).exp(), None)?;
                    let total = e.reduce(&[at], true, Reduction::Sum)?;
                    let y = Tensor::zip(&e, &total, |p, q| p / q, None)?;
                    if !safe {
                        return Ok(y);
                    }
                    // torch's `safe_softmax` decomposition: 0 along rows that are all −inf.
                    let masked = x
                        .map(|v| f32::from(u8::from(v != f32::NEG_INFINITY)))
                        .reduce(&[at], true, Reduction::Max)?;
                    Tensor::zip(&y, &masked, |p, m| if m == 0.0 { 0.0 } else { p }, None)
                }))
        }
        "sum_to_size.default" => {
            let x = a.tensor("self")?;
            let size = a.ints("size")?;
            let axes = sum_to_size_axes(x.dims(), &size)?;
            one(if axes.is_empty() {
                Ok(x)
            } else {
                x.reduce(&axes, true, Reduction::Sum)
                    .and_then(|y| y.reshape(&size))
            })
        }
        "var_mean.correction"
        | "var_mean.dim"
        | "var_mean.default"
        | "std_mean.correction"
        | "std_mean.dim"
        | "std_mean.default" => {
            let correction = match a.optional_number("correction")? {
                Some(c) => c,
                None => f64::from(u8::from(a.bool_or("unbiased", true)?)),
            };
            let mut out = reduction(&a, "dim", Reduction::Variance(correction))?;
            if op.starts_with("std") {
                out = out.iter().map(|v| v.map(f32::sqrt)).collect();
            }
            // torch's kernel (Welford's) gives a NaN mean wherever the variance is NaN.
            let mean = reduction(&a, "dim", Reduction::Mean)?;
            for (m, v) in mean.iter().zip(out.clone()) {
                out.push(Tensor::zip(
                    m,
                    &v,
                    |m, v| if v.is_nan() { v } else { m },
                    None,
                )?);
            }
            Ok(out)
        }
        "cumsum.default" => {
            let x = a.tensor("self")?;
            let x = match a.dtype()? {
                None => x,
                Some(dtype) => x.cast(is_integer(dtype)?)?,
            };
            one(x.along_keeping_sizes(a.int("dim")?, |x, at| x.cumsum(at)))
        }
        "cumprod.default" => {
            let x = a.tensor("self")?;
            let x = match a.dtype()? {
                None => x,
                Some(dtype) => x.cast(is_integer(dtype)?)?,
            };
            one(x.along_keeping_sizes(a.int("dim")?, |x, at| x.cumprod(at)))
        }
        "floor_divide.default" | "floor_divide.Scalar" => {
            let (x, y) = (a.tensor("self")?, a.operand("other")?);
            one(Tensor::zip(&x, &y, float_floor_div, Some(floor_div)))
        }
        "div.Tensor_mode" | "div.Scalar_mode" => {
            let (x, y) = (a.tensor("self")?, a.operand("other")?);
            one(match a.node_arg("rounding_mode") {
                None | Some(Argument::None) => Tensor::zip(&x, &y, |p, q| p / q, None),
                Some(Argument::String(mode)) if mode == "floor" => {
                    Tensor::zip(&x, &y, float_floor_div, Some(floor_div))
                }
                Some(Argument::String(mode)) if mode == "trunc" => {
                    Tensor::zip(&x, &y, |p, q| (p / q).trunc(), Some(i64::checked_div))
                }
                other => Err(Args::wrong_mode(other)),
            })
        }
        "pow.Scalar" => {
            let base = a.number("self")? as f32;
            one(Ok(a.tensor("exponent")?.map(|e| base.powf(e))))
        }
        "matmul.default" => one(Tensor::matmul(&a.tensor("self")?, &a.tensor("other")?)),
        "mm.default" => one(Tensor::matmul(&a.tensor("self")?, &a.tensor("mat2")?)),
        "mv.default" => one(Tensor::matmul(&a.tensor("self")?, &a.tensor("vec")?)),
        "outer.default" => one(a.tensor("self")?.outer(&a.tensor("vec2")?)),
        // beta·self + alpha·(mat1 @ mat2), and the same of `mat @ vec` (addmv) and of
        // `outer(vec1, vec2)` (addr).
        "addmm.default" => {
            let product = Tensor::matmul(&a.tensor("mat1")?, &a.tensor("mat2")?)?;
            one(plus_scaled_input(&a, product))
        }
        "addmv.default" => {
            let product = Tensor::matmul(&a.tensor("mat")?, &a.tensor("vec")?)?;
            one(plus_scaled_input(&a, product))
        }
        "addbmm.default" => {
            let product = Tensor::matmul(&a.tensor("batch1")?, &a.tensor("batch2")?)?;
            one(plus_scaled_input(
                &a,
                product.reduce(&[0], false, Reduction::Sum)?,
            ))
        }
        "dot.default" => one(Tensor::matmul(&a.tensor("self")?, &a.tensor("tensor")?)),
        // torch's `vdot` conjugates `self`: nothing for a real tensor.
        "vdot.default" => one(Tensor::matmul(&a.tensor("self")?, &a.tensor("other")?)),
        // torch's `inner`: a product by a 0-d tensor, else `tensordot` over the last
        // dimension of both.
        "inner.default" => {
            let (x, y) = (a.tensor("self")?, a.tensor("other")?);
            one(if x.rank() == 0 || y.rank() == 0 {
                Tensor::zip(&x, &y, |p, q| p * q, Some(i64::checked_mul))
            } else {
                x.tensordot(&y, &[-1], &[-1])
            })
        }
        "kron.default" => one(a.tensor("self")?.kron(&a.tensor("other")?)),
        "tensordot.default" => one(a.tensor("self")?.tensordot(
            &a.tensor("other")?,
            &a.ints("dims_self")?,
            &a.ints("dims_other")?,
        )),
        "addr.default" => {
            let product = a.tensor("vec1")?.outer(&a.tensor("vec2")?)?;
            one(plus_scaled_input(&a, product))
        }
        "prod.dim_int" => {
            if a.dtype()?.is_some_and(|d| d != FLOAT32) {
                return Err("a product to a dtype other than float32".into());
            }
            let x = a.tensor("self")?;
            let axes = Dim::wrap(a.int("dim")?, x.rank())?.reduced_axes();
            one(x.reduce(&axes, a.bool("keepdim")?, Reduction::Prod))
        }
        "prod.default" => {
            if a.dtype()?.is_some_and(|d| d != FLOAT32) {
                return Err("a product to a dtype other than float32".into());
            }
            let x = a.tensor("self")?;
            let every: Vec<usize> = (0..x.rank()).collect();
            one(x.reduce(&every, false, Reduction::Prod))
        }
        "linear.default" => {
            let y = a.tensor("input")?.linear(&a.tensor("weight")?)?;
            one(match a.node_arg("bias") {
                None | Some(Argument::None) => Ok(y),
                Some(_) => Tensor::zip(&y, &a.tensor("bias")?, |p, q| p + q, None),
            })
        }
        "logical_not.default" => {
            let x = a.tensor("self")?;
            one(Tensor::i64(
                x.dims().to_vec(),
                x.to_f32().iter().map(|&v| i64::from(v == 0.0)).collect(),
            ))
        }
        "bitwise_not.default" => {
            let x = a.tensor("self")?;
            let Values::I64(v) = x.values() else {
                return Err("bitwise not of a float tensor".into());
            };
            one(Tensor::i64(
                x.dims().to_vec(),
                v.iter().map(|&i| !i).collect(),
            ))
        }
        "eq.Tensor" | "eq.Scalar" | "ne.Tensor" | "ne.Scalar" | "lt.Tensor" | "lt.Scalar"
        | "le.Tensor" | "le.Scalar" | "gt.Tensor" | "gt.Scalar" | "ge.Tensor" | "ge.Scalar" => {
            let holds: fn(f32, f32) -> bool = match &op[..2] {
                "eq" => |p, q| p == q,
                "ne" => |p, q| p != q,
                "lt" => |p, q| p < q,
                "le" => |p, q| p <= q,
                "gt" => |p, q| p > q,
                _ => |p, q| p >= q,
            };
            // Exact for int64 below 2^24 and for every float32: comparisons of larger
            // integers are refused by `exact_comparison`.
            let (x, y) = (a.tensor("self")?, a.operand("other")?);
            exact_comparison(&x)?;
            exact_comparison(&y)?;
            let truth = Tensor::zip(&x, &y, |p, q| f32::from(u8::from(holds(p, q))), None)?;
            one(truth.cast(true))
        }
        "meshgrid.indexing" | "meshgrid.default" => {
            let parts = a.tensors("tensors")?;
            let xy = match a.node_arg("indexing") {
                None | Some(Argument::None) => false,
                Some(Argument::String(mode)) if mode == "ij" => false,
                Some(Argument::String(mode)) if mode == "xy" => true,
                other => return Err(Args::wrong_mode(other)),
            };
            meshgrid(&parts, xy)
        }
        "add.Tensor" | "add_.Tensor" | "sub.Tensor" | "sub_.Tensor" | "add.Scalar"
        | "sub.Scalar" => {
            let alpha = a.number("alpha")?;
            let other = a.operand("other")?;
            let other = if alpha == 1.0 {
                other
            } else {
                Tensor::zip(
                    &other,
                    &Tensor::f32(vec![], vec![alpha as f32])?,
                    |x, y| x * y,
                    None,
                )?
            };
            let x = a.tensor("self")?;
            one(if op.starts_with("add") {
                Tensor::zip(&x, &other, |p, q| p + q, Some(i64::checked_add))
            } else {
                Tensor::zip(&x, &other, |p, q| p - q, Some(i64::checked_sub))
            })
        }
        "rsub.Tensor" | "rsub.Scalar" => {
            if a.number("alpha")? != 1.0 {
                return Err("rsub with alpha other than 1".into());
            }
            one(Tensor::zip(
                &a.operand("other")?,
                &a.tensor("self")?,
                |p, q| p - q,
                Some(i64::checked_sub),
            ))
        }
        "mul.Tensor" | "mul_.Tensor" | "mul.Scalar" => one(Tensor::zip(
            &a.tensor("self")?,
            &a.operand("other")?,
            |p, q| p * q,
            Some(i64::checked_mul),
        )),
        "div.Tensor" | "div_.Tensor" | "div.Scalar" => one(Tensor::zip(
            &a.tensor("self")?,
            &a.operand("other")?,
            |p, q| p / q,
            None,
        )),
        // `max.other`/`min.other` (`torch.max(a, b)`) are `maximum`/`minimum`.
        "maximum.default" | "minimum.default" | "max.other" | "min.other" => {
            let (x, y) = (a.tensor("self")?, a.tensor("other")?);
            one(if matches!(op, "maximum.default" | "max.other") {
                Tensor::zip(&x, &y, pointwise::nan_max, Some(|p, q| Some(p.max(q))))
            } else {
                Tensor::zip(&x, &y, pointwise::nan_min, Some(|p, q| Some(p.min(q))))
            })
        }
        "pow.Tensor_Scalar" => {
            let e = a.number("exponent")? as f32;
            let x = a.tensor("self")?;
            // float32 takes a square root where float16 calls `pow`: they differ there.
            let root = e == 0.5 || e == -0.5;
            if root
                && x.to_f32()
                    .iter()
                    .any(|&v| v == f32::NEG_INFINITY || (v == 0.0 && v.is_sign_negative()))
            {
                return Err(
                    "a square root of -inf or -0 is evaluated by torch differently per dtype"
                        .into(),
                );
            }
            one(Ok(x.map(|x| power(x, e))))
        }
        "clamp.default" | "clamp_.default" | "clamp_min.default" | "clamp_max.default" => {
            let x = a.tensor("self")?;
            // An integer tensor clamped by integers stays integers (torch's type
            // promotion), exact beyond float32's 2^24.
            let integral = |n: &str| {
                matches!(
                    a.node_arg(n),
                    None | Some(Argument::None) | Some(Argument::Int(_))
                )
            };
            if let (Values::I64(v), true, true) = (x.values(), integral("min"), integral("max")) {
                let low = a.optional_int("min")?.unwrap_or(i64::MIN);
                let high = a.optional_int("max")?.unwrap_or(i64::MAX);
                let clamped = v.iter().map(|&v| v.max(low).min(high)).collect();
                return one(Tensor::i64(x.dims().to_vec(), clamped));
            }
            let low = a
                .optional_number("min")?
                .map_or(f32::NEG_INFINITY, |v| v as f32);
            let high = a
                .optional_number("max")?
                .map_or(f32::INFINITY, |v| v as f32);
            one(Ok(x.map(|x| {
                pointwise::nan_min(pointwise::nan_max(x, low), high)
            })))
        }
        "softplus.default" => {
            let beta = a.number("beta")? as f32;
            let threshold = a.number("threshold")? as f32;
            one(Ok(a.tensor("self")?.map(|x| {
                if x * beta > threshold {
                    x
                } else {
                    (x * beta).exp().ln_1p() / beta
                }
            })))
        }
        "neg.default" | "sqrt.default" | "rsqrt.default" | "exp.default" | "log.default"
        | "sigmoid.default" | "tanh.default" | "abs.default" | "reciprocal.default"
        | "sin.default" | "cos.default" | "floor.default" | "ceil.default" | "round.default"
        | "relu.default" | "relu_.default" => {
            let x = a.tensor("self")?;
            // On integers torch keeps the dtype for these (and floor, ceil and round change
            // nothing); computed exactly, wrapping as torch's kernels do.
            let exact: Option<fn(i64) -> i64> = match op {
                "neg.default" => Some(i64::wrapping_neg),
                "abs.default" => Some(i64::wrapping_abs),
                "relu.default" | "relu_.default" => Some(|v| v.max(0)),
                "floor.default" | "ceil.default" | "round.default" => Some(|v| v),
                _ => None,
            };
            if let (Values::I64(v), Some(f)) = (x.values(), exact) {
                return one(Tensor::i64(
                    x.dims().to_vec(),
                    v.iter().map(|&v| f(v)).collect(),
                ));
            }
            let f: fn(f32) -> f32 = match op {
                "sin.default" => f32::sin,
                "cos.default" => f32::cos,
                "floor.default" => f32::floor,
                "ceil.default" => f32::ceil,
                // torch rounds half to even.
                "round.default" => f32::round_ties_even,
                "relu.default" | "relu_.default" => |x| pointwise::nan_max(x, 0.0),
                "neg.default" => |x| -x,
                "sqrt.default" => f32::sqrt,
                "rsqrt.default" => |x| 1.0 / x.sqrt(),
                "exp.default" => f32::exp,
                "log.default" => f32::ln,
                "sigmoid.default" => |x| 1.0 / (1.0 + (-x).exp()),
                "tanh.default" => f32::tanh,
                "abs.default" => f32::abs,
                _ => f32::recip,
            };
            one(Ok(x.map(f)))
        }
        "all.default"
        | "all.dim"
        | "all.dims"
        | "any.default"
        | "any.dim"
        | "any.dims"
        | "count_nonzero.default"
        | "count_nonzero.dim_IntList"
        | "logsumexp.default"
        | "nansum.default"
        | "nanmean.default" => one(nonzero_reduction(&a, op)),
        "mean.dim" | "mean.default" | "sum.dim_IntList" | "sum.default" | "amax.default"
        | "amin.default" | "max.default" | "min.default" => {
            let dtype = a.dtype()?;
            let sum = matches!(op, "sum.dim_IntList" | "sum.default");
            if sum && dtype == Some(dtype::INT64) {
                // torch sums an integer (or bool) tensor exactly, in int64.
                let x = a.tensor("self")?;
                if !matches!(x.values(), Values::I64(_)) {
                    return Err("an int64 sum of a float tensor".into());
                }
                let axes = reduced_axes(&a, "dim", &x)?;
                return one(x.sum_i64(&axes, a.bool_or("keepdim", false)?));
            }
            if dtype.is_some_and(|d| d != FLOAT32) {
                return Err("a reduction to a dtype other than float32 or an int64 sum".into());
            }
            let how = match op {
                "mean.dim" | "mean.default" => Reduction::Mean,
                "sum.dim_IntList" | "sum.default" => Reduction::Sum,
                "amax.default" | "max.default" => Reduction::Max,
                _ => Reduction::Min,
            };
            reduction(&a, "dim", how)
        }
        "aminmax.default" => {
            let mut both = reduction(&a, "dim", Reduction::Min)?;
            both.extend(reduction(&a, "dim", Reduction::Max)?);
            Ok(both)
        }
        "var.correction" | "var.dim" | "var.default" | "std.correction" | "std.dim"
        | "std.default" => {
            let correction = match a.optional_number("correction")? {
                Some(c) => c,
                None => f64::from(u8::from(a.bool_or("unbiased", true)?)),
            };
            let variance = reduction(&a, "dim", Reduction::Variance(correction))?;
            Ok(if op.starts_with("std") {
                variance.iter().map(|v| v.map(f32::sqrt)).collect()
            } else {
                variance
            })
        }
        "linalg_vector_norm.default" => {
            if a.number("ord")? != 2.0 || a.dtype()?.is_some() {
                return Err("a vector norm other than the float32 L2 norm".into());
            }
            reduction(&a, "dim", Reduction::Norm)
        }
        "pairwise_distance.default" => one(pairwise_distance(&a)),
        "batch_norm.default" if !a.bool("training")? => {
            along::evaluate(op, &a).unwrap_or_else(|| Err("BatchNorm in eval mode".into()))
        }
        "batch_norm.default"
        | "_native_batch_norm_legit.no_stats"
        | "_native_batch_norm_legit_functional.default" => standardise(&a, op),
        _ => pointwise::evaluate(op, &a)
            .or_else(|| window::evaluate(op, &a))
            .or_else(|| along::evaluate(op, &a))
            .or_else(|| linalg::evaluate(op, &a))
            .or_else(|| factory::evaluate(op, &a))
            .or_else(|| resample::evaluate(op, &a))
            .or_else(|| scatter::evaluate(op, &a))
            .or_else(|| distance::evaluate(op, &a))
            .or_else(|| histogram::evaluate(op, &a))
            .or_else(|| segment::evaluate(op, &a))
            .or_else(|| nonzero::evaluate(op, &a))
            .unwrap_or_else(|| Err(format!("`{op}` is not evaluated on constants"))),
    }
}

/// Python's `//` on floats as torch computes it (`div_floor_floating`): through `fmod`,
/// so an infinite dividend gives NaN, and a zero quotient keeps the sign of `p / q`.
fn float_floor_div(p: f32, q: f32) -> f32 {
    if q == 0.0 {
        return p / q;
    }
    let m = p % q;
    let mut d = (p - m) / q;
    if m != 0.0 && ((q < 0.0) != (m < 0.0)) {
        d -= 1.0;
    }
    if d == 0.0 {
        return 0f32.copysign(p / q);
    }
    let f = d.floor();
    if d - f > 0.5 {
        f + 1.0
    } else {
        f
    }
}

/// `x ** e` as torch computes it: the exponents 2, 3, ½, −½, −1 and −2 by products, roots
/// and reciprocals (so `(-inf) ** 0.5` is NaN, as `sqrt`), others by `powf`.
fn power(x: f32, e: f32) -> f32 {
    match e {
        2.0 => x * x,
        3.0 => x * x * x,
        0.5 => x.sqrt(),
        -0.5 => 1.0 / x.sqrt(),
        -1.0 => 1.0 / x,
        -2.0 => 1.0 / (x * x),
        _ => x.powf(e),
    }
}

/// Python's `//` on int64: the quotient rounded toward negative infinity.
fn floor_div(p: i64, q: i64) -> Option<i64> {
    let d = p.checked_div(q)?;
    Some(if p % q != 0 && ((p < 0) != (q < 0)) {
        d - 1
    } else {
        d
    })
}

/// Comparisons are computed in float32: an int64 operand must be exact there.
fn exact_comparison(t: &Tensor) -> Result<(), String> {
    match t.values() {
        Values::I64(v) if v.iter().any(|i| i.unsigned_abs() > 1 << 24) => {
            Err("a comparison of integers beyond 2^24".into())
        }
        _ => Ok(()),
    }
}

/// `torch.meshgrid` of 1-D tensors: one tensor per input, each of the sizes of all inputs
/// in order (`xy`: the first two swapped), varying along its own axis.
fn meshgrid(parts: &[Tensor], xy: bool) -> Result<Vec<Tensor>, String> {
    if parts.iter().any(|t| t.rank() > 1) {
        return Err("meshgrid of tensors that are not 1-D".into());
    }
    let mut dims: Vec<u64> = parts.iter().map(|t| t.dims().iter().product()).collect();
    let mut axes: Vec<usize> = (0..parts.len()).collect();
    if xy && parts.len() >= 2 {
        dims.swap(0, 1);
        axes.swap(0, 1);
    }
    parts
        .iter()
        .zip(axes)
        .map(|(t, at)| {
            let mut shape = vec![1i64; dims.len()];
            shape[at] = dims[at] as i64;
            t.reshape(&shape)?.expand(&dims)
        })
        .collect()
}

/// `torch.gather(x, dim, index)`: `y[i][j][k] = x[index[i][j][k]][j][k]` for `dim` 0, and
/// so on; `index` has `x`'s rank and sizes no larger than `x`'s off `dim`.
pub fn gather(x: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor, String> {
    if x.rank() == 0 {
        // Along a 0-d tensor's dimension 0 (or −1) the only index is 0: its value, in the
        // index's sizes.
        Dim::wrap(dim, 0)?;
        if index.to_i64()? != [0] {
            return Err(format!("gather of a 0-d tensor by {:?}", index.to_i64()?));
        }
        let dims: Vec<i64> = index.dims().iter().map(|&d| d as i64).collect();
        return x.reshape(&dims);
    }
    let at = axis(dim, x.rank())?;
    let fits = index.rank() == x.rank()
        && (0..x.rank()).all(|d| d == at || index.dims()[d] <= x.dims()[d]);
    if !fits {
        return Err(format!(
            "gather of {:?} along {at} by an index of {:?}",
            x.dims(),
            index.dims()
        ));
    }
    let picks = index.to_i64()?;
    let (x_strides, i_strides) = (tensor::strides(x.dims()), tensor::strides(index.dims()));
    let size = x.dims()[at] as i64;
    let mut from = Vec::with_capacity(picks.len());
    for (flat, &pick) in picks.iter().enumerate() {
        let pick = if pick < 0 { pick + size } else { pick };
        if !(0..size).contains(&pick) {
            return Err(format!(
                "gather index {pick} is out of range for size {size}"
            ));
        }
        let mut source = 0u64;
        let mut rest = flat as u64;
        for d in 0..x.rank() {
            let coordinate = rest / i_strides[d];
            rest %= i_strides[d];
            source += x_strides[d] * if d == at { pick as u64 } else { coordinate };
        }
        from.push(source as usize);
    }
    Tensor::new(index.dims().to_vec(), x.values().take(&from))
}

/// `beta · self + alpha · product` (the `addmm` family); with `beta` 0, `self` is not
/// read (torch ignores its NaNs then).
fn plus_scaled_input(a: &Args<'_>, product: Tensor) -> Result<Tensor, String> {
    let alpha = a.number("alpha")? as f32;
    let beta = a.number("beta")? as f32;
    let product = product.map(|v| alpha * v);
    if beta == 0.0 {
        return Ok(product);
    }
    Tensor::zip(&a.tensor("self")?, &product, |c, p| beta * c + p, None)
}

/// `how` over argument `dims` (none or empty: every axis).
fn reduction(a: &Args<'_>, dims: &str, how: Reduction) -> Result<Vec<Tensor>, String> {
    let x = a.tensor("self")?;
    let axes = reduced_axes(a, dims, &x)?;
    Ok(vec![x.reduce(&axes, a.bool_or("keepdim", false)?, how)?])
}

/// The axes of `x` argument `dims` names, sorted (none named: every axis). A 0-d
/// tensor's dimension 0 ([`Dim::OfScalar`]) is its one entry: a reduction over it is over
/// every axis of the tensor, none.
fn reduced_axes(a: &Args<'_>, dims: &str, x: &Tensor) -> Result<Vec<usize>, String> {
    let listed = match a.node_arg(dims) {
        None | Some(Argument::None) => Vec::new(),
        Some(_) => a.ints(dims)?,
    };
    let mut named = listed
        .iter()
        .map(|&d| Dim::wrap(d, x.rank()).map(Dim::view_axis))
        .collect::<Result<Vec<_>, _>>()?;
    named.sort_unstable();
    named.dedup();
    if named.len() != listed.len() {
        return Err(format!("dimensions {listed:?} repeat"));
    }
    if named.is_empty() || x.rank() == 0 {
        return Ok((0..x.rank()).collect());
    }
    Ok(named)
}

/// `all`/`any`/`count_nonzero` (the sum of `x != 0`, NaN counting), `logsumexp`
/// (`log Σ exp(x − m) + m`, `m` the maximum with ±inf as 0) and `nansum`/`nanmean` (NaN as
/// 0, the mean over the non-NaN count), as `torch._refs` computes them.
fn nonzero_reduction(a: &Args<'_>, op: &str) -> Result<Tensor, String> {
    let x = a.tensor("self")?;
    let axes = match a.node_arg("dim") {
        Some(Argument::Int(d)) => Dim::wrap(*d, x.rank())?.reduced_axes(),
        _ => reduced_axes(a, "dim", &x)?,
    };
    let keep = a.bool_or("keepdim", false)?;
    if op == "nansum.default" || op == "nanmean.default" {
        if !matches!(a.node_arg("dtype"), None | Some(Argument::None)) {
            return Err(format!("{op} with a dtype"));
        }
        let kept = x.map(|v| if v.is_nan() { 0.0 } else { v });
        let sum = kept.reduce(&axes, keep, Reduction::Sum)?;
        if op == "nansum.default" {
            return Ok(sum);
        }
        let count =
            x.map(|v| f32::from(u8::from(!v.is_nan())))
                .reduce(&axes, keep, Reduction::Sum)?;
        return Tensor::zip(&sum, &count, |s, c| s / c, None);
    }
    if op == "logsumexp.default" {
        let most = x.reduce(&axes, true, Reduction::Max)?;
        let shift = most.map(|m| if m.is_infinite() { 0.0 } else { m });
        let exp = Tensor::zip(&x, &shift, |p, q| (p - q).exp(), None)?;
        let sum = exp.reduce(&axes, keep, Reduction::Sum)?;
        let dims: Vec<i64> = sum.dims().iter().map(|&d| d as i64).collect();
        return Tensor::zip(&sum, &shift.reshape(&dims)?, |s, m| s.ln() + m, None);
    }
    let n: u64 = axes.iter().map(|&k| x.dims()[k]).product();
    let count = x
        .map(|v| f32::from(u8::from(v != 0.0)))
        .reduce(&axes, keep, Reduction::Sum)?;
    let dims = count.dims().to_vec();
    let values = count.to_f32().into_iter().map(|c| match op {
        "all.default" | "all.dim" | "all.dims" => i64::from(c == n as f32),
        "any.default" | "any.dim" | "any.dims" => i64::from(c > 0.0),
        _ => c as i64,
    });
    Tensor::i64(dims, values.collect())
}

/// `batch_norm(w, None, None, None, None, training=True, …)` of a constant: each channel
/// (axis 1) standardised with its own biased statistics, the weight standardisation of
/// timm's StdConv. The native forms also return the mean and the reciprocal std.
fn standardise(a: &Args<'_>, op: &str) -> Result<Vec<Tensor>, String> {
    let functional = op == "_native_batch_norm_legit_functional.default";
    if functional && !a.bool("training")? {
        return Err("the functional BatchNorm of a constant in eval mode".into());
    }
    for unused in ["running_mean", "running_var"] {
        if !functional && !matches!(a.node_arg(unused), None | Some(Argument::None)) {
            return Err(format!(
                "BatchNorm of a constant with `{unused}`; only the weight standardisation (batch statistics, no running ones) is evaluated"
            ));
        }
    }
    if op == "batch_norm.default" && !a.bool("training")? {
        return Err("BatchNorm of a constant in eval mode without running statistics".into());
    }
    let x = a.tensor("input")?;
    if x.rank() < 2 {
        return Err("BatchNorm of a constant with fewer than two axes".into());
    }
    let eps = a.number("eps")? as f32;
    let axes: Vec<usize> = (0..x.rank()).filter(|&d| d != 1).collect();
    let mean = x.reduce(&axes, true, Reduction::Mean)?;
    let variance = x.reduce(&axes, true, Reduction::Variance(0.0))?;
    let inverse = variance.map(|v| 1.0 / (v + eps).sqrt());
    let centred = Tensor::zip(&x, &mean, |p, q| p - q, None)?;
    let mut y = Tensor::zip(&centred, &inverse, |p, q| p * q, None)?;
    // The affine part (timm's ScaledStdConv passes its gain as `weight`), per channel.
    let mut per_channel: Vec<i64> = vec![1; x.rank()];
    per_channel[1] = x.dims()[1] as i64;
    if !matches!(a.node_arg("weight"), None | Some(Argument::None)) {
        let gain = a.tensor("weight")?.reshape(&per_channel)?;
        y = Tensor::zip(&y, &gain, |p, q| p * q, None)?;
    }
    if !matches!(a.node_arg("bias"), None | Some(Argument::None)) {
        let shift = a.tensor("bias")?.reshape(&per_channel)?;
        y = Tensor::zip(&y, &shift, |p, q| p + q, None)?;
    }
    if op == "batch_norm.default" {
        return Ok(vec![y]);
    }
    let channels = vec![x.dims()[1]];
    let mut outputs = vec![
        y,
        Tensor::f32(channels.clone(), mean.to_f32())?,
        Tensor::f32(channels.clone(), inverse.to_f32())?,
    ];
    if functional {
        // The running statistics updated: `(1 − m)·old + m·batch`, the variance unbiased.
        let m = a.number("momentum")? as f32;
        let count = x.dims().iter().product::<u64>() / x.dims()[1].max(1);
        let unbiased = count as f32 / (count.max(2) - 1) as f32;
        let batch_var = variance.map(|v| v * unbiased).to_f32();
        for (name, batch) in [("running_mean", mean.to_f32()), ("running_var", batch_var)] {
            let old = a.tensor(name)?;
            let new = Tensor::f32(channels.clone(), batch)?;
            let blend = Tensor::zip(&old, &new, move |p, q| (1.0 - m) * p + m * q, None)?;
            outputs.push(blend);
        }
    }
    Ok(outputs)
}

/// `x[indices]` (advanced indexing): the indexed axes must be leading and adjacent
/// (`table[index]`, `t[:, index]` after `None`s), their index tensors broadcast together.
pub fn index(x: &Tensor, indices: &[Option<Tensor>]) -> Result<Tensor, String> {
    let leading = indices.iter().take_while(|i| i.is_none()).count();
    let picked: Vec<&Tensor> = indices[leading..]
        .iter()
        .map_while(Option::as_ref)
        .collect();
    let trailing = &indices[leading + picked.len()..];
    if picked.is_empty() || !trailing.iter().all(Option::is_none) || indices.len() > x.rank() {
        return Err("indexing other than by adjacent index tensors".into());
    }
    let indexed = &x.dims()[leading..leading + picked.len()];
    let combined = combined_index(indexed, &picked)?;
    let mut flat: Vec<i64> = x.dims()[..leading].iter().map(|&s| s as i64).collect();
    flat.push(indexed.iter().product::<u64>() as i64);
    flat.extend(x.dims()[leading + picked.len()..].iter().map(|&s| s as i64));
    x.reshape(&flat)?.index_axis(leading, &combined)
}

/// The row-major position, in the indexed axes of sizes `indexed` flattened into one, of
/// each entry of `picked` (one index tensor per axis, broadcast together; negative indices
/// count from the end): the one index `x[i, j, k]` is after those axes are merged.
pub fn combined_index(indexed: &[u64], picked: &[&Tensor]) -> Result<Tensor, String> {
    let dims: Vec<&[u64]> = picked.iter().map(|t| t.dims()).collect();
    let shape = tensor::broadcast(&dims)?;
    let mut combined = Tensor::i64(shape.clone(), vec![0; element_count(&shape)? as usize])?;
    for (t, &size) in picked.iter().zip(indexed) {
        let size_t = Tensor::i64(vec![], vec![size as i64])?;
        let wrapped = t.to_i64()?;
        let bad = wrapped
            .iter()
            .find(|&&i| i < -(size as i64) || i >= size as i64);
        if let Some(i) = bad {
            return Err(format!("index {i} is out of range for size {size}"));
        }
        let positive = Tensor::i64(
            t.dims().to_vec(),
            wrapped
                .iter()
                .map(|&i| if i < 0 { i + size as i64 } else { i })
                .collect(),
        )?;
        combined = Tensor::zip(&combined, &size_t, |p, q| p * q, Some(i64::checked_mul))?;
        combined = Tensor::zip(&combined, &positive, |p, q| p + q, Some(i64::checked_add))?;
    }
    Ok(combined)
}

/// The axes `sum_to_size` of a tensor of sizes `dims` to `size` sums, keeping them (ATen's
/// `sum_to`, as `torch._refs.sum_to_size`): the leading axes `size` does not have, and
/// those where `size` has 1 and the tensor does not. The sum's result is then viewed as
/// `size` (the summed leading axes gone). `size` must be expandable to `dims`.
pub fn sum_to_size_axes(dims: &[u64], size: &[i64]) -> Result<Vec<usize>, String> {
    let not_expandable =
        || format!("sum_to_size of {dims:?} to {size:?}: the size does not expand to the tensor's");
    let leading = dims
        .len()
        .checked_sub(size.len())
        .ok_or_else(not_expandable)?;
    let mut axes: Vec<usize> = (0..leading).collect();
    for (k, (&d, &s)) in dims[leading..].iter().zip(size).enumerate() {
        match (d, s) {
            (d, s) if d as i64 == s => {}
            (_, 1) => axes.push(leading + k),
            _ => return Err(not_expandable()),
        }
    }
    Ok(axes)
}

/// `x` read backwards along each of `axes`.
/// `diag_embed(x, offset, dim1, dim2)` by torch's reference ([`super::diag::DiagEmbed`]).
fn diag_embedded(x: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor, String> {
    let rank = x.rank();
    let last = x.dims().last().copied().unwrap_or(1);
    let plan = super::diag::DiagEmbed::plan(rank, last, offset, dim1, dim2)?;
    // Zeros before and after the last dimension's entries.
    let zeros = |pad: u64| -> Result<Tensor, String> {
        let mut dims = x.dims().to_vec();
        if let Some(end) = dims.last_mut() {
            *end = pad;
        }
        let count = element_count(&dims)? as usize;
        match x.values() {
            Values::I64(_) => Tensor::i64(dims, vec![0; count]),
            Values::F32(_) => Tensor::f32(dims, vec![0.0; count]),
        }
    };
    let mut parts = Vec::with_capacity(3);
    if plan.pad_before > 0 {
        parts.push(zeros(plan.pad_before)?);
    }
    parts.push(x.clone());
    if plan.pad_after > 0 {
        parts.push(zeros(plan.pad_after)?);
    }
    let padded = Tensor::cat(&parts, rank - 1)?;
    let mut grown: Vec<i64> = padded.dims().iter().map(|&s| s as i64).collect();
    grown.push(1);
    let moved = padded.reshape(&grown)?.permute(&plan.order(rank))?;
    let mut mask_dims = vec![1u64; rank + 1];
    mask_dims[plan.dim1] = plan.size;
    mask_dims[plan.dim2] = plan.size;
    let mask = Tensor::i64(mask_dims, plan.mask().into_iter().map(i64::from).collect())?;
    Tensor::zip(
        &moved,
        &mask,
        |v, m| if m != 0.0 { v } else { 0.0 },
        Some(|v, m| Some(if m != 0 { v } else { 0 })),
    )
}

/// `diagonal(x, offset, dim1, dim2)` read as torch's view reads it
/// ([`super::diag::Diagonal`]).
pub fn diagonal(x: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor, String> {
    let plan = super::diag::Diagonal::plan(x.dims(), offset, dim1, dim2)?;
    let mut merged: Vec<i64> = plan.order[..plan.order.len() - 2]
        .iter()
        .map(|&d| x.dims()[d] as i64)
        .collect();
    merged.push((plan.rows * plan.cols) as i64);
    let last = merged.len() - 1;
    x.permute(&plan.order)?.reshape(&merged)?.slice(
        last,
        plan.start as i64,
        plan.end() as i64,
        plan.step,
    )
}

fn flipped(x: &Tensor, axes: &[usize]) -> Result<Tensor, String> {
    let mut y = x.clone();
    for &at in axes {
        let n = x.dims()[at] as i64;
        let reversed = Tensor::i64(vec![n as u64], (0..n).rev().collect())?;
        y = y.index_axis(at, &reversed)?;
    }
    Ok(y)
}

/// A ported decomposition's expression of its tensor arguments, broadcast together, and a
/// loss's reduction (a bool result as 0/1 int64, put into torch's recorded dtype by the
/// caller).
fn decomposed(a: &Args<'_>, rule: &super::decompose::Pointwise) -> Result<Tensor, String> {
    use super::decompose::LossReduction;
    let y = rule.expr.evaluate(a.node, &|name| a.tensor(name))?;
    let all: Vec<usize> = (0..y.rank()).collect();
    let how = match rule.reduces {
        true => LossReduction::of(a.node)?,
        false => LossReduction::None,
    };
    let y = match how {
        LossReduction::None => y,
        LossReduction::Mean => y.reduce(&all, false, Reduction::Mean)?,
        LossReduction::Sum => y.reduce(&all, false, Reduction::Sum)?,
    };
    if rule.expr.is_bool() {
        let flags = y.to_f32().iter().map(|&v| i64::from(v != 0.0)).collect();
        Tensor::i64(y.dims().to_vec(), flags)
    } else {
        Ok(y)
    }
}

/// A special function's program of its tensor argument, element by element, in double
/// precision.
fn special(a: &Args<'_>, row: &super::special::Special) -> Result<Tensor, String> {
    let x = a.tensor(row.input)?;
    let values = x
        .to_f32()
        .iter()
        .map(|&v| Ok(row.build(&mut super::series::Scalar, a.node, &f64::from(v))? as f32))
        .collect::<Result<Vec<f32>, String>>()?;
    Tensor::f32(x.dims().to_vec(), values)
}

/// A node's arguments by schema name, tensors resolved to their constant values.
pub(super) struct Args<'a> {
    node: &'a Node,
    input: &'a dyn Fn(&str) -> Option<Tensor>,
}

impl Args<'_> {
    pub(super) fn node_arg(&self, name: &str) -> Option<&Argument> {
        self.node
            .inputs
            .iter()
            .find(|a| a.name == name)
            .map(|a| &a.arg)
    }

    pub(super) fn has(&self, name: &str) -> bool {
        self.node_arg(name).is_some()
    }

    pub(super) fn wrong(name: &str, want: &str, got: Option<&Argument>) -> String {
        match got {
            Some(got) => format!("argument `{name}` is {}, expected {want}", got.kind()),
            None => format!("argument `{name}` is missing"),
        }
    }

    pub(super) fn wrong_mode(got: Option<&Argument>) -> String {
        Self::wrong("rounding_mode/indexing", "a mode torch documents", got)
    }

    pub(super) fn constant(&self, name: &str) -> Result<Tensor, String> {
        (self.input)(name).ok_or_else(|| format!("`{name}` is not a constant"))
    }

    pub(super) fn tensor(&self, name: &str) -> Result<Tensor, String> {
        match self.node_arg(name) {
            Some(Argument::Tensor(t)) => self.constant(t),
            other => Err(Self::wrong(name, "a tensor", other)),
        }
    }

    /// A tensor or a number (a 0-d float32 or int64 constant).
    pub(super) fn operand(&self, name: &str) -> Result<Tensor, String> {
        match self.node_arg(name) {
            Some(Argument::Int(i)) => Tensor::i64(vec![], vec![*i]),
            Some(Argument::Float(f)) => Tensor::f32(vec![], vec![*f as f32]),
            Some(Argument::Bool(b)) => Tensor::i64(vec![], vec![i64::from(*b)]),
            _ => self.tensor(name),
        }
    }

    pub(super) fn tensors(&self, name: &str) -> Result<Vec<Tensor>, String> {
        match self.node_arg(name) {
            Some(Argument::Tensors(ts)) => ts.iter().map(|t| self.constant(t)).collect(),
            other => Err(Self::wrong(name, "a list of tensors", other)),
        }
    }

    pub(super) fn optional_tensors(&self, name: &str) -> Result<Vec<Option<Tensor>>, String> {
        match self.node_arg(name) {
            Some(Argument::OptionalTensors(ts)) => ts
                .iter()
                .map(|t| t.as_deref().map(|t| self.constant(t)).transpose())
                .collect(),
            Some(Argument::Tensors(ts)) => ts.iter().map(|t| self.constant(t).map(Some)).collect(),
            other => Err(Self::wrong(name, "a list of tensors and Nones", other)),
        }
    }

    /// Argument `name`'s default in the node's schema row (`None`: a required argument).
    fn default(&self, name: &str) -> Option<DefaultValue> {
        super::schema::lookup(&self.node.target).and_then(|s| s.default(name))
    }

    /// An int argument, or its schema default.
    pub(super) fn int(&self, name: &str) -> Result<i64, String> {
        match (self.node_arg(name), self.default(name)) {
            (Some(Argument::Int(i)), _) => Ok(*i),
            (None | Some(Argument::None), Some(DefaultValue::Int(i))) => Ok(i),
            (other, _) => Err(Self::wrong(name, "an int", other)),
        }
    }

    pub(super) fn optional_int(&self, name: &str) -> Result<Option<i64>, String> {
        match self.node_arg(name) {
            None | Some(Argument::None) => Ok(None),
            Some(Argument::Int(i)) => Ok(Some(*i)),
            other => Err(Self::wrong(name, "an int", other)),
        }
    }

    /// A list of ints (a single int is a list of one; absent: its schema default).
    pub(super) fn ints(&self, name: &str) -> Result<Vec<i64>, String> {
        match self.node_arg(name) {
            Some(Argument::Ints(v)) => Ok(v.clone()),
            Some(Argument::Int(i)) => Ok(vec![*i]),
            None => match self.default(name) {
                Some(DefaultValue::Ints(v)) => Ok(v.to_vec()),
                _ => Err(Self::wrong(name, "a list of ints", None)),
            },
            Some(Argument::SymInts(_)) => Err(format!(
                "argument `{name}` involves the batch; a constant cannot follow the batch"
            )),
            other => Err(Self::wrong(name, "a list of ints", other)),
        }
    }

    pub(super) fn optional_number(&self, name: &str) -> Result<Option<f64>, String> {
        match self.node_arg(name) {
            None | Some(Argument::None) => Ok(None),
            Some(Argument::Int(i)) => Ok(Some(*i as f64)),
            Some(Argument::Float(f)) => Ok(Some(*f)),
            other => Err(Self::wrong(name, "a number", other)),
        }
    }

    /// A number argument (absent or `None`: its schema default).
    pub(super) fn number(&self, name: &str) -> Result<f64, String> {
        match (self.optional_number(name)?, self.default(name)) {
            (Some(x), _) => Ok(x),
            (None, Some(DefaultValue::Float(f))) => Ok(f),
            (None, Some(DefaultValue::Int(i))) => Ok(i as f64),
            (None, _) => Err(format!("argument `{name}` is missing")),
        }
    }

    pub(super) fn number_or(&self, name: &str, default: f64) -> Result<f64, String> {
        Ok(self.optional_number(name)?.unwrap_or(default))
    }

    /// A bool, `default` when absent: for a reading shared by ops of which some lack the
    /// argument (`sum.default` has no `keepdim`).
    pub(super) fn bool_or(&self, name: &str, default: bool) -> Result<bool, String> {
        match self.node_arg(name) {
            None => Ok(default),
            Some(Argument::Bool(b)) => Ok(*b),
            other => Err(Self::wrong(name, "a bool", other)),
        }
    }

    /// An int, `default` when absent or `None`: for a reading shared by ops of which some
    /// lack the argument (`t` read as `transpose`).
    pub(super) fn int_or(&self, name: &str, default: i64) -> Result<i64, String> {
        Ok(self.optional_int(name)?.unwrap_or(default))
    }

    /// A bool argument, or its schema default.
    pub(super) fn bool(&self, name: &str) -> Result<bool, String> {
        match (self.node_arg(name), self.default(name)) {
            (Some(Argument::Bool(b)), _) => Ok(*b),
            (None, Some(DefaultValue::Bool(b))) => Ok(b),
            (other, _) => Err(Self::wrong(name, "a bool", other)),
        }
    }

    /// Whether argument `name` is given and not `None`.
    pub(super) fn is_given(&self, name: &str) -> bool {
        !matches!(self.node_arg(name), None | Some(Argument::None))
    }

    /// A string argument (absent or `None`: its schema default).
    pub(super) fn string(&self, name: &str) -> Result<String, String> {
        match (self.node_arg(name), self.default(name)) {
            (Some(Argument::String(s)), _) => Ok(s.clone()),
            (None | Some(Argument::None), Some(DefaultValue::Str(s))) => Ok(s.to_owned()),
            (other, _) => Err(Self::wrong(name, "a string", other)),
        }
    }

    pub(super) fn dtype(&self) -> Result<Option<i64>, String> {
        match self.node_arg("dtype") {
            None | Some(Argument::None) => Ok(None),
            Some(Argument::ScalarType(t)) => Ok(Some(*t)),
            other => Err(Self::wrong("dtype", "a dtype", other)),
        }
    }
}

/// `pairwise_distance` (`torch._refs.nn.functional.pairwise_distance`): the norm of
/// `x1 − x2 + eps` over the last dimension of their broadcast, in float32; the Euclidean
/// norm only (as `linalg_vector_norm`'s evaluation).
fn pairwise_distance(a: &Args<'_>) -> Result<Tensor, String> {
    if a.number("p")? != 2.0 {
        return Err("a pairwise distance other than the Euclidean (p = 2)".into());
    }
    let eps = a.number("eps")? as f32;
    let d = Tensor::zip(&a.tensor("x1")?, &a.tensor("x2")?, |p, q| p - q + eps, None)?;
    let Some(last) = d.rank().checked_sub(1) else {
        return Err("a pairwise distance of 0-d tensors".into());
    };
    d.reduce(&[last], a.bool("keepdim")?, Reduction::Norm)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A node `op` with JSON `inputs` (the export schema's form), output `y`.
    fn node(op: &str, inputs: &str) -> Node {
        serde_json::from_str(&format!(
            r#"{{"target": "torch.ops.aten.{op}", "inputs": {inputs}, "outputs": [{{"as_tensor": {{"name": "y"}}}}]}}"#
        ))
        .unwrap()
    }

    fn run(op: &str, inputs: &str, constants: &[(&str, Tensor)]) -> Result<Vec<Tensor>, String> {
        let map: HashMap<&str, Tensor> = constants.iter().cloned().collect();
        evaluate(&node(op, inputs), &|name| map.get(name).cloned())
    }

    fn w() -> Tensor {
        Tensor::f32(vec![2, 3], vec![1., 2., 3., 4., 6., 8.]).unwrap()
    }

    #[test]
    fn sum_to_size_sums_the_leading_axes_and_those_the_size_has_as_1() {
        assert_eq!(sum_to_size_axes(&[3, 2, 4], &[1, 4]), Ok(vec![0, 1]));
        assert_eq!(sum_to_size_axes(&[3, 2, 4], &[2, 4]), Ok(vec![0]));
        assert_eq!(sum_to_size_axes(&[3, 2], &[3, 2]), Ok(vec![]));
        assert_eq!(sum_to_size_axes(&[5], &[]), Ok(vec![0]));
        assert!(sum_to_size_axes(&[3, 2], &[4]).is_err());
        assert!(sum_to_size_axes(&[2], &[1, 2]).is_err());
        let summed = run(
            "sum_to_size.default",
            r#"[{"name": "self", "arg": {"as_tensor": {"name": "w"}}}, {"name": "size", "arg": {"as_ints": [1]}}]"#,
            &[("w", w())],
        )
        .unwrap();
        assert_eq!(summed[0].dims(), [1]);
        assert_eq!(summed[0].to_f32(), [24.0]);
    }

    #[test]
    fn layer_scale_reshape_and_parameter_arithmetic() {
        let gamma = Tensor::f32(vec![3], vec![1., 2., 3.]).unwrap();
        let y = run(
            "reshape.default",
            r#"[{"name": "self", "arg": {"as_tensor": {"name": "g"}}}, {"name": "shape", "arg": {"as_ints": [1, -1, 1, 1]}}]"#,
            &[("g", gamma.clone())],
        )
        .unwrap();
        assert_eq!(y[0].dims(), [1, 3, 1, 1]);
        let product = run(
            "mul.Tensor",
            r#"[{"name": "self", "arg": {"as_tensor": {"name": "g"}}}, {"name": "other", "arg": {"as_float": 0.5}}]"#,
            &[("g", gamma)],
        )
        .unwrap();
        assert_eq!(product[0].to_f32(), [0.5, 1., 1.5]);
    }

    #[test]
    fn integers_negated_or_clamped_by_integers_stay_exact_integers() {
        // DeBERTa clamps its int64 relative positions before gathering by them.
        let big = (1 << 40) + 1;
        let ids = Tensor::i64(vec![3], vec![-7, 3, big]).unwrap();
        let clamp = |bounds: &str| {
            run(
                "clamp.default",
                &format!(
                    r#"[{{"name": "self", "arg": {{"as_tensor": {{"name": "i"}}}}}}, {bounds}]"#
                ),
                &[("i", ids.clone())],
            )
            .unwrap()
            .remove(0)
        };
        let y = clamp(r#"{"name": "min", "arg": {"as_int": 0}}"#);
        assert_eq!(y.values(), &Values::I64(vec![0, 3, big]));
        let y = clamp(
            r#"{"name": "min", "arg": {"as_int": 0}}, {"name": "max", "arg": {"as_int": 5}}"#,
        );
        assert_eq!(y.values(), &Values::I64(vec![0, 3, 5]));
        let neg = run(
            "neg.default",
            r#"[{"name": "self", "arg": {"as_tensor": {"name": "i"}}}]"#,
            &[("i", ids.clone())],
        )
        .unwrap();
        assert_eq!(neg[0].values(), &Values::I64(vec![7, -3, -big]));
        // A float bound promotes to float, as in torch.
        let y = clamp(r#"{"name": "max", "arg": {"as_float": 2.5}}"#);
        assert_eq!(y.to_f32(), [-7.0, 2.5, 2.5]);
        assert!(matches!(y.values(), Values::F32(_)));
    }

    #[test]
    fn weight_standardisation_by_batch_norm_matches_mean_and_std() {
        let y = run(
            "batch_norm.default",
            r#"[{"name": "input", "arg": {"as_tensor": {"name": "w"}}},
                {"name": "weight", "arg": {"as_none": true}}, {"name": "bias", "arg": {"as_none": true}},
                {"name": "running_mean", "arg": {"as_none": true}}, {"name": "running_var", "arg": {"as_none": true}},
                {"name": "training", "arg": {"as_bool": true}}, {"name": "momentum", "arg": {"as_float": 0.0}},
                {"name": "eps", "arg": {"as_float": 0.0}}, {"name": "cudnn_enabled", "arg": {"as_bool": false}}]"#,
            &[("w", w().reshape(&[1, 2, 3]).unwrap())],
        )
        .unwrap();
        // Channel 0 is 1, 2, 3: mean 2, biased variance 2/3.
        let s = (2.0f32 / 3.0).sqrt();
        let expect = [
            -1. / s,
            0.,
            1. / s,
            -2. / (8f32 / 3.).sqrt(),
            0.,
            2. / (8f32 / 3.).sqrt(),
        ];
        for (got, want) in y[0].to_f32().iter().zip(expect) {
            assert!((got - want).abs() < 1e-6, "{got} vs {want}");
        }
        let eval_mode = run(
            "batch_norm.default",
            r#"[{"name": "input", "arg": {"as_tensor": {"name": "w"}}}, {"name": "training", "arg": {"as_bool": false}}]"#,
            &[("w", w())],
        );
        assert!(eval_mode.unwrap_err().contains("eval mode"));
    }

    #[test]
    fn diagonals_read_torchs_strided_view_and_diag_builds_or_reads_one() {
        // [[0, 1, 2], [3, 4, 5]]: diagonal(offset=1) is [1, 5]; with the dimensions swapped
        // and offset -1 it reads (row 1 of dim 1, col 0 of dim 0) = 1, then 5.
        let m = Tensor::i64(vec![2, 3], (0..6).collect()).unwrap();
        let tensor = r#"{"name": "self", "arg": {"as_tensor": {"name": "m"}}}"#;
        let diagonal = |args: &str| {
            run(
                "diagonal.default",
                &format!("[{tensor}, {args}]"),
                &[("m", m.clone())],
            )
            .unwrap()
            .remove(0)
        };
        let d = diagonal(r#"{"name": "offset", "arg": {"as_int": 1}}"#);
        assert_eq!((d.dims(), d.to_i64().unwrap()), (&[2][..], vec![1, 5]));
        let d = diagonal(
            r#"{"name": "offset", "arg": {"as_int": -1}}, {"name": "dim1", "arg": {"as_int": 1}},
               {"name": "dim2", "arg": {"as_int": 0}}"#,
        );
        assert_eq!(d.to_i64().unwrap(), vec![1, 5]);
        let d = diagonal(r#"{"name": "offset", "arg": {"as_int": 3}}"#);
        assert_eq!(d.dims(), [0]);
        let trace = run("trace.default", &format!("[{tensor}]"), &[("m", m.clone())]).unwrap();
        assert_eq!(
            (trace[0].dims(), trace[0].to_i64().unwrap()),
            (&[][..], vec![4])
        );
        // diag of a vector: its matrix, offset above the main diagonal.
        let v = Tensor::f32(vec![2], vec![7.0, 8.0]).unwrap();
        let d = run(
            "diag.default",
            &format!(r#"[{tensor}, {{"name": "diagonal", "arg": {{"as_int": 1}}}}]"#),
            &[("m", v)],
        )
        .unwrap();
        assert_eq!(d[0].dims(), [3, 3]);
        assert_eq!(d[0].to_f32(), [0., 7., 0., 0., 0., 8., 0., 0., 0.]);
    }

    #[test]
    fn var_default_reduces_every_dimension_with_or_without_bessel_correction() {
        let unbiased = |b: bool| {
            run(
                "var.default",
                &format!(
                    r#"[{{"name": "self", "arg": {{"as_tensor": {{"name": "w"}}}}}}, {{"name": "unbiased", "arg": {{"as_bool": {b}}}}}]"#
                ),
                &[("w", w())],
            )
            .unwrap()
        };
        // Mean 4, squared deviations 9+4+1+0+4+16 = 34.
        let (y, biased) = (unbiased(true), unbiased(false));
        assert_eq!(y[0].dims(), &[] as &[u64]);
        assert_eq!(
            (y[0].to_f32(), biased[0].to_f32()),
            (vec![6.8], vec![34. / 6.])
        );
    }

    #[test]
    fn std_over_dims_keeps_them() {
        let y = run(
            "std.dim",
            r#"[{"name": "self", "arg": {"as_tensor": {"name": "w"}}}, {"name": "dim", "arg": {"as_ints": [1]}},
                {"name": "unbiased", "arg": {"as_bool": true}}, {"name": "keepdim", "arg": {"as_bool": true}}]"#,
            &[("w", w())],
        )
        .unwrap();
        assert_eq!((y[0].dims(), y[0].to_f32()), (&[2, 1][..], vec![1., 2.]));
    }

    #[test]
    fn relative_position_bias_lookup() {
        let table = Tensor::f32(vec![3, 2], vec![0., 10., 1., 11., 2., 12.]).unwrap();
        let index = Tensor::i64(vec![2, 2], vec![1, 0, 2, 1]).unwrap();
        let flat = index.reshape(&[-1]).unwrap();
        let y = run(
            "index.Tensor",
            r#"[{"name": "self", "arg": {"as_tensor": {"name": "t"}}}, {"name": "indices", "arg": {"as_optional_tensors": [{"as_tensor": {"name": "i"}}]}}]"#,
            &[("t", table), ("i", flat)],
        )
        .unwrap();
        assert_eq!(y[0].dims(), [4, 2]);
        assert_eq!(y[0].to_f32(), [1., 11., 0., 10., 2., 12., 1., 11.]);
    }

    #[test]
    fn two_index_tensors_pick_pairs() {
        let x = Tensor::f32(vec![2, 3], vec![0., 1., 2., 3., 4., 5.]).unwrap();
        let rows = Tensor::i64(vec![2], vec![1, 0]).unwrap();
        let columns = Tensor::i64(vec![2], vec![-1, 1]).unwrap();
        let y = index(&x, &[Some(rows), Some(columns)]).unwrap();
        assert_eq!(y.to_f32(), [5., 1.]);
        let gap = index(&x, &[Some(Tensor::i64(vec![1], vec![0]).unwrap()), None]);
        assert!(gap.is_ok());
        assert!(index(&x, &[None, None]).is_err());
    }

    #[test]
    fn integer_arithmetic_stays_int64_and_softplus_matches_torch() {
        let i = Tensor::i64(vec![2], vec![3, 4]).unwrap();
        let y = run(
            "add.Tensor",
            r#"[{"name": "self", "arg": {"as_tensor": {"name": "i"}}}, {"name": "other", "arg": {"as_int": 7}}]"#,
            &[("i", i)],
        )
        .unwrap();
        assert_eq!(y[0].values(), &Values::I64(vec![10, 11]));
        let p = Tensor::f32(vec![2], vec![0., 30.]).unwrap();
        let y = run(
            "softplus.default",
            r#"[{"name": "self", "arg": {"as_tensor": {"name": "p"}}}]"#,
            &[("p", p)],
        )
        .unwrap();
        assert!((y[0].to_f32()[0] - 2f32.ln()).abs() < 1e-7);
        assert_eq!(y[0].to_f32()[1], 30.);
    }

    #[test]
    fn unknown_arguments_and_batch_sizes_are_refused() {
        let extra = run(
            "permute.default",
            r#"[{"name": "self", "arg": {"as_tensor": {"name": "w"}}}, {"name": "dims", "arg": {"as_ints": [1, 0]}}, {"name": "fast", "arg": {"as_bool": true}}]"#,
            &[("w", w())],
        );
        assert!(extra.unwrap_err().contains("`fast`"));
        let batch = run(
            "view.default",
            r#"[{"name": "self", "arg": {"as_tensor": {"name": "w"}}}, {"name": "size", "arg": {"as_sym_ints": [{"as_name": "s0"}]}}]"#,
            &[("w", w())],
        );
        assert!(batch.unwrap_err().contains("batch"));
    }

    /// timm's ViT with a dynamic image size resamples its position table in every forward;
    /// at the native grid that is the table itself (the antialiased filters weigh each
    /// source 1 and its neighbours 0); to another size it is resampled.
    #[test]
    fn an_antialiased_resampling_to_the_same_grid_is_the_input() {
        let table = Tensor::f32(vec![1, 2, 3, 3], (0..18).map(|i| i as f32).collect()).unwrap();
        let resample = |size: &str| {
            run(
                "_upsample_bicubic2d_aa.vec",
                &format!(
                    r#"[{{"name": "input", "arg": {{"as_tensor": {{"name": "p"}}}}}}, {{"name": "output_size", "arg": {{"as_ints": {size}}}}}, {{"name": "align_corners", "arg": {{"as_bool": false}}}}, {{"name": "scale_factors", "arg": {{"as_none": true}}}}]"#
                ),
                &[("p", table.clone())],
            )
        };
        assert_eq!(resample("[3, 3]").unwrap(), std::slice::from_ref(&table));
        assert_eq!(resample("[4, 4]").unwrap()[0].dims(), [1, 2, 4, 4]);
    }

    fn t(name: &str) -> String {
        format!(r#"{{"name": "self", "arg": {{"as_tensor": {{"name": "{name}"}}}}}}"#)
    }

    /// The positional encoding timm's EdgeNeXt and XCiT compute from `zeros(B, H, W)`:
    /// `~mask`, running sums, a floor division and sines of the result.
    #[test]
    fn position_encoding_ops_on_a_mask() {
        let mask = Tensor::i64(vec![1, 2, 3], vec![0; 6]).unwrap();
        let not = run(
            "logical_not.default",
            &format!("[{}]", t("m")),
            &[("m", mask)],
        )
        .unwrap();
        assert_eq!(not[0].to_i64().unwrap(), [1; 6]);
        let sums = run(
            "cumsum.default",
            &format!(r#"[{}, {{"name": "dim", "arg": {{"as_int": 2}}}}, {{"name": "dtype", "arg": {{"as_scalar_type": 7}}}}]"#, t("n")),
            &[("n", not[0].clone())],
        )
        .unwrap();
        assert_eq!(sums[0].to_f32(), [1., 2., 3., 1., 2., 3.]);
        let halves = run(
            "div.Tensor_mode",
            &format!(r#"[{}, {{"name": "other", "arg": {{"as_int": 2}}}}, {{"name": "rounding_mode", "arg": {{"as_string": "floor"}}}}]"#, t("a")),
            &[("a", Tensor::i64(vec![4], vec![-3, -1, 1, 3]).unwrap())],
        )
        .unwrap();
        assert_eq!(halves[0].to_i64().unwrap(), [-2, -1, 0, 1]);
        let sines = run(
            "sin.default",
            &format!("[{}]", t("s")),
            &[("s", sums[0].clone())],
        )
        .unwrap();
        assert!((sines[0].to_f32()[0] - 1f32.sin()).abs() < 1e-7);
        let grid = run(
            "meshgrid.indexing",
            r#"[{"name": "tensors", "arg": {"as_tensors": [{"name": "a"}, {"name": "b"}]}}, {"name": "indexing", "arg": {"as_string": "ij"}}]"#,
            &[
                ("a", Tensor::i64(vec![2], vec![0, 1]).unwrap()),
                ("b", Tensor::i64(vec![3], vec![5, 6, 7]).unwrap()),
            ],
        )
        .unwrap();
        assert_eq!(grid[0].to_i64().unwrap(), [0, 0, 0, 1, 1, 1]);
        assert_eq!(grid[1].to_i64().unwrap(), [5, 6, 7, 5, 6, 7]);
    }

    /// A 1×1 token projection and a 3×3 padded convolution of a constant, as torch computes
    /// them (values from `F.conv2d` by hand).
    #[test]
    fn convolution_of_a_constant() {
        let x = Tensor::f32(vec![1, 1, 2, 2], vec![1., 2., 3., 4.]).unwrap();
        let ones = Tensor::f32(vec![1, 1, 3, 3], vec![1.; 9]).unwrap();
        let y = run(
            "conv2d.default",
            r#"[{"name": "input", "arg": {"as_tensor": {"name": "x"}}}, {"name": "weight", "arg": {"as_tensor": {"name": "w"}}}, {"name": "padding", "arg": {"as_ints": [1, 1]}}]"#,
            &[("x", x.clone()), ("w", ones)],
        )
        .unwrap();
        assert_eq!(y[0].dims(), [1, 1, 2, 2]);
        assert_eq!(y[0].to_f32(), [10.; 4]);
        let two = Tensor::f32(vec![2, 1, 1, 1], vec![2., -1.]).unwrap();
        let bias = Tensor::f32(vec![2], vec![0.5, 0.]).unwrap();
        let y = run(
            "conv2d.default",
            r#"[{"name": "input", "arg": {"as_tensor": {"name": "x"}}}, {"name": "weight", "arg": {"as_tensor": {"name": "w"}}}, {"name": "bias", "arg": {"as_tensor": {"name": "b"}}}]"#,
            &[("x", x), ("w", two), ("b", bias)],
        )
        .unwrap();
        assert_eq!(y[0].to_f32(), [2.5, 4.5, 6.5, 8.5, -1., -2., -3., -4.]);
    }

    #[test]
    fn softmax_linear_and_comparisons_of_constants() {
        let x = Tensor::f32(vec![1, 2], vec![0., 0.]).unwrap();
        let p = run(
            "softmax.int",
            &format!(
                r#"[{}, {{"name": "dim", "arg": {{"as_int": -1}}}}]"#,
                t("x")
            ),
            &[("x", x.clone())],
        )
        .unwrap();
        assert_eq!(p[0].to_f32(), [0.5, 0.5]);
        let y = run(
            "linear.default",
            r#"[{"name": "input", "arg": {"as_tensor": {"name": "x"}}}, {"name": "weight", "arg": {"as_tensor": {"name": "w"}}}]"#,
            &[("x", Tensor::f32(vec![1, 3], vec![1., 1., 1.]).unwrap()), ("w", w())],
        )
        .unwrap();
        assert_eq!(y[0].to_f32(), [6., 18.]);
        let gt = run(
            "gt.Scalar",
            &format!(
                r#"[{}, {{"name": "other", "arg": {{"as_float": 2.5}}}}]"#,
                t("w")
            ),
            &[("w", w())],
        )
        .unwrap();
        assert_eq!(gt[0].to_i64().unwrap(), [0, 0, 1, 1, 1, 1]);
    }

    /// The modules that compute `target` (one, or none).
    fn computed_by(target: &str) -> Vec<&'static str> {
        use crate::{decompose, expand, fourier, linalg, special};
        [
            (
                "decompose::pointwise",
                decompose::pointwise(target).is_some(),
            ),
            (
                "decompose::RELAYOUTS",
                decompose::RELAYOUTS.contains(&target),
            ),
            (
                "fourier",
                fourier::REAL_TRANSFORMS.contains(&target) || fourier::SHIFTS.contains(&target),
            ),
            ("special", special::special(target).is_some()),
            ("linalg", linalg::function(target).is_some()),
            ("expand", expand::EXPANDED.contains(&target)),
            ("EVALUATED", EVALUATED.contains(&target)),
        ]
        .into_iter()
        .filter(|(_, computes)| *computes)
        .map(|(module, _)| module)
        .collect()
    }

    /// Total evaluation: every op the schema table knows is computed on constants, or its
    /// row says why not; a row cannot be left out silently, and [`EVALUATED`] lists exactly
    /// the rows no other module computes (a copy or an alias as the op it stands for).
    /// A 1-D tensor of positions cuts before each, a 0-d one is the number of sections.
    #[test]
    fn tensor_split_reads_its_tensor_as_indices_or_sections() {
        let x = Tensor::f32(vec![5], vec![0., 1., 2., 3., 4.]).unwrap();
        let cut = |cuts: Tensor| {
            let inputs = r#"[{"name": "self", "arg": {"as_tensor": {"name": "x"}}},
                {"name": "tensor_indices_or_sections", "arg": {"as_tensor": {"name": "c"}}}]"#;
            let pieces = run(
                "tensor_split.tensor_indices_or_sections",
                inputs,
                &[("x", x.clone()), ("c", cuts)],
            )?;
            Ok::<_, String>(pieces.iter().map(|p| p.dims()[0]).collect::<Vec<_>>())
        };
        assert_eq!(
            cut(Tensor::i64(vec![2], vec![1, 4]).unwrap()),
            Ok(vec![1, 3, 1])
        );
        assert_eq!(cut(Tensor::i64(vec![], vec![2]).unwrap()), Ok(vec![3, 2]));
        assert!(cut(Tensor::i64(vec![1, 1], vec![2]).unwrap()).is_err());
    }

    #[test]
    fn every_evaluated_row_is_computed_by_one_module() {
        for row in crate::schema::SCHEMAS {
            let target = crate::schema::canonical(row.target);
            match row.not_evaluated {
                None => assert_eq!(
                    computed_by(target).len(),
                    1,
                    "{} is evaluated by one module, or marked as not evaluated with a reason",
                    row.target
                ),
                Some(reason) => {
                    // A compound op is evaluated by its steps; one with a step the
                    // evaluator does not compute says so in its row.
                    let by = computed_by(target);
                    assert!(by.is_empty() || by == ["expand"], "{}", row.target);
                    assert!(reason.len() > 20, "{}: give the reason", row.target);
                }
            }
        }
        for target in EVALUATED {
            let row = crate::schema::lookup(target);
            assert!(
                row.is_some_and(|r| r.not_evaluated.is_none()),
                "{target} is listed as evaluated but its row is missing or says it is not"
            );
            assert_eq!(
                crate::schema::canonical(target),
                *target,
                "{target} is a copy or an alias: list the op it stands for"
            );
            let listed = EVALUATED.iter().filter(|t| *t == target).count();
            assert_eq!(listed, 1, "{target} is listed twice");
        }
    }

    #[test]
    fn every_listed_op_is_dispatched() {
        for op in EVALUATED {
            let err = run(op, "[]", &[]).err().unwrap_or_default();
            assert!(
                !err.contains("is not evaluated on constants"),
                "{op}: {err}"
            );
        }
    }
}
