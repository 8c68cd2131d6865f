//! Element-wise ops on constants beyond plain arithmetic: activations, integer and logical
//! operators, Python's remainder, fills and selections by a mask, as torch computes them
//! (NaN propagates through every clamp and maximum; the remainder takes the divisor's sign).

use super::tensor::{broadcast, Tensor, Values};
use super::Args;

/// torch's `maximum`/`clamp_min` on floats: NaN when either operand is NaN.
pub(super) fn nan_max(p: f32, q: f32) -> f32 {
    if p.is_nan() || q.is_nan() {
        f32::NAN
    } else {
        p.max(q)
    }
}

/// torch's `minimum`/`clamp_max` on floats: NaN when either operand is NaN.
pub(super) fn nan_min(p: f32, q: f32) -> f32 {
    if p.is_nan() || q.is_nan() {
        f32::NAN
    } else {
        p.min(q)
    }
}

/// Python's `%` on floats as torch computes it (`fmod`, moved to the divisor's sign).
fn float_remainder(p: f32, q: f32) -> f32 {
    let m = p % q;
    if m != 0.0 && ((q < 0.0) != (m < 0.0)) {
        m + q
    } else {
        m
    }
}

/// Python's `%` on int64: the result has the divisor's sign; `None` for a zero divisor.
fn int_remainder(p: i64, q: i64) -> Option<i64> {
    let m = p.checked_rem(q)?;
    Some(if m != 0 && ((q < 0) != (m < 0)) {
        m + q
    } else {
        m
    })
}

/// A function of one value.
type Unary = Box<dyn Fn(f32) -> f32>;

/// `x · sigmoid(x)` and the other activations of one value.
fn activation(op: &str, a: &Args<'_>) -> Result<Option<Unary>, String> {
    let f: Unary = match op {
        "relu6.default" => Box::new(|x| nan_min(nan_max(x, 0.0), 6.0)),
        "silu.default" | "silu_.default" => Box::new(|x| x / (1.0 + (-x).exp())),
        "sigmoid_.default" => Box::new(|x| 1.0 / (1.0 + (-x).exp())),
        "tanh_.default" => Box::new(f32::tanh),
        "mish.default" | "mish_.default" => Box::new(|x| x * softplus(x).tanh()),
        "hardsigmoid.default" | "hardsigmoid_.default" => {
            Box::new(|x| nan_min(nan_max(x + 3.0, 0.0), 6.0) / 6.0)
        }
        "hardswish.default" | "hardswish_.default" => {
            Box::new(|x| x * nan_min(nan_max(x + 3.0, 0.0), 6.0) / 6.0)
        }
        "hardtanh.default" | "hardtanh_.default" => {
            let low = a.number("min_val")? as f32;
            let high = a.number("max_val")? as f32;
            Box::new(move |x| nan_min(nan_max(x, low), high))
        }
        // torch's kernels: the band is zero (`x·0` for softshrink, so NaN stays NaN), and
        // `threshold` replaces only what is at most the threshold (NaN is kept).
        "hardshrink.default" => {
            let l = a.number("lambd")? as f32;
            Box::new(move |x| if x >= -l && x <= l { 0.0 } else { x })
        }
        "softshrink.default" => {
            let l = a.number("lambd")? as f32;
            if l < 0.0 {
                return Err(format!(
                    "softshrink's lambd {l} is below 0, which torch refuses"
                ));
            }
            Box::new(move |x| {
                if x > l {
                    x - l
                } else if x < -l {
                    x + l
                } else {
                    x * 0.0
                }
            })
        }
        "threshold.default" => {
            let threshold = a.number("threshold")? as f32;
            let value = a.number("value")? as f32;
            Box::new(move |x| if x <= threshold { value } else { x })
        }
        "leaky_relu.default" | "leaky_relu_.default" => {
            let slope = a.number("negative_slope")? as f32;
            Box::new(move |x| if x > 0.0 { x } else { x * slope })
        }
        "elu.default" | "elu_.default" => {
            let alpha = a.number("alpha")? as f32;
            let scale = a.number("scale")? as f32;
            let input_scale = a.number("input_scale")? as f32;
            Box::new(move |x| {
                if x > 0.0 {
                    x * scale
                } else {
                    (x * input_scale).exp_m1() * alpha * scale
                }
            })
        }
        "gelu.default" => match a.string("approximate")?.as_str() {
            "none" => Box::new(|x| {
                (0.5 * f64::from(x) * (1.0 + erf(f64::from(x) / std::f64::consts::SQRT_2))) as f32
            }),
            "tanh" => Box::new(|x| {
                let x = f64::from(x);
                let inner = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
                (0.5 * x * (1.0 + inner.tanh())) as f32
            }),
            other => return Err(format!("gelu approximation `{other}`")),
        },
        _ => return Ok(None),
    };
    Ok(Some(f))
}

/// `log(1 + exp(x))` without overflow.
fn softplus(x: f32) -> f32 {
    if x > 20.0 {
        x
    } else {
        x.exp().ln_1p()
    }
}

/// The error function, to double precision (W. J. Cody's rational approximations, as in
/// the C library): GELU of a constant rounds to the float32 torch computes.
pub(super) fn erf(x: f64) -> f64 {
    // Abramowitz–Stegun is too coarse for float32 ties; use the complementary series.
    if x.abs() < 0.5 {
        // Taylor series around 0, converging fast below 0.5.
        let mut sum = x;
        let mut term = x;
        let x2 = x * x;
        for n in 1..40 {
            term *= -x2 / n as f64;
            let add = term / (2 * n + 1) as f64;
            sum += add;
            if add.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        return sum * 2.0 / std::f64::consts::PI.sqrt();
    }
    let sign = x.signum();
    sign * (1.0 - erfc_positive(x.abs()))
}

/// `erfc(x)` for `x ≥ 0.5` by its continued fraction (Lentz), accurate to double.
fn erfc_positive(x: f64) -> f64 {
    if x > 27.0 {
        return 0.0;
    }
    // erfc(x) = exp(-x²)/√π · 1/(x + 1/2/(x + 1/(x + 3/2/(x + …))))
    let tiny = 1e-300;
    let mut f = x;
    let mut c = x;
    let mut d = 0.0;
    for n in 1..300 {
        let an = n as f64 / 2.0;
        d = x + an * d;
        d = if d.abs() < tiny { tiny } else { d };
        c = x + an / c;
        c = if c.abs() < tiny { tiny } else { c };
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    (-x * x).exp() / std::f64::consts::PI.sqrt() / f
}

/// The element-wise ops of this file, or `None` for another op.
/// C's `frexp` of one float32 (torch's CPU kernel): `(m, e)` with `x = m · 2^e` and
/// `|m|` in [0.5, 1); zero, ±inf and NaN give themselves and 0.
fn split_exponent(x: f32) -> (f32, i64) {
    if x == 0.0 || !x.is_finite() {
        return (x, 0);
    }
    // A subnormal is scaled into the normal range first (exactly: a power of two).
    let (x, shift) = if x.abs() < f32::MIN_POSITIVE {
        (x * 2f32.powi(32), -32)
    } else {
        (x, 0)
    };
    let bits = x.to_bits();
    let biased = i64::from((bits >> 23) & 0xff);
    let mantissa = f32::from_bits((bits & 0x807f_ffff) | (126 << 23));
    (mantissa, biased - 126 + shift)
}

/// `frexp`: the mantissas (float32) and exponents (int32 as torch records them).
fn frexp(a: &Args<'_>) -> Result<Vec<Tensor>, String> {
    let x = a.tensor("self")?;
    if matches!(x.values(), Values::I64(_)) {
        return Err("frexp of an integer tensor (torch needs float)".into());
    }
    let (mantissas, exponents): (Vec<f32>, Vec<i64>) =
        x.to_f32().into_iter().map(split_exponent).unzip();
    Ok(vec![
        Tensor::f32(x.dims().to_vec(), mantissas)?,
        Tensor::i64(x.dims().to_vec(), exponents)?,
    ])
}

pub(super) fn evaluate(op: &str, a: &Args<'_>) -> Option<Result<Vec<Tensor>, String>> {
    if op == "frexp.Tensor" {
        return Some(frexp(a));
    }
    let result = match op {
        "__and__.Tensor" | "bitwise_and.Tensor" | "__and__.Scalar" | "bitwise_and.Scalar" => {
            bitwise(a, |p, q| Some(p & q))
        }
        "__or__.Tensor" | "bitwise_or.Tensor" | "__or__.Scalar" | "bitwise_or.Scalar" => {
            bitwise(a, |p, q| Some(p | q))
        }
        "__xor__.Tensor" | "bitwise_xor.Tensor" | "__xor__.Scalar" | "bitwise_xor.Scalar" => {
            bitwise(a, |p, q| Some(p ^ q))
        }
        "logical_and.default" => logical(a, |p, q| Some(p & q)),
        "logical_or.default" => logical(a, |p, q| Some(p | q)),
        "logical_xor.default" => logical(a, |p, q| Some(p ^ q)),
        "fmod.Tensor" | "fmod.Scalar" => (|| {
            let (x, y) = (a.tensor("self")?, a.operand("other")?);
            if let (Values::I64(_), Values::I64(q)) = (x.values(), y.values()) {
                if q.contains(&0) {
                    return Err("an integer fmod by zero".into());
                }
            }
            // Rust's `%` on floats is C's `fmod`; on integers it truncates, as C's does.
            Tensor::zip(&x, &y, |p, q| p % q, Some(i64::checked_rem))
        })(),
        "remainder.Tensor" | "remainder.Scalar" => (|| {
            let (x, y) = (a.tensor("self")?, a.operand("other")?);
            if let (Values::I64(_), Values::I64(q)) = (x.values(), y.values()) {
                if q.contains(&0) {
                    return Err("an integer remainder by zero".into());
                }
            }
            Tensor::zip(&x, &y, float_remainder, Some(int_remainder))
        })(),
        "addcmul.default" | "addcdiv.default" => (|| {
            let value = a
                .operand("value")
                .or_else(|_| Tensor::i64(vec![], vec![1]))?;
            let (t1, t2) = (a.tensor("tensor1")?, a.tensor("tensor2")?);
            let combined = if op == "addcmul.default" {
                Tensor::zip(&t1, &t2, |p, q| p * q, Some(i64::checked_mul))?
            } else {
                Tensor::zip(&t1, &t2, |p, q| p / q, None)?
            };
            let scaled = Tensor::zip(&combined, &value, |p, q| p * q, Some(i64::checked_mul))?;
            Tensor::zip(
                &a.tensor("self")?,
                &scaled,
                |p, q| p + q,
                Some(i64::checked_add),
            )
        })(),
        "isfinite.default" => a
            .tensor("self")
            .map(|x| x.map(|v| f32::from(u8::from(v.is_finite())))),
        "lerp.Scalar" => (|| {
            let (start, end) = (a.tensor("self")?, a.tensor("end")?);
            let weight = a.operand("weight")?;
            let step = Tensor::zip(&end, &start, |e, s| e - s, None)?;
            let moved = Tensor::zip(&step, &weight, |d, w| d * w, None)?;
            // torch's kernel: `self + w·(end − self)` for |w| < ½, else
            // `end − (end − self)·(1 − w)`.
            let from_start = Tensor::zip(&start, &moved, |s, m| s + m, None)?;
            let back = Tensor::zip(&step, &weight, |d, w| d * (1.0 - w), None)?;
            let from_end = Tensor::zip(&end, &back, |e, b| e - b, None)?;
            let small = weight.map(|w| f32::from(u8::from(w.abs() < 0.5)));
            select(&small, &from_start, &from_end, &[], false)
        })(),
        "clamp.Tensor" | "clamp_.Tensor" => (|| {
            let mut x = a.tensor("self")?;
            if a.is_given("min") {
                x = Tensor::zip(&x, &a.tensor("min")?, nan_max, Some(|p, q| Some(p.max(q))))?;
            }
            if a.is_given("max") {
                x = Tensor::zip(&x, &a.tensor("max")?, nan_min, Some(|p, q| Some(p.min(q))))?;
            }
            Ok(x)
        })(),
        "prelu.default" => (|| {
            let (x, w) = (a.tensor("self")?, a.tensor("weight")?);
            // The weight holds one slope, or one per channel (axis 1).
            let slope = if x.rank() >= 2 && w.dims().iter().product::<u64>() > 1 {
                let mut per_channel = vec![1i64; x.rank()];
                per_channel[1] = -1;
                w.reshape(&per_channel)?
            } else {
                w
            };
            Tensor::zip(&x, &slope, |p, s| if p > 0.0 { p } else { p * s }, None)
        })(),
        "masked_fill.Scalar"
        | "masked_fill.Tensor"
        | "masked_fill_.Scalar"
        | "masked_fill_.Tensor" => (|| {
            let x = a.tensor("self")?;
            let value = a.operand("value")?;
            if value.rank() != 0 {
                return Err("masked_fill with a value that is not 0-d".into());
            }
            let integer = matches!(x.values(), Values::I64(_));
            select(&a.tensor("mask")?, &value, &x, x.dims(), integer)
        })(),
        "where.self" | "where.Scalar" | "where.ScalarOther" | "where.ScalarSelf" => (|| {
            let condition = a.tensor("condition")?;
            let (x, y) = (a.operand("self")?, a.operand("other")?);
            // Integer only when both are (two Python numbers give the default float type
            // unless both are ints).
            let integer = matches!((x.values(), y.values()), (Values::I64(_), Values::I64(_)));
            select(&condition, &x, &y, &[], integer)
        })(),
        "gelu.default"
            if a.tensor("self")
                .is_ok_and(|x| x.to_f32().iter().any(|v| v.is_infinite())) =>
        {
            // torch's float32 kernel gives NaN there, its float16 one infinity.
            Err("GELU of an infinite constant is evaluated by torch differently per dtype".into())
        }
        _ => match activation(op, a) {
            Ok(Some(f)) => a.tensor("self").map(|x| x.map(f)),
            Ok(None) => return None,
            Err(e) => Err(e),
        },
    };
    Some(result.map(|t| vec![t]))
}

/// `where(condition, x, y)` broadcast with `dims`, integer (`integer`) or float.
fn select(
    condition: &Tensor,
    x: &Tensor,
    y: &Tensor,
    dims: &[u64],
    integer: bool,
) -> Result<Tensor, String> {
    let dims = broadcast(&[condition.dims(), x.dims(), y.dims(), dims])?;
    let picked: Vec<bool> = condition
        .expand(&dims)?
        .to_f32()
        .iter()
        .map(|&c| c != 0.0)
        .collect();
    let (x, y) = (x.expand(&dims)?, y.expand(&dims)?);
    if integer {
        // An integer tensor filled with a float keeps its type: the value truncates.
        let (p, q) = (truncated(&x), truncated(&y));
        return Tensor::i64(
            dims,
            picked
                .iter()
                .zip(p.iter().zip(&q))
                .map(|(&c, (&p, &q))| if c { p } else { q })
                .collect(),
        );
    }
    Tensor::f32(
        dims,
        picked
            .iter()
            .zip(x.to_f32().into_iter().zip(y.to_f32()))
            .map(|(&c, (p, q))| if c { p } else { q })
            .collect(),
    )
}

/// Integer values, floats truncated toward zero as torch converts them.
pub(super) fn truncated(t: &Tensor) -> Vec<i64> {
    match t.values() {
        Values::I64(v) => v.clone(),
        Values::F32(v) => v.iter().map(|&x| float_to_int(x)).collect(),
    }
}

/// A float converted to int64 as torch does on x86: truncated toward zero; NaN, the
/// infinities and values out of range give `i64::MIN` (the processor's "indefinite").
pub(super) fn float_to_int(x: f32) -> i64 {
    if x.is_finite() && x.abs() < 9.223_372e18 {
        x as i64
    } else {
        i64::MIN
    }
}

/// Bitwise and/or/xor (`op`): of integers, or (as torch) of bools; floats are refused as by
/// torch.
fn bitwise(a: &Args<'_>, op: fn(i64, i64) -> Option<i64>) -> Result<Tensor, String> {
    let (x, y) = (a.tensor("self")?, a.operand("other")?);
    if matches!(x.values(), Values::F32(_)) || matches!(y.values(), Values::F32(_)) {
        return Err("a bitwise operator on a float tensor".into());
    }
    Tensor::zip(&x, &y, |p, _| p, Some(op))
}

/// Logical and/or/xor (`op` of 0/1) of any tensors: nonzero is true; the result is bool
/// (0/1).
fn logical(a: &Args<'_>, op: fn(i64, i64) -> Option<i64>) -> Result<Tensor, String> {
    let truth = |t: &Tensor| -> Result<Tensor, String> {
        let v = match t.values() {
            Values::I64(v) => v.iter().map(|&i| i64::from(i != 0)).collect(),
            Values::F32(v) => v.iter().map(|&f| i64::from(f != 0.0)).collect(),
        };
        Tensor::i64(t.dims().to_vec(), v)
    };
    let (x, y) = (truth(&a.tensor("self")?)?, truth(&a.operand("other")?)?);
    Tensor::zip(&x, &y, |p, _| p, Some(op))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frexp_splits_as_c_does_subnormals_and_specials_included() {
        assert_eq!(split_exponent(3.0), (0.75, 2));
        assert_eq!(split_exponent(-0.75), (-0.75, 0));
        assert_eq!(split_exponent(1.0), (0.5, 1));
        assert_eq!(split_exponent(f32::from_bits(1)), (0.5, -148));
        assert_eq!(split_exponent(f32::INFINITY), (f32::INFINITY, 0));
        let (m, e) = split_exponent(-0.0);
        assert!(m == 0.0 && m.is_sign_negative() && e == 0);
        assert!(split_exponent(f32::NAN).0.is_nan());
    }

    #[test]
    fn the_remainder_takes_the_sign_of_the_divisor_as_python() {
        assert_eq!(int_remainder(-7, 3), Some(2));
        assert_eq!(int_remainder(7, -3), Some(-2));
        assert_eq!(int_remainder(7, 0), None);
        assert_eq!(float_remainder(-7.5, 2.0), 0.5);
        assert_eq!(float_remainder(7.5, -2.0), -0.5);
        assert!(float_remainder(1.0, 0.0).is_nan());
    }

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0, 0.0),
            (0.3, 0.328_626_759_459_127_4),
            (1.0, 0.842_700_792_949_714_9),
            (2.5, 0.999_593_047_982_555),
            (-1.0, -0.842_700_792_949_714_9),
        ] {
            assert!((erf(x) - want).abs() < 1e-14, "erf({x}) = {}", erf(x));
        }
    }

    #[test]
    fn nan_propagates_through_maximum_and_infinities_convert_to_the_indefinite_integer() {
        assert!(nan_max(f32::NAN, 1.0).is_nan());
        assert!(nan_min(0.0, f32::NAN).is_nan());
        assert_eq!(float_to_int(f32::NEG_INFINITY), i64::MIN);
        assert_eq!(float_to_int(-2.7), -2);
    }
}
