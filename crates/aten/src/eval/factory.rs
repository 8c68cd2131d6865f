//! Tensors made from numbers alone (`arange`, `linspace`, `eye`, `full`, `zeros`, `ones`, `scalar_tensor`),
//! the symbolic-size ops on constants (`sym_size`, the `*` torch.export records on sizes),
//! the `*_like` and `new_*` factories, and the in-place ops that change no value in eval mode or copy
//! one (the dropouts, `copy_`, `fill_`).

use super::tensor::{element_count, Tensor, Values};
use super::{is_integer, Args};
use crate::program::Argument;

/// A number argument, and whether it was written as an int (a bool counts as an int).
fn number(a: &Args<'_>, name: &str) -> Result<(f64, bool), String> {
    match a.node_arg(name) {
        Some(Argument::Int(i)) => Ok((*i as f64, true)),
        Some(Argument::Bool(b)) => Ok((f64::from(u8::from(*b)), true)),
        Some(Argument::Float(f)) => Ok((*f, false)),
        other => Err(Args::wrong(name, "a number", other)),
    }
}

/// `n` values of `value(i)`, int64 when `integer`, else float32 (computed in double, as
/// torch accumulates, then rounded).
fn filled(dims: Vec<u64>, integer: bool, value: impl Fn(u64) -> f64) -> Result<Tensor, String> {
    let n = element_count(&dims)?;
    if integer {
        Tensor::i64(dims, (0..n).map(|i| value(i) as i64).collect())
    } else {
        Tensor::f32(dims, (0..n).map(|i| value(i) as f32).collect())
    }
}

/// The sizes of a factory.
fn sizes(a: &Args<'_>) -> Result<Vec<u64>, String> {
    a.ints("size")?
        .into_iter()
        .map(|s| u64::try_from(s).map_err(|_| format!("a factory size {s}")))
        .collect()
}

/// Whether the result is an integer tensor: the `dtype` argument, else `default`.
fn integer_result(a: &Args<'_>, default: bool) -> Result<bool, String> {
    match a.dtype()? {
        Some(d) => is_integer(d),
        None => Ok(default),
    }
}

/// `linspace`/`logspace` whose ends are numbers (`.default`) or 0-d tensors, by
/// [`crate::spaced`], in float32 (torch's default dtype, integer ends included;
/// another is refused).
fn spaced(op: &str, a: &Args<'_>) -> Result<Tensor, String> {
    if a.dtype()?.is_some_and(|d| d != super::FLOAT32) {
        return Err(format!("{op} to a dtype other than float32"));
    }
    let end = |name: &str| -> Result<f32, String> {
        match a.node_arg(name) {
            Some(Argument::Tensor(_)) => match a.tensor(name)?.to_f32()[..] {
                [value] => Ok(value),
                _ => Err(format!("argument `{name}` is not a 0-d tensor")),
            },
            _ => Ok(number(a, name)?.0 as f32),
        }
    };
    let steps = u64::try_from(a.int("steps")?).map_err(|_| "a negative step count")?;
    element_count(&[steps])?;
    let points = crate::spaced::linspace(end("start")?, end("end")?, steps);
    let points = if op.starts_with("logspace") {
        let base = a.number("base")? as f32;
        points.into_iter().map(|p| base.powf(p)).collect()
    } else {
        points
    };
    Tensor::f32(vec![steps], points)
}

/// `arange`: `ceil((end − start) / step)` values `start + i·step`.
fn arange(op: &str, a: &Args<'_>) -> Result<Tensor, String> {
    let (start, s_int) = if op == "arange.default" {
        (0.0, true)
    } else {
        number(a, "start")?
    };
    let (end, e_int) = number(a, "end")?;
    let (step, st_int) = if op == "arange.start_step" {
        number(a, "step")?
    } else {
        (1.0, true)
    };
    if step == 0.0 || !(start.is_finite() && end.is_finite()) {
        return Err("an arange with a zero step or an infinite bound".into());
    }
    let count = ((end - start) / step).ceil();
    if count < 0.0 {
        return Err(format!("an arange from {start} to {end} by {step}"));
    }
    let integer = integer_result(a, s_int && e_int && st_int)?;
    filled(vec![count as u64], integer, |i| start + i as f64 * step)
}

/// The ops of this file, or `None` for another op.
pub(super) fn evaluate(op: &str, a: &Args<'_>) -> Option<Result<Vec<Tensor>, String>> {
    let result = match op {
        "arange.default" | "arange.start" | "arange.start_step" => arange(op, a),
        "zeros.default" | "ones.default" => (|| {
            let fill = if op == "ones.default" { 1.0 } else { 0.0 };
            filled(sizes(a)?, integer_result(a, false)?, |_| fill)
        })(),
        "eye.default" | "eye.m" => (|| {
            let rows = u64::try_from(a.int("n")?).map_err(|_| "an eye with negative n")?;
            let columns = if op == "eye.m" {
                u64::try_from(a.int("m")?).map_err(|_| "an eye with negative m")?
            } else {
                rows
            };
            let diagonal = |i: u64| f64::from(u8::from(i / columns == i % columns));
            filled(vec![rows, columns], integer_result(a, false)?, diagonal)
        })(),
        "full.default" => (|| {
            let (fill, int) = number(a, "fill_value")?;
            let integer = integer_result(a, int)?;
            if integer && !fill.is_finite() {
                return Err(format!("an integer tensor full of {fill}"));
            }
            filled(sizes(a)?, integer, |_| fill)
        })(),
        "scalar_tensor.default" => (|| {
            // torch's default dtype, whatever the number.
            let (s, _) = number(a, "s")?;
            filled(Vec::new(), integer_result(a, false)?, |_| s)
        })(),
        "linspace.Tensor_Scalar"
        | "linspace.Tensor_Tensor"
        | "linspace.Scalar_Tensor"
        | "linspace.default"
        | "logspace.Tensor_Scalar"
        | "logspace.Tensor_Tensor"
        | "logspace.Scalar_Tensor"
        | "logspace.default" => spaced(op, a),
        "sym_numel.default" => (|| {
            let numel: u64 = a.tensor("self")?.dims().iter().product();
            Tensor::i64(Vec::new(), vec![numel as i64])
        })(),
        "sym_size.int" => (|| {
            let x = a.tensor("self")?;
            let at = super::tensor::axis(a.int("dim")?, x.rank())?;
            Tensor::i64(Vec::new(), vec![x.dims()[at] as i64])
        })(),
        "_operator.mul" => (|| {
            let (p, q) = (a.int("a")?, a.int("b")?);
            let product = p.checked_mul(q).ok_or("a size product overflows")?;
            Tensor::i64(Vec::new(), vec![product])
        })(),
        "dropout.default"
        | "dropout_.default"
        | "feature_dropout.default"
        | "feature_dropout_.default"
        | "alpha_dropout.default"
        | "alpha_dropout_.default"
        | "feature_alpha_dropout.default"
        | "feature_alpha_dropout_.default" => (|| {
            let x = a.tensor(if a.has("input") { "input" } else { "self" })?;
            Ok(match crate::decompose::dropout(a.node)? {
                crate::decompose::Dropout::Identity => x,
                crate::decompose::Dropout::Zeroed => x.map(|v| v * 0.0),
            })
        })(),
        "zeros_like.default" | "ones_like.default" | "full_like.default" | "empty_like.default" => {
            (|| {
                let x = a.tensor("self")?;
                let (fill, int) = match op {
                    "ones_like.default" => (1.0, true),
                    "full_like.default" => number(a, "fill_value")?,
                    // `empty_like`'s values are unspecified: zeros are as good as any.
                    _ => (0.0, true),
                };
                let like_int = matches!(x.values(), super::Values::I64(_));
                let integer = integer_result(a, like_int)?;
                if integer && !int && fill.fract() != 0.0 {
                    return Err(format!("an integer tensor full of {fill}"));
                }
                filled(x.dims().to_vec(), integer, |_| fill)
            })()
        }
        // `self` gives only the default dtype (torch records the result's).
        "new_zeros.default"
        | "new_ones.default"
        | "new_empty.default"
        | "new_empty_strided.default" => (|| {
            let fill = if op == "new_ones.default" { 1.0 } else { 0.0 };
            let like = matches!(a.tensor("self")?.values(), Values::I64(_));
            filled(sizes(a)?, integer_result(a, like)?, |_| fill)
        })(),
        "new_full.default" => (|| {
            let (fill, _) = number(a, "fill_value")?;
            let like = matches!(a.tensor("self")?.values(), Values::I64(_));
            let integer = integer_result(a, like)?;
            if integer && !fill.is_finite() {
                return Err(format!("an integer tensor full of {fill}"));
            }
            filled(sizes(a)?, integer, |_| fill)
        })(),
        // `empty`'s values are unspecified (its strides too, which no value shows).
        "empty.memory_format" | "empty_strided.default" => {
            (|| filled(sizes(a)?, integer_result(a, false)?, |_| 0.0))()
        }
        // `torch._refs.zero_`: zeros of the tensor's dtype.
        "zero_.default" => (|| {
            let x = a.tensor("self")?;
            let integer = matches!(x.values(), super::Values::I64(_));
            filled(x.dims().to_vec(), integer, |_| 0.0)
        })(),
        // `fill.Scalar` is `fill_.Scalar` out of place (`torch._refs.fill`).
        "fill_.Scalar" | "fill.Scalar" | "fill_.Tensor" => (|| {
            let x = a.tensor("self")?;
            let value = a.operand("value")?;
            // torch fills with a 0-d tensor only.
            if value.rank() != 0 {
                return Err(format!("fill_ with a value of sizes {:?}", value.dims()));
            }
            let value = value.expand(x.dims())?;
            match x.values() {
                super::Values::I64(_) => {
                    Tensor::i64(x.dims().to_vec(), super::pointwise::truncated(&value))
                }
                super::Values::F32(_) => value.cast(false),
            }
        })(),
        "copy_.default" | "copy.default" => (|| {
            let (target, source) = (a.tensor("self")?, a.tensor("src")?);
            let copied = source.expand(target.dims())?;
            let integer = matches!(target.values(), super::Values::I64(_));
            if integer {
                let values = super::pointwise::truncated(&copied);
                Tensor::i64(copied.dims().to_vec(), values)
            } else {
                copied.cast(false)
            }
        })(),
        _ => return None,
    };
    Some(result.map(|t| vec![t]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arange_counts_as_torch() {
        let values = |start: f64, end: f64, step: f64| {
            let n = ((end - start) / step).ceil() as u64;
            filled(vec![n], false, |i| start + i as f64 * step)
                .unwrap()
                .to_f32()
        };
        assert_eq!(values(0.0, 1.0, 0.25), [0.0, 0.25, 0.5, 0.75]);
        assert_eq!(values(5.0, 0.0, -2.0), [5.0, 3.0, 1.0]);
    }
}
