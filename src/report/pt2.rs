//! What `ckpt inspect` reports about a `.pt2` archive: the program's shape (ops, input,
//! symbols) and its stored tensors, as one JSON value with a text view rendered from it.

use std::collections::BTreeMap;

use serde_json::{json, Value as Json};

use ckpt_aten::program::{symbol_name, Argument, InputSpec, SymInt};
use ckpt_import::pt2::Pt2Archive;

/// The report for `archive`, opened from `file`.
pub fn summary(file: &str, archive: &Pt2Archive) -> Json {
    let module = &archive.program.graph_module;
    let graph = &module.graph;
    let mut ops: BTreeMap<&str, u64> = BTreeMap::new();
    for node in &graph.nodes {
        let op = node
            .target
            .strip_prefix("torch.ops.")
            .unwrap_or(&node.target);
        *ops.entry(op).or_default() += 1;
    }
    let mut kinds: BTreeMap<&str, u64> = BTreeMap::new();
    let mut inputs = Vec::new();
    for spec in &module.signature.input_specs {
        let kind = match spec {
            InputSpec::Parameter { .. } => "parameters",
            InputSpec::Buffer { .. } => "buffers",
            InputSpec::TensorConstant { .. } => "constants",
            InputSpec::UserInput(arg) => {
                inputs.push(user_input(arg, archive));
                continue;
            }
            InputSpec::Other(kind) => kind,
        };
        *kinds.entry(kind).or_default() += 1;
    }
    let mut dtypes: BTreeMap<&str, u64> = BTreeMap::new();
    let mut bytes = 0u64;
    let mut tensors = 0u64;
    for (_, stored) in archive.stored_tensors() {
        tensors += 1;
        if let Some(t) = stored {
            *dtypes.entry(t.layout.dtype.name()).or_default() += 1;
            let size = t.layout.dtype.element_size() as u64;
            bytes = bytes.saturating_add(t.layout.numel().unwrap_or(0).saturating_mul(size));
        }
    }
    let symbols: BTreeMap<&str, Json> = archive
        .program
        .range_constraints
        .iter()
        .map(|(name, r)| (name.as_str(), json!({"min": r.min_val, "max": r.max_val})))
        .collect();
    json!({
        "file": file,
        "format": "pt2",
        "layout": archive.layout.name(),
        "schema": archive.schema.to_string(),
        "archive_name": archive.archive_name(),
        "records": archive.records(),
        "torch_version": archive.program.torch_version,
        "nodes": graph.nodes.len(),
        "ops": ops,
        "inputs": inputs,
        "outputs": graph.outputs.len(),
        "state": kinds,
        "tensors": tensors,
        "bytes": bytes,
        "dtypes": dtypes,
        "symbols": symbols,
    })
}

/// `{name, sizes}` of a user input; symbolic sizes by their symbol (`s77`).
fn user_input(arg: &Argument, archive: &Pt2Archive) -> Json {
    let Some(name) = arg.tensor_name() else {
        return json!({"kind": arg.kind()});
    };
    let sizes: Vec<Json> = archive
        .program
        .graph_module
        .graph
        .tensor_values
        .get(name)
        .map(|meta| {
            meta.sizes
                .iter()
                .map(|s| match s {
                    SymInt::Int(n) => json!(n),
                    SymInt::Expr(e) | SymInt::Name(e) => json!(symbol_name(e)),
                })
                .collect()
        })
        .unwrap_or_default();
    json!({"name": name, "sizes": sizes})
}

/// `pt2 (archive `model`, schema 8.20, torch 2.13.0)`, or for the flat layout
/// `pt2 (flat layout, schema 1)` (torch wrote its version into the program from 2.5 on).
fn format_line(report: &Json) -> String {
    let text = |k: &str| report.get(k).and_then(Json::as_str);
    let mut parts = vec![match text("layout") {
        Some("flat") => "flat layout".to_owned(),
        _ => format!("archive `{}`", text("archive_name").unwrap_or_default()),
    }];
    parts.extend(text("schema").map(|s| format!("schema {s}")));
    parts.extend(text("torch_version").map(|t| format!("torch {t}")));
    format!("pt2 ({})", parts.join(", "))
}

/// The text view of [`summary`].
pub fn render_text(report: &Json) -> String {
    let get = |k: &str| report.get(k).cloned().unwrap_or(Json::Null);
    let plain = |v: &Json| match v {
        Json::String(s) => s.clone(),
        other => other.to_string(),
    };
    let counts = |v: &Json| {
        v.as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, n)| format!("{k} {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    let inputs: Vec<String> = get("inputs")
        .as_array()
        .map(|a| {
            a.iter()
                .map(|i| format!("{} {}", plain(&i["name"]), i["sizes"]))
                .collect()
        })
        .unwrap_or_default();
    let lines = [
        ("file", plain(&get("file"))),
        ("format", format_line(report)),
        ("inputs", inputs.join(", ")),
        ("outputs", plain(&get("outputs"))),
        (
            "symbols",
            match get("symbols").as_object() {
                Some(m) if !m.is_empty() => plain(&get("symbols")),
                _ => "none (every size was traced in)".to_owned(),
            },
        ),
        ("state", counts(&get("state"))),
        (
            "tensors",
            format!("{} ({} bytes)", get("tensors"), get("bytes")),
        ),
        ("dtypes", counts(&get("dtypes"))),
        ("nodes", plain(&get("nodes"))),
        ("ops", counts(&get("ops"))),
    ];
    lines
        .iter()
        .map(|(label, value)| format!("{label:<15} {value}\n"))
        .collect()
}
