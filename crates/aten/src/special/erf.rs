//! The inverses of the error function and of the normal distribution function:
//! `erfinv` and `special_ndtri`.

// torch's coefficients, digit for digit as its source writes them.
#![allow(clippy::excessive_precision)]

use super::super::decompose::Fn;
use super::super::series::{Algebra, Ops, Result};

/// `calc_erfinv`'s rational approximations (Pavlis' `erfinv`), the highest power first:
/// `y·A(y²)/B(y²)` for `|y| ≤ 0.7`, `C(z)/D(z)` of `z = √(−log((1 − |y|)/2))` above.
const ERFINV_A: [f64; 4] = [-0.140543331, 0.914624893, -1.645349621, 0.886226899];
const ERFINV_B: [f64; 5] = [0.012229801, -0.329097515, 1.442710462, -2.118377725, 1.0];
const ERFINV_C: [f64; 4] = [1.641345311, 3.429567803, -1.624906493, -1.970840454];
const ERFINV_D: [f64; 3] = [1.637067800, 3.543889200, 1.0];
const ERFINV_CENTRAL: f64 = 0.7;

/// `erfinv(y)` as torch's `calc_erfinv`: NaN beyond ±1, ±inf at ±1, else the rational
/// approximation refined by two Newton steps on `erf(x) = y`.
pub(super) fn erfinv<A: Algebra>(a: &mut A, y: &A::V) -> Result<A::V> {
    let size = a.f1(Fn::Abs, y)?;
    let tail = a.greater_c(&size, ERFINV_CENTRAL)?;
    let square = a.mul(y, y)?;
    let numerator = a.rational(&square, &ERFINV_A, &ERFINV_B)?;
    let inner = a.mul(y, &numerator)?;
    let rest = a.c_sub(1.0, &size)?;
    let rest = a.mul_c(&rest, 0.5)?;
    let log = a.f1(Fn::Log, &rest)?;
    let log = a.c_sub(0.0, &log)?;
    let z = a.f1(Fn::Sqrt, &log)?;
    let outer = a.rational(&z, &ERFINV_C, &ERFINV_D)?;
    let negative = a.less_c(y, 0.0)?;
    let flipped = a.c_sub(0.0, &outer)?;
    let outer = a.select(&negative, &flipped, &outer)?;
    let mut x = a.select(&tail, &outer, &inner)?;
    for _ in 0..2 {
        let erf = a.f1(Fn::Erf, &x)?;
        let error = a.sub(&erf, y)?;
        let square = a.mul(&x, &x)?;
        let minus = a.c_sub(0.0, &square)?;
        let slope = a.f1(Fn::Exp, &minus)?;
        let slope = a.mul_c(&slope, std::f64::consts::FRAC_2_SQRT_PI)?;
        let step = a.div(&error, &slope)?;
        x = a.sub(&x, &step)?;
    }
    let one = a.equal_c(&size, 1.0)?;
    let infinity = a.mul_c(y, f64::INFINITY)?;
    let x = a.select(&one, &infinity, &x)?;
    let beyond = a.greater_c(&size, 1.0)?;
    a.select_c(&beyond, f64::NAN, &x)
}

/// cephes `ndtri`'s approximations in torch's `calc_ndtri`, the highest power first:
/// `P0/Q0` for `|y − 1/2| ≤ 3/8`, `P1/Q1` and `P2/Q2` of `1/x`, `x = √(−2 log y)` below 8
/// and from 8.
const NDTRI_P0: [f64; 5] = [
    -5.996_335_010_141_078_952_67E1,
    9.800_107_541_859_996_615_36E1,
    -5.667_628_574_690_702_934_39E1,
    1.393_126_093_872_796_795_03E1,
    -1.239_165_838_673_812_580_16E0,
];
const NDTRI_Q0: [f64; 9] = [
    1.0,
    1.954_488_583_381_417_598_34E0,
    4.676_279_128_988_815_384_53E0,
    8.636_024_213_908_905_905_75E1,
    -2.254_626_878_541_193_705_27E2,
    2.002_602_123_800_606_603_59E2,
    -8.203_722_561_683_333_399_12E1,
    1.590_562_251_262_116_955_15E1,
    -1.183_316_211_213_300_031_42E0,
];
const NDTRI_P1: [f64; 9] = [
    4.055_448_923_059_624_199_23E0,
    3.152_510_945_998_938_661_54E1,
    5.716_281_922_464_212_881_62E1,
    4.408_050_738_932_008_347_00E1,
    1.468_495_619_288_580_240_14E1,
    2.186_633_068_507_902_675_39E0,
    -1.402_560_791_713_544_958_75E-1,
    -3.504_246_268_278_482_034_18E-2,
    -8.574_567_851_546_854_136_11E-4,
];
const NDTRI_Q1: [f64; 9] = [
    1.0,
    1.577_998_832_564_667_497_31E1,
    4.539_076_351_288_792_105_84E1,
    4.131_720_382_546_720_304_40E1,
    1.504_253_856_929_075_034_08E1,
    2.504_649_462_083_094_159_79E0,
    -1.421_829_228_547_877_885_74E-1,
    -3.808_064_076_915_782_771_94E-2,
    -9.332_594_808_954_574_273_72E-4,
];
const NDTRI_P2: [f64; 9] = [
    3.237_748_917_769_460_359_70E0,
    6.915_228_890_689_842_116_95E0,
    3.938_810_252_924_744_434_15E0,
    1.333_034_608_158_075_423_89E0,
    2.014_853_895_491_790_815_38E-1,
    1.237_166_348_178_200_213_58E-2,
    3.015_815_535_082_354_160_07E-4,
    2.658_069_746_867_375_508_32E-6,
    6.239_745_391_849_832_937_30E-9,
];
const NDTRI_Q2: [f64; 9] = [
    1.0,
    6.024_270_393_647_420_142_55E0,
    3.679_835_638_561_608_594_03E0,
    1.377_020_994_890_813_302_71E0,
    2.162_369_935_944_966_358_90E-1,
    1.342_040_060_885_431_890_37E-2,
    3.280_144_646_821_277_391_04E-4,
    2.892_478_647_453_806_839_36E-6,
    6.790_194_080_099_812_744_25E-9,
];
/// `exp(−2)`, where `calc_ndtri` changes approximation.
const EXP_MINUS_2: f64 = 0.135_335_283_236_612_691_89;
/// `√(2π)`.
const SQRT_2PI: f64 = 2.506_628_274_631_000_502_42;

/// `ndtri(y)` as torch's `calc_ndtri`: −inf at 0, +inf at 1, NaN outside [0, 1].
pub(super) fn ndtri<A: Algebra>(a: &mut A, y0: &A::V) -> Result<A::V> {
    let upper = a.greater_c(y0, 1.0 - EXP_MINUS_2)?;
    let complement = a.c_sub(1.0, y0)?;
    let y = a.select(&upper, &complement, y0)?;
    // Central: y − 1/2 = t, x = (t + t·(t²·P0(t²)/Q0(t²)))·√(2π).
    let central = a.greater_c(&y, EXP_MINUS_2)?;
    let t = a.add_c(&y, -0.5)?;
    let t2 = a.mul(&t, &t)?;
    let ratio = a.rational(&t2, &NDTRI_P0, &NDTRI_Q0)?;
    let ratio = a.mul(&t2, &ratio)?;
    let ratio = a.mul(&t, &ratio)?;
    let inner = a.add(&t, &ratio)?;
    let inner = a.mul_c(&inner, SQRT_2PI)?;
    // Tails: x = √(−2 log y), x − log(x)/x − z·P(z)/Q(z), z = 1/x.
    let log = a.f1(Fn::Log, &y)?;
    let log = a.mul_c(&log, -2.0)?;
    let x = a.f1(Fn::Sqrt, &log)?;
    let log_x = a.f1(Fn::Log, &x)?;
    let log_x = a.div(&log_x, &x)?;
    let x0 = a.sub(&x, &log_x)?;
    let z = a.c_div(1.0, &x)?;
    let near = a.rational(&z, &NDTRI_P1, &NDTRI_Q1)?;
    let far = a.rational(&z, &NDTRI_P2, &NDTRI_Q2)?;
    let below_8 = a.less_c(&x, 8.0)?;
    let x1 = a.select(&below_8, &near, &far)?;
    let x1 = a.mul(&z, &x1)?;
    let tail = a.sub(&x0, &x1)?;
    let negated = a.c_sub(0.0, &tail)?;
    let tail = a.select(&upper, &tail, &negated)?;
    let x = a.select(&central, &inner, &tail)?;
    let zero = a.equal_c(y0, 0.0)?;
    let x = a.select_c(&zero, f64::NEG_INFINITY, &x)?;
    let one = a.equal_c(y0, 1.0)?;
    let x = a.select_c(&one, f64::INFINITY, &x)?;
    let below = a.less_c(y0, 0.0)?;
    let x = a.select_c(&below, f64::NAN, &x)?;
    let above = a.greater_c(y0, 1.0)?;
    a.select_c(&above, f64::NAN, &x)
}
