//! Which mappings in a checkpoint are state dicts.

use std::collections::HashSet;

use ckpt_pickle::{Graph, NodeId, Value, MAX_DEPTH};

use super::tensor::is_tensor_like;
use super::TorchError;

/// Whether `node` is a state-dict-like mapping: a non-empty mapping with string keys whose
/// values are all tensors or parameters (an `…_extra_state` entry may hold anything).
pub fn is_state_dict(graph: &Graph, node: NodeId) -> bool {
    let Some(pairs) = graph.mapping(node) else {
        return false;
    };
    let mut tensors = 0;
    for &(key, value) in pairs {
        let Some(key) = graph.str(key) else {
            return false;
        };
        if is_tensor_like(graph, value) {
            tensors += 1;
        } else if !key.ends_with("_extra_state") {
            return false;
        }
    }
    tensors > 0
}

/// Every state-dict-like mapping reachable from `root`, outermost first. The walk does not
/// descend into state dicts, tensors, or mappings keyed by integers (an optimizer's `state`,
/// whose per-parameter entries such as `{'momentum_buffer': t}` are not model state).
pub fn find_state_dicts(graph: &Graph, root: NodeId) -> Result<Vec<NodeId>, TorchError> {
    let mut found = Vec::new();
    let mut visited = HashSet::new();
    let mut stack = vec![(root, 0usize)];
    while let Some((id, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(TorchError::TooDeep);
        }
        if !visited.insert(id) || is_tensor_like(graph, id) {
            continue;
        }
        if is_state_dict(graph, id) {
            found.push(id);
            continue;
        }
        if is_keyed_by_integers(graph, id) {
            continue;
        }
        let children = graph.get(id).children();
        stack.extend(children.into_iter().rev().map(|c| (c, depth + 1)));
    }
    Ok(found)
}

/// The `_metadata` mapping attached to a state dict by `BUILD` (module versions), if any.
pub fn metadata_of(graph: &Graph, state_dict: NodeId) -> Option<NodeId> {
    match graph.get(state_dict) {
        Value::Object(object) => graph.lookup(object.state?, "_metadata"),
        _ => None,
    }
}

fn is_keyed_by_integers(graph: &Graph, node: NodeId) -> bool {
    match graph.mapping(node) {
        Some(pairs) if !pairs.is_empty() => pairs.iter().all(|&(k, _)| graph.int(k).is_some()),
        _ => false,
    }
}
