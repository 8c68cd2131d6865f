//! The plain rewrite over the committed fixtures (written by torch 2.13 with numpy 1.x and
//! 2.x, omegaconf 2.3) and over hand-built graphs.

use std::path::PathBuf;

use super::*;
use crate::torch::DType;
use ckpt_pickle::Global;

fn fixture(name: &str) -> crate::torch::Checkpoint {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/plain")
        .join(name);
    crate::torch::open(&path).expect("fixture opens")
}

fn at(graph: &Graph, node: NodeId, path: &str) -> NodeId {
    path.split('/').fold(node, |n, key| match graph.get(n) {
        Value::List(items) => items[key.parse::<usize>().expect("index")],
        _ => graph
            .lookup(n, key)
            .unwrap_or_else(|| panic!("no `{key}` in {path}")),
    })
}

fn str_at<'g>(graph: &'g Graph, root: NodeId, path: &str) -> &'g str {
    graph.str(at(graph, root, path)).expect("a str")
}

fn plain_of(name: &str) -> (Graph, NodeId, Plain) {
    let ckpt = fixture(name);
    let mut graph = ckpt.graph.clone();
    let plain = make_plain(&mut graph, ckpt.root).expect("made plain");
    (graph, ckpt.root, plain)
}

fn assert_plain_content(name: &str) {
    let (graph, root, plain) = plain_of(name);
    // Only allow-listed globals remain.
    let found = scan(&graph, root).expect("scan");
    let off: Vec<String> = found
        .globals
        .iter()
        .filter(|g| !allowlist::is_allowed(g))
        .map(Global::to_string)
        .collect();
    assert!(
        off.is_empty(),
        "{name}: globals left off the allow-list: {off:?}"
    );

    assert!(matches!(
        graph.get(at(&graph, root, "args")),
        Value::Dict(_)
    ));
    assert_eq!(str_at(&graph, root, "args/name"), "run1");
    assert_eq!(str_at(&graph, root, "args/out"), "/tmp/run1");
    assert_eq!(
        graph.get(at(&graph, root, "args/beta")),
        &Value::Float(0.9),
        "a numpy scalar inside the Namespace"
    );
    assert_eq!(str_at(&graph, root, "cfg/model/name"), "tiny");
    assert_eq!(graph.int(at(&graph, root, "cfg/model/layers/1")), Some(2));
    assert_eq!(graph.int(at(&graph, root, "cfg/data/sizes/0/w")), Some(4));
    assert_eq!(str_at(&graph, root, "cfg/data/missing"), "???");
    assert_eq!(str_at(&graph, root, "cfg/lr"), "${model.dropout}");
    assert_eq!(graph.get(at(&graph, root, "best")), &Value::Float(0.875));
    assert_eq!(graph.int(at(&graph, root, "step")), Some(1234));
    assert_eq!(str_at(&graph, root, "root"), "/data/set/train");
    assert_eq!(str_at(&graph, root, "mode"), "train");
    assert_eq!(graph.int(at(&graph, root, "modes/0")), Some(2));

    let tensor = |path: &str| {
        found
            .tensor_at(at(&graph, root, path))
            .unwrap_or_else(|| panic!("`{path}` is a tensor"))
            .clone()
    };
    let bytes = |t: &crate::torch::TensorRef| {
        plain
            .storages
            .iter()
            .find(|(k, _)| *k == t.storage.key)
            .map(|(_, b)| b.clone())
            .expect("a new storage")
    };
    let mean = tensor("mean");
    assert_eq!((mean.dtype, mean.shape.clone()), (DType::Float32, vec![3]));
    let expected: Vec<u8> = [0.5f32, 0.25, 0.125]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert_eq!(bytes(&mean), expected);
    let ids = tensor("ids");
    assert_eq!((ids.dtype, ids.shape.clone()), (DType::Int64, vec![2, 3]));
    assert_eq!(ids.stride, [3, 1]);
    let count = tensor("count");
    assert_eq!((count.dtype, count.shape.len()), (DType::Int64, 0));
    assert_eq!(bytes(&count), 5i64.to_le_bytes());
    // The model's own tensors keep their storages (copied by the writer, not new).
    let weight = tensor("state_dict/weight");
    assert!(plain.storages.iter().all(|(k, _)| *k != weight.storage.key));

    let counts = plain.counts();
    assert_eq!(counts.get(&PlainKind::Namespace), Some(&1));
    assert_eq!(counts.get(&PlainKind::DictConfig), Some(&4));
    assert_eq!(counts.get(&PlainKind::ListConfig), Some(&2));
    assert_eq!(counts.get(&PlainKind::NumpyArray), Some(&3));
    assert_eq!(counts.get(&PlainKind::NumpyScalar), Some(&3));
    assert_eq!(counts.get(&PlainKind::Path), Some(&2));
    assert_eq!(counts.get(&PlainKind::Enum), Some(&2));
    let paths: Vec<&str> = plain.rewritten.iter().map(|f| f.path.as_str()).collect();
    assert!(paths.contains(&"args/out") && paths.contains(&"cfg/data/sizes"));
}

#[test]
fn numpy_2_objects_become_plain_values_and_tensors() {
    assert_plain_content("plain_np2.pth");
}

#[test]
fn numpy_1_objects_become_plain_values_and_tensors() {
    assert_plain_content("plain_np1.pth");
}

#[test]
fn legacy_checkpoints_become_plain_too() {
    assert_plain_content("plain_legacy.pth");
}

#[test]
fn an_unknown_class_is_refused_naming_it_and_its_key_path() {
    let ckpt = fixture("plain_refused.pth");
    let mut graph = ckpt.graph.clone();
    let err = make_plain(&mut graph, ckpt.root).expect_err("refused");
    let TransformError::NotPlain {
        path,
        class,
        others,
        ..
    } = &err
    else {
        panic!("not a NotPlain refusal: {err}");
    };
    assert_eq!(
        (path.as_str(), class.as_str()),
        ("extra/hook", "_plain_types.Opaque")
    );
    assert_eq!(*others, 0);
    assert!(err
        .to_string()
        .contains("`extra/hook` is a `_plain_types.Opaque` object"));
    // Nothing was changed: the Namespace is still one.
    assert_eq!(
        graph.get(at(&graph, ckpt.root, "args")),
        ckpt.graph.get(at(&ckpt.graph, ckpt.root, "args"))
    );
}

#[test]
fn blockers_name_each_object_with_what_the_rewrite_does() {
    let ckpt = fixture("plain_refused.pth");
    let found = weights_only_blockers(&ckpt.graph, ckpt.root).expect("walk");
    let summary: Vec<(&str, &str, bool)> = found
        .iter()
        .map(|f| (f.class.as_str(), f.path.as_str(), f.plain.is_ok()))
        .collect();
    assert_eq!(
        summary,
        [
            ("_plain_types.Opaque", "extra/hook", false),
            ("argparse.Namespace", "args", true),
        ]
    );
    let clean = fixture("../zip_tinycnn_sd.pth");
    assert!(weights_only_blockers(&clean.graph, clean.root)
        .expect("walk")
        .is_empty());
}

#[test]
fn frozensets_and_stored_classes_are_refused() {
    let mut graph = Graph::new();
    let one = graph.add(Value::Int(1));
    let frozen = graph.add(Value::FrozenSet(vec![one]));
    let class = graph.add(Value::Global(Global::new(
        "torch.nn.modules.linear",
        "Linear",
    )));
    let dtype = graph.add(Value::Global(Global::new("torch", "float16")));
    let keys: Vec<NodeId> = ["a", "b", "c"]
        .iter()
        .map(|k| graph.add(Value::Str((*k).into())))
        .collect();
    let root = graph.add(Value::Dict(vec![
        (keys[0], frozen),
        (keys[1], class),
        (keys[2], dtype),
    ]));
    let found = weights_only_blockers(&graph, root).expect("walk");
    let summary: Vec<(&str, &str)> = found
        .iter()
        .map(|f| (f.class.as_str(), f.path.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            ("builtins.frozenset", "a"),
            ("torch.nn.modules.linear.Linear", "b")
        ]
    );
    assert!(found.iter().all(|f| f.plain.is_err()));
}

#[test]
fn a_torch_npu_tensor_is_refused_with_the_remap_that_fixes_it() {
    let ckpt = fixture("../npu_rebuild_enum.pth");
    let mut graph = ckpt.graph.clone();
    let err = make_plain(&mut graph, ckpt.root).expect_err("refused");
    let text = err.to_string();
    assert!(
        text.contains("torch_npu.utils.storage._rebuild_npu_tensor"),
        "{text}"
    );
    assert!(text.contains("add `--to cpu`"), "{text}");
}
