//! `F.embedding_bag` of 2-D ids, one bag per row, written over the rows.
//!
//! For ids of sizes `[rows, length]` (`nn.EmbeddingBag` in recommendation models, a row of
//! token ids per sample), `F.embedding_bag` calls the op on the ids flattened
//! (`reshape(ids, [-1])`), its per-sample weights flattened alike, and offsets
//! `arange(0, numel, length)`: a bag every `length` entries. Under a dynamic batch those
//! offsets are a range over the batch times the length, which no static graph computes,
//! and cutting a flat list into bags is a gather across samples; yet each bag is one row
//! of one sample. So the node is written as the ops torch computes one bag per row by
//! ([`expand::embedding_bag_rows`]): the lookup of the 2-D ids and a reduction along each
//! row, per sample. The flattening and the range are then read by nothing.
//!
//! A node is rewritten only when torch's record proves the bags are the rows: the offsets
//! are an `arange` from 0 by the rows' length with as many entries as there are rows, the
//! indices (and weights) a reshape to `[-1]` of a 2-D tensor of those sizes, the last
//! offset not included, and the op's other results (the bag of each entry, the bag sizes,
//! the max indices) read by nothing.

use std::collections::{HashMap, HashSet};

use super::expand;
use super::program::{Argument, Graph, Node, SymInt};

const BAGS: [&str; 2] = [
    "torch.ops.aten.embedding_bag.padding_idx",
    "torch.ops.aten.embedding_bag.default",
];
const FLATTENINGS: [&str; 2] = [
    "torch.ops.aten.reshape.default",
    "torch.ops.aten.view.default",
];
const RANGE: &str = "torch.ops.aten.arange.start_step";

/// `graph` with every `embedding_bag` node whose bags are the rows of 2-D ids rewritten,
/// as the module docs say, or `None` when there is none. An error is plain text (a bag
/// the writer cannot write).
pub fn one_bag_per_row(graph: &Graph) -> Result<Option<Graph>, String> {
    if find(graph).is_none() {
        return Ok(None);
    }
    let mut graph = graph.clone();
    while let Some((at, node)) = find(&graph) {
        let ids = match arg(&node, "indices") {
            Some(Argument::Tensor(ids)) => ids.clone(),
            _ => return Err("a bag's ids are not a tensor".into()),
        };
        let meta = |name: &str| graph.tensor_values.get(name).cloned();
        let expansion = expand::embedding_bag_rows(&node, &ids, &meta)?;
        graph.tensor_values.extend(expansion.values);
        graph.nodes.splice(at..=at, expansion.nodes);
    }
    Ok(Some(graph))
}

fn arg<'n>(node: &'n Node, name: &str) -> Option<&'n Argument> {
    node.inputs.iter().find(|a| a.name == name).map(|a| &a.arg)
}

/// The first bag node to rewrite: its index, and the node reading the 2-D ids (and
/// per-sample weights) in place of their flattenings, its offsets left out.
fn find(graph: &Graph) -> Option<(usize, Node)> {
    let producer: HashMap<&str, &Node> = graph
        .nodes
        .iter()
        .flat_map(|n| {
            n.outputs
                .iter()
                .flat_map(|o| o.tensor_names())
                .map(move |o| (o, n))
        })
        .collect();
    let read: HashSet<&str> = graph
        .nodes
        .iter()
        .flat_map(|n| n.inputs.iter().flat_map(|a| a.arg.tensor_names()))
        .chain(graph.outputs.iter().flat_map(|o| o.tensor_names()))
        .collect();
    let sizes = |name: &str| graph.tensor_values.get(name).map(|m| m.sizes.as_slice());
    // The 2-D tensor a value is the `[-1]` flattening of.
    let unflattened = |name: &str| -> Option<&str> {
        let node = producer.get(name)?;
        if !FLATTENINGS.contains(&node.target.as_str()) {
            return None;
        }
        let shape = node
            .inputs
            .iter()
            .find(|a| a.name == "shape" || a.name == "size")?;
        if !matches!(&shape.arg, Argument::Ints(s) if s == &[-1]) {
            return None;
        }
        match arg(node, "self")? {
            Argument::Tensor(two_d) if sizes(two_d)?.len() == 2 => Some(two_d.as_str()),
            _ => None,
        }
    };
    for (at, node) in graph.nodes.iter().enumerate() {
        if !BAGS.contains(&node.target.as_str()) {
            continue;
        }
        if matches!(arg(node, "include_last_offset"), Some(Argument::Bool(true))) {
            continue;
        }
        let others_read = node
            .outputs
            .iter()
            .skip(1)
            .flat_map(|o| o.tensor_names())
            .any(|o| read.contains(&o));
        if others_read {
            continue;
        }
        let (Some(Argument::Tensor(flat)), Some(Argument::Tensor(offsets))) =
            (arg(node, "indices"), arg(node, "offsets"))
        else {
            continue;
        };
        let Some(ids) = unflattened(flat) else {
            continue;
        };
        let Some([rows, SymInt::Int(length)]) = sizes(ids) else {
            continue;
        };
        let Some(range) = producer.get(offsets.as_str()) else {
            continue;
        };
        let from_zero_by_length = range.target == RANGE
            && matches!(arg(range, "start"), Some(Argument::Int(0)))
            && matches!(arg(range, "step"), Some(Argument::Int(s)) if s == length);
        if !from_zero_by_length || sizes(offsets) != Some(std::slice::from_ref(rows)) {
            continue;
        }
        let weights = match arg(node, "per_sample_weights") {
            None | Some(Argument::None) => None,
            Some(Argument::Tensor(w)) => match unflattened(w) {
                Some(w2) if sizes(w2) == sizes(ids) => Some(w2),
                _ => continue,
            },
            Some(_) => continue,
        };
        let mut rewritten = node.clone();
        for input in &mut rewritten.inputs {
            match (input.name.as_str(), weights) {
                ("indices", _) => input.arg = Argument::Tensor(ids.to_owned()),
                ("per_sample_weights", Some(w2)) => input.arg = Argument::Tensor(w2.to_owned()),
                _ => {}
            }
        }
        return Some((at, rewritten));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `F.embedding_bag` of `ids` `[4, 3]` as torch.export records it, with the offsets'
    /// step and length given, and the bag sizes read or not.
    fn program(step: i64, offsets: &str, read_bag_sizes: bool) -> Graph {
        let output = if read_bag_sizes { "bag_size" } else { "bag" };
        serde_json::from_str(&format!(
            r#"{{"inputs": [], "outputs": [{{"as_tensor": {{"name": "{output}"}}}}], "nodes": [
              {{"target": "torch.ops.aten.arange.start_step", "inputs": [
                {{"name": "start", "arg": {{"as_int": 0}}}},
                {{"name": "end", "arg": {{"as_int": 12}}}},
                {{"name": "step", "arg": {{"as_int": {step}}}}}],
               "outputs": [{{"as_tensor": {{"name": "offsets"}}}}]}},
              {{"target": "torch.ops.aten.reshape.default", "inputs": [
                {{"name": "self", "arg": {{"as_tensor": {{"name": "ids"}}}}}},
                {{"name": "shape", "arg": {{"as_ints": [-1]}}}}],
               "outputs": [{{"as_tensor": {{"name": "flat"}}}}]}},
              {{"target": "torch.ops.aten.embedding_bag.padding_idx", "inputs": [
                {{"name": "weight", "arg": {{"as_tensor": {{"name": "w"}}}}}},
                {{"name": "indices", "arg": {{"as_tensor": {{"name": "flat"}}}}}},
                {{"name": "offsets", "arg": {{"as_tensor": {{"name": "offsets"}}}}}},
                {{"name": "scale_grad_by_freq", "arg": {{"as_bool": false}}}},
                {{"name": "mode", "arg": {{"as_int": 1}}}},
                {{"name": "sparse", "arg": {{"as_bool": false}}}},
                {{"name": "per_sample_weights", "arg": {{"as_none": true}}}},
                {{"name": "include_last_offset", "arg": {{"as_bool": false}}}},
                {{"name": "padding_idx", "arg": {{"as_int": 1}}}}],
               "outputs": [{{"as_tensor": {{"name": "bag"}}}}, {{"as_tensor": {{"name": "offset2bag"}}}},
                           {{"as_tensor": {{"name": "bag_size"}}}}, {{"as_tensor": {{"name": "max_indices"}}}}]}}],
             "tensor_values": {{
               "w": {{"dtype": 7, "sizes": [{{"as_int": 9}}, {{"as_int": 4}}]}},
               "ids": {{"dtype": 5, "sizes": [{{"as_int": 4}}, {{"as_int": 3}}]}},
               "flat": {{"dtype": 5, "sizes": [{{"as_int": 12}}]}},
               "offsets": {{"dtype": 5, "sizes": [{{"as_int": {offsets}}}]}},
               "bag": {{"dtype": 7, "sizes": [{{"as_int": 4}}, {{"as_int": 4}}]}},
               "bag_size": {{"dtype": 5, "sizes": [{{"as_int": 4}}]}}}}}}"#
        ))
        .unwrap()
    }

    fn targets(graph: &Graph) -> Vec<&str> {
        graph
            .nodes
            .iter()
            .map(|n| n.target.trim_start_matches("torch.ops.aten."))
            .collect()
    }

    /// Offsets every row's length from 0, one per row: the bag is written over the rows,
    /// its lookup reading the 2-D ids, and the flattening and the range are left unread.
    #[test]
    fn bags_of_whole_rows_are_written_over_the_rows() {
        let graph = one_bag_per_row(&program(3, "4", false)).unwrap().unwrap();
        let names = targets(&graph);
        assert!(
            !names.iter().any(|t| t.starts_with("embedding_bag")),
            "{names:?}"
        );
        let lookup = graph
            .nodes
            .iter()
            .find(|n| n.target.ends_with("embedding.default"))
            .unwrap();
        assert_eq!(
            arg(lookup, "indices"),
            Some(&Argument::Tensor("ids".into()))
        );
        assert!(
            names.contains(&"ne.Scalar") && names.contains(&"div.Tensor"),
            "{names:?}"
        );
        let last = graph.nodes.last().unwrap();
        assert_eq!(last.outputs, [Argument::Tensor("bag".into())]);
    }

    /// Another step, offsets of another length, or a bag size read: the bags are not
    /// proven to be the rows, and the node is left as torch recorded it.
    #[test]
    fn bags_not_proven_to_be_rows_are_left() {
        for graph in [
            program(2, "4", false),
            program(3, "5", false),
            program(3, "4", true),
        ] {
            assert!(one_bag_per_row(&graph).unwrap().is_none());
        }
    }
}
