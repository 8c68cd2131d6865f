//! Matrix products over rows that a view merged, written over the unmerged tensor.
//!
//! transformers' `Conv1D` (GPT-2) computes `x.view(-1, D)`, `addmm(bias, rows, W)`,
//! `.view(B, S, E)`: the view merges the batch and the sequence into one dimension only to
//! run a 2-D product over it, and the last view splits them again. With a dynamic
//! sequence length that merged dimension is `B·S`, a product of two symbols that no
//! static Reshape can split back (the ONNX lowering follows one symbolic dimension, the
//! batch, and writes other sizes as `0`/`-1` entries, one per shape). A product over rows
//! is the same product over the unmerged tensor, so the pair of views is dropped:
//! `matmul(x, W)` (and `add(·, bias)` for `addmm`) on `[B, S, D]`.
//!
//! Only a view whose merged dimension's size mentions two or more symbols is rewritten
//! (read from torch.export's symbolic sizes), so programs the lowering already follows
//! are left as they are; every size is checked against the ones torch recorded.

use std::collections::HashMap;

use super::program::{Argument, Graph, NamedArgument, Node, SymInt};
use super::sym;

const VIEWS: [&str; 3] = [
    "torch.ops.aten.view.default",
    "torch.ops.aten.reshape.default",
    "torch.ops.aten._unsafe_view.default",
];
const ADDMM: &str = "torch.ops.aten.addmm.default";
const MM: &str = "torch.ops.aten.mm.default";
const MATMUL: &str = "torch.ops.aten.matmul.default";
const ADD: &str = "torch.ops.aten.add.Tensor";

/// Rewrites every `view(x, [-1, D])` → `addmm`/`mm` by a 2-D matrix → `view` back to
/// `x`'s leading sizes whose merged dimension is a product of several symbols, as the
/// module docs say. Returns how many products were rewritten.
pub fn unmerge_row_products(graph: &mut Graph) -> usize {
    unmerge_row_products_where(graph, is_symbol_product)
}

/// [`unmerge_row_products`] of every product whose merged dimension's size passes
/// `merged`: a trace converted at fixed sizes of its dynamic dimensions records `B·7`,
/// one symbol, where torch.export records `B·s`, so its importer passes any symbolic size
/// (the rewrite computes the same values whatever merged dimension it undoes).
pub fn unmerge_row_products_where(graph: &mut Graph, merged: fn(&SymInt) -> bool) -> usize {
    let mut rewritten = 0;
    while let Some(found) = find(graph, merged) {
        apply(graph, found);
        rewritten += 1;
    }
    rewritten
}

/// One product to rewrite: node indices and the names involved.
struct Found {
    product: usize,
    unmerge: usize,
    /// The tensor before the merging view.
    x: String,
}

fn tensor_arg<'n>(node: &'n Node, name: &str) -> Option<&'n str> {
    node.inputs
        .iter()
        .find(|a| a.name == name)
        .and_then(|a| a.arg.tensor_name())
}

fn output(node: &Node) -> Option<&str> {
    match node.outputs.as_slice() {
        [one] => one.tensor_name(),
        _ => None,
    }
}

/// Whether a scalar argument (`beta`, `alpha`) is absent or 1.
fn is_one(node: &Node, name: &str) -> bool {
    node.inputs.iter().find(|a| a.name == name).is_none_or(|a| {
        matches!(a.arg, Argument::Int(1)) || matches!(a.arg, Argument::Float(f) if f == 1.0)
    })
}

/// How many times each value is read (node arguments and graph outputs).
fn readers(graph: &Graph) -> HashMap<&str, usize> {
    let mut count: HashMap<&str, usize> = HashMap::new();
    for node in &graph.nodes {
        for input in &node.inputs {
            for name in input.arg.tensor_names() {
                *count.entry(name).or_default() += 1;
            }
        }
    }
    for out in &graph.outputs {
        for name in out.tensor_names() {
            *count.entry(name).or_default() += 1;
        }
    }
    count
}

fn is_symbol_product(size: &SymInt) -> bool {
    matches!(size, SymInt::Expr(e) if sym::symbols(e).len() >= 2)
}

fn find(graph: &Graph, merged_passes: fn(&SymInt) -> bool) -> Option<Found> {
    let readers = readers(graph);
    let sizes = |name: &str| graph.tensor_values.get(name).map(|m| &m.sizes);
    let producer: HashMap<&str, usize> = graph
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| output(n).map(|o| (o, i)))
        .collect();
    for (p, product) in graph.nodes.iter().enumerate() {
        if product.target != ADDMM && product.target != MM {
            continue;
        }
        let (Some(rows), Some(w), Some(out)) = (
            tensor_arg(product, "mat1"),
            tensor_arg(product, "mat2"),
            output(product),
        ) else {
            continue;
        };
        if product.target == ADDMM && !(is_one(product, "beta") && is_one(product, "alpha")) {
            continue;
        }
        let Some(&m) = producer.get(rows) else {
            continue;
        };
        let merge = &graph.nodes[m];
        let Some(x) = VIEWS
            .contains(&merge.target.as_str())
            .then(|| tensor_arg(merge, "self"))
            .flatten()
        else {
            continue;
        };
        let (Some(x_sizes), Some(rows_sizes), Some(w_sizes), Some(out_sizes)) =
            (sizes(x), sizes(rows), sizes(w), sizes(out))
        else {
            continue;
        };
        // `x` is [l0, …, lk-1, D], merged into [l0·…·lk-1, D] with several symbols.
        let ([merged, d], [w_d, e], [_, out_e]) = (
            rows_sizes.as_slice(),
            w_sizes.as_slice(),
            out_sizes.as_slice(),
        ) else {
            continue;
        };
        let Some((x_d, leading)) = x_sizes.split_last() else {
            continue;
        };
        if leading.len() < 2 || x_d != d || w_d != d || out_e != e || !merged_passes(merged) {
            continue;
        }
        if product.target == ADDMM {
            // The bias must broadcast along the rows: `[E]` or `[1, E]`.
            let bias_ok = tensor_arg(product, "self")
                .and_then(sizes)
                .is_some_and(|b| match b.as_slice() {
                    [] | [_] => true,
                    [one, _] => *one == SymInt::Int(1),
                    _ => false,
                });
            if !bias_ok {
                continue;
            }
        }
        // The product is read once, by a view back to `x`'s leading sizes.
        if readers.get(out) != Some(&1) {
            continue;
        }
        let Some(u) = graph
            .nodes
            .iter()
            .position(|n| VIEWS.contains(&n.target.as_str()) && tensor_arg(n, "self") == Some(out))
        else {
            continue;
        };
        let Some(unmerged) = output(&graph.nodes[u]).and_then(sizes) else {
            continue;
        };
        let Some((u_e, u_leading)) = unmerged.split_last() else {
            continue;
        };
        if u_leading != leading || u_e != e {
            continue;
        }
        return Some(Found {
            product: p,
            unmerge: u,
            x: x.to_owned(),
        });
    }
    None
}

fn apply(graph: &mut Graph, found: Found) {
    let product = &graph.nodes[found.product];
    let is_addmm = product.target == ADDMM;
    let bias = tensor_arg(product, "self").map(str::to_owned);
    let w = tensor_arg(product, "mat2").map(str::to_owned);
    let out = output(product).map(str::to_owned);
    let (Some(w), Some(out)) = (w, out) else {
        return;
    };
    let unmerged_sizes = output(&graph.nodes[found.unmerge])
        .and_then(|name| graph.tensor_values.get(name))
        .map(|m| m.sizes.clone());
    if let (Some(meta), Some(sizes)) = (graph.tensor_values.get_mut(&out), unmerged_sizes) {
        meta.sizes = sizes;
        meta.strides.clear();
    }
    let tensor = |name: &str, value: &str| NamedArgument {
        name: name.to_owned(),
        arg: Argument::Tensor(value.to_owned()),
    };
    let node = &mut graph.nodes[found.product];
    node.target = MATMUL.to_owned();
    node.inputs = vec![tensor("self", &found.x), tensor("other", &w)];
    // For `addmm` the view back becomes the bias added to the product, which already has
    // the view's sizes; for `mm` the view back now keeps the sizes it is given.
    if let (true, Some(bias)) = (is_addmm, bias) {
        let unmerge = &mut graph.nodes[found.unmerge];
        unmerge.target = ADD.to_owned();
        unmerge.inputs = vec![tensor("self", &out), tensor("other", &bias)];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::TensorMeta;

    fn sym(name: &str) -> SymInt {
        SymInt::Expr(format!("Symbol('{name}', positive=True, integer=True)"))
    }

    fn product_of(a: &str, b: &str) -> SymInt {
        SymInt::Expr(format!(
            "Mul(Symbol('{a}', positive=True, integer=True), Symbol('{b}', positive=True, integer=True))"
        ))
    }

    fn meta(sizes: Vec<SymInt>) -> TensorMeta {
        TensorMeta {
            dtype: 7,
            sizes,
            strides: Vec::new(),
            storage_offset: SymInt::Int(0),
        }
    }

    fn node(target: &str, inputs: Vec<(&str, Argument)>, out: &str) -> Node {
        Node {
            target: target.to_owned(),
            inputs: inputs
                .into_iter()
                .map(|(name, arg)| NamedArgument {
                    name: name.to_owned(),
                    arg,
                })
                .collect(),
            outputs: vec![Argument::Tensor(out.to_owned())],
            metadata: HashMap::new(),
            name: Some(out.to_owned()),
        }
    }

    fn t(name: &str) -> Argument {
        Argument::Tensor(name.to_owned())
    }

    /// GPT-2's Conv1D: `x [B, S, 4]` → `view [-1, 4]` → `addmm(bias, ·, w [4, 6])` →
    /// `view [B, S, 6]`, with the merged size `merged`.
    fn conv1d(merged: SymInt) -> Graph {
        let (b, s) = (sym("s0"), sym("s1"));
        Graph {
            inputs: vec![t("x")],
            outputs: vec![t("y")],
            nodes: vec![
                node(
                    VIEWS[0],
                    vec![("self", t("x")), ("size", Argument::Ints(vec![-1, 4]))],
                    "rows",
                ),
                node(
                    ADDMM,
                    vec![("self", t("bias")), ("mat1", t("rows")), ("mat2", t("w"))],
                    "addmm",
                ),
                node(
                    VIEWS[0],
                    vec![
                        ("self", t("addmm")),
                        (
                            "size",
                            Argument::SymInts(vec![
                                SymInt::Name("b".into()),
                                SymInt::Name("s".into()),
                                SymInt::Int(6),
                            ]),
                        ),
                    ],
                    "y",
                ),
            ],
            tensor_values: HashMap::from([
                ("x".into(), meta(vec![b.clone(), s.clone(), SymInt::Int(4)])),
                ("rows".into(), meta(vec![merged.clone(), SymInt::Int(4)])),
                ("w".into(), meta(vec![SymInt::Int(4), SymInt::Int(6)])),
                ("bias".into(), meta(vec![SymInt::Int(6)])),
                ("addmm".into(), meta(vec![merged, SymInt::Int(6)])),
                ("y".into(), meta(vec![b, s, SymInt::Int(6)])),
            ]),
            sym_int_values: HashMap::new(),
        }
    }

    #[test]
    fn a_product_over_rows_merging_batch_and_sequence_runs_on_the_unmerged_tensor() {
        let mut graph = conv1d(product_of("s0", "s1"));
        assert_eq!(unmerge_row_products(&mut graph), 1);
        let product = &graph.nodes[1];
        assert_eq!(product.target, MATMUL);
        assert_eq!(tensor_arg(product, "self"), Some("x"));
        assert_eq!(tensor_arg(product, "other"), Some("w"));
        assert_eq!(
            graph.tensor_values["addmm"].sizes,
            graph.tensor_values["y"].sizes
        );
        let add = &graph.nodes[2];
        assert_eq!(add.target, ADD);
        assert_eq!(tensor_arg(add, "self"), Some("addmm"));
        assert_eq!(tensor_arg(add, "other"), Some("bias"));
    }

    #[test]
    fn a_merge_the_lowering_follows_is_left_alone() {
        // `4·s0`: the batch times a fixed size, which the lowering carries as a factor.
        let merged =
            SymInt::Expr("Mul(Integer(4), Symbol('s0', positive=True, integer=True))".into());
        let mut graph = conv1d(merged);
        let before = graph.clone();
        assert_eq!(unmerge_row_products(&mut graph), 0);
        assert_eq!(graph, before);
    }

    #[test]
    fn a_product_read_elsewhere_or_scaled_is_left_alone() {
        let mut graph = conv1d(product_of("s0", "s1"));
        graph.outputs.push(t("addmm"));
        let before = graph.clone();
        assert_eq!(unmerge_row_products(&mut graph), 0);
        assert_eq!(graph, before);

        let mut graph = conv1d(product_of("s0", "s1"));
        graph.nodes[1].inputs.push(NamedArgument {
            name: "beta".into(),
            arg: Argument::Float(0.5),
        });
        let before = graph.clone();
        assert_eq!(unmerge_row_products(&mut graph), 0);
        assert_eq!(graph, before);
    }
}
