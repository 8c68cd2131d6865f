//! torch's NaN through the ops that pick one value of several. torch's `amax`/`amin`,
//! `max.dim`/`min.dim` and max pooling return NaN when a NaN is among the values they
//! compare, `argmax`/`argmin` the index of the first NaN, and `topk` ranks NaN above every
//! number; onnxruntime's `ReduceMax`/`ReduceMin`/`MaxPool`/`ArgMax`/`ArgMin`/`TopK` skip
//! NaN or rank it anywhere, and ONNX leaves it open.
//! So the exporter makes the NaN explicit instead of relying on the runtime: `IsNaN` of
//! the input as 0/1 floats, taken through the same reduction or window, says where a NaN
//! was among the values, and `Where` puts NaN (or the first NaN's index) there. Elsewhere
//! the plain op's result is torch's. Every op used (`IsNaN`, `Cast`, `Where`, `Neg` beside
//! the op itself) is registered by ATC's ONNX parser at opsets 9–13.

use super::{names, single};
use crate::elem::ElemType;
use crate::graph::{Attr, GraphBuilder, Value};
use crate::OnnxError;

/// Whether `op` over `x` needs the NaN made explicit: the picking ops on float tensors
/// (integers have no NaN).
pub(crate) fn picks_over_nan(op: &str, x: &Value) -> bool {
    x.elem() == ElemType::Float32 && matches!(op, "ReduceMax" | "ReduceMin" | "MaxPool")
}

impl GraphBuilder {
    /// 1.0 where `x` (float32) is NaN, 0.0 elsewhere: `Cast(IsNaN(x))`.
    pub(crate) fn nan_flags(&mut self, scope: &str, x: &Value) -> Value {
        let shape = x.shape().to_vec();
        let is_nan = single(self.typed_node(
            "IsNaN",
            scope,
            names(&[x.name()]),
            vec![],
            vec![(shape.clone(), ElemType::Bool)],
        ));
        self.cast_to(scope, &is_nan, ElemType::Float32)
    }

    /// Where `flags` (0/1 floats) is 1, as a bool condition for `Where`.
    pub(crate) fn flags_set(&mut self, scope: &str, flags: &Value) -> Value {
        self.cast_to(scope, flags, ElemType::Bool)
    }

    /// `Where(condition, a, b)` of two activations of `condition`'s shape and one type.
    pub(crate) fn select(
        &mut self,
        scope: &str,
        condition: &Value,
        a: &Value,
        b: &Value,
    ) -> Result<Value, OnnxError> {
        if a.shape() != condition.shape() || b.shape() != condition.shape() || a.elem() != b.elem()
        {
            return Err(OnnxError::Shape {
                what: format!(
                    "{scope}: Where of {:?} between {:?} {} and {:?} {}",
                    condition.shape(),
                    a.shape(),
                    a.elem(),
                    b.shape(),
                    b.elem()
                ),
            });
        }
        Ok(single(self.typed_node(
            "Where",
            scope,
            names(&[condition.name(), a.name(), b.name()]),
            vec![],
            vec![(a.shape().to_vec(), a.elem())],
        )))
    }

    /// `y` with NaN wherever `flags` (0/1 floats of `y`'s shape: whether the values that
    /// made each element of `y` held a NaN) is 1.
    pub(crate) fn nan_where(
        &mut self,
        scope: &str,
        flags: &Value,
        y: &Value,
    ) -> Result<Value, OnnxError> {
        self.fill_where(scope, flags, f32::NAN, y)
    }

    /// `y` (float32) with `fill` wherever `flags` (0/1 floats of `y`'s shape) is 1.
    pub(crate) fn fill_where(
        &mut self,
        scope: &str,
        flags: &Value,
        fill: f32,
        y: &Value,
    ) -> Result<Value, OnnxError> {
        if flags.shape() != y.shape() {
            return Err(OnnxError::Shape {
                what: format!(
                    "{scope}: NaN flags {:?} for a result {:?}",
                    flags.shape(),
                    y.shape()
                ),
            });
        }
        let condition = self.flags_set(scope, flags);
        let fill = self.constant_scalar(&format!("{scope}.fill"), fill);
        Ok(single(self.typed_node(
            "Where",
            scope,
            names(&[condition.name(), fill.name(), y.name()]),
            vec![],
            vec![(y.shape().to_vec(), y.elem())],
        )))
    }

    /// `Cast` of `x` to `to`.
    fn cast_to(&mut self, scope: &str, x: &Value, to: ElemType) -> Value {
        let attrs = vec![("to", Attr::Int(to.data_type() as i64))];
        single(self.typed_node(
            "Cast",
            scope,
            names(&[x.name()]),
            attrs,
            vec![(x.shape().to_vec(), to)],
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::PoolNd;
    use crate::{Batch, Opset};

    /// The op types of the graph finished with `y` as its output, in order.
    fn ops(g: GraphBuilder, y: &Value) -> Vec<String> {
        let model = g.finish(y, "y").unwrap();
        model
            .graph
            .node
            .iter()
            .filter_map(|n| n.op_type.clone())
            .collect()
    }

    #[test]
    fn float_max_reductions_carry_nan_and_integer_ones_do_not() {
        let mut g = GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()));
        let x = g.input("x", vec![3, 5]).unwrap();
        let y = g.reduce("ReduceMax", "amax", &x, &[1], false).unwrap();
        assert_eq!(y.shape(), [3]);
        assert_eq!(
            ops(g, &y),
            ["ReduceMax", "IsNaN", "Cast", "ReduceMax", "Cast", "Where"]
        );
        let mut g = GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()));
        let x = g.typed_input("x", vec![3, 5], ElemType::Int64).unwrap();
        let y = g.reduce("ReduceMin", "amin", &x, &[0], true).unwrap();
        assert_eq!(ops(g, &y), ["ReduceMin"]);
        // A sum never needs it: NaN already propagates through addition.
        let mut g = GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()));
        let x = g.input("x", vec![3, 5]).unwrap();
        let y = g.reduce("ReduceSum", "sum", &x, &[0], true).unwrap();
        assert_eq!(ops(g, &y), ["ReduceSum"]);
    }

    #[test]
    fn max_pooling_carries_nan_window_by_window() {
        let mut g = GraphBuilder::new(Opset::default(), Batch::Dynamic("batch".into()));
        let x = g.input("x", vec![2, 6, 6]).unwrap();
        let pool = PoolNd {
            kernel: vec![3, 3],
            stride: vec![2, 2],
            pad: vec![1, 1],
            ceil: false,
        };
        let y = g.max_pool_nd("pool", &x, &pool).unwrap();
        assert_eq!(y.shape(), [2, 3, 3]);
        assert_eq!(
            ops(g, &y),
            ["MaxPool", "IsNaN", "Cast", "MaxPool", "Cast", "Where"]
        );
    }
}
