//! The element type of each op's result, as torch computes it, in the export schema's
//! numbering (7 float32, 5 int64, 4 int32, 12 bool): what the converted program records
//! for every tensor value, and what the lowering checks each ONNX value against.

use ckpt_aten::eval;
use ckpt_aten::program::{Argument, Node};
use ckpt_formats::torch::dtype::DType;

pub const FLOAT32: i64 = 7;
pub const INT64: i64 = 5;
const INT32: i64 = 4;
pub const BOOL: i64 = 12;

/// The export schema's number for an input dtype the import handles, else `None`.
pub fn of_input(dtype: DType) -> Option<i64> {
    match dtype {
        DType::Float32 => Some(FLOAT32),
        DType::Int64 => Some(INT64),
        DType::Int32 => Some(INT32),
        DType::Bool => Some(BOOL),
        _ => None,
    }
}

/// Whether export dtype `dtype` is an integer type (bool included), as the aten evaluator
/// holds it ([`eval::is_integer`]); float64 and the other float types are not.
pub fn is_integer(dtype: i64) -> bool {
    eval::is_integer(dtype).is_ok_and(|integer| integer)
}

/// torch's promotion order among the types above.
fn promotion(dtype: i64) -> u8 {
    match dtype {
        BOOL => 0,
        INT32 => 1,
        INT64 => 2,
        _ => 3,
    }
}

/// The result type of `node` (overload `op`, without `torch.ops.aten.`); `dtype_of` gives
/// each tensor value's type.
pub fn infer(node: &Node, op: &str, dtype_of: &dyn Fn(&str) -> Option<i64>) -> i64 {
    let arg = |name: &str| node.inputs.iter().find(|a| a.name == name).map(|a| &a.arg);
    let tensor = |name: &str| match arg(name) {
        Some(Argument::Tensor(t)) => dtype_of(t),
        _ => None,
    };
    // An op given the result type (`to`, `new_full`, `zeros_like`, `cumsum`, …) makes it.
    if let Some(Argument::ScalarType(t)) = arg("dtype") {
        return *t;
    }
    // A ported element-wise rule whose value is a truth value (`isnan`, `isinf`, …).
    if ckpt_aten::decompose::pointwise(ckpt_aten::schema::canonical(op))
        .is_some_and(|rule| rule.expr.is_bool())
    {
        return BOOL;
    }
    let name = op.split('.').next().unwrap_or(op);
    match name {
        "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "logical_not" | "logical_and" | "logical_or"
        | "logical_xor" | "bitwise_not" | "bitwise_and" | "bitwise_or" | "__and__" | "__or__"
        | "isfinite" | "all" | "any" => BOOL,
        "argmax" | "argmin" => INT64,
        // Tables are read as float32.
        "embedding" => FLOAT32,
        "type_as" => tensor("other").unwrap_or(FLOAT32),
        "where" => {
            let side = |n: &str| match arg(n) {
                Some(Argument::Float(_)) => Some(FLOAT32),
                Some(Argument::Tensor(t)) => dtype_of(t),
                _ => None,
            };
            [side("self"), side("other")]
                .into_iter()
                .flatten()
                .max_by_key(|&t| promotion(t))
                .unwrap_or(FLOAT32)
        }
        // Every other op keeps the type of its first tensor argument; a list of tensors
        // (`stack`, `cat`) the promoted type of its items.
        _ => node
            .inputs
            .iter()
            .find_map(|a| match &a.arg {
                Argument::Tensor(t) => Some(dtype_of(t).unwrap_or(FLOAT32)),
                Argument::Tensors(items) => items
                    .iter()
                    .map(|t| dtype_of(t).unwrap_or(FLOAT32))
                    .max_by_key(|&t| promotion(t)),
                _ => None,
            })
            .unwrap_or(FLOAT32),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(json: &str) -> Node {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn results_follow_torch_typing() {
        let types = |t: &str| match t {
            "ids" => Some(INT64),
            "mask" => Some(BOOL),
            _ => Some(FLOAT32),
        };
        let cmp = node(
            r#"{"target": "t", "outputs": [], "inputs": [
                {"name": "self", "arg": {"as_tensor": {"name": "ids"}}},
                {"name": "other", "arg": {"as_int": 0}}]}"#,
        );
        assert_eq!(infer(&cmp, "ne.Scalar", &types), BOOL);
        assert_eq!(infer(&cmp, "unsqueeze.default", &types), INT64);
        let to = node(
            r#"{"target": "t", "outputs": [], "inputs": [
                {"name": "self", "arg": {"as_tensor": {"name": "mask"}}},
                {"name": "dtype", "arg": {"as_scalar_type": 7}}]}"#,
        );
        assert_eq!(infer(&to, "to.dtype", &types), FLOAT32);
        let pick = node(
            r#"{"target": "t", "outputs": [], "inputs": [
                {"name": "condition", "arg": {"as_tensor": {"name": "mask"}}},
                {"name": "self", "arg": {"as_tensor": {"name": "ids"}}},
                {"name": "other", "arg": {"as_float": 0.5}}]}"#,
        );
        assert_eq!(infer(&pick, "where.self", &types), FLOAT32);
        let like = node(
            r#"{"target": "t", "outputs": [], "inputs": [
                {"name": "self", "arg": {"as_tensor": {"name": "x"}}},
                {"name": "other", "arg": {"as_tensor": {"name": "ids"}}}]}"#,
        );
        assert_eq!(infer(&like, "type_as.default", &types), INT64);
        let full = node(
            r#"{"target": "t", "outputs": [], "inputs": [
                {"name": "self", "arg": {"as_tensor": {"name": "x"}}},
                {"name": "size", "arg": {"as_ints": [2]}},
                {"name": "fill_value", "arg": {"as_int": 1}},
                {"name": "dtype", "arg": {"as_scalar_type": 12}}]}"#,
        );
        assert_eq!(infer(&full, "new_full.default", &types), BOOL);
        assert!(is_integer(BOOL) && !is_integer(FLOAT32));
        // float64 constants (transformers' RT-DETR positions) are floats, int8 an integer.
        assert!(!is_integer(8) && is_integer(2));
        // Predicates on floats are truth values (kornia's median blur masks `isfinite`).
        let unary = node(
            r#"{"target": "t", "outputs": [], "inputs": [
                {"name": "self", "arg": {"as_tensor": {"name": "x"}}}]}"#,
        );
        for op in ["isfinite.default", "isnan.default", "isinf.default"] {
            assert_eq!(infer(&unary, op, &types), BOOL, "{op}");
        }
        assert_eq!(infer(&unary, "sign.default", &types), FLOAT32);
        // Stacked indices stay integers (kornia's canny neighbours); mixed ones promote.
        let stack = |items: &str| {
            node(&format!(
                r#"{{"target": "t", "outputs": [], "inputs": [
                {{"name": "tensors", "arg": {{"as_tensors": [{items}]}}}},
                {{"name": "dim", "arg": {{"as_int": 2}}}}]}}"#
            ))
        };
        let ids = stack(r#"{"name": "ids"}, {"name": "ids"}"#);
        assert_eq!(infer(&ids, "stack.default", &types), INT64);
        let mixed = stack(r#"{"name": "ids"}, {"name": "x"}"#);
        assert_eq!(infer(&mixed, "cat.default", &types), FLOAT32);
        assert_eq!(of_input(DType::Float16), None);
    }
}
