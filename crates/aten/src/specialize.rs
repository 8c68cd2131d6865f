//! A program with some of its symbolic sizes fixed: every size, stride and symbolic integer
//! mentioning them is rewritten with the values substituted, and the nodes that only
//! computed a size from them (`sym_size.int(x, 1)`, `_operator.mul`) are replaced by the
//! literal they now produce.
//!
//! The ONNX export lowers a program once per probe value of a dynamic dimension other than
//! the batch and compares the graphs (`onnx::program::dynamic`); this is how it gets each
//! probe's program.

use std::collections::HashMap;

use super::program::{Argument, ExportedProgram, SymInt};
use super::sym;

/// `program` with `values` (symbol name → size) substituted. Fails, naming the size, when
/// a substitution leaves an expression the lowering cannot follow (a product of two
/// remaining symbols, a floor division).
pub fn specialize(
    program: &ExportedProgram,
    values: &HashMap<String, i64>,
) -> Result<ExportedProgram, String> {
    let mut out = program.clone();
    for name in values.keys() {
        out.range_constraints.remove(name);
    }
    let graph = &mut out.graph_module.graph;
    for meta in graph.tensor_values.values_mut() {
        for size in meta
            .sizes
            .iter_mut()
            .chain(meta.strides.iter_mut())
            .chain(std::iter::once(&mut meta.storage_offset))
        {
            *size = substituted(size, values)?;
        }
    }
    let mut literals: HashMap<String, i64> = HashMap::new();
    for (name, value) in graph.sym_int_values.iter_mut() {
        *value = substituted(value, values)?;
        if let SymInt::Int(n) = value {
            literals.insert(name.clone(), *n);
        }
    }
    // A node whose one output is a symbolic integer that became a literal is no longer
    // needed: its readers get the literal.
    graph.nodes.retain(|node| {
        !matches!(node.outputs.as_slice(),
            [Argument::SymInt(SymInt::Name(n))] if literals.contains_key(n))
    });
    for node in &mut graph.nodes {
        for input in &mut node.inputs {
            input.arg = with_literals(&input.arg, values, &literals)?;
        }
    }
    let outputs = std::mem::take(&mut graph.outputs);
    graph.outputs = outputs
        .iter()
        .map(|arg| with_literals(arg, values, &literals))
        .collect::<Result<_, _>>()?;
    Ok(out)
}

fn substituted(size: &SymInt, values: &HashMap<String, i64>) -> Result<SymInt, String> {
    match size {
        SymInt::Expr(text) => Ok(match sym::substitute(text, values)? {
            Ok(n) => SymInt::Int(n),
            Err(text) => SymInt::Expr(text),
        }),
        other => Ok(other.clone()),
    }
}

/// One argument with symbolic integers that became literals written as plain integers.
fn with_literals(
    arg: &Argument,
    values: &HashMap<String, i64>,
    literals: &HashMap<String, i64>,
) -> Result<Argument, String> {
    let literal = |s: &SymInt| -> Result<SymInt, String> {
        Ok(match s {
            SymInt::Name(n) => match literals.get(n) {
                Some(&v) => SymInt::Int(v),
                None => s.clone(),
            },
            other => substituted(other, values)?,
        })
    };
    Ok(match arg {
        Argument::SymInt(s) => match literal(s)? {
            SymInt::Int(n) => Argument::Int(n),
            other => Argument::SymInt(other),
        },
        Argument::SymInts(list) => {
            let list = list.iter().map(literal).collect::<Result<Vec<_>, _>>()?;
            if list.iter().all(|s| matches!(s, SymInt::Int(_))) {
                Argument::Ints(
                    list.iter()
                        .map(|s| match s {
                            SymInt::Int(n) => *n,
                            _ => 0,
                        })
                        .collect(),
                )
            } else {
                Argument::SymInts(list)
            }
        }
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROGRAM: &str = r#"{
      "graph_module": {
        "graph": {
          "inputs": [{"as_tensor": {"name": "x"}}],
          "outputs": [{"as_tensor": {"name": "view"}}],
          "nodes": [
            {"target": "torch.ops.aten.sym_size.int",
             "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}},
                        {"name": "dim", "arg": {"as_int": 1}}],
             "outputs": [{"as_sym_int": {"as_name": "sym_size_int_1"}}]},
            {"target": "torch.ops.aten.view.default",
             "inputs": [{"name": "self", "arg": {"as_tensor": {"name": "x"}}},
                        {"name": "size", "arg": {"as_sym_ints": [
                            {"as_name": "sym_size_int_0"}, {"as_name": "sym_size_int_1"},
                            {"as_int": -1}]}}],
             "outputs": [{"as_tensor": {"name": "view"}}]}
          ],
          "tensor_values": {
            "x": {"dtype": 7, "sizes": [
                {"as_expr": {"expr_str": "Symbol('s77', positive=True, integer=True)"}},
                {"as_expr": {"expr_str": "Symbol('s27', positive=True, integer=True)"}},
                {"as_int": 4}],
              "strides": [
                {"as_expr": {"expr_str": "Mul(Integer(4), Symbol('s27', positive=True, integer=True))"}},
                {"as_int": 4}, {"as_int": 1}],
              "storage_offset": {"as_int": 0}, "device": {"type": "cpu"}, "layout": 0},
            "view": {"dtype": 7, "sizes": [
                {"as_expr": {"expr_str": "Symbol('s77', positive=True, integer=True)"}},
                {"as_expr": {"expr_str": "Symbol('s27', positive=True, integer=True)"}},
                {"as_int": 4}],
              "strides": [], "storage_offset": {"as_int": 0}, "device": {"type": "cpu"}, "layout": 0}
          },
          "sym_int_values": {
            "sym_size_int_0": {"as_expr": {"expr_str": "Symbol('s77', positive=True, integer=True)"}},
            "sym_size_int_1": {"as_expr": {"expr_str": "Symbol('s27', positive=True, integer=True)"}}
          }
        },
        "signature": {"input_specs": [], "output_specs": []}
      },
      "range_constraints": {"s77": {"min_val": 1, "max_val": null},
                            "s27": {"min_val": 2, "max_val": 64}}
    }"#;

    #[test]
    fn a_fixed_symbol_becomes_literal_sizes_and_arguments() {
        let program: ExportedProgram = serde_json::from_str(PROGRAM).unwrap();
        let fixed = specialize(&program, &HashMap::from([("s27".to_owned(), 7)])).unwrap();
        let graph = &fixed.graph_module.graph;
        assert_eq!(graph.nodes.len(), 1, "the sym_size node is gone");
        let x = &graph.tensor_values["x"];
        assert_eq!(x.sizes[1], SymInt::Int(7));
        assert_eq!(x.strides[0], SymInt::Int(28));
        assert!(
            matches!(x.sizes[0], SymInt::Expr(_)),
            "the batch stays symbolic"
        );
        assert_eq!(
            graph.nodes[0].inputs[1].arg,
            Argument::SymInts(vec![
                SymInt::Name("sym_size_int_0".into()),
                SymInt::Int(7),
                SymInt::Int(-1)
            ])
        );
        assert!(!fixed.range_constraints.contains_key("s27"));
    }
}
