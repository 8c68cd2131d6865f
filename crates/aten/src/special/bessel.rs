//! Bessel functions: the modified ones of the first kind, `i0`, `i1` and their
//! exponentially scaled forms (cephes `i0`, `i0e`, `i1`, `i1e` in torch's `calc_i0` …),
//! and the spherical one of order 0.

// torch's coefficients, digit for digit as its source writes them.
#![allow(clippy::excessive_precision)]

use super::super::decompose::Fn;
use super::super::series::{Algebra, Ops, Result};

/// Chebyshev coefficients of `exp(−x)·I0(x)` on [0, 8] (torch's
/// `chebyshev_coefficients_i0e_A`).
const I0E_A: [f64; 30] = [
    -4.415_341_646_479_339_379_50E-18,
    3.330_794_518_822_238_097_83E-17,
    -2.431_279_846_547_954_693_59E-16,
    1.715_391_285_555_133_030_61E-15,
    -1.168_533_287_799_345_168_08E-14,
    7.676_185_498_604_935_616_88E-14,
    -4.856_446_783_111_929_460_90E-13,
    2.955_052_663_129_639_834_61E-12,
    -1.726_826_291_441_555_707_23E-11,
    9.675_809_035_373_236_912_24E-11,
    -5.189_795_601_635_262_906_66E-10,
    2.659_823_724_682_386_650_35E-9,
    -1.300_025_009_986_248_042_12E-8,
    6.046_995_022_541_918_949_32E-8,
    -2.670_793_853_940_611_733_91E-7,
    1.117_387_539_120_103_718_15E-6,
    -4.416_738_358_458_750_563_59E-6,
    1.644_844_807_072_889_708_93E-5,
    -5.754_195_010_082_103_703_98E-5,
    1.885_028_850_958_416_557_29E-4,
    -5.763_755_745_385_823_658_85E-4,
    1.639_475_616_941_335_798_42E-3,
    -4.324_309_995_050_575_944_30E-3,
    1.054_646_039_459_499_831_83E-2,
    -2.373_741_480_589_946_881_56E-2,
    4.930_528_423_967_070_848_78E-2,
    -9.490_109_704_804_764_442_10E-2,
    1.716_209_015_222_087_753_49E-1,
    -3.046_826_723_431_983_986_83E-1,
    6.767_952_744_094_760_849_95E-1,
];

/// Chebyshev coefficients of `exp(−x)·√x·I0(x)` on (8, ∞), in `32/x − 2`
/// (`chebyshev_coefficients_i0e_B`).
const I0E_B: [f64; 25] = [
    -7.233_180_487_874_753_954_56E-18,
    -4.830_504_485_944_182_071_26E-18,
    4.465_621_420_296_759_999_01E-17,
    3.461_222_867_697_461_093_10E-17,
    -2.827_623_980_516_583_484_94E-16,
    -3.425_485_619_677_219_134_62E-16,
    1.772_560_133_056_526_383_60E-15,
    3.811_680_669_352_622_420_75E-15,
    -9.554_846_698_828_307_648_70E-15,
    -4.150_569_347_287_222_086_63E-14,
    1.540_086_217_521_409_826_91E-14,
    3.852_778_382_742_142_701_14E-13,
    7.180_124_451_383_666_233_67E-13,
    -1.794_178_531_506_806_117_78E-12,
    -1.321_581_184_044_771_311_88E-11,
    -3.149_916_527_963_241_364_54E-11,
    1.188_914_710_784_643_834_24E-11,
    4.940_602_388_224_969_589_10E-10,
    3.396_232_025_708_386_345_15E-9,
    2.266_668_990_498_178_064_59E-8,
    2.048_918_589_469_063_741_83E-7,
    2.891_370_520_834_756_482_97E-6,
    6.889_758_346_916_823_984_26E-5,
    3.369_116_478_255_694_089_90E-3,
    8.044_904_110_141_088_316_08E-1,
];

/// Chebyshev coefficients of `exp(−x)·I1(x)/x` on [0, 8]
/// (`chebyshev_coefficients_i1e_A`, double).
const I1E_A: [f64; 29] = [
    2.777_914_112_761_046_399_59E-18,
    -2.111_421_214_358_166_081_15E-17,
    1.553_631_957_736_200_469_21E-16,
    -1.105_596_947_735_386_308_05E-15,
    7.600_684_294_735_406_934_10E-15,
    -5.042_185_504_727_911_687_11E-14,
    3.223_793_365_945_574_709_81E-13,
    -1.983_974_397_764_943_715_20E-12,
    1.173_618_629_889_090_163_08E-11,
    -6.663_489_723_502_027_742_23E-11,
    3.625_590_281_552_117_037_01E-10,
    -1.887_249_751_722_829_287_90E-9,
    9.381_537_386_495_771_783_88E-9,
    -4.445_059_128_796_328_080_65E-8,
    2.003_294_753_552_135_262_29E-7,
    -8.568_720_264_695_454_740_66E-7,
    3.470_251_308_137_678_476_74E-6,
    -1.327_316_365_603_943_582_79E-5,
    4.781_565_107_550_054_226_38E-5,
    -1.617_608_158_258_967_455_88E-4,
    5.122_859_561_685_757_728_95E-4,
    -1.513_572_450_631_253_148_99E-3,
    4.156_422_944_312_888_156_69E-3,
    -1.056_408_489_462_619_815_58E-2,
    2.472_644_903_062_651_682_83E-2,
    -5.294_598_120_809_499_142_69E-2,
    1.026_436_586_898_470_953_84E-1,
    -1.764_165_183_578_340_551_53E-1,
    2.525_871_864_436_336_548_23E-1,
];

/// Chebyshev coefficients of `exp(−x)·√x·I1(x)` on (8, ∞), in `32/x − 2`
/// (`chebyshev_coefficients_i1e_B`, double).
const I1E_B: [f64; 25] = [
    7.517_296_310_842_104_813_53E-18,
    4.414_348_323_071_707_911_51E-18,
    -4.650_305_368_489_358_321_53E-17,
    -3.209_525_921_993_423_959_80E-17,
    2.962_628_997_645_950_138_76E-16,
    3.308_202_310_920_928_283_24E-16,
    -1.880_354_775_510_782_448_54E-15,
    -3.814_403_072_437_007_804_78E-15,
    1.042_027_698_412_880_276_42E-14,
    4.272_440_016_711_951_354_29E-14,
    -2.101_541_842_772_664_313_02E-14,
    -4.083_551_111_092_197_318_23E-13,
    -7.198_551_776_245_908_512_09E-13,
    2.035_628_544_147_089_507_22E-12,
    1.412_580_743_661_378_133_16E-11,
    3.252_603_583_015_488_238_56E-11,
    -1.897_495_812_350_541_234_50E-11,
    -5.589_743_462_196_583_806_87E-10,
    -3.835_380_385_964_237_022_05E-9,
    -2.631_468_846_889_519_506_84E-8,
    -2.512_236_237_870_208_925_29E-7,
    -3.882_564_808_877_690_393_46E-6,
    -1.105_889_387_626_237_162_91E-4,
    -9.761_097_491_361_468_407_77E-3,
    7.785_762_350_182_801_204_74E-1,
];

/// The pieces torch's kernels share: `|x|`, whether it is above 8, the series on [0, 8]
/// (`chbevl(|x|/2 − 2, near)`), the series above (`chbevl(32/|x| − 2, far)`) and `√|x|`.
struct Pieces<V> {
    size: V,
    above: V,
    near: V,
    far: V,
    root: V,
}

fn pieces<A: Algebra>(a: &mut A, x: &A::V, near: &[f64], far: &[f64]) -> Result<Pieces<A::V>> {
    let size = a.f1(Fn::Abs, x)?;
    let above = a.greater_c(&size, 8.0)?;
    let t = a.mul_c(&size, 0.5)?;
    let t = a.add_c(&t, -2.0)?;
    let near = a.chbevl(&t, near)?;
    let t = a.c_div(32.0, &size)?;
    let t = a.add_c(&t, -2.0)?;
    let far = a.chbevl(&t, far)?;
    let root = a.f1(Fn::Sqrt, &size)?;
    Ok(Pieces {
        size,
        above,
        near,
        far,
        root,
    })
}

/// `exp(|x|)` as torch's float kernel computes it: +inf from 88.7, where its float32
/// product overflows before the division by `√|x|`.
fn growth<A: Algebra>(a: &mut A, size: &A::V) -> Result<A::V> {
    let e = a.f1(Fn::Exp, size)?;
    Ok(a.float32(&e))
}

/// `i0(x)` (`calc_i0`: `exp(|x|)·near`, `exp(|x|)·far/√|x|`), or `i0e(x)` (`calc_i0e`:
/// `near`, `far/√|x|`) when `scaled`.
pub(super) fn i0<A: Algebra>(a: &mut A, x: &A::V, scaled: bool) -> Result<A::V> {
    let p = pieces(a, x, &I0E_A, &I0E_B)?;
    let (near, far) = if scaled {
        (p.near, p.far)
    } else {
        let e = growth(a, &p.size)?;
        (a.mul(&e, &p.near)?, a.mul(&e, &p.far)?)
    };
    let far = a.div(&far, &p.root)?;
    a.select(&p.above, &far, &near)
}

/// `i1(x)` (`calc_i1`: `exp(|x|)·|x|·near`, `exp(|x|)·far/√|x|`), or `i1e(x)` (`calc_i1e`:
/// `near·|x|`, `far/√|x|`) when `scaled`; odd in `x`.
pub(super) fn i1<A: Algebra>(a: &mut A, x: &A::V, scaled: bool) -> Result<A::V> {
    let p = pieces(a, x, &I1E_A, &I1E_B)?;
    let (near, far) = if scaled {
        (a.mul(&p.near, &p.size)?, p.far)
    } else {
        let e = growth(a, &p.size)?;
        let scale = a.mul(&e, &p.size)?;
        (a.mul(&scale, &p.near)?, a.mul(&e, &p.far)?)
    };
    let far = a.div(&far, &p.root)?;
    let y = a.select(&p.above, &far, &near)?;
    let negative = a.less_c(x, 0.0)?;
    let flipped = a.c_sub(0.0, &y)?;
    a.select(&negative, &flipped, &y)
}

/// `spherical_bessel_j0_forward`'s Taylor series of `sin(x)/x` in `x²` below 1/2 (the
/// highest power first).
const SPHERICAL_J0_TAYLOR: [f64; 7] = [
    1.0 / 6_227_020_800.0,
    -1.0 / 39_916_800.0,
    1.0 / 362_880.0,
    -1.0 / 5040.0,
    1.0 / 120.0,
    -1.0 / 6.0,
    1.0,
];

/// `spherical_bessel_j0(x)` as torch's `spherical_bessel_j0_forward`: 0 at ±inf, the
/// Taylor series below 1/2 in size (1 at 0), `sin(x)/x` above.
pub(super) fn spherical_j0<A: Algebra>(a: &mut A, x: &A::V) -> Result<A::V> {
    let square = a.mul(x, x)?;
    let series = a.polevl(&square, &SPHERICAL_J0_TAYLOR)?;
    let sine = a.f1(Fn::Sin, x)?;
    let ratio = a.div(&sine, x)?;
    let size = a.f1(Fn::Abs, x)?;
    let small = a.less_c(&size, 0.5)?;
    let y = a.select(&small, &series, &ratio)?;
    let infinite = a.equal_c(&size, f64::INFINITY)?;
    a.select_c(&infinite, 0.0, &y)
}
