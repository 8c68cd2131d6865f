//! Inlining higher-order ops: torch.export keeps a region of the forward that changes a mode
//! as one node holding the region's body as a subgraph. `wrap_with_autocast` with autocast
//! disabled (a region forced to run in the dtypes it states, as timm's EfficientViT
//! attention does) computes exactly its body, so the body's nodes replace the node: the
//! body's inputs become the node's operands, its outputs the node's outputs, and every
//! other value it makes is renamed under the node's name (bodies reuse names like
//! `matmul`). A region with autocast enabled is left as it is; the lowering refuses it.
//! `wrap_with_set_grad_enabled` (a region under `torch.no_grad()`, timm's rotary
//! embeddings) is inlined whatever the mode: gradient tracking changes no value the
//! forward computes.

use std::collections::HashMap;

use super::program::{Argument, Graph, Node, SymInt};

/// The higher-order op of an autocast region.
pub const WRAP_WITH_AUTOCAST: &str = "torch.ops.higher_order.wrap_with_autocast";

/// The higher-order op of a region that turns gradient tracking on or off.
pub const WRAP_WITH_SET_GRAD_ENABLED: &str = "torch.ops.higher_order.wrap_with_set_grad_enabled";

/// How deep bodies may nest (a hostile program cannot recurse without bound).
const MAX_DEPTH: usize = 8;

/// Replaces every `wrap_with_autocast` node of `graph` (and of the bodies it inlines) that
/// disables autocast, and every `wrap_with_set_grad_enabled` node, by its body. Errors are plain text naming the node.
pub fn inline_higher_order(graph: &mut Graph) -> Result<(), String> {
    inline_at(graph, 0)
}

fn inline_at(graph: &mut Graph, depth: usize) -> Result<(), String> {
    if !graph.nodes.iter().any(is_inlined) {
        return Ok(());
    }
    if depth >= MAX_DEPTH {
        return Err(format!("higher-order ops nest more than {MAX_DEPTH} deep"));
    }
    let nodes = std::mem::take(&mut graph.nodes);
    for node in nodes {
        if !is_inlined(&node) {
            graph.nodes.push(node);
            continue;
        }
        let label = node.label().to_owned();
        let (mut body, operands) =
            body_and_operands(&node).map_err(|e| format!("node `{label}`: {e}"))?;
        inline_at(&mut body, depth + 1)?;
        splice(graph, &node, body, &operands).map_err(|e| format!("node `{label}`: {e}"))?;
    }
    Ok(())
}

/// Whether `node` is an autocast region with autocast disabled (its third argument) or a
/// gradient-mode region.
fn is_inlined(node: &Node) -> bool {
    node.target == WRAP_WITH_SET_GRAD_ENABLED
        || node.target == WRAP_WITH_AUTOCAST
            && matches!(
                node.inputs.get(2).map(|a| &a.arg),
                Some(Argument::Bool(false))
            )
}

/// The body and the operand names of a region:
/// `wrap_with_autocast(device_type, dtype, enabled, cache_enabled, body, *operands)`,
/// `wrap_with_set_grad_enabled(enabled, body, *operands)`. Operands are tensors and
/// symbolic sizes.
fn body_and_operands(node: &Node) -> Result<(Graph, Vec<String>), String> {
    let at = if node.target == WRAP_WITH_AUTOCAST {
        4
    } else {
        1
    };
    let Some(Argument::Graph(body)) = node.inputs.get(at).map(|a| &a.arg) else {
        return Err(format!("argument {at} is not the region's body"));
    };
    let operands = node.inputs[at + 1..]
        .iter()
        .map(|a| {
            value_name(&a.arg)
                .map(str::to_owned)
                .ok_or_else(|| format!("an operand is {}, not a tensor or a size", a.arg.kind()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(((**body).clone(), operands))
}

/// The name of a tensor or symbolic-size argument.
fn value_name(arg: &Argument) -> Option<&str> {
    match arg {
        Argument::Tensor(name) | Argument::SymInt(SymInt::Name(name)) => Some(name),
        _ => None,
    }
}

/// Appends `body`'s nodes to `graph` in place of `node`, renamed (see the module docs).
fn splice(graph: &mut Graph, node: &Node, body: Graph, operands: &[String]) -> Result<(), String> {
    let inputs: Vec<&str> = body.inputs.iter().filter_map(value_name).collect();
    if inputs.len() != body.inputs.len() || inputs.len() != operands.len() {
        return Err(format!(
            "its body takes {} inputs for {} tensor operands",
            body.inputs.len(),
            operands.len()
        ));
    }
    let results: Vec<&str> = body
        .outputs
        .iter()
        .filter_map(Argument::tensor_name)
        .collect();
    let outputs: Vec<&str> = node
        .outputs
        .iter()
        .filter_map(Argument::tensor_name)
        .collect();
    if results.len() != body.outputs.len() || results.len() != outputs.len() {
        return Err(format!(
            "its body returns {} values for {} tensor outputs",
            body.outputs.len(),
            node.outputs.len()
        ));
    }
    let mut renamed: HashMap<String, String> = inputs
        .iter()
        .zip(operands)
        .map(|(inner, outer)| ((*inner).to_owned(), outer.clone()))
        .chain(
            results
                .iter()
                .zip(&outputs)
                .map(|(inner, outer)| ((*inner).to_owned(), (*outer).to_owned())),
        )
        .collect();
    let prefix = node.label();
    for inner in &body.nodes {
        for output in &inner.outputs {
            for name in made(output) {
                renamed
                    .entry(name.to_owned())
                    .or_insert_with(|| format!("{prefix}.{name}"));
            }
        }
    }
    let rename = |name: &str| {
        renamed
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_owned())
    };
    for (name, meta) in body.tensor_values {
        graph.tensor_values.entry(rename(&name)).or_insert(meta);
    }
    for (name, value) in body.sym_int_values {
        graph.sym_int_values.entry(rename(&name)).or_insert(value);
    }
    for mut inner in body.nodes {
        for input in &mut inner.inputs {
            rename_argument(&mut input.arg, &rename);
        }
        for output in &mut inner.outputs {
            rename_argument(output, &rename);
        }
        inner.name = inner.name.as_deref().map(|name| format!("{prefix}.{name}"));
        graph.nodes.push(inner);
    }
    Ok(())
}

/// The value names an output argument makes.
fn made(output: &Argument) -> Vec<&str> {
    match output {
        Argument::SymInt(SymInt::Name(name)) => vec![name],
        other => other.tensor_names(),
    }
}

fn rename_argument(arg: &mut Argument, rename: &impl Fn(&str) -> String) {
    match arg {
        Argument::Tensor(name) | Argument::SymInt(SymInt::Name(name)) => *name = rename(name),
        Argument::Tensors(names) => names.iter_mut().for_each(|n| *n = rename(n)),
        Argument::OptionalTensors(names) => {
            names.iter_mut().flatten().for_each(|n| *n = rename(n));
        }
        Argument::SymInts(sizes) => sizes.iter_mut().for_each(|size| {
            if let SymInt::Name(name) = size {
                *name = rename(name);
            }
        }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `relu(x)`, then an autocast-off region computing `matmul(a, b)` into `y`, then
    /// `matmul(y, x)` outside: the body's `matmul` must not clash with the outer one.
    fn program(enabled: bool) -> Graph {
        serde_json::from_str(&format!(
            r#"{{"inputs": [], "outputs": [{{"as_tensor": {{"name": "matmul"}}}}], "nodes": [
              {{"target": "torch.ops.aten.relu.default", "name": "relu",
                "inputs": [{{"name": "self", "arg": {{"as_tensor": {{"name": "x"}}}}}}],
                "outputs": [{{"as_tensor": {{"name": "relu"}}}}]}},
              {{"target": "{WRAP_WITH_AUTOCAST}", "name": "wrap",
                "inputs": [
                  {{"name": "", "arg": {{"as_string": "cpu"}}}},
                  {{"name": "", "arg": {{"as_none": true}}}},
                  {{"name": "", "arg": {{"as_bool": {enabled}}}}},
                  {{"name": "", "arg": {{"as_bool": false}}}},
                  {{"name": "", "arg": {{"as_graph": {{"name": "submod_1", "graph": {{
                    "inputs": [{{"as_tensor": {{"name": "a"}}}}],
                    "outputs": [{{"as_tensor": {{"name": "to"}}}}],
                    "nodes": [
                      {{"target": "torch.ops.aten.matmul.default", "name": "matmul",
                        "inputs": [{{"name": "self", "arg": {{"as_tensor": {{"name": "a"}}}}}},
                                   {{"name": "other", "arg": {{"as_tensor": {{"name": "a"}}}}}}],
                        "outputs": [{{"as_tensor": {{"name": "matmul"}}}}]}},
                      {{"target": "torch.ops.aten.to.dtype", "name": "to",
                        "inputs": [{{"name": "self", "arg": {{"as_tensor": {{"name": "matmul"}}}}}},
                                   {{"name": "dtype", "arg": {{"as_scalar_type": 7}}}}],
                        "outputs": [{{"as_tensor": {{"name": "to"}}}}]}}]}}}}}}}},
                  {{"name": "", "arg": {{"as_tensor": {{"name": "relu"}}}}}}],
                "outputs": [{{"as_tensor": {{"name": "getitem"}}}}]}},
              {{"target": "torch.ops.aten.matmul.default", "name": "matmul",
                "inputs": [{{"name": "self", "arg": {{"as_tensor": {{"name": "getitem"}}}}}},
                           {{"name": "other", "arg": {{"as_tensor": {{"name": "x"}}}}}}],
                "outputs": [{{"as_tensor": {{"name": "matmul"}}}}]}}]}}"#
        ))
        .unwrap()
    }

    fn reads(node: &Node) -> Vec<&str> {
        node.inputs
            .iter()
            .flat_map(|a| a.arg.tensor_names())
            .collect()
    }

    #[test]
    fn an_autocast_off_region_is_replaced_by_its_renamed_body() {
        let mut graph = program(false);
        inline_higher_order(&mut graph).unwrap();
        let targets: Vec<&str> = graph.nodes.iter().map(|n| n.target.as_str()).collect();
        assert_eq!(
            targets,
            [
                "torch.ops.aten.relu.default",
                "torch.ops.aten.matmul.default",
                "torch.ops.aten.to.dtype",
                "torch.ops.aten.matmul.default"
            ]
        );
        assert_eq!(reads(&graph.nodes[1]), ["relu", "relu"]);
        assert_eq!(graph.nodes[1].outputs[0].tensor_name(), Some("wrap.matmul"));
        assert_eq!(reads(&graph.nodes[2]), ["wrap.matmul"]);
        assert_eq!(graph.nodes[2].outputs[0].tensor_name(), Some("getitem"));
        assert_eq!(reads(&graph.nodes[3]), ["getitem", "x"]);
    }

    #[test]
    fn an_autocast_on_region_is_left_for_the_lowering_to_refuse() {
        let mut graph = program(true);
        inline_higher_order(&mut graph).unwrap();
        assert_eq!(graph.nodes[1].target, WRAP_WITH_AUTOCAST);
    }
}
