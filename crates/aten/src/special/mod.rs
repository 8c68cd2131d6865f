//! torch's special functions (`digamma`, `lgamma`, `polygamma`, `mvlgamma`, `erfinv`,
//! `special_ndtri`, `special_erfcx`, `special_log_ndtr`, the Bessel functions, the Airy
//! function, …) as element-wise programs over a
//! [`series`](super::series) algebra: the constant evaluator computes a program in double
//! precision, the ONNX lowering writes the same program as float32 nodes of opset 11
//! (`Where` choosing between the pieces of a piecewise function, no loop). Each program
//! follows the algorithm of torch's own kernel (ATen's `native/Math.h`, cephes'
//! approximations): its coefficients, ranges and special values (poles, NaN, ±inf) are
//! torch's; a loop of torch's that runs a value-dependent number of times is unrolled to a
//! fixed count that covers every input, or replaced by the identity it computes (a
//! reflection), as each function's documentation says.
//!
//! [`SPECIAL`] is the table both consumers read: one row per aten overload.

mod airy;
mod bessel;
mod bessel_jy;
mod bessel_k;
mod erf;
mod erfcx;
mod gamma;

use super::args::Args;
use super::program::Node;
use super::series::{Algebra, Result};

/// A special function: which program computes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    Digamma,
    Lgamma,
    /// `polygamma(n, x)`, `n` read from the node.
    Polygamma,
    /// `mvlgamma(x, p)`, `p` read from the node.
    Mvlgamma,
    Erfinv,
    Ndtri,
    I0,
    I0e,
    I1,
    I1e,
    SphericalJ0,
    J0,
    J1,
    Y0,
    Y1,
    K0,
    K1,
    /// `exp(x)·K0(x)`.
    K0e,
    /// `exp(x)·K1(x)`.
    K1e,
    AiryAi,
    Erfcx,
    LogNdtr,
}

/// One aten overload computed by a special-function program.
#[derive(Debug)]
pub struct Special {
    pub target: &'static str,
    /// The torch kernel the program follows.
    pub port: &'static str,
    /// The tensor argument (`self`, or `x` where torch's schema names it so).
    pub input: &'static str,
    pub function: Function,
}

const fn row(
    target: &'static str,
    port: &'static str,
    input: &'static str,
    function: Function,
) -> Special {
    Special {
        target,
        port,
        input,
        function,
    }
}

/// Every overload with a special-function program.
pub const SPECIAL: &[Special] = &[
    row(
        "digamma.default",
        "calc_digamma (float): reflection below 0, recurrence to x ≥ 10, asymptotic series",
        "self",
        Function::Digamma,
    ),
    row(
        "lgamma.default",
        "std::lgamma: reflection below 0, recurrence to x ≥ 10, Stirling's series",
        "self",
        Function::Lgamma,
    ),
    row(
        "polygamma.default",
        "polygamma_kernel: calc_digamma (n = 0), trigamma (n = 1), n!·zeta(n + 1, x) (Hurwitz zeta, Euler–Maclaurin; reflection below 0); orders up to 6, higher ones refused",
        "self",
        Function::Polygamma,
    ),
    row(
        "mvlgamma.default",
        "mvlgamma: Σ lgamma(x − j/2) + p(p − 1)/4·log π (p up to 16)",
        "self",
        Function::Mvlgamma,
    ),
    row(
        "erfinv.default",
        "calc_erfinv: rational approximation, two Newton steps",
        "self",
        Function::Erfinv,
    ),
    row(
        "special_ndtri.default",
        "calc_ndtri (cephes ndtri): rational approximations in three ranges",
        "self",
        Function::Ndtri,
    ),
    row(
        "i0.default",
        "calc_i0 (cephes i0): Chebyshev series on [0, 8] and (8, ∞)",
        "self",
        Function::I0,
    ),
    row(
        "special_i0e.default",
        "calc_i0e (cephes i0e): Chebyshev series on [0, 8] and (8, ∞)",
        "self",
        Function::I0e,
    ),
    row(
        "special_i1.default",
        "calc_i1 (cephes i1): Chebyshev series on [0, 8] and (8, ∞)",
        "self",
        Function::I1,
    ),
    row(
        "special_i1e.default",
        "calc_i1e (cephes i1e): Chebyshev series on [0, 8] and (8, ∞)",
        "self",
        Function::I1e,
    ),
    row(
        "special_modified_bessel_i0.default",
        "modified_bessel_i0_forward (cephes i0): Chebyshev series on [0, 8] and (8, ∞)",
        "self",
        Function::I0,
    ),
    row(
        "special_modified_bessel_i1.default",
        "modified_bessel_i1_forward (cephes i1): Chebyshev series on [0, 8] and (8, ∞)",
        "self",
        Function::I1,
    ),
    row(
        "special_spherical_bessel_j0.default",
        "spherical_bessel_j0_forward: Taylor series below 1/2, sin(x)/x above, 0 at ±inf",
        "x",
        Function::SphericalJ0,
    ),
    row(
        "special_bessel_j0.default",
        "bessel_j0_forward (cephes j0): rational approximation up to 5, asymptotic form above",
        "self",
        Function::J0,
    ),
    row(
        "special_bessel_j1.default",
        "bessel_j1_forward (cephes j1): rational approximation up to 5, asymptotic form above, odd",
        "self",
        Function::J1,
    ),
    row(
        "special_bessel_y0.default",
        "bessel_y0_forward (cephes y0): rational approximation plus (2/π)·log(x)·J0(x) up to 5, asymptotic form above",
        "self",
        Function::Y0,
    ),
    row(
        "special_bessel_y1.default",
        "bessel_y1_forward (cephes y1): rational approximation plus (2/π)·(J1(x)·log(x) − 1/x) up to 5, asymptotic form above",
        "self",
        Function::Y1,
    ),
    row(
        "special_modified_bessel_k0.default",
        "modified_bessel_k0_forward (cephes k0): Chebyshev series on (0, 2] and (2, ∞)",
        "self",
        Function::K0,
    ),
    row(
        "special_modified_bessel_k1.default",
        "modified_bessel_k1_forward (cephes k1): Chebyshev series on (0, 2] and (2, ∞)",
        "self",
        Function::K1,
    ),
    row(
        "special_scaled_modified_bessel_k0.default",
        "scaled_modified_bessel_k0_forward (cephes k0e): Chebyshev series on (0, 2] and (2, ∞)",
        "x",
        Function::K0e,
    ),
    row(
        "special_scaled_modified_bessel_k1.default",
        "scaled_modified_bessel_k1_forward (cephes k1e): Chebyshev series on (0, 2] and (2, ∞)",
        "x",
        Function::K1e,
    ),
    row(
        "special_airy_ai.default",
        "airy_ai_forward (cephes airy): power series on [−2.09, 2.09), asymptotic forms outside",
        "x",
        Function::AiryAi,
    ),
    row(
        "special_erfcx.default",
        "calc_erfcx (Faddeeva erfcx): 100 polynomials in 400/(4 + x) on either side of 0 (looked up by piece), continued fraction above 50",
        "self",
        Function::Erfcx,
    ),
    row(
        "special_log_ndtr.default",
        "calc_log_ndtr: log(erfcx(−x/√2)/2) − x²/2 below −1, log1p(−erfc(x/√2)/2) above",
        "self",
        Function::LogNdtr,
    ),
];

/// Required int argument `name`.
fn int(args: &Args<'_>, name: &str) -> Result<i64> {
    args.optional_int(name)?
        .ok_or_else(|| format!("argument `{name}` is missing"))
}

/// The row of aten overload `target` (without `torch.ops.aten.`).
pub fn special(target: &str) -> Option<&'static Special> {
    SPECIAL.iter().find(|r| r.target == target)
}

impl Special {
    /// The program at `x`, numbers (`n`, `p`) read from `node`; an error for arguments
    /// torch refuses or the export does not compute exactly.
    pub fn build<A: Algebra>(&self, a: &mut A, node: &Node, x: &A::V) -> Result<A::V> {
        let args = Args(node);
        match self.function {
            Function::Digamma => gamma::digamma(a, x),
            Function::Lgamma => gamma::lgamma(a, x),
            Function::Polygamma => gamma::polygamma(a, int(&args, "n")?, x),
            Function::Mvlgamma => gamma::mvlgamma(a, int(&args, "p")?, x),
            Function::Erfinv => erf::erfinv(a, x),
            Function::Ndtri => erf::ndtri(a, x),
            Function::I0 => bessel::i0(a, x, false),
            Function::I0e => bessel::i0(a, x, true),
            Function::I1 => bessel::i1(a, x, false),
            Function::I1e => bessel::i1(a, x, true),
            Function::SphericalJ0 => bessel::spherical_j0(a, x),
            Function::J0 => bessel_jy::j0(a, x),
            Function::J1 => bessel_jy::j1(a, x),
            Function::Y0 => bessel_jy::y0(a, x),
            Function::Y1 => bessel_jy::y1(a, x),
            Function::K0 => bessel_k::k(
                a,
                x,
                bessel_k::Order {
                    one: false,
                    scaled: false,
                },
            ),
            Function::K1 => bessel_k::k(
                a,
                x,
                bessel_k::Order {
                    one: true,
                    scaled: false,
                },
            ),
            Function::K0e => bessel_k::k(
                a,
                x,
                bessel_k::Order {
                    one: false,
                    scaled: true,
                },
            ),
            Function::K1e => bessel_k::k(
                a,
                x,
                bessel_k::Order {
                    one: true,
                    scaled: true,
                },
            ),
            Function::AiryAi => airy::airy_ai(a, x),
            Function::Erfcx => erfcx::erfcx(a, x),
            Function::LogNdtr => erfcx::log_ndtr(a, x),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::series::Scalar;
    use super::*;

    fn node(args: &str) -> Node {
        serde_json::from_str(&format!(
            r#"{{"target": "t", "outputs": [], "inputs": [{args}]}}"#
        ))
        .unwrap()
    }

    /// The value of `target` at `x`, arguments `args` (JSON).
    pub(super) fn at(target: &str, args: &str, x: f64) -> f64 {
        special(target)
            .unwrap()
            .build(&mut Scalar, &node(args), &x)
            .unwrap()
    }

    /// `value` within `tolerance` of `expected`, relative to max(1, |expected|).
    pub(super) fn close(value: f64, expected: f64, tolerance: f64) -> bool {
        (value - expected).abs() <= tolerance * expected.abs().max(1.0)
    }

    #[test]
    fn every_row_has_a_schema_and_one_entry() {
        for (k, r) in SPECIAL.iter().enumerate() {
            let schema = super::super::schema::lookup(r.target);
            assert!(
                schema.is_some_and(|s| s.has(r.input)),
                "{} has no schema with `{}`",
                r.target,
                r.input
            );
            assert!(SPECIAL[..k].iter().all(|o| o.target != r.target));
        }
    }

    /// Values from torch 2.13 in float64, and torch's special values (`i0` and `i1` to
    /// float32's precision: their `exp` is rounded as torch's float kernel computes it).
    #[test]
    fn inverse_error_and_bessel_values_are_torchs() {
        let f = |target: &str, x: f64| at(target, "", x);
        assert!(close(f("erfinv.default", 0.3), 0.2724627147267543, 1e-10));
        assert!(close(
            f("erfinv.default", -0.95),
            -1.3859038243496777,
            1e-10
        ));
        assert_eq!(f("erfinv.default", -1.0), f64::NEG_INFINITY);
        assert!(f("erfinv.default", 1.5).is_nan());
        assert!(close(
            f("special_ndtri.default", 0.025),
            -1.9599639845400545,
            1e-10
        ));
        assert!(close(
            f("special_ndtri.default", 1e-20),
            -9.262340089798409,
            1e-10
        ));
        assert!(close(
            f("special_ndtri.default", 0.6),
            0.2533471031357997,
            1e-10
        ));
        assert_eq!(f("special_ndtri.default", 0.0), f64::NEG_INFINITY);
        assert!(f("special_ndtri.default", 2.0).is_nan());
        assert!(close(f("i0.default", 3.5), 7.3782034322254795, 1e-6));
        assert!(close(
            f("special_i0e.default", -12.0),
            0.11642622121344044,
            1e-10
        ));
        assert!(close(
            f("special_i1.default", -2.5),
            -2.5167162452886984,
            1e-6
        ));
        assert!(close(
            f("special_i1e.default", 30.0),
            0.07191633059864755,
            1e-10
        ));
        assert!(f("i0.default", f64::INFINITY).is_nan());
        assert_eq!(f("special_i0e.default", f64::INFINITY), 0.0);
        assert_eq!(f("special_spherical_bessel_j0.default", 0.0), 1.0);
        assert_eq!(
            f("special_spherical_bessel_j0.default", f64::NEG_INFINITY),
            0.0
        );
        let j0 = f("special_spherical_bessel_j0.default", 0.4);
        assert!(close(j0, 0.4f64.sin() / 0.4, 1e-12));
    }
}
