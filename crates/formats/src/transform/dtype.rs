//! Casting floating-point tensors to another dtype (`--dtype`): the graph half of the only
//! operation that changes tensor bytes. The bytes half is the [`StoragePlan`] this returns,
//! which the writer carries out.
//!
//! What is cast: the floating-point tensors of every state dict ([`find_state_dicts`]), and
//! with [`CastScope::WithOptimizer`] those under the optimizer's top-level keys too (except
//! `step` counters, which torch's `Optimizer.load_state_dict` never casts either). Integer and
//! bool tensors (`num_batches_tracked`), complex and quantized tensors, and everything that is
//! not a tensor are untouched.
//!
//! A storage is cast whole and elementwise, so every view keeps its offset and strides and
//! only the storage type in the persistent id changes (`FloatStorage` → `HalfStorage`, still
//! `_rebuild_tensor_v2`). A storage holding both a tensor that is cast and one that is not
//! cannot be cast: that is an error.

use std::collections::{BTreeMap, HashSet};

use crate::torch::save::{Cast, StoragePlan};
use crate::torch::state_dict::find_state_dicts;
use crate::torch::{scan, DType, Rebuild, Scan, TorchError};
use ckpt_pickle::{Global, Graph, NodeId, Value, MAX_DEPTH};

use super::TransformError;

/// Top-level keys holding optimizer state, cast only with [`CastScope::WithOptimizer`].
pub const OPTIMIZER_KEYS: [&str; 4] = [
    "optimizer",
    "optimizers",
    "optimizer_states",
    "optimizer_state_dict",
];

/// Which tensors a cast covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CastScope {
    /// Model state dicts only.
    Model,
    /// Model state dicts and optimizer state.
    WithOptimizer,
}

/// What a cast changed.
#[derive(Debug, Default, PartialEq)]
pub struct CastDone {
    /// Tensors whose dtype changed.
    pub tensors: usize,
    /// The storages to re-encode, for the writer.
    pub plan: StoragePlan,
}

/// Casts the floating-point tensors in `scope` to `to` (float32, float16 or bfloat16; float64
/// also works). Tensors already of dtype `to` are left alone. On error the graph is untouched.
pub fn cast_floating(
    graph: &mut Graph,
    root: NodeId,
    to: DType,
    scope: CastScope,
) -> Result<CastDone, TransformError> {
    if !(Cast { from: to, to }).is_supported() {
        return Err(TransformError::Request(format!(
            "cannot cast to {to}: the target must be float32, float16 or bfloat16"
        )));
    }
    let found = scan(graph, root)?;
    let optimizer_roots: Vec<NodeId> = OPTIMIZER_KEYS
        .iter()
        .filter_map(|k| graph.lookup(root, k))
        .collect();
    let optimizer_nodes = reachable(graph, &optimizer_roots)?;

    // (tensor node, the key it was found under), in encounter order.
    let mut selected: Vec<(NodeId, String)> = Vec::new();
    for sd in find_state_dicts(graph, root)? {
        if optimizer_nodes.contains(&sd) {
            continue;
        }
        for &(key, value) in graph.mapping(sd).unwrap_or(&[]) {
            let label = graph.str(key).unwrap_or("?").to_owned();
            for tensor in tensors_under(graph, &found, value, false)? {
                selected.push((tensor, label.clone()));
            }
        }
    }
    if scope == CastScope::WithOptimizer {
        for (&root_node, key) in optimizer_roots.iter().zip(OPTIMIZER_KEYS) {
            for tensor in tensors_under(graph, &found, root_node, true)? {
                selected.push((tensor, format!("{key} state")));
            }
        }
    }

    let mut casts: BTreeMap<&str, (DType, &str)> = BTreeMap::new();
    let mut cast_nodes = HashSet::new();
    for (node, label) in &selected {
        let Some(tensor) = found.tensor_at(*node) else {
            continue;
        };
        if !tensor.dtype.is_floating_point() || tensor.dtype == to {
            continue;
        }
        let cast = Cast {
            from: tensor.dtype,
            to,
        };
        if !cast.is_supported() {
            return Err(TransformError::Request(format!(
                "cannot cast `{label}` from {} to {to}: only float64, float32, float16 and bfloat16 tensors can be cast",
                tensor.dtype
            )));
        }
        if !matches!(tensor.rebuild, Rebuild::V1 | Rebuild::V2 | Rebuild::Npu) {
            return Err(TransformError::Request(format!(
                "cannot cast `{label}`: its {} storage is untyped (_rebuild_tensor_v3)",
                tensor.dtype
            )));
        }
        cast_nodes.insert(*node);
        casts.insert(tensor.storage.key.as_str(), (tensor.dtype, label.as_str()));
    }
    if let Some(other) = found
        .tensors
        .iter()
        .find(|t| casts.contains_key(t.storage.key.as_str()) && !cast_nodes.contains(&t.node))
    {
        let (_, label) = casts[other.storage.key.as_str()];
        return Err(TransformError::Request(format!(
            "storage `{}` is shared by `{label}`, which would be cast to {to}, and a {} tensor that would not \
             (optimizer state or a tensor outside the state dicts); a storage can only be cast whole",
            other.storage.key, other.dtype
        )));
    }

    // A cast that changes nothing while model tensors of another dtype exist outside every
    // state dict ckpt recognises must not report success (a container it could not read).
    if cast_nodes.is_empty() {
        let missed = found
            .tensors
            .iter()
            .filter(|t| t.dtype.is_floating_point() && t.dtype != to)
            .filter(|t| !optimizer_nodes.contains(&t.node))
            .count();
        if missed > 0 {
            return Err(TransformError::Request(format!(
                "a cast to {to} reaches none of the file's {missed} floating-point tensors of \
                 another dtype: none is in a state dict ckpt recognises (`ckpt inspect` shows \
                 where they are)"
            )));
        }
    }

    let mut plan = StoragePlan::copy_all();
    for (key, &(from, _)) in &casts {
        plan.cast(key, from, to);
    }
    for storage in found
        .storages
        .iter()
        .filter(|s| casts.contains_key(s.key.as_str()))
    {
        retype_storage(graph, storage.tuple, to)?;
    }
    Ok(CastDone {
        tensors: cast_nodes.len(),
        plan,
    })
}

/// Points a storage id's type at `to`'s typed storage class, in the same module
/// (`torch.FloatStorage` → `torch.HalfStorage`). The tuple is rebuilt; other fields are shared.
fn retype_storage(graph: &mut Graph, tuple: NodeId, to: DType) -> Result<(), TransformError> {
    let mut items = graph
        .tuple(tuple)
        .map(<[NodeId]>::to_vec)
        .unwrap_or_default();
    let (Some(module), Some(class)) = (
        items
            .get(1)
            .and_then(|&t| graph.global(t))
            .map(|g| g.module.clone()),
        to.storage_class(),
    ) else {
        return Err(TransformError::Torch(TorchError::Invalid {
            what: "malformed storage id".into(),
        }));
    };
    items[1] = graph.add(Value::Global(Global::new(&module, class)));
    graph.set(tuple, Value::Tuple(items));
    Ok(())
}

/// Every node reachable from `roots`.
fn reachable(graph: &Graph, roots: &[NodeId]) -> Result<HashSet<NodeId>, TransformError> {
    let mut seen = HashSet::new();
    let mut stack: Vec<(NodeId, usize)> = roots.iter().map(|&r| (r, 0)).collect();
    while let Some((id, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(TorchError::TooDeep.into());
        }
        if seen.insert(id) {
            stack.extend(graph.get(id).children().into_iter().map(|c| (c, depth + 1)));
        }
    }
    Ok(seen)
}

/// The dense tensors reachable from `start` (through Parameters and sparse tensors), skipping
/// mapping entries keyed `step` when `skip_step` is set.
fn tensors_under(
    graph: &Graph,
    found: &Scan,
    start: NodeId,
    skip_step: bool,
) -> Result<Vec<NodeId>, TransformError> {
    let mut tensors = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![(start, 0usize)];
    while let Some((id, depth)) = stack.pop() {
        if depth > MAX_DEPTH {
            return Err(TorchError::TooDeep.into());
        }
        if !seen.insert(id) {
            continue;
        }
        if found.tensor_at(id).is_some() {
            tensors.push(id);
            continue;
        }
        let children: Vec<NodeId> = match graph.mapping(id) {
            Some(pairs) if skip_step => pairs
                .iter()
                .filter(|&&(k, _)| graph.str(k) != Some("step"))
                .flat_map(|&(k, v)| [k, v])
                .collect(),
            _ => graph.get(id).children(),
        };
        stack.extend(children.into_iter().rev().map(|c| (c, depth + 1)));
    }
    Ok(tensors)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `_rebuild_tensor_v2(('storage', torch.<class>, key, 'cpu', n), offset, (n,), (1,), False, OrderedDict())`.
    fn tensor(graph: &mut Graph, class: &str, key: &str, offset: i64, n: i64) -> NodeId {
        let tag = graph.add(Value::Str("storage".into()));
        let class = graph.add(Value::Global(Global::new("torch", class)));
        let key = graph.add(Value::Str(key.into()));
        let location = graph.add(Value::Str("cpu".into()));
        let numel = graph.add(Value::Int(n + offset));
        let id = graph.add(Value::Tuple(vec![tag, class, key, location, numel]));
        let pid = graph.add(Value::PersistentId(id));
        let offset = graph.add(Value::Int(offset));
        let size = graph.add(Value::Int(n));
        let shape = graph.add(Value::Tuple(vec![size]));
        let one = graph.add(Value::Int(1));
        let stride = graph.add(Value::Tuple(vec![one]));
        let grad = graph.add(Value::Bool(false));
        let hooks = graph.add(Value::None);
        let args = graph.add(Value::Tuple(vec![pid, offset, shape, stride, grad, hooks]));
        let callable = graph.add(Value::Global(Global::new(
            "torch._utils",
            "_rebuild_tensor_v2",
        )));
        graph.add(Value::Object(ckpt_pickle::Object::new(
            ckpt_pickle::Constructor::Reduce { callable, args },
        )))
    }

    fn dict(graph: &mut Graph, items: Vec<(&str, NodeId)>) -> NodeId {
        let pairs = items
            .into_iter()
            .map(|(k, v)| (graph.add(Value::Str(k.into())), v))
            .collect();
        graph.add(Value::Dict(pairs))
    }

    fn classes(graph: &Graph, root: NodeId) -> Vec<(String, String)> {
        let found = scan(graph, root).expect("scan");
        found
            .storages
            .iter()
            .map(|s| {
                let class = graph.tuple(s.tuple).and_then(|t| graph.global(t[1]));
                (
                    s.key.clone(),
                    class.map_or(String::new(), |g| g.name.clone()),
                )
            })
            .collect()
    }

    /// `{'state_dict': {'w': f32, 'n': int64}, 'optimizer': {'state': {0: {'buf': f32, 'step': f32}}}, 'epoch': 1}`.
    fn training_checkpoint(graph: &mut Graph) -> NodeId {
        let w = tensor(graph, "FloatStorage", "0", 0, 4);
        let n = tensor(graph, "LongStorage", "1", 0, 1);
        let sd = dict(graph, vec![("w", w), ("n", n)]);
        let buf = tensor(graph, "FloatStorage", "2", 0, 4);
        let step = tensor(graph, "FloatStorage", "3", 0, 1);
        let per_param = dict(graph, vec![("buf", buf), ("step", step)]);
        let zero = graph.add(Value::Int(0));
        let state = graph.add(Value::Dict(vec![(zero, per_param)]));
        let optimizer = dict(graph, vec![("state", state)]);
        let epoch = graph.add(Value::Int(1));
        dict(
            graph,
            vec![
                ("state_dict", sd),
                ("optimizer", optimizer),
                ("epoch", epoch),
            ],
        )
    }

    #[test]
    fn casts_model_floats_only_and_plans_their_storages() {
        let mut g = Graph::new();
        let root = training_checkpoint(&mut g);
        let done = cast_floating(&mut g, root, DType::Float16, CastScope::Model).expect("cast");
        assert_eq!(done.tensors, 1);
        assert_eq!(
            done.plan.cast_of("0"),
            Some(Cast {
                from: DType::Float32,
                to: DType::Float16
            })
        );
        assert_eq!(done.plan.len(), 1);
        let classes = classes(&g, root);
        assert_eq!(classes[0], ("0".into(), "HalfStorage".into()));
        assert_eq!(classes[1], ("1".into(), "LongStorage".into()));
        assert_eq!(classes[2], ("2".into(), "FloatStorage".into()));
    }

    #[test]
    fn optimizer_scope_casts_optimizer_state_but_not_step() {
        let mut g = Graph::new();
        let root = training_checkpoint(&mut g);
        let done =
            cast_floating(&mut g, root, DType::BFloat16, CastScope::WithOptimizer).expect("cast");
        assert_eq!(done.tensors, 2);
        let classes = classes(&g, root);
        assert_eq!(classes[2].1, "BFloat16Storage");
        assert_eq!(classes[3].1, "FloatStorage", "step counters stay float32");
    }

    #[test]
    fn a_cast_that_reaches_no_tensor_while_some_are_outside_state_dicts_is_an_error() {
        let mut g = Graph::new();
        let t = tensor(&mut g, "FloatStorage", "0", 0, 4);
        let list = g.add(Value::List(vec![t]));
        let root = dict(&mut g, vec![("weights", list)]);
        let error = cast_floating(&mut g, root, DType::Float16, CastScope::Model)
            .expect_err("nothing reachable");
        assert!(
            error.to_string().contains("reaches none of the file's 1"),
            "{error}"
        );
    }

    #[test]
    fn tensors_already_in_the_target_dtype_are_left_alone() {
        let mut g = Graph::new();
        let root = training_checkpoint(&mut g);
        let done = cast_floating(&mut g, root, DType::Float32, CastScope::Model).expect("cast");
        assert_eq!(done.tensors, 0);
        assert!(done.plan.is_empty());
    }

    #[test]
    fn a_storage_shared_with_an_uncast_tensor_is_an_error_and_changes_nothing() {
        let mut g = Graph::new();
        let w = tensor(&mut g, "FloatStorage", "0", 0, 4);
        let view = tensor(&mut g, "FloatStorage", "0", 2, 2);
        let sd = dict(&mut g, vec![("w", w)]);
        let extra = g.add(Value::List(vec![view]));
        let root = dict(&mut g, vec![("model", sd), ("extra", extra)]);
        let err =
            cast_floating(&mut g, root, DType::Float16, CastScope::Model).expect_err("shared");
        assert!(
            err.to_string().contains("storage `0` is shared by `w`"),
            "{err}"
        );
        assert_eq!(classes(&g, root)[0].1, "FloatStorage");
    }

    #[test]
    fn views_of_one_storage_in_a_state_dict_are_cast_together() {
        let mut g = Graph::new();
        let w = tensor(&mut g, "HalfStorage", "0", 0, 4);
        let view = tensor(&mut g, "HalfStorage", "0", 2, 2);
        let root = dict(&mut g, vec![("w", w), ("w_tail", view)]);
        let done = cast_floating(&mut g, root, DType::Float32, CastScope::Model).expect("cast");
        assert_eq!(done.tensors, 2);
        assert_eq!(done.plan.len(), 1);
        assert!(classes(&g, root).iter().all(|(_, c)| c == "FloatStorage"));
    }

    #[test]
    fn integer_targets_are_refused() {
        let mut g = Graph::new();
        let root = training_checkpoint(&mut g);
        assert!(cast_floating(&mut g, root, DType::Int8, CastScope::Model).is_err());
    }
}
