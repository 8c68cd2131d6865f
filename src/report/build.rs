//! Building the [`InspectReport`] of an opened checkpoint.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::security::{Class, FileScan};
use ckpt_formats::torch::state_dict::{find_state_dicts, is_state_dict};
use ckpt_formats::torch::tensor::composite;
use ckpt_formats::torch::{allowlist, amp, Checkpoint, Format, Scan, TensorRef, TorchError};
use ckpt_formats::transform::{prefix, weights_only_blockers, Found};
use ckpt_pickle::{Constructor, Graph, NodeId, Value};

use super::model::{
    AmpReport, AmpSettings, ApexScalerReport, ArchiveReport, BlockerReport, InspectReport, KeyMap,
    PyFloat, Scalar, ScanVerdict, StateDictReport, StructureNode,
};

/// How deep the `keys` structure goes, and how many entries one mapping shows.
const STRUCTURE_DEPTH: usize = 4;
const STRUCTURE_ENTRIES: usize = 64;

/// Builds the report for an opened checkpoint; `security` is the scan of the same open file,
/// whose globals (from every pickle in it) the report lists.
pub fn inspect(ckpt: &Checkpoint, security: &FileScan) -> Result<InspectReport, TorchError> {
    let graph = &ckpt.graph;
    let scan = &ckpt.scan;
    let archive = ckpt.zip.as_ref().map(|meta| ArchiveReport {
        archive_name: meta.prefix.clone(),
        version: meta.version.clone(),
        format_version: meta.format_version.clone(),
        storage_alignment: meta.storage_alignment,
        byteorder: meta.byteorder.clone(),
        records: meta.records,
    });
    let storages = scan.unique_storages();
    let bytes: u64 = storages.iter().filter_map(|s| s.nbytes()).sum();
    let objects = tensor_objects(graph, scan);
    let npu_rebuild_tensors = scan
        .tensors
        .iter()
        .filter(|t| t.rebuild == ckpt_formats::torch::Rebuild::Npu)
        .count();

    let mut prefixes = BTreeSet::new();
    let mut state_dicts = Vec::new();
    for sd in find_state_dicts(graph, ckpt.root)? {
        let keys = string_keys(graph, sd);
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let found = prefix::detect(&refs);
        prefixes.extend(found.iter().cloned());
        state_dicts.push(state_dict_report(
            graph,
            scan,
            sd,
            path_to(graph, ckpt.root, sd),
            found,
        ));
    }
    // TorchScript archives name their own classes (`__torch__.…`) and jit helpers; torch.jit
    // resolves those against the archive's code, never by importing Python.
    let archive_internal = |g: &ckpt_pickle::Global| {
        ckpt.format == Format::TorchScript
            && (g.module.starts_with("__torch__") || g.module == "torch.jit._pickle")
    };
    // From every pickle the scan read (sys_info, constants.pkl, extra records…), not only
    // the object pickle: the same globals `ckpt scan` reports.
    let unsafe_globals: BTreeSet<String> = security
        .uses()
        .filter(|u| !allowlist::is_allowed(&u.global) && !archive_internal(&u.global))
        .map(|u| u.path.clone())
        .collect();
    Ok(InspectReport {
        file: ckpt.path.display().to_string(),
        format: ckpt.format.name().to_owned(),
        archive,
        tensors: objects.len(),
        storages: storages.len(),
        bytes,
        dtypes: count(objects.iter().map(|t| t.dtype.to_string())),
        locations: count(objects.iter().map(|t| t.storage.location.clone())),
        npu_rebuild_tensors,
        prefixes,
        state_dicts,
        amp: amp_report(graph, ckpt.root),
        scalars: scalars(graph, ckpt.root),
        keys: structure(graph, scan, ckpt.root, 0),
        scan: ScanVerdict {
            status: security.status().name().to_owned(),
            dangerous: security.paths_of(Class::Dangerous),
            unknown: security.paths_of(Class::Unknown),
        },
        unsafe_globals,
        weights_only_blockers: if ckpt.format == Format::TorchScript {
            Vec::new()
        } else {
            blockers(&weights_only_blockers(graph, ckpt.root)?)
        },
    })
}

/// How many key paths one blocker entry lists.
const BLOCKER_PATHS: usize = 5;

/// The blocking objects grouped by class, in the order first met.
fn blockers(found: &[Found]) -> Vec<BlockerReport> {
    let mut out: Vec<BlockerReport> = Vec::new();
    for f in found {
        let index = match out.iter().position(|b| b.class == f.class) {
            Some(i) => i,
            None => {
                out.push(BlockerReport {
                    class: f.class.clone(),
                    count: 0,
                    paths: Vec::new(),
                    plain: f.plain.as_ref().ok().copied(),
                    refused: f.plain.as_ref().err().cloned(),
                });
                out.len() - 1
            }
        };
        let entry = &mut out[index];
        entry.count += 1;
        if entry.paths.len() < BLOCKER_PATHS {
            entry.paths.push(f.path.clone());
        }
        // One object of the class that cannot be made plain makes the class refused.
        if let Err(why) = &f.plain {
            entry.plain = None;
            entry.refused.get_or_insert_with(|| why.clone());
        }
    }
    out
}

/// The tensors as torch counts them: a sparse or nested tensor is one tensor (represented by
/// its values), not the dense tensors it is built from.
fn tensor_objects<'s>(graph: &Graph, scan: &'s Scan) -> Vec<&'s TensorRef> {
    let mut parts = HashSet::new();
    let mut values = HashMap::new();
    for &node in &scan.composites {
        if let Some(c) = composite(graph, scan, node) {
            parts.extend(c.parts.iter().copied());
            values.insert(c.values, ());
        }
    }
    scan.tensors
        .iter()
        .filter(|t| !parts.contains(&t.node) || values.contains_key(&t.node))
        .collect()
}

fn count(items: impl Iterator<Item = String>) -> BTreeMap<String, usize> {
    let mut map = BTreeMap::new();
    for item in items {
        *map.entry(item).or_insert(0) += 1;
    }
    map
}

fn string_keys(graph: &Graph, node: NodeId) -> Vec<String> {
    graph
        .mapping(node)
        .unwrap_or(&[])
        .iter()
        .filter_map(|&(k, _)| graph.str(k).map(str::to_owned))
        .collect()
}

/// The tensor behind a state-dict value: the value itself, or the tensor a Parameter wraps.
fn tensor_of(scan: &Scan, node: NodeId) -> Option<&TensorRef> {
    let inner = scan.parameters.get(&node).copied().unwrap_or(node);
    scan.tensor_at(inner)
}

fn state_dict_report(
    graph: &Graph,
    scan: &Scan,
    sd: NodeId,
    path: Option<String>,
    prefixes: Vec<String>,
) -> StateDictReport {
    let mut tensors = 0usize;
    let mut elements = 0u64;
    let mut bytes = 0u64;
    let mut dtypes = Vec::new();
    for &(_, value) in graph.mapping(sd).unwrap_or(&[]) {
        if let Some(t) = tensor_of(scan, value) {
            tensors += 1;
            elements += t.numel();
            bytes += t.numel() * t.dtype.element_size() as u64;
            dtypes.push(t.dtype.to_string());
        }
    }
    StateDictReport {
        path,
        tensors,
        parameters: elements,
        bytes,
        dtypes: count(dtypes.into_iter()),
        prefixes,
    }
}

/// The key path from `root` to `target` through mappings (`state_dict`, `model/ema`), `""` for
/// the root itself.
fn path_to(graph: &Graph, root: NodeId, target: NodeId) -> Option<String> {
    fn walk(
        graph: &Graph,
        node: NodeId,
        target: NodeId,
        depth: usize,
        seen: &mut HashSet<NodeId>,
    ) -> Option<Vec<String>> {
        if node == target {
            return Some(Vec::new());
        }
        if depth == 0 || !seen.insert(node) {
            return None;
        }
        for &(k, v) in graph.mapping(node)? {
            let key = key_text(graph, k);
            if let Some(mut rest) = walk(graph, v, target, depth - 1, seen) {
                rest.insert(0, key);
                return Some(rest);
            }
        }
        None
    }
    walk(graph, root, target, 6, &mut HashSet::new()).map(|p| p.join("/"))
}

fn key_text(graph: &Graph, key: NodeId) -> String {
    match graph.get(key) {
        Value::Str(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        other => format!("<{}>", other.kind()),
    }
}

fn amp_report(graph: &Graph, root: NodeId) -> Option<AmpReport> {
    let found = amp::find(graph, root)?;
    let settings = match &found.state {
        amp::AmpState::Native(s) | amp::AmpState::Npu { scaler: s, .. } => AmpSettings::Scaler {
            scale: PyFloat(s.scale),
            growth_factor: PyFloat(s.growth_factor),
            backoff_factor: PyFloat(s.backoff_factor),
            growth_interval: s.growth_interval,
            growth_tracker: s.growth_tracker,
            dynamic: match found.state {
                amp::AmpState::Npu { dynamic, .. } => Some(dynamic),
                _ => None,
            },
        },
        amp::AmpState::Apex(scalers) => AmpSettings::Apex {
            scalers: scalers
                .iter()
                .map(|s| ApexScalerReport {
                    name: format!("loss_scaler{}", s.index),
                    loss_scale: PyFloat(s.loss_scale),
                    unskipped: s.unskipped,
                })
                .collect(),
        },
        amp::AmpState::Disabled => AmpSettings::Disabled {},
    };
    Some(AmpReport {
        kind: found.state.kind().to_owned(),
        path: found.path.join("/"),
        settings,
    })
}

/// Top-level entries holding a plain number, string or bool (`epoch`, `arch`, `best_acc1`).
fn scalars(graph: &Graph, root: NodeId) -> KeyMap<Scalar> {
    let mut out = KeyMap::default();
    for &(k, v) in graph.mapping(root).unwrap_or(&[]) {
        if let Some(value) = scalar(graph, v) {
            out.insert(key_text(graph, k), value);
        }
    }
    out
}

fn scalar(graph: &Graph, node: NodeId) -> Option<Scalar> {
    match graph.get(node) {
        Value::Int(i) => Some(Scalar::Int(*i)),
        Value::BigInt(b) => Some(Scalar::BigInt(big_int_text(b))),
        Value::Float(f) => Some(Scalar::Float(PyFloat(*f))),
        Value::Str(s) => Some(Scalar::Str(s.clone())),
        Value::Bool(b) => Some(Scalar::Bool(*b)),
        Value::None => Some(Scalar::None),
        _ => graph.bytes(node).map(|b| Scalar::Bytes(bytes_preview(&b))),
    }
}

/// The type name [`structure`] gives a scalar (`bytes` for the `_codecs.encode` form too).
fn scalar_kind(graph: &Graph, node: NodeId) -> &'static str {
    match graph.bytes(node) {
        Some(_) => "bytes",
        None => graph.get(node).kind(),
    }
}

/// The decimal digits of a `LONG1` integer (little-endian two's complement), exactly.
fn big_int_text(le: &[u8]) -> String {
    let negative = le.last().is_some_and(|&b| b & 0x80 != 0);
    // Magnitude, big-endian: negate a negative number (invert, add one).
    let mut magnitude: Vec<u8> = le
        .iter()
        .rev()
        .map(|&b| if negative { !b } else { b })
        .collect();
    if negative {
        for byte in magnitude.iter_mut().rev() {
            let (sum, carry) = byte.overflowing_add(1);
            *byte = sum;
            if !carry {
                break;
            }
        }
    }
    let mut digits = Vec::new();
    while magnitude.iter().any(|&b| b != 0) {
        let mut remainder = 0u32;
        for byte in magnitude.iter_mut() {
            let value = (remainder << 8) | u32::from(*byte);
            *byte = (value / 10) as u8;
            remainder = value % 10;
        }
        digits.push(b'0' + remainder as u8);
    }
    if digits.is_empty() {
        digits.push(b'0');
    }
    if negative {
        digits.push(b'-');
    }
    digits.reverse();
    String::from_utf8_lossy(&digits).into_owned()
}

/// How many bytes a preview shows.
const BYTES_PREVIEW: usize = 32;

/// Python's `repr` of the first [`BYTES_PREVIEW`] bytes, `…` after when there are more.
fn bytes_preview(bytes: &[u8]) -> String {
    let mut out = String::from("b'");
    for &b in bytes.iter().take(BYTES_PREVIEW) {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'\'' => out.push_str("\\'"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x20..=0x7e => out.push(char::from(b)),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('\'');
    if bytes.len() > BYTES_PREVIEW {
        out.push('…');
    }
    out
}

/// A nested summary of the object: mappings show their keys, tensors their dtype and shape.
fn structure(graph: &Graph, scan: &Scan, node: NodeId, depth: usize) -> StructureNode {
    if let Some(t) = tensor_of(scan, node) {
        return StructureNode {
            dtype: Some(t.dtype.to_string()),
            shape: Some(t.shape.clone()),
            ..StructureNode::of("tensor")
        };
    }
    let entries = |pairs: &[(NodeId, NodeId)], child_depth: usize| {
        let mut keys = KeyMap::default();
        for &(k, v) in pairs.iter().take(STRUCTURE_ENTRIES) {
            keys.insert(key_text(graph, k), structure(graph, scan, v, child_depth));
        }
        keys
    };
    if is_state_dict(graph, node) {
        let pairs = graph.mapping(node).unwrap_or(&[]);
        let keys = if depth < STRUCTURE_DEPTH {
            entries(pairs, STRUCTURE_DEPTH)
        } else {
            KeyMap::default()
        };
        return StructureNode {
            len: Some(pairs.len()),
            keys: Some(keys),
            ..StructureNode::of("state_dict")
        };
    }
    if let Some(bytes) = graph.bytes(node) {
        return StructureNode {
            len: Some(bytes.len()),
            value: Some(Scalar::Bytes(bytes_preview(&bytes))),
            ..StructureNode::of("bytes")
        };
    }
    if let Some(value) = scalar(graph, node) {
        return StructureNode {
            value: Some(value),
            ..StructureNode::of(scalar_kind(graph, node))
        };
    }
    let type_name = type_name(graph, node);
    match graph.mapping(node) {
        Some(pairs) if depth < STRUCTURE_DEPTH => StructureNode {
            len: Some(pairs.len()),
            keys: Some(entries(pairs, depth + 1)),
            ..StructureNode::of(type_name)
        },
        Some(pairs) => StructureNode {
            len: Some(pairs.len()),
            ..StructureNode::of(type_name)
        },
        None => match graph.get(node) {
            Value::List(items) | Value::Tuple(items) | Value::Set(items) => StructureNode {
                len: Some(items.len()),
                ..StructureNode::of(type_name)
            },
            _ => StructureNode::of(type_name),
        },
    }
}

fn type_name(graph: &Graph, node: NodeId) -> String {
    match graph.get(node) {
        Value::Object(object) => {
            let class = match object.constructor {
                Constructor::Reduce { callable, .. } => callable,
                Constructor::NewObj { class, .. } | Constructor::NewObjEx { class, .. } => class,
            };
            graph
                .global(class)
                .map_or_else(|| "object".to_owned(), |g| g.canonical().to_string())
        }
        other => other.kind().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn big_ints_keep_every_digit() {
        // 2**70, little-endian two's complement as LONG1 writes it.
        let mut le = vec![0u8; 9];
        le[8] = 0x40;
        assert_eq!(big_int_text(&le), "1180591620717411303424");
        // -(2**70)
        let mut neg = vec![0u8; 9];
        neg[8] = 0xc0;
        assert_eq!(big_int_text(&neg), "-1180591620717411303424");
        assert_eq!(big_int_text(&[0xff]), "-1");
        assert_eq!(big_int_text(&[]), "0");
    }

    #[test]
    fn nan_and_infinities_are_spelled_not_nulled() {
        let json = |f: f64| serde_json::to_string(&PyFloat(f)).expect("serializes");
        assert_eq!(json(f64::NAN), "\"nan\"");
        assert_eq!(json(f64::INFINITY), "\"inf\"");
        assert_eq!(json(f64::NEG_INFINITY), "\"-inf\"");
        assert_eq!(json(0.5), "0.5");
    }

    #[test]
    fn bytes_show_as_a_python_preview() {
        assert_eq!(bytes_preview(b"ab\x00'"), "b'ab\\x00\\''");
        let long = vec![b'x'; 40];
        assert!(bytes_preview(&long).ends_with("'…"));
    }

    #[test]
    fn codecs_encode_is_read_as_bytes() {
        let mut g = Graph::new();
        let callable = g.add(Value::Global(ckpt_pickle::Global::new("_codecs", "encode")));
        let text = g.add(Value::Str("\u{0}\u{ff}".into()));
        let encoding = g.add(Value::Str("latin1".into()));
        let args = g.add(Value::Tuple(vec![text, encoding]));
        let node = g.add(Value::Object(ckpt_pickle::Object::new(
            Constructor::Reduce { callable, args },
        )));
        assert_eq!(g.bytes(node), Some(vec![0, 0xff]));
        assert_eq!(scalar_kind(&g, node), "bytes");
    }
}
