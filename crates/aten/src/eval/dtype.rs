//! Element types as torch holds them. The evaluator computes in float32 and int64; a value
//! of another dtype is brought to it as torch would: an explicit conversion
//! ([`convert`]: floats truncated toward zero, out of range as the processor gives it,
//! narrower integers wrapped) and the result of any op ([`recorded`]: rounded to float16 or
//! bfloat16, wrapped to the integer width, bools as truth values).

use half::{bf16, f16};

use super::pointwise::float_to_int;
use super::tensor::{Tensor, Values};

/// The export schema's dtype numbers (`torch._export.serde.schema.ScalarType`).
pub(super) const UINT8: i64 = 1;
pub(super) const INT8: i64 = 2;
pub(super) const INT16: i64 = 3;
pub(super) const INT32: i64 = 4;
pub(super) const INT64: i64 = 5;
pub(super) const FLOAT16: i64 = 6;
pub(super) const FLOAT32: i64 = 7;
pub(super) const FLOAT64: i64 = 8;
pub(super) const BOOL: i64 = 12;
pub(super) const BFLOAT16: i64 = 13;

/// Whether export dtype `dtype` is an integer type (int8 … int64, uint8, bool); float32
/// and the other float types are not. Others are refused.
pub fn is_integer(dtype: i64) -> Result<bool, String> {
    match dtype {
        UINT8..=INT64 | BOOL => Ok(true),
        FLOAT16..=FLOAT64 | BFLOAT16 => Ok(false),
        other => Err(format!(
            "a constant of export dtype {other} is not evaluated"
        )),
    }
}

/// An int64 wrapped to the width of integer dtype `dtype`, as a C cast does.
fn wrap(v: i64, dtype: i64) -> i64 {
    match dtype {
        UINT8 => i64::from(v as u8),
        INT8 => i64::from(v as i8),
        INT16 => i64::from(v as i16),
        INT32 => i64::from(v as i32),
        _ => v,
    }
}

/// A float converted to integer dtype `dtype` as torch on x86: truncated toward zero; for
/// types narrower than int64 through a 32-bit conversion (out of range: `i32::MIN`), then
/// wrapped.
fn float_to(x: f32, dtype: i64) -> i64 {
    if dtype == INT64 {
        return float_to_int(x);
    }
    let wide = if x.is_finite() && x.abs() < 2_147_483_648.0 {
        x as i64 as i32
    } else {
        i32::MIN
    };
    wrap(i64::from(wide), dtype)
}

/// Float values rounded to float16 or bfloat16 when `dtype` is one.
fn rounded(v: &[f32], dtype: i64) -> Vec<f32> {
    match dtype {
        FLOAT16 => v.iter().map(|&x| f16::from_f32(x).to_f32()).collect(),
        BFLOAT16 => v.iter().map(|&x| bf16::from_f32(x).to_f32()).collect(),
        _ => v.to_vec(),
    }
}

/// `t` converted to `dtype` (`Tensor.to(dtype)`).
pub(super) fn convert(t: &Tensor, dtype: i64) -> Result<Tensor, String> {
    let dims = t.dims().to_vec();
    match (t.values(), dtype) {
        (Values::F32(v), BOOL) => {
            Tensor::i64(dims, v.iter().map(|&x| i64::from(x != 0.0)).collect())
        }
        (Values::I64(v), BOOL) => Tensor::i64(dims, v.iter().map(|&x| i64::from(x != 0)).collect()),
        (Values::F32(v), d) if is_integer(d)? => {
            Tensor::i64(dims, v.iter().map(|&x| float_to(x, d)).collect())
        }
        (Values::I64(v), d) if is_integer(d)? => {
            Tensor::i64(dims, v.iter().map(|&x| wrap(x, d)).collect())
        }
        (_, d) => Tensor::f32(dims, rounded(&t.to_f32(), d)),
    }
}

/// `t`, computed by an op whose result torch recorded as `dtype`, in that dtype: an
/// integer type must hold integers (a float that is not one is an evaluation error, not a
/// value to truncate), wrapped to its width; bool holds truth values; float16 and bfloat16
/// are rounded to their precision.
pub fn recorded(t: &Tensor, dtype: i64) -> Result<Tensor, String> {
    if dtype == BOOL {
        return convert(t, BOOL);
    }
    if is_integer(dtype)? {
        let exact = t.cast(true)?;
        return convert(&exact, dtype);
    }
    convert(t, dtype)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_follow_torch_on_x86() {
        let x = Tensor::f32(vec![5], vec![f32::NEG_INFINITY, 200.0, -200.0, 3e9, -2.7]).unwrap();
        let got = |d| convert(&x, d).unwrap().to_i64().unwrap();
        assert_eq!(got(INT8), [0, -56, 56, 0, -2]);
        assert_eq!(got(UINT8), [0, 200, 56, 0, 254]);
        assert_eq!(
            got(INT32),
            [i64::from(i32::MIN), 200, -200, i64::from(i32::MIN), -2]
        );
        assert_eq!(got(INT64)[0], i64::MIN);
        assert_eq!(got(BOOL), [1, 1, 1, 1, 1]);
        let halves = convert(&Tensor::f32(vec![1], vec![0.1]).unwrap(), FLOAT16).unwrap();
        assert_eq!(halves.to_f32(), [f16::from_f32(0.1).to_f32()]);
    }

    #[test]
    fn a_recorded_integer_type_refuses_fractions_and_bool_is_truth() {
        let x = Tensor::f32(vec![2], vec![2.0, 0.5]).unwrap();
        assert!(recorded(&x, INT64).is_err());
        assert_eq!(recorded(&x, BOOL).unwrap().to_i64().unwrap(), [1, 1]);
        let sum = Tensor::i64(vec![2], vec![2, 0]).unwrap();
        assert_eq!(recorded(&sum, BOOL).unwrap().to_i64().unwrap(), [1, 0]);
    }
}
