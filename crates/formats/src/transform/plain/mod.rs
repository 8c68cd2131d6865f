//! Plain checkpoints: the objects torch's `weights_only=True` loader (the default of
//! `torch.load` since torch 2.6) refuses, rewritten into the plain values it accepts.
//!
//! Every value reachable from the root is either allowed as it is (numbers, strings, bytes,
//! containers, and calls of the globals on torch's allow-list, [`crate::torch::allowlist`]),
//! rewritten (a [`PlainKind`]: a Namespace or omegaconf config into a dict or list, numpy
//! arrays into tensors, numpy scalars into numbers, paths into strings, enum members into their
//! values), or refused, naming its class and key path. The rewrite reads only the value graph:
//! nothing is imported or called. A numpy array's bytes, which sit in the pickle, become a new
//! storage the writer adds ([`Plain::storages`]); every existing storage is copied as it is.
//!
//! Invariant: after [`make_plain`] succeeds, every global reachable from the root is on
//! torch's allow-list.

mod numpy;
mod objects;

use std::collections::{BTreeMap, HashSet};

use serde::Serialize;

use crate::torch::tensor::fresh_tensor;
use crate::torch::{allowlist, scan, Rebuild, StorageKey, TorchError};
use ckpt_pickle::{Constructor, Graph, NodeId, Object, Value, MAX_DEPTH};

use self::numpy::NumpyCall;
use self::objects::Omegaconf;
use super::TransformError;

/// What the plain rewrite makes of one kind of object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PlainKind {
    /// `argparse.Namespace` → a dict of its attributes.
    Namespace,
    /// omegaconf `DictConfig` → a dict.
    DictConfig,
    /// omegaconf `ListConfig` → a list.
    ListConfig,
    /// An omegaconf value node (`AnyNode`, `StringNode`, …) → the value it holds.
    ConfigNode,
    /// A numpy array → a tensor of the same dtype and shape.
    NumpyArray,
    /// A numpy scalar → a Python number (bool, int, float, complex; str or bytes for text).
    NumpyScalar,
    /// A numpy dtype → its name (`float32`).
    NumpyDtype,
    /// A `pathlib` path → its string.
    Path,
    /// An enum member → its value.
    Enum,
    /// `torch.torch_version.TorchVersion` → its string.
    VersionString,
    /// `collections.defaultdict` → a dict of its items.
    DefaultDict,
}

impl PlainKind {
    /// What becomes what, for reports: `argparse.Namespace → dict`.
    pub fn describe(self) -> &'static str {
        match self {
            PlainKind::Namespace => "argparse.Namespace → dict",
            PlainKind::DictConfig => "omegaconf DictConfig → dict",
            PlainKind::ListConfig => "omegaconf ListConfig → list",
            PlainKind::ConfigNode => "omegaconf value node → its value",
            PlainKind::NumpyArray => "numpy array → tensor",
            PlainKind::NumpyScalar => "numpy scalar → Python number",
            PlainKind::NumpyDtype => "numpy dtype → its name",
            PlainKind::Path => "pathlib path → str",
            PlainKind::Enum => "enum member → its value",
            PlainKind::VersionString => "TorchVersion → str",
            PlainKind::DefaultDict => "collections.defaultdict → dict",
        }
    }
}

/// One object off torch's allow-list, where it sits, and what the plain rewrite does with it.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    /// The class or function the pickle calls or names, as it spells it
    /// (`numpy.core.multiarray._reconstruct`, `argparse.Namespace`).
    pub class: String,
    /// The key path from the root (`args`, `cfg/data/sizes/0`), `<root>` for the root itself.
    pub path: String,
    /// The rewrite that makes it plain, or why it cannot be made plain.
    pub plain: Result<PlainKind, String>,
}

/// What [`make_plain`] did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plain {
    /// Every object rewritten, in walk order.
    pub rewritten: Vec<Found>,
    /// New storages (numpy arrays made tensors): key and row-major little-endian bytes.
    pub storages: Vec<(StorageKey, Vec<u8>)>,
}

impl Plain {
    /// How many objects of each kind were rewritten.
    pub fn counts(&self) -> BTreeMap<PlainKind, usize> {
        let mut counts = BTreeMap::new();
        for found in &self.rewritten {
            if let Ok(kind) = found.plain {
                *counts.entry(kind).or_insert(0) += 1;
            }
        }
        counts
    }
}

/// Rewrites every object under `root` that torch's `weights_only` loader refuses into plain
/// values. On error (an object it cannot represent) the graph is untouched and the error names
/// the first such object's class and key path.
pub fn make_plain(graph: &mut Graph, root: NodeId) -> Result<Plain, TransformError> {
    let walk = Walk::run(graph.clone(), root)?;
    let refused: Vec<&Found> = walk.found.iter().filter(|f| f.plain.is_err()).collect();
    if let Some(first) = refused.first() {
        let why = first.plain.as_ref().err().cloned().unwrap_or_default();
        return Err(TransformError::NotPlain {
            path: first.path.clone(),
            class: first.class.clone(),
            why,
            others: refused.len() - 1,
        });
    }
    *graph = walk.graph;
    Ok(Plain {
        rewritten: walk.found,
        storages: walk.storages,
    })
}

/// Every object under `root` that stops a default `torch.load` (`weights_only=True`), with
/// what [`make_plain`] would do with it; the graph is not changed. Objects inside one the
/// rewrite replaces are listed when they survive it (a numpy array inside a Namespace).
pub fn weights_only_blockers(graph: &Graph, root: NodeId) -> Result<Vec<Found>, TorchError> {
    Ok(Walk::run(graph.clone(), root)?.found)
}

/// What one value is to the rewrite.
enum Step {
    /// Allowed as it is: walk its parts.
    Keep,
    /// Replaced in place by this value (then looked at again).
    Replace(PlainKind, Value),
    /// Cannot be made plain: why.
    Refuse(String),
}

/// A walk over a copy of the graph that rewrites as it goes.
struct Walk {
    graph: Graph,
    found: Vec<Found>,
    storages: Vec<(StorageKey, Vec<u8>)>,
    visited: HashSet<NodeId>,
    /// Storage keys in use, which a new storage must not take.
    taken: HashSet<StorageKey>,
    next_key: u64,
}

/// A known object's plain value and kind, or why its layout cannot be made plain.
type Rewritten = Result<(PlainKind, Value), String>;

/// How often one node may be replaced (a config node holding an enum member takes two).
const MAX_REPLACEMENTS: usize = 8;

impl Walk {
    fn run(graph: Graph, root: NodeId) -> Result<Walk, TorchError> {
        let taken = scan(&graph, root)?
            .storages
            .into_iter()
            .map(|s| s.key)
            .collect();
        let mut walk = Walk {
            graph,
            found: Vec::new(),
            storages: Vec::new(),
            visited: HashSet::new(),
            taken,
            next_key: 0,
        };
        walk.visit(root, &mut Vec::new())?;
        Ok(walk)
    }

    fn visit(&mut self, node: NodeId, path: &mut Vec<String>) -> Result<(), TorchError> {
        if path.len() > MAX_DEPTH {
            return Err(TorchError::TooDeep);
        }
        if !self.visited.insert(node) {
            return Ok(());
        }
        for _ in 0..MAX_REPLACEMENTS {
            let class = self.class_name(node);
            match self.step(node)? {
                Step::Keep => return self.visit_parts(node, path),
                Step::Replace(kind, value) => {
                    self.graph.set(node, value);
                    self.record(class, path, Ok(kind));
                }
                Step::Refuse(why) => {
                    self.record(class, path, Err(why));
                    return Ok(());
                }
            }
        }
        self.record(
            self.class_name(node),
            path,
            Err("it nests too many wrapped values".into()),
        );
        Ok(())
    }

    fn record(&mut self, class: String, path: &[String], plain: Result<PlainKind, String>) {
        let path = if path.is_empty() {
            "<root>".to_owned()
        } else {
            path.join("/")
        };
        self.found.push(Found { class, path, plain });
    }

    /// The walk into an allowed value's parts: mapping values under their keys, list and
    /// tuple items under their index, everything else (keys, call arguments, state) unlabelled.
    fn visit_parts(&mut self, node: NodeId, path: &mut Vec<String>) -> Result<(), TorchError> {
        let value = self.graph.get(node).clone();
        let mut labelled: Vec<(Option<String>, NodeId)> = Vec::new();
        match &value {
            Value::List(items) | Value::Tuple(items) => {
                labelled.extend(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, &v)| (Some(i.to_string()), v)),
                );
            }
            Value::Object(object) if self.graph.mapping(node).is_some() => {
                self.label_pairs(&object.dict_items, &mut labelled);
                let rest = Object {
                    dict_items: Vec::new(),
                    ..object.clone()
                };
                labelled.extend(
                    Value::Object(rest)
                        .children()
                        .into_iter()
                        .map(|c| (None, c)),
                );
            }
            Value::Dict(pairs) => self.label_pairs(pairs, &mut labelled),
            other => labelled.extend(other.children().into_iter().map(|c| (None, c))),
        }
        for (label, child) in labelled {
            let pushed = label.map(|l| path.push(l)).is_some();
            self.visit(child, path)?;
            if pushed {
                path.pop();
            }
        }
        Ok(())
    }

    fn label_pairs(&self, pairs: &[(NodeId, NodeId)], out: &mut Vec<(Option<String>, NodeId)>) {
        for &(key, value) in pairs {
            let label = match self.graph.get(key) {
                Value::Str(s) => s.clone(),
                Value::Int(i) => i.to_string(),
                other => format!("<{}>", other.kind()),
            };
            out.push((None, key));
            out.push((Some(label), value));
        }
    }

    /// The class or function a value calls or is, for reports.
    fn class_name(&self, node: NodeId) -> String {
        match self.graph.get(node) {
            Value::Global(g) => g.to_string(),
            Value::FrozenSet(_) => "builtins.frozenset".to_owned(),
            Value::Object(object) => {
                let callable = match object.constructor {
                    Constructor::Reduce { callable, .. } => callable,
                    Constructor::NewObj { class, .. } | Constructor::NewObjEx { class, .. } => {
                        class
                    }
                };
                match self.graph.global(callable) {
                    // Python 2's `copy_reg._reconstructor(cls, base, state)`: named by `cls`.
                    Some(g) if g.is("copyreg", "_reconstructor") => self
                        .reconstructed_class(object)
                        .map_or_else(|| g.to_string(), |c| c.to_string()),
                    Some(g) => g.to_string(),
                    None => "a computed callable".to_owned(),
                }
            }
            other => other.kind().to_owned(),
        }
    }

    fn reconstructed_class(&self, object: &Object) -> Option<&ckpt_pickle::Global> {
        let Constructor::Reduce { args, .. } = object.constructor else {
            return None;
        };
        self.graph.global(*self.graph.tuple(args)?.first()?)
    }

    fn step(&mut self, node: NodeId) -> Result<Step, TorchError> {
        let object = match self.graph.get(node) {
            Value::FrozenSet(_) => {
                return Ok(Step::Refuse(
                    "torch's weights_only loader builds no frozenset".into(),
                ))
            }
            Value::Global(g) if !allowlist::is_allowed(g) => {
                return Ok(Step::Refuse(
                    "a class or function stored as a value, not an object".into(),
                ))
            }
            Value::Object(object) => object.clone(),
            _ => return Ok(Step::Keep),
        };
        let (callable, newobj_ex) = match object.constructor {
            Constructor::Reduce { callable, .. } => (callable, false),
            Constructor::NewObj { class, .. } => (class, false),
            Constructor::NewObjEx { class, .. } => (class, true),
        };
        let Some(global) = self.graph.global(callable).cloned() else {
            return Ok(Step::Refuse(
                "it calls a value the pickle computed, not a named global".into(),
            ));
        };
        if allowlist::is_allowed(&global) {
            return Ok(if newobj_ex {
                Step::Refuse(
                    "built with keyword arguments (`copyreg.__newobj_ex__`), which torch's weights_only loader refuses".into(),
                )
            } else {
                Step::Keep
            });
        }
        let outcome = self.rewrite(node, &global, &object)?;
        Ok(match outcome {
            Some(Ok((kind, value))) => Step::Replace(kind, value),
            Some(Err(why)) => Step::Refuse(why),
            None => Step::Refuse(
                "it is not on torch's weights_only allow-list, and it is no Namespace, omegaconf config, numpy value, path or enum member the plain rewrite represents".into(),
            ),
        })
    }

    /// The plain value of a call of `global` (off the allow-list), `None` when no rewrite
    /// knows it.
    fn rewrite(
        &mut self,
        node: NodeId,
        global: &ckpt_pickle::Global,
        object: &Object,
    ) -> Result<Option<Rewritten>, TorchError> {
        let graph = &self.graph;
        let tag = |kind: PlainKind| move |value: Value| (kind, value);
        let canonical = global.canonical();
        if canonical.is("argparse", "Namespace")
            && matches!(object.constructor, Constructor::NewObj { .. })
        {
            return Ok(Some(
                objects::attributes(graph, object).map(tag(PlainKind::Namespace)),
            ));
        }
        if canonical.is("copyreg", "_reconstructor") {
            return Ok(match self.reconstructed_class(object) {
                Some(class) if class.is("argparse", "Namespace") => {
                    Some(objects::attributes(graph, object).map(tag(PlainKind::Namespace)))
                }
                _ => None,
            });
        }
        if let Some(what) = Omegaconf::of(&canonical) {
            let kind = match what {
                Omegaconf::Dict => PlainKind::DictConfig,
                Omegaconf::List => PlainKind::ListConfig,
                Omegaconf::Node => PlainKind::ConfigNode,
            };
            return Ok(Some(objects::omegaconf(graph, object, what).map(tag(kind))));
        }
        if let Some(call) = NumpyCall::of(&canonical) {
            return Ok(Some(match call {
                NumpyCall::Array => match numpy::array(graph, object) {
                    Ok(array) => Ok((PlainKind::NumpyArray, self.tensor(array)?)),
                    Err(why) => Err(why),
                },
                NumpyCall::Scalar => {
                    numpy::scalar(&mut self.graph, object).map(tag(PlainKind::NumpyScalar))
                }
                NumpyCall::Dtype => numpy::dtype_name(graph, node).map(tag(PlainKind::NumpyDtype)),
            }));
        }
        if canonical.is("torch.torch_version", "TorchVersion") {
            return Ok(Some(
                objects::string_argument(graph, object).map(tag(PlainKind::VersionString)),
            ));
        }
        let Constructor::Reduce { args, .. } = object.constructor else {
            return Ok(None);
        };
        if let Some(windows) = objects::path_flavour(&canonical) {
            return Ok(Some(
                objects::path(graph, args, windows).map(tag(PlainKind::Path)),
            ));
        }
        if canonical.is("collections", "defaultdict") {
            return Ok(Some(
                objects::defaultdict_items(object).map(tag(PlainKind::DefaultDict)),
            ));
        }
        if Rebuild::from_global(&canonical.module, &canonical.name) == Some(Rebuild::Npu) {
            return Ok(Some(Err(
                "a torch_npu tensor; add `--to cpu` (remap runs before the plain rewrite and makes it a plain tensor)".into(),
            )));
        }
        Ok(objects::enum_value(graph, &canonical, object).map(|v| Ok((PlainKind::Enum, v))))
    }

    /// A fresh tensor value over a new storage holding `array`'s bytes.
    fn tensor(&mut self, array: numpy::Array) -> Result<Value, TorchError> {
        let key = loop {
            let key = self.next_key.to_string();
            self.next_key += 1;
            if self.taken.insert(key.clone()) {
                break key;
            }
        };
        let tensor =
            fresh_tensor(&mut self.graph, array.dtype, &array.shape, &key).ok_or_else(|| {
                TorchError::Invalid {
                    what: format!(
                        "a numpy array of shape {:?} is too large for a tensor",
                        array.shape
                    ),
                }
            })?;
        self.storages.push((key, array.bytes));
        Ok(self.graph.get(tensor).clone())
    }
}

#[cfg(test)]
mod tests;
