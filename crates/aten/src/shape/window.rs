//! Ops that slide a window or resample spatial axes: convolutions (and transposed ones),
//! max/average pooling, adaptive average pooling, padding and upsampling. The spatial axes
//! follow the channels; the rank comes from the op's name (`max_pool3d` → 3).

use super::{Operands, MAX_DIM};
use crate::program::Argument;

/// The per-sample shape of windowed op `op`; `None` when `op` is not one.
pub(super) fn infer(o: &Operands<'_>, op: &str) -> Option<Result<Vec<u64>, String>> {
    Some(match op {
        "conv1d.default"
        | "conv2d.default"
        | "conv3d.default"
        | "conv_transpose1d.default"
        | "conv_transpose2d.input"
        | "conv_transpose3d.input" => convolution(o, op),
        "constant_pad_nd.default"
        | "pad.default"
        | "reflection_pad1d.default"
        | "reflection_pad2d.default"
        | "reflection_pad3d.default"
        | "replication_pad1d.default"
        | "replication_pad2d.default"
        | "replication_pad3d.default" => pad(o, op),
        "max_pool1d.default" | "max_pool2d.default" | "max_pool3d.default"
        | "avg_pool1d.default" | "avg_pool2d.default" | "avg_pool3d.default" => pool(o, op),
        "adaptive_avg_pool1d.default"
        | "adaptive_avg_pool2d.default"
        | "adaptive_avg_pool3d.default"
        | "_adaptive_avg_pool2d.default"
        | "_adaptive_avg_pool3d.default" => (|| {
            let x = o.activation("self")?;
            let rank = spatial_rank(op);
            let out = o.sizes("output_size", rank)?;
            match x.split_first() {
                Some((&c, sizes)) if sizes.len() == rank => {
                    Ok([c].into_iter().chain(out).collect())
                }
                _ => Err(format!("adaptive pooling of per-sample {x:?}")),
            }
        })(),
        _ if op.starts_with("upsample_") => upsample(o, op),
        _ => return None,
    })
}

/// `(size + 2·pad − dilation·(kernel − 1) − 1) / stride + 1`, rounded as torch rounds.
/// Every operand is at most [`MAX_DIM`], so nothing here overflows.
fn window(
    size: u64,
    kernel: u64,
    stride: u64,
    pad: u64,
    dilation: u64,
    ceil: bool,
) -> Result<u64, String> {
    let span = dilation * kernel.saturating_sub(1) + 1;
    let padded = size + 2 * pad;
    if stride == 0 || kernel == 0 || padded < span {
        return Err(format!(
            "a window of {kernel} (stride {stride}, padding {pad}) does not fit size {size}"
        ));
    }
    let steps = padded - span;
    let mut out = if ceil {
        steps.div_ceil(stride)
    } else {
        steps / stride
    } + 1;
    if ceil && (out - 1) * stride >= size + pad {
        out -= 1;
    }
    Ok(out)
}

/// The spatial rank an op's name ends with (`max_pool3d.default` → 3).
fn spatial_rank(op: &str) -> usize {
    match op.split('.').next().and_then(|name| name.strip_suffix('d')) {
        Some(name) if name.ends_with('1') => 1,
        Some(name) if name.ends_with('3') => 3,
        _ => 2,
    }
}

/// A convolution or transposed convolution of an activation by a stored weight.
fn convolution(o: &Operands<'_>, op: &str) -> Result<Vec<u64>, String> {
    let x = o.activation("input")?;
    let w = o.stored("weight")?;
    let rank = x.len().saturating_sub(1);
    let (Some((_, sizes)), Some((&[w0, w1], kernel))) =
        (x.split_first(), w.split_first_chunk::<2>())
    else {
        return Err(format!("convolution of per-sample {x:?} by {w:?}"));
    };
    if kernel.len() != rank || !(1..=3).contains(&rank) || w.iter().any(|&d| d > MAX_DIM) {
        return Err(format!("convolution of per-sample {x:?} by {w:?}"));
    }
    let stride = o.sizes("stride", rank)?;
    // `conv*.padding` defaults to the string "valid", which is no padding.
    let pad = o.sizes_or("padding", rank, &[0])?;
    let dil = o.sizes("dilation", rank)?;
    let groups = u64::try_from(o.args.int("groups")?)
        .ok()
        .filter(|&g| (1..=MAX_DIM).contains(&g))
        .ok_or("groups out of range")?;
    if op.starts_with("conv_transpose") {
        let out_pad = o.sizes("output_padding", rank)?;
        let size = |i: usize| {
            ((sizes[i].saturating_sub(1)) * stride[i]
                + dil[i] * kernel[i].saturating_sub(1)
                + out_pad[i]
                + 1)
            .checked_sub(2 * pad[i])
            .ok_or_else(|| {
                format!(
                    "transposed convolution of size {} gives an empty output",
                    sizes[i]
                )
            })
        };
        let channels = w1.checked_mul(groups).ok_or("output channels overflow")?;
        [Ok(channels)]
            .into_iter()
            .chain((0..rank).map(size))
            .collect()
    } else {
        [Ok(w0)]
            .into_iter()
            .chain((0..rank).map(|i| window(sizes[i], kernel[i], stride[i], pad[i], dil[i], false)))
            .collect()
    }
}

/// Constant, reflection or replication padding: pairs of sizes from the last axis back,
/// never reaching the batch.
fn pad(o: &Operands<'_>, op: &str) -> Result<Vec<u64>, String> {
    let x = o.activation("self")?;
    let list = o
        .args
        .optional_ints(if op.ends_with("pad2d.default") {
            "padding"
        } else {
            "pad"
        })?
        .ok_or("the pad list is missing")?;
    if !list.len().is_multiple_of(2)
        || list.len() / 2 > x.len()
        || list.iter().any(|&p| !(0..=MAX_DIM as i64).contains(&p))
    {
        return Err(format!("pad list {list:?} for per-sample {x:?} (pairs of non-negative sizes, the batch not padded)"));
    }
    let mut out = x.clone();
    for (k, pair) in list.chunks(2).enumerate() {
        let axis = x.len() - 1 - k;
        out[axis] += (pair[0] + pair[1]) as u64;
    }
    Ok(out)
}

/// Max or average pooling; the stride defaults to the kernel.
fn pool(o: &Operands<'_>, op: &str) -> Result<Vec<u64>, String> {
    let x = o.activation("self")?;
    let rank = spatial_rank(op);
    let Some((&c, sizes)) = x.split_first().filter(|(_, s)| s.len() == rank) else {
        return Err(format!("{rank}-D pooling of per-sample {x:?}"));
    };
    let kernel = o.sizes("kernel_size", rank)?;
    let kernel_i64: Vec<i64> = kernel.iter().map(|&k| k as i64).collect();
    let stride = o.sizes_or("stride", rank, &kernel_i64)?;
    let pad = o.sizes("padding", rank)?;
    let dil = if op.starts_with("max_pool") {
        o.sizes("dilation", rank)?
    } else {
        vec![1; rank]
    };
    let ceil = o.args.bool("ceil_mode")?;
    [Ok(c)]
        .into_iter()
        .chain((0..rank).map(|i| window(sizes[i], kernel[i], stride[i], pad[i], dil[i], ceil)))
        .collect()
}

/// Upsampling to output sizes or by scale factors (floored, as torch sizes it).
fn upsample(o: &Operands<'_>, op: &str) -> Result<Vec<u64>, String> {
    let x = o.activation("input")?;
    let rank = spatial_rank(op);
    let Some((&c, sizes)) = x.split_first().filter(|(_, s)| s.len() == rank) else {
        return Err(format!("{rank}-D upsampling of per-sample {x:?}"));
    };
    let out: Option<Vec<u64>> = match (o.args.get("output_size"), o.args.get("scale_factors")) {
        (Some(Argument::Ints(size)), _) if size.len() == rank => size
            .iter()
            .map(|&s| {
                u64::try_from(s)
                    .ok()
                    .filter(|&s| (1..=MAX_DIM).contains(&s))
            })
            .collect(),
        (None | Some(Argument::None), Some(Argument::Floats(f))) if f.len() == rank => sizes
            .iter()
            .zip(f)
            .map(|(&n, &f)| {
                let o = (n as f64 * f).floor();
                (f > 0.0 && o >= 1.0 && o <= MAX_DIM as f64).then_some(o as u64)
            })
            .collect(),
        _ => None,
    };
    let out = out
        .ok_or_else(|| format!("upsampling needs {rank} positive output sizes or scale factors"))?;
    Ok([c].into_iter().chain(out).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_round_as_torch() {
        // resnet stem: 224 → 112 (conv 7/2/3) → 56 (pool 3/2/1).
        assert_eq!(window(224, 7, 2, 3, 1, false), Ok(112));
        assert_eq!(window(112, 3, 2, 1, 1, false), Ok(56));
        // ceil_mode: 5 with kernel 2 stride 2 → 3; the last window must start inside.
        assert_eq!(window(5, 2, 2, 0, 1, true), Ok(3));
        assert_eq!(window(4, 2, 2, 0, 1, true), Ok(2));
        assert!(window(2, 5, 1, 0, 1, false).is_err());
    }

    #[test]
    fn spatial_rank_is_read_from_the_name() {
        assert_eq!(spatial_rank("max_pool3d.default"), 3);
        assert_eq!(spatial_rank("conv_transpose1d.default"), 1);
        assert_eq!(spatial_rank("upsample_bilinear2d.vec"), 2);
    }
}
