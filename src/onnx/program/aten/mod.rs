//! One lowering per aten op that `torch.export.export` (torch 2.13, no decompositions run)
//! writes for torchvision classifiers and UNet-style models. Every op checks the arguments
//! it does not translate (`Args::unexpected`), so a call it cannot express exactly is an
//! error naming the node, never a silently different graph.

use crate::onnx::OnnxError;
use crate::torch::pt2::schema::Node;

use super::args::Args;
use super::emit;
use super::located;
use super::lower::Lowering;
use super::tensor;

mod attention;
mod compare;
mod constant;
mod conv;
mod embedding;
mod fused_attention;
mod index;
mod layout;
mod math;
mod matmul;
mod multi_head_attention;
mod norm;
mod pad;
mod pointwise;
mod pool;
mod reduce;
mod resize;
mod rnn;
mod select_top;
mod shape_ops;
mod split;

/// The aten targets lowered, without `torch.ops.aten.` (listed in the unsupported-op error).
pub const SUPPORTED: &[&str] = &[
    "conv2d.default",
    "conv_transpose2d.input",
    "batch_norm.default",
    "_native_batch_norm_legit_no_training.default",
    "linear.default",
    "max_pool2d.default",
    "max_pool2d_with_indices.default",
    "avg_pool2d.default",
    "adaptive_avg_pool2d.default",
    "mean.dim",
    "sum.dim_IntList",
    "amax.default",
    "amin.default",
    "var.correction",
    "var.dim",
    "std.correction",
    "std.dim",
    "arange.default",
    "arange.start",
    "arange.start_step",
    "zeros.default",
    "ones.default",
    "full.default",
    "scalar_tensor.default",
    "lift_fresh_copy.default",
    "softmax.int",
    "_softmax.default",
    "log_softmax.int",
    "_log_softmax.default",
    "gelu.default",
    "layer_norm.default",
    "exp.default",
    "log.default",
    "sqrt.default",
    "rsqrt.default",
    "neg.default",
    "abs.default",
    "reciprocal.default",
    "pow.Tensor_Scalar",
    "clamp.default",
    "clamp_min.default",
    "clamp_max.default",
    "maximum.default",
    "minimum.default",
    "add.Scalar",
    "sub.Scalar",
    "mul.Scalar",
    "div.Scalar",
    "rsub.Scalar",
    "rsub.Tensor",
    "elu.default",
    "elu_.default",
    "leaky_relu.default",
    "leaky_relu_.default",
    "softplus.default",
    "mish.default",
    "mish_.default",
    "prelu.default",
    "constant_pad_nd.default",
    "pad.default",
    "reflection_pad2d.default",
    "replication_pad2d.default",
    "instance_norm.default",
    "narrow.default",
    "index_select.default",
    "index.Tensor",
    "group_norm.default",
    "relu.default",
    "relu_.default",
    "sigmoid.default",
    "sigmoid_.default",
    "tanh.default",
    "tanh_.default",
    "hardtanh.default",
    "relu6.default",
    "hardtanh_.default",
    "silu.default",
    "silu_.default",
    "hardswish.default",
    "hardswish_.default",
    "hardsigmoid.default",
    "hardsigmoid_.default",
    "add.Tensor",
    "add_.Tensor",
    "sub.Tensor",
    "mul.Tensor",
    "mul_.Tensor",
    "div.Tensor",
    "cat.default",
    "flatten.using_ints",
    "view.default",
    "reshape.default",
    "_unsafe_view.default",
    "reshape_as.default",
    "dropout.default",
    "dropout_.default",
    "clone.default",
    "contiguous.default",
    "alias.default",
    "detach.default",
    "detach_.default",
    "slice.Tensor",
    "permute.default",
    "split.Tensor",
    "split_with_sizes.default",
    "chunk.default",
    "unbind.int",
    "transpose.int",
    "sym_size.int",
    "unsqueeze.default",
    "squeeze.dim",
    "squeeze.dims",
    "select.int",
    "unflatten.int",
    "expand.default",
    "scaled_dot_product_attention.default",
    "_transformer_encoder_layer_fwd.default",
    "_native_multi_head_attention.default",
    "matmul.default",
    "bmm.default",
    "baddbmm.default",
    "_operator.mul (the batch times a constant)",
    "upsample_nearest2d.vec",
    "upsample_nearest2d.default",
    "upsample_bilinear2d.vec",
    "upsample_bilinear2d.default",
    // Integer and bool tensors (token models).
    "embedding.default",
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
    "logical_not.default",
    "logical_and.default",
    "logical_or.default",
    "bitwise_not.default",
    "bitwise_and.Tensor",
    "bitwise_or.Tensor",
    "__and__.Tensor",
    "__or__.Tensor",
    "where.self",
    "where.ScalarSelf",
    "where.ScalarOther",
    "where.Scalar",
    "masked_fill.Scalar",
    "masked_fill.Tensor",
    "to.dtype",
    "to.dtype_layout",
    "to.device",
    "_to_copy.default",
    "argmax.default",
    "argmin.default",
    "max.dim",
    "min.dim",
    "topk.default",
    "lstm.input",
    "gru.input",
];

fn arg_error(what: String) -> OnnxError {
    OnnxError::Shape { what }
}

/// `Result<T, String>` from [`Args`] into an (unlocated) export error.
trait OrShape<T> {
    fn or_shape(self) -> Result<T, OnnxError>;
}

impl<T> OrShape<T> for Result<T, String> {
    fn or_shape(self) -> Result<T, OnnxError> {
        self.map_err(arg_error)
    }
}

fn reject_extra(args: &Args<'_>, known: &[&str]) -> Result<(), OnnxError> {
    args.unexpected(known).map_or(Ok(()), |e| Err(arg_error(e)))
}

/// Two sizes (height, width) from a list `sizes_or(_, 2, _)` returned.
fn pair(values: Vec<u64>) -> Result<[u64; 2], OnnxError> {
    <[u64; 2]>::try_from(values)
        .map_err(|v| arg_error(format!("expected two sizes (height, width), got {v:?}")))
}

/// A per-sample axis for full-tensor axis `dim` of a rank-`rank` tensor (batch included);
/// axis 0, the batch, is refused.
fn per_sample_axis(dim: i64, rank: usize) -> Result<usize, OnnxError> {
    let rank = rank as i64;
    let axis = if dim < 0 { dim + rank } else { dim };
    match axis {
        0 => Err(arg_error(format!(
            "it works along dimension {dim}, the batch, which mixes samples; only ops that treat each sample alike are exported"
        ))),
        a if (1..rank).contains(&a) => Ok(a as usize - 1),
        _ => Err(arg_error(format!(
            "dimension {dim} is out of range for a rank-{rank} tensor"
        ))),
    }
}

impl<'p> Lowering<'p, '_> {
    /// Lowers node `index`.
    pub fn node(&mut self, index: usize, node: &Node) -> Result<(), OnnxError> {
        let op = node
            .target
            .strip_prefix("torch.ops.aten.")
            .unwrap_or(&node.target);
        if self.fold_constant(node, op)? {
            return Ok(());
        }
        let scope = Self::scope(node);
        let args = Args(node);
        match op {
            "conv2d.default" => self.conv2d(node, &args, &scope),
            "conv_transpose2d.input" => self.conv_transpose2d(node, &args, &scope),
            "batch_norm.default" | "_native_batch_norm_legit_no_training.default" => {
                self.batch_norm(node, &args, &scope)
            }
            "linear.default" => self.linear(node, &args, &scope),
            "max_pool2d.default" | "max_pool2d_with_indices.default" => {
                self.max_pool(node, &args, &scope)
            }
            "avg_pool2d.default" => self.avg_pool(node, &args, &scope),
            "adaptive_avg_pool2d.default" => self.adaptive_avg_pool(node, &args, &scope),
            "mean.dim" => self.mean(node, &args, &scope),
            "sum.dim_IntList" => self.reduce(node, &args, &scope, "ReduceSum"),
            "amax.default" => self.reduce(node, &args, &scope, "ReduceMax"),
            "amin.default" => self.reduce(node, &args, &scope, "ReduceMin"),
            "var.correction" | "var.dim" => self.variance(node, &args, &scope, false),
            "std.correction" | "std.dim" => self.variance(node, &args, &scope, true),
            "arange.default" | "arange.start" | "arange.start_step" => self.arange(node, &args),
            "zeros.default" => self.fill(node, &args, Some(0.0)),
            "ones.default" => self.fill(node, &args, Some(1.0)),
            "full.default" => self.fill(node, &args, None),
            "scalar_tensor.default" => self.scalar_tensor(node, &args),
            "softmax.int" | "_softmax.default" => self.softmax(node, &args, &scope, "Softmax"),
            "log_softmax.int" | "_log_softmax.default" => {
                self.softmax(node, &args, &scope, "LogSoftmax")
            }
            "exp.default" => self.elementwise_unary(node, &args, &scope, "Exp"),
            "log.default" => self.elementwise_unary(node, &args, &scope, "Log"),
            "sqrt.default" => self.elementwise_unary(node, &args, &scope, "Sqrt"),
            "neg.default" => self.elementwise_unary(node, &args, &scope, "Neg"),
            "abs.default" => self.elementwise_unary(node, &args, &scope, "Abs"),
            "reciprocal.default" => self.elementwise_unary(node, &args, &scope, "Reciprocal"),
            "rsqrt.default" => self.rsqrt(node, &args, &scope),
            "pow.Tensor_Scalar" => self.pow(node, &args, &scope),
            "clamp.default" | "clamp_min.default" | "clamp_max.default" => {
                self.clamp(node, &args, &scope)
            }
            "maximum.default" => self.scalar_arithmetic(node, &args, &scope, "Max", false),
            "minimum.default" => self.scalar_arithmetic(node, &args, &scope, "Min", false),
            "add.Scalar" => self.scalar_arithmetic(node, &args, &scope, "Add", false),
            "sub.Scalar" => self.scalar_arithmetic(node, &args, &scope, "Sub", false),
            "mul.Scalar" => self.scalar_arithmetic(node, &args, &scope, "Mul", false),
            "div.Scalar" => self.scalar_arithmetic(node, &args, &scope, "Div", false),
            "rsub.Scalar" | "rsub.Tensor" => {
                self.scalar_arithmetic(node, &args, &scope, "Sub", true)
            }
            "elu.default" | "elu_.default" => self.elu(node, &args, &scope),
            "leaky_relu.default" | "leaky_relu_.default" => self.leaky_relu(node, &args, &scope),
            "softplus.default" => self.softplus(node, &args, &scope),
            "mish.default" | "mish_.default" => self.mish(node, &args, &scope),
            "prelu.default" => self.prelu(node, &args, &scope),
            "constant_pad_nd.default" => self.pad(node, &args, &scope, "constant"),
            "pad.default" => self.pad_by_mode(node, &args, &scope),
            "reflection_pad2d.default" => self.pad(node, &args, &scope, "reflect"),
            "replication_pad2d.default" => self.pad(node, &args, &scope, "edge"),
            "instance_norm.default" => self.instance_norm(node, &args, &scope),
            "narrow.default" => self.narrow(node, &args, &scope),
            "index_select.default" => self.index_select(node, &args, &scope),
            "index.Tensor" => self.index_tensor(node, &args, &scope),
            "group_norm.default" => self.group_norm(node, &args, &scope),
            "gelu.default" => self.gelu(node, &args, &scope),
            "layer_norm.default" => self.layer_norm(node, &args, &scope),
            "relu.default" | "relu_.default" => self.unary(node, &args, |g, x| g.relu(&scope, x)),
            "sigmoid.default" | "sigmoid_.default" => {
                self.unary(node, &args, |g, x| g.sigmoid(&scope, x))
            }
            "tanh.default" | "tanh_.default" => {
                self.unary(node, &args, |g, x| emit::tanh(g, &scope, x))
            }
            "hardsigmoid.default" | "hardsigmoid_.default" => self.unary(node, &args, |g, x| {
                g.hard_sigmoid(&scope, x, 1.0 / 6.0, 0.5)
            }),
            "hardtanh.default" | "hardtanh_.default" => self.hardtanh(node, &args, &scope),
            "relu6.default" => self.unary(node, &args, |g, x| g.clip(&scope, x, 0.0, 6.0)),
            "silu.default" | "silu_.default" => {
                self.gated(node, &args, &scope, |g, x| g.sigmoid(&scope, x))
            }
            "hardswish.default" | "hardswish_.default" => {
                self.gated(node, &args, &scope, |g, x| {
                    g.hard_sigmoid(&scope, x, 1.0 / 6.0, 0.5)
                })
            }
            "add.Tensor" | "add_.Tensor" => self.binary(node, &args, &scope, "Add"),
            "sub.Tensor" => self.binary(node, &args, &scope, "Sub"),
            "mul.Tensor" | "mul_.Tensor" => self.binary(node, &args, &scope, "Mul"),
            "div.Tensor" => self.binary(node, &args, &scope, "Div"),
            "cat.default" => self.cat(node, &args, &scope),
            "flatten.using_ints" => self.flatten(node, &args, &scope),
            "view.default" | "reshape.default" | "_unsafe_view.default" => {
                self.reshape(node, &args, &scope)
            }
            "reshape_as.default" => {
                reject_extra(&args, &["self", "other"])?;
                self.view_as_recorded(node, args.tensor("self").or_shape()?, &scope)
            }
            "dropout.default" | "dropout_.default" => {
                // aten names the in-place form's tensor `self`, the other's `input`.
                let tensor = if op == "dropout_.default" && args.get("self").is_some() {
                    "self"
                } else {
                    "input"
                };
                reject_extra(&args, &[tensor, "p", "train"])?;
                if args.bool_or("train", false).or_shape()? {
                    return Err(arg_error(
                        "dropout is in training mode; export the model after `model.eval()`".into(),
                    ));
                }
                let x = self.tensor(args.tensor(tensor).or_shape()?)?;
                self.bind_tensor(node, 0, x)
            }
            "clone.default" | "contiguous.default" | "alias.default" | "detach.default"
            | "detach_.default" => {
                reject_extra(&args, &["self", "memory_format"])?;
                let x = self.tensor(args.tensor("self").or_shape()?)?;
                self.bind_tensor(node, 0, x)
            }
            "unsqueeze.default" => self.unsqueeze(node, &args, &scope),
            "squeeze.dim" | "squeeze.dims" => self.squeeze(node, &args, &scope),
            "select.int" => self.select(node, &args, &scope),
            "unflatten.int" => self.unflatten(node, &args, &scope),
            "expand.default" => self.expand(node, &args, &scope),
            "scaled_dot_product_attention.default" => {
                self.scaled_dot_product_attention(node, &args, &scope)
            }
            "_native_multi_head_attention.default" => {
                self.multi_head_attention(node, &args, &scope)
            }
            "_transformer_encoder_layer_fwd.default" => {
                self.transformer_encoder_layer(node, &args, &scope)
            }
            "_operator.mul" => self.symbolic_mul(node, &args),
            "lstm.input" => self.lstm(node, &args, &scope),
            "gru.input" => self.gru(node, &args, &scope),
            "matmul.default" => self.matmul(node, &args, &scope),
            "bmm.default" => self.bmm(node, &args, &scope),
            "baddbmm.default" => self.baddbmm(node, &args, &scope),
            "slice.Tensor" => self.slice(node, &args, &scope),
            "permute.default" | "transpose.int" => self.permute(node, &args, &scope),
            "split.Tensor" | "split_with_sizes.default" | "chunk.default" | "unbind.int" => {
                self.split(node, &args, &scope, op)
            }
            "sym_size.int" => {
                let x = self.tensor(args.tensor("self").or_shape()?)?;
                let dim = tensor::axis(args.int_or("dim", 0).or_shape()?, x.rank())?;
                if dim != x.batch_axis() {
                    return Err(arg_error("it reads a fixed dimension as a symbol".into()));
                }
                self.bind_batch_times(node, x.factor())
            }
            "upsample_nearest2d.vec" | "upsample_nearest2d.default" => {
                self.upsample(node, &args, &scope, None)
            }
            "upsample_bilinear2d.vec" | "upsample_bilinear2d.default" => {
                let align = args.bool_or("align_corners", false).or_shape()?;
                self.upsample(node, &args, &scope, Some(align))
            }
            "embedding.default" => self.embedding(node, &args, &scope),
            _ if compare::comparison(op).is_some()
                && (op.ends_with(".Tensor") || op.ends_with(".Scalar")) =>
            {
                self.compare(node, &args, &scope, op)
            }
            "logical_not.default" => self.logical_not(node, &args, &scope, false),
            "bitwise_not.default" => self.logical_not(node, &args, &scope, true),
            "logical_and.default" => self.logical(node, &args, &scope, "And", false),
            "logical_or.default" => self.logical(node, &args, &scope, "Or", false),
            "bitwise_and.Tensor" | "__and__.Tensor" => {
                self.logical(node, &args, &scope, "And", true)
            }
            "bitwise_or.Tensor" | "__or__.Tensor" => self.logical(node, &args, &scope, "Or", true),
            "where.self" | "where.ScalarSelf" | "where.ScalarOther" | "where.Scalar" => {
                self.where_(node, &args, &scope)
            }
            "masked_fill.Scalar" | "masked_fill.Tensor" => self.masked_fill(node, &args, &scope),
            "to.dtype" | "to.dtype_layout" | "to.device" | "_to_copy.default" => {
                self.convert(node, &args, &scope)
            }
            "argmax.default" => self.argmax(node, &args, &scope, "ArgMax"),
            "argmin.default" => self.argmax(node, &args, &scope, "ArgMin"),
            "max.dim" => self.extreme_along(node, &args, &scope, ["ReduceMax", "ArgMax"]),
            "min.dim" => self.extreme_along(node, &args, &scope, ["ReduceMin", "ArgMin"]),
            "topk.default" => self.topk(node, &args, &scope),
            _ if op.starts_with("_assert") || op.starts_with("sym_constrain_range") => Ok(()),
            _ => Err(located::at_with_hint(
                node,
                index,
                "this op is not supported by the ONNX export",
                Some(&format!("supported aten ops: {}", SUPPORTED.join(", "))),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_axis_is_refused_and_negative_axes_map() {
        assert!(per_sample_axis(0, 4)
            .unwrap_err()
            .to_string()
            .contains("the batch"));
        assert!(per_sample_axis(-4, 4).is_err());
        assert_eq!(per_sample_axis(1, 4).unwrap(), 0);
        assert_eq!(per_sample_axis(-1, 4).unwrap(), 2);
        assert!(per_sample_axis(4, 4).is_err());
    }
}
