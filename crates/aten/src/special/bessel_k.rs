//! Modified Bessel functions of the second kind, `special_modified_bessel_k0`,
//! `special_modified_bessel_k1` and their exponentially scaled forms
//! `special_scaled_modified_bessel_k0`/`_k1`, as torch's `modified_bessel_k0_forward` …
//! (cephes `k0`, `k1`, `k0e`, `k1e`): a Chebyshev series in `x² − 2` with the logarithmic
//! term `log(x/2)·I(x)` up to 2, a Chebyshev series in `8/x − 2` times `exp(−x)/√x` above.

// torch's coefficients, digit for digit as its source writes them.
#![allow(clippy::excessive_precision)]

use super::super::decompose::Fn;
use super::super::series::{Algebra, Ops, Result};

/// Chebyshev coefficients of `K0` on (0, 2], in `x² − 2` (`modified_bessel_k0_forward`'s `A`).
const K0_A: [f64; 10] = [
    1.37446543561352307156E-16,
    4.25981614279661018399E-14,
    1.03496952576338420167E-11,
    1.90451637722020886025E-09,
    2.53479107902614945675E-07,
    2.28621210311945178607E-05,
    1.26461541144692592338E-03,
    3.59799365153615016266E-02,
    3.44289899924628486886E-01,
    -5.35327393233902768720E-01,
];
/// Chebyshev coefficients of `exp(x)·√x·K0(x)` on (2, ∞), in `8/x − 2` (`B`).
const K0_B: [f64; 25] = [
    5.30043377268626276149E-18,
    -1.64758043015242134646E-17,
    5.21039150503902756861E-17,
    -1.67823109680541210385E-16,
    5.51205597852431940784E-16,
    -1.84859337734377901440E-15,
    6.34007647740507060557E-15,
    -2.22751332699166985548E-14,
    8.03289077536357521100E-14,
    -2.98009692317273043925E-13,
    1.14034058820847496303E-12,
    -4.51459788337394416547E-12,
    1.85594911495471785253E-11,
    -7.95748924447710747776E-11,
    3.57739728140030116597E-10,
    -1.69753450938905987466E-09,
    8.57403401741422608519E-09,
    -4.66048989768794782956E-08,
    2.76681363944501510342E-07,
    -1.83175552271911948767E-06,
    1.39498137188764993662E-05,
    -1.28495495816278026384E-04,
    1.56988388573005337491E-03,
    -3.14481013119645005427E-02,
    2.44030308206595545468E+00,
];
/// Chebyshev coefficients of `x·K1(x)` on (0, 2], in `x² − 2` (`modified_bessel_k1_forward`'s `A`).
const K1_A: [f64; 11] = [
    -7.02386347938628759343E-18,
    -2.42744985051936593393E-15,
    -6.66690169419932900609E-13,
    -1.41148839263352776110E-10,
    -2.21338763073472585583E-08,
    -2.43340614156596823496E-06,
    -1.73028895751305206302E-04,
    -6.97572385963986435018E-03,
    -1.22611180822657148235E-01,
    -3.53155960776544875667E-01,
    1.52530022733894777053E+00,
];
/// Chebyshev coefficients of `exp(x)·√x·K1(x)` on (2, ∞), in `8/x − 2` (`B`).
const K1_B: [f64; 25] = [
    -5.75674448366501715755E-18,
    1.79405087314755922667E-17,
    -5.68946255844285935196E-17,
    1.83809354436663880070E-16,
    -6.05704724837331885336E-16,
    2.03870316562433424052E-15,
    -7.01983709041831346144E-15,
    2.47715442448130437068E-14,
    -8.97670518232499435011E-14,
    3.34841966607842919884E-13,
    -1.28917396095102890680E-12,
    5.13963967348173025100E-12,
    -2.12996783842756842877E-11,
    9.21831518760500529508E-11,
    -4.19035475934189648750E-10,
    2.01504975519703286596E-09,
    -1.03457624656780970260E-08,
    5.74108412545004946722E-08,
    -3.50196060308781257119E-07,
    2.40648494783721712015E-06,
    -1.93619797416608296024E-05,
    1.95215518471351631108E-04,
    -2.85781685962277938680E-03,
    1.03923736576817238437E-01,
    2.72062619048444266945E+00,
];

/// Which of `K0`, `K1` and their scaled forms a program computes.
#[derive(Clone, Copy)]
pub(super) struct Order {
    /// Order 1 (`K1`), else order 0.
    pub one: bool,
    /// `exp(x)·K(x)` (`scaled_modified_bessel_k*`).
    pub scaled: bool,
}

/// `special_modified_bessel_k0`/`_k1`(x) and the scaled forms, as torch's
/// `modified_bessel_k0_forward` … `scaled_modified_bessel_k1_forward`: +inf at ±0, NaN
/// below 0 (−inf included); up to 2, `chbevl(x² − 2, A) − log(x/2)·I0(x)` (order 0) or
/// `log(x/2)·I1(x) + chbevl(x² − 2, A)/x` (order 1), times `exp(x)` when scaled; above
/// 2, `chbevl(8/x − 2, B)/√x`, times `exp(−x)` when not scaled.
pub(super) fn k<A: Algebra>(a: &mut A, x: &A::V, order: Order) -> Result<A::V> {
    let (near_coefficients, far_coefficients) = if order.one {
        (&K1_A[..], &K1_B[..])
    } else {
        (&K0_A[..], &K0_B[..])
    };
    let square = a.mul(x, x)?;
    let t = a.add_c(&square, -2.0)?;
    let series = a.chbevl(&t, near_coefficients)?;
    let half = a.mul_c(x, 0.5)?;
    let log = a.f1(Fn::Log, &half)?;
    let near = if order.one {
        let i1 = super::bessel::i1(a, x, false)?;
        let log = a.mul(&log, &i1)?;
        let series = a.div(&series, x)?;
        a.add(&log, &series)?
    } else {
        let i0 = super::bessel::i0(a, x, false)?;
        let log = a.mul(&log, &i0)?;
        a.sub(&series, &log)?
    };
    let t = a.c_div(8.0, x)?;
    let t = a.add_c(&t, -2.0)?;
    let series = a.chbevl(&t, far_coefficients)?;
    let (near, far) = if order.scaled {
        let growth = a.f1(Fn::Exp, x)?;
        (a.mul(&near, &growth)?, series)
    } else {
        let minus = a.c_sub(0.0, x)?;
        let decay = a.f1(Fn::Exp, &minus)?;
        (near, a.mul(&decay, &series)?)
    };
    let root = a.f1(Fn::Sqrt, x)?;
    let far = a.div(&far, &root)?;
    let above = a.greater_c(x, 2.0)?;
    let y = a.select(&above, &far, &near)?;
    let zero = a.equal_c(x, 0.0)?;
    let y = a.select_c(&zero, f64::INFINITY, &y)?;
    let negative = a.less_c(x, 0.0)?;
    a.select_c(&negative, f64::NAN, &y)
}

#[cfg(test)]
mod tests {
    use super::super::tests::at;

    /// Values from torch 2.13 in float64, on both sides of 2 and at torch's special values.
    #[test]
    fn second_kind_values_are_torchs() {
        let f = |target: &str, x: f64| at(target, "", x);
        for (target, x, expected) in [
            ("special_modified_bessel_k0.default", 0.5, 0.924419071227666),
            (
                "special_modified_bessel_k0.default",
                2.0,
                0.1138938727495334,
            ),
            (
                "special_modified_bessel_k0.default",
                3.0,
                0.03473950438627925,
            ),
            (
                "special_modified_bessel_k0.default",
                50.0,
                3.410167749789495e-23,
            ),
            (
                "special_modified_bessel_k1.default",
                0.5,
                1.6564411200033007,
            ),
            (
                "special_modified_bessel_k1.default",
                2.0,
                0.13986588181652246,
            ),
            (
                "special_modified_bessel_k1.default",
                3.0,
                0.04015643112819419,
            ),
            (
                "special_scaled_modified_bessel_k0.default",
                0.5,
                1.5241093857739099,
            ),
            (
                "special_scaled_modified_bessel_k0.default",
                3.0,
                0.6977615980438517,
            ),
            (
                "special_scaled_modified_bessel_k0.default",
                1e4,
                0.012532984717699288,
            ),
            (
                "special_scaled_modified_bessel_k1.default",
                0.5,
                2.7310097082117855,
            ),
            (
                "special_scaled_modified_bessel_k1.default",
                3.0,
                0.806563480128787,
            ),
            (
                "special_scaled_modified_bessel_k1.default",
                1e4,
                0.012533611351270504,
            ),
        ] {
            let value = f(target, x);
            let relative = (value - expected).abs() / expected;
            assert!(relative < 1e-6, "{target}({x}) = {value}");
        }
        for target in [
            "special_modified_bessel_k0.default",
            "special_modified_bessel_k1.default",
            "special_scaled_modified_bessel_k0.default",
            "special_scaled_modified_bessel_k1.default",
        ] {
            assert_eq!(f(target, 0.0), f64::INFINITY, "{target}");
            assert_eq!(f(target, -0.0), f64::INFINITY, "{target}");
            assert!(f(target, -1.0).is_nan(), "{target}");
            assert_eq!(f(target, f64::INFINITY), 0.0, "{target}");
            assert!(f(target, f64::NAN).is_nan(), "{target}");
        }
    }
}
