//! Removing wrapper prefixes (`module.`, `_orig_mod.`, …) from state-dict keys.

use std::collections::HashSet;

use crate::torch::state_dict::metadata_of;
use ckpt_pickle::{Graph, NodeId, Value};

use super::TransformError;

/// Prefixes that wrap a whole model: DataParallel/DDP (and EMA/SWA `AveragedModel`), and
/// `torch.compile`. Auto-detection strips one when at least half the keys carry it: `AveragedModel` adds a
/// bare `n_averaged` beside `module.*`, and a key that would collide must be reported, not
/// silently left behind.
pub const LEADING_WRAPPERS: [&str; 2] = ["module.", "_orig_mod."];

/// Wrapper segments FSDP and activation checkpointing insert at any depth
/// (`layer1._fsdp_wrapped_module.weight`); FSDP's own `clean_tensor_name` removes them anywhere.
pub const SEGMENT_WRAPPERS: [&str; 2] = ["_fsdp_wrapped_module.", "_checkpoint_wrapped_module."];

/// What to strip.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PrefixRule {
    /// Leading wrappers carried by at least half the keys (repeatedly: `module.module.`,
    /// `_orig_mod.module.`), stripped from the keys that carry them; then wrapper segments
    /// anywhere.
    Auto,
    /// Exactly these prefixes, from every key that starts with one, as
    /// `torch.nn.modules.utils.consume_prefix_in_state_dict_if_present` does.
    Explicit(Vec<String>),
}

/// What stripping would do to one key list: the prefixes removed, in order.
pub fn detect(keys: &[&str]) -> Vec<String> {
    plan(keys, &PrefixRule::Auto).0
}

/// The prefixes to remove and a function from old key to new key.
fn plan(keys: &[&str], rule: &PrefixRule) -> (Vec<String>, Vec<Step>) {
    let mut steps = Vec::new();
    let mut names = Vec::new();
    match rule {
        PrefixRule::Auto => {
            let mut current: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
            'strip: loop {
                for wrapper in LEADING_WRAPPERS {
                    let carrying = current.iter().filter(|k| k.starts_with(wrapper)).count();
                    if carrying > 0 && carrying * 2 >= current.len() {
                        for k in current.iter_mut().filter(|k| k.starts_with(wrapper)) {
                            k.drain(..wrapper.len());
                        }
                        steps.push(Step::Leading(wrapper.to_string()));
                        names.push(wrapper.to_string());
                        continue 'strip;
                    }
                }
                break;
            }
            for wrapper in SEGMENT_WRAPPERS {
                if current.iter().any(|k| has_segment(k, wrapper)) {
                    steps.push(Step::Segment(wrapper.to_string()));
                    names.push(wrapper.to_string());
                }
            }
        }
        PrefixRule::Explicit(prefixes) => {
            for prefix in prefixes {
                steps.push(Step::Leading(prefix.clone()));
                names.push(prefix.clone());
            }
        }
    }
    (names, steps)
}

#[derive(Clone, Debug)]
enum Step {
    Leading(String),
    Segment(String),
}

fn has_segment(key: &str, segment: &str) -> bool {
    key.starts_with(segment) || key.contains(&format!(".{segment}"))
}

fn remove_segment(key: &str, segment: &str) -> String {
    let inner = format!(".{segment}");
    let key = key.replace(&inner, ".");
    key.strip_prefix(segment).unwrap_or(&key).to_owned()
}

impl Step {
    /// The renamed tensor key, or `None` when the step does not apply.
    fn apply_key(&self, key: &str) -> Option<String> {
        match self {
            Step::Leading(p) => key.strip_prefix(p.as_str()).map(str::to_owned),
            Step::Segment(s) => has_segment(key, s).then(|| remove_segment(key, s)),
        }
    }

    /// The renamed `_metadata` key (module paths have no trailing dot: `module` → ``).
    fn apply_module_path(&self, path: &str) -> Option<String> {
        if path.is_empty() {
            return None;
        }
        match self {
            Step::Leading(p) => {
                let bare = p.trim_end_matches('.');
                if path == bare {
                    Some(String::new())
                } else {
                    path.strip_prefix(p.as_str()).map(str::to_owned)
                }
            }
            Step::Segment(s) => {
                let dotted = format!("{path}.");
                has_segment(&dotted, s)
                    .then(|| remove_segment(&dotted, s).trim_end_matches('.').to_owned())
            }
        }
    }
}

/// Strips prefixes from the state dict at `node` in place. Returns the prefixes removed.
///
/// Tensor keys keep their positions; `_metadata` entries are renamed exactly as
/// `consume_prefix_in_state_dict_if_present` renames them (popped and re-inserted), so
/// BatchNorm's version entries keep applying. Two keys that would become equal are an error
/// and leave the graph untouched.
pub fn strip_state_dict(
    graph: &mut Graph,
    node: NodeId,
    rule: &PrefixRule,
) -> Result<Vec<String>, TransformError> {
    let pairs = graph.mapping(node).map(<[_]>::to_vec).unwrap_or_default();
    let keys: Vec<String> = pairs
        .iter()
        .filter_map(|&(k, _)| graph.str(k).map(str::to_owned))
        .collect();
    let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let (names, steps) = plan(&key_refs, rule);
    if steps.is_empty() {
        return Ok(names);
    }

    let renamed: Vec<String> = keys
        .iter()
        .map(|k| {
            steps
                .iter()
                .fold(k.clone(), |k, step| step.apply_key(&k).unwrap_or(k))
        })
        .collect();
    let mut seen = HashSet::new();
    for (old, new) in keys.iter().zip(&renamed) {
        if !seen.insert(new.as_str()) {
            let other = keys
                .iter()
                .zip(&renamed)
                .find(|(o, n)| *n == new && *o != old)
                .map(|(o, _)| o.as_str())
                .unwrap_or(new);
            return Err(TransformError::Collision {
                first: other.to_owned(),
                second: old.clone(),
                renamed: new.clone(),
            });
        }
    }
    if renamed == keys {
        return Ok(Vec::new());
    }

    let new_pairs: Vec<(NodeId, NodeId)> = pairs
        .iter()
        .zip(keys.iter().zip(&renamed))
        .map(|(&(key_node, value), (old, new))| {
            if old == new {
                (key_node, value)
            } else {
                (graph.add(Value::Str(new.clone())), value)
            }
        })
        .collect();
    if let Some(items) = graph.mapping_mut(node) {
        *items = new_pairs;
    }
    if let Some(metadata) = metadata_of(graph, node) {
        for step in &steps {
            rename_metadata(graph, metadata, step);
        }
    }
    Ok(names)
}

/// One `consume_prefix_in_state_dict_if_present` pass over `_metadata`: each matching entry
/// is popped and set under its new name (updating in place if that name exists, else
/// appended).
fn rename_metadata(graph: &mut Graph, metadata: NodeId, step: &Step) {
    let Some(original) = graph.mapping(metadata).map(<[_]>::to_vec) else {
        return;
    };
    let mut pairs = original.clone();
    for (key_node, _) in original {
        let Some(key) = graph.str(key_node).map(str::to_owned) else {
            continue;
        };
        let Some(new_key) = step.apply_module_path(&key) else {
            continue;
        };
        let Some(index) = pairs.iter().position(|&(k, _)| k == key_node) else {
            continue;
        };
        let (_, value) = pairs.remove(index);
        match pairs
            .iter()
            .position(|&(k, _)| graph.str(k) == Some(new_key.as_str()))
        {
            Some(existing) => pairs[existing].1 = value,
            None => {
                let new_node = graph.add(Value::Str(new_key));
                pairs.push((new_node, value));
            }
        }
    }
    if let Some(items) = graph.mapping_mut(metadata) {
        *items = pairs;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_stacked_leading_wrappers() {
        assert_eq!(detect(&["module.a", "module.b"]), vec!["module."]);
        assert_eq!(
            detect(&["module.module.a", "module.module.b"]),
            vec!["module.", "module."]
        );
        assert_eq!(
            detect(&["_orig_mod.module.a", "_orig_mod.module.b"]),
            vec!["_orig_mod.", "module."]
        );
        assert!(detect(&["module.a", "b", "c"]).is_empty());
        assert_eq!(
            detect(&["module.a", "module.b", "n_averaged"]),
            vec!["module."],
            "AveragedModel"
        );
    }

    #[test]
    fn detects_fsdp_segments_anywhere() {
        assert_eq!(
            detect(&["layer._fsdp_wrapped_module.weight", "head.bias"]),
            vec!["_fsdp_wrapped_module."]
        );
        assert_eq!(
            remove_segment(
                "a._checkpoint_wrapped_module.b",
                "_checkpoint_wrapped_module."
            ),
            "a.b"
        );
    }

    #[test]
    fn module_paths_follow_consume_prefix() {
        let step = Step::Leading("module.".into());
        assert_eq!(step.apply_module_path("module"), Some(String::new()));
        assert_eq!(step.apply_module_path("module.conv1"), Some("conv1".into()));
        assert_eq!(step.apply_module_path(""), None);
        assert_eq!(step.apply_module_path("other"), None);
    }

    fn state_dict(graph: &mut Graph, keys: &[&str]) -> NodeId {
        let pairs = keys
            .iter()
            .map(|k| {
                let key = graph.add(Value::Str(k.to_string()));
                let value = graph.add(Value::None);
                (key, value)
            })
            .collect();
        graph.add(Value::Dict(pairs))
    }

    #[test]
    fn collision_is_an_error_and_changes_nothing() {
        let mut g = Graph::new();
        let sd = state_dict(&mut g, &["module.a", "a"]);
        let rule = PrefixRule::Explicit(vec!["module.".into()]);
        let err = strip_state_dict(&mut g, sd, &rule).expect_err("collision");
        assert!(err.to_string().contains("`a`"), "{err}");
        let keys: Vec<_> = g
            .mapping(sd)
            .unwrap_or(&[])
            .iter()
            .map(|&(k, _)| g.str(k))
            .collect();
        assert_eq!(keys, vec![Some("module.a"), Some("a")]);
    }

    #[test]
    fn explicit_prefix_strips_matching_keys_in_place() {
        let mut g = Graph::new();
        let sd = state_dict(&mut g, &["module.a", "b", "module.c"]);
        let rule = PrefixRule::Explicit(vec!["module.".into()]);
        strip_state_dict(&mut g, sd, &rule).expect("strip");
        let keys: Vec<_> = g
            .mapping(sd)
            .unwrap_or(&[])
            .iter()
            .map(|&(k, _)| g.str(k))
            .collect();
        assert_eq!(keys, vec![Some("a"), Some("b"), Some("c")]);
    }
}
