//! The `torch.fft` transforms whose result is real, on a real input, as torch's
//! references define them (`torch/_refs/fft.py`): `irfft`/`irfft2`/`irfftn` and
//! `hfft`/`hfft2`/`hfftn` (a complex-to-real transform of the input read as a one-sided
//! spectrum with zero imaginary part), and `fftshift`/`ifftshift` (rolls). Plans both the
//! evaluator and the ONNX lowering follow, so a constant and an activation are transformed
//! by the same matrices.
//!
//! A complex-to-real transform over dims `d₁ … dₖ` is, on a real input, a real linear map
//! taken one axis at a time ([`Pass`]): `re + i·im` starts as the input with `im = 0`;
//! each axis but the last is an inverse complex DFT (`e^{+2πi·k·t/n}`: `re' = re·C − im·S`,
//! `im' = re·S + im·C`); the last is the one-sided inverse (`y = re·C − im·S`, each
//! frequency but 0 and Nyquist counted twice, the imaginary parts of those two ignored, as
//! pocketfft's `c2r` does). `hfftn` conjugates a forward DFT over the other axes, which on
//! a real input is the same inverse sum; the two differ only in their scale (`norm`). The
//! resize torch applies first (zero padding or truncation to `s`) is in the matrices: a
//! row past the resized length is zero. The scale is in the last pass's matrices.
//!
//! A NaN spreads over its transformed line as in torch. An infinity does not keep torch's
//! values: a MatMul multiplies it by every weight, zeros included (NaN), where torch's
//! FFT combines it in butterflies; transforms are for finite signals.

use std::f64::consts::PI;

use super::args::Args;
use super::eval::axis;
use super::program::{Argument, Node};

/// One axis of a transform: along `axis`, `input` entries become `output`; `cos` and
/// `sin` are `[input, output]` row-major (`out[t] = Σₖ in[k]·M[k, t]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Pass {
    pub axis: usize,
    pub input: usize,
    pub output: usize,
    pub cos: Vec<f64>,
    pub sin: Vec<f64>,
}

/// The transforms planned here, by aten overload.
pub const REAL_TRANSFORMS: &[&str] = &[
    "fft_irfft.default",
    "fft_irfft2.default",
    "fft_irfftn.default",
    "fft_hfft.default",
    "fft_hfft2.default",
    "fft_hfftn.default",
];

/// The shifts planned here, by aten overload.
pub const SHIFTS: &[&str] = &["fft_fftshift.default", "fft_ifftshift.default"];

/// An int-list argument that may be one int, `None` or absent (`None` then).
fn ints(args: &Args<'_>, name: &str) -> Result<Option<Vec<i64>>, String> {
    match args.get(name) {
        None | Some(Argument::None) => Ok(None),
        Some(Argument::Int(i)) => Ok(Some(vec![*i])),
        Some(Argument::Ints(v)) => Ok(Some(v.clone())),
        Some(other) => Err(format!("argument `{name}` is {}", other.kind())),
    }
}

/// The axes complex-to-real transform `op` (one of [`REAL_TRANSFORMS`]) of `node` runs
/// over on an input of rank `rank`, the one-sided axis last
/// (`torch._refs.fft._canonicalize_fft_shape_and_dim_args`: `dim`, else the last
/// `len(s)` axes, else all; `(-2, -1)` by default for the 2-D forms).
pub fn transform_axes(node: &Node, op: &str, rank: usize) -> Result<Vec<usize>, String> {
    let args = Args(node);
    if matches!(op, "fft_irfft.default" | "fft_hfft.default") {
        return Ok(vec![axis(args.int("dim")?, rank)?]);
    }
    let s = ints(&args, "s")?;
    let default_dims =
        (op != "fft_irfftn.default" && op != "fft_hfftn.default").then(|| vec![-2, -1]);
    let dim = match args.get("dim") {
        None => default_dims,
        Some(_) => ints(&args, "dim")?,
    };
    let dims: Vec<usize> = match (&dim, &s) {
        (Some(d), _) => d.iter().map(|&d| axis(d, rank)).collect::<Result<_, _>>()?,
        (None, Some(s)) => (rank.saturating_sub(s.len())..rank).collect(),
        (None, None) => (0..rank).collect(),
    };
    if dims.is_empty() || (1..dims.len()).any(|i| dims[..i].contains(&dims[i])) {
        return Err(format!("FFT dims {dims:?} are empty or repeat one"));
    }
    Ok(dims)
}

/// The passes of complex-to-real transform `op` (one of [`REAL_TRANSFORMS`]) of `node` on
/// an input of `sizes`, over [`transform_axes`] in order (the complex ones first, the
/// one-sided last).
pub fn real_transform(node: &Node, op: &str, sizes: &[u64]) -> Result<Vec<Pass>, String> {
    let args = Args(node);
    let dims = transform_axes(node, op, sizes.len())?;
    let last_dim = dims[dims.len() - 1];
    // torch._refs.fft._canonicalize_fft_c2r_shape_and_dim_args (or _fft_c2r for 1-D).
    let (shape, last_size): (Vec<i64>, i64) =
        if matches!(op, "fft_irfft.default" | "fft_hfft.default") {
            let n = args.optional_int("n")?;
            let last = n.unwrap_or(2 * (sizes[last_dim] as i64 - 1));
            (vec![last], last)
        } else {
            let s = ints(&args, "s")?;
            let shape: Vec<i64> = match &s {
                Some(s) if s.len() != dims.len() => {
                    return Err(format!("FFT sizes {s:?} for dims {dims:?}"));
                }
                Some(s) => s
                    .iter()
                    .zip(&dims)
                    .map(|(&n, &d)| if n == -1 { sizes[d] as i64 } else { n })
                    .collect(),
                None => dims.iter().map(|&d| sizes[d] as i64).collect(),
            };
            let last = match s.as_ref().and_then(|s| s.last()) {
                None | Some(-1) => 2 * (sizes[last_dim] as i64 - 1),
                Some(_) => shape[shape.len() - 1],
            };
            (shape, last)
        };
    if last_size < 1 || shape.iter().any(|&n| n < 1) {
        return Err(format!(
            "invalid number of data points ({shape:?}, {last_size})"
        ));
    }
    let count = dims.len();
    let outputs: Vec<usize> = (0..count)
        .map(|i| if i + 1 == count { last_size } else { shape[i] } as usize)
        .collect();
    let total: f64 = outputs.iter().map(|&n| n as f64).product();
    // torch._refs.fft._apply_norm: irfft* are inverse transforms, hfft* forward ones.
    let inverse = op.starts_with("fft_irfft");
    let scale = match args.get("norm") {
        None | Some(Argument::None) => Some("backward"),
        Some(Argument::String(s)) => Some(s.as_str()),
        Some(other) => return Err(format!("argument `norm` is {}", other.kind())),
    };
    let scale = match (scale, inverse) {
        (Some("ortho"), _) => 1.0 / total.sqrt(),
        (Some("backward"), true) | (Some("forward"), false) => 1.0 / total,
        (Some("backward"), false) | (Some("forward"), true) => 1.0,
        (other, _) => return Err(format!("FFT norm {other:?}")),
    };
    let mut passes = Vec::with_capacity(count);
    for (i, (&d, &n)) in dims.iter().zip(&outputs).enumerate() {
        let last = i + 1 == count;
        // The resized length torch reads: `n` on complex axes, `n/2 + 1` on the last.
        let kept = if last { n / 2 + 1 } else { n };
        let input = sizes[d] as usize;
        let mut cos = vec![0.0; input * n];
        let mut sin = vec![0.0; input * n];
        for k in 0..input.min(kept) {
            let (weight, imaginary) = match (last, k) {
                (false, _) => (1.0, true),
                (true, 0) => (1.0, false),
                (true, k) if 2 * k == n => (1.0, false),
                (true, _) => (2.0, true),
            };
            let weight = if last { weight * scale } else { weight };
            for t in 0..n {
                let (c, s) = unit((k * t) % n, n);
                cos[k * n + t] = weight * c;
                if imaginary {
                    sin[k * n + t] = weight * s;
                }
            }
        }
        passes.push(Pass {
            axis: d,
            input,
            output: n,
            cos,
            sin,
        });
    }
    Ok(passes)
}

/// `(cos, sin)` of `2π·m/n` (`m < n`), exactly 0 and ±1 at the quarter turns.
fn unit(m: usize, n: usize) -> (f64, f64) {
    match (4 * m, n) {
        (0, _) => (1.0, 0.0),
        (q, n) if q == n => (0.0, 1.0),
        (q, n) if q == 2 * n => (-1.0, 0.0),
        (q, n) if q == 3 * n => (0.0, -1.0),
        _ => {
            let angle = 2.0 * PI * m as f64 / n as f64;
            (angle.cos(), angle.sin())
        }
    }
}

/// `values` (row-major over `dims`) times `m` (`[dims[axis], output]`) along `axis`.
fn along(values: &[f64], dims: &[usize], axis: usize, m: &[f64], output: usize) -> Vec<f64> {
    let input = dims[axis];
    let outer: usize = dims[..axis].iter().product();
    let inner: usize = dims[axis + 1..].iter().product();
    let mut out = vec![0.0; outer * output * inner];
    for o in 0..outer {
        for k in 0..input {
            for t in 0..output {
                let w = m[k * output + t];
                if w == 0.0 {
                    continue;
                }
                let (src, dst) = ((o * input + k) * inner, (o * output + t) * inner);
                for i in 0..inner {
                    out[dst + i] += values[src + i] * w;
                }
            }
        }
    }
    out
}

/// The transform `passes` of real `values` (row-major over `dims`): the result's sizes
/// and values, computed in float64.
pub fn apply(passes: &[Pass], dims: &[usize], values: &[f64]) -> (Vec<usize>, Vec<f64>) {
    let mut dims = dims.to_vec();
    let mut re = values.to_vec();
    let mut im: Option<Vec<f64>> = None;
    for (i, p) in passes.iter().enumerate() {
        let last = i + 1 == passes.len();
        let rc = along(&re, &dims, p.axis, &p.cos, p.output);
        let rs = along(&re, &dims, p.axis, &p.sin, p.output);
        let (ic, is) = match &im {
            Some(im) => (
                Some(along(im, &dims, p.axis, &p.cos, p.output)),
                Some(along(im, &dims, p.axis, &p.sin, p.output)),
            ),
            None => (None, None),
        };
        dims[p.axis] = p.output;
        let new_re: Vec<f64> = match &is {
            Some(is) => rc.iter().zip(is).map(|(a, b)| a - b).collect(),
            None => rc,
        };
        if !last {
            im = Some(match &ic {
                Some(ic) => rs.iter().zip(ic).map(|(a, b)| a + b).collect(),
                None => rs,
            });
        }
        re = new_re;
    }
    (dims, re)
}

/// The rolls of shift `op` (one of [`SHIFTS`]) of `node` on an input of `sizes`:
/// `(axis, shift)` pairs (`torch._refs.fft.fftshift`: `n / 2` along each of `dim`, all
/// dims by default; `ifftshift`: `(n + 1) / 2`).
pub fn shifts(node: &Node, op: &str, sizes: &[u64]) -> Result<Vec<(usize, i64)>, String> {
    let args = Args(node);
    let rank = sizes.len();
    let dims: Vec<usize> = match ints(&args, "dim")? {
        None => (0..rank).collect(),
        Some(d) => d.iter().map(|&d| axis(d, rank)).collect::<Result<_, _>>()?,
    };
    let inverse = op == "fft_ifftshift.default";
    Ok(dims
        .into_iter()
        .map(|d| {
            let n = sizes[d] as i64;
            (d, if inverse { (n + 1) / 2 } else { n / 2 })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node of `op` (its absent arguments read as the op's schema defaults).
    fn node_of(op: &str, args: &str) -> Node {
        serde_json::from_str(&format!(
            r#"{{"target": "{op}", "outputs": [], "inputs": [{args}]}}"#
        ))
        .unwrap()
    }

    fn run(op: &str, args: &str, dims: &[usize], values: &[f64]) -> (Vec<usize>, Vec<f64>) {
        let sizes: Vec<u64> = dims.iter().map(|&d| d as u64).collect();
        let passes = real_transform(&node_of(op, args), op, &sizes).unwrap();
        apply(&passes, dims, values)
    }

    fn close(a: &[f64], b: &[f64]) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-9, "{a:?} vs {b:?}");
        }
    }

    /// Values from torch 2.13: `torch.fft.irfft(torch.tensor([1., 2., 3.]))` and friends.
    #[test]
    fn one_sided_spectra_match_torch() {
        let (dims, y) = run("fft_irfft.default", "", &[3], &[1.0, 2.0, 3.0]);
        assert_eq!(dims, [4]);
        close(&y, &[2.0, -0.5, 0.0, -0.5]);
        // n = 3 (odd: no Nyquist term) reads two entries; hfft's backward norm leaves the
        // sum unscaled.
        let (_, y) = run(
            "fft_hfft.default",
            r#"{"name": "n", "arg": {"as_int": 3}}"#,
            &[3],
            &[1.0, 2.0, 3.0],
        );
        close(&y, &[5.0, -1.0, -1.0]);
    }

    /// `torch.fft.irfft2(torch.tensor([[1., 2.], [3., 4.]]))`: the complex axis first.
    #[test]
    fn two_axes_combine_as_complex_products() {
        let (dims, y) = run("fft_irfft2.default", "", &[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(dims, [2, 2]);
        close(&y, &[2.5, -0.5, -1.0, 0.0]);
        let ortho = r#"{"name": "norm", "arg": {"as_string": "ortho"}}"#;
        let (_, h) = run("fft_hfft2.default", ortho, &[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        let (_, i) = run("fft_irfft2.default", ortho, &[2, 2], &[1.0, 2.0, 3.0, 4.0]);
        close(&h, &i);
    }

    #[test]
    fn quarter_turns_are_exact() {
        assert_eq!(unit(2, 8), (0.0, 1.0));
        assert_eq!(unit(4, 8), (-1.0, 0.0));
        assert_eq!(unit(6, 8), (0.0, -1.0));
        assert!((unit(1, 8).0 - 0.5f64.sqrt()).abs() < 1e-15);
    }

    #[test]
    fn shifts_roll_by_half_the_size() {
        let n = node_of(
            "fft_fftshift.default",
            r#"{"name": "dim", "arg": {"as_ints": [1]}}"#,
        );
        assert_eq!(
            shifts(&n, "fft_fftshift.default", &[4, 5]).unwrap(),
            [(1, 2)]
        );
        assert_eq!(
            shifts(
                &node_of("fft_ifftshift.default", ""),
                "fft_ifftshift.default",
                &[4, 5]
            )
            .unwrap(),
            [(0, 2), (1, 3)]
        );
    }
}
