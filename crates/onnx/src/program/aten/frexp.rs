//! `frexp`: a float32 tensor as mantissa · 2^exponent, the mantissa's magnitude in
//! [0.5, 1) and the exponent int32, as C's `frexp` (torch's CPU kernel) splits it; zero,
//! ±inf and NaN are their own mantissa with exponent 0. Exact without a bit cast (opset 11
//! has none): the exponent of `|x|` is the count of powers of two `2^k`,
//! `k = −149 … 127`, not above it, less 149 (every float32 power of two, subnormal ones
//! included, is a constant); the mantissa is `x` times two gathered powers of two whose
//! product is `2^−exponent` (one alone would leave float32's range for the smallest
//! exponents), each product exact.

use crate::elem::ElemType;
use crate::OnnxError;
use ckpt_aten::program::Node;

use super::super::emit;
use super::super::lower::Lowering;
use super::{arg_error, OrShape};
use ckpt_aten::args::Args;

/// The exponents of the powers of two compared with: the smallest subnormal's to the
/// largest finite one's.
const LOWEST: i32 = -149;
const HIGHEST: i32 = 127;

/// `2^e` as f64 (exact for every `e` used here).
fn power(e: i32) -> f64 {
    2f64.powi(e)
}

/// The two scales whose product is `2^−e` for the exponent `e` of a count `c` of powers
/// reached (`e = c − 149`), each a float32 power of two in the normal range.
fn scales(c: i32) -> [f64; 2] {
    let e = c + LOWEST;
    let half = e.div_euclid(2);
    [power(-half), power(half - e)]
}

impl Lowering<'_, '_> {
    /// `frexp(self)`: (mantissa, exponent) of a float32 tensor (module docs).
    pub(super) fn frexp(
        &mut self,
        node: &Node,
        args: &Args<'_>,
        scope: &str,
    ) -> Result<(), OnnxError> {
        let t = self.tensor(args.tensor("self").or_shape()?)?;
        if t.value().elem() != ElemType::Float32 {
            return Err(arg_error(format!(
                "frexp of a {} tensor is not exported; convert it with `.float()` first",
                t.value().elem()
            )));
        }
        let v = self.rows_input(&t, scope)?;
        let shape = v.shape().to_vec();
        let (f32_, bool_) = (ElemType::Float32, ElemType::Bool);
        let g = &mut self.g;
        let abs = g.unary("Abs", scope, &v, vec![]);
        let mut column = shape.clone();
        column.push(1);
        let magnitude = g.reshape(scope, &abs, &column)?;
        let powers: Vec<f64> = (LOWEST..=HIGHEST).map(power).collect();
        let count = powers.len() as u64;
        let powers = g.typed_constant(&format!("{scope}.powers"), vec![count], &powers, f32_)?;
        let mut compared = shape.clone();
        compared.push(count);
        let below = emit::typed(
            g,
            "Less",
            scope,
            [magnitude.name(), powers.name()],
            &compared,
            bool_,
        );
        let reached = emit::typed(g, "Not", scope, [below.name()], &compared, bool_);
        let reached = emit::cast(g, scope, &reached, f32_);
        let reached = g.reduce("ReduceSum", scope, &reached, &[shape.len()], false)?;
        // `reached` is 0 for zero, and every count for ±inf and NaN (NaN is not below) as
        // for the largest finite values: those are told apart by IsInf/IsNaN below.
        let index = emit::cast(g, scope, &reached, ElemType::Int64);
        let mut mantissa = v.clone();
        for part in 0..2 {
            let table: Vec<f64> = (0..=count as i32).map(|c| scales(c)[part]).collect();
            let table =
                g.typed_constant(&format!("{scope}.scale"), vec![count + 1], &table, f32_)?;
            let scale = emit::typed(
                g,
                "Gather",
                scope,
                [table.name(), index.name()],
                &shape,
                f32_,
            );
            mantissa = emit::typed(
                g,
                "Mul",
                scope,
                [mantissa.name(), scale.name()],
                &shape,
                f32_,
            );
        }
        // The exponent where `x` is finite and not zero, 0 elsewhere.
        let offset = g.constant_scalar(&format!("{scope}.offset"), LOWEST as f32);
        let exponent = emit::typed(
            g,
            "Add",
            scope,
            [reached.name(), offset.name()],
            &shape,
            f32_,
        );
        let lowest = g.constant_scalar(&format!("{scope}.lowest"), 0.0);
        let some = emit::typed(
            g,
            "Greater",
            scope,
            [reached.name(), lowest.name()],
            &shape,
            bool_,
        );
        let unary = |g: &mut crate::graph::GraphBuilder, op: &'static str, x: &str| {
            emit::single(g.typed_node(
                op,
                scope,
                vec![x.to_owned()],
                vec![],
                vec![(shape.clone(), bool_)],
            ))
        };
        // IsInf is off ATC's list: |x| = +inf.
        let inf = g.constant_scalar(&format!("{scope}.inf"), f32::INFINITY);
        let infinite = emit::typed(g, "Equal", scope, [abs.name(), inf.name()], &shape, bool_);
        let nan = unary(g, "IsNaN", v.name());
        let special = emit::typed(g, "Or", scope, [infinite.name(), nan.name()], &shape, bool_);
        let all = unary(g, "Not", special.name());
        let finite = emit::typed(g, "And", scope, [some.name(), all.name()], &shape, bool_);
        let zero = g.constant_scalar(&format!("{scope}.zero"), 0.0);
        let exponent = emit::typed(
            g,
            "Where",
            scope,
            [finite.name(), exponent.name(), zero.name()],
            &shape,
            f32_,
        );
        let exponent = emit::cast(g, scope, &exponent, ElemType::Int32);
        let mantissa = self.rows_result(&t, mantissa, scope)?;
        self.bind_tensor(node, 0, mantissa)?;
        if self.output_name(node, 1).is_ok() {
            let exponent = self.rows_result(&t, exponent, scope)?;
            self.bind_tensor(node, 1, exponent)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_scales_multiply_to_two_to_minus_the_exponent() {
        for c in 0..=(HIGHEST - LOWEST + 1) {
            let [a, b] = scales(c);
            assert_eq!(a * b, power(-(c + LOWEST)));
            // Each within float32's normal range.
            assert!((f64::from(f32::MIN_POSITIVE)..=f64::from(f32::MAX)).contains(&a));
            assert!((f64::from(f32::MIN_POSITIVE)..=f64::from(f32::MAX)).contains(&b));
        }
    }
}
