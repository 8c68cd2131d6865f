//! The ONNX names of a program's outputs. One output is named `--output-name` (default
//! `output`); the outputs of a model returning a dict (torchvision segmentation models'
//! `{"out": …, "aux": …}`) are named after its keys; any other structure (a tuple, a list,
//! nested containers) gives `<output-name>_0`, `<output-name>_1`, … in the order the
//! program flattens them.
//!
//! The structure is read from the program's output pytree spec (torch.export's
//! `module_call_graph`, or the spec the TorchScript import writes for a returned tuple or
//! dict); a program without one is treated as a tuple when it has several outputs.
//!
//! An output that is `None` (torchaudio's wav2vec2 returns `(logits, None)` without
//! lengths) has no ONNX value: it is left out, as `torch.onnx.export` leaves it out, and
//! the names are given to the outputs that remain (`(logits, None)` gives one output,
//! named `--output-name`; a dict with several tensors left keeps their keys).

use serde_json::Value as Json;

/// The ONNX name of each output the program returns that is written (`written[k]`: its
/// `k`-th output is a tensor, not `None`), given the program's serialized output spec.
/// Invariant: the result has one entry per `true` in `written`.
pub fn names(out_spec: Option<&str>, written: &[bool], output_name: &str) -> Vec<String> {
    let count = written.iter().filter(|&&w| w).count();
    if count == 1 {
        return vec![output_name.to_owned()];
    }
    match out_spec.and_then(dict_keys) {
        Some(keys) if keys.len() == written.len() => keys
            .into_iter()
            .zip(written)
            .filter_map(|(key, &w)| w.then_some(key))
            .collect(),
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
        assert_eq!(names(Some(LEAF), &[true], "logits"), ["logits"]);
        assert_eq!(names(Some(FCN), &[true; 2], "output"), ["out", "aux"]);
        assert_eq!(names(None, &[true; 2], "output"), ["output_0", "output_1"]);
        let tuple = r#"[1, {"type": "builtins.tuple", "context": "null", "children_spec": []}]"#;
        assert_eq!(names(Some(tuple), &[true; 3], "y"), ["y_0", "y_1", "y_2"]);
        // A dict holding a tuple flattens to more outputs than keys: numbered.
        let nested = r#"[1, {"type": "builtins.dict", "context": "[\"a\"]", "children_spec": [{"type": "builtins.tuple", "context": "null", "children_spec": [{"type": null, "context": null, "children_spec": []}, {"type": null, "context": null, "children_spec": []}]}]}]"#;
        assert_eq!(
            names(Some(nested), &[true; 2], "output"),
            ["output_0", "output_1"]
        );
        assert_eq!(names(Some("not json"), &[true; 2], "o"), ["o_0", "o_1"]);
    }

    #[test]
    fn a_none_output_is_left_out_and_the_rest_keep_their_names() {
        let pair = r#"[1, {"type": "builtins.tuple", "context": "null", "children_spec": []}]"#;
        assert_eq!(names(Some(pair), &[true, false], "logits"), ["logits"]);
        assert_eq!(names(Some(pair), &[true, false, true], "y"), ["y_0", "y_1"]);
        // One tensor left is named `--output-name`, as a model returning one tensor.
        assert_eq!(names(Some(FCN), &[false, true], "output"), ["output"]);
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
