//! One lowering per aten op that `torch.export.export` (torch 2.13, no decompositions run)
//! writes for torchvision classifiers and UNet-style models. Every op checks the arguments
//! it does not translate (`Args::unexpected`), so a call it cannot express exactly is an
//! error naming the node, never a silently different graph.

use crate::onnx::fold::{fold, BatchNorm};
use crate::onnx::graph::Value;
use crate::onnx::ops::{Conv2d, Pool2d};
use crate::onnx::OnnxError;
use crate::torch::pt2::schema::{Argument, Node, SymInt};

use super::args::Args;
use super::emit::{self, ConvTranspose2d, Interpolation, Operand};
use super::located;
use super::lower::Lowering;

/// The aten targets lowered, without `torch.ops.aten.` (listed in the unsupported-op error).
pub const SUPPORTED: [&str; 49] = [
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
    "relu.default",
    "relu_.default",
    "sigmoid.default",
    "sigmoid_.default",
    "tanh.default",
    "tanh_.default",
    "hardtanh.default",
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
    "dropout.default",
    "dropout_.default",
    "clone.default",
    "contiguous.default",
    "alias.default",
    "detach.default",
    "slice.Tensor",
    "permute.default",
    "transpose.int",
    "sym_size.int",
    "upsample_nearest2d.vec",
    "upsample_nearest2d.default",
    "upsample_bilinear2d.vec",
    "upsample_bilinear2d.default",
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
            "it works along dimension {dim}, the batch; only ops that treat each sample alike are exported"
        ))),
        a if (1..rank).contains(&a) => Ok(a as usize - 1),
        _ => Err(arg_error(format!(
            "dimension {dim} is out of range for a rank-{rank} tensor"
        ))),
    }
}

/// The BatchNorm read from a `batch_norm`-like node: parameter FQNs and epsilon.
struct NormParams {
    weight: Option<String>,
    bias: Option<String>,
    mean: String,
    var: String,
    eps: f64,
}

const BATCH_NORM: &str = "torch.ops.aten.batch_norm.default";
const NATIVE_BATCH_NORM: &str = "torch.ops.aten._native_batch_norm_legit_no_training.default";

impl<'p> Lowering<'p, '_> {
    /// Lowers node `index`.
    pub fn node(&mut self, index: usize, node: &Node) -> Result<(), OnnxError> {
        let op = node
            .target
            .strip_prefix("torch.ops.aten.")
            .unwrap_or(&node.target);
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
            "softmax.int" | "_softmax.default" => self.softmax(node, &args, &scope),
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
            "dropout.default" | "dropout_.default" => {
                reject_extra(&args, &["input", "p", "train"])?;
                if args.bool_or("train", false).or_shape()? {
                    return Err(arg_error(
                        "dropout is in training mode; export the model after `model.eval()`".into(),
                    ));
                }
                let x = self.activation(args.tensor("input").or_shape()?)?;
                self.bind(node, 0, x)
            }
            "clone.default" | "contiguous.default" | "alias.default" | "detach.default" => {
                reject_extra(&args, &["self", "memory_format"])?;
                let x = self.activation(args.tensor("self").or_shape()?)?;
                self.bind(node, 0, x)
            }
            "slice.Tensor" => self.slice(node, &args, &scope),
            "permute.default" | "transpose.int" => self.permute(node, &args, &scope),
            "sym_size.int" => {
                let x = args.tensor("self").or_shape()?;
                let rank = self.recorded_shape(x)?.len() + 1;
                if per_sample_axis(args.int_or("dim", 0).or_shape()?, rank).is_ok() {
                    return Err(arg_error("it reads a fixed dimension as a symbol".into()));
                }
                self.bind_batch_symbol(node)
            }
            "upsample_nearest2d.vec" | "upsample_nearest2d.default" => {
                self.upsample(node, &args, &scope, None)
            }
            "upsample_bilinear2d.vec" | "upsample_bilinear2d.default" => {
                let align = args.bool_or("align_corners", false).or_shape()?;
                self.upsample(node, &args, &scope, Some(align))
            }
            _ if op.starts_with("_assert") || op.starts_with("sym_constrain_range") => Ok(()),
            _ => Err(located::at_with_hint(
                node,
                index,
                "this op is not supported by the ONNX export",
                Some(&format!("supported aten ops: {}", SUPPORTED.join(", "))),
            )),
        }
    }

    fn unary(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        emit: impl FnOnce(&mut crate::onnx::graph::GraphBuilder, &Value) -> Value,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self"])?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let y = emit(&mut self.g, &x);
        self.bind(node, 0, y)
    }

    /// `x · gate(x)`: silu (Sigmoid) and hardswish (HardSigmoid).
    fn gated(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        gate: impl FnOnce(&mut crate::onnx::graph::GraphBuilder, &Value) -> Value,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self"])?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let s = gate(&mut self.g, &x);
        let y = emit::binary(
            &mut self.g,
            "Mul",
            scope,
            Operand::Activation(&x),
            Operand::Activation(&s),
        )?;
        self.bind(node, 0, y)
    }

    fn hardtanh(&mut self, node: &Node, args: &Args<'_>, scope: &str) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "min_val", "max_val"])?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let lo = args.float_or("min_val", -1.0).or_shape()? as f32;
        let hi = args.float_or("max_val", 1.0).or_shape()? as f32;
        let y = self.g.clip(scope, &x, lo, hi);
        self.bind(node, 0, y)
    }

    fn conv_params(args: &Args<'_>) -> Result<Conv2d, OnnxError> {
        let groups = args.int_or("groups", 1).or_shape()?;
        Ok(Conv2d {
            stride: pair(args.sizes_or("stride", 2, &[1]).or_shape()?)?,
            pad: pair(args.sizes_or("padding", 2, &[0]).or_shape()?)?,
            dilation: pair(args.sizes_or("dilation", 2, &[1]).or_shape()?)?,
            groups: u64::try_from(groups)
                .ok()
                .filter(|&g| g > 0)
                .ok_or_else(|| arg_error(format!("groups {groups} is not positive")))?,
        })
    }

    fn conv2d(&mut self, node: &Node, args: &Args<'_>, scope: &str) -> Result<(), OnnxError> {
        reject_extra(
            args,
            &[
                "input", "weight", "bias", "stride", "padding", "dilation", "groups",
            ],
        )?;
        let x = self.activation(args.tensor("input").or_shape()?)?;
        let weight = self.stored(args.tensor("weight").or_shape()?)?;
        let bias = match args.optional_tensor("bias").or_shape()? {
            Some(b) => Some(self.stored(b)?),
            None => None,
        };
        let p = Self::conv_params(args)?;
        let out = self.output_name(node, 0)?;
        if let Some((bn_index, bn_node)) = self.foldable_norm(out) {
            let norm = self.norm_params(&Args(bn_node))?;
            let dims = self.stored_dims(&weight)?;
            let channels = dims.first().copied().unwrap_or(0);
            let w_values = self.read(&weight)?;
            let b_values = bias.as_deref().map(|b| self.read(b)).transpose()?;
            let bn = self.read_norm(&norm)?;
            let folded = fold(&w_values, b_values.as_deref(), channels as usize, &bn)?;
            let w = self
                .g
                .weight(&format!("{weight}.fused_bn"), dims, &folded.weight)?;
            let bias_name =
                bias.unwrap_or_else(|| format!("{}.bias", weight.trim_end_matches(".weight")));
            let b = self.g.weight(
                &format!("{bias_name}.fused_bn"),
                vec![channels],
                &folded.bias,
            )?;
            let y = self.g.conv(scope, &x, &w, Some(&b), p)?;
            self.absorbed.insert(bn_index);
            self.bind(bn_node, 0, y)?;
            self.unproduced_from(bn_node, 1);
            return Ok(());
        }
        let w = self.weight(&weight)?;
        let b = bias.as_deref().map(|b| self.weight(b)).transpose()?;
        let y = self.g.conv(scope, &x, &w, b.as_ref(), p)?;
        self.bind(node, 0, y)
    }

    /// The eval-mode BatchNorm that is the only reader of conv output `out`, when folding.
    fn foldable_norm(&self, out: &str) -> Option<(usize, &'p Node)> {
        if !self.fold_bn {
            return None;
        }
        let &[reader] = self.readers_of(out) else {
            return None;
        };
        let node = self.graph.nodes.get(reader)?;
        let args = Args(node);
        let is_norm = node.target == BATCH_NORM || node.target == NATIVE_BATCH_NORM;
        let params_stored = ["weight", "bias", "running_mean", "running_var"]
            .iter()
            .all(|p| match args.optional_tensor(p) {
                Ok(Some(name)) => self.is_stored(name),
                Ok(None) => true,
                Err(_) => false,
            });
        let ok = is_norm
            && args.tensor("input") == Ok(out)
            && params_stored
            && self.norm_params(&args).is_ok();
        ok.then_some((reader, node))
    }

    /// The parameters of an eval-mode `batch_norm` / `_native_batch_norm_legit_no_training`.
    fn norm_params(&self, args: &Args<'_>) -> Result<NormParams, OnnxError> {
        reject_extra(
            args,
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
        )?;
        if args.bool_or("training", false).or_shape()? {
            return Err(arg_error("BatchNorm is in training mode (batch statistics); export the model after `model.eval()`".into()));
        }
        let stored = |name: &str| -> Result<Option<String>, OnnxError> {
            args.optional_tensor(name)
                .or_shape()?
                .map(|t| self.stored(t))
                .transpose()
        };
        let required = |name: &str| -> Result<String, OnnxError> {
            stored(name)?.ok_or_else(|| arg_error(format!("BatchNorm without `{name}` (track_running_stats=False) normalises with batch statistics")))
        };
        Ok(NormParams {
            weight: stored("weight")?,
            bias: stored("bias")?,
            mean: required("running_mean")?,
            var: required("running_var")?,
            eps: args.float_or("eps", 1e-5).or_shape()?,
        })
    }

    /// The BatchNorm's values; an absent weight or bias is ones or zeros, one per entry of
    /// the running mean (read first, so the fill is bounded by a stored record).
    fn read_norm(&mut self, p: &NormParams) -> Result<BatchNorm, OnnxError> {
        let running_mean = self.read(&p.mean)?;
        let running_var = self.read(&p.var)?;
        let n = running_mean.len();
        let mut optional = |fqn: &Option<String>, fill: f32| match fqn {
            Some(f) => self.read(f),
            None => Ok(vec![fill; n]),
        };
        Ok(BatchNorm {
            weight: optional(&p.weight, 1.0)?,
            bias: optional(&p.bias, 0.0)?,
            running_mean,
            running_var,
            eps: p.eps,
        })
    }

    /// A BatchNorm that was not folded: BatchNormalization on the stored names.
    fn batch_norm(&mut self, node: &Node, args: &Args<'_>, scope: &str) -> Result<(), OnnxError> {
        let p = self.norm_params(args)?;
        let x = self.activation(args.tensor("input").or_shape()?)?;
        let m = self.weight(&p.mean)?;
        let v = self.weight(&p.var)?;
        // From the running mean (read, so bounded by its record), not the activation shape.
        let channels = m.dims().iter().product::<u64>();
        let label = node.label();
        let mut param = |fqn: &Option<String>, name: &str, fill: f32| match fqn {
            Some(f) => self.weight(f),
            None => self.g.weight(
                &format!("{label}.{name}"),
                vec![channels],
                &vec![fill; channels as usize],
            ),
        };
        let w = param(&p.weight, "weight", 1.0)?;
        let b = param(&p.bias, "bias", 0.0)?;
        let y = self
            .g
            .batch_norm(scope, &x, [&w, &b, &m, &v], p.eps as f32)?;
        self.bind(node, 0, y)?;
        self.unproduced_from(node, 1);
        Ok(())
    }

    fn conv_transpose2d(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(
            args,
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
        )?;
        let x = self.activation(args.tensor("input").or_shape()?)?;
        let w = self.stored(args.tensor("weight").or_shape()?)?;
        let w = self.weight(&w)?;
        let b = match args.optional_tensor("bias").or_shape()? {
            Some(b) => Some(self.weight(&self.stored(b)?)?),
            None => None,
        };
        let groups = args.int_or("groups", 1).or_shape()?;
        let p = ConvTranspose2d {
            stride: pair(args.sizes_or("stride", 2, &[1]).or_shape()?)?,
            pad: pair(args.sizes_or("padding", 2, &[0]).or_shape()?)?,
            output_padding: pair(args.sizes_or("output_padding", 2, &[0]).or_shape()?)?,
            dilation: pair(args.sizes_or("dilation", 2, &[1]).or_shape()?)?,
            groups: u64::try_from(groups)
                .ok()
                .filter(|&g| g > 0)
                .ok_or_else(|| arg_error(format!("groups {groups} is not positive")))?,
        };
        let y = emit::conv_transpose(&mut self.g, scope, &x, &w, b.as_ref(), p)?;
        self.bind(node, 0, y)
    }

    /// `nn.Linear`: Gemm on `[N, K]`; on `[N, …, K]` a MatMul by the weight transposed once
    /// at export (`<weight>.transposed`), then the bias added.
    fn linear(&mut self, node: &Node, args: &Args<'_>, scope: &str) -> Result<(), OnnxError> {
        reject_extra(args, &["input", "weight", "bias"])?;
        let x = self.activation(args.tensor("input").or_shape()?)?;
        let weight = self.stored(args.tensor("weight").or_shape()?)?;
        let b = match args.optional_tensor("bias").or_shape()? {
            Some(b) => Some(self.weight(&self.stored(b)?)?),
            None => None,
        };
        if x.shape().len() == 1 {
            let w = self.weight(&weight)?;
            let y = self.g.gemm(scope, &x, &w, b.as_ref())?;
            return self.bind(node, 0, y);
        }
        let &[n, k] = self.stored_dims(&weight)?.as_slice() else {
            return Err(arg_error(format!("`{weight}` is not a 2-D linear weight")));
        };
        let values = self.read(&weight)?;
        let transposed = transpose_2d(&values, n, k)
            .ok_or_else(|| arg_error(format!("`{weight}` does not hold {n}×{k} values")))?;
        let w = self
            .g
            .weight(&format!("{weight}.transposed"), vec![k, n], &transposed)?;
        let mut y = self.g.matmul(scope, &x, &w)?;
        if let Some(b) = &b {
            y = emit::binary(
                &mut self.g,
                "Add",
                scope,
                Operand::Activation(&y),
                Operand::Constant(b),
            )?;
        }
        self.bind(node, 0, y)
    }

    fn max_pool(&mut self, node: &Node, args: &Args<'_>, scope: &str) -> Result<(), OnnxError> {
        reject_extra(
            args,
            &[
                "self",
                "kernel_size",
                "stride",
                "padding",
                "dilation",
                "ceil_mode",
            ],
        )?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let kernel = args.sizes_or("kernel_size", 2, &[]).or_shape()?;
        if kernel.len() != 2 {
            return Err(arg_error("max_pool2d without a kernel size".into()));
        }
        let kernel_i64: Vec<i64> = kernel.iter().map(|&k| k as i64).collect();
        if args.sizes_or("dilation", 2, &[1]).or_shape()? != [1, 1] {
            return Err(arg_error("dilated max pooling is not exported".into()));
        }
        let p = Pool2d {
            kernel: pair(kernel)?,
            stride: pair(args.sizes_or("stride", 2, &kernel_i64).or_shape()?)?,
            pad: pair(args.sizes_or("padding", 2, &[0]).or_shape()?)?,
            ceil: args.bool_or("ceil_mode", false).or_shape()?,
        };
        let y = self.g.max_pool(scope, &x, p)?;
        self.bind(node, 0, y)?;
        self.unproduced_from(node, 1);
        Ok(())
    }

    fn avg_pool(&mut self, node: &Node, args: &Args<'_>, scope: &str) -> Result<(), OnnxError> {
        reject_extra(
            args,
            &[
                "self",
                "kernel_size",
                "stride",
                "padding",
                "ceil_mode",
                "count_include_pad",
                "divisor_override",
            ],
        )?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let kernel = args.sizes_or("kernel_size", 2, &[]).or_shape()?;
        if kernel.len() != 2 {
            return Err(arg_error("avg_pool2d without a kernel size".into()));
        }
        let kernel_i64: Vec<i64> = kernel.iter().map(|&k| k as i64).collect();
        let pad = pair(args.sizes_or("padding", 2, &[0]).or_shape()?)?;
        let include_pad = args.bool_or("count_include_pad", true).or_shape()?;
        if args.optional_int("divisor_override").or_shape()?.is_some()
            || args.bool_or("ceil_mode", false).or_shape()?
            || (!include_pad && pad != [0, 0])
        {
            return Err(arg_error(
                "avg_pool2d with ceil_mode, divisor_override or count_include_pad=False over padding is not exported".into(),
            ));
        }
        let p = Pool2d {
            kernel: pair(kernel)?,
            stride: pair(args.sizes_or("stride", 2, &kernel_i64).or_shape()?)?,
            pad,
            ceil: false,
        };
        let y = self.g.average_pool(scope, &x, p)?;
        self.bind(node, 0, y)
    }

    /// `AdaptiveAvgPool2d`: nothing when the size already matches, GlobalAveragePool to
    /// 1×1, one AveragePool when each output size divides the input's.
    fn adaptive_avg_pool(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "output_size"])?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let out = pair(args.sizes_or("output_size", 2, &[]).or_shape()?)?;
        let &[_, h, w] = x.shape() else {
            return Err(arg_error(format!(
                "adaptive_avg_pool2d of per-sample {:?}",
                x.shape()
            )));
        };
        let y = if [h, w] == out {
            x
        } else if out == [1, 1] {
            self.g.global_average_pool(scope, &x)?
        } else if out[0] > 0 && out[1] > 0 && h % out[0] == 0 && w % out[1] == 0 {
            let k = [h / out[0], w / out[1]];
            let p = Pool2d {
                kernel: k,
                stride: k,
                pad: [0, 0],
                ceil: false,
            };
            self.g.average_pool(scope, &x, p)?
        } else {
            return Err(arg_error(format!(
                "AdaptiveAvgPool2d({out:?}) on a {h}×{w} map has uneven windows, which no ATC-safe op computes; export at an input size whose feature map is a multiple of {out:?}"
            )));
        };
        self.bind(node, 0, y)
    }

    fn mean(&mut self, node: &Node, args: &Args<'_>, scope: &str) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "dim", "keepdim", "dtype"])?;
        if !matches!(args.get("dtype"), None | Some(Argument::None)) {
            return Err(arg_error("mean with a dtype is not exported".into()));
        }
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let rank = x.shape().len() + 1;
        let dims = match args.get("dim") {
            None | Some(Argument::None) => (0..rank as i64).collect(),
            Some(Argument::Ints(d)) if d.is_empty() => (0..rank as i64).collect(),
            Some(Argument::Ints(d)) => d.clone(),
            Some(other) => return Err(arg_error(format!("argument `dim` is {}", other.kind()))),
        };
        let mut axes = dims
            .iter()
            .map(|&d| per_sample_axis(d, rank))
            .collect::<Result<Vec<_>, _>>()?;
        axes.sort_unstable();
        axes.dedup();
        let keep = args.bool_or("keepdim", false).or_shape()?;
        let y = if x.shape().len() == 3 && axes == [1, 2] {
            let pooled = self.g.global_average_pool(scope, &x)?;
            if keep {
                pooled
            } else {
                self.g.reshape(scope, &pooled, &x.shape()[..1])?
            }
        } else {
            self.g.reduce_mean(scope, &x, &axes, keep)?
        };
        self.bind(node, 0, y)
    }

    /// `softmax` over `dim`: ONNX Softmax over the last axis (exact at every opset), with
    /// `dim` swapped to the last axis and back when it is another one.
    fn softmax(&mut self, node: &Node, args: &Args<'_>, scope: &str) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "dim", "dtype", "half_to_float"])?;
        let converts = !matches!(args.get("dtype"), None | Some(Argument::None))
            || args.bool_or("half_to_float", false).or_shape()?;
        if converts {
            return Err(arg_error(
                "softmax with a dtype change is not exported".into(),
            ));
        }
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let axis = per_sample_axis(args.int_or("dim", -1).or_shape()?, x.shape().len() + 1)?;
        let last = x.shape().len() - 1;
        let y = if axis == last {
            self.g.softmax(scope, &x)
        } else {
            let mut perm: Vec<usize> = (0..=last).collect();
            perm.swap(axis, last);
            let moved = self.g.transpose(scope, &x, &perm)?;
            let y = self.g.softmax(scope, &moved);
            self.g.transpose(scope, &y, &perm)?
        };
        self.bind(node, 0, y)
    }

    /// Exact `gelu` (`approximate='none'`); the tanh approximation is refused.
    fn gelu(&mut self, node: &Node, args: &Args<'_>, scope: &str) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "approximate"])?;
        match args.get("approximate") {
            None => {}
            Some(Argument::String(mode)) if mode == "none" => {}
            Some(other) => {
                return Err(arg_error(format!(
                    "gelu with approximate={other:?} is not exported (only the exact form)"
                )))
            }
        }
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let y = self.g.gelu(scope, &x)?;
        self.bind(node, 0, y)
    }

    /// `layer_norm` over the last axis (a one-element `normalized_shape`), decomposed.
    fn layer_norm(&mut self, node: &Node, args: &Args<'_>, scope: &str) -> Result<(), OnnxError> {
        reject_extra(
            args,
            &[
                "input",
                "normalized_shape",
                "weight",
                "bias",
                "eps",
                "cudnn_enable",
            ],
        )?;
        let x = self.activation(args.tensor("input").or_shape()?)?;
        let Some(&width) = x.shape().last() else {
            return Err(arg_error(
                "layer_norm of a tensor with only a batch axis".into(),
            ));
        };
        let normalized = args.ints_or("normalized_shape", 1, &[]).or_shape()?;
        if normalized != [width as i64] {
            return Err(arg_error(format!(
                "layer_norm over {normalized:?} of per-sample {:?}: only the last axis is exported",
                x.shape()
            )));
        }
        let mut affine = [None, None];
        for (slot, name) in affine.iter_mut().zip(["weight", "bias"]) {
            if let Some(t) = args.optional_tensor(name).or_shape()? {
                *slot = Some(self.weight(&self.stored(t)?)?);
            }
        }
        let eps = args.float_or("eps", 1e-5).or_shape()? as f32;
        let axis = x.shape().len() - 1;
        let [gamma, beta] = &affine;
        let y = self
            .g
            .layer_norm(scope, &x, axis, [gamma.as_ref(), beta.as_ref()], eps)?;
        self.bind(node, 0, y)
    }

    fn binary(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        op: &'static str,
    ) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "other", "alpha"])?;
        if args.float_or("alpha", 1.0).or_shape()? != 1.0 {
            return Err(arg_error("add/sub with alpha ≠ 1 is not exported".into()));
        }
        let a = self.elementwise(args, "self", scope)?;
        let b = self.elementwise(args, "other", scope)?;
        if matches!(
            (&a, &b),
            (Elementwise::Constant(_), Elementwise::Constant(_))
        ) {
            return Err(arg_error(
                "both operands are constants; ops on constants alone are not exported".into(),
            ));
        }
        let y = emit::binary(&mut self.g, op, scope, a.operand(), b.operand())?;
        self.bind(node, 0, y)
    }

    /// An element-wise operand: an activation, a stored tensor or a scalar.
    fn elementwise(
        &mut self,
        args: &Args<'_>,
        name: &str,
        scope: &str,
    ) -> Result<Elementwise, OnnxError> {
        match args.get(name) {
            Some(Argument::Tensor(t)) if self.is_stored(t) => {
                Ok(Elementwise::Constant(self.weight(&self.stored(t)?)?))
            }
            Some(Argument::Tensor(t)) => Ok(Elementwise::Activation(self.activation(t)?)),
            Some(Argument::Int(i)) => Ok(Elementwise::Constant(
                self.g
                    .constant_scalar(&format!("{scope}.scalar"), *i as f32),
            )),
            Some(Argument::Float(f)) => Ok(Elementwise::Constant(
                self.g
                    .constant_scalar(&format!("{scope}.scalar"), *f as f32),
            )),
            Some(other) => Err(arg_error(format!("argument `{name}` is {}", other.kind()))),
            None => Err(arg_error(format!("argument `{name}` is missing"))),
        }
    }

    fn cat(&mut self, node: &Node, args: &Args<'_>, scope: &str) -> Result<(), OnnxError> {
        reject_extra(args, &["tensors", "dim"])?;
        let xs = args
            .tensors("tensors")
            .or_shape()?
            .iter()
            .map(|t| self.activation(t))
            .collect::<Result<Vec<_>, _>>()?;
        let rank = xs.first().map_or(1, |x| x.shape().len() + 1);
        let axis = per_sample_axis(args.int_or("dim", 0).or_shape()?, rank)?;
        let refs: Vec<&Value> = xs.iter().collect();
        let y = self.g.concat(scope, &refs, axis)?;
        self.bind(node, 0, y)
    }

    fn flatten(&mut self, node: &Node, args: &Args<'_>, scope: &str) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "start_dim", "end_dim"])?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let rank = x.shape().len() + 1;
        let start = per_sample_axis(args.int_or("start_dim", 0).or_shape()?, rank)?;
        let end = per_sample_axis(args.int_or("end_dim", -1).or_shape()?, rank)?;
        let y = if start == 0 && end + 1 == x.shape().len() {
            self.g.flatten(scope, &x)
        } else {
            let shape = self.recorded_shape(self.output_name(node, 0)?)?;
            self.reshaped(scope, &x, &shape)?
        };
        self.bind(node, 0, y)
    }

    /// `view`/`reshape`: the size list must lead with the batch (a symbol equal to it, `-1`,
    /// or, in a program traced at a fixed batch, that literal size, which is rewritten to
    /// follow the batch); it becomes a Reshape to `[0, per-sample sizes…]`.
    fn reshape(&mut self, node: &Node, args: &Args<'_>, scope: &str) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "size", "shape"])?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let sizes = args.get("size").or(args.get("shape"));
        let leads_with_batch = match sizes {
            Some(Argument::Ints(v)) => v
                .first()
                .is_some_and(|&n| n == -1 || self.batch.is(&SymInt::Int(n))),
            Some(Argument::SymInts(v)) => match v.first() {
                Some(SymInt::Name(name)) => self.is_batch_symbol(name),
                Some(SymInt::Int(n)) => *n == -1 || self.batch.is(&SymInt::Int(*n)),
                Some(expr) => self.batch.is(expr),
                None => false,
            },
            _ => false,
        };
        if !leads_with_batch {
            return Err(arg_error(format!(
                "its size list does not start with the batch ({}), so it folds the batch into other dimensions; reshape as x.view(x.size(0), …) or x.flatten(1)",
                self.batch
            )));
        }
        let shape = self.recorded_shape(self.output_name(node, 0)?)?;
        let y = self.reshaped(scope, &x, &shape)?;
        self.bind(node, 0, y)
    }

    /// `x` reshaped to per-sample `shape`, or `x` itself when it already has it.
    fn reshaped(&mut self, scope: &str, x: &Value, shape: &[u64]) -> Result<Value, OnnxError> {
        if x.shape() == shape {
            Ok(x.clone())
        } else {
            self.g.reshape(scope, x, shape)
        }
    }

    /// `x[:, a:b]`: a step-1 slice of a per-sample dimension (Python's clamping of
    /// negative and out-of-range bounds), or nothing when it keeps the whole dimension. The
    /// batch dimension can only be kept whole.
    fn slice(&mut self, node: &Node, args: &Args<'_>, scope: &str) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "dim", "start", "end", "step"])?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let rank = x.shape().len() + 1;
        let dim = args.int_or("dim", 0).or_shape()?;
        let start = args.optional_int("start").or_shape()?.unwrap_or(0);
        let end = args.optional_int("end").or_shape()?.unwrap_or(i64::MAX);
        let step = args.int_or("step", 1).or_shape()?;
        let axis = match per_sample_axis(dim, rank) {
            Ok(axis) => axis,
            Err(_)
                if (dim == 0 || dim == -(rank as i64))
                    && start == 0
                    && end == i64::MAX
                    && step == 1 =>
            {
                return self.bind(node, 0, x);
            }
            Err(e) => return Err(e),
        };
        if step != 1 {
            return Err(arg_error(format!(
                "slicing with step {step} is not exported"
            )));
        }
        let size = x.shape()[axis];
        let clamp = |i: i64| -> u64 {
            let i = if i < 0 {
                i.saturating_add(size as i64)
            } else {
                i
            };
            i.clamp(0, size as i64) as u64
        };
        let (from, to) = (clamp(start), clamp(end));
        let y = if (from, to) == (0, size) {
            x
        } else {
            self.g.slice(scope, &x, axis, from..to)?
        };
        self.bind(node, 0, y)
    }

    /// `permute` / `transpose` of per-sample axes; the batch must stay first.
    fn permute(&mut self, node: &Node, args: &Args<'_>, scope: &str) -> Result<(), OnnxError> {
        reject_extra(args, &["self", "dims", "dim0", "dim1"])?;
        let x = self.activation(args.tensor("self").or_shape()?)?;
        let rank = x.shape().len() + 1;
        let full: Vec<i64> = match args.get("dims") {
            Some(Argument::Ints(dims)) => dims.clone(),
            Some(other) => return Err(arg_error(format!("argument `dims` is {}", other.kind()))),
            None => {
                let mut order: Vec<i64> = (0..rank as i64).collect();
                let norm = |d: i64| if d < 0 { d + rank as i64 } else { d };
                let (a, b) = (
                    norm(args.int_or("dim0", 0).or_shape()?),
                    norm(args.int_or("dim1", 0).or_shape()?),
                );
                let in_range = |d: i64| (0..rank as i64).contains(&d);
                if !in_range(a) || !in_range(b) {
                    return Err(arg_error(format!(
                        "transpose of dimensions {a}, {b} of a rank-{rank} tensor"
                    )));
                }
                order.swap(a as usize, b as usize);
                order
            }
        };
        let Some((&first, rest)) = full.split_first() else {
            return Err(arg_error("permute of no dimensions".into()));
        };
        if first != 0 && first != -(rank as i64) {
            return Err(arg_error(format!(
                "permutation {full:?} moves the batch away from the first dimension"
            )));
        }
        let perm = rest
            .iter()
            .map(|&d| per_sample_axis(d, rank))
            .collect::<Result<Vec<_>, _>>()?;
        let y = if perm.iter().enumerate().all(|(i, &p)| i == p) {
            x
        } else {
            self.g.transpose(scope, &x, &perm)?
        };
        self.bind(node, 0, y)
    }

    /// `upsample_nearest2d` (`align_corners` = `None`) and `upsample_bilinear2d`.
    fn upsample(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
        align_corners: Option<bool>,
    ) -> Result<(), OnnxError> {
        reject_extra(
            args,
            &[
                "input",
                "output_size",
                "align_corners",
                "scale_factors",
                "scales_h",
                "scales_w",
            ],
        )?;
        let x = self.activation(args.tensor("input").or_shape()?)?;
        let out_name = self.output_name(node, 0)?;
        let recorded = self.recorded_shape(out_name)?;
        let &[_, out_h, out_w] = recorded.as_slice() else {
            return Err(arg_error(format!("upsampling to per-sample {recorded:?}")));
        };
        // Scale factors that do not give whole output sizes would make torch's source
        // index use the factor, not out/in; only exact factors are exported.
        let &[_, h, w] = x.shape() else {
            return Err(arg_error(format!(
                "upsampling a per-sample {:?} input",
                x.shape()
            )));
        };
        let factors: Vec<f64> = match args.optional_floats("scale_factors").or_shape()? {
            Some(f) => f.to_vec(),
            None => ["scales_h", "scales_w"]
                .iter()
                .filter_map(|k| match args.get(k) {
                    Some(Argument::Float(f)) => Some(*f),
                    _ => None,
                })
                .collect(),
        };
        let exact = factors.is_empty()
            || (factors.len() == 2
                && factors[0] * h as f64 == out_h as f64
                && factors[1] * w as f64 == out_w as f64);
        if !exact {
            return Err(arg_error(format!(
                "scale factors {factors:?} on {h}×{w} do not give whole sizes ({out_h}×{out_w}); pass size= instead"
            )));
        }
        let mode = match align_corners {
            None => Interpolation::Nearest,
            Some(true) => Interpolation::BilinearAlignCorners,
            Some(false) => Interpolation::BilinearHalfPixel,
        };
        let y = emit::resize(&mut self.g, scope, node.label(), &x, [out_h, out_w], mode)?;
        self.bind(node, 0, y)
    }
}

/// A row-major `rows × cols` matrix transposed, or `None` if `values` is not that size.
fn transpose_2d(values: &[f32], rows: u64, cols: u64) -> Option<Vec<f32>> {
    let (r, c) = (usize::try_from(rows).ok()?, usize::try_from(cols).ok()?);
    if r.checked_mul(c)? != values.len() {
        return None;
    }
    Some(
        (0..c)
            .flat_map(|j| (0..r).map(move |i| values[i * c + j]))
            .collect(),
    )
}

/// An operand of an element-wise op, owned.
enum Elementwise {
    Activation(Value),
    Constant(crate::onnx::graph::Weight),
}

impl Elementwise {
    fn operand(&self) -> Operand<'_> {
        match self {
            Elementwise::Activation(v) => Operand::Activation(v),
            Elementwise::Constant(w) => Operand::Constant(w),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transposes_row_major_matrices() {
        assert_eq!(
            transpose_2d(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3),
            Some(vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0])
        );
        assert_eq!(transpose_2d(&[1.0], 2, 3), None);
    }

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
