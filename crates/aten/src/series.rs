//! Element-wise numeric programs written once and computed two ways: on numbers by the
//! constant evaluator ([`Scalar`], double precision) and as ONNX nodes by the lowering
//! (`onnx::program::aten::decompose`'s graph algebra, float32), so a special function
//! (`aten::special`) is never lowered by one formula and folded by another.
//!
//! A program is ordinary Rust over an [`Algebra`]: its values are opaque, its operations
//! the IEEE functions of [`Fn`]. Branches are not taken: every piece of a piecewise
//! function is computed everywhere and [`Ops::select`] keeps the one whose range holds
//! (`Where`), so a piece's NaN or infinity outside its range never reaches the result.
//! The polynomial machinery (Horner's `polevl`, Chebyshev's `chbevl`, a rational
//! `P/Q`) takes its coefficients as data, highest power first, as cephes stores them.

use super::decompose::Fn;

/// The values and operations a program is written over.
pub trait Algebra {
    /// A value: a number, or a tensor of the input's shape.
    type V: Clone;
    /// The number `c`.
    fn number(&mut self, c: f64) -> Self::V;
    /// Function `f` of `operands`.
    fn apply(&mut self, f: Fn, operands: &[&Self::V]) -> Result<Self::V>;
    /// `v` as torch computes it in float32 where its kernel does (a product fed to `sin`):
    /// rounded by the evaluator, already float32 in the graph.
    fn float32(&mut self, v: &Self::V) -> Self::V;
    /// `table[index]`: a lookup in a table of numbers (a piecewise polynomial's
    /// coefficients by piece), `index` an integer in `0..table.len()` wherever it is
    /// computed (the program clamps it, NaN included; the graph's `Gather` fails on any other).
    fn lookup(&mut self, index: &Self::V, table: &[f64]) -> Result<Self::V>;
}

/// A program's result: a value, or why it cannot be computed.
pub type Result<V> = std::result::Result<V, String>;

/// The operations of a program, over any [`Algebra`].
pub trait Ops: Algebra {
    fn f1(&mut self, f: Fn, a: &Self::V) -> Result<Self::V> {
        self.apply(f, &[a])
    }
    fn f2(&mut self, f: Fn, a: &Self::V, b: &Self::V) -> Result<Self::V> {
        self.apply(f, &[a, b])
    }
    fn add(&mut self, a: &Self::V, b: &Self::V) -> Result<Self::V> {
        self.f2(Fn::Add, a, b)
    }
    fn sub(&mut self, a: &Self::V, b: &Self::V) -> Result<Self::V> {
        self.f2(Fn::Sub, a, b)
    }
    fn mul(&mut self, a: &Self::V, b: &Self::V) -> Result<Self::V> {
        self.f2(Fn::Mul, a, b)
    }
    fn div(&mut self, a: &Self::V, b: &Self::V) -> Result<Self::V> {
        self.f2(Fn::Div, a, b)
    }
    /// `a + c`.
    fn add_c(&mut self, a: &Self::V, c: f64) -> Result<Self::V> {
        let c = self.number(c);
        self.add(a, &c)
    }
    /// `a · c`.
    fn mul_c(&mut self, a: &Self::V, c: f64) -> Result<Self::V> {
        let c = self.number(c);
        self.mul(a, &c)
    }
    /// `c − a`.
    fn c_sub(&mut self, c: f64, a: &Self::V) -> Result<Self::V> {
        let c = self.number(c);
        self.sub(&c, a)
    }
    /// `c / a`.
    fn c_div(&mut self, c: f64, a: &Self::V) -> Result<Self::V> {
        let c = self.number(c);
        self.div(&c, a)
    }
    /// Bool `a < c`.
    fn less_c(&mut self, a: &Self::V, c: f64) -> Result<Self::V> {
        let c = self.number(c);
        self.f2(Fn::Less, a, &c)
    }
    /// Bool `a > c`.
    fn greater_c(&mut self, a: &Self::V, c: f64) -> Result<Self::V> {
        let c = self.number(c);
        self.f2(Fn::Greater, a, &c)
    }
    /// Bool `a == c`.
    fn equal_c(&mut self, a: &Self::V, c: f64) -> Result<Self::V> {
        let c = self.number(c);
        self.f2(Fn::Equal, a, &c)
    }
    /// `a` where bool `condition` holds, `b` elsewhere.
    fn select(&mut self, condition: &Self::V, a: &Self::V, b: &Self::V) -> Result<Self::V> {
        self.apply(Fn::Where, &[condition, a, b])
    }
    /// Number `c` where bool `condition` holds, `b` elsewhere.
    fn select_c(&mut self, condition: &Self::V, c: f64, b: &Self::V) -> Result<Self::V> {
        let c = self.number(c);
        self.select(condition, &c, b)
    }
    /// Bool `a and b`.
    fn and(&mut self, a: &Self::V, b: &Self::V) -> Result<Self::V> {
        self.f2(Fn::And, a, b)
    }
    /// `Σ coefficients[k]·x^(n−k)`: cephes' `polevl`, the highest power first.
    fn polevl(&mut self, x: &Self::V, coefficients: &[f64]) -> Result<Self::V> {
        let (&first, rest) = coefficients
            .split_first()
            .ok_or("a polynomial with no coefficients")?;
        let mut y = self.number(first);
        for &c in rest {
            y = self.mul(&y, x)?;
            y = self.add_c(&y, c)?;
        }
        Ok(y)
    }
    /// `polevl(x, p) / polevl(x, q)`.
    fn rational(&mut self, x: &Self::V, p: &[f64], q: &[f64]) -> Result<Self::V> {
        let p = self.polevl(x, p)?;
        let q = self.polevl(x, q)?;
        self.div(&p, &q)
    }
    /// cephes' `chbevl`: the Chebyshev series `coefficients` (highest order first) at `x`
    /// (the argument mapped to [−2, 2]), by Clenshaw's recurrence.
    fn chbevl(&mut self, x: &Self::V, coefficients: &[f64]) -> Result<Self::V> {
        let (&first, rest) = coefficients
            .split_first()
            .ok_or("a Chebyshev series with no coefficients")?;
        let mut b0 = self.number(first);
        let mut b1 = self.number(0.0);
        let mut b2 = self.number(0.0);
        for &c in rest {
            b2 = b1;
            b1 = b0;
            let t = self.mul(x, &b1)?;
            let t = self.sub(&t, &b2)?;
            b0 = self.add_c(&t, c)?;
        }
        let d = self.sub(&b0, &b2)?;
        self.mul_c(&d, 0.5)
    }
}

impl<A: Algebra + ?Sized> Ops for A {}

/// The constant evaluator's algebra: numbers in double precision, bools as 0/1.
pub struct Scalar;

impl Algebra for Scalar {
    type V = f64;

    fn number(&mut self, c: f64) -> f64 {
        c
    }

    fn apply(&mut self, f: Fn, operands: &[&f64]) -> Result<f64> {
        let values: Vec<f64> = operands.iter().map(|v| **v).collect();
        f.apply(&values)
    }

    fn float32(&mut self, v: &f64) -> f64 {
        f64::from(*v as f32)
    }

    fn lookup(&mut self, index: &f64, table: &[f64]) -> Result<f64> {
        let position = (index.fract() == 0.0 && *index >= 0.0)
            .then_some(*index as usize)
            .and_then(|i| table.get(i));
        position
            .copied()
            .ok_or_else(|| format!("index {index} outside a table of {}", table.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn horner_and_chebyshev_follow_cephes() {
        let mut a = Scalar;
        // 2x² − 3x + 1 at 4.
        assert_eq!(a.polevl(&4.0, &[2.0, -3.0, 1.0]).unwrap(), 21.0);
        // chbevl of [c0, c1, c2] is c2/2 + c1·T1(x/2) + c0·T2(x/2) (cephes' halved
        // constant term): at x = 1, T1 = 0.5, T2 = −0.5.
        let value = a.chbevl(&1.0, &[4.0, 2.0, 6.0]).unwrap();
        assert!((value - (3.0 + 1.0 - 2.0)).abs() < 1e-12, "{value}");
    }

    #[test]
    fn selections_keep_the_piece_whose_range_holds() {
        let mut a = Scalar;
        let yes = a.less_c(&1.0, 2.0).unwrap();
        assert_eq!(a.select_c(&yes, 7.0, &f64::NAN).unwrap(), 7.0);
        let no = a.greater_c(&1.0, 2.0).unwrap();
        assert_eq!(a.and(&yes, &no).unwrap(), 0.0);
    }
}
