//! Convolutions (BatchNorm folded into the conv that feeds it), transposed convolutions,
//! BatchNorm on its own and `linear`.

use crate::fold::{fold, folded_bias, scales, BatchNorm};
use crate::graph::Value;
use crate::ops::ConvNd;
use crate::store::Transform;
use crate::OnnxError;
use ckpt_aten::program::{Argument, Node};
use ckpt_aten::refused;

use super::super::emit::{self, ConvTranspose};
use super::super::lower::{Constant, Lowering};
use super::super::tensor::{self, Placement, Size, Tensor};
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

/// The BatchNorm read from a `batch_norm`-like node: its constants and epsilon.
struct NormParams {
    weight: Option<Constant>,
    bias: Option<Constant>,
    mean: Constant,
    var: Constant,
    eps: f64,
}

const BATCH_NORM: &str = "torch.ops.aten.batch_norm.default";
const NATIVE_BATCH_NORM: &str = "torch.ops.aten._native_batch_norm_legit_no_training.default";

impl<'p> Lowering<'p, '_> {
    /// The spatial axes of a convolution by stored weight `weight` (`[O, C, k…]`).
    pub(super) fn conv_rank(&self, weight: &Constant) -> Result<usize, OnnxError> {
        let dims = self.constant_dims(weight)?;
        match dims.len() {
            3..=5 => Ok(dims.len() - 2),
            _ => Err(arg_error(format!(
                "`{weight}` {dims:?} is not a 1-D, 2-D or 3-D convolution weight"
            ))),
        }
    }

    pub(super) fn groups(args: &Args<'_>) -> Result<u64, OnnxError> {
        let groups = args.int("groups").or_shape()?;
        u64::try_from(groups)
            .ok()
            .filter(|&g| g > 0)
            .ok_or_else(|| arg_error(format!("groups {groups} is not positive")))
    }

    /// A layer's stored arguments `weight` and `bias` (optional): `conv*`,
    /// `conv_transpose*`, `linear`.
    fn weight_and_bias(&self, args: &Args<'_>) -> Result<(Constant, Option<Constant>), OnnxError> {
        let weight = self.constant(args.tensor("weight").or_shape()?)?;
        let bias = match args.optional_tensor("bias").or_shape()? {
            Some(b) => Some(self.constant(b)?),
            None => None,
        };
        Ok((weight, bias))
    }

    /// The input of a convolution over `rank` spatial axes: by rows, or, when it is a
    /// static unbatched `[C, spatial…]` tensor as torch takes it, lifted as one sample
    /// (its channels are mixed, so its first axis is never rows).
    fn conv_input(&mut self, name: &str, rank: usize) -> Result<Value, OnnxError> {
        let t = self.tensor(name)?;
        if t.placement() == Placement::Static && t.rank() == rank + 1 {
            self.lifted_activation(name)
        } else {
            self.activation(name)
        }
    }

    /// `conv1d`, `conv2d`, `conv3d`, a BatchNorm reading only its output folded in.
    pub(super) fn conv(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let (weight, bias) = self.weight_and_bias(args)?;
        let rank = self.conv_rank(&weight)?;
        let x = self.conv_input(args.tensor("input").or_shape()?, rank)?;
        let stride = args.sizes("stride", rank).or_shape()?;
        let dilation = args.sizes("dilation", rank).or_shape()?;
        let pad = match args.get("padding") {
            Some(Argument::String(mode)) => {
                let kernel = &self.constant_dims(&weight)?[2..];
                padding_for(mode, kernel, &stride, &dilation)?
            }
            // `conv*.padding` defaults to the string "valid", which is no padding.
            _ => args.sizes_or("padding", rank, &[0]).or_shape()?,
        };
        let p = ConvNd {
            stride,
            pad,
            dilation,
            groups: Self::groups(args)?,
        };
        let out = self.output_name(node, 0)?;
        if let Some((bn_index, bn_node)) = self.foldable_norm(out) {
            let norm = self.norm_params(&Args(bn_node))?;
            let (w, b) = self.fused_conv(&weight, bias.as_ref(), &norm)?;
            let y = self.g.conv_nd(scope, &x, &w, Some(&b), &p)?;
            self.absorbed.insert(bn_index);
            self.bind(bn_node, 0, y)?;
            self.unproduced_from(bn_node, 1);
            return Ok(());
        }
        let w = self.weight(&weight)?;
        let b = bias.as_ref().map(|b| self.weight(b)).transpose()?;
        let y = self.g.conv_nd(scope, &x, &w, b.as_ref(), &p)?;
        self.bind(node, 0, y)
    }

    /// `weight` and `bias` with the BatchNorm `norm` folded in, as initializers named by
    /// [`Lowering::fused_names`], written once however many calls fold the same pair.
    fn fused_conv(
        &mut self,
        weight: &Constant,
        bias: Option<&Constant>,
        norm: &NormParams,
    ) -> Result<(crate::graph::Weight, crate::graph::Weight), OnnxError> {
        let key = (weight.clone(), bias.cloned(), norm.mean.clone());
        if let Some(fused) = self.fused.get(&key) {
            return Ok(fused.clone());
        }
        let dims = self.constant_dims(weight)?;
        let channels = dims.first().copied().unwrap_or(0);
        let b_values = bias.map(|b| self.read(b)).transpose()?;
        let bn = self.read_norm(norm)?;
        let numel = usize::try_from(dims.iter().product::<u64>())
            .map_err(|_| arg_error(format!("the weight `{weight}` is too large")))?;
        let scale = scales(
            &bn,
            channels as usize,
            numel,
            b_values.as_ref().map(Vec::len),
        )?;
        let [name, bias_name] = self.fused_names(weight, bias);
        // Each output channel scaled as the file is written when the weight is mapped.
        let w = match self.deferred(weight, Transform::ScaleRows(scale.clone().into())) {
            Some(bytes) => self.g.deferred_weight(&name, dims, bytes)?,
            None => {
                let w_values = self.read(weight)?;
                let folded = fold(&w_values, b_values.as_deref(), channels as usize, &bn)?;
                self.g.weight(&name, dims, &folded.weight)?
            }
        };
        let b = self.g.weight(
            &bias_name,
            vec![channels],
            &folded_bias(b_values.as_deref(), &bn, &scale),
        )?;
        self.fused.insert(key, (w.clone(), b.clone()));
        Ok((w, b))
    }

    /// The initializer names of `weight` and `bias` with a BatchNorm folded in:
    /// `<weight>.fused_bn` and `<bias>.fused_bn` ([`fused_bias_name`]), numbered on (`.1`,
    /// …) when other BatchNorms folded the same weight before.
    fn fused_names(&self, weight: &Constant, bias: Option<&Constant>) -> [String; 2] {
        let earlier = self.fused.keys().filter(|(w, _, _)| w == weight).count();
        [format!("{weight}.fused_bn"), fused_bias_name(weight, bias)].map(|name| match earlier {
            0 => name,
            k => format!("{name}.{k}"),
        })
    }

    /// `convolution` (what `conv2d` and `conv_transpose2d` decompose into): by its
    /// `transposed` flag, [`Lowering::conv`] or [`Lowering::conv_transpose`], which read
    /// the same argument names. A non-transposed one with an `output_padding` is refused.
    pub(super) fn convolution(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        if args.bool("transposed").or_shape()? {
            return self.conv_transpose(node, args, scope);
        }
        let padded = match args.get("output_padding") {
            None | Some(Argument::None) => false,
            Some(Argument::Ints(pads)) => pads.iter().any(|&p| p != 0),
            Some(_) => true,
        };
        if padded {
            return Err(arg_error(
                "an output_padding on a convolution that is not transposed is not exported".into(),
            ));
        }
        self.conv(node, args, scope)
    }

    /// `im2col` (`F.unfold`): every `kH×kW` patch of each channel as a column, a depthwise
    /// Conv by one-hot kernels (output channel `c·kH·kW + i·kW + j` picks offset `(i, j)`
    /// of channel `c`, torch's order), then a Reshape to `[C·kH·kW, L]`.
    pub(super) fn im2col(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let input = args.tensor("self").or_shape()?;
        let x = self.activation(input)?;
        let &[c, _, _] = x.shape() else {
            return Err(arg_error(format!(
                "im2col of per-sample {:?}; only [C, H, W] inputs are exported",
                x.shape()
            )));
        };
        let kernel = args.sizes("kernel_size", 2).or_shape()?;
        let &[kh, kw] = kernel.as_slice() else {
            return Err(arg_error("im2col without a 2-D kernel_size".into()));
        };
        let p = ConvNd {
            stride: args.sizes("stride", 2).or_shape()?,
            pad: args.sizes("padding", 2).or_shape()?,
            dilation: args.sizes("dilation", 2).or_shape()?,
            groups: c,
        };
        let w = self.one_hot_kernels(&format!("{scope}.im2col"), c, [kh, kw])?;
        let patches = self.g.conv_nd(scope, &x, &w, None, &p)?;
        let rows = self.rows_read()?;
        let target = self.recorded_sizes(node, 0)?;
        let y = tensor::Tensor::from_rows(rows, patches).reshaped(&mut self.g, scope, &target)?;
        self.bind_tensor(node, 0, y)
    }

    /// The depthwise kernels `[C·kH·kW, 1, kH, kW]` of [`Lowering::im2col`] and
    /// [`Lowering::col2im`]: output channel `c·kH·kW + t` is 1 at tap `t` of its window.
    fn one_hot_kernels(
        &mut self,
        name: &str,
        channels: u64,
        [kh, kw]: [u64; 2],
    ) -> Result<crate::graph::Weight, OnnxError> {
        let too_many = || arg_error(format!("patches of {channels} channels by {kh}×{kw}"));
        let taps = kh.checked_mul(kw).ok_or_else(too_many)?;
        let rows = channels.checked_mul(taps).ok_or_else(too_many)?;
        let count = rows
            .checked_mul(taps)
            .filter(|&n| n <= ckpt_aten::eval::MAX_ELEMENTS)
            .ok_or_else(too_many)?;
        let mut one_hot = vec![0.0; count as usize];
        for oc in 0..rows {
            one_hot[(oc * taps + oc % taps) as usize] = 1.0;
        }
        self.g.folded(name, vec![rows, 1, kh, kw], &one_hot)
    }

    /// `col2im` (`F.fold`), the inverse of [`Lowering::im2col`]: the columns viewed as
    /// `[C·kH·kW, oH, oW]` and summed back into place by a depthwise ConvTranspose with
    /// the same one-hot kernels, its output padding chosen to give `output_size`.
    pub(super) fn col2im(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let input = args.tensor("self").or_shape()?;
        let t = self.tensor(input)?;
        let kernel = args.sizes("kernel_size", 2).or_shape()?;
        let out = args.sizes("output_size", 2).or_shape()?;
        let stride = args.sizes("stride", 2).or_shape()?;
        let pad = args.sizes("padding", 2).or_shape()?;
        let dilation = args.sizes("dilation", 2).or_shape()?;
        let (&[kh, kw], &[h, w]) = (kernel.as_slice(), out.as_slice()) else {
            return Err(arg_error(
                "col2im without 2-D kernel and output sizes".into(),
            ));
        };
        let &[rows, _] = t.value().shape() else {
            return Err(arg_error(
                "col2im of columns that are not [C·kH·kW, L]".into(),
            ));
        };
        let taps = kh * kw;
        if taps == 0 || rows % taps != 0 || stride.contains(&0) {
            return Err(arg_error(format!(
                "col2im of {rows} rows by a {kh}×{kw} kernel"
            )));
        }
        let c = rows / taps;
        // Patch positions per axis, as im2col counts them.
        let positions = |size: u64, k: u64, s: u64, p: u64, d: u64| {
            (size + 2 * p)
                .checked_sub(d * (k - 1) + 1)
                .map(|span| span / s + 1)
        };
        let (Some(oh), Some(ow)) = (
            positions(h, kh, stride[0], pad[0], dilation[0]),
            positions(w, kw, stride[1], pad[1], dilation[1]),
        ) else {
            return Err(arg_error(
                "col2im with a kernel larger than its output".into(),
            ));
        };
        let grid = vec![
            self.rows_of(&t)?.size(),
            Size::fixed(rows),
            Size::fixed(oh),
            Size::fixed(ow),
        ];
        let x = t.reshaped(&mut self.g, scope, &grid)?;
        let reach = |n: u64, k: u64, s: u64, p: u64, d: u64| {
            ((n - 1) * s + d * (k - 1) + 1).checked_sub(2 * p)
        };
        let output_padding = [
            reach(oh, kh, stride[0], pad[0], dilation[0]).and_then(|r| h.checked_sub(r)),
            reach(ow, kw, stride[1], pad[1], dilation[1]).and_then(|r| w.checked_sub(r)),
        ];
        let [Some(ph), Some(pw)] = output_padding else {
            return Err(arg_error(
                "col2im whose output size its patches do not reach".into(),
            ));
        };
        let kernels = self.one_hot_kernels(&format!("{scope}.col2im"), c, [kh, kw])?;
        let p = ConvTranspose {
            stride,
            pad,
            output_padding: vec![ph, pw],
            dilation,
            groups: c,
        };
        let y = emit::conv_transpose(&mut self.g, scope, x.value(), &kernels, None, &p)?;
        self.bind_tensor(node, 0, x.with_value(y)?)
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
        let params_constant = ["weight", "bias", "running_mean", "running_var"]
            .iter()
            .all(|p| match args.optional_tensor(p) {
                Ok(Some(name)) => self.is_constant(name),
                Ok(None) => true,
                Err(_) => false,
            });
        let ok = is_norm
            && args.tensor("input") == Ok(out)
            && params_constant
            && self.norm_params(&args).is_ok();
        ok.then_some((reader, node))
    }

    /// The parameters of an eval-mode `batch_norm` / `_native_batch_norm_legit_no_training`.
    fn norm_params(&self, args: &Args<'_>) -> Result<NormParams, OnnxError> {
        if args.bool_or("training", false).or_shape()? {
            return Err(arg_error(refused::BATCH_STATISTICS.into()));
        }
        let constant = |name: &str| -> Result<Option<Constant>, OnnxError> {
            args.optional_tensor(name)
                .or_shape()?
                .map(|t| self.constant(t))
                .transpose()
        };
        let required = |name: &str| -> Result<Constant, OnnxError> {
            constant(name)?.ok_or_else(|| arg_error(format!("BatchNorm without `{name}` (track_running_stats=False) normalises with batch statistics")))
        };
        Ok(NormParams {
            weight: constant("weight")?,
            bias: constant("bias")?,
            mean: required("running_mean")?,
            var: required("running_var")?,
            eps: args.float("eps").or_shape()?,
        })
    }

    /// The BatchNorm's values; an absent weight or bias is ones or zeros, one per entry of
    /// the running mean (read first, so the fill is bounded by a stored record).
    fn read_norm(&mut self, p: &NormParams) -> Result<BatchNorm, OnnxError> {
        let running_mean = self.read(&p.mean)?;
        let running_var = self.read(&p.var)?;
        let n = running_mean.len();
        let mut optional = |fqn: &Option<Constant>, fill: f32| match fqn {
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

    /// A BatchNorm that was not folded: BatchNormalization on its constants.
    pub(super) fn batch_norm(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let p = self.norm_params(args)?;
        let x = self.activation(args.tensor("input").or_shape()?)?;
        let m = self.weight(&p.mean)?;
        let v = self.weight(&p.var)?;
        // From the running mean (read, so bounded by its record), not the activation shape.
        let channels = m.dims().iter().product::<u64>();
        let label = node.label();
        let mut param = |fqn: &Option<Constant>, name: &str, fill: f32| match fqn {
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

    /// `conv_transpose1d`, `conv_transpose2d`, `conv_transpose3d`, an ungrouped one with a
    /// BatchNorm reading only its output folded in.
    pub(super) fn conv_transpose(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let (weight, bias) = self.weight_and_bias(args)?;
        let rank = self.conv_rank(&weight)?;
        let x = self.conv_input(args.tensor("input").or_shape()?, rank)?;
        let p = ConvTranspose {
            stride: args.sizes("stride", rank).or_shape()?,
            pad: args.sizes("padding", rank).or_shape()?,
            output_padding: args.sizes("output_padding", rank).or_shape()?,
            dilation: args.sizes("dilation", rank).or_shape()?,
            groups: Self::groups(args)?,
        };
        let out = self.output_name(node, 0)?;
        if let (1, Some((bn_index, bn_node))) = (p.groups, self.foldable_norm(out)) {
            let (w, b) = self.fold_into_transposed(&weight, bias.as_ref(), bn_node)?;
            let y = emit::conv_transpose(&mut self.g, scope, &x, &w, Some(&b), &p)?;
            self.absorbed.insert(bn_index);
            self.bind(bn_node, 0, y)?;
            self.unproduced_from(bn_node, 1);
            return Ok(());
        }
        let w = self.weight(&weight)?;
        let b = bias.as_ref().map(|b| self.weight(b)).transpose()?;
        let y = emit::conv_transpose(&mut self.g, scope, &x, &w, b.as_ref(), &p)?;
        self.bind(node, 0, y)
    }

    /// The BatchNorm `bn_node` folded into an ungrouped transposed convolution's weight
    /// `[C, O, k…]` (output channels on axis 1, swapped first for [`fold`] and back) and
    /// bias, named by [`Lowering::fused_names`], written once however many calls fold the
    /// same pair.
    fn fold_into_transposed(
        &mut self,
        weight: &Constant,
        bias: Option<&Constant>,
        bn_node: &Node,
    ) -> Result<(crate::graph::Weight, crate::graph::Weight), OnnxError> {
        let norm = self.norm_params(&Args(bn_node))?;
        let key = (weight.clone(), bias.cloned(), norm.mean.clone());
        if let Some(fused) = self.fused.get(&key) {
            return Ok(fused.clone());
        }
        let dims = self.constant_dims(weight)?;
        let &[c, o, ref kernel @ ..] = dims.as_slice() else {
            return Err(arg_error(format!(
                "`{weight}` is not a transposed conv weight"
            )));
        };
        let values = self.read(weight)?;
        let kernel = kernel
            .iter()
            .try_fold(1u64, |n, &k| n.checked_mul(k))
            .unwrap_or(0);
        let outputs_first = swap_leading(&values, c, o, kernel)
            .ok_or_else(|| arg_error(format!("`{weight}` does not hold {dims:?} values")))?;
        let b_values = bias.map(|b| self.read(b)).transpose()?;
        let bn = self.read_norm(&norm)?;
        let folded = fold(&outputs_first, b_values.as_deref(), o as usize, &bn)?;
        let back = swap_leading(&folded.weight, o, c, kernel)
            .ok_or_else(|| arg_error(format!("`{weight}` does not hold {dims:?} values")))?;
        let [name, bias_name] = self.fused_names(weight, bias);
        let w = self.g.weight(&name, dims, &back)?;
        let b = self.g.weight(&bias_name, vec![o], &folded.bias)?;
        self.fused.insert(key, (w.clone(), b.clone()));
        Ok((w, b))
    }

    /// `nn.Linear`: Gemm on `[N, K]` (or a static matrix); on `[…, K]` (the batch on any dimension but the last)
    /// a MatMul by the weight transposed once at export (`<weight>.transposed`), then the
    /// bias added.
    pub(super) fn linear(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let input = args.tensor("input").or_shape()?;
        let (weight, bias) = self.weight_and_bias(args)?;
        let x = self.tensor(input)?;
        x.sample_axis(x.rank() - 1, "linear")?;
        let y = match x.as_rows() {
            // Gemm multiplies the rows (the batch, or a static matrix's first dimension),
            // so its result is laid out as those rows, not as the whole input.
            Some((rows, value)) if x.rank() == 2 => {
                let w = self.weight(&weight)?;
                let b = match &bias {
                    Some(b) => Some(self.weight(b)?),
                    None => None,
                };
                let y = self.g.gemm(scope, &value, &w, b.as_ref())?;
                Tensor::from_rows(rows, y)
            }
            _ => {
                let y = self.linear_value(x.value(), &weight, bias.as_ref(), scope)?;
                x.with_value(y)?
            }
        };
        self.bind_tensor(node, 0, y)
    }
}

/// A row-major `[a, b, inner]` tensor as `[b, a, inner]`, or `None` if `values` is not
/// that size.
fn swap_leading(values: &[f32], a: u64, b: u64, inner: u64) -> Option<Vec<f32>> {
    let (a, b, inner) = (
        usize::try_from(a).ok()?,
        usize::try_from(b).ok()?,
        usize::try_from(inner).ok()?,
    );
    if a.checked_mul(b)?.checked_mul(inner)? != values.len() {
        return None;
    }
    Some(
        (0..b)
            .flat_map(|j| (0..a).map(move |i| (i * b + j) * inner))
            .flat_map(|start| values[start..start + inner].iter().copied())
            .collect(),
    )
}

/// The symmetric padding of `conv2d(..., padding="same" | "valid")` (`conv2d.padding`):
/// `valid` none; `same` half of `dilation·(kernel − 1)` on each side, which must be even
/// (torch pads the odd extra on one side only, which ONNX's symmetric pads cannot say) and
/// needs stride 1, as torch requires.
fn padding_for(
    mode: &str,
    kernel: &[u64],
    stride: &[u64],
    dilation: &[u64],
) -> Result<Vec<u64>, OnnxError> {
    match mode {
        "valid" => Ok(vec![0; kernel.len()]),
        "same" if stride.iter().all(|&s| s == 1) => kernel
            .iter()
            .zip(dilation)
            .map(|(&k, &d)| {
                let total = d * k.saturating_sub(1);
                if total % 2 == 0 {
                    Ok(total / 2)
                } else {
                    Err(arg_error(format!(
                        "padding='same' with kernel {k} and dilation {d} pads one side more than the other, which is not exported"
                    )))
                }
            })
            .collect(),
        other => Err(arg_error(format!(
            "padding={other:?} with stride {stride:?} is not exported"
        ))),
    }
}

/// A row-major `rows × cols` matrix transposed, or `None` if `values` is not that size.
pub(in crate::program) fn transpose_2d(values: &[f32], rows: u64, cols: u64) -> Option<Vec<f32>> {
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

/// The initializer name of a BatchNorm folded into a conv's bias: `<bias>.fused_bn`, or
/// `<module>.bias.fused_bn` after the weight's module when the conv has no bias.
fn fused_bias_name(weight: &Constant, bias: Option<&Constant>) -> String {
    let bias = bias.map_or_else(
        || format!("{}.bias", weight.to_string().trim_end_matches(".weight")),
        Constant::to_string,
    );
    format!("{bias}.fused_bn")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_padding_is_half_the_dilated_kernel_on_each_side() {
        assert_eq!(
            padding_for("same", &[3, 5], &[1, 1], &[1, 2]).unwrap(),
            [1, 4]
        );
        assert_eq!(
            padding_for("valid", &[3, 3], &[2, 2], &[1, 1]).unwrap(),
            [0, 0]
        );
        // An even kernel pads one side more: refused, as is `same` with a stride.
        assert!(padding_for("same", &[2], &[1], &[1]).is_err());
        assert!(padding_for("same", &[3], &[2], &[1]).is_err());
    }

    #[test]
    fn transposes_row_major_matrices() {
        assert_eq!(
            transpose_2d(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3),
            Some(vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0])
        );
        assert_eq!(transpose_2d(&[1.0], 2, 3), None);
        // [2, 3, 1] → [3, 2, 1] is the same transpose; with inner 2 the pairs move whole.
        assert_eq!(
            swap_leading(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3, 1),
            transpose_2d(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], 2, 3)
        );
        assert_eq!(
            swap_leading(&[1.0, 2.0, 3.0, 4.0], 2, 1, 2),
            Some(vec![1.0, 2.0, 3.0, 4.0])
        );
        assert_eq!(
            swap_leading(&[1.0, 2.0, 3.0, 4.0], 1, 2, 2),
            Some(vec![1.0, 2.0, 3.0, 4.0])
        );
        assert_eq!(swap_leading(&[1.0], 2, 2, 1), None);
    }
}
