//! Bessel functions of the first and second kind of orders 0 and 1: `special_bessel_j0`,
//! `special_bessel_j1`, `special_bessel_y0`, `special_bessel_y1`, as torch's
//! `bessel_j0_forward` … `bessel_y1_forward` (cephes `j0`, `j1`, `y0`, `y1`): a rational
//! approximation up to 5, and above it the asymptotic form `√(2/(πx))·(P·cos θ − (5/x)·Q·sin θ)`
//! (`Y`: `P·sin θ + (5/x)·Q·cos θ`), `θ = x − π/4` or `x − 3π/4`, `P` and `Q` rational in
//! `25/x²`. The coefficients of `P` and `Q` are the same for `J` and `Y` of one order.

// torch's coefficients, digit for digit as its source writes them.
#![allow(clippy::excessive_precision)]

use super::super::decompose::Fn;
use super::super::series::{Algebra, Ops, Result};

/// `PP` of order 0 (`bessel_j0_forward`, `bessel_y0_forward`), in `25/x²`.
const ORDER0_PP: [f64; 7] = [
    7.96936729297347051624E-04,
    8.28352392107440799803E-02,
    1.23953371646414299388E+00,
    5.44725003058768775090E+00,
    8.74716500199817011941E+00,
    5.30324038235394892183E+00,
    9.99999999999999997821E-01,
];
/// `PQ` of order 0 (`bessel_j0_forward`, `bessel_y0_forward`), in `25/x²`.
const ORDER0_PQ: [f64; 7] = [
    9.24408810558863637013E-04,
    8.56288474354474431428E-02,
    1.25352743901058953537E+00,
    5.47097740330417105182E+00,
    8.76190883237069594232E+00,
    5.30605288235394617618E+00,
    1.00000000000000000218E+00,
];
/// `QP` of order 0 (`bessel_j0_forward`, `bessel_y0_forward`), in `25/x²`.
const ORDER0_QP: [f64; 8] = [
    -1.13663838898469149931E-02,
    -1.28252718670509318512E+00,
    -1.95539544257735972385E+01,
    -9.32060152123768231369E+01,
    -1.77681167980488050595E+02,
    -1.47077505154951170175E+02,
    -5.14105326766599330220E+01,
    -6.05014350600728481186E+00,
];
/// `QQ` of order 0 (`bessel_j0_forward`, `bessel_y0_forward`), in `25/x²`.
const ORDER0_QQ: [f64; 7] = [
    6.43178256118178023184E+01,
    8.56430025976980587198E+02,
    3.88240183605401609683E+03,
    7.24046774195652478189E+03,
    5.93072701187316984827E+03,
    2.06209331660327847417E+03,
    2.42005740240291393179E+02,
];
/// `PP` of order 1 (`bessel_j1_forward`, `bessel_y1_forward`), in `(5/x)²`.
const ORDER1_PP: [f64; 7] = [
    7.62125616208173112003E-04,
    7.31397056940917570436E-02,
    1.12719608129684925192E+00,
    5.11207951146807644818E+00,
    8.42404590141772420927E+00,
    5.21451598682361504063E+00,
    1.00000000000000000254E+00,
];
/// `PQ` of order 1 (`bessel_j1_forward`, `bessel_y1_forward`), in `(5/x)²`.
const ORDER1_PQ: [f64; 7] = [
    5.71323128072548699714E-04,
    6.88455908754495404082E-02,
    1.10514232634061696926E+00,
    5.07386386128601488557E+00,
    8.39985554327604159757E+00,
    5.20982848682361821619E+00,
    9.99999999999999997461E-01,
];
/// `QP` of order 1 (`bessel_j1_forward`, `bessel_y1_forward`), in `(5/x)²`.
const ORDER1_QP: [f64; 8] = [
    5.10862594750176621635E-02,
    4.98213872951233449420E+00,
    7.58238284132545283818E+01,
    3.66779609360150777800E+02,
    7.10856304998926107277E+02,
    5.97489612400613639965E+02,
    2.11688757100572135698E+02,
    2.52070205858023719784E+01,
];
/// `QQ` of order 1 (`bessel_j1_forward`, `bessel_y1_forward`), in `(5/x)²`.
const ORDER1_QQ: [f64; 7] = [
    7.42373277035675149943E+01,
    1.05644886038262816351E+03,
    4.98641058337653607651E+03,
    9.56231892404756170795E+03,
    7.99704160447350683650E+03,
    2.82619278517639096600E+03,
    3.36093607810698293419E+02,
];
/// `bessel_j0_forward`'s `RP`, in `x²` (up to 5).
const J0_RP: [f64; 4] = [
    -4.79443220978201773821E+09,
    1.95617491946556577543E+12,
    -2.49248344360967716204E+14,
    9.70862251047306323952E+15,
];
/// `bessel_j0_forward`'s `RQ`, in `x²`.
const J0_RQ: [f64; 8] = [
    4.99563147152651017219E+02,
    1.73785401676374683123E+05,
    4.84409658339962045305E+07,
    1.11855537045356834862E+10,
    2.11277520115489217587E+12,
    3.10518229857422583814E+14,
    3.18121955943204943306E+16,
    1.71086294081043136091E+18,
];
/// `bessel_j1_forward`'s `RP`, in `x²` (up to 5).
const J1_RP: [f64; 4] = [
    -8.99971225705559398224E+08,
    4.52228297998194034323E+11,
    -7.27494245221818276015E+13,
    3.68295732863852883286E+15,
];
/// `bessel_j1_forward`'s `RQ`, in `x²`.
const J1_RQ: [f64; 8] = [
    6.20836478118054335476E+02,
    2.56987256757748830383E+05,
    8.35146791431949253037E+07,
    2.21511595479792499675E+10,
    4.74914122079991414898E+12,
    7.84369607876235854894E+14,
    8.95222336184627338078E+16,
    5.32278620332680085395E+18,
];
/// `bessel_y0_forward`'s `YP`, in `x²` (up to 5).
const Y0_YP: [f64; 8] = [
    1.55924367855235737965E+04,
    -1.46639295903971606143E+07,
    5.43526477051876500413E+09,
    -9.82136065717911466409E+11,
    8.75906394395366999549E+13,
    -3.46628303384729719441E+15,
    4.42733268572569800351E+16,
    -1.84950800436986690637E+16,
];
/// `bessel_y0_forward`'s `YQ`, in `x²`.
const Y0_YQ: [f64; 7] = [
    1.04128353664259848412E+03,
    6.26107330137134956842E+05,
    2.68919633393814121987E+08,
    8.64002487103935000337E+10,
    2.02979612750105546709E+13,
    3.17157752842975028269E+15,
    2.50596256172653059228E+17,
];
/// `bessel_y1_forward`'s `YP`, in `x²` (up to 5).
const Y1_YP: [f64; 6] = [
    1.26320474790178026440E+09,
    -6.47355876379160291031E+11,
    1.14509511541823727583E+14,
    -8.12770255501325109621E+15,
    2.02439475713594898196E+17,
    -7.78877196265950026825E+17,
];
/// `bessel_y1_forward`'s `YQ`, in `x²`.
const Y1_YQ: [f64; 8] = [
    5.94301592346128195359E+02,
    2.35564092943068577943E+05,
    7.34811944459721705660E+07,
    1.87601316108706159478E+10,
    3.88231277496238566008E+12,
    6.20557727146953693363E+14,
    6.87141087355300489866E+16,
    3.97270608116560655612E+18,
];

/// `√(2/π)`, torch's `0.797884560802865355879892119868763737`.
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_355_879_892_119_868_763_737;
/// `2/π` (torch's `0.636619772367581343075535053490057448`).
const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;

/// The rational and oscillating parts of one order's asymptotic form above 5.
struct Asymptotic<'c> {
    pp: &'c [f64],
    pq: &'c [f64],
    qp: &'c [f64],
    qq: &'c [f64],
    /// `π/4` (order 0) or `3π/4` (order 1).
    phase: f64,
    /// The variable of `P`, `Q`: `25/x²` (order 0) or `(5/x)·(5/x)` (order 1), as each
    /// torch kernel rounds it.
    squared_first: bool,
}

const ORDER0: Asymptotic<'static> = Asymptotic {
    pp: &ORDER0_PP,
    pq: &ORDER0_PQ,
    qp: &ORDER0_QP,
    qq: &ORDER0_QQ,
    phase: std::f64::consts::FRAC_PI_4,
    squared_first: true,
};

const ORDER1: Asymptotic<'static> = Asymptotic {
    pp: &ORDER1_PP,
    pq: &ORDER1_PQ,
    qp: &ORDER1_QP,
    qq: &ORDER1_QQ,
    phase: 3.0 * std::f64::consts::FRAC_PI_4,
    squared_first: false,
};

/// Which of `J` and `Y` an asymptotic form computes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    J,
    Y,
}

/// The asymptotic form at `x > 0` (used above 5): `J`: `(P·cos θ − (5/x)·Q·sin θ)·√(2/π)/√x`,
/// `Y`: `(P·sin θ + (5/x)·Q·cos θ)·√(2/π)/√x`, `θ = x − phase` rounded to float32 as
/// torch's float kernel computes it (the cosine of a large `x` depends on that rounding).
fn asymptotic<A: Algebra>(a: &mut A, x: &A::V, order: &Asymptotic<'_>, kind: Kind) -> Result<A::V> {
    let w = if order.squared_first {
        let square = a.mul(x, x)?;
        a.c_div(25.0, &square)?
    } else {
        let ratio = a.c_div(5.0, x)?;
        a.mul(&ratio, &ratio)?
    };
    let p = a.rational(&w, order.pp, order.pq)?;
    let q = a.rational(&w, order.qp, order.qq)?;
    let theta = a.add_c(x, -order.phase)?;
    let theta = a.float32(&theta);
    let cos = a.f1(Fn::Cos, &theta)?;
    let sin = a.f1(Fn::Sin, &theta)?;
    let (first, second) = match kind {
        Kind::J => (cos, sin),
        Kind::Y => (sin, cos),
    };
    let lead = a.mul(&p, &first)?;
    let five = a.c_div(5.0, x)?;
    let tail = a.mul(&five, &q)?;
    let tail = a.mul(&tail, &second)?;
    let sum = match kind {
        Kind::J => a.sub(&lead, &tail)?,
        Kind::Y => a.add(&lead, &tail)?,
    };
    let sum = a.mul_c(&sum, SQRT_2_OVER_PI)?;
    let root = a.f1(Fn::Sqrt, x)?;
    a.div(&sum, &root)
}

/// `J0` of `x ≥ 0` (NaN kept): `1 − x²/4` below 1e−5, `(x² − r1²)(x² − r2²)·RP/RQ` up to 5
/// (`r1`, `r2` its first zeros), the asymptotic form above.
fn j0_positive<A: Algebra>(a: &mut A, x: &A::V) -> Result<A::V> {
    let square = a.mul(x, x)?;
    let tiny = a.mul_c(&square, 0.25)?;
    let tiny = a.c_sub(1.0, &tiny)?;
    let first = a.add_c(&square, -5.783_185_962_946_784_521_18)?;
    let second = a.add_c(&square, -30.471_262_343_662_086_399_1)?;
    let ratio = a.rational(&square, &J0_RP, &J0_RQ)?;
    let near = a.mul(&first, &second)?;
    let near = a.mul(&near, &ratio)?;
    let near = {
        let small = a.less_c(x, 0.00001)?;
        a.select(&small, &tiny, &near)?
    };
    let far = asymptotic(a, x, &ORDER0, Kind::J)?;
    let above = a.greater_c(x, 5.0)?;
    a.select(&above, &far, &near)
}

/// `J1` of `x ≥ 0` (NaN kept): `RP/RQ·x·(x² − r1²)(x² − r2²)` up to 5, the asymptotic
/// form above.
fn j1_positive<A: Algebra>(a: &mut A, x: &A::V) -> Result<A::V> {
    let square = a.mul(x, x)?;
    let ratio = a.rational(&square, &J1_RP, &J1_RQ)?;
    let near = a.mul(&ratio, x)?;
    let first = a.add_c(&square, -14.681_970_642_123_893_257_2)?;
    let near = a.mul(&near, &first)?;
    let second = a.add_c(&square, -49.218_456_321_694_603_670_3)?;
    let near = a.mul(&near, &second)?;
    let far = asymptotic(a, x, &ORDER1, Kind::J)?;
    let above = a.greater_c(x, 5.0)?;
    a.select(&above, &far, &near)
}

/// `special_bessel_j0(x)` as torch's `bessel_j0_forward`: even, computed at `|x|`.
pub(super) fn j0<A: Algebra>(a: &mut A, x: &A::V) -> Result<A::V> {
    let size = a.f1(Fn::Abs, x)?;
    j0_positive(a, &size)
}

/// `special_bessel_j1(x)` as torch's `bessel_j1_forward`: odd, `−J1(−x)` below 0.
pub(super) fn j1<A: Algebra>(a: &mut A, x: &A::V) -> Result<A::V> {
    let size = a.f1(Fn::Abs, x)?;
    let y = j1_positive(a, &size)?;
    let negative = a.less_c(x, 0.0)?;
    let flipped = a.c_sub(0.0, &y)?;
    a.select(&negative, &flipped, &y)
}

/// NaN below 0 (−inf included) and −inf at ±0, as torch's `Y0` and `Y1` give there.
fn y_domain<A: Algebra>(a: &mut A, x: &A::V, y: &A::V) -> Result<A::V> {
    let zero = a.equal_c(x, 0.0)?;
    let y = a.select_c(&zero, f64::NEG_INFINITY, y)?;
    let negative = a.less_c(x, 0.0)?;
    a.select_c(&negative, f64::NAN, &y)
}

/// `special_bessel_y0(x)` as torch's `bessel_y0_forward`: `YP/YQ + (2/π)·log(x)·J0(x)`
/// up to 5, the asymptotic form above.
pub(super) fn y0<A: Algebra>(a: &mut A, x: &A::V) -> Result<A::V> {
    let square = a.mul(x, x)?;
    let ratio = a.rational(&square, &Y0_YP, &Y0_YQ)?;
    let log = a.f1(Fn::Log, x)?;
    let log = a.mul_c(&log, TWO_OVER_PI)?;
    let j = j0_positive(a, x)?;
    let log = a.mul(&log, &j)?;
    let near = a.add(&ratio, &log)?;
    let far = asymptotic(a, x, &ORDER0, Kind::Y)?;
    let above = a.greater_c(x, 5.0)?;
    let y = a.select(&above, &far, &near)?;
    y_domain(a, x, &y)
}

/// `special_bessel_y1(x)` as torch's `bessel_y1_forward`:
/// `x·YP/YQ + (2/π)·(J1(x)·log(x) − 1/x)` up to 5, the asymptotic form above.
pub(super) fn y1<A: Algebra>(a: &mut A, x: &A::V) -> Result<A::V> {
    let square = a.mul(x, x)?;
    let ratio = a.rational(&square, &Y1_YP, &Y1_YQ)?;
    let ratio = a.mul(x, &ratio)?;
    let j = j1_positive(a, x)?;
    let log = a.f1(Fn::Log, x)?;
    let log = a.mul(&j, &log)?;
    let inverse = a.c_div(1.0, x)?;
    let log = a.sub(&log, &inverse)?;
    let log = a.mul_c(&log, TWO_OVER_PI)?;
    let near = a.add(&ratio, &log)?;
    let far = asymptotic(a, x, &ORDER1, Kind::Y)?;
    let above = a.greater_c(x, 5.0)?;
    let y = a.select(&above, &far, &near)?;
    y_domain(a, x, &y)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{at, close};

    /// Values from torch 2.13 in float64 (at 100 in float32), on both sides of 5 and at
    /// torch's special values.
    #[test]
    fn first_and_second_kind_values_are_torchs() {
        let f = |target: &str, x: f64| at(target, "", x);
        for (target, x, expected) in [
            ("special_bessel_j0.default", 1e-6, 0.99999999999975),
            ("special_bessel_j0.default", 2.5, -0.048383776468256645),
            ("special_bessel_j0.default", -3.0, -0.2600519549074645),
            ("special_bessel_j0.default", 7.0, 0.3000792697173623),
            // torch's float32 value: the phase `x − π/4` rounded to float32 as its kernel does.
            ("special_bessel_j0.default", 100.0, 0.019985679537057877),
            ("special_bessel_j1.default", -2.5, -0.4970941024644698),
            ("special_bessel_j1.default", 4.0, -0.06604332806420507),
            ("special_bessel_j1.default", 7.0, -0.004682797275893047),
            ("special_bessel_j1.default", -30.0, 0.11875106261662309),
            ("special_bessel_y0.default", 0.5, -0.4445187335067066),
            ("special_bessel_y0.default", 3.0, 0.3768500100184375),
            ("special_bessel_y0.default", 7.0, -0.02594975564546204),
            ("special_bessel_y0.default", 50.0, -0.09806499547007692),
            ("special_bessel_y1.default", 0.5, -1.4714723926702433),
            ("special_bessel_y1.default", 3.0, 0.32467442479622594),
            ("special_bessel_y1.default", 7.0, -0.3026672388243377),
        ] {
            let value = f(target, x);
            assert!(close(value, expected, 1e-7), "{target}({x}) = {value}");
        }
        assert_eq!(f("special_bessel_j0.default", 0.0), 1.0);
        assert_eq!(f("special_bessel_j1.default", 0.0), 0.0);
        for target in ["special_bessel_y0.default", "special_bessel_y1.default"] {
            assert_eq!(f(target, 0.0), f64::NEG_INFINITY);
            assert!(f(target, -1.0).is_nan());
            assert!(f(target, f64::NEG_INFINITY).is_nan());
        }
        for target in [
            "special_bessel_j0.default",
            "special_bessel_j1.default",
            "special_bessel_y0.default",
            "special_bessel_y1.default",
        ] {
            assert!(f(target, f64::INFINITY).is_nan(), "{target}");
            assert!(f(target, f64::NAN).is_nan(), "{target}");
        }
    }
}
