//! The product over axes, as `ReduceProd` computes it: `ReduceProd` is not on the
//! exporter's ATC operator list (`atc::ALLOWED_OPS`: CANN's parser registers it, but its
//! plugin was not read, `docs/atc.md`), so each reduced axis, whose size the graph fixes, is cut into
//! its entries by one `Split` and they are multiplied pairwise (`Mul`, a tree of depth ⌈log₂ n⌉). A NaN, an infinity or a zero among the entries reaches
//! the product as through torch's `prod`; the float32 rounding follows the tree's order,
//! where torch's kernel has its own (ONNX and torch leave the order of a reduction open).

use super::shape_error;
use crate::onnx::graph::{GraphBuilder, Value};
use crate::onnx::OnnxError;

/// The longest axis multiplied out: one `Split` output and one `Mul` per entry.
const PRODUCT_ENTRIES: u64 = 1024;

impl GraphBuilder {
    /// The product of `x` over per-sample `axes` (sorted, distinct, in range), kept as size
    /// 1 or dropped (`keep`), in `x`'s element type.
    pub(super) fn reduce_product(
        &mut self,
        scope: &str,
        x: &Value,
        axes: &[usize],
        keep: bool,
    ) -> Result<Value, OnnxError> {
        let mut y = x.clone();
        for &axis in axes {
            let n = y.shape().get(axis).copied().unwrap_or(0);
            if n == 0 || n > PRODUCT_ENTRIES {
                return Err(shape_error(format!(
                    "{scope}: a product over a dimension of {n} entries: it is written as a Mul of each entry (ReduceProd is not on the ATC operator list), for 1 to {PRODUCT_ENTRIES} entries"
                )));
            }
            if n == 1 {
                continue;
            }
            let entries = self.split(scope, &y, axis, &vec![1; n as usize])?;
            y = self.multiply_pairwise(scope, entries)?;
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

    /// The product of `values` (one shape), multiplied in pairs level by level.
    fn multiply_pairwise(&mut self, scope: &str, values: Vec<Value>) -> Result<Value, OnnxError> {
        let mut level = values;
        loop {
            let mut next = Vec::with_capacity(level.len().div_ceil(2));
            let mut entries = level.into_iter();
            while let Some(a) = entries.next() {
                next.push(match entries.next() {
                    Some(b) => self.mul(scope, &a, &b)?,
                    None => a,
                });
            }
            if next.len() <= 1 {
                return next
                    .pop()
                    .ok_or_else(|| shape_error(format!("{scope}: a product of no values")));
            }
            level = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::onnx::graph::GraphBuilder;
    use crate::onnx::{Batch, Opset};

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
    fn an_empty_or_overlong_axis_is_refused() {
        let mut g = GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()));
        let empty = g.input("x", vec![0, 3]).unwrap();
        let long = g.input("y", vec![2000]).unwrap();
        assert!(g.reduce("ReduceProd", "p", &empty, &[0], false).is_err());
        let refused = g.reduce("ReduceProd", "p", &long, &[0], false).unwrap_err();
        assert!(refused.to_string().contains("ReduceProd"), "{refused}");
    }
}
