//! The Airy function `special_airy_ai`, as torch's `airy_ai_forward` (cephes `airy`):
//! the power series of `Ai` between −2.09 and 2.09, the decaying asymptotic form from
//! 2.09, the oscillating one below −2.09.

// torch's coefficients, digit for digit as its source writes them.
#![allow(clippy::excessive_precision)]

use super::super::decompose::Fn;
use super::super::series::{Algebra, Ops, Result};

/// Numerator of the decaying form (`AN`), in `1/ζ`, `ζ = 2x^(3/2)/3`.
const AN: [f64; 8] = [
    3.46538101525629032477E-01,
    1.20075952739645805542E+01,
    7.62796053615234516538E+01,
    1.68089224934630576269E+02,
    1.59756391350164413639E+02,
    7.05360906840444183113E+01,
    1.40264691163389668864E+01,
    9.99999999999999995305E-01,
];
/// Its denominator (`AD`).
const AD: [f64; 8] = [
    5.67594532638770212846E-01,
    1.47562562584847203173E+01,
    8.45138970141474626562E+01,
    1.77318088145400459522E+02,
    1.64234692871529701831E+02,
    7.14778400825575695274E+01,
    1.40959135607834029598E+01,
    1.00000000000000000470E+00,
];
/// Numerator of the oscillating form's sine factor (`AFN`), in `z²`, `z = 1/ζ`.
const AFN: [f64; 9] = [
    -1.31696323418331795333E-01,
    -6.26456544431912369773E-01,
    -6.93158036036933542233E-01,
    -2.79779981545119124951E-01,
    -4.91900132609500318020E-02,
    -4.06265923594885404393E-03,
    -1.59276496239262096340E-04,
    -2.77649108155232920844E-06,
    -1.67787698489114633780E-08,
];
/// Its denominator (`AFD`).
const AFD: [f64; 9] = [
    1.33560420706553243746E+01,
    3.26825032795224613948E+01,
    2.67367040941499554804E+01,
    9.18707402907259625840E+00,
    1.47529146771666414581E+00,
    1.15687173795188044134E-01,
    4.40291641615211203805E-03,
    7.54720348287414296618E-05,
    4.51850092970580378464E-07,
];
/// Numerator of the oscillating form's cosine factor (`AGN`), in `z²`.
const AGN: [f64; 11] = [
    1.97339932091685679179E-02,
    3.91103029615688277255E-01,
    1.06579897599595591108E+00,
    9.39169229816650230044E-01,
    3.51465656105547619242E-01,
    6.33888919628925490927E-02,
    5.85804113048388458567E-03,
    2.82851600836737019778E-04,
    6.98793669997260967291E-06,
    8.11789239554389293311E-08,
    3.41551784765923618484E-10,
];
/// Its denominator (`AGD`).
const AGD: [f64; 10] = [
    9.30892908077441974853E+00,
    1.98352928718312140417E+01,
    1.55646628932864612953E+01,
    5.47686069422975497931E+00,
    9.54293611618961883998E-01,
    8.64580826352392193095E-02,
    4.12656523824222607191E-03,
    1.01259085116509135510E-04,
    1.17166733214413521882E-06,
    4.91834570062930015649E-09,
];

/// `1/√π`, torch's `5.64189583547756286948e-01`.
const FRAC_1_SQRT_PI: f64 = 5.641_895_835_477_562_869_48E-1;
/// `Ai(0)` and `−Ai'(0)`, the weights of the power series' two solutions.
const SERIES_F: f64 = 0.355_028_053_887_817_239_260;
const SERIES_G: f64 = 0.258_819_403_792_806_798_405;
/// The power series' terms computed: torch adds terms until the last is below float32's
/// epsilon relative to the sum, which within |x| < 2.09 (|x³| < 9.2) takes at most 8;
/// the later ones are below it too and change nothing.
const SERIES_TERMS: usize = 12;
/// Where torch's forms meet: the oscillating one below −2.09, the decaying one from 2.09,
/// 0 above 103.892.
const OSCILLATING_BELOW: f64 = -2.09;
const DECAYING_FROM: f64 = 2.09;
const ZERO_ABOVE: f64 = 103.892;

/// `special_airy_ai(x)` as torch's `airy_ai_forward`: NaN at ±inf, 0 above 103.892, the
/// oscillating form below −2.09, the decaying form from 2.09, the power series between.
pub(super) fn airy_ai<A: Algebra>(a: &mut A, x: &A::V) -> Result<A::V> {
    let oscillating = oscillating(a, x)?;
    let decaying = decaying(a, x)?;
    let series = series(a, x)?;
    let below = a.less_c(x, OSCILLATING_BELOW)?;
    let between = a.less_c(x, DECAYING_FROM)?;
    let y = a.select(&between, &series, &decaying)?;
    let y = a.select(&below, &oscillating, &y)?;
    let beyond = a.greater_c(x, ZERO_ABOVE)?;
    let y = a.select_c(&beyond, 0.0, &y)?;
    let size = a.f1(Fn::Abs, x)?;
    let infinite = a.equal_c(&size, f64::INFINITY)?;
    a.select_c(&infinite, f64::NAN, &y)
}

/// `(−2·x)·√(−x)/3`, each step rounded to float32 as torch's float kernel computes it
/// (the oscillating form's phase depends on that rounding for a large `x`).
fn minus_zeta<A: Algebra>(a: &mut A, x: &A::V) -> Result<A::V> {
    let minus = a.c_sub(0.0, x)?;
    let root = a.f1(Fn::Sqrt, &minus)?;
    let root = a.float32(&root);
    let double = a.mul_c(x, -2.0)?;
    let product = a.mul(&double, &root)?;
    let product = a.float32(&product);
    let three = a.number(3.0);
    let zeta = a.div(&product, &three)?;
    Ok(a.float32(&zeta))
}

/// Below −2.09: `(1/√π)/⁴√(−x)·(sin t·(1 + z²·AFN/AFD) − cos t·z·AGN/AGD)`,
/// `z = 1/ζ`, `t = ζ + π/4`.
fn oscillating<A: Algebra>(a: &mut A, x: &A::V) -> Result<A::V> {
    let zeta = minus_zeta(a, x)?;
    let z = a.c_div(1.0, &zeta)?;
    let zz = a.mul(&z, &z)?;
    let f = a.rational(&zz, &AFN, &AFD)?;
    let f = a.mul(&zz, &f)?;
    let f = a.add_c(&f, 1.0)?;
    let g = a.rational(&zz, &AGN, &AGD)?;
    let g = a.mul(&z, &g)?;
    let t = a.add_c(&zeta, 0.25 * std::f64::consts::PI)?;
    let t = a.float32(&t);
    let sin = a.f1(Fn::Sin, &t)?;
    let cos = a.f1(Fn::Cos, &t)?;
    let f = a.mul(&sin, &f)?;
    let g = a.mul(&cos, &g)?;
    let sum = a.sub(&f, &g)?;
    let minus = a.c_sub(0.0, x)?;
    let root = a.f1(Fn::Sqrt, &minus)?;
    let root = a.f1(Fn::Sqrt, &root)?;
    let scale = a.c_div(FRAC_1_SQRT_PI, &root)?;
    a.mul(&scale, &sum)
}

/// From 2.09: `(1/√π)·(AN/AD)(1/ζ)/(2·⁴√x·exp(ζ))`, `ζ = 2x^(3/2)/3`.
fn decaying<A: Algebra>(a: &mut A, x: &A::V) -> Result<A::V> {
    let root = a.f1(Fn::Sqrt, x)?;
    let zeta = a.mul_c(x, 2.0)?;
    let zeta = a.mul(&zeta, &root)?;
    let three = a.number(3.0);
    let zeta = a.div(&zeta, &three)?;
    let inverse = a.c_div(1.0, &zeta)?;
    let ratio = a.rational(&inverse, &AN, &AD)?;
    let ratio = a.mul_c(&ratio, FRAC_1_SQRT_PI)?;
    let fourth = a.f1(Fn::Sqrt, &root)?;
    let denominator = a.mul_c(&fourth, 2.0)?;
    let growth = a.f1(Fn::Exp, &zeta)?;
    let growth = a.float32(&growth);
    let denominator = a.mul(&denominator, &growth)?;
    a.div(&ratio, &denominator)
}

/// Between: `Ai(0)·f − (−Ai'(0))·g`, the power series `f = Σ mₖ`, `g = Σ nₖ` in `x³`
/// as torch accumulates them.
fn series<A: Algebra>(a: &mut A, x: &A::V) -> Result<A::V> {
    let square = a.mul(x, x)?;
    let cube = a.mul(&square, x)?;
    let mut f = a.number(1.0);
    let mut g = x.clone();
    let mut m = a.number(1.0);
    let mut n = x.clone();
    let mut k = 1.0;
    for _ in 0..SERIES_TERMS {
        m = a.mul(&m, &cube)?;
        k += 1.0;
        let divisor = a.number(k);
        m = a.div(&m, &divisor)?;
        n = a.mul(&n, &cube)?;
        k += 1.0;
        let divisor = a.number(k);
        n = a.div(&n, &divisor)?;
        m = a.div(&m, &divisor)?;
        f = a.add(&f, &m)?;
        k += 1.0;
        let divisor = a.number(k);
        n = a.div(&n, &divisor)?;
        g = a.add(&g, &n)?;
    }
    let f = a.mul_c(&f, SERIES_F)?;
    let g = a.mul_c(&g, SERIES_G)?;
    a.sub(&f, &g)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{at, close};

    /// Values from torch 2.13 in float64 in each of its forms, and its special values.
    #[test]
    fn airy_values_are_torchs() {
        let f = |x: f64| at("special_airy_ai.default", "", x);
        for (x, expected) in [
            (0.0, 0.3550280538878172),
            (-1.0, 0.5355608832923521),
            (1.5, 0.07174949700810533),
            (-5.0, 0.35076100902415286),
            (3.0, 0.00659113935746072),
        ] {
            assert!(close(f(x), expected, 1e-7), "Ai({x}) = {}", f(x));
        }
        let relative = (f(10.0) - 1.1047532552898654e-10).abs() / 1.1047532552898654e-10;
        assert!(relative < 1e-6, "Ai(10) = {}", f(10.0));
        assert_eq!(f(200.0), 0.0);
        assert!(f(f64::INFINITY).is_nan());
        assert!(f(f64::NEG_INFINITY).is_nan());
        assert!(f(f64::NAN).is_nan());
    }
}
