//! The product over axes, as `ReduceProd` computes it: `ReduceProd` is not on the
//! exporter's ATC operator list (`atc::ALLOWED_OPS`: CANN's parser registers it, but its
//! plugin was not read, `docs/atc.md`), so each reduced axis, whose size the graph fixes, is
//! halved until one entry is left: its first half times its second (two Slices and a
//! `Mul`), an odd last entry carried to the next level (a Concat), ⌈log₂ n⌉ levels in all.
//! A NaN, an infinity or a zero among the entries reaches the product as through torch's
//! `prod`; the float32 rounding follows the halving's order, where torch's kernel has its
//! own (ONNX and torch leave the order of a reduction open).

use super::shape_error;
use crate::graph::{GraphBuilder, Value};
use crate::OnnxError;

impl GraphBuilder {
    /// The product of `x` over per-sample `axes` (sorted, distinct, in range), kept as size
    /// 1 or dropped (`keep`), in `x`'s element type. An axis of no entries (an empty
    /// tensor, which ATC does not compile) is refused.
    pub(super) fn reduce_product(
        &mut self,
        scope: &str,
        x: &Value,
        axes: &[usize],
        keep: bool,
    ) -> Result<Value, OnnxError> {
        let mut y = x.clone();
        for &axis in axes {
            if y.shape().get(axis).copied().unwrap_or(0) == 0 {
                return Err(shape_error(format!(
                    "{scope}: a product over a dimension of 0 entries reads an empty tensor, which ATC does not compile"
                )));
            }
            y = self.halved_product(scope, y, axis)?;
        }
        if keep {
            return Ok(y);
        }
        let dropped: Vec<u64> = y
            .shape()
            .iter()
            .enumerate()
            .filter(|(i, _)| !axes.contains(i))
            .map(|(_, &d)| d)
            .collect();
        self.reshape(scope, &y, &dropped)
    }

    /// The product of `x`'s entries along per-sample `axis` (at least one), kept as size 1:
    /// the first half times the second, level by level, an odd last entry carried along.
    fn halved_product(&mut self, scope: &str, x: Value, axis: usize) -> Result<Value, OnnxError> {
        let mut y = x;
        loop {
            let n = y.shape()[axis];
            if n <= 1 {
                return Ok(y);
            }
            let half = n / 2;
            let first = self.slice(scope, &y, axis, 0..half)?;
            let second = self.slice(scope, &y, axis, half..2 * half)?;
            let product = self.mul(scope, &first, &second)?;
            y = if n % 2 == 1 {
                let last = self.slice(scope, &y, axis, n - 1..n)?;
                self.concat(scope, &[&product, &last], axis)?
            } else {
                product
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::graph::GraphBuilder;
    use crate::{Batch, Opset};

    #[test]
    fn a_product_keeps_or_drops_its_axes() {
        let mut g = GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()));
        let x = g.input("x", vec![4, 5, 6]).unwrap();
        let dropped = g.reduce("ReduceProd", "p", &x, &[1], false).unwrap();
        assert_eq!(dropped.shape(), [4, 6]);
        let kept = g.reduce("ReduceProd", "p", &x, &[0, 2], true).unwrap();
        assert_eq!(kept.shape(), [1, 5, 1]);
    }

    #[test]
    fn an_empty_axis_is_refused_and_a_long_one_halved() {
        let mut g = GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()));
        let empty = g.input("x", vec![0, 3]).unwrap();
        let long = g.input("y", vec![2001]).unwrap();
        let refused = g
            .reduce("ReduceProd", "p", &empty, &[0], false)
            .unwrap_err();
        assert!(refused.to_string().contains("empty tensor"), "{refused}");
        let (nodes, _) = g.written();
        let product = g.reduce("ReduceProd", "p", &long, &[0], true).unwrap();
        assert_eq!(product.shape(), [1]);
        // ⌈log₂ 2001⌉ = 11 levels of at most five nodes each.
        let added = g.written().0 - nodes;
        assert!(added <= 5 * 11, "{added}");
    }
}
