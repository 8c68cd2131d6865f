//! Ops that slide a window over the trailing (spatial) axes of a constant: convolutions
//! and their transposes in 1 to 3 dimensions, max and average pools (ceil mode, dilation,
//! padding counted or not), adaptive average pools, `im2col`/`col2im` and padding in every
//! mode, each with torch's output-size rule.

use super::tensor::{element_count, strides, Tensor, MAX_CONV_STEPS};
use super::Args;
use crate::fractional::{self, Windows};
use crate::program::Argument;

/// The spatial geometry of a windowed op: per spatial axis, kernel, stride, padding before
/// (and after), dilation.
#[derive(Clone, Debug)]
struct Window {
    kernel: Vec<u64>,
    stride: Vec<u64>,
    padding: Vec<u64>,
    dilation: Vec<u64>,
}

/// Coordinates of every point of a box of sizes `dims`, row-major.
fn points(dims: &[u64]) -> impl Iterator<Item = Vec<u64>> + '_ {
    let count: u64 = dims.iter().product();
    let mut at = vec![0u64; dims.len()];
    (0..count).map(move |i| {
        if i > 0 {
            for axis in (0..dims.len()).rev() {
                at[axis] += 1;
                if at[axis] < dims[axis] {
                    break;
                }
                at[axis] = 0;
            }
        }
        at.clone()
    })
}

/// A per-axis list argument of `n` entries: one value repeats, none gives `default`
/// (`Some(empty)`: the kernel, as pools default their stride).
fn per_axis(a: &Args<'_>, name: &str, n: usize, default: &[u64]) -> Result<Vec<u64>, String> {
    let v = match a.node_arg(name) {
        None | Some(Argument::None) => Vec::new(),
        Some(_) => a.ints(name)?,
    };
    let v: Vec<u64> = v
        .iter()
        .map(|&i| u64::try_from(i).map_err(|_| format!("{name} {i}")))
        .collect::<Result<_, _>>()?;
    match v.len() {
        0 => Ok(default.to_vec()),
        1 => Ok(vec![v[0]; n]),
        len if len == n => Ok(v),
        _ => Err(format!("{name} {v:?} for {n} spatial axes")),
    }
}

/// Output size of a window sweep (torch's `pooling_output_shape` / conv rule).
pub fn swept(size: u64, k: u64, s: u64, p: u64, d: u64, ceil: bool) -> Result<u64, String> {
    if s == 0 || k == 0 {
        return Err("a window with a stride or kernel of 0".into());
    }
    let span = d * (k - 1) + 1;
    let padded = size + 2 * p;
    let room = padded
        .checked_sub(span)
        .ok_or("a window larger than its padded input")?;
    let mut out = if ceil { room.div_ceil(s) } else { room / s } + 1;
    // The last window must start inside the input or its left padding.
    if ceil && (out - 1) * s >= size + p {
        out -= 1;
    }
    Ok(out)
}

fn check_steps(parts: &[u64]) -> Result<(), String> {
    parts
        .iter()
        .try_fold(1u64, |acc, &v| acc.checked_mul(v))
        .filter(|&s| s <= MAX_CONV_STEPS)
        .map(|_| ())
        .ok_or_else(|| "a windowed op too large to evaluate at export".to_owned())
}

/// A convolution of `x` `[N, C, *S]` by `w` `[O, C/groups, *K]`, float32, plus `bias`.
fn convolution(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    win: &Window,
    groups: u64,
) -> Result<Tensor, String> {
    let n_sp = win.kernel.len();
    if x.rank() != n_sp + 2 || w.rank() != n_sp + 2 {
        return Err(format!(
            "a {n_sp}-d convolution of {:?} by {:?}",
            x.dims(),
            w.dims()
        ));
    }
    let (n, c, o, cg) = (x.dims()[0], x.dims()[1], w.dims()[0], w.dims()[1]);
    if groups == 0 || c != cg * groups || o % groups != 0 {
        return Err(format!(
            "a convolution of {:?} by {:?} in {groups} groups",
            x.dims(),
            w.dims()
        ));
    }
    let sizes = &x.dims()[2..];
    let out: Vec<u64> = (0..n_sp)
        .map(|i| {
            swept(
                sizes[i],
                win.kernel[i],
                win.stride[i],
                win.padding[i],
                win.dilation[i],
                false,
            )
        })
        .collect::<Result<_, _>>()?;
    let kernel_count: u64 = win.kernel.iter().product();
    let out_count: u64 = out.iter().product();
    check_steps(&[n, o, out_count, cg, kernel_count])?;
    let mut dims = vec![n, o];
    dims.extend(&out);
    element_count(&dims)?;
    let (xv, wv) = (x.to_f32(), w.to_f32());
    let xs = strides(x.dims());
    let ws = strides(w.dims());
    let kernel_points: Vec<Vec<u64>> = points(&win.kernel).collect();
    let out_points: Vec<Vec<u64>> = points(&out).collect();
    let per_group = o / groups;
    let mut y = Vec::with_capacity(element_count(&dims)? as usize);
    for b in 0..n {
        for oc in 0..o {
            let g = oc / per_group;
            let shift = bias.map_or(0.0, |t| t.to_f32()[oc as usize]);
            for at in &out_points {
                let mut acc = 0.0f32;
                for ic in 0..cg {
                    for k in &kernel_points {
                        let mut xi = b * xs[0] + (g * cg + ic) * xs[1];
                        let mut inside = true;
                        for i in 0..n_sp {
                            let pos = (at[i] * win.stride[i] + k[i] * win.dilation[i]) as i64
                                - win.padding[i] as i64;
                            if pos < 0 || pos >= sizes[i] as i64 {
                                inside = false;
                                break;
                            }
                            xi += pos as u64 * xs[i + 2];
                        }
                        if inside {
                            let wi = oc * ws[0]
                                + ic * ws[1]
                                + k.iter().zip(&ws[2..]).map(|(p, s)| p * s).sum::<u64>();
                            acc += xv[xi as usize] * wv[wi as usize];
                        }
                    }
                }
                y.push(acc + shift);
            }
        }
    }
    Tensor::f32(dims, y)
}

/// A transposed convolution of `x` `[N, C, *S]` by `w` `[C, O/groups, *K]`: every input
/// value scattered through the kernel (torch's `conv_transpose`).
fn transposed(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    win: &Window,
    output_padding: &[u64],
    groups: u64,
) -> Result<Tensor, String> {
    let n_sp = win.kernel.len();
    if x.rank() != n_sp + 2 || w.rank() != n_sp + 2 {
        return Err(format!(
            "a {n_sp}-d transposed convolution of {:?} by {:?}",
            x.dims(),
            w.dims()
        ));
    }
    let (n, c, og) = (x.dims()[0], x.dims()[1], w.dims()[1]);
    if groups == 0 || w.dims()[0] != c || c % groups != 0 {
        return Err(format!(
            "a transposed convolution of {:?} by {:?} in {groups} groups",
            x.dims(),
            w.dims()
        ));
    }
    let o = og * groups;
    let cg = c / groups;
    let sizes = &x.dims()[2..];
    let out: Vec<u64> = (0..n_sp)
        .map(|i| {
            ((sizes[i].saturating_sub(1)) * win.stride[i]
                + win.dilation[i] * (win.kernel[i].saturating_sub(1))
                + output_padding[i]
                + 1)
            .checked_sub(2 * win.padding[i])
            .ok_or_else(|| "a transposed convolution with more padding than output".to_owned())
        })
        .collect::<Result<_, _>>()?;
    let kernel_count: u64 = win.kernel.iter().product();
    let in_count: u64 = sizes.iter().product();
    check_steps(&[n, c, in_count, og, kernel_count])?;
    let mut dims = vec![n, o];
    dims.extend(&out);
    let total = element_count(&dims)? as usize;
    let mut y = vec![0f32; total];
    let ys = strides(&dims);
    let (xv, wv) = (x.to_f32(), w.to_f32());
    let ws = strides(w.dims());
    let kernel_points: Vec<Vec<u64>> = points(&win.kernel).collect();
    let in_points: Vec<Vec<u64>> = points(sizes).collect();
    let mut xi = 0usize;
    for b in 0..n {
        for ic in 0..c {
            let g = ic / cg;
            for at in &in_points {
                let v = xv[xi];
                xi += 1;
                for k in &kernel_points {
                    let mut yi = b * ys[0];
                    let mut inside = true;
                    for i in 0..n_sp {
                        let pos = (at[i] * win.stride[i] + k[i] * win.dilation[i]) as i64
                            - win.padding[i] as i64;
                        if pos < 0 || pos >= out[i] as i64 {
                            inside = false;
                            break;
                        }
                        yi += pos as u64 * ys[i + 2];
                    }
                    if !inside {
                        continue;
                    }
                    for oc in 0..og {
                        let wi = ic * ws[0]
                            + oc * ws[1]
                            + k.iter().zip(&ws[2..]).map(|(p, s)| p * s).sum::<u64>();
                        y[(yi + (g * og + oc) * ys[1]) as usize] += v * wv[wi as usize];
                    }
                }
            }
        }
    }
    if let Some(bias) = bias {
        let shift = bias.to_f32();
        let plane: usize = out.iter().product::<u64>() as usize;
        for (i, v) in y.iter_mut().enumerate() {
            *v += shift[(i / plane) % o as usize];
        }
    }
    Tensor::f32(dims, y)
}

/// The optional bias argument.
fn bias(a: &Args<'_>) -> Result<Option<Tensor>, String> {
    match a.node_arg("bias") {
        None | Some(Argument::None) => Ok(None),
        Some(_) => a.tensor("bias").map(Some),
    }
}

/// A convolution node of any overload: `conv{1,2,3}d` (padding as numbers, or `same` /
/// `valid`), `conv_transpose{1,2,3}d`, `_convolution`.
fn conv(op: &str, a: &Args<'_>) -> Result<Tensor, String> {
    let x = a.tensor("input")?;
    let w = a.tensor("weight")?;
    let n_sp = w.rank().saturating_sub(2);
    if n_sp == 0 {
        return Err(format!("a convolution by a weight of {:?}", w.dims()));
    }
    // A convolution of unbatched `[C, *S]` input adds and removes the batch axis.
    let unbatched = x.rank() == n_sp + 1;
    let x = if unbatched {
        let mut d: Vec<i64> = vec![1];
        d.extend(x.dims().iter().map(|&s| s as i64));
        x.reshape(&d)?
    } else {
        x
    };
    let kernel = w.dims()[2..].to_vec();
    let ones = vec![1; n_sp];
    let transposed_op = op.starts_with("conv_transpose")
        || (matches!(op, "_convolution.default" | "convolution.default")
            && a.bool("transposed")?);
    let stride = per_axis(a, "stride", n_sp, &ones)?;
    let dilation = per_axis(a, "dilation", n_sp, &ones)?;
    let groups = u64::try_from(a.int("groups")?).map_err(|_| "negative groups")?;
    let padding = match a.node_arg("padding") {
        Some(Argument::String(mode)) if mode == "valid" => vec![0; n_sp],
        Some(Argument::String(mode)) if mode == "same" => {
            // torch pads `total = d·(k−1)` with the odd one after; only even totals (odd
            // kernels, or even dilation) are symmetric.
            let totals: Vec<u64> = (0..n_sp).map(|i| dilation[i] * (kernel[i] - 1)).collect();
            if totals.iter().any(|t| t % 2 == 1) || stride.iter().any(|&s| s != 1) {
                return Err("a `same` convolution of a constant with an asymmetric padding".into());
            }
            totals.iter().map(|t| t / 2).collect()
        }
        Some(Argument::String(mode)) => return Err(format!("convolution padding `{mode}`")),
        _ => per_axis(a, "padding", n_sp, &vec![0; n_sp])?,
    };
    let win = Window {
        kernel,
        stride,
        padding,
        dilation,
    };
    let bias = bias(a)?;
    let y = if transposed_op {
        let output_padding = per_axis(a, "output_padding", n_sp, &vec![0; n_sp])?;
        transposed(&x, &w, bias.as_ref(), &win, &output_padding, groups)?
    } else {
        convolution(&x, &w, bias.as_ref(), &win, groups)?
    };
    if unbatched {
        let d: Vec<i64> = y.dims()[1..].iter().map(|&s| s as i64).collect();
        return y.reshape(&d);
    }
    Ok(y)
}

/// Max pooling (values, and indices into each input plane as torch gives them) or average
/// pooling over the last `n_sp` axes.
fn pool(op: &str, a: &Args<'_>, n_sp: usize) -> Result<Vec<Tensor>, String> {
    let x = a.tensor("self")?;
    if x.rank() < n_sp + 1 {
        return Err(format!("a {n_sp}-d pool of {:?}", x.dims()));
    }
    let kernel = per_axis(a, "kernel_size", n_sp, &[])?;
    if kernel.len() != n_sp {
        return Err("a pool without a kernel size".into());
    }
    let stride = per_axis(a, "stride", n_sp, &kernel)?;
    let padding = per_axis(a, "padding", n_sp, &vec![0; n_sp])?;
    let max = op.starts_with("max_pool");
    let dilation = if max {
        per_axis(a, "dilation", n_sp, &vec![1; n_sp])?
    } else {
        vec![1; n_sp]
    };
    let ceil = a.bool("ceil_mode")?;
    let split = x.rank() - n_sp;
    let sizes = &x.dims()[split..];
    if (0..n_sp).any(|i| padding[i] * 2 > kernel[i]) {
        return Err("a pool padded by more than half its kernel".into());
    }
    let out: Vec<u64> = (0..n_sp)
        .map(|i| {
            swept(
                sizes[i],
                kernel[i],
                stride[i],
                padding[i],
                dilation[i],
                ceil,
            )
        })
        .collect::<Result<_, _>>()?;
    let planes: u64 = x.dims()[..split].iter().product();
    let plane: u64 = sizes.iter().product();
    let kernel_count: u64 = kernel.iter().product();
    check_steps(&[planes, out.iter().product(), kernel_count])?;
    let mut dims = x.dims()[..split].to_vec();
    dims.extend(&out);
    element_count(&dims)?;
    let xv = x.to_f32();
    let ps = strides(sizes);
    // Shared with the max pools, which have no `count_include_pad`.
    let count_pad = a.bool_or("count_include_pad", true)?;
    let divisor = match a.node_arg("divisor_override") {
        None | Some(Argument::None) => None,
        Some(_) => Some(a.int("divisor_override")?),
    };
    let kernel_points: Vec<Vec<u64>> = points(&kernel).collect();
    let out_points: Vec<Vec<u64>> = points(&out).collect();
    let mut values = Vec::new();
    let mut indices = Vec::new();
    for p in 0..planes {
        let base = (p * plane) as usize;
        for at in &out_points {
            if max {
                let (mut best, mut best_at) = (f32::NEG_INFINITY, -1i64);
                for k in &kernel_points {
                    let mut flat = 0u64;
                    let mut inside = true;
                    for i in 0..n_sp {
                        let pos =
                            (at[i] * stride[i] + k[i] * dilation[i]) as i64 - padding[i] as i64;
                        if pos < 0 || pos >= sizes[i] as i64 {
                            inside = false;
                            break;
                        }
                        flat += pos as u64 * ps[i];
                    }
                    if inside {
                        let v = xv[base + flat as usize];
                        if v > best || v.is_nan() || best_at < 0 {
                            best = v;
                            best_at = flat as i64;
                        }
                    }
                }
                values.push(best);
                indices.push(best_at);
            } else {
                let mut sum = 0.0f32;
                let (mut window, mut inside_count) = (1u64, 1u64);
                let mut offsets = Vec::with_capacity(n_sp);
                for i in 0..n_sp {
                    let start = (at[i] * stride[i]) as i64 - padding[i] as i64;
                    let end = (start + kernel[i] as i64).min((sizes[i] + padding[i]) as i64);
                    window *= (end - start) as u64;
                    let (s, e) = (start.max(0), end.min(sizes[i] as i64));
                    inside_count *= (e - s).max(0) as u64;
                    offsets.push((s, e));
                }
                for k in points(
                    &offsets
                        .iter()
                        .map(|(s, e)| (e - s).max(0) as u64)
                        .collect::<Vec<_>>(),
                ) {
                    let flat: u64 = (0..n_sp)
                        .map(|i| (offsets[i].0 as u64 + k[i]) * ps[i])
                        .sum();
                    sum += xv[base + flat as usize];
                }
                let d = match divisor {
                    Some(d) => d as f32,
                    None if count_pad => window as f32,
                    None => inside_count as f32,
                };
                values.push(sum / d);
            }
        }
    }
    let y = Tensor::f32(dims.clone(), values)?;
    if op.contains("with_indices") {
        return Ok(vec![y, Tensor::i64(dims, indices)?]);
    }
    Ok(vec![y])
}

/// Output `j` of an adaptive pool of an axis of `size` to `out`: inputs
/// `⌊j·size/out⌋ .. ⌈(j+1)·size/out⌉` (torch's `start_index`/`end_index`). `out > 0`.
pub fn adaptive_window(j: u64, size: u64, out: u64) -> (u64, u64) {
    (j * size / out, ((j + 1) * size).div_ceil(out))
}

/// Adaptive max pooling with its indices, as torch's CPU kernel scans each window
/// (`adaptive_max_pool*d` in AdaptiveMaxPoolKernel.cpp): row-major, a value taken when
/// greater or NaN, the index flat in the spatial map, starting at the window's first point.
fn adaptive_max_pool(a: &Args<'_>, n_sp: usize) -> Result<Vec<Tensor>, String> {
    let x = a.tensor("self")?;
    let out = per_axis(a, "output_size", n_sp, &[])?;
    if out.len() != n_sp || x.rank() < n_sp + 1 || out.contains(&0) {
        return Err(format!("an adaptive max pool of {:?} to {out:?}", x.dims()));
    }
    let split = x.rank() - n_sp;
    let sizes = &x.dims()[split..];
    if sizes.contains(&0) {
        return Err("an adaptive max pool of an empty map".into());
    }
    let planes: u64 = x.dims()[..split].iter().product();
    let plane: u64 = sizes.iter().product();
    let mut dims = x.dims()[..split].to_vec();
    dims.extend(&out);
    element_count(&dims)?;
    check_steps(&[planes, plane])?;
    let xv = x.to_f32();
    let ps = strides(sizes);
    let (mut values, mut indices) = (Vec::new(), Vec::new());
    for p in 0..planes {
        let base = (p * plane) as usize;
        for at in points(&out) {
            let windows: Vec<(u64, u64)> = (0..n_sp)
                .map(|i| adaptive_window(at[i], sizes[i], out[i]))
                .collect();
            let lengths: Vec<u64> = windows.iter().map(|(s, e)| e - s).collect();
            let first: u64 = (0..n_sp).map(|i| windows[i].0 * ps[i]).sum();
            let (mut best, mut best_at) = (f32::NEG_INFINITY, first as i64);
            for k in points(&lengths) {
                let flat: u64 = (0..n_sp).map(|i| (windows[i].0 + k[i]) * ps[i]).sum();
                let v = xv[base + flat as usize];
                if v > best || v.is_nan() {
                    best = v;
                    best_at = flat as i64;
                }
            }
            values.push(best);
            indices.push(best_at);
        }
    }
    Ok(vec![
        Tensor::f32(dims.clone(), values)?,
        Tensor::i64(dims, indices)?,
    ])
}

/// `fractional_max_pool2d`/`3d` by their `random_samples`
/// ([`crate::fractional`]): the maxima and their indices.
fn fractional_max_pool(a: &Args<'_>, n_sp: usize) -> Result<Vec<Tensor>, String> {
    let x = a.tensor("self")?;
    let kernel = per_axis(a, "kernel_size", n_sp, &[])?;
    let out = per_axis(a, "output_size", n_sp, &[])?;
    let samples = a.tensor("random_samples")?;
    if x.rank() != n_sp + 1 && x.rank() != n_sp + 2 {
        return Err(format!(
            "fractional max pooling of {:?} over {n_sp} spatial axes",
            x.dims()
        ));
    }
    let split = x.rank() - n_sp;
    let planes: u64 = x.dims()[..split].iter().product();
    let windows = Windows::new(planes, &x.dims()[split..], &kernel, &out, &samples.to_f32())?;
    let mut dims = x.dims()[..split].to_vec();
    dims.extend(&out);
    let window: u64 = kernel.iter().product();
    check_steps(&[element_count(&dims)?, window])?;
    let (values, indices) = fractional::pool(&x.to_f32(), &windows);
    Ok(vec![
        Tensor::f32(dims.clone(), values)?,
        Tensor::i64(dims, indices)?,
    ])
}

/// Adaptive average pooling: output cell `i` of an axis averages input
/// `floor(i·in/out) .. ceil((i+1)·in/out)`.
fn adaptive_pool(a: &Args<'_>, n_sp: usize) -> Result<Tensor, String> {
    let x = a.tensor("self")?;
    let out = per_axis(a, "output_size", n_sp, &[])?;
    if out.len() != n_sp || x.rank() < n_sp + 1 {
        return Err(format!("an adaptive pool of {:?} to {out:?}", x.dims()));
    }
    let mut y = x;
    // Separable: one axis at a time.
    for (i, &to) in out.iter().enumerate() {
        let at = y.rank() - n_sp + i;
        let size = y.dims()[at];
        if to == 0 || size == 0 {
            return Err("an adaptive pool to or from size 0".into());
        }
        let outer: u64 = y.dims()[..at].iter().product();
        let inner: u64 = y.dims()[at + 1..].iter().product();
        let v = y.to_f32();
        let mut r = Vec::with_capacity((outer * to * inner) as usize);
        for o in 0..outer {
            for j in 0..to {
                let (s, e) = adaptive_window(j, size, to);
                for q in 0..inner {
                    let sum: f32 = (s..e)
                        .map(|p| v[((o * size + p) * inner + q) as usize])
                        .sum();
                    r.push(sum / (e - s) as f32);
                }
            }
        }
        let mut dims = y.dims().to_vec();
        dims[at] = to;
        y = Tensor::f32(dims, r)?;
    }
    Ok(y)
}

/// Padding of the last axes: `pad` lists (before, after) from the last axis backwards, as
/// `F.pad`; negative amounts crop. `mode` is constant, reflect, replicate or circular.
fn pad(x: &Tensor, pad: &[i64], mode: &str, value: f64) -> Result<Tensor, String> {
    if !pad.len().is_multiple_of(2) || pad.len() / 2 > x.rank() {
        return Err(format!("padding {pad:?} of a rank-{} tensor", x.rank()));
    }
    let mut y = x.clone();
    for (j, pair) in pad.chunks(2).enumerate() {
        let at = x.rank() - 1 - j;
        let size = y.dims()[at] as i64;
        let (before, after) = (pair[0], pair[1]);
        let new = size + before + after;
        if new < 0 {
            return Err(format!("padding {pad:?} leaves a negative size"));
        }
        if mode != "constant" && (before > size || after > size || size == 0) {
            if mode == "reflect" && (before >= size || after >= size) {
                return Err(format!(
                    "reflection padding of {before}/{after} of a size-{size} axis"
                ));
            }
            if mode == "circular" {
                return Err(format!(
                    "circular padding of {before}/{after} of a size-{size} axis"
                ));
            }
        }
        // Circular padding wraps around what the negative amounts leave (torch's
        // `_pad_circular` crops first): `kept` entries from `cut`.
        let (cut, kept) = ((-before).max(0), size - (-before).max(0) - (-after).max(0));
        if mode == "circular" && (before.max(after) > kept || kept <= 0) {
            return Err(format!(
                "circular padding of {before}/{after} of a size-{size} axis cropped to {kept}"
            ));
        }
        // Output position `i` reads input `i - before`, mapped into range by the mode
        // (`None`: the fill value).
        let source = |i: i64| -> Option<i64> {
            if mode == "circular" {
                return Some((i - before.max(0)).rem_euclid(kept) + cut);
            }
            let p = i - before;
            if (0..size).contains(&p) {
                return Some(p);
            }
            match mode {
                "constant" => None,
                "reflect" => Some(if p < 0 { -p } else { 2 * (size - 1) - p }),
                _ => Some(p.clamp(0, size - 1)),
            }
        };
        let picks: Vec<Option<i64>> = (0..new).map(source).collect();
        let outer: u64 = y.dims()[..at].iter().product();
        let inner: u64 = y.dims()[at + 1..].iter().product();
        let mut dims = y.dims().to_vec();
        dims[at] = new as u64;
        element_count(&dims)?;
        let (size, inner) = (size as u64, inner as usize);
        y = match y.values() {
            super::Values::I64(v) => Tensor::i64(
                dims,
                take_along(v, value as i64, &picks, outer, size, inner),
            )?,
            super::Values::F32(v) => Tensor::f32(
                dims,
                take_along(v, value as f32, &picks, outer, size, inner),
            )?,
        };
    }
    Ok(y)
}

/// Values of a tensor of `outer × size × inner` elements (`v`, row-major) taken along its
/// middle axis: output row `k` of each outer block is input row `picks[k]`, or `fill` for
/// `None`. Every pick is below `size`.
fn take_along<T: Copy>(
    v: &[T],
    fill: T,
    picks: &[Option<i64>],
    outer: u64,
    size: u64,
    inner: usize,
) -> Vec<T> {
    let mut r = Vec::with_capacity(outer as usize * picks.len() * inner);
    for o in 0..outer {
        for p in picks {
            match p {
                Some(p) => {
                    let start = (o * size + *p as u64) as usize * inner;
                    r.extend_from_slice(&v[start..start + inner]);
                }
                None => r.extend(std::iter::repeat_n(fill, inner)),
            }
        }
    }
    r
}

/// `im2col` (`F.unfold`) of `[N, C, H, W]`: `[N, C·kh·kw, L]`, one column per window.
fn im2col(a: &Args<'_>) -> Result<Tensor, String> {
    let x = a.tensor("self")?;
    let batched = x.rank() == 4;
    let x = if batched {
        x
    } else {
        x.reshape(&prepend_one(&x))?
    };
    let &[n, c, h, w] = x.dims() else {
        return Err(format!("im2col of {:?}", x.dims()));
    };
    let kernel = per_axis(a, "kernel_size", 2, &[])?;
    let dilation = per_axis(a, "dilation", 2, &[1, 1])?;
    let padding = per_axis(a, "padding", 2, &[0, 0])?;
    let stride = per_axis(a, "stride", 2, &[1, 1])?;
    if kernel.len() != 2 {
        return Err("im2col without a kernel size".into());
    }
    let oh = swept(h, kernel[0], stride[0], padding[0], dilation[0], false)?;
    let ow = swept(w, kernel[1], stride[1], padding[1], dilation[1], false)?;
    let rows = c * kernel[0] * kernel[1];
    let dims = vec![n, rows, oh * ow];
    element_count(&dims)?;
    let v = x.to_f32();
    let mut r = Vec::new();
    for b in 0..n {
        for row in 0..rows {
            let (ch, ki, kj) = (
                row / (kernel[0] * kernel[1]),
                (row / kernel[1]) % kernel[0],
                row % kernel[1],
            );
            for i in 0..oh {
                for j in 0..ow {
                    let y = (i * stride[0] + ki * dilation[0]) as i64 - padding[0] as i64;
                    let xx = (j * stride[1] + kj * dilation[1]) as i64 - padding[1] as i64;
                    r.push(
                        if (0..h as i64).contains(&y) && (0..w as i64).contains(&xx) {
                            v[(((b * c + ch) * h + y as u64) * w + xx as u64) as usize]
                        } else {
                            0.0
                        },
                    );
                }
            }
        }
    }
    let y = Tensor::f32(dims, r)?;
    if batched {
        Ok(y)
    } else {
        y.reshape(&drop_first(&y))
    }
}

/// `col2im` (`F.fold`): the sum of every column back into its window of `output_size`.
fn col2im(a: &Args<'_>) -> Result<Tensor, String> {
    let x = a.tensor("self")?;
    let batched = x.rank() == 3;
    let x = if batched {
        x
    } else {
        x.reshape(&prepend_one(&x))?
    };
    let &[n, rows, l] = x.dims() else {
        return Err(format!("col2im of {:?}", x.dims()));
    };
    let size = per_axis(a, "output_size", 2, &[])?;
    let kernel = per_axis(a, "kernel_size", 2, &[])?;
    let dilation = per_axis(a, "dilation", 2, &[1, 1])?;
    let padding = per_axis(a, "padding", 2, &[0, 0])?;
    let stride = per_axis(a, "stride", 2, &[1, 1])?;
    if kernel.len() != 2 || size.len() != 2 {
        return Err("col2im without a kernel or output size".into());
    }
    let (h, w) = (size[0], size[1]);
    let oh = swept(h, kernel[0], stride[0], padding[0], dilation[0], false)?;
    let ow = swept(w, kernel[1], stride[1], padding[1], dilation[1], false)?;
    let per = kernel[0] * kernel[1];
    if rows % per != 0 || oh * ow != l {
        return Err(format!("col2im of {:?} into {size:?}", x.dims()));
    }
    let c = rows / per;
    let dims = vec![n, c, h, w];
    let mut r = vec![0f32; element_count(&dims)? as usize];
    let v = x.to_f32();
    for b in 0..n {
        for row in 0..rows {
            let (ch, ki, kj) = (row / per, (row / kernel[1]) % kernel[0], row % kernel[1]);
            for i in 0..oh {
                for j in 0..ow {
                    let y = (i * stride[0] + ki * dilation[0]) as i64 - padding[0] as i64;
                    let xx = (j * stride[1] + kj * dilation[1]) as i64 - padding[1] as i64;
                    if (0..h as i64).contains(&y) && (0..w as i64).contains(&xx) {
                        r[(((b * c + ch) * h + y as u64) * w + xx as u64) as usize] +=
                            v[((b * rows + row) * l + i * ow + j) as usize];
                    }
                }
            }
        }
    }
    let y = Tensor::f32(dims, r)?;
    if batched {
        Ok(y)
    } else {
        y.reshape(&drop_first(&y))
    }
}

fn prepend_one(x: &Tensor) -> Vec<i64> {
    std::iter::once(1)
        .chain(x.dims().iter().map(|&s| s as i64))
        .collect()
}

fn drop_first(x: &Tensor) -> Vec<i64> {
    x.dims()[1..].iter().map(|&s| s as i64).collect()
}

/// The windowed ops of this file, or `None` for another op.
pub(super) fn evaluate(op: &str, a: &Args<'_>) -> Option<Result<Vec<Tensor>, String>> {
    let one = |t: Result<Tensor, String>| Some(t.map(|t| vec![t]));
    match op {
        "conv1d.default"
        | "conv1d.padding"
        | "conv2d.default"
        | "conv2d.padding"
        | "conv3d.default"
        | "conv3d.padding"
        | "conv_transpose1d.default"
        | "conv_transpose2d.input"
        | "conv_transpose3d.input"
        | "_convolution.default"
        | "convolution.default" => one(conv(op, a)),
        "max_pool1d.default" | "max_pool1d_with_indices.default" | "avg_pool1d.default" => {
            Some(pool(op, a, 1))
        }
        "max_pool2d.default" | "max_pool2d_with_indices.default" | "avg_pool2d.default" => {
            Some(pool(op, a, 2))
        }
        "max_pool3d.default" | "max_pool3d_with_indices.default" | "avg_pool3d.default" => {
            Some(pool(op, a, 3))
        }
        "adaptive_avg_pool1d.default" => one(adaptive_pool(a, 1)),
        "adaptive_avg_pool2d.default" | "_adaptive_avg_pool2d.default" => one(adaptive_pool(a, 2)),
        "adaptive_avg_pool3d.default" | "_adaptive_avg_pool3d.default" => one(adaptive_pool(a, 3)),
        "adaptive_max_pool1d.default" => Some(adaptive_max_pool(a, 1)),
        "adaptive_max_pool2d.default" => Some(adaptive_max_pool(a, 2)),
        "adaptive_max_pool3d.default" => Some(adaptive_max_pool(a, 3)),
        "fractional_max_pool2d.default" => Some(fractional_max_pool(a, 2)),
        "fractional_max_pool3d.default" => Some(fractional_max_pool(a, 3)),
        "im2col.default" => one(im2col(a)),
        "col2im.default" => one(col2im(a)),
        "constant_pad_nd.default" => one((|| {
            pad(
                &a.tensor("self")?,
                &a.ints("pad")?,
                "constant",
                a.number("value")?,
            )
        })()),
        "pad.default" => one((|| {
            let mode = a.string("mode")?;
            if !["constant", "reflect", "replicate", "circular"].contains(&mode.as_str()) {
                return Err(format!("padding mode `{mode}`"));
            }
            pad(
                &a.tensor("self")?,
                &a.ints("pad")?,
                &mode,
                // torch's `pad` fills with 0 when `value` is None, its default.
                a.number_or("value", 0.0)?,
            )
        })()),
        "reflection_pad1d.default"
        | "reflection_pad2d.default"
        | "reflection_pad3d.default"
        | "replication_pad1d.default"
        | "replication_pad2d.default"
        | "replication_pad3d.default" => one((|| {
            let mode = if op.starts_with("reflection") {
                "reflect"
            } else {
                "replicate"
            };
            pad(&a.tensor("self")?, &a.ints("padding")?, mode, 0.0)
        })()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceil_mode_drops_a_window_starting_in_the_right_padding() {
        assert_eq!(swept(5, 2, 2, 0, 1, false).unwrap(), 2);
        assert_eq!(swept(5, 2, 2, 0, 1, true).unwrap(), 3);
        // 6 wide, kernel 3, stride 3, pad 1: a fourth window would start in the padding.
        assert_eq!(swept(6, 3, 3, 1, 1, true).unwrap(), 3);
        assert!(swept(2, 5, 1, 0, 1, false).is_err());
    }

    #[test]
    fn pads_reflect_replicate_and_wrap() {
        let x = Tensor::f32(vec![3], vec![1., 2., 3.]).unwrap();
        let got = |mode| pad(&x, &[2, 1], mode, 9.0).unwrap().to_f32();
        assert_eq!(got("constant"), [9., 9., 1., 2., 3., 9.]);
        assert_eq!(got("reflect"), [3., 2., 1., 2., 3., 2.]);
        assert_eq!(got("replicate"), [1., 1., 1., 2., 3., 3.]);
        assert_eq!(got("circular"), [2., 3., 1., 2., 3., 1.]);
        assert_eq!(
            pad(&x, &[-1, 0], "constant", 0.0).unwrap().to_f32(),
            [2., 3.]
        );
    }

    #[test]
    fn circular_pads_wrap_what_the_crop_leaves_and_replicate_clamps_to_the_input() {
        let x = Tensor::f32(vec![4], vec![0., 1., 2., 3.]).unwrap();
        let got = |pads: &[i64], mode| pad(&x, pads, mode, 0.0).unwrap().to_f32();
        // torch: F.pad(arange(4), (-1, 1), "circular") is [1, 2, 3, 1], (1, −1) [2, 0, 1, 2].
        assert_eq!(got(&[-1, 1], "circular"), [1., 2., 3., 1.]);
        assert_eq!(got(&[1, -1], "circular"), [2., 0., 1., 2.]);
        assert!(pad(&x, &[-2, 3], "circular", 0.0).is_err());
        // (−4, 5) replicate reads the last entry only: [3, 3, 3, 3, 3].
        assert_eq!(got(&[-4, 5], "replicate"), [3.; 5]);
    }
}
