//! The ONNX names of a program's outputs. One output is named `--output-name` (default
//! `output`); the outputs of a model returning a dict (torchvision segmentation models'
//! `{"out": …, "aux": …}`) are named after its keys; any other structure (a tuple, a list,
//! nested containers) gives `<output-name>_0`, `<output-name>_1`, … in the order the
//! program flattens them.
//!
//! The structure is read from the program's output pytree spec (torch.export's
//! `module_call_graph`, or the spec the TorchScript import writes for a returned tuple or
//! dict); a program without one is treated as a tuple when it has several outputs.

use serde_json::Value as Json;

/// The ONNX name of each of `count` outputs, given the program's serialized output spec.
/// Invariant: the result has `count` entries.
pub fn names(out_spec: Option<&str>, count: usize, output_name: &str) -> Vec<String> {
    if count == 1 {
        return vec![output_name.to_owned()];
    }
    match out_spec.and_then(dict_keys) {
        Some(keys) if keys.len() == count => keys,
        _ => (0..count).map(|i| format!("{output_name}_{i}")).collect(),
    }
}

/// The keys of a spec that is one flat dict of tensors (every child a leaf), else `None`.
fn dict_keys(out_spec: &str) -> Option<Vec<String>> {
    // `treespec_dumps` writes `[protocol, tree]`.
    let spec: Json = serde_json::from_str(out_spec).ok()?;
    let tree = spec.get(1)?;
    let kind = tree.get("type")?.as_str()?;
    if !matches!(kind, "builtins.dict" | "collections.OrderedDict") {
        return None;
    }
    let children = tree.get("children_spec")?.as_array()?;
    let all_leaves = children
        .iter()
        .all(|c| c.get("type").is_some_and(Json::is_null));
    // The context is itself JSON text: the list of keys.
    let context: Json = serde_json::from_str(tree.get("context")?.as_str()?).ok()?;
    let keys = context
        .as_array()?
        .iter()
        .map(|k| k.as_str().map(str::to_owned))
        .collect::<Option<Vec<_>>>()?;
    (all_leaves && keys.len() == children.len()).then_some(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FCN: &str = r#"[1, {"type": "collections.OrderedDict", "context": "[\"out\", \"aux\"]", "children_spec": [{"type": null, "context": null, "children_spec": []}, {"type": null, "context": null, "children_spec": []}]}]"#;
    const LEAF: &str = r#"[1, {"type": null, "context": null, "children_spec": []}]"#;

    #[test]
    fn one_output_keeps_its_name_dicts_use_keys_others_number() {
        assert_eq!(names(Some(LEAF), 1, "logits"), ["logits"]);
        assert_eq!(names(Some(FCN), 2, "output"), ["out", "aux"]);
        assert_eq!(names(None, 2, "output"), ["output_0", "output_1"]);
        let tuple = r#"[1, {"type": "builtins.tuple", "context": "null", "children_spec": []}]"#;
        assert_eq!(names(Some(tuple), 3, "y"), ["y_0", "y_1", "y_2"]);
        // A dict holding a tuple flattens to more outputs than keys: numbered.
        let nested = r#"[1, {"type": "builtins.dict", "context": "[\"a\"]", "children_spec": [{"type": "builtins.tuple", "context": "null", "children_spec": [{"type": null, "context": null, "children_spec": []}, {"type": null, "context": null, "children_spec": []}]}]}]"#;
        assert_eq!(names(Some(nested), 2, "output"), ["output_0", "output_1"]);
        assert_eq!(names(Some("not json"), 2, "o"), ["o_0", "o_1"]);
    }

    #[test]
    fn dict_keys_are_read_only_from_flat_dicts() {
        assert_eq!(
            dict_keys(FCN),
            Some(vec!["out".to_owned(), "aux".to_owned()])
        );
        assert_eq!(dict_keys(LEAF), None);
    }
}
