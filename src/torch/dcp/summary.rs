//! What `ckpt inspect DIR` reports about a DCP folder, as JSON, and its text rendering.

use std::collections::BTreeMap;

use serde_json::{json, Value as Json};

use super::{EntryKind, Folder};

/// The report: ranks, files, every entry with its chunks, totals by dtype, and every
/// layout problem ([`Folder::problems`]). `scan` is the `.metadata` scan status.
pub fn report(folder: &Folder, scan: &str) -> Json {
    let mut dtypes: BTreeMap<&str, u64> = BTreeMap::new();
    let (mut tensors, mut values, mut chunks, mut bytes) = (0u64, 0u64, 0u64, 0u64);
    let mut entries = Vec::new();
    for entry in &folder.metadata.entries {
        match &entry.kind {
            EntryKind::Bytes => {
                values += 1;
                entries.push(json!({"key": entry.fqn, "kind": "value"}));
            }
            EntryKind::Tensor {
                dtype,
                size,
                chunks: list,
            } => {
                tensors += 1;
                chunks += list.len() as u64;
                *dtypes.entry(dtype.name()).or_default() += 1;
                let nbytes = size
                    .iter()
                    .try_fold(dtype.element_size() as u64, |n, &s| n.checked_mul(s));
                bytes = bytes.saturating_add(nbytes.unwrap_or(u64::MAX));
                let boxes: Vec<Json> = list
                    .iter()
                    .map(|c| {
                        let file = folder
                            .metadata
                            .storage
                            .get(&(entry.fqn.clone(), Some(c.offsets.clone())))
                            .map(|i| i.relative_path.clone());
                        json!({"offsets": c.offsets, "sizes": c.sizes, "file": file})
                    })
                    .collect();
                entries.push(json!({
                    "key": entry.fqn,
                    "kind": "tensor",
                    "dtype": dtype.name(),
                    "shape": size,
                    "bytes": nbytes,
                    "chunks": boxes,
                }));
            }
        }
    }
    let files: Vec<Json> = folder
        .files
        .iter()
        .map(|(name, size)| json!({"name": name, "bytes": size}))
        .collect();
    let problems: Vec<String> = folder.problems().iter().map(ToString::to_string).collect();
    json!({
        "folder": folder.dir.display().to_string(),
        "format": "dcp",
        "version": folder.metadata.version,
        "ranks": folder.ranks(),
        "files": files,
        "tensors": tensors,
        "values": values,
        "chunks": chunks,
        "bytes": bytes,
        "dtypes": dtypes,
        "entries": entries,
        "problems": problems,
        "scan": scan,
    })
}

/// The text view of [`report`].
pub fn render_text(report: &Json) -> String {
    let get = |k: &str| report.get(k).cloned().unwrap_or(Json::Null);
    let mut out = String::new();
    let mut line = |label: &str, value: String| out.push_str(&format!("{label:<15} {value}\n"));
    line("folder", text(&get("folder")));
    line("format", format!("dcp (version {})", text(&get("version"))));
    let ranks: Vec<String> = get("ranks")
        .as_array()
        .map(|r| r.iter().map(ToString::to_string).collect())
        .unwrap_or_default();
    line("ranks", format!("{} ({})", ranks.len(), ranks.join(", ")));
    line(
        "tensors",
        format!(
            "{} in {} chunks, {} bytes",
            get("tensors"),
            get("chunks"),
            get("bytes")
        ),
    );
    line("values", get("values").to_string());
    let dtypes: Vec<String> = get("dtypes")
        .as_object()
        .map(|m| m.iter().map(|(k, v)| format!("{k} {v}")).collect())
        .unwrap_or_default();
    line("dtypes", dtypes.join(", "));
    line("scan", text(&get("scan")));
    let problems = get("problems");
    let problems = problems.as_array().cloned().unwrap_or_default();
    line(
        "problems",
        if problems.is_empty() {
            "none".into()
        } else {
            problems.len().to_string()
        },
    );
    for p in &problems {
        out.push_str(&format!("  {}\n", text(p)));
    }
    out.push('\n');
    for e in get("entries").as_array().cloned().unwrap_or_default() {
        let key = text(&e["key"]);
        if e["kind"] == "value" {
            out.push_str(&format!("  {key}  value\n"));
            continue;
        }
        let chunks = e["chunks"].as_array().map_or(0, Vec::len);
        out.push_str(&format!(
            "  {key}  {} {}  {chunks} chunk{}\n",
            text(&e["dtype"]),
            e["shape"],
            if chunks == 1 { "" } else { "s" }
        ));
    }
    out
}

/// A JSON value as report text: strings bare, null as `-`.
pub(crate) fn text(value: &Json) -> String {
    match value {
        Json::String(s) => s.clone(),
        Json::Null => "-".into(),
        other => other.to_string(),
    }
}
