//! The model's weights: finding the state dict in a checkpoint, stripping wrapper prefixes,
//! and checking its keys and shapes strictly against what an architecture expects. The
//! tensors themselves are read by the lowering, by key ([`StateDict::tensor`]).

use std::collections::{BTreeMap, BTreeSet};

use ckpt_formats::torch::state_dict::find_state_dicts;
use ckpt_formats::torch::{Checkpoint, TensorRef};
use ckpt_formats::transform::{strip_state_dict, PrefixRule};
use ckpt_pickle::NodeId;

use super::TorchvisionError;

/// Top-level keys training scripts keep the model's state dict under, most specific first.
pub const CONTAINER_KEYS: [&str; 8] = [
    "state_dict",
    "model_state_dict",
    "model",
    "net",
    "network",
    "module",
    "model_ema",
    "ema",
];

/// How many entries of each kind a key report lists before summarising the rest.
const SHOWN: usize = 12;

/// A state dict: tensor keys (wrapper prefixes removed) → tensors, plus the checkpoint's
/// `arch` string when it has one.
#[derive(Debug)]
pub struct StateDict {
    tensors: BTreeMap<String, TensorRef>,
    /// Prefixes removed from the keys (`module.`, …).
    pub stripped: Vec<String>,
    /// The top-level `arch` entry (the ImageNet example's convention), if a string.
    pub arch_field: Option<String>,
}

/// A key the architecture expects, with its shape. `optional` keys (`num_batches_tracked`,
/// which torch < 0.4.1 did not save and eval never reads) may be absent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// The state-dict key.
    pub key: String,
    /// Its sizes.
    pub shape: Vec<u64>,
    /// Whether it may be absent.
    pub optional: bool,
}

impl StateDict {
    /// Finds the model's state dict in `ckpt`: the only one, or the one under the first of
    /// [`CONTAINER_KEYS`] present, or the top-level mapping itself.
    pub fn locate(ckpt: &Checkpoint) -> Result<StateDict, TorchvisionError> {
        let mut graph = ckpt.graph.clone();
        let found = find_state_dicts(&graph, ckpt.root)?;
        let chosen = match found.as_slice() {
            [] => return Err(TorchvisionError::NoStateDict),
            [only] => *only,
            several => pick(&graph, ckpt.root, several).ok_or_else(|| TorchvisionError::Arch {
                what: format!(
                    "the checkpoint holds {} state dicts and none is under {}: cannot tell which is the model",
                    several.len(),
                    CONTAINER_KEYS.map(|k| format!("`{k}`")).join(", ")
                ),
            })?,
        };
        let stripped = strip_state_dict(&mut graph, chosen, &PrefixRule::Auto)?;
        let arch_field = graph
            .lookup(ckpt.root, "arch")
            .and_then(|n| graph.str(n))
            .map(str::to_owned);
        let mut tensors = BTreeMap::new();
        for &(key, value) in graph.mapping(chosen).unwrap_or_default() {
            let Some(key) = graph.str(key) else { continue };
            let inner = ckpt.scan.parameters.get(&value).copied().unwrap_or(value);
            if let Some(tensor) = ckpt.scan.tensor_at(inner) {
                tensors.insert(key.to_owned(), tensor.clone());
            }
        }
        Ok(StateDict {
            tensors,
            stripped,
            arch_field,
        })
    }

    /// The keys, sorted.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(String::as_str)
    }

    /// Whether `key` is a tensor of the state dict.
    pub fn has(&self, key: &str) -> bool {
        self.tensors.contains_key(key)
    }

    /// A tensor's shape, if the key exists.
    pub fn shape(&self, key: &str) -> Option<&[u64]> {
        self.tensors.get(key).map(|t| t.shape.as_slice())
    }

    /// Like [`StateDict::shape`], but a missing key is an error naming it.
    pub fn require(&self, key: &str) -> Result<&[u64], TorchvisionError> {
        self.shape(key).ok_or_else(|| TorchvisionError::Arch {
            what: format!("the state dict has no `{key}`"),
        })
    }

    /// Compares the keys and shapes with `expected` (what `arch` needs): any missing
    /// required key, unexpected key or shape mismatch is an error listing all of them.
    pub fn check(&self, arch: &str, expected: &[Expected]) -> Result<(), TorchvisionError> {
        let wanted: BTreeSet<&str> = expected.iter().map(|e| e.key.as_str()).collect();
        let mut missing = Vec::new();
        let mut mismatched = Vec::new();
        for e in expected {
            match self.shape(&e.key) {
                None if !e.optional => missing.push(e.key.clone()),
                Some(shape) if shape != e.shape.as_slice() => mismatched.push(format!(
                    "{}: checkpoint {:?}, {arch} needs {:?}",
                    e.key, shape, e.shape
                )),
                _ => {}
            }
        }
        let unexpected: Vec<&str> = self.keys().filter(|k| !wanted.contains(k)).collect();
        if missing.is_empty() && unexpected.is_empty() && mismatched.is_empty() {
            return Ok(());
        }
        let mut report = String::new();
        for (title, items) in [
            (
                "missing keys",
                missing.iter().map(String::as_str).collect::<Vec<_>>(),
            ),
            ("unexpected keys", unexpected),
            (
                "shape mismatches",
                mismatched.iter().map(String::as_str).collect(),
            ),
        ] {
            if !items.is_empty() {
                report.push_str(&format!("  {title} ({}):\n", items.len()));
                for item in items.iter().take(SHOWN) {
                    report.push_str(&format!("    {item}\n"));
                }
                if items.len() > SHOWN {
                    report.push_str(&format!("    … and {} more\n", items.len() - SHOWN));
                }
            }
        }
        Err(TorchvisionError::Keys {
            arch: arch.to_owned(),
            report: report.trim_end().to_owned(),
        })
    }

    /// Tensor `key`: where its bytes are, its dtype and shape.
    pub fn tensor(&self, key: &str) -> Result<&TensorRef, TorchvisionError> {
        self.tensors.get(key).ok_or_else(|| TorchvisionError::Arch {
            what: format!("the state dict has no `{key}`"),
        })
    }
}

/// The state dict stored under the first container key present at the top level.
fn pick(graph: &ckpt_pickle::Graph, root: NodeId, found: &[NodeId]) -> Option<NodeId> {
    CONTAINER_KEYS
        .iter()
        .filter_map(|key| graph.lookup(root, key))
        .find(|node| found.contains(node))
}
