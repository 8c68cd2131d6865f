//! ONNX operators the program importer needs beyond [`crate::ops`]: free functions
//! over a [`GraphBuilder`], each checking its operands and computing the per-sample output
//! shape. Axes are per-sample (0 = the first axis after the batch).

use crate::elem::ElemType;
use crate::graph::{Attr, GraphBuilder, Value, Weight};
use crate::OnnxError;

use super::tensor::{self, Size};

fn shape_error(what: String) -> OnnxError {
    OnnxError::Shape { what }
}

fn i64s(values: &[u64]) -> Vec<i64> {
    values.iter().map(|&v| v as i64).collect()
}

pub(super) fn single(mut values: Vec<Value>) -> Value {
    // `node` returns one value per output shape given, and every call here gives one.
    values.swap_remove(0)
}

/// `Tanh`.
pub fn tanh(g: &mut GraphBuilder, scope: &str, x: &Value) -> Value {
    let shape = x.shape().to_vec();
    single(g.node(
        "Tanh",
        scope,
        vec![x.name().to_owned()],
        vec![],
        vec![shape],
    ))
}

/// A transposed convolution's hyper-parameters (`nn.ConvTranspose1d/2d/3d`), one entry per
/// spatial axis.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvTranspose {
    pub stride: Vec<u64>,
    pub pad: Vec<u64>,
    pub output_padding: Vec<u64>,
    pub dilation: Vec<u64>,
    pub groups: u64,
}

/// `ConvTranspose`: weight `[C, O/groups, k…]`, optional bias `[O]`; each output size is
/// `(in − 1)·s − 2p + d·(k − 1) + output_padding + 1`, as torch computes it. An
/// output padding not below its stride is refused.
pub fn conv_transpose(
    g: &mut GraphBuilder,
    scope: &str,
    x: &Value,
    w: &Weight,
    b: Option<&Weight>,
    p: &ConvTranspose,
) -> Result<Value, OnnxError> {
    let rank = x.shape().len().saturating_sub(1);
    let fits = w.dims().len() == rank + 2
        && rank > 0
        && [&p.stride, &p.pad, &p.output_padding, &p.dilation]
            .iter()
            .all(|v| v.len() == rank);
    let (Some((&c, sizes)), Some((&[ci, og], kernel)), true) = (
        x.shape().split_first(),
        w.dims().split_first_chunk::<2>(),
        fits,
    ) else {
        let spatial = w.dims().len().saturating_sub(2);
        return Err(shape_error(format!(
            "{scope}: ConvTranspose by `{}` {:?} needs an N×C input with {spatial} spatial axes and a stride, padding, output padding and dilation per axis; got per-sample shape {:?} (an unbatched input's first dimension is its channels, which cannot be the batch)",
            w.name(),
            w.dims(),
            x.shape()
        )));
    };
    let o = og * p.groups;
    if p.groups == 0 || ci != c || c % p.groups != 0 || b.is_some_and(|b| b.dims() != [o]) {
        return Err(shape_error(format!(
            "{scope}: `{}` {:?} does not fit {c} input channels in {} groups",
            w.name(),
            w.dims(),
            p.groups
        )));
    }
    // torch takes an output padding below the stride or the dilation; ONNX's pads the
    // output within one stride (onnxruntime rejects more).
    if let Some(i) = (0..rank).find(|&i| p.output_padding[i] >= p.stride[i]) {
        return Err(shape_error(format!(
            "{scope}: an output_padding of {} on spatial axis {i} is not below its stride {}: torch takes it (it is below the dilation {}), but ONNX's ConvTranspose adds output padding only within one stride",
            p.output_padding[i], p.stride[i], p.dilation[i]
        )));
    }
    let out = (0..rank)
        .map(|i| {
            ((sizes[i].checked_sub(1)? * p.stride[i] + p.dilation[i] * kernel[i].checked_sub(1)?)
                + p.output_padding[i]
                + 1)
            .checked_sub(2 * p.pad[i])
            .filter(|&n| n > 0)
        })
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| {
            shape_error(format!(
                "{scope}: a {kernel:?} transposed kernel gives an empty output for {sizes:?}"
            ))
        })?;
    let mut inputs = vec![x.name().to_owned(), w.name().to_owned()];
    inputs.extend(b.map(|b| b.name().to_owned()));
    let attrs = vec![
        ("dilations", Attr::Ints(i64s(&p.dilation))),
        ("group", Attr::Int(p.groups as i64)),
        ("kernel_shape", Attr::Ints(i64s(kernel))),
        ("output_padding", Attr::Ints(i64s(&p.output_padding))),
        (
            "pads",
            Attr::Ints(i64s(&[p.pad.as_slice(), &p.pad].concat())),
        ),
        ("strides", Attr::Ints(i64s(&p.stride))),
    ];
    let shape = [o].into_iter().chain(out).collect();
    Ok(single(g.node(
        "ConvTranspose",
        scope,
        inputs,
        attrs,
        vec![shape],
    )))
}

/// How `Resize` interpolates, with torch's matching coordinate rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interpolation {
    /// `upsample_nearest2d`: source index `⌊dst · in/out⌋` (asymmetric, floor).
    Nearest,
    /// `upsample_bilinear2d`; corners aligned or half-pixel centres.
    Linear { align_corners: bool },
}

/// The `Resize` scale from `input` to `output` samples: the least `f32` not below
/// `output / input`. onnxruntime and ATC's parser both size the output `⌊input · scale⌋`
/// from `scales`, so the nearest `f32` (7 → 31 gives 30.999998) would lose a sample.
pub fn resize_scale(input: u64, output: u64) -> f32 {
    let nearest = output as f32 / input as f32;
    if f64::from(nearest) * (input as f64) < output as f64 {
        nearest.next_up()
    } else {
        nearest
    }
}

/// `Resize` (opset 11+) of a `[C, spatial…]` activation to `[C, out…]`, with constant
/// `scales` `[1, 1,` [`resize_scale`]`…]` (ATC needs constant scales; no `sizes`, which would
/// carry the batch). The caller checks that this form computes torch's samples on every
/// axis (`aten::interpolate::onnx_resize_agrees`). `names` prefixes the roi and scales
/// initializers and must be unique.
pub fn resize(
    g: &mut GraphBuilder,
    scope: &str,
    names: &str,
    x: &Value,
    out: &[u64],
    mode: Interpolation,
) -> Result<Value, OnnxError> {
    if g.opset().version() < 11 {
        return Err(OnnxError::Option {
            what: format!(
                "{scope}: upsampling needs Resize from opset 11; pass --opset 11 or later"
            ),
        });
    }
    let Some((&c, sizes)) = x
        .shape()
        .split_first()
        .filter(|(_, s)| s.len() == out.len())
    else {
        return Err(shape_error(format!(
            "{scope}: Resize of per-sample {:?} to {out:?}",
            x.shape()
        )));
    };
    if sizes.contains(&0) || out.contains(&0) || out.is_empty() {
        return Err(shape_error(format!(
            "{scope}: Resize of {sizes:?} to {out:?}"
        )));
    }
    let scales: Vec<f32> = [1.0, 1.0]
        .into_iter()
        .chain(sizes.iter().zip(out).map(|(&i, &o)| resize_scale(i, o)))
        .collect();
    let roi = g.weight(&format!("{names}.roi"), vec![0], &[])?;
    let scales = g.weight(
        &format!("{names}.scales"),
        vec![scales.len() as u64],
        &scales,
    )?;
    // torch's `area_pixel_compute_source_index` is half-pixel; `pytorch_half_pixel` is
    // the one half-pixel mode ATC's parser maps to half-pixel centres (it reads
    // `half_pixel` as the legacy grid), and equals torch's unless an output axis of a
    // longer input has length 1, which the caller does not send here.
    let mut attrs = match mode {
        Interpolation::Nearest => vec![
            ("coordinate_transformation_mode", Attr::Str("asymmetric")),
            ("mode", Attr::Str("nearest")),
            ("nearest_mode", Attr::Str("floor")),
        ],
        Interpolation::Linear { align_corners } => {
            let coordinates = if align_corners {
                "align_corners"
            } else {
                "pytorch_half_pixel"
            };
            vec![
                ("coordinate_transformation_mode", Attr::Str(coordinates)),
                ("mode", Attr::Str("linear")),
            ]
        }
    };
    attrs.sort_by_key(|(name, _)| *name);
    let inputs = vec![
        x.name().to_owned(),
        roi.name().to_owned(),
        scales.name().to_owned(),
    ];
    let shape = [c].into_iter().chain(out.iter().copied()).collect();
    Ok(single(g.node("Resize", scope, inputs, attrs, vec![shape])))
}

/// An element-wise operand: an activation (with the batch) or a constant (without).
#[derive(Clone, Copy, Debug)]
pub enum Operand<'a> {
    Activation(&'a Value),
    Constant(&'a Weight),
}

impl Operand<'_> {
    pub fn name(&self) -> &str {
        match self {
            Operand::Activation(v) => v.name(),
            Operand::Constant(w) => w.name(),
        }
    }
}

/// `Add`/`Sub`/`Mul`/`Div` with numpy broadcasting that never touches the batch: two
/// activations of the same per-sample rank, or an activation and a constant whose rank is
/// at most the activation's per-sample rank, or one more with size 1 there (the batch);
/// either side may widen the other within each sample (a `[1, 1, S, 1]` causal mask and
/// a `[N, 1, 1, S]` padding mask give `[N, 1, S, S]`). Operand order is kept (`Sub`, `Div`).
pub fn binary(
    g: &mut GraphBuilder,
    op: &'static str,
    scope: &str,
    a: Operand<'_>,
    b: Operand<'_>,
) -> Result<Value, OnnxError> {
    let shape = broadcast_shape(op, scope, a, b)?;
    Ok(binary_node(g, op, scope, [a.name(), b.name()], shape))
}

/// The node `op(inputs…)` (`Add(a, b)`, `Where(c, a, b)`) broadcast to `shape`, with
/// element type `elem` as the caller states it.
pub fn typed<const N: usize>(
    g: &mut GraphBuilder,
    op: &'static str,
    scope: &str,
    inputs: [&str; N],
    shape: &[u64],
    elem: ElemType,
) -> Value {
    let inputs = inputs.iter().map(|&name| name.to_owned()).collect();
    single(g.typed_node(op, scope, inputs, vec![], vec![(shape.to_vec(), elem)]))
}

/// The node `op(a, b)` of per-sample `shape`, at the operands' element type. ONNX's `Min`
/// and `Max` take integers only from opset 12 on: before it, an integer minimum is
/// `Where(Less(a, b), a, b)` and a maximum `Where(Greater(a, b), a, b)` (equal operands
/// are the same number whichever is picked).
pub fn binary_node(
    g: &mut GraphBuilder,
    op: &'static str,
    scope: &str,
    [a, b]: [&str; 2],
    shape: Vec<u64>,
) -> Value {
    let elem = g.elem_of(a).unwrap_or(ElemType::Float32);
    let pick = match op {
        "Min" => Some("Less"),
        "Max" => Some("Greater"),
        _ => None,
    };
    match pick {
        Some(compare) if elem != ElemType::Float32 && g.opset().version() < 12 => {
            let inputs = vec![a.to_owned(), b.to_owned()];
            let outputs = vec![(shape.clone(), ElemType::Bool)];
            let first = single(g.typed_node(compare, scope, inputs, vec![], outputs));
            let inputs = vec![first.name().to_owned(), a.to_owned(), b.to_owned()];
            single(g.typed_node("Where", scope, inputs, vec![], vec![(shape, elem)]))
        }
        _ => {
            // A comparison's result is a bool mask; arithmetic keeps its operands' type.
            let out = match op {
                "Equal" | "Less" | "Greater" => ElemType::Bool,
                _ => elem,
            };
            // ONNX's Mod rounds as C's `fmod` only with `fmod = 1` (required for floats);
            // CANN's parser ignores the attribute and always does.
            let attrs = match op {
                "Mod" => vec![("fmod", Attr::Int(1))],
                _ => vec![],
            };
            let inputs = vec![a.to_owned(), b.to_owned()];
            single(g.typed_node(op, scope, inputs, attrs, vec![(shape, out)]))
        }
    }
}

/// The per-sample shape `a op b` broadcasts to under [`binary`]'s rules; the error names
/// `op`, both shapes and why: a constant's dimension that lines up with the batch
/// ([`tensor::constant_meets_batch`]), or sizes that do not broadcast.
pub fn broadcast_shape(
    op: &str,
    scope: &str,
    a: Operand<'_>,
    b: Operand<'_>,
) -> Result<Vec<u64>, OnnxError> {
    let shape = match (a, b) {
        (Operand::Activation(x), Operand::Activation(y)) if x.shape().len() == y.shape().len() => {
            broadcast(x.shape(), y.shape())
        }
        (Operand::Activation(x), Operand::Constant(c))
        | (Operand::Constant(c), Operand::Activation(x))
            if c.dims().len() <= x.shape().len() =>
        {
            broadcast(x.shape(), c.dims())
        }
        // A leading 1 where the activation has the batch (`pos_embedding` `[1, S, D]`).
        (Operand::Activation(x), Operand::Constant(c))
        | (Operand::Constant(c), Operand::Activation(x))
            if c.dims().len() == x.shape().len() + 1 && c.dims().first() == Some(&1) =>
        {
            broadcast(x.shape(), &c.dims()[1..])
        }
        _ => None,
    };
    if let Some(shape) = shape {
        return Ok(shape);
    }
    let what = match (a, b) {
        (Operand::Activation(x), Operand::Constant(c))
        | (Operand::Constant(c), Operand::Activation(x)) => {
            return Err(constant_unbroadcast(op, scope, x, c.name(), c.dims()))
        }
        (Operand::Activation(x), Operand::Activation(y)) => format!(
            "{op} of per-sample sizes {:?} and {:?}: {}",
            x.shape(),
            y.shape(),
            tensor::unbroadcast(false)
        ),
        (Operand::Constant(c), Operand::Constant(d)) => format!(
            "{op} of constants `{}` and `{}` alone is folded, not written",
            c.name(),
            d.name()
        ),
    };
    Err(shape_error(format!("{scope}: {what}")))
}

/// The error for constant `name` of sizes `dims` that does not broadcast with activation
/// `x` in `op` under [`binary`]'s rules: it meets the batch
/// ([`tensor::constant_meets_batch`]), or its sizes do not broadcast.
pub fn constant_unbroadcast(
    op: &str,
    scope: &str,
    x: &Value,
    name: &str,
    dims: &[u64],
) -> OnnxError {
    let sizes: Vec<Size> = std::iter::once(Size::batch(1))
        .chain(x.shape().iter().map(|&d| Size::fixed(d)))
        .collect();
    let what = tensor::constant_meets_batch(op, name, dims, &sizes).unwrap_or_else(|| {
        format!(
            "{op} of {} and `{name}` {dims:?}: {}",
            tensor::show(&sizes),
            tensor::unbroadcast(dims.len() > x.shape().len())
        )
    });
    shape_error(format!("{scope}: {what}"))
}

/// `Cast` of `x` to `to` (`x` itself when it already has that type).
pub fn cast(g: &mut GraphBuilder, scope: &str, x: &Value, to: ElemType) -> Value {
    if x.elem() == to {
        return x.clone();
    }
    let attrs = vec![("to", Attr::Int(to.data_type() as i64))];
    single(g.typed_node(
        "Cast",
        scope,
        vec![x.name().to_owned()],
        attrs,
        vec![(x.shape().to_vec(), to)],
    ))
}

/// numpy broadcasting of two shapes aligned on the right, or `None`.
pub fn broadcast(a: &[u64], b: &[u64]) -> Option<Vec<u64>> {
    let rank = a.len().max(b.len());
    let at = |s: &[u64], i: usize| (i + s.len()).checked_sub(rank).map_or(1, |j| s[j]);
    (0..rank)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Some(x),
            (1, y) => Some(y),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Batch, Opset};

    #[test]
    fn broadcasting_rules() {
        assert_eq!(broadcast(&[4, 8, 8], &[4, 1, 1]), Some(vec![4, 8, 8]));
        assert_eq!(broadcast(&[4, 8, 8], &[8]), Some(vec![4, 8, 8]));
        assert_eq!(broadcast(&[1, 8, 8], &[4, 8, 8]), Some(vec![4, 8, 8]));
        assert_eq!(broadcast(&[4, 8, 8], &[3, 1, 1]), None);
    }

    #[test]
    fn constants_never_broadcast_over_the_batch() {
        let mut g = GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()));
        let x = g.input("x", vec![4]).unwrap();
        let per_sample = g.weight("c", vec![4], &[1.0; 4]).unwrap();
        let with_batch = g.weight("d", vec![2, 4], &[1.0; 8]).unwrap();
        let leading_one = g.weight("e", vec![1, 4], &[1.0; 4]).unwrap();
        let z = binary(
            &mut g,
            "Add",
            "s",
            Operand::Constant(&leading_one),
            Operand::Activation(&x),
        )
        .unwrap();
        assert_eq!(z.shape(), [4]);
        let y = binary(
            &mut g,
            "Add",
            "s",
            Operand::Activation(&x),
            Operand::Constant(&per_sample),
        )
        .unwrap();
        assert_eq!(y.shape(), [4]);
        // A constant may widen the activation within each sample.
        let column = g.input("col", vec![1, 1, 3]).unwrap();
        let causal = g.weight("m", vec![1, 1, 3, 1], &[1.0; 3]).unwrap();
        let w = binary(
            &mut g,
            "Mul",
            "s",
            Operand::Constant(&causal),
            Operand::Activation(&column),
        )
        .unwrap();
        assert_eq!(w.shape(), [1, 3, 3]);
        let err = binary(
            &mut g,
            "Mul",
            "s",
            Operand::Constant(&with_batch),
            Operand::Activation(&x),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("`d` [2, 4]: the constant's dimension 0 (size 2) lines up with the batch"),
            "{err}"
        );
        assert!(err.contains("--batch static"), "{err}");
        // Sizes that differ within a sample are refused as such, not as the batch.
        let wide = g.weight("f", vec![5], &[1.0; 5]).unwrap();
        let err = binary(
            &mut g,
            "Add",
            "s",
            Operand::Activation(&x),
            Operand::Constant(&wide),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("do not broadcast"), "{err}");
    }

    #[test]
    fn transposed_conv_and_resize_shapes() {
        let mut g = GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()));
        let x = g.input("x", vec![8, 4, 4]).unwrap();
        let w = g.weight("w", vec![8, 4, 2, 2], &[0.0; 128]).unwrap();
        let p = ConvTranspose {
            stride: vec![2, 2],
            pad: vec![0, 0],
            output_padding: vec![0, 0],
            dilation: vec![1, 1],
            groups: 1,
        };
        let y = conv_transpose(&mut g, "up", &x, &w, None, &p).unwrap();
        assert_eq!(y.shape(), [4, 8, 8]);
        let z = resize(&mut g, "r", "r", &y, &[16, 16], Interpolation::Nearest).unwrap();
        assert_eq!(z.shape(), [4, 16, 16]);
        let mut old = GraphBuilder::new(Opset::new(10).unwrap(), Batch::Fixed(1));
        let x = old.input("x", vec![1, 2, 2]).unwrap();
        assert!(resize(&mut old, "r", "r", &x, &[4, 4], Interpolation::Nearest).is_err());
    }

    #[test]
    fn an_output_padding_past_the_stride_is_refused() {
        let mut g = GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()));
        let x = g.input("x", vec![2, 4, 4]).unwrap();
        let w = g.weight("w", vec![2, 4, 3, 3], &[0.0; 72]).unwrap();
        let p = ConvTranspose {
            stride: vec![2, 2],
            pad: vec![1, 1],
            output_padding: vec![1, 3],
            dilation: vec![1, 4],
            groups: 1,
        };
        let err = conv_transpose(&mut g, "up", &x, &w, None, &p).unwrap_err();
        assert!(err.to_string().contains("not below its stride 2"), "{err}");
    }

    #[test]
    fn resize_scale_never_loses_an_output_sample() {
        // 7 → 31: f32(31/7) · 7 is 30.999998 in f32; the scale one step up sizes 31.
        assert_eq!((7.0f32 * (31.0f32 / 7.0)) as u64, 30);
        assert_eq!((7.0f32 * resize_scale(7, 31)) as u64, 31);
        for input in 1..=64u64 {
            for output in 1..=64u64 {
                let scale = resize_scale(input, output);
                assert_eq!((input as f32 * scale) as u64, output, "{input} → {output}");
                assert_eq!((input as f64 * f64::from(scale)) as u64, output);
            }
        }
        assert_eq!(resize_scale(4, 8), 2.0);
    }
}
