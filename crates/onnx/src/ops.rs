//! Typed constructors for the operators the exporter emits. Each checks its operands'
//! shapes, computes the per-sample output shape, and writes the attributes the chosen opset
//! expects. Axes are per-sample (0 = channels): the batch axis is never an operand.

use super::elem::ElemType;
use super::graph::{Attr, GraphBuilder, Value, Weight};
use super::OnnxError;

mod nan;
mod product;

/// An N-D convolution's hyper-parameters, one entry per spatial axis (symmetric padding).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvNd {
    pub stride: Vec<u64>,
    pub pad: Vec<u64>,
    pub dilation: Vec<u64>,
    pub groups: u64,
}

/// An N-D pooling window, one entry per spatial axis (symmetric padding; `ceil` is torch's
/// `ceil_mode`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolNd {
    pub kernel: Vec<u64>,
    pub stride: Vec<u64>,
    pub pad: Vec<u64>,
    pub ceil: bool,
}

fn shape_error(what: String) -> OnnxError {
    OnnxError::Shape { what }
}

/// Output size of a window of `extent` (kernel span) over `size` with `pad` each side.
pub(crate) fn window_out(size: u64, pad: u64, extent: u64, stride: u64, ceil: bool) -> Option<u64> {
    let padded = size + 2 * pad;
    if padded < extent || stride == 0 {
        return None;
    }
    let span = padded - extent;
    let mut out = if ceil {
        span.div_ceil(stride) + 1
    } else {
        span / stride + 1
    };
    // torch: the last window must start inside the input or the left padding.
    if ceil && (out - 1) * stride >= size + pad {
        out -= 1;
    }
    Some(out)
}

/// The channels and spatial sizes of a `[C, spatial…]` activation with `rank` spatial axes.
fn spatial(x: &Value, op: &str, rank: usize) -> Result<(u64, Vec<u64>), OnnxError> {
    match x.shape().split_first() {
        Some((&c, sizes)) if sizes.len() == rank && rank > 0 => Ok((c, sizes.to_vec())),
        _ => Err(shape_error(format!(
            "{op} needs an N×C input with {rank} spatial axes, got per-sample shape {:?}",
            x.shape()
        ))),
    }
}

/// Symmetric ONNX `pads`: every axis's start, then every axis's end.
fn symmetric_pads(pad: &[u64]) -> Vec<i64> {
    to_i64(&[pad, pad].concat())
}

fn names(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn to_i64(values: &[u64]) -> Vec<i64> {
    values.iter().map(|&v| v as i64).collect()
}

fn single(mut values: Vec<Value>) -> Value {
    // `node` returns exactly as many values as output shapes were given (one here).
    values.swap_remove(0)
}

impl GraphBuilder {
    /// `Conv` over any number of spatial axes: weight `[O, C/groups, k…]`, optional bias
    /// `[O]`, one entry of `p` per spatial axis.
    pub fn conv_nd(
        &mut self,
        scope: &str,
        x: &Value,
        w: &Weight,
        b: Option<&Weight>,
        p: &ConvNd,
    ) -> Result<Value, OnnxError> {
        let rank = w.dims().len().saturating_sub(2);
        let (c, sizes) = spatial(x, "Conv", rank)?;
        let (&[o, ci], kernel) = w.dims().split_at(2) else {
            return Err(shape_error(format!("`{}` is not a conv weight", w.name())));
        };
        if [&p.stride, &p.pad, &p.dilation]
            .iter()
            .any(|v| v.len() != rank)
        {
            return Err(shape_error(format!(
                "{scope}: a {rank}-D convolution given {p:?}"
            )));
        }
        if p.groups == 0 || ci * p.groups != c || o % p.groups != 0 {
            return Err(shape_error(format!(
                "`{}` {:?} does not fit {c} input channels in {} groups",
                w.name(),
                w.dims(),
                p.groups
            )));
        }
        if let Some(b) = b {
            if b.dims() != [o] {
                return Err(shape_error(format!("`{}` is not a [{o}] bias", b.name())));
            }
        }
        let out = (0..rank)
            .map(|i| {
                window_out(
                    sizes[i],
                    p.pad[i],
                    p.dilation[i] * (kernel[i].max(1) - 1) + 1,
                    p.stride[i],
                    false,
                )
            })
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| {
                shape_error(format!(
                    "{scope}: a {kernel:?} kernel does not fit a {sizes:?} feature map"
                ))
            })?;
        let mut inputs = names(&[x.name(), w.name()]);
        inputs.extend(b.map(|b| b.name().to_owned()));
        let attrs = vec![
            ("dilations", Attr::Ints(to_i64(&p.dilation))),
            ("group", Attr::Int(p.groups as i64)),
            ("kernel_shape", Attr::Ints(to_i64(kernel))),
            ("pads", Attr::Ints(symmetric_pads(&p.pad))),
            ("strides", Attr::Ints(to_i64(&p.stride))),
        ];
        let shape = [o].into_iter().chain(out).collect();
        Ok(single(self.node("Conv", scope, inputs, attrs, vec![shape])))
    }

    /// `BatchNormalization` in inference mode (scale, bias, running mean and variance `[C]`).
    pub fn batch_norm(
        &mut self,
        scope: &str,
        x: &Value,
        params: [&Weight; 4],
        epsilon: f32,
    ) -> Result<Value, OnnxError> {
        let c = x.shape().first().copied().unwrap_or(0);
        if let Some(bad) = params.iter().find(|p| p.dims() != [c]) {
            return Err(shape_error(format!(
                "`{}` is not a [{c}] BatchNorm parameter",
                bad.name()
            )));
        }
        let mut inputs = names(&[x.name()]);
        inputs.extend(params.iter().map(|p| p.name().to_owned()));
        let attrs = vec![
            ("epsilon", Attr::Float(epsilon)),
            ("momentum", Attr::Float(0.9)),
        ];
        Ok(single(self.node(
            "BatchNormalization",
            scope,
            inputs,
            attrs,
            vec![x.shape().to_vec()],
        )))
    }

    /// `MaxPool` over any number of spatial axes. Before opset 10 `ceil_mode` does not
    /// exist; ceil rounding is then written as extra end padding, which MaxPool treats as
    /// −∞ and so computes the same result. A window holding a NaN gives NaN, as in torch
    /// (`nan.rs`: onnxruntime's MaxPool skips it).
    pub fn max_pool_nd(&mut self, scope: &str, x: &Value, p: &PoolNd) -> Result<Value, OnnxError> {
        let y = self.pool("MaxPool", scope, x, p, &[])?;
        if !nan::picks_over_nan("MaxPool", x) {
            return Ok(y);
        }
        let flags = self.nan_flags(scope, x);
        let held = self.pool("MaxPool", scope, &flags, p, &[])?;
        self.nan_where(scope, &held, &y)
    }

    /// `AveragePool` over any number of spatial axes; `include_pad` is torch's
    /// `count_include_pad` (whether padding counts in each window's divisor).
    pub fn average_pool_nd(
        &mut self,
        scope: &str,
        x: &Value,
        p: &PoolNd,
        include_pad: bool,
    ) -> Result<Value, OnnxError> {
        let count = Attr::Int(i64::from(include_pad));
        self.pool("AveragePool", scope, x, p, &[("count_include_pad", count)])
    }

    fn pool(
        &mut self,
        op: &'static str,
        scope: &str,
        x: &Value,
        p: &PoolNd,
        extra: &[(&'static str, Attr)],
    ) -> Result<Value, OnnxError> {
        let rank = p.kernel.len();
        let (c, sizes) = spatial(x, op, rank)?;
        if p.stride.len() != rank || p.pad.len() != rank {
            return Err(shape_error(format!("{scope}: a {rank}-D {op} given {p:?}")));
        }
        let out = (0..rank)
            .map(|i| window_out(sizes[i], p.pad[i], p.kernel[i], p.stride[i], p.ceil))
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| {
                shape_error(format!(
                    "{scope}: a {:?} window does not fit a {sizes:?} feature map",
                    p.kernel
                ))
            })?;
        let mut pads = symmetric_pads(&p.pad);
        let mut attrs: Vec<(&'static str, Attr)> = extra.to_vec();
        if p.ceil && self.opset().version() < 10 {
            if op != "MaxPool" {
                return Err(OnnxError::Option {
                    what: format!("{scope}: ceil-mode AveragePool needs opset 10 or later"),
                });
            }
            // Floor mode over input + 2·pad + extra gives the ceil-mode count.
            for i in 0..rank {
                let needed = (out[i] - 1) * p.stride[i] + p.kernel[i];
                pads[rank + i] += needed.saturating_sub(sizes[i] + 2 * p.pad[i]) as i64;
            }
        } else if p.ceil {
            attrs.push(("ceil_mode", Attr::Int(1)));
        }
        attrs.push(("kernel_shape", Attr::Ints(to_i64(&p.kernel))));
        attrs.push(("pads", Attr::Ints(pads)));
        attrs.push(("strides", Attr::Ints(to_i64(&p.stride))));
        let shape = [c].into_iter().chain(out).collect();
        Ok(single(self.node(
            op,
            scope,
            names(&[x.name()]),
            attrs,
            vec![shape],
        )))
    }

    /// `GlobalAveragePool`: `[C, spatial…]` → `[C, 1…]`.
    pub fn global_average_pool(&mut self, scope: &str, x: &Value) -> Result<Value, OnnxError> {
        let rank = x.shape().len().saturating_sub(1);
        let (c, _) = spatial(x, "GlobalAveragePool", rank)?;
        let shape = [c].into_iter().chain(vec![1; rank]).collect();
        Ok(single(self.node(
            "GlobalAveragePool",
            scope,
            names(&[x.name()]),
            vec![],
            vec![shape],
        )))
    }

    /// `Gemm(transB=1)`: `x [K]`, `w [N, K]`, optional `b [N]` → `[N]` (`nn.Linear`).
    pub fn gemm(
        &mut self,
        scope: &str,
        x: &Value,
        w: &Weight,
        b: Option<&Weight>,
    ) -> Result<Value, OnnxError> {
        let [n, k] = *w.dims() else {
            return Err(shape_error(format!(
                "`{}` is not a 2-D linear weight",
                w.name()
            )));
        };
        if x.shape() != [k] {
            return Err(shape_error(format!(
                "`{}` {:?} does not take {:?} features",
                w.name(),
                w.dims(),
                x.shape()
            )));
        }
        if let Some(b) = b.filter(|b| b.dims() != [n]) {
            return Err(shape_error(format!("`{}` is not a [{n}] bias", b.name())));
        }
        let mut inputs = names(&[x.name(), w.name()]);
        inputs.extend(b.map(|b| b.name().to_owned()));
        let attrs = vec![
            ("alpha", Attr::Float(1.0)),
            ("beta", Attr::Float(1.0)),
            ("transB", Attr::Int(1)),
        ];
        Ok(single(self.node(
            "Gemm",
            scope,
            inputs,
            attrs,
            vec![vec![n]],
        )))
    }

    /// `MatMul` of an activation `[…, K]` by a constant `[K, N]`.
    pub fn matmul(&mut self, scope: &str, x: &Value, w: &Weight) -> Result<Value, OnnxError> {
        let ([k, n], Some((&last, rest))) = (w.dims(), x.shape().split_last()) else {
            return Err(shape_error(format!("`{}` is not a 2-D matrix", w.name())));
        };
        if last != *k {
            return Err(shape_error(format!(
                "`{}` does not take {last} features",
                w.name()
            )));
        }
        let mut shape = rest.to_vec();
        shape.push(*n);
        Ok(single(self.node(
            "MatMul",
            scope,
            names(&[x.name(), w.name()]),
            vec![],
            vec![shape],
        )))
    }

    /// Element-wise `Add` of two activations of one shape.
    pub fn add(&mut self, scope: &str, a: &Value, b: &Value) -> Result<Value, OnnxError> {
        self.activation_binary("Add", scope, a, b, false)
    }

    /// Element-wise `Mul` of two activations; `b` may have size-1 axes (SE gates).
    pub fn mul(&mut self, scope: &str, a: &Value, b: &Value) -> Result<Value, OnnxError> {
        self.activation_binary("Mul", scope, a, b, true)
    }

    /// `Relu`.
    pub fn relu(&mut self, scope: &str, x: &Value) -> Value {
        self.unary("Relu", scope, x, vec![])
    }

    /// `Sigmoid`.
    pub fn sigmoid(&mut self, scope: &str, x: &Value) -> Value {
        self.unary("Sigmoid", scope, x, vec![])
    }

    /// `HardSigmoid`: `max(0, min(1, alpha·x + beta))` (torch's `hardsigmoid` is 1/6, 1/2).
    pub fn hard_sigmoid(&mut self, scope: &str, x: &Value, alpha: f32, beta: f32) -> Value {
        let attrs = vec![("alpha", Attr::Float(alpha)), ("beta", Attr::Float(beta))];
        self.unary("HardSigmoid", scope, x, attrs)
    }

    /// `Clip(min, max)`: attributes before opset 11, constant inputs from 11 on.
    pub fn clip(&mut self, scope: &str, x: &Value, min: f32, max: f32) -> Value {
        if self.opset().version() < 11 {
            let attrs = vec![("max", Attr::Float(max)), ("min", Attr::Float(min))];
            return self.unary("Clip", scope, x, attrs);
        }
        let lo = self.constant_scalar(&format!("{scope}.clip_min"), min);
        let hi = self.constant_scalar(&format!("{scope}.clip_max"), max);
        let inputs = names(&[x.name(), lo.name(), hi.name()]);
        single(self.node("Clip", scope, inputs, vec![], vec![x.shape().to_vec()]))
    }

    /// `Softmax(axis=-1)` over the last axis. Before opset 13 Softmax coerces its input to
    /// 2-D at `axis`; with the last axis that is `[everything else, last]`, so the result is
    /// the same at every opset.
    pub fn softmax(&mut self, scope: &str, x: &Value) -> Value {
        self.unary("Softmax", scope, x, vec![("axis", Attr::Int(-1))])
    }

    /// torch's `_safe_softmax` over the last axis (SDPA's math path since torch 2.5):
    /// [`GraphBuilder::softmax`] with [`GraphBuilder::zero_fully_masked`] rows.
    pub fn safe_softmax(&mut self, scope: &str, x: &Value) -> Result<Value, OnnxError> {
        let y = self.softmax(scope, x);
        let Some(last) = x.shape().len().checked_sub(1) else {
            return Err(shape_error(format!("{scope}: softmax of a scalar")));
        };
        self.zero_fully_masked(scope, x, last, &y)
    }

    /// `y` (a softmax of `x` along per-sample `axis`, of `x`'s shape) with zeros along every
    /// row of `axis` whose values in `x` are all −∞, where Softmax gives NaN: torch's safe
    /// softmax (`torch._decomp`'s `safe_softmax`: a row is masked when no value is kept,
    /// so a row holding a NaN stays NaN).
    pub fn zero_fully_masked(
        &mut self,
        scope: &str,
        x: &Value,
        axis: usize,
        y: &Value,
    ) -> Result<Value, OnnxError> {
        let neg_inf = self.constant_scalar(&format!("{scope}.neg_inf"), f32::NEG_INFINITY);
        let hidden = single(self.typed_node(
            "Equal",
            scope,
            names(&[x.name(), neg_inf.name()]),
            vec![],
            vec![(x.shape().to_vec(), ElemType::Bool)],
        ));
        let kept = single(self.typed_node(
            "Not",
            scope,
            names(&[hidden.name()]),
            vec![],
            vec![(x.shape().to_vec(), ElemType::Bool)],
        ));
        let kept = single(self.typed_node(
            "Cast",
            scope,
            names(&[kept.name()]),
            vec![("to", Attr::Int(ElemType::Float32.data_type() as i64))],
            vec![(x.shape().to_vec(), ElemType::Float32)],
        ));
        let kept = self.reduce("ReduceSum", scope, &kept, &[axis], true)?;
        let zero = self.constant_scalar(&format!("{scope}.zero"), 0.0);
        let masked = single(self.typed_node(
            "Equal",
            scope,
            names(&[kept.name(), zero.name()]),
            vec![],
            vec![(kept.shape().to_vec(), ElemType::Bool)],
        ));
        Ok(single(self.typed_node(
            "Where",
            scope,
            names(&[masked.name(), zero.name(), y.name()]),
            vec![],
            vec![(y.shape().to_vec(), ElemType::Float32)],
        )))
    }

    /// Exact GELU, `x · ½ · (1 + erf(x / √2))`, as torch's exporter writes it (ATC has no
    /// Gelu op at opsets 9–13).
    pub fn gelu(&mut self, scope: &str, x: &Value) -> Result<Value, OnnxError> {
        let root2 = self.constant_scalar(&format!("{scope}.sqrt2"), std::f32::consts::SQRT_2);
        let one = self.constant_scalar(&format!("{scope}.one"), 1.0);
        let half = self.constant_scalar(&format!("{scope}.half"), 0.5);
        let y = self.div_constant(scope, x, &root2)?;
        let y = self.erf(scope, &y);
        let y = self.add_constant(scope, &y, &one)?;
        let y = self.mul(scope, x, &y)?;
        self.mul_constant(scope, &y, &half)
    }

    /// LayerNorm over per-sample `axis` (an opset-17 op): [`GraphBuilder::layer_norm_over`]
    /// one axis, the result alone.
    pub fn layer_norm(
        &mut self,
        scope: &str,
        x: &Value,
        axis: usize,
        affine: [Option<&Weight>; 2],
        eps: f32,
    ) -> Result<Value, OnnxError> {
        let [y, _, _] = self.layer_norm_over(scope, x, &[axis], affine, eps)?;
        Ok(y)
    }

    /// LayerNorm over per-sample `axes`, decomposed as torch's opset-11 exporter does:
    /// ReduceMean → Sub → Mul → ReduceMean → Add ε → Sqrt → Div, then Mul γ and Add β when
    /// given (shaped to broadcast along the axes): the result, the mean and the standard
    /// deviation `√(variance + ε)` (both with the axes kept as 1).
    pub fn layer_norm_over(
        &mut self,
        scope: &str,
        x: &Value,
        axes: &[usize],
        affine: [Option<&Weight>; 2],
        eps: f32,
    ) -> Result<[Value; 3], OnnxError> {
        let mean = self.reduce_mean(scope, x, axes, true)?;
        let centred = self.sub(scope, x, &mean)?;
        let squared = self.mul(scope, &centred, &centred)?;
        let variance = self.reduce_mean(scope, &squared, axes, true)?;
        let eps = self.constant_scalar(&format!("{scope}.eps"), eps);
        let variance = self.add_constant(scope, &variance, &eps)?;
        let deviation = self.sqrt(scope, &variance);
        let mut y = self.div(scope, &centred, &deviation)?;
        let [gamma, beta] = affine;
        if let Some(gamma) = gamma {
            y = self.mul_constant(scope, &y, gamma)?;
        }
        if let Some(beta) = beta {
            y = self.add_constant(scope, &y, beta)?;
        }
        Ok([y, mean, deviation])
    }

    /// RMSNorm over per-sample `axes` (an opset-23 op), decomposed: Mul → ReduceMean →
    /// Add ε → Sqrt → Div, then Mul γ when given.
    pub fn rms_norm(
        &mut self,
        scope: &str,
        x: &Value,
        axes: &[usize],
        gamma: Option<&Weight>,
        eps: f32,
    ) -> Result<Value, OnnxError> {
        let squared = self.mul(scope, x, x)?;
        let mean = self.reduce_mean(scope, &squared, axes, true)?;
        let eps = self.constant_scalar(&format!("{scope}.eps"), eps);
        let mean = self.add_constant(scope, &mean, &eps)?;
        let root = self.sqrt(scope, &mean);
        let y = self.div(scope, x, &root)?;
        match gamma {
            Some(gamma) => self.mul_constant(scope, &y, gamma),
            None => Ok(y),
        }
    }

    /// `Erf`.
    pub fn erf(&mut self, scope: &str, x: &Value) -> Value {
        self.unary("Erf", scope, x, vec![])
    }

    /// `Sqrt`.
    pub fn sqrt(&mut self, scope: &str, x: &Value) -> Value {
        self.unary("Sqrt", scope, x, vec![])
    }

    /// `ReduceMean` over per-sample `axes` (sorted, distinct, in range), kept as size 1 or
    /// dropped. The axes are an attribute at every opset ATC takes (an input only from 18).
    pub fn reduce_mean(
        &mut self,
        scope: &str,
        x: &Value,
        axes: &[usize],
        keep: bool,
    ) -> Result<Value, OnnxError> {
        self.reduce("ReduceMean", scope, x, axes, keep)
    }

    /// `op` (`ReduceMean`, `ReduceSum`, `ReduceMax`, `ReduceMin`, `ReduceProd`) over per-sample `axes`
    /// (sorted, distinct, in range), kept as size 1 or dropped. `ReduceProd`, which ATC
    /// lacks, is written as `Mul`s of each entry (`product.rs`). The axes are an attribute,
    /// except for `ReduceSum` from opset 13, which takes them as an int64 input. A float
    /// `ReduceMax`/`ReduceMin` over values holding a NaN gives NaN, as torch's `amax` does
    /// (`nan.rs`).
    pub fn reduce(
        &mut self,
        op: &'static str,
        scope: &str,
        x: &Value,
        axes: &[usize],
        keep: bool,
    ) -> Result<Value, OnnxError> {
        let y = self.reduce_values(op, scope, x, axes, keep)?;
        if !nan::picks_over_nan(op, x) {
            return Ok(y);
        }
        let held = self.any_nan(scope, x, axes, keep)?;
        self.nan_where(scope, &held, &y)
    }

    /// 1.0 where the values of `x` that [`GraphBuilder::reduce`] over `axes` gathers into
    /// one element held a NaN, 0.0 elsewhere (`x` float32).
    pub(crate) fn any_nan(
        &mut self,
        scope: &str,
        x: &Value,
        axes: &[usize],
        keep: bool,
    ) -> Result<Value, OnnxError> {
        let flags = self.nan_flags(scope, x);
        self.reduce_values("ReduceMax", scope, &flags, axes, keep)
    }

    /// [`GraphBuilder::reduce`] as the ONNX op alone.
    fn reduce_values(
        &mut self,
        op: &'static str,
        scope: &str,
        x: &Value,
        axes: &[usize],
        keep: bool,
    ) -> Result<Value, OnnxError> {
        let sorted = axes.windows(2).all(|w| w[0] < w[1]);
        if axes.is_empty() || !sorted || axes.iter().any(|&a| a >= x.shape().len()) {
            return Err(shape_error(format!(
                "{scope}: {op} over {axes:?} of {:?}",
                x.shape()
            )));
        }
        if op == "ReduceProd" {
            return self.reduce_product(scope, x, axes, keep);
        }
        let shape: Vec<u64> = x
            .shape()
            .iter()
            .enumerate()
            .filter_map(|(i, &d)| match (axes.contains(&i), keep) {
                (false, _) => Some(d),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        let full: Vec<i64> = axes.iter().map(|&a| a as i64 + 1).collect();
        let mut inputs = names(&[x.name()]);
        let mut attrs = vec![("keepdims", Attr::Int(i64::from(keep)))];
        if op == "ReduceSum" && self.opset().version() >= 13 {
            let axes = self.constant_i64(&format!("{scope}.axes"), &full);
            inputs.push(axes.name().to_owned());
        } else {
            attrs.insert(0, ("axes", Attr::Ints(full)));
        }
        Ok(single(self.node(op, scope, inputs, attrs, vec![shape])))
    }

    /// Element-wise `Sub` of two activations; `b` may have size-1 axes (a kept mean).
    pub fn sub(&mut self, scope: &str, a: &Value, b: &Value) -> Result<Value, OnnxError> {
        self.activation_binary("Sub", scope, a, b, true)
    }

    /// Element-wise `Div` of two activations; `b` may have size-1 axes (a kept deviation).
    pub fn div(&mut self, scope: &str, a: &Value, b: &Value) -> Result<Value, OnnxError> {
        self.activation_binary("Div", scope, a, b, true)
    }

    /// `Add` of a constant that broadcasts over the activation (a bias, a position
    /// embedding, an epsilon).
    pub fn add_constant(&mut self, scope: &str, x: &Value, c: &Weight) -> Result<Value, OnnxError> {
        self.constant_binary("Add", scope, x, c)
    }

    /// `Div` by a constant that broadcasts over the activation.
    pub fn div_constant(&mut self, scope: &str, x: &Value, c: &Weight) -> Result<Value, OnnxError> {
        self.constant_binary("Div", scope, x, c)
    }

    /// `Mul` by a constant that broadcasts over the activation (a scale, a layer scale).
    pub fn mul_constant(&mut self, scope: &str, x: &Value, c: &Weight) -> Result<Value, OnnxError> {
        self.constant_binary("Mul", scope, x, c)
    }

    /// `MatMul` of two activations, batched over their leading per-sample axes:
    /// `[…, M, K] × […, K, N] → […, M, N]`.
    pub fn matmul_activations(
        &mut self,
        scope: &str,
        a: &Value,
        b: &Value,
    ) -> Result<Value, OnnxError> {
        let (sa, sb) = (a.shape(), b.shape());
        let rank = sa.len();
        // Leading per-sample sizes agree or one is 1 (multi-query attention's one key
        // head against several query heads), which MatMul broadcasts.
        let fits = rank >= 2
            && sb.len() == rank
            && sa[..rank - 2]
                .iter()
                .zip(&sb[..rank - 2])
                .all(|(&p, &q)| p == q || p == 1 || q == 1)
            && sa[rank - 1] == sb[rank - 2];
        if !fits {
            return Err(shape_error(format!("{scope}: MatMul of {sa:?} by {sb:?}")));
        }
        let mut shape: Vec<u64> = sa[..rank - 2]
            .iter()
            .zip(&sb[..rank - 2])
            .map(|(&p, &q)| p.max(q))
            .collect();
        shape.extend([sa[rank - 2], sb[rank - 1]]);
        Ok(single(self.node(
            "MatMul",
            scope,
            names(&[a.name(), b.name()]),
            vec![],
            vec![shape],
        )))
    }

    /// `Slice` of `start..end` on per-sample `axis`: attributes before opset 10, constant
    /// inputs from 10 on.
    pub fn slice(
        &mut self,
        scope: &str,
        x: &Value,
        axis: usize,
        range: std::ops::Range<u64>,
    ) -> Result<Value, OnnxError> {
        let size = x.shape().get(axis).copied();
        if size.is_none_or(|size| range.start >= range.end || range.end > size) {
            return Err(shape_error(format!(
                "{scope}: cannot slice {range:?} from axis {axis} of {:?}",
                x.shape()
            )));
        }
        let mut shape = x.shape().to_vec();
        shape[axis] = range.end - range.start;
        Ok(self.slice_onnx(scope, x.name(), axis + 1, range, shape))
    }

    /// `Slice` of `range` on ONNX axis `axis` of value `x`, whose result's value shape is
    /// `shape` (the caller checked both): attributes before opset 10, constant inputs from
    /// 10 on.
    pub fn slice_onnx(
        &mut self,
        scope: &str,
        x: &str,
        axis: usize,
        range: std::ops::Range<u64>,
        shape: Vec<u64>,
    ) -> Value {
        let (start, end, axes) = (range.start as i64, range.end as i64, axis as i64);
        if self.opset().version() < 10 {
            let attrs = vec![
                ("axes", Attr::Ints(vec![axes])),
                ("ends", Attr::Ints(vec![end])),
                ("starts", Attr::Ints(vec![start])),
            ];
            return single(self.node("Slice", scope, names(&[x]), attrs, vec![shape]));
        }
        let starts = self.constant_i64(&format!("{scope}.starts"), &[start]);
        let ends = self.constant_i64(&format!("{scope}.ends"), &[end]);
        let axes = self.constant_i64(&format!("{scope}.axes"), &[axes]);
        let inputs = names(&[x, starts.name(), ends.name(), axes.name()]);
        single(self.node("Slice", scope, inputs, vec![], vec![shape]))
    }

    /// A binary op of two activations, of `a`'s shape: `b`'s shape is the same, or, where
    /// `broadcast`, agrees with it except where `b` has 1.
    fn activation_binary(
        &mut self,
        op: &'static str,
        scope: &str,
        a: &Value,
        b: &Value,
        broadcast: bool,
    ) -> Result<Value, OnnxError> {
        let fits = a.shape().len() == b.shape().len()
            && a.shape()
                .iter()
                .zip(b.shape())
                .all(|(x, y)| x == y || (broadcast && *y == 1));
        if !fits {
            return Err(shape_error(format!(
                "{scope}: {op} of {:?} and {:?}",
                a.shape(),
                b.shape()
            )));
        }
        let shape = a.shape().to_vec();
        Ok(single(self.node(
            op,
            scope,
            names(&[a.name(), b.name()]),
            vec![],
            vec![shape],
        )))
    }

    /// A binary op of an activation and a constant that broadcasts to it (numpy rules,
    /// aligned on the last axis; a constant with one axis more than a sample has 1 there,
    /// for the batch). The output has the activation's shape.
    fn constant_binary(
        &mut self,
        op: &'static str,
        scope: &str,
        x: &Value,
        c: &Weight,
    ) -> Result<Value, OnnxError> {
        let (sample, dims) = (x.shape(), c.dims());
        let fits = match dims.len().checked_sub(sample.len()) {
            None => sample[sample.len() - dims.len()..]
                .iter()
                .zip(dims)
                .all(|(s, d)| s == d || *d == 1),
            Some(0) => sample.iter().zip(dims).all(|(s, d)| s == d || *d == 1),
            Some(1) => {
                dims[0] == 1
                    && sample
                        .iter()
                        .zip(&dims[1..])
                        .all(|(s, d)| s == d || *d == 1)
            }
            Some(_) => false,
        };
        if !fits {
            return Err(shape_error(format!(
                "{scope}: {op} of {:?} and `{}` {dims:?}",
                sample,
                c.name()
            )));
        }
        Ok(single(self.node(
            op,
            scope,
            names(&[x.name(), c.name()]),
            vec![],
            vec![sample.to_vec()],
        )))
    }

    /// A one-input element-wise op (`Exp`, `Elu` with its `alpha`, …): same shape out.
    pub fn unary(
        &mut self,
        op: &'static str,
        scope: &str,
        x: &Value,
        attrs: Vec<(&'static str, Attr)>,
    ) -> Value {
        single(self.node(
            op,
            scope,
            names(&[x.name()]),
            attrs,
            vec![x.shape().to_vec()],
        ))
    }

    /// `Reshape` to per-sample shape `shape`, written as `[0, shape…]` (0 copies the batch),
    /// so no Shape/Gather chain touches the batch.
    pub fn reshape(&mut self, scope: &str, x: &Value, shape: &[u64]) -> Result<Value, OnnxError> {
        if shape.iter().product::<u64>() != x.shape().iter().product::<u64>() {
            return Err(shape_error(format!(
                "{scope}: cannot reshape {:?} to {shape:?}",
                x.shape()
            )));
        }
        let mut target = vec![0i64];
        target.extend(to_i64(shape));
        let target = self.constant_i64(&format!("{scope}.shape"), &target);
        let inputs = names(&[x.name(), target.name()]);
        Ok(single(self.node(
            "Reshape",
            scope,
            inputs,
            vec![],
            vec![shape.to_vec()],
        )))
    }

    /// `Transpose` of the per-sample axes by `perm` (the batch stays first).
    pub fn transpose(
        &mut self,
        scope: &str,
        x: &Value,
        perm: &[usize],
    ) -> Result<Value, OnnxError> {
        let mut sorted = perm.to_vec();
        sorted.sort_unstable();
        if sorted != (0..x.shape().len()).collect::<Vec<_>>() {
            return Err(shape_error(format!(
                "{scope}: {perm:?} is not a permutation of {:?}",
                x.shape()
            )));
        }
        let shape = perm.iter().map(|&a| x.shape()[a]).collect();
        let full: Vec<i64> = std::iter::once(0)
            .chain(perm.iter().map(|&a| a as i64 + 1))
            .collect();
        let attrs = vec![("perm", Attr::Ints(full))];
        Ok(single(self.node(
            "Transpose",
            scope,
            names(&[x.name()]),
            attrs,
            vec![shape],
        )))
    }

    /// `Concat` along per-sample `axis`; all other axes must agree.
    pub fn concat(&mut self, scope: &str, xs: &[&Value], axis: usize) -> Result<Value, OnnxError> {
        let Some(first) = xs.first() else {
            return Err(shape_error(format!("{scope}: Concat of nothing")));
        };
        let mut shape = first.shape().to_vec();
        if axis >= shape.len() {
            return Err(shape_error(format!(
                "{scope}: Concat axis {axis} of {shape:?}"
            )));
        }
        shape[axis] = 0;
        for x in xs {
            let same_rank = x.shape().len() == shape.len();
            let agree = same_rank
                && x.shape()
                    .iter()
                    .zip(&shape)
                    .enumerate()
                    .all(|(i, (a, b))| i == axis || a == b);
            if !agree {
                return Err(shape_error(format!(
                    "{scope}: Concat of {:?} and {:?}",
                    first.shape(),
                    x.shape()
                )));
            }
            shape[axis] += x.shape()[axis];
        }
        let attrs = vec![("axis", Attr::Int(axis as i64 + 1))];
        let inputs = xs.iter().map(|x| x.name().to_owned()).collect();
        Ok(single(self.node(
            "Concat",
            scope,
            inputs,
            attrs,
            vec![shape],
        )))
    }

    /// `Split` along per-sample `axis` into parts of `sizes`: an attribute before opset 13,
    /// a constant input from 13 on.
    pub fn split(
        &mut self,
        scope: &str,
        x: &Value,
        axis: usize,
        sizes: &[u64],
    ) -> Result<Vec<Value>, OnnxError> {
        if x.shape().get(axis) != Some(&sizes.iter().sum()) {
            return Err(shape_error(format!(
                "{scope}: cannot split {:?} into {sizes:?} on axis {axis}",
                x.shape()
            )));
        }
        let shapes = sizes
            .iter()
            .map(|&s| {
                let mut shape = x.shape().to_vec();
                shape[axis] = s;
                shape
            })
            .collect();
        Ok(self.split_onnx(scope, x.name(), axis + 1, sizes, shapes))
    }

    /// `Split` of ONNX axis `axis` of value `x` into parts of `sizes`, whose value shapes
    /// are `shapes` (the caller checked both): an attribute before opset 13, a constant
    /// input from 13 on.
    pub fn split_onnx(
        &mut self,
        scope: &str,
        x: &str,
        axis: usize,
        sizes: &[u64],
        shapes: Vec<Vec<u64>>,
    ) -> Vec<Value> {
        let mut attrs = vec![("axis", Attr::Int(axis as i64))];
        let mut inputs = names(&[x]);
        if self.opset().version() < 13 {
            attrs.push(("split", Attr::Ints(to_i64(sizes))));
        } else {
            let split = self.constant_i64(&format!("{scope}.split"), &to_i64(sizes));
            inputs.push(split.name().to_owned());
        }
        self.node("Split", scope, inputs, attrs, shapes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_sizes_follow_torch() {
        // resnet stem: 224 → conv 7/2/3 → 112 → maxpool 3/2/1 → 56.
        assert_eq!(window_out(224, 3, 7, 2, false), Some(112));
        assert_eq!(window_out(112, 1, 3, 2, false), Some(56));
        // squeezenet: MaxPool(3, 2, ceil_mode=True) on 109 → 54, on 54 → 27, on 27 → 13.
        assert_eq!(window_out(109, 0, 3, 2, true), Some(54));
        assert_eq!(window_out(54, 0, 3, 2, true), Some(27));
        assert_eq!(window_out(27, 0, 3, 2, true), Some(13));
        assert_eq!(window_out(2, 0, 3, 1, false), None);
    }
}
