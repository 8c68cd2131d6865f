//! What the tract parity tests share: the fixture folders' manifests, the probe input every
//! fixture generator defines, the committed torch outputs, and one tract run compared
//! against them.

use std::path::{Path, PathBuf};

use ckpt::onnx::proto::{
    tensor_shape_proto::dimension::Value as Dim, type_proto, ModelProto, ValueInfoProto,
};
use prost::Message;
use tract_onnx::prelude::*;

/// One entry of a fixture folder's `manifest.json` (each folder's `generate.py` writes it)
/// with torch's outputs beside it: `<dir>/<name>.out.b<batch>.f32` for each batch, computed
/// on [`probe_input`] with `seed` (and, for each further input `k` of per-sample shape
/// `extra[k]`, with `seed + k + 1`); a model with several outputs: each flattened, one
/// after the other, in the ONNX outputs' order.
pub struct Fixture {
    pub dir: PathBuf,
    pub name: String,
    /// The first input's per-sample shape.
    pub input: [u64; 3],
    pub seed: u64,
    pub batches: Vec<u64>,
    /// Per-sample shapes of the inputs after the first (`extra_inputs`; none when absent).
    pub extra: Vec<Vec<u64>>,
    /// The whole entry, for the fields only one folder writes (`arch`, `dynamic`, `torch`).
    // Each test crate compiles this module on its own; not all of them read this field.
    #[allow(dead_code)]
    pub entry: serde_json::Value,
}

fn ints(v: &serde_json::Value) -> Vec<u64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap())
        .collect()
}

impl Fixture {
    /// Every entry of `dir/manifest.json`, in the manifest's order.
    pub fn all(dir: &Path) -> Vec<Fixture> {
        let text = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
        let manifest: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(&text).unwrap();
        manifest
            .into_iter()
            .map(|(name, entry)| Fixture {
                dir: dir.to_owned(),
                input: ints(&entry["input"]).try_into().unwrap(),
                seed: entry["seed"].as_u64().unwrap(),
                batches: ints(&entry["batches"]),
                extra: entry["extra_inputs"]
                    .as_array()
                    .map(|e| e.iter().map(ints).collect())
                    .unwrap_or_default(),
                name,
                entry,
            })
            .collect()
    }

    /// The entry `name` of `dir/manifest.json`.
    pub fn named(dir: &Path, name: &str) -> Fixture {
        Fixture::all(dir)
            .into_iter()
            .find(|f| f.name == name)
            .unwrap_or_else(|| panic!("{name} is not in {}/manifest.json", dir.display()))
    }
}

/// The generators' `probe_input`: ((i·7919 + seed·31) mod 2001 − 1000) / 1000 in f32.
pub fn probe_input(batch: u64, shape: &[u64], seed: u64) -> Vec<f32> {
    let n = batch * shape.iter().product::<u64>();
    (0..n)
        .map(|i| ((i * 7919 + seed * 31) % 2001) as i64 - 1000)
        .map(|v| v as f32 / 1000.0)
        .collect()
}

impl Fixture {
    /// torch's output at `batch` (raw little-endian float32).
    fn output(&self, batch: u64) -> Vec<f32> {
        let path = self.dir.join(format!("{}.out.b{batch}.f32", self.name));
        std::fs::read(path)
            .unwrap()
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    }

    /// The per-sample shapes of the model's inputs, in order.
    fn shapes(&self) -> Vec<&[u64]> {
        std::iter::once(self.input.as_slice())
            .chain(self.extra.iter().map(Vec::as_slice))
            .collect()
    }

    /// `model` run by tract on `inputs` with every input's batch fixed at `batch`.
    fn run_at(&self, model: &Path, batch: u64, inputs: TVec<TValue>) -> TVec<TValue> {
        let mut m = tract_onnx::onnx().model_for_path(model).unwrap();
        for (k, shape) in self.shapes().into_iter().enumerate() {
            let dims: Vec<usize> = std::iter::once(batch)
                .chain(shape.iter().copied())
                .map(|d| d as usize)
                .collect();
            m.set_input_fact(k, f32::fact(&dims).into()).unwrap();
        }
        m.into_optimized()
            .unwrap()
            .into_runnable()
            .unwrap()
            .run(inputs)
            .unwrap()
    }

    /// Runs `model` in tract at every batch (one load with a symbolic batch; a model with
    /// recurrent nodes, which tract 0.23 cannot plan over a symbolic batch, once per batch
    /// with its size fixed, as said on stderr); for each, the max |diff| against torch and
    /// the tolerance 1e-4 · max(1, max |ref|).
    pub fn diffs(&self, model: &Path) -> Vec<(u64, f32, f32)> {
        let recurrent = decode(model)
            .graph
            .iter()
            .flat_map(|g| &g.node)
            .any(|n| matches!(n.op_type.as_deref(), Some("LSTM" | "GRU")));
        let symbolic = if recurrent {
            eprintln!(
                "{}: recurrent nodes; tract plans them per batch (its symbolic batch cannot size their state)",
                self.name
            );
            None
        } else {
            let planned = tract_onnx::onnx()
                .model_for_path(model)
                .unwrap()
                .into_optimized()
                .unwrap();
            Some(planned.into_runnable().unwrap())
        };
        let shapes = self.shapes();
        self.batches
            .iter()
            .map(|&b| {
                let inputs: TVec<TValue> = shapes
                    .iter()
                    .zip(self.seed..)
                    .map(|(shape, seed)| {
                        let dims: Vec<usize> = std::iter::once(b)
                            .chain(shape.iter().copied())
                            .map(|d| d as usize)
                            .collect();
                        Tensor::from_shape(&dims, &probe_input(b, shape, seed))
                            .unwrap()
                            .into()
                    })
                    .collect();
                let out = match &symbolic {
                    Some(runnable) => runnable.run(inputs).unwrap(),
                    None => self.run_at(model, b, inputs),
                };
                // Every output flattened, one after the other (as the generators write them).
                let got: Vec<f32> = out
                    .iter()
                    .flat_map(|o| {
                        o.to_plain_array_view::<f32>()
                            .unwrap()
                            .iter()
                            .copied()
                            .collect::<Vec<_>>()
                    })
                    .collect();
                let want = self.output(b);
                assert_eq!(
                    got.len(),
                    want.len(),
                    "{} batch {b}: output size",
                    self.name
                );
                let diff = got
                    .iter()
                    .zip(&want)
                    .map(|(g, r)| (g - r).abs())
                    .fold(0.0f32, f32::max);
                let scale = want.iter().map(|r| r.abs()).fold(1.0f32, f32::max);
                (b, diff, 1e-4 * scale)
            })
            .collect()
    }

    /// [`Fixture::diffs`], each within its tolerance.
    pub fn assert_parity(&self, model: &Path, label: &str) {
        for (b, diff, tol) in self.diffs(model) {
            eprintln!(
                "{label} {} batch {b}: max |diff| {diff:.3e} (tolerance {tol:.3e})",
                self.name
            );
            assert!(
                diff <= tol,
                "{label} {} batch {b}: max |diff| {diff} > {tol}",
                self.name
            );
        }
    }
}

/// The ONNX file at `path`, decoded.
pub fn decode(path: &Path) -> ModelProto {
    ModelProto::decode(std::fs::read(path).unwrap().as_slice()).unwrap()
}

/// The op types of `model`'s nodes, in the graph's order.
// Each test crate compiles this module on its own; not all of them call this.
#[allow(dead_code)]
pub fn op_types(model: &ModelProto) -> Vec<String> {
    model
        .graph
        .as_ref()
        .unwrap()
        .node
        .iter()
        .filter_map(|n| n.op_type.clone())
        .collect()
}

/// The first dimension of graph input or output `info` (`None` without a tensor type).
// Each test crate compiles this module on its own; not all of them call this.
#[allow(dead_code)]
pub fn first_dim(info: &ValueInfoProto) -> Option<Dim> {
    let type_proto::Value::TensorType(t) = info.r#type.as_ref()?.value.as_ref()?;
    t.shape.as_ref()?.dim.first()?.value.clone()
}

/// Every graph input and output of `model` has the dynamic batch `batch` first and fixed
/// positive sizes after it (the form ATC's `--dynamic_batch_size` takes).
// Each test crate compiles this module on its own; not all of them call this.
#[allow(dead_code)]
pub fn assert_batch_first_io(model: &ModelProto) {
    let graph = model.graph.as_ref().unwrap();
    for info in graph.input.iter().chain(&graph.output) {
        let Some(type_proto::Value::TensorType(t)) =
            info.r#type.as_ref().and_then(|t| t.value.as_ref())
        else {
            panic!("{:?}: no tensor type", info.name)
        };
        let dims = &t.shape.as_ref().unwrap().dim;
        assert_eq!(
            dims[0].value,
            Some(Dim::DimParam("batch".into())),
            "{:?}",
            info.name
        );
        assert!(
            dims[1..]
                .iter()
                .all(|d| matches!(d.value, Some(Dim::DimValue(v)) if v > 0)),
            "{:?}: {dims:?}",
            info.name
        );
    }
}
