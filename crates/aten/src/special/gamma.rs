//! The gamma family: `digamma`, `lgamma`, `polygamma` and `mvlgamma`.
//!
//! torch's loops that push `x` up until it reaches a threshold (`while (x < 10) x += 1` in
//! `calc_digamma`, the Hurwitz zeta sum that runs until its term passes 9) run a number
//! of times that depends on `x`; here every `x` below the threshold is pushed by a fixed
//! count that reaches it from 0 (the recurrence is exact for any count), and a negative
//! `x` is first reflected to `1 − x` (torch reflects `digamma`, `trigamma` and `lgamma`
//! itself; for the zeta sum, which torch runs from a negative `x` up, the reflection of
//! the polygamma function gives the same value).

// torch's coefficients, digit for digit as its source writes them.
#![allow(clippy::excessive_precision)]

use std::f64::consts::PI;

use super::super::decompose::Fn;
use super::super::series::{Algebra, Ops, Result};

/// `calc_digamma`'s asymptotic series in `1/x²` (cephes `psi`).
const PSI_SERIES: [f64; 7] = [
    8.333_333_333_333_333_333_33E-2,
    -2.109_279_609_279_609_279_61E-2,
    7.575_757_575_757_575_757_58E-3,
    -4.166_666_666_666_666_666_67E-3,
    3.968_253_968_253_968_253_97E-3,
    -8.333_333_333_333_333_333_33E-3,
    8.333_333_333_333_333_333_33E-2,
];

/// The threshold `calc_digamma`'s recurrence pushes `x` to, and the fixed push used here.
const PSI_SHIFT: u32 = 10;

/// The Hurwitz zeta function's Euler–Maclaurin denominators (cephes `zeta`'s `A`:
/// `(2k)! / B₂ₖ`).
const ZETA_A: [f64; 12] = [
    12.0,
    -720.0,
    30240.0,
    -1209600.0,
    47900160.0,
    -1.892_437_580_318_379_160_6e9,
    7.47242496e10,
    -2.950_130_727_918_164_224e12,
    1.164_678_281_435_006_724_9e14,
    -4.597_978_722_407_472_610_5e15,
    1.815_210_540_194_354_677_3e17,
    -7.166_165_256_175_667_011_3e18,
];

/// The terms torch's zeta sums directly from a positive `q` (`q`, `q + 1`, …, `q + 9`)
/// before its Euler–Maclaurin tail at `q + 9`.
const ZETA_TERMS: u32 = 9;

/// The highest polygamma order exported: the float32 graph is checked against torch up
/// to it, over the whole real line; higher orders are refused.
pub(super) const MAX_POLYGAMMA_ORDER: i64 = 6;

/// `x` is negative (bool), `x` is an integer (bool: −inf is one, NaN is not), and
/// `r = x − round(x)` in [−1/2, 1/2], from which `sin(πx)` and `tan(πx)` (up to sign,
/// and of period 1) are computed accurately in float32 (torch takes `std::modf`'s
/// fraction in double precision; near ±1 that fraction loses float32 accuracy in `π·r`).
fn reflection<A: Algebra>(a: &mut A, x: &A::V) -> Result<(A::V, A::V, A::V)> {
    let negative = a.less_c(x, 0.0)?;
    let nearest = a.f1(Fn::Round, x)?;
    let integer = a.f2(Fn::Equal, x, &nearest)?;
    let fraction = a.sub(x, &nearest)?;
    Ok((negative, integer, fraction))
}

/// `cot(π·r)` for `r` in [−1/2, 1/2] (NaN kept), accurate in float32 over the whole
/// range: `1/tan(π·r)` below 1/4 in size, `±tan(π·(1/2 − |r|))` above, where the product
/// `π·r` would round away the small distance to ±1/2 (and with it a cotangent near 0).
fn cot_pi<A: Algebra>(a: &mut A, r: &A::V) -> Result<A::V> {
    let size = a.f1(Fn::Abs, r)?;
    let central = a.less_c(&size, 0.25)?;
    let angle = a.mul_c(r, PI)?;
    let tan = a.f1(Fn::Tan, &angle)?;
    let inverse = a.c_div(1.0, &tan)?;
    let rest = a.c_sub(0.5, &size)?;
    let angle = a.mul_c(&rest, PI)?;
    let tan = a.f1(Fn::Tan, &angle)?;
    let negative = a.less_c(r, 0.0)?;
    let flipped = a.c_sub(0.0, &tan)?;
    let outer = a.select(&negative, &flipped, &tan)?;
    a.select(&central, &inverse, &outer)
}

/// `digamma(x)`, as torch's `calc_digamma`: ±inf at ±0 (`copysign(inf, −x)`), NaN at the
/// negative integers and −inf, `digamma(1 − x) − π/tan(π·frac(x))` below 0, and above
/// the recurrence to `x ≥ 10` and the asymptotic series.
pub(super) fn digamma<A: Algebra>(a: &mut A, x: &A::V) -> Result<A::V> {
    let (negative, integer, fraction) = reflection(a, x)?;
    let reflected = a.c_sub(1.0, x)?;
    let positive_x = a.select(&negative, &reflected, x)?;
    let positive = digamma_positive(a, &positive_x)?;
    let cotangent = cot_pi(a, &fraction)?;
    let cotangent = a.mul_c(&cotangent, PI)?;
    let below = a.sub(&positive, &cotangent)?;
    let y = a.select(&negative, &below, &positive)?;
    let pole = a.and(&negative, &integer)?;
    let y = a.select_c(&pole, f64::NAN, &y)?;
    let zero = a.equal_c(x, 0.0)?;
    let signed_infinity = a.c_div(-1.0, x)?;
    a.select(&zero, &signed_infinity, &y)
}

/// `digamma` of `x ≥ 0` (NaN kept): below 10, `digamma(x + 10) − Σₖ 1/(x + k)`.
fn digamma_positive<A: Algebra>(a: &mut A, x: &A::V) -> Result<A::V> {
    let small = a.less_c(x, f64::from(PSI_SHIFT))?;
    let mut sum = a.number(0.0);
    for k in 0..PSI_SHIFT {
        let term = a.add_c(x, f64::from(k))?;
        let term = a.c_div(1.0, &term)?;
        sum = a.add(&sum, &term)?;
    }
    let pushed = a.add_c(x, f64::from(PSI_SHIFT))?;
    let x = a.select(&small, &pushed, x)?;
    // log x − 1/(2x) − z·polevl(z), z = 1/x² (0 once x² overflows, as torch's 1e17 cut).
    let square = a.mul(&x, &x)?;
    let z = a.c_div(1.0, &square)?;
    let series = a.polevl(&z, &PSI_SERIES)?;
    let series = a.mul(&z, &series)?;
    let log = a.f1(Fn::Log, &x)?;
    let half = a.c_div(0.5, &x)?;
    let y = a.sub(&log, &half)?;
    let y = a.sub(&y, &series)?;
    let zero = a.number(0.0);
    let sum = a.select(&small, &sum, &zero)?;
    a.sub(&y, &sum)
}

/// Stirling's series of `lgamma` after its leading terms, in `1/x²`: `1/12`, `−1/360`,
/// `1/1260`, `−1/1680` (the last first).
const STIRLING: [f64; 4] = [-1.0 / 1680.0, 1.0 / 1260.0, -1.0 / 360.0, 1.0 / 12.0];

/// `lgamma(x)` (torch calls `std::lgamma`): +inf at the poles (0 and the negative
/// integers, −inf among them) and at +inf, `log(π/|sin(π·frac(x))|) − lgamma(1 − x)` below 0, and above
/// `lgamma(x + 10) − log(x·(x + 1)⋯(x + 9))` below 10, Stirling's series from 10.
pub(super) fn lgamma<A: Algebra>(a: &mut A, x: &A::V) -> Result<A::V> {
    let (negative, integer, fraction) = reflection(a, x)?;
    let reflected = a.c_sub(1.0, x)?;
    let positive_x = a.select(&negative, &reflected, x)?;
    let positive = lgamma_positive(a, &positive_x)?;
    let angle = a.mul_c(&fraction, PI)?;
    let sine = a.f1(Fn::Sin, &angle)?;
    let sine = a.f1(Fn::Abs, &sine)?;
    // log π − log|sin πr|, finite where π/|sin πr| would overflow (a tiny r).
    let log = a.f1(Fn::Log, &sine)?;
    let log = a.c_sub(PI.ln(), &log)?;
    let below = a.sub(&log, &positive)?;
    let y = a.select(&negative, &below, &positive)?;
    let pole = a.and(&negative, &integer)?;
    let y = a.select_c(&pole, f64::INFINITY, &y)?;
    let infinite = a.equal_c(x, f64::INFINITY)?;
    a.select_c(&infinite, f64::INFINITY, &y)
}

/// `lgamma` of `x ≥ 0` (NaN kept; +inf at 0).
fn lgamma_positive<A: Algebra>(a: &mut A, x: &A::V) -> Result<A::V> {
    let small = a.less_c(x, f64::from(PSI_SHIFT))?;
    let mut product = x.clone();
    for k in 1..PSI_SHIFT {
        let term = a.add_c(x, f64::from(k))?;
        product = a.mul(&product, &term)?;
    }
    let pushed = a.add_c(x, f64::from(PSI_SHIFT))?;
    let x = a.select(&small, &pushed, x)?;
    // x·(log x − 1) − log(x)/2 + log(2π)/2 + (1/x)·series(1/x²).
    let log = a.f1(Fn::Log, &x)?;
    let less_one = a.add_c(&log, -1.0)?;
    let y = a.mul(&x, &less_one)?;
    let half_log = a.mul_c(&log, 0.5)?;
    let y = a.sub(&y, &half_log)?;
    let y = a.add_c(&y, 0.5 * (2.0 * PI).ln())?;
    let inverse = a.c_div(1.0, &x)?;
    let z = a.mul(&inverse, &inverse)?;
    let series = a.polevl(&z, &STIRLING)?;
    let series = a.mul(&inverse, &series)?;
    let y = a.add(&y, &series)?;
    let log_product = a.f1(Fn::Log, &product)?;
    let shifted = a.sub(&y, &log_product)?;
    a.select(&small, &shifted, &y)
}

/// `polygamma(n, x)` as torch's `polygamma_kernel`: `digamma` for `n = 0`, `trigamma`
/// for `n = 1`, `(−1)ⁿ⁺¹·n!·zeta(n + 1, x)` above; orders above
/// [`MAX_POLYGAMMA_ORDER`] are refused, negative ones as torch refuses them.
pub(super) fn polygamma<A: Algebra>(a: &mut A, n: i64, x: &A::V) -> Result<A::V> {
    match n {
        ..0 => Err(format!(
            "polygamma of order {n}: torch refuses negative orders"
        )),
        0 => digamma(a, x),
        1 => trigamma(a, x),
        2..=MAX_POLYGAMMA_ORDER => polygamma_high(a, n as u32, x),
        _ => Err(format!(
            "polygamma of order {n} is not exported: its float32 graph is checked against torch up to order {MAX_POLYGAMMA_ORDER}, and n!·zeta(n + 1, x) loses float32 range and accuracy as n grows"
        )),
    }
}

/// torch's float `trigamma`: below 0.5, `π²/sin²(πx) − trigamma(1 − x)` with `sin(πx)`
/// of the float32 product `π·x` (as torch computes it: near the poles the value is large
/// but finite, as torch's), then six terms `1/x²` and the asymptotic series.
fn trigamma<A: Algebra>(a: &mut A, x: &A::V) -> Result<A::V> {
    const PI_F32: f32 = std::f32::consts::PI;
    let reflect = a.less_c(x, 0.5)?;
    let angle = a.mul_c(x, f64::from(PI_F32))?;
    let angle = a.float32(&angle);
    let sine = a.f1(Fn::Sin, &angle)?;
    let square = a.mul(&sine, &sine)?;
    let pole = a.c_div(f64::from(PI_F32 * PI_F32), &square)?;
    let reflected = a.c_sub(1.0, x)?;
    let x = a.select(&reflect, &reflected, x)?;
    let mut sum = a.number(0.0);
    for k in 0..6 {
        let term = a.add_c(&x, f64::from(k))?;
        let square = a.mul(&term, &term)?;
        let term = a.c_div(1.0, &square)?;
        sum = a.add(&sum, &term)?;
    }
    let x = a.add_c(&x, 6.0)?;
    // (1 + 1/(2x) + ixx·(1/6 − ixx·(1/30 − ixx/42))) / x, ixx = 1/x².
    let square = a.mul(&x, &x)?;
    let ixx = a.c_div(1.0, &square)?;
    let series = a.polevl(&ixx, &[-1.0 / 42.0, 1.0 / 30.0, -1.0 / 6.0])?;
    let series = a.mul(&ixx, &series)?;
    let series = a.c_sub(0.0, &series)?;
    let twice = a.mul_c(&x, 2.0)?;
    let half = a.c_div(1.0, &twice)?;
    let series = a.add(&series, &half)?;
    let series = a.add_c(&series, 1.0)?;
    let tail = a.div(&series, &x)?;
    let positive = a.add(&sum, &tail)?;
    let below = a.sub(&pole, &positive)?;
    a.select(&reflect, &below, &positive)
}

/// `(−1)ⁿ⁺¹·n!·zeta(n + 1, x)` for `n ≥ 2`, as torch's `calc_polygamma`: ±inf (the sign
/// `(−1)ⁿ⁺¹`) at 0, the negative integers and −inf, where torch's zeta is +inf; below 0
/// the reflection `ψ⁽ⁿ⁾(x) = (−1)ⁿ·ψ⁽ⁿ⁾(1 − x) − π·dⁿ/dxⁿ cot(πx)`.
fn polygamma_high<A: Algebra>(a: &mut A, n: u32, x: &A::V) -> Result<A::V> {
    let sign = if n.is_multiple_of(2) { -1.0 } else { 1.0 };
    let factorial: f64 = (1..=n).map(f64::from).product();
    let (negative, integer, fraction) = reflection(a, x)?;
    let reflected = a.c_sub(1.0, x)?;
    let positive_x = a.select(&negative, &reflected, x)?;
    let zeta = hurwitz_zeta(a, f64::from(n + 1), &positive_x)?;
    let positive = a.mul_c(&zeta, sign * factorial)?;
    // dⁿ/dxⁿ cot(πx) = πⁿ·Pₙ(cot πx), P₀(c) = c, Pₖ₊₁(c) = −(1 + c²)·Pₖ′(c).
    let cotangent = cot_pi(a, &fraction)?;
    let scale = -PI.powi(n as i32 + 1);
    let coefficients: Vec<f64> = cot_derivative(n).iter().rev().map(|c| c * scale).collect();
    let cot_term = a.polevl(&cotangent, &coefficients)?;
    let mirrored = if n.is_multiple_of(2) {
        positive.clone()
    } else {
        a.c_sub(0.0, &positive)?
    };
    let below = a.add(&mirrored, &cot_term)?;
    let y = a.select(&negative, &below, &positive)?;
    // An integer (−inf included) is at most 0 when below 1/2.
    let not_positive = a.less_c(x, 0.5)?;
    let pole = a.and(&integer, &not_positive)?;
    a.select_c(&pole, sign * f64::INFINITY, &y)
}

/// The coefficients of `Pₙ` (`dⁿ/dxⁿ cot(πx) = πⁿ·Pₙ(cot πx)`), the constant first.
fn cot_derivative(n: u32) -> Vec<f64> {
    let mut p = vec![0.0, 1.0];
    for _ in 0..n {
        // −(1 + c²)·p′(c)
        let derivative: Vec<f64> = p
            .iter()
            .enumerate()
            .skip(1)
            .map(|(k, c)| k as f64 * c)
            .collect();
        let mut next = vec![0.0; derivative.len() + 2];
        for (k, c) in derivative.iter().enumerate() {
            next[k] -= c;
            next[k + 2] -= c;
        }
        p = next;
    }
    p
}

/// The Hurwitz zeta function `zeta(s, q)` for `q > 0` (NaN kept), as cephes' `zeta` in
/// torch: `Σ (q + k)^−s` for `k ≤ 9`, then the Euler–Maclaurin tail at `w = q + 9`:
/// `b·w/(s − 1) − b/2 + Σᵢ b·s(s+1)⋯(s+2i)/A[i]/w²ⁱ⁺¹`, `b = w^−s` (torch stops the
/// tail once a term is below double precision; the terms left are that small).
fn hurwitz_zeta<A: Algebra>(a: &mut A, s: f64, q: &A::V) -> Result<A::V> {
    let exponent = a.number(-s);
    let mut sum = a.f2(Fn::Pow, q, &exponent)?;
    for k in 1..=ZETA_TERMS {
        let term = a.add_c(q, f64::from(k))?;
        let term = a.f2(Fn::Pow, &term, &exponent)?;
        sum = a.add(&sum, &term)?;
    }
    let w = a.add_c(q, f64::from(ZETA_TERMS))?;
    let b = a.f2(Fn::Pow, &w, &exponent)?;
    let bw = a.mul(&b, &w)?;
    let first = a.mul_c(&bw, 1.0 / (s - 1.0))?;
    let sum = a.add(&sum, &first)?;
    let half = a.mul_c(&b, 0.5)?;
    let sum = a.sub(&sum, &half)?;
    // Σᵢ cᵢ·u²ⁱ⁺¹, u = 1/w, cᵢ = s(s+1)⋯(s+2i)/A[i]: u·polevl(u², c reversed).
    let mut rising = 1.0;
    let mut k = 0.0;
    let mut coefficients = Vec::with_capacity(ZETA_A.len());
    for denominator in ZETA_A {
        rising *= s + k;
        coefficients.push(rising / denominator);
        rising *= s + k + 1.0;
        k += 2.0;
    }
    coefficients.reverse();
    let u = a.c_div(1.0, &w)?;
    let u2 = a.mul(&u, &u)?;
    let series = a.polevl(&u2, &coefficients)?;
    let series = a.mul(&series, &u)?;
    let series = a.mul(&series, &b)?;
    a.add(&sum, &series)
}

/// `mvlgamma(x, p)`, torch's `Σⱼ lgamma(x − j/2) + p(p − 1)/4·log π` (`j < p`), at every
/// `x` (torch 2.13 checks no domain: below `(p − 1)/2` it gives the sum's value, +inf at
/// its poles).
pub(super) fn mvlgamma<A: Algebra>(a: &mut A, p: i64, x: &A::V) -> Result<A::V> {
    if !(1..=MAX_MVLGAMMA_ORDER).contains(&p) {
        return Err(format!(
            "mvlgamma of order p = {p} is not exported (torch requires p ≥ 1; the graph, one lgamma per order, is written up to p = {MAX_MVLGAMMA_ORDER})"
        ));
    }
    let mut sum = a.number(0.0);
    for j in 0..p {
        let shifted = a.add_c(x, -(j as f64) / 2.0)?;
        let term = lgamma(a, &shifted)?;
        sum = a.add(&sum, &term)?;
    }
    let p = p as f64;
    a.add_c(&sum, p * (p - 1.0) / 4.0 * PI.ln())
}

/// The highest `mvlgamma` order exported (each order adds an `lgamma` to the graph).
const MAX_MVLGAMMA_ORDER: i64 = 16;

#[cfg(test)]
mod tests {
    use super::super::tests::{at, close};
    use super::*;

    #[test]
    fn the_cotangent_derivatives_are_those_of_cot() {
        // d/dx cot = −(1 + cot²); d²/dx² cot = 2cot + 2cot³.
        assert_eq!(cot_derivative(1), [-1.0, 0.0, -1.0]);
        assert_eq!(cot_derivative(2), [0.0, 2.0, 0.0, 2.0]);
    }

    /// Values from torch 2.13 in float64 (`torch.special`).
    #[test]
    fn values_are_torchs() {
        let digamma = |x| at("digamma.default", "", x);
        assert!(close(digamma(1.0), -0.5772156649015329, 1e-10));
        assert!(close(digamma(-2.5), 1.1031566406452432, 1e-10));
        assert!(close(digamma(1e-3), -1000.5755719318103, 1e-10));
        assert!(close(digamma(300.7), 5.70444938154476, 1e-10));
        let lgamma = |x| at("lgamma.default", "", x);
        assert!(close(lgamma(0.5), 0.5723649429247001, 1e-10));
        assert!(close(lgamma(-3.3), -0.8243558050174264, 1e-10));
        assert!(close(lgamma(123.4), 469.3360974421906, 1e-10));
        let poly = |n: i64, x| {
            at(
                "polygamma.default",
                &format!(r#"{{"name": "n", "arg": {{"as_int": {n}}}}}"#),
                x,
            )
        };
        assert!(close(poly(1, 0.3), 12.245364544940365, 1e-6));
        assert!(close(poly(1, -4.6), 10.716107835414789, 1e-6));
        assert!(close(poly(2, 2.5), -0.23620405164172736, 1e-10));
        assert!(close(poly(3, -1.25), 1558.2209125348509, 1e-10));
        assert!(close(poly(4, -7.9), -2399973.835948205, 1e-10));
        let mvl = |p: i64, x| {
            at(
                "mvlgamma.default",
                &format!(r#"{{"name": "p", "arg": {{"as_int": {p}}}}}"#),
                x,
            )
        };
        assert!(close(mvl(3, 2.2), 1.6328605081543575, 1e-10));
    }

    #[test]
    fn special_values_are_torchs() {
        let digamma = |x| at("digamma.default", "", x);
        assert_eq!(digamma(0.0), f64::NEG_INFINITY);
        assert_eq!(digamma(-0.0), f64::INFINITY);
        assert!(digamma(-3.0).is_nan());
        assert!(digamma(f64::NEG_INFINITY).is_nan());
        assert_eq!(digamma(f64::INFINITY), f64::INFINITY);
        assert!(digamma(f64::NAN).is_nan());
        assert!(close(digamma(-1e-30), 1e30, 1e-10));
        let lgamma = |x| at("lgamma.default", "", x);
        for x in [0.0, -0.0, -4.0, -3e38, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(lgamma(x), f64::INFINITY, "lgamma({x})");
        }
        assert!(lgamma(f64::NAN).is_nan());
        assert!(close(lgamma(-1e-40), 92.10340371976183, 1e-10));
        let poly = |n: i64, x| {
            at(
                "polygamma.default",
                &format!(r#"{{"name": "n", "arg": {{"as_int": {n}}}}}"#),
                x,
            )
        };
        assert_eq!(poly(2, -3.0), f64::NEG_INFINITY);
        assert_eq!(poly(3, 0.0), f64::INFINITY);
        assert!(poly(2, f64::NAN).is_nan());
        assert!(poly(2, f64::INFINITY).is_nan());
        assert_eq!(poly(2, f64::NEG_INFINITY), f64::NEG_INFINITY);
        assert_eq!(poly(1, 0.0), f64::INFINITY);
        assert!(poly(1, f64::NEG_INFINITY).is_nan());
        let mvl = |x| {
            at(
                "mvlgamma.default",
                r#"{"name": "p", "arg": {"as_int": 3}}"#,
                x,
            )
        };
        assert_eq!(mvl(1.0), f64::INFINITY);
        assert!(mvl(f64::NAN).is_nan());
    }
}
