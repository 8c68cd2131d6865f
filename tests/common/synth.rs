//! Checkpoints built in a test, byte by byte, through ckpt's own pickle and zip writers: a
//! `{"w": tensor}` state dict whose storage numel, offset, shape and stride are the caller's
//! (bad sizes included), and the zip `torch.save` would put it in.

use std::fs::File;
use std::path::Path;

use ckpt::pickle::{Constructor, Global, Graph, NodeId, Object, Value};
use ckpt::torch::zip_write::TorchZipWriter;

/// `_rebuild_tensor_v2(('storage', FloatStorage, '0', 'cpu', numel), offset, shape, stride, …)`.
pub fn tensor_graph(numel: i64, offset: i64, shape: &[i64], stride: &[i64]) -> (Graph, NodeId) {
    let mut g = Graph::new();
    let add = |g: &mut Graph, v: Value| g.add(v);
    let tag = add(&mut g, Value::Str("storage".into()));
    let class = add(&mut g, Value::Global(Global::new("torch", "FloatStorage")));
    let key = add(&mut g, Value::Str("0".into()));
    let location = add(&mut g, Value::Str("cpu".into()));
    let numel = add(&mut g, Value::Int(numel));
    let pid_tuple = add(&mut g, Value::Tuple(vec![tag, class, key, location, numel]));
    let pid = add(&mut g, Value::PersistentId(pid_tuple));
    let offset = add(&mut g, Value::Int(offset));
    let dims: Vec<NodeId> = shape.iter().map(|&d| g.add(Value::Int(d))).collect();
    let shape = add(&mut g, Value::Tuple(dims));
    let steps: Vec<NodeId> = stride.iter().map(|&d| g.add(Value::Int(d))).collect();
    let stride = add(&mut g, Value::Tuple(steps));
    let grad = add(&mut g, Value::Bool(false));
    let od = add(
        &mut g,
        Value::Global(Global::new("collections", "OrderedDict")),
    );
    let empty = add(&mut g, Value::Tuple(vec![]));
    let hooks = add(
        &mut g,
        Value::Object(Object::new(Constructor::Reduce {
            callable: od,
            args: empty,
        })),
    );
    let args = add(
        &mut g,
        Value::Tuple(vec![pid, offset, shape, stride, grad, hooks]),
    );
    let rebuild = add(
        &mut g,
        Value::Global(Global::new("torch._utils", "_rebuild_tensor_v2")),
    );
    let tensor = add(
        &mut g,
        Value::Object(Object::new(Constructor::Reduce {
            callable: rebuild,
            args,
        })),
    );
    let name = add(&mut g, Value::Str("w".into()));
    let root = add(&mut g, Value::Dict(vec![(name, tensor)]));
    (g, root)
}

pub fn write_zip(path: &Path, pickle: &[u8], storage: &[u8]) {
    let file = File::create(path).expect("create");
    let mut zip = TorchZipWriter::new(file, "bad", 64);
    zip.add_bytes("data.pkl", pickle).expect("pkl");
    zip.add_bytes("data/0", storage).expect("storage");
    zip.add_bytes("version", b"3\n").expect("version");
    zip.finish().expect("finish");
}
