//! What `ckpt inspect` reports about a checkpoint, as one JSON value.
//!
//! The JSON fields are documented in docs/guide.md; the text view is rendered from the same
//! value, so the two never disagree. JSON has no spelling for some Python values, so they
//! are given as strings: NaN and infinities as `"nan"`, `"inf"`, `"-inf"`; integers beyond
//! 64 bits as their decimal digits; bytes as a `b'…'` preview (with the length alongside in
//! `keys`).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde_json::{json, Map, Value as Json};

use crate::pickle::{Constructor, Graph, NodeId, Value};
use crate::security::{Class, FileScan};
use crate::torch::state_dict::{find_state_dicts, is_state_dict};
use crate::torch::tensor::composite;
use crate::torch::{allowlist, amp, Checkpoint, Format, Scan, TensorRef, TorchError};
use crate::transform::prefix;

/// How deep the `keys` structure goes, and how many entries one mapping shows.
const STRUCTURE_DEPTH: usize = 4;
const STRUCTURE_ENTRIES: usize = 64;

/// Builds the report for an opened checkpoint; `security` is the scan of the same open file,
/// whose globals (from every pickle in it) the report lists.
pub fn inspect(ckpt: &Checkpoint, security: &FileScan) -> Result<Json, TorchError> {
    let graph = &ckpt.graph;
    let scan = &ckpt.scan;
    let mut out = Map::new();
    out.insert("file".into(), json!(ckpt.path.display().to_string()));
    out.insert("format".into(), json!(ckpt.format.name()));
    if let Some(meta) = &ckpt.zip {
        out.insert("archive_name".into(), json!(meta.prefix));
        out.insert("version".into(), json!(meta.version));
        out.insert("format_version".into(), json!(meta.format_version));
        out.insert("storage_alignment".into(), json!(meta.storage_alignment));
        out.insert("byteorder".into(), json!(meta.byteorder));
        out.insert("records".into(), json!(meta.records));
    }
    let storages = scan.unique_storages();
    let bytes: u64 = storages.iter().filter_map(|s| s.nbytes()).sum();
    let objects = tensor_objects(graph, scan);
    out.insert("tensors".into(), json!(objects.len()));
    out.insert("storages".into(), json!(storages.len()));
    out.insert("bytes".into(), json!(bytes));
    out.insert(
        "dtypes".into(),
        json!(count(objects.iter().map(|t| t.dtype.to_string()))),
    );
    out.insert(
        "locations".into(),
        json!(count(objects.iter().map(|t| t.storage.location.clone()))),
    );
    let npu = scan
        .tensors
        .iter()
        .filter(|t| t.rebuild == crate::torch::Rebuild::Npu)
        .count();
    out.insert("npu_rebuild_tensors".into(), json!(npu));

    let state_dicts = find_state_dicts(graph, ckpt.root)?;
    let mut prefixes = BTreeSet::new();
    let mut reports = Vec::new();
    for &sd in &state_dicts {
        let keys = string_keys(graph, sd);
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let found = prefix::detect(&refs);
        prefixes.extend(found.iter().cloned());
        reports.push(state_dict_report(
            graph,
            scan,
            sd,
            path_to(graph, ckpt.root, sd),
            found,
        ));
    }
    out.insert("prefixes".into(), json!(prefixes));
    out.insert("state_dicts".into(), Json::Array(reports));
    out.insert("amp".into(), amp_report(graph, ckpt.root));
    out.insert("scalars".into(), scalars(graph, ckpt.root));
    out.insert("keys".into(), structure(graph, scan, ckpt.root, 0));
    // TorchScript archives name their own classes (`__torch__.…`) and jit helpers; torch.jit
    // resolves those against the archive's code, never by importing Python.
    let archive_internal = |g: &crate::pickle::Global| {
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
    out.insert(
        "scan".into(),
        json!({
            "status": security.status().name(),
            "dangerous": security.paths_of(Class::Dangerous),
            "unknown": security.paths_of(Class::Unknown),
        }),
    );
    out.insert("unsafe_globals".into(), json!(unsafe_globals));
    Ok(Json::Object(out))
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
) -> Json {
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
    json!({
        "path": path,
        "tensors": tensors,
        "parameters": elements,
        "bytes": bytes,
        "dtypes": count(dtypes.into_iter()),
        "prefixes": prefixes,
    })
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

fn amp_report(graph: &Graph, root: NodeId) -> Json {
    let Some(found) = amp::find(graph, root) else {
        return Json::Null;
    };
    let mut out = json!({ "kind": found.state.kind(), "path": found.path.join("/") });
    let fields = match &found.state {
        amp::AmpState::Native(s) | amp::AmpState::Npu { scaler: s, .. } => json!({
            "scale": float_json(s.scale),
            "growth_factor": float_json(s.growth_factor),
            "backoff_factor": float_json(s.backoff_factor),
            "growth_interval": s.growth_interval,
            "growth_tracker": s.growth_tracker,
        }),
        amp::AmpState::Apex(scalers) => json!({
            "scalers": scalers.iter().map(|s| json!({
                "name": format!("loss_scaler{}", s.index),
                "loss_scale": float_json(s.loss_scale),
                "unskipped": s.unskipped,
            })).collect::<Vec<_>>(),
        }),
        amp::AmpState::Disabled => json!({}),
    };
    if let (Some(out), Json::Object(fields)) = (out.as_object_mut(), fields) {
        out.extend(fields);
        if let amp::AmpState::Npu { dynamic, .. } = found.state {
            out.insert("dynamic".into(), json!(dynamic));
        }
    }
    out
}

/// Top-level entries holding a plain number, string or bool (`epoch`, `arch`, `best_acc1`).
fn scalars(graph: &Graph, root: NodeId) -> Json {
    let mut out = Map::new();
    for &(k, v) in graph.mapping(root).unwrap_or(&[]) {
        if let Some(value) = scalar(graph, v) {
            out.insert(key_text(graph, k), value);
        }
    }
    Json::Object(out)
}

fn scalar(graph: &Graph, node: NodeId) -> Option<Json> {
    match graph.get(node) {
        Value::Int(i) => Some(json!(i)),
        Value::BigInt(b) => Some(json!(big_int_text(b))),
        Value::Float(f) => Some(float_json(*f)),
        Value::Str(s) => Some(json!(s)),
        Value::Bool(b) => Some(json!(b)),
        Value::None => Some(Json::Null),
        _ => bytes_of(graph, node).map(|b| json!(bytes_preview(&b))),
    }
}

/// The type name [`structure`] gives a scalar (`bytes` for the `_codecs.encode` form too).
fn scalar_kind(graph: &Graph, node: NodeId) -> &'static str {
    match bytes_of(graph, node) {
        Some(_) => "bytes",
        None => graph.get(node).kind(),
    }
}

/// A float as JSON: a number when finite, else `"nan"`, `"inf"` or `"-inf"` (serde_json
/// would write `null`, losing the value).
fn float_json(f: f64) -> Json {
    if f.is_finite() {
        json!(f)
    } else {
        json!(float_text(f))
    }
}

/// Python's spelling of a float's value (`nan`, `inf`, `-inf`, `0.5`).
fn float_text(f: f64) -> String {
    if f.is_nan() {
        "nan".into()
    } else if f.is_infinite() {
        if f > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        f.to_string()
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

/// The bytes a node holds: `bytes`, `bytearray`, or Python 3's protocol-2 spelling
/// `_codecs.encode(text, 'latin1')`.
fn bytes_of(graph: &Graph, node: NodeId) -> Option<Vec<u8>> {
    match graph.get(node) {
        Value::Bytes(b) | Value::ByteArray(b) => Some(b.clone()),
        Value::Object(object) => {
            let Constructor::Reduce { callable, args } = object.constructor else {
                return None;
            };
            let global = graph.global(callable)?;
            if global.module != "_codecs" || global.name != "encode" {
                return None;
            }
            let args = graph.tuple(args)?;
            let text = graph.str(*args.first()?)?;
            text.chars()
                .map(|c| u8::try_from(u32::from(c)).ok())
                .collect()
        }
        _ => None,
    }
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
fn structure(graph: &Graph, scan: &Scan, node: NodeId, depth: usize) -> Json {
    if let Some(t) = tensor_of(scan, node) {
        return json!({ "type": "tensor", "dtype": t.dtype.to_string(), "shape": t.shape });
    }
    if is_state_dict(graph, node) {
        let pairs = graph.mapping(node).unwrap_or(&[]);
        let mut keys = Map::new();
        if depth < STRUCTURE_DEPTH {
            for &(k, v) in pairs.iter().take(STRUCTURE_ENTRIES) {
                keys.insert(
                    key_text(graph, k),
                    structure(graph, scan, v, STRUCTURE_DEPTH),
                );
            }
        }
        return json!({ "type": "state_dict", "len": pairs.len(), "keys": keys });
    }
    if let Some(bytes) = bytes_of(graph, node) {
        return json!({ "type": "bytes", "len": bytes.len(), "value": bytes_preview(&bytes) });
    }
    if let Some(value) = scalar(graph, node) {
        return json!({ "type": scalar_kind(graph, node), "value": value });
    }
    let type_name = type_name(graph, node);
    match graph.mapping(node) {
        Some(pairs) if depth < STRUCTURE_DEPTH => {
            let mut keys = Map::new();
            for &(k, v) in pairs.iter().take(STRUCTURE_ENTRIES) {
                keys.insert(key_text(graph, k), structure(graph, scan, v, depth + 1));
            }
            json!({ "type": type_name, "len": pairs.len(), "keys": keys })
        }
        Some(pairs) => json!({ "type": type_name, "len": pairs.len() }),
        None => match graph.get(node) {
            Value::List(items) | Value::Tuple(items) | Value::Set(items) => {
                json!({ "type": type_name, "len": items.len() })
            }
            _ => json!({ "type": type_name }),
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

/// Renders the report as indented text for a terminal.
pub fn render_text(report: &Json) -> String {
    let mut out = String::new();
    let get = |k: &str| report.get(k).cloned().unwrap_or(Json::Null);
    let line = |out: &mut String, label: &str, value: String| {
        out.push_str(&format!("{label:<15} {value}\n"));
    };
    line(&mut out, "file", text(&get("file")));
    let mut format = text(&get("format"));
    if let Some(name) = report.get("archive_name").and_then(Json::as_str) {
        format.push_str(&format!(
            " (archive `{name}`, version {}, format_version {})",
            text(&get("version")),
            text(&get("format_version"))
        ));
    }
    line(&mut out, "format", format);
    line(
        &mut out,
        "tensors",
        format!(
            "{} in {}, {}",
            get("tensors"),
            plural(get("storages").as_u64().unwrap_or(0), "storage"),
            human_bytes(get("bytes").as_u64().unwrap_or(0))
        ),
    );
    line(&mut out, "dtypes", counts(&get("dtypes")));
    line(&mut out, "locations", counts(&get("locations")));
    if get("npu_rebuild_tensors").as_u64().unwrap_or(0) > 0 {
        line(
            &mut out,
            "torch_npu",
            format!(
                "{} tensors use _rebuild_npu_tensor",
                get("npu_rebuild_tensors")
            ),
        );
    }
    line(&mut out, "prefixes", list(&get("prefixes")));
    let amp = get("amp");
    let amp_text = match amp.get("kind").and_then(Json::as_str) {
        Some(kind) => format!("{kind} at `{}`", text(&amp["path"])),
        None => "none".into(),
    };
    line(&mut out, "amp", amp_text);
    let scalars = get("scalars");
    let top_keys = report["keys"].get("keys");
    let scalar_text = scalars
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let kind = top_keys
                        .and_then(|keys| keys[k]["type"].as_str())
                        .unwrap_or("str");
                    format!("{k} = {}", value_text(kind, v))
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "none".into());
    line(&mut out, "scalars", scalar_text);
    line(&mut out, "unsafe globals", list(&get("unsafe_globals")));
    let verdict = &get("scan");
    line(
        &mut out,
        "scan",
        format!(
            "{} (dangerous: {}; unknown: {})",
            text(&verdict["status"]),
            list(&verdict["dangerous"]),
            list(&verdict["unknown"])
        ),
    );
    let state_dicts = get("state_dicts");
    let state_dicts = state_dicts.as_array().map_or(&[][..], Vec::as_slice);
    if !state_dicts.is_empty() {
        out.push_str("state dicts:\n");
    }
    for sd in state_dicts {
        let path = match sd["path"].as_str() {
            Some("") => "(the whole file)",
            Some(path) => path,
            None => "(inside a list or object)",
        };
        out.push_str(&format!(
            "  {path}: {}, {} parameters, {} ({})\n",
            plural(sd["tensors"].as_u64().unwrap_or(0), "tensor"),
            human_count(sd["parameters"].as_u64().unwrap_or(0)),
            human_bytes(sd["bytes"].as_u64().unwrap_or(0)),
            counts(&sd["dtypes"])
        ));
    }
    let keys = get("keys");
    if keys
        .get("keys")
        .and_then(Json::as_object)
        .is_some_and(|k| !k.is_empty())
    {
        out.push_str("structure:\n");
        render_structure(&mut out, &keys, 1);
    }
    out
}

/// A scalar's value for reading: text quoted, numbers (also `nan`, `inf` and integers beyond
/// 64 bits, which the JSON gives as strings) and bytes previews bare, `None` as Python
/// writes it.
fn value_text(kind: &str, value: &Json) -> String {
    match (kind, value) {
        ("str", _) => value.to_string(),
        (_, Json::String(s)) => s.clone(),
        (_, Json::Null) => "None".into(),
        (_, other) => other.to_string(),
    }
}

/// `1 entry`, `3 entries`, `2 tensors`.
fn plural(n: u64, noun: &str) -> String {
    match (n, noun.strip_suffix('y')) {
        (1, _) => format!("1 {noun}"),
        (_, Some(stem)) => format!("{n} {stem}ies"),
        (_, None) => format!("{n} {noun}s"),
    }
}

/// A count for reading: `512`, `11.7 M`, `1.3 B` (thousands, millions, billions).
fn human_count(n: u64) -> String {
    match n {
        0..=9_999 => n.to_string(),
        10_000..=999_999 => format!("{:.1} K", n as f64 / 1e3),
        1_000_000..=999_999_999 => format!("{:.1} M", n as f64 / 1e6),
        _ => format!("{:.1} B", n as f64 / 1e9),
    }
}

fn render_structure(out: &mut String, node: &Json, indent: usize) {
    let Some(keys) = node.get("keys").and_then(Json::as_object) else {
        return;
    };
    for (key, child) in keys {
        let pad = "  ".repeat(indent);
        let kind = text(&child["type"]);
        let len = child["len"].as_u64();
        let detail = match kind.as_str() {
            "tensor" => format!("{} {}", text(&child["dtype"]), child["shape"]),
            "bytes" => format!(
                "{} ({})",
                text(&child["value"]),
                plural(len.unwrap_or(0), "byte")
            ),
            _ if child.get("value").is_some() => value_text(&kind, &child["value"]),
            _ => len.map_or_else(String::new, |n| plural(n, "entry")),
        };
        out.push_str(format!("{pad}{key}: {kind} {detail}").trim_end());
        out.push('\n');
        render_structure(out, child, indent + 1);
    }
}

fn text(value: &Json) -> String {
    match value {
        Json::String(s) => s.clone(),
        Json::Null => "-".into(),
        other => other.to_string(),
    }
}

fn counts(value: &Json) -> String {
    value
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "none".into())
}

fn list(value: &Json) -> String {
    value
        .as_array()
        .map(|items| items.iter().map(text).collect::<Vec<_>>().join(", "))
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "none".into())
}

fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
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
        assert_eq!(float_json(f64::NAN), json!("nan"));
        assert_eq!(float_json(f64::INFINITY), json!("inf"));
        assert_eq!(float_json(f64::NEG_INFINITY), json!("-inf"));
        assert_eq!(float_json(0.5), json!(0.5));
        assert_eq!(value_text("float", &json!("inf")), "inf");
        assert_eq!(value_text("str", &json!("inf")), "\"inf\"");
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
        let callable = g.add(Value::Global(crate::pickle::Global::new(
            "_codecs", "encode",
        )));
        let text = g.add(Value::Str("\u{0}\u{ff}".into()));
        let encoding = g.add(Value::Str("latin1".into()));
        let args = g.add(Value::Tuple(vec![text, encoding]));
        let node = g.add(Value::Object(crate::pickle::Object::new(
            Constructor::Reduce { callable, args },
        )));
        assert_eq!(bytes_of(&g, node), Some(vec![0, 0xff]));
        assert_eq!(scalar_kind(&g, node), "bytes");
    }

    #[test]
    fn counts_read_naturally() {
        assert_eq!(plural(1, "entry"), "1 entry");
        assert_eq!(plural(2, "entry"), "2 entries");
        assert_eq!(plural(0, "tensor"), "0 tensors");
        assert_eq!(human_count(11_689_512), "11.7 M");
        assert_eq!(human_count(512), "512");
    }
}
