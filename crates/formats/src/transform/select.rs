//! Choosing which top-level entries a checkpoint keeps: `--extract`, `--keep`,
//! `--drop-optimizer`.
//!
//! Each function edits only the top-level mapping's item list (or, for [`extract`], returns a
//! new root); the kept values are the same nodes, so sharing, `_metadata` and every tensor stay
//! as they were. Storages that end up unreferenced are simply not written by the writer.

use ckpt_pickle::{Graph, NodeId, Value};

use super::TransformError;

/// Top-level keys that hold optimizer, learning-rate scheduler or AMP loss-scaler state in
/// common training loops (plain PyTorch, timm, Lightning, apex), which a release drops.
pub const TRAINING_STATE_KEYS: [&str; 15] = [
    "optimizer",
    "optimizers",
    "optimizer_states",
    "optimizer_state_dict",
    "scheduler",
    "lr_scheduler",
    "lr_schedulers",
    "scheduler_state_dict",
    "scaler",
    "amp",
    "grad_scaler",
    "amp_scaler",
    "scaler_state_dict",
    "native_amp_scaling_state",
    "amp_scaling_state",
];

/// The string keys of the top-level mapping, in order; an error if the root is not a mapping.
pub fn top_level_keys(graph: &Graph, root: NodeId) -> Result<Vec<String>, TransformError> {
    Ok(top_level(graph, root)?
        .iter()
        .filter_map(|&(k, _)| graph.str(k).map(str::to_owned))
        .collect())
}

/// The value under top-level `key`, to be written as the whole checkpoint
/// (`torch.save(ckpt[key])`). The value must be a mapping, and the graph is not modified.
pub fn extract(graph: &Graph, root: NodeId, key: &str) -> Result<NodeId, TransformError> {
    let node = graph
        .lookup(root, key)
        .ok_or_else(|| unknown_key(graph, root, key))?;
    if graph.mapping(node).is_none() {
        return Err(TransformError::Request(format!(
            "top-level key `{key}` holds a value of type `{}`, not a mapping",
            kind_name(graph, node)
        )));
    }
    Ok(node)
}

/// Keeps only the top-level entries named in `keys`, in their original order. A key that is
/// not there is an error listing the available keys, and leaves the graph untouched.
pub fn keep(graph: &mut Graph, root: NodeId, keys: &[String]) -> Result<(), TransformError> {
    let pairs = top_level(graph, root)?;
    if let Some(missing) = keys.iter().find(|k| graph.lookup(root, k).is_none()) {
        return Err(unknown_key(graph, root, missing));
    }
    let kept: Vec<(NodeId, NodeId)> = pairs
        .iter()
        .copied()
        .filter(|&(k, _)| graph.str(k).is_some_and(|k| keys.iter().any(|w| w == k)))
        .collect();
    set_top_level(graph, root, kept);
    Ok(())
}

/// Removes every top-level entry named in [`TRAINING_STATE_KEYS`]. Returns the keys removed,
/// in their original order (empty when there were none).
pub fn drop_training_state(graph: &mut Graph, root: NodeId) -> Result<Vec<String>, TransformError> {
    let pairs = top_level(graph, root)?;
    let is_training_state = |k: NodeId| {
        graph
            .str(k)
            .is_some_and(|k| TRAINING_STATE_KEYS.contains(&k))
    };
    let dropped: Vec<String> = pairs
        .iter()
        .filter(|&&(k, _)| is_training_state(k))
        .filter_map(|&(k, _)| graph.str(k).map(str::to_owned))
        .collect();
    if dropped.is_empty() {
        return Ok(dropped);
    }
    let kept = pairs
        .iter()
        .copied()
        .filter(|&(k, _)| !is_training_state(k))
        .collect();
    set_top_level(graph, root, kept);
    Ok(dropped)
}

fn top_level(graph: &Graph, root: NodeId) -> Result<Vec<(NodeId, NodeId)>, TransformError> {
    graph.mapping(root).map(<[_]>::to_vec).ok_or_else(|| {
        TransformError::Request(format!(
            "the checkpoint's top-level object is of type `{}`, not a mapping with keys",
            kind_name(graph, root)
        ))
    })
}

fn set_top_level(graph: &mut Graph, root: NodeId, pairs: Vec<(NodeId, NodeId)>) {
    if let Some(items) = graph.mapping_mut(root) {
        *items = pairs;
    }
}

fn unknown_key(graph: &Graph, root: NodeId, key: &str) -> TransformError {
    let available = top_level_keys(graph, root)
        .map(|keys| {
            keys.iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    TransformError::Request(format!(
        "there is no top-level key `{key}` (available: {available})"
    ))
}

fn kind_name(graph: &Graph, node: NodeId) -> &'static str {
    match graph.get(node) {
        Value::Object(_) if crate::torch::tensor::is_tensor_like(graph, node) => "tensor",
        other => other.kind(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint(graph: &mut Graph, keys: &[&str]) -> NodeId {
        let pairs = keys
            .iter()
            .map(|k| {
                let key = graph.add(Value::Str(k.to_string()));
                let value = graph.add(Value::Dict(Vec::new()));
                (key, value)
            })
            .collect();
        graph.add(Value::Dict(pairs))
    }

    fn keys(graph: &Graph, root: NodeId) -> Vec<String> {
        top_level_keys(graph, root).expect("mapping")
    }

    #[test]
    fn drop_removes_optimizer_scheduler_and_amp_keys_only() {
        let mut g = Graph::new();
        let root = checkpoint(
            &mut g,
            &[
                "epoch",
                "state_dict",
                "optimizer",
                "lr_scheduler",
                "amp",
                "native_amp_scaling_state",
            ],
        );
        let dropped = drop_training_state(&mut g, root).expect("drop");
        assert_eq!(
            dropped,
            [
                "optimizer",
                "lr_scheduler",
                "amp",
                "native_amp_scaling_state"
            ]
        );
        assert_eq!(keys(&g, root), ["epoch", "state_dict"]);
    }

    #[test]
    fn drop_without_training_state_changes_nothing() {
        let mut g = Graph::new();
        let root = checkpoint(&mut g, &["a", "b"]);
        assert!(drop_training_state(&mut g, root).expect("drop").is_empty());
        assert_eq!(keys(&g, root), ["a", "b"]);
    }

    #[test]
    fn keep_preserves_original_order() {
        let mut g = Graph::new();
        let root = checkpoint(&mut g, &["a", "b", "c"]);
        keep(&mut g, root, &["c".into(), "a".into()]).expect("keep");
        assert_eq!(keys(&g, root), ["a", "c"]);
    }

    #[test]
    fn keep_of_unknown_key_lists_available_keys_and_changes_nothing() {
        let mut g = Graph::new();
        let root = checkpoint(&mut g, &["a", "b"]);
        let err = keep(&mut g, root, &["a".into(), "zz".into()]).expect_err("unknown");
        assert_eq!(
            err.to_string(),
            "there is no top-level key `zz` (available: `a`, `b`)"
        );
        assert_eq!(keys(&g, root), ["a", "b"]);
    }

    #[test]
    fn extract_returns_the_mapping_and_refuses_scalars_and_unknown_keys() {
        let mut g = Graph::new();
        let root = checkpoint(&mut g, &["state_dict"]);
        let key = g.add(Value::Str("epoch".into()));
        let value = g.add(Value::Int(3));
        if let Some(items) = g.mapping_mut(root) {
            items.push((key, value));
        }
        let sd = g.lookup(root, "state_dict");
        assert_eq!(extract(&g, root, "state_dict").ok(), sd);
        let err = extract(&g, root, "epoch").expect_err("scalar");
        assert!(err.to_string().contains("of type `int`"), "{err}");
        assert!(extract(&g, root, "model").is_err());
    }

    #[test]
    fn selection_on_a_non_mapping_root_is_an_error() {
        let mut g = Graph::new();
        let root = g.add(Value::List(Vec::new()));
        assert!(drop_training_state(&mut g, root).is_err());
        assert!(keep(&mut g, root, &["a".into()]).is_err());
    }
}
