//! ONNX's type constraints on the operators the exporter emits, checked on every graph
//! before it is written: each input's element type must be one its operator's schema
//! allows at the graph's opset, and inputs one type variable ties together must have one
//! element type. A graph that breaks them fails `onnx.checker` and ATC's parser, so it is
//! refused, naming the node, instead of written.
//!
//! The facts are ONNX's own operator schemas for opsets 9–13 (the versions ATC parses):
//! [`SIGNATURES`] is printed by `scripts/onnx-signatures` from the onnx package, and the
//! interop tier checks it against onnx. `Max` takes only floating-point tensors before
//! opset 12, `Where`'s `condition` is `bool` and its `X` and `Y` are one type, `Reshape`'s
//! `shape` is `int64`, and so on.

use std::collections::HashMap;

use super::elem::ElemType;
use super::elem::ElemType::{Bool, Float32, Int32, Int64};
use super::proto::NodeProto;
use super::Opset;

/// One version of an ONNX operator, as its schema types the inputs.
pub struct Signature {
    /// The operator.
    pub op: &'static str,
    /// The opset version this definition is in force from, until the operator's next row.
    pub since: i64,
    /// Each formal input, in order: the index of its type variable in `types`, and
    /// whether it is variadic (then it is the last, and takes every remaining input).
    inputs: &'static [(usize, bool)],
    /// Each type variable's allowed element types among those ckpt writes.
    types: &'static [&'static [ElemType]],
}

const fn sig(
    op: &'static str,
    since: i64,
    inputs: &'static [(usize, bool)],
    types: &'static [&'static [ElemType]],
) -> Signature {
    Signature {
        op,
        since,
        inputs,
        types,
    }
}

impl Signature {
    /// The definition of `op` in force at `opset`, if ONNX defines it there.
    pub fn of(op: &str, opset: Opset) -> Option<&'static Signature> {
        SIGNATURES
            .iter()
            .filter(|s| s.op == op && s.since <= opset.version())
            .max_by_key(|s| s.since)
    }

    /// The type variable of actual input `k`.
    fn variable(&self, k: usize) -> Option<usize> {
        match self.inputs.get(k) {
            Some(&(var, _)) => Some(var),
            None => match self.inputs.last() {
                Some(&(var, true)) => Some(var),
                _ => None,
            },
        }
    }
}

/// The broken constraints of `nodes` at `opset`, one line each naming the node; `elems`
/// gives the element type of every value and initializer the nodes read (a name it lacks,
/// or an absent optional input, is not checked here).
pub fn violations(
    nodes: &[NodeProto],
    elems: &HashMap<String, ElemType>,
    opset: Opset,
) -> Vec<String> {
    let mut bad = Vec::new();
    for node in nodes {
        let op = node.op_type.as_deref().unwrap_or("");
        let Some(signature) = Signature::of(op, opset) else {
            continue;
        };
        let name = node.name.as_deref().unwrap_or(op);
        let typed = node.input.iter().enumerate().filter_map(|(k, input)| {
            let elem = elems.get(input).filter(|_| !input.is_empty())?;
            Some((k, signature.variable(k)?, *elem))
        });
        let mut bound: Vec<Option<(usize, ElemType)>> = vec![None; signature.types.len()];
        for (k, var, elem) in typed {
            let allowed = signature.types[var];
            if !allowed.contains(&elem) {
                let names: Vec<&str> = allowed.iter().map(|t| t.name()).collect();
                let takes = if names.is_empty() {
                    "none of ckpt's element types".to_owned()
                } else {
                    names.join(" or ")
                };
                bad.push(format!(
                    "{name}: ONNX's {op} at opset {opset} takes {takes} for input {k}, not {elem}"
                ));
            }
            match bound[var] {
                None => bound[var] = Some((k, elem)),
                Some((first, seen)) if seen != elem => bad.push(format!(
                    "{name}: ONNX's {op} takes one element type for inputs {first} and {k}, but input {first} is {seen} and input {k} is {elem}"
                )),
                Some(_) => {}
            }
        }
    }
    bad
}

/// ONNX's signatures of every operator in [`super::atc::ALLOWED_OPS`] and
/// [`super::atc::TYPED_OPS`], each version in force at opsets 9–13, by operator and
/// version; printed by `scripts/onnx-signatures` from onnx's operator schemas.
#[rustfmt::skip]
pub const SIGNATURES: [Signature; 171] = [
    sig("Abs", 6, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("Abs", 13, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("Acos", 7, &[(0, false)], &[&[Float32]]),
    sig("Acosh", 9, &[(0, false)], &[&[Float32]]),
    sig("Add", 7, &[(0, false), (0, false)], &[&[Int32, Int64, Float32]]),
    sig("Add", 13, &[(0, false), (0, false)], &[&[Int32, Int64, Float32]]),
    sig("And", 7, &[(0, false), (0, false)], &[&[Bool]]),
    sig("ArgMax", 1, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ArgMax", 11, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ArgMax", 12, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ArgMax", 13, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ArgMin", 1, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ArgMin", 11, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ArgMin", 12, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ArgMin", 13, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("Asin", 7, &[(0, false)], &[&[Float32]]),
    sig("Asinh", 9, &[(0, false)], &[&[Float32]]),
    sig("Atan", 7, &[(0, false)], &[&[Float32]]),
    sig("Atanh", 9, &[(0, false)], &[&[Float32]]),
    sig("AveragePool", 7, &[(0, false)], &[&[Float32]]),
    sig("AveragePool", 10, &[(0, false)], &[&[Float32]]),
    sig("AveragePool", 11, &[(0, false)], &[&[Float32]]),
    sig("BatchNormalization", 9, &[(0, false), (0, false), (0, false), (0, false), (0, false)], &[&[Float32]]),
    sig("Cast", 9, &[(0, false)], &[&[Float32, Int32, Int64, Bool]]),
    sig("Cast", 13, &[(0, false)], &[&[Float32, Int32, Int64, Bool]]),
    sig("Ceil", 6, &[(0, false)], &[&[Float32]]),
    sig("Ceil", 13, &[(0, false)], &[&[Float32]]),
    sig("Clip", 6, &[(0, false)], &[&[Float32]]),
    sig("Clip", 11, &[(0, false), (0, false), (0, false)], &[&[Float32]]),
    sig("Clip", 12, &[(0, false), (0, false), (0, false)], &[&[Int32, Int64, Float32]]),
    sig("Clip", 13, &[(0, false), (0, false), (0, false)], &[&[Int32, Int64, Float32]]),
    sig("Concat", 4, &[(0, true)], &[&[Int32, Int64, Float32, Bool]]),
    sig("Concat", 11, &[(0, true)], &[&[Int32, Int64, Float32, Bool]]),
    sig("Concat", 13, &[(0, true)], &[&[Int32, Int64, Float32, Bool]]),
    sig("Conv", 1, &[(0, false), (0, false), (0, false)], &[&[Float32]]),
    sig("Conv", 11, &[(0, false), (0, false), (0, false)], &[&[Float32]]),
    sig("ConvTranspose", 1, &[(0, false), (0, false), (0, false)], &[&[Float32]]),
    sig("ConvTranspose", 11, &[(0, false), (0, false), (0, false)], &[&[Float32]]),
    sig("Cos", 7, &[(0, false)], &[&[Float32]]),
    sig("Cosh", 9, &[(0, false)], &[&[Float32]]),
    sig("CumSum", 11, &[(0, false), (1, false)], &[&[Int32, Int64, Float32], &[Int32, Int64]]),
    sig("Div", 7, &[(0, false), (0, false)], &[&[Int32, Int64, Float32]]),
    sig("Div", 13, &[(0, false), (0, false)], &[&[Int32, Int64, Float32]]),
    sig("Elu", 6, &[(0, false)], &[&[Float32]]),
    sig("Equal", 7, &[(0, false), (0, false)], &[&[Bool, Int32, Int64]]),
    sig("Equal", 11, &[(0, false), (0, false)], &[&[Bool, Int32, Int64, Float32]]),
    sig("Equal", 13, &[(0, false), (0, false)], &[&[Bool, Int32, Int64, Float32]]),
    sig("Erf", 9, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("Erf", 13, &[(0, false)], &[&[Float32]]),
    sig("Exp", 6, &[(0, false)], &[&[Float32]]),
    sig("Exp", 13, &[(0, false)], &[&[Float32]]),
    sig("Flatten", 9, &[(0, false)], &[&[Int32, Int64, Float32, Bool]]),
    sig("Flatten", 11, &[(0, false)], &[&[Int32, Int64, Float32, Bool]]),
    sig("Flatten", 13, &[(0, false)], &[&[Int32, Int64, Float32, Bool]]),
    sig("Floor", 6, &[(0, false)], &[&[Float32]]),
    sig("Floor", 13, &[(0, false)], &[&[Float32]]),
    sig("GRU", 7, &[(0, false), (0, false), (0, false), (0, false), (1, false), (0, false)], &[&[Float32], &[Int32]]),
    sig("Gather", 1, &[(0, false), (1, false)], &[&[Int32, Int64, Float32, Bool], &[Int32, Int64]]),
    sig("Gather", 11, &[(0, false), (1, false)], &[&[Int32, Int64, Float32, Bool], &[Int32, Int64]]),
    sig("Gather", 13, &[(0, false), (1, false)], &[&[Int32, Int64, Float32, Bool], &[Int32, Int64]]),
    sig("GatherElements", 11, &[(0, false), (1, false)], &[&[Int32, Int64, Float32, Bool], &[Int32, Int64]]),
    sig("GatherElements", 13, &[(0, false), (1, false)], &[&[Int32, Int64, Float32, Bool], &[Int32, Int64]]),
    sig("Gemm", 9, &[(0, false), (0, false), (0, false)], &[&[Float32, Int32, Int64]]),
    sig("Gemm", 11, &[(0, false), (0, false), (0, false)], &[&[Float32, Int32, Int64]]),
    sig("Gemm", 13, &[(0, false), (0, false), (0, false)], &[&[Float32, Int32, Int64]]),
    sig("GlobalAveragePool", 1, &[(0, false)], &[&[Float32]]),
    sig("Greater", 9, &[(0, false), (0, false)], &[&[Int32, Int64, Float32]]),
    sig("Greater", 13, &[(0, false), (0, false)], &[&[Int32, Int64, Float32]]),
    sig("HardSigmoid", 6, &[(0, false)], &[&[Float32]]),
    sig("InstanceNormalization", 6, &[(0, false), (0, false), (0, false)], &[&[Float32]]),
    sig("IsNaN", 9, &[(0, false)], &[&[Float32]]),
    sig("IsNaN", 13, &[(0, false)], &[&[Float32]]),
    sig("LRN", 1, &[(0, false)], &[&[Float32]]),
    sig("LRN", 13, &[(0, false)], &[&[Float32]]),
    sig("LSTM", 7, &[(0, false), (0, false), (0, false), (0, false), (1, false), (0, false), (0, false), (0, false)], &[&[Float32], &[Int32]]),
    sig("LeakyRelu", 6, &[(0, false)], &[&[Float32]]),
    sig("Less", 9, &[(0, false), (0, false)], &[&[Int32, Int64, Float32]]),
    sig("Less", 13, &[(0, false), (0, false)], &[&[Int32, Int64, Float32]]),
    sig("Log", 6, &[(0, false)], &[&[Float32]]),
    sig("Log", 13, &[(0, false)], &[&[Float32]]),
    sig("LogSoftmax", 1, &[(0, false)], &[&[Float32]]),
    sig("LogSoftmax", 11, &[(0, false)], &[&[Float32]]),
    sig("LogSoftmax", 13, &[(0, false)], &[&[Float32]]),
    sig("MatMul", 9, &[(0, false), (0, false)], &[&[Float32, Int32, Int64]]),
    sig("MatMul", 13, &[(0, false), (0, false)], &[&[Float32, Int32, Int64]]),
    sig("Max", 8, &[(0, true)], &[&[Float32]]),
    sig("Max", 12, &[(0, true)], &[&[Int32, Int64, Float32]]),
    sig("Max", 13, &[(0, true)], &[&[Int32, Int64, Float32]]),
    sig("MaxPool", 8, &[(0, false)], &[&[Float32]]),
    sig("MaxPool", 10, &[(0, false)], &[&[Float32]]),
    sig("MaxPool", 11, &[(0, false)], &[&[Float32]]),
    sig("MaxPool", 12, &[(0, false)], &[&[Float32]]),
    sig("Min", 8, &[(0, true)], &[&[Float32]]),
    sig("Min", 12, &[(0, true)], &[&[Int32, Int64, Float32]]),
    sig("Min", 13, &[(0, true)], &[&[Int32, Int64, Float32]]),
    sig("Mod", 10, &[(0, false), (0, false)], &[&[Int32, Int64, Float32]]),
    sig("Mod", 13, &[(0, false), (0, false)], &[&[Int32, Int64, Float32]]),
    sig("Mul", 7, &[(0, false), (0, false)], &[&[Int32, Int64, Float32]]),
    sig("Mul", 13, &[(0, false), (0, false)], &[&[Int32, Int64, Float32]]),
    sig("Neg", 6, &[(0, false)], &[&[Float32, Int32, Int64]]),
    sig("Neg", 13, &[(0, false)], &[&[Float32, Int32, Int64]]),
    sig("Not", 1, &[(0, false)], &[&[Bool]]),
    sig("Or", 7, &[(0, false), (0, false)], &[&[Bool]]),
    sig("PRelu", 9, &[(0, false), (0, false)], &[&[Float32, Int32, Int64]]),
    sig("Pad", 2, &[(0, false)], &[&[Float32]]),
    sig("Pad", 11, &[(0, false), (1, false), (0, false)], &[&[Int32, Int64, Float32], &[Int64]]),
    sig("Pad", 13, &[(0, false), (1, false), (0, false)], &[&[Int32, Int64, Float32, Bool], &[Int64]]),
    sig("Pow", 7, &[(0, false), (0, false)], &[&[Float32]]),
    sig("Pow", 12, &[(0, false), (1, false)], &[&[Int32, Int64, Float32], &[Int32, Int64, Float32]]),
    sig("Pow", 13, &[(0, false), (1, false)], &[&[Int32, Int64, Float32], &[Int32, Int64, Float32]]),
    sig("Reciprocal", 6, &[(0, false)], &[&[Float32]]),
    sig("Reciprocal", 13, &[(0, false)], &[&[Float32]]),
    sig("ReduceL1", 1, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceL1", 11, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceL1", 13, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceL2", 1, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceL2", 11, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceL2", 13, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceMax", 1, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceMax", 11, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceMax", 12, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceMax", 13, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceMean", 1, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceMean", 11, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceMean", 13, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceMin", 1, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceMin", 11, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceMin", 12, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceMin", 13, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceSum", 1, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceSum", 11, &[(0, false)], &[&[Int32, Int64, Float32]]),
    sig("ReduceSum", 13, &[(0, false), (1, false)], &[&[Int32, Int64, Float32], &[Int64]]),
    sig("Relu", 6, &[(0, false)], &[&[Float32]]),
    sig("Relu", 13, &[(0, false)], &[&[Float32]]),
    sig("Reshape", 5, &[(0, false), (1, false)], &[&[Int32, Int64, Float32, Bool], &[Int64]]),
    sig("Reshape", 13, &[(0, false), (1, false)], &[&[Int32, Int64, Float32, Bool], &[Int64]]),
    sig("Resize", 10, &[(0, false), (1, false)], &[&[Int32, Int64, Float32, Bool], &[Float32]]),
    sig("Resize", 11, &[(0, false), (1, false), (2, false), (3, false)], &[&[Int32, Int64, Float32, Bool], &[Float32], &[Float32], &[Int64]]),
    sig("Resize", 13, &[(0, false), (1, false), (2, false), (3, false)], &[&[Int32, Int64, Float32, Bool], &[Float32], &[Float32], &[Int64]]),
    sig("Round", 11, &[(0, false)], &[&[Float32]]),
    sig("Sigmoid", 6, &[(0, false)], &[&[Float32]]),
    sig("Sigmoid", 13, &[(0, false)], &[&[Float32]]),
    sig("Sin", 7, &[(0, false)], &[&[Float32]]),
    sig("Sinh", 9, &[(0, false)], &[&[Float32]]),
    sig("Slice", 1, &[(0, false)], &[&[Int32, Int64, Float32, Bool]]),
    sig("Slice", 10, &[(0, false), (1, false), (1, false), (1, false), (1, false)], &[&[Int32, Int64, Float32, Bool], &[Int32, Int64]]),
    sig("Slice", 11, &[(0, false), (1, false), (1, false), (1, false), (1, false)], &[&[Int32, Int64, Float32, Bool], &[Int32, Int64]]),
    sig("Slice", 13, &[(0, false), (1, false), (1, false), (1, false), (1, false)], &[&[Int32, Int64, Float32, Bool], &[Int32, Int64]]),
    sig("Softmax", 1, &[(0, false)], &[&[Float32]]),
    sig("Softmax", 11, &[(0, false)], &[&[Float32]]),
    sig("Softmax", 13, &[(0, false)], &[&[Float32]]),
    sig("Softplus", 1, &[(0, false)], &[&[Float32]]),
    sig("Split", 2, &[(0, false)], &[&[Int32, Int64, Float32, Bool]]),
    sig("Split", 11, &[(0, false)], &[&[Int32, Int64, Float32, Bool]]),
    sig("Split", 13, &[(0, false), (1, false)], &[&[Int32, Int64, Float32, Bool], &[Int64]]),
    sig("Sqrt", 6, &[(0, false)], &[&[Float32]]),
    sig("Sqrt", 13, &[(0, false)], &[&[Float32]]),
    sig("Sub", 7, &[(0, false), (0, false)], &[&[Int32, Int64, Float32]]),
    sig("Sub", 13, &[(0, false), (0, false)], &[&[Int32, Int64, Float32]]),
    sig("Tan", 7, &[(0, false)], &[&[Float32]]),
    sig("Tanh", 6, &[(0, false)], &[&[Float32]]),
    sig("Tanh", 13, &[(0, false)], &[&[Float32]]),
    sig("Tile", 6, &[(0, false), (1, false)], &[&[Int32, Int64, Float32, Bool], &[Int64]]),
    sig("Tile", 13, &[(0, false), (1, false)], &[&[Int32, Int64, Float32, Bool], &[Int64]]),
    sig("TopK", 1, &[(0, false)], &[&[Float32]]),
    sig("TopK", 10, &[(0, false), (1, false)], &[&[Float32], &[Int64]]),
    sig("TopK", 11, &[(0, false), (1, false)], &[&[Int32, Int64, Float32], &[Int64]]),
    sig("Transpose", 1, &[(0, false)], &[&[Int32, Int64, Float32, Bool]]),
    sig("Transpose", 13, &[(0, false)], &[&[Int32, Int64, Float32, Bool]]),
    sig("Where", 9, &[(0, false), (1, false), (1, false)], &[&[Bool], &[Int32, Int64, Float32, Bool]]),
    sig("Xor", 7, &[(0, false), (0, false)], &[&[Bool]]),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn node(op: &str, inputs: &[&str]) -> NodeProto {
        NodeProto {
            op_type: Some(op.to_owned()),
            name: Some(format!("/{op}")),
            input: inputs.iter().map(|s| (*s).to_owned()).collect(),
            ..Default::default()
        }
    }

    fn elems() -> HashMap<String, ElemType> {
        [
            ("x", ElemType::Float32),
            ("w", ElemType::Float32),
            ("ids", ElemType::Int64),
            ("mask", ElemType::Bool),
            ("i32", ElemType::Int32),
        ]
        .into_iter()
        .map(|(n, e)| (n.to_owned(), e))
        .collect()
    }

    #[test]
    fn a_binary_op_on_float_and_int64_is_a_violation() {
        let bad = violations(&[node("Mul", &["ids", "w"])], &elems(), Opset::default());
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(
            bad[0].contains("/Mul") && bad[0].contains("int64"),
            "{bad:?}"
        );
        assert!(violations(&[node("Mul", &["x", "w"])], &elems(), Opset::default()).is_empty());
        assert!(violations(
            &[node("Concat", &["x", "w", "x"])],
            &elems(),
            Opset::default()
        )
        .is_empty());
    }

    #[test]
    fn fixed_input_types_are_checked_and_untied_inputs_are_free() {
        let e = elems();
        assert!(violations(&[node("Where", &["mask", "x", "w"])], &e, Opset::default()).is_empty());
        assert_eq!(
            violations(&[node("Where", &["ids", "x", "w"])], &e, Opset::default()).len(),
            1
        );
        assert!(violations(&[node("Reshape", &["x", "ids"])], &e, Opset::default()).is_empty());
        assert_eq!(
            violations(&[node("Reshape", &["x", "i32"])], &e, Opset::default()).len(),
            1
        );
        assert!(violations(&[node("Gather", &["w", "i32"])], &e, Opset::default()).is_empty());
        // An op ONNX does not constrain across inputs, and absent optional inputs.
        assert!(violations(&[node("Cast", &["ids"])], &e, Opset::default()).is_empty());
        assert!(violations(
            &[node("Resize", &["x", "", "", "ids"])],
            &e,
            Opset::default()
        )
        .is_empty());
    }

    #[test]
    fn an_input_type_the_opset_does_not_allow_is_a_violation() {
        let e = elems();
        let at = |v| Opset::new(v).expect("an ATC opset");
        // ONNX's Min and Max take integers from opset 12 on; Pow's exponent is its own type
        // from 12.
        let min = [node("Min", &["ids", "ids"])];
        let bad = violations(&min, &e, at(11));
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert!(
            bad[0].contains("/Min") && bad[0].contains("opset 11"),
            "{bad:?}"
        );
        assert!(violations(&min, &e, at(12)).is_empty());
        assert!(!violations(&[node("Pow", &["x", "ids"])], &e, at(11)).is_empty());
        assert!(violations(&[node("Pow", &["x", "ids"])], &e, at(12)).is_empty());
        // Variadic inputs share the last formal's variable.
        assert_eq!(
            violations(&[node("Concat", &["ids", "ids", "x"])], &e, at(11)).len(),
            1
        );
    }

    #[test]
    fn every_emitted_op_has_a_signature_at_every_opset_it_is_registered_at() {
        use crate::atc::{ALLOWED_OPS, TYPED_OPS};
        for op in ALLOWED_OPS.iter().chain(&TYPED_OPS) {
            // Resize and Mod are defined from opset 10; CumSum, GatherElements and Round
            // from 11.
            let from = match *op {
                "Resize" | "Mod" => 10,
                "CumSum" | "GatherElements" | "Round" => 11,
                _ => 9,
            };
            for v in from..=13 {
                let opset = Opset::new(v).expect("an ATC opset");
                assert!(Signature::of(op, opset).is_some(), "{op} at opset {v}");
            }
        }
        assert!(SIGNATURES
            .windows(2)
            .all(|w| (w[0].op, w[0].since) < (w[1].op, w[1].since)));
    }
}
