//! What `ckpt inspect DIR` reports about a DeepSpeed ZeRO folder, as JSON, and its text
//! rendering: the state dict `consolidate` would write, read from the pickles alone.

use std::collections::BTreeMap;

use serde_json::{json, Value as Json};

use super::super::summary::text;
use super::layout::{Layout, Role};
use super::Folder;

/// The report: stage, world size, files, every tensor of the consolidated state dict (role,
/// dtype, shape, pieces, tied names), totals by dtype. `scan` is the worst scan status of the
/// folder's files.
pub fn report(folder: &Folder, layout: &Layout, scan: &str) -> Json {
    let mut dtypes: BTreeMap<&str, u64> = BTreeMap::new();
    let (mut pieces, mut bytes) = (0u64, 0u64);
    let mut entries = Vec::new();
    for t in &layout.tensors {
        *dtypes.entry(t.dtype.name()).or_default() += 1;
        pieces += t.pieces.len() as u64;
        let nbytes = t
            .shape
            .iter()
            .try_fold(t.dtype.element_size() as u64, |n, &s| n.checked_mul(s));
        bytes = bytes.saturating_add(nbytes.unwrap_or(u64::MAX));
        let role = match t.role {
            Role::Buffer => "buffer",
            Role::Frozen => "frozen",
            Role::Trained => "trained",
        };
        let files: Vec<&str> = t.pieces.iter().map(|p| p.file.as_str()).collect();
        entries.push(json!({
            "key": t.name,
            "role": role,
            "dtype": t.dtype.name(),
            "stored_dtype": t.stored.map(|d| d.name()),
            "shape": t.shape,
            "bytes": nbytes,
            "pieces": files,
            "aliases": t.aliases,
        }));
    }
    let files: Vec<&str> = folder
        .model
        .iter()
        .chain(&folder.optim)
        .map(|(n, _)| n.as_str())
        .collect();
    json!({
        "folder": folder.dir.display().to_string(),
        "format": "deepspeed",
        "zero_stage": layout.stage,
        "world_size": layout.world,
        "ds_version": layout.ds_version,
        "files": files,
        "tensors": layout.tensors.len(),
        "tied": layout.tensors.iter().map(|t| t.aliases.len()).sum::<usize>(),
        "pieces": pieces,
        "bytes": bytes,
        "dtypes": dtypes,
        "entries": entries,
        "scan": scan,
    })
}

/// The text view of [`report`].
pub fn render_text(report: &Json) -> String {
    let get = |k: &str| report.get(k).cloned().unwrap_or(Json::Null);
    let mut out = String::new();
    let mut line = |label: &str, value: String| out.push_str(&format!("{label:<15} {value}\n"));
    line("folder", text(&get("folder")));
    line(
        "format",
        format!(
            "DeepSpeed ZeRO-{} (DeepSpeed {})",
            get("zero_stage"),
            text(&get("ds_version"))
        ),
    );
    line("ranks", get("world_size").to_string());
    let files = get("files").as_array().map_or(0, Vec::len);
    line("files", files.to_string());
    let tied = get("tied");
    line(
        "tensors",
        format!(
            "{} ({tied} tied name{}) in {} pieces, {} bytes",
            get("tensors"),
            if tied == 1 { "" } else { "s" },
            get("pieces"),
            get("bytes")
        ),
    );
    let dtypes: Vec<String> = get("dtypes")
        .as_object()
        .map(|m| m.iter().map(|(k, v)| format!("{k} {v}")).collect())
        .unwrap_or_default();
    line("dtypes", dtypes.join(", "));
    line("scan", text(&get("scan")));
    out.push('\n');
    for e in get("entries").as_array().cloned().unwrap_or_default() {
        let pieces = e["pieces"].as_array().map_or(0, Vec::len);
        let tied: Vec<String> = e["aliases"]
            .as_array()
            .map(|a| a.iter().map(text).collect())
            .unwrap_or_default();
        // A buffer stored in another floating type is written widened, as float32.
        let dtype = match e["stored_dtype"].as_str() {
            Some(stored) => format!("{} (stored {stored})", text(&e["dtype"])),
            None => text(&e["dtype"]),
        };
        out.push_str(&format!(
            "  {}  {dtype} {}  {}  {pieces} piece{}{}\n",
            text(&e["key"]),
            e["shape"],
            text(&e["role"]),
            if pieces == 1 { "" } else { "s" },
            if tied.is_empty() {
                String::new()
            } else {
                format!("  (also {})", tied.join(", "))
            }
        ));
    }
    out
}
