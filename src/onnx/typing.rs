//! ONNX's type constraints on the operators the exporter emits, checked on every graph
//! before it is written: inputs one type variable ties together must have one element
//! type, and inputs ONNX fixes to a type must have it. A graph that breaks them fails
//! `onnx.checker` and ATC's parser, so it is refused, naming the node, instead of written.
//!
//! The facts are ONNX's operator definitions for opsets 9–13 (the versions ATC parses):
//! `Add`'s `A` and `B` are both `T`, `Where`'s `condition` is `bool` and its `X` and `Y`
//! are `T`, `Reshape`'s `shape` is `int64`, and so on. Ops not listed tie nothing.

use std::collections::HashMap;

use super::elem::ElemType;
use super::proto::NodeProto;

/// Which of an op's inputs one type variable ties together.
#[derive(Clone, Copy, Debug)]
enum Tied {
    /// Every input (variadic ops: `Concat`, `Max`, `Sum`).
    All,
    /// The inputs at these positions.
    Only(&'static [usize]),
}

const INDEX: &[ElemType] = &[ElemType::Int32, ElemType::Int64];
const INT64: &[ElemType] = &[ElemType::Int64];
const BOOL: &[ElemType] = &[ElemType::Bool];
const FLOAT: &[ElemType] = &[ElemType::Float32];

/// One op's constraints: the inputs sharing a type, and inputs of a fixed type.
struct Constraint {
    op: &'static str,
    tied: Tied,
    fixed: &'static [(usize, &'static [ElemType])],
}

const fn tied(op: &'static str, tied: Tied) -> Constraint {
    Constraint {
        op,
        tied,
        fixed: &[],
    }
}

/// ONNX's definitions (opsets 9–13) for every emitted op that constrains more than one
/// input, or an input's type.
const CONSTRAINTS: [Constraint; 30] = [
    tied("Add", Tied::All),
    tied("Sub", Tied::All),
    tied("Mul", Tied::All),
    tied("Div", Tied::All),
    tied("Pow", Tied::All),
    tied("Max", Tied::All),
    tied("Min", Tied::All),
    tied("Sum", Tied::All),
    tied("Mean", Tied::All),
    tied("Concat", Tied::All),
    tied("Equal", Tied::All),
    tied("Less", Tied::All),
    tied("Greater", Tied::All),
    tied("MatMul", Tied::All),
    tied("Gemm", Tied::All),
    tied("PRelu", Tied::All),
    tied("Clip", Tied::All),
    tied("Conv", Tied::All),
    tied("ConvTranspose", Tied::All),
    tied("BatchNormalization", Tied::All),
    tied("InstanceNormalization", Tied::All),
    Constraint {
        op: "And",
        tied: Tied::All,
        fixed: &[(0, BOOL), (1, BOOL)],
    },
    Constraint {
        op: "Or",
        tied: Tied::All,
        fixed: &[(0, BOOL), (1, BOOL)],
    },
    Constraint {
        op: "Where",
        tied: Tied::Only(&[1, 2]),
        fixed: &[(0, BOOL)],
    },
    Constraint {
        op: "Reshape",
        tied: Tied::Only(&[]),
        fixed: &[(1, INT64)],
    },
    Constraint {
        op: "Pad",
        tied: Tied::Only(&[0, 2]),
        fixed: &[(1, INT64)],
    },
    Constraint {
        op: "Slice",
        tied: Tied::Only(&[1, 2, 3, 4]),
        fixed: &[(1, INDEX), (2, INDEX), (3, INDEX), (4, INDEX)],
    },
    Constraint {
        op: "Gather",
        tied: Tied::Only(&[]),
        fixed: &[(1, INDEX)],
    },
    Constraint {
        op: "TopK",
        tied: Tied::Only(&[]),
        fixed: &[(1, INT64)],
    },
    Constraint {
        op: "Resize",
        tied: Tied::Only(&[]),
        fixed: &[(2, FLOAT), (3, INT64)],
    },
];

/// The broken constraints of `nodes`, one line each naming the node; `elems` gives the
/// element type of every value and initializer the nodes read (a name it lacks, or an
/// absent optional input, is not checked here).
pub fn violations(nodes: &[NodeProto], elems: &HashMap<String, ElemType>) -> Vec<String> {
    let mut bad = Vec::new();
    for node in nodes {
        let op = node.op_type.as_deref().unwrap_or("");
        let Some(rule) = CONSTRAINTS.iter().find(|c| c.op == op) else {
            continue;
        };
        let name = node.name.as_deref().unwrap_or(op);
        let elem = |k: usize| {
            node.input
                .get(k)
                .filter(|i| !i.is_empty())
                .and_then(|i| elems.get(i))
                .copied()
        };
        let positions: Vec<usize> = match rule.tied {
            Tied::All => (0..node.input.len()).collect(),
            Tied::Only(list) => list.to_vec(),
        };
        let tied: Vec<(usize, ElemType)> = positions
            .iter()
            .filter_map(|&k| Some((k, elem(k)?)))
            .collect();
        if tied.iter().any(|(_, e)| *e != tied[0].1) {
            let seen: Vec<String> = tied
                .iter()
                .map(|(k, e)| format!("input {k} is {e}"))
                .collect();
            bad.push(format!(
                "{name}: ONNX's {op} takes one element type for these inputs, but {}",
                seen.join(", ")
            ));
        }
        for &(k, allowed) in rule.fixed {
            if let Some(e) = elem(k).filter(|e| !allowed.contains(e)) {
                let names: Vec<&str> = allowed.iter().map(|t| t.name()).collect();
                bad.push(format!(
                    "{name}: ONNX's {op} takes {} for input {k}, not {e}",
                    names.join(" or ")
                ));
            }
        }
    }
    bad
}

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
        let bad = violations(&[node("Mul", &["ids", "w"])], &elems());
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(
            bad[0].contains("/Mul") && bad[0].contains("int64"),
            "{bad:?}"
        );
        assert!(violations(&[node("Mul", &["x", "w"])], &elems()).is_empty());
        assert!(violations(&[node("Concat", &["x", "w", "x"])], &elems()).is_empty());
    }

    #[test]
    fn fixed_input_types_are_checked_and_untied_inputs_are_free() {
        let e = elems();
        assert!(violations(&[node("Where", &["mask", "x", "w"])], &e).is_empty());
        assert_eq!(
            violations(&[node("Where", &["ids", "x", "w"])], &e).len(),
            1
        );
        assert!(violations(&[node("Reshape", &["x", "ids"])], &e).is_empty());
        assert_eq!(violations(&[node("Reshape", &["x", "i32"])], &e).len(), 1);
        assert!(violations(&[node("Gather", &["w", "i32"])], &e).is_empty());
        // An op ONNX does not constrain across inputs, and absent optional inputs.
        assert!(violations(&[node("Cast", &["ids"])], &e).is_empty());
        assert!(violations(&[node("Resize", &["x", "", "", "ids"])], &e).is_empty());
    }
}
