//! Rewriting storage locations offline, as `torch.load(map_location=…)` would at load time.

use crate::torch::{scan, Location, LocationMap, Rebuild};
use ckpt_pickle::{Global, Graph, NodeId, Value};

use super::TransformError;

/// What a remap changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Remapped {
    /// Storage references whose tag changed.
    pub storages: usize,
    /// torch_npu `_rebuild_npu_tensor` calls turned into `_rebuild_tensor_v2`.
    pub npu_tensors: usize,
    /// Storage references whose tag the map matches (see [`LocationMap::matches`]), changed
    /// or already at their target.
    pub matched: usize,
    /// Every distinct location tag found, as written in the file.
    pub locations: std::collections::BTreeSet<String>,
}

/// Applies `map` to every storage's location tag, and turns torch_npu's
/// `_rebuild_npu_tensor(storage, offset, size, stride, requires_grad, hooks, format)` into the
/// standard `_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)`: its
/// storage is already a `cpu`-tagged base-format copy, so stock torch loads it (the private
/// NPU format is dropped; torch_npu re-derives formats when the tensor moves to the device).
///
/// Tags are replaced by new string nodes, so a string shared with unrelated data stays as is.
pub fn remap(
    graph: &mut Graph,
    root: NodeId,
    map: &LocationMap,
) -> Result<Remapped, TransformError> {
    let found = scan(graph, root)?;
    let mut done = Remapped::default();
    for tensor in found.tensors.iter().filter(|t| t.rebuild == Rebuild::Npu) {
        let Some(items) = graph.tuple(tensor.args).map(<[NodeId]>::to_vec) else {
            continue;
        };
        let callable = graph.add(Value::Global(Global::new(
            "torch._utils",
            "_rebuild_tensor_v2",
        )));
        let args = graph.add(Value::Tuple(items[..6].to_vec()));
        if let Value::Object(object) = graph.get_mut(tensor.node) {
            object.constructor = ckpt_pickle::Constructor::Reduce { callable, args };
            done.npu_tensors += 1;
        }
    }
    for storage in &found.storages {
        done.locations.insert(storage.location.clone());
        let current = storage.location.parse::<Location>();
        if current
            .as_ref()
            .map_or(matches!(map, LocationMap::All(_)), |l| map.matches(l))
        {
            done.matched += 1;
        }
        let target = match (&current, map) {
            (Ok(location), _) => map.apply(location),
            (Err(_), LocationMap::All(to)) => Some(to.clone()),
            (Err(_), LocationMap::Rules(_)) => None,
        };
        let Some(target) = target else { continue };
        let Some(mut items) = graph.tuple(storage.tuple).map(<[NodeId]>::to_vec) else {
            continue;
        };
        items[3] = graph.add(Value::Str(target.to_string()));
        graph.set(storage.tuple, Value::Tuple(items));
        done.storages += 1;
    }
    Ok(done)
}
