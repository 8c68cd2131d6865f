//! The text view of an [`InspectReport`], for a terminal.

use std::collections::BTreeMap;

use super::model::{InspectReport, KeyMap, Scalar, StructureNode};

/// Renders the report as indented text for a terminal.
pub fn render_text(report: &InspectReport) -> String {
    let mut out = String::new();
    let line = |out: &mut String, label: &str, value: String| {
        out.push_str(&format!("{label:<15} {value}\n"));
    };
    line(&mut out, "file", report.file.clone());
    let mut format = report.format.clone();
    if let Some(archive) = &report.archive {
        format.push_str(&format!(
            " (archive `{}`, version {}, format_version {})",
            archive.archive_name,
            or_dash(archive.version.as_deref()),
            or_dash(archive.format_version.as_deref())
        ));
    }
    line(&mut out, "format", format);
    line(
        &mut out,
        "tensors",
        format!(
            "{} in {}, {}",
            report.tensors,
            plural(report.storages as u64, "storage"),
            human_bytes(report.bytes)
        ),
    );
    line(&mut out, "dtypes", counts(&report.dtypes));
    line(&mut out, "locations", counts(&report.locations));
    if report.npu_rebuild_tensors > 0 {
        line(
            &mut out,
            "torch_npu",
            format!(
                "{} tensors use _rebuild_npu_tensor",
                report.npu_rebuild_tensors
            ),
        );
    }
    line(&mut out, "prefixes", list(&report.prefixes));
    let amp_text = match &report.amp {
        Some(amp) => format!("{} at `{}`", amp.kind, amp.path),
        None => "none".into(),
    };
    line(&mut out, "amp", amp_text);
    let top_keys = report.keys.keys.as_ref();
    let scalar_text = report
        .scalars
        .iter()
        .map(|(k, v)| {
            let kind = top_keys
                .and_then(|keys| keys.get(k))
                .map_or("str", |node| node.kind.as_str());
            format!("{k} = {}", value_text(kind, v))
        })
        .collect::<Vec<_>>()
        .join(", ");
    line(&mut out, "scalars", or_none(scalar_text));
    line(&mut out, "unsafe globals", list(&report.unsafe_globals));
    line(&mut out, "weights_only", weights_only_text(report));
    for blocker in &report.weights_only_blockers {
        let what = match (&blocker.plain, &blocker.refused) {
            (Some(kind), _) => format!("--plain: {}", kind.describe()),
            (None, Some(why)) => format!("cannot be made plain: {why}"),
            (None, None) => "cannot be made plain".to_owned(),
        };
        let more = if blocker.count > blocker.paths.len() {
            ", …"
        } else {
            ""
        };
        out.push_str(&format!(
            "  {} ×{} at {}{more} ({what})\n",
            blocker.class,
            blocker.count,
            blocker.paths.join(", ")
        ));
    }
    let verdict = &report.scan;
    line(
        &mut out,
        "scan",
        format!(
            "{} (dangerous: {}; unknown: {})",
            verdict.status,
            list(&verdict.dangerous),
            list(&verdict.unknown)
        ),
    );
    if !report.state_dicts.is_empty() {
        out.push_str("state dicts:\n");
    }
    for sd in &report.state_dicts {
        let path = match sd.path.as_deref() {
            Some("") => "(the whole file)",
            Some(path) => path,
            None => "(inside a list or object)",
        };
        out.push_str(&format!(
            "  {path}: {}, {} parameters, {} ({})\n",
            plural(sd.tensors as u64, "tensor"),
            human_count(sd.parameters),
            human_bytes(sd.bytes),
            counts(&sd.dtypes)
        ));
    }
    if let Some(keys) = top_keys.filter(|k| !k.is_empty()) {
        out.push_str("structure:\n");
        render_structure(&mut out, keys, 1);
    }
    out
}

/// Whether a default `torch.load` reads the object, and if not what `convert --plain` does.
fn weights_only_text(report: &InspectReport) -> String {
    let blockers = &report.weights_only_blockers;
    if blockers.is_empty() {
        return "no object blocks torch.load(weights_only=True)".to_owned();
    }
    let objects: usize = blockers.iter().map(|b| b.count).sum();
    let fix = if blockers.iter().all(|b| b.plain.is_some()) {
        "`ckpt convert --plain` rewrites them all"
    } else {
        "`ckpt convert --plain` cannot rewrite all of them"
    };
    let verb = if objects == 1 { "blocks" } else { "block" };
    format!(
        "{} {verb} torch.load(weights_only=True); {fix}:",
        plural(objects as u64, "object")
    )
}

/// A scalar's value for reading: text quoted, numbers (also `nan`, `inf` and integers beyond
/// 64 bits, which the JSON gives as strings) and bytes previews bare, `None` as Python
/// writes it. `kind` is the node's type in the structure (`str` when not shown there).
fn value_text(kind: &str, value: &Scalar) -> String {
    let json = || serde_json::to_string(value).unwrap_or_default();
    if kind == "str" {
        return json();
    }
    match value {
        Scalar::BigInt(s) | Scalar::Str(s) | Scalar::Bytes(s) => s.clone(),
        Scalar::Float(f) if !f.0.is_finite() => f.text(),
        Scalar::None => "None".into(),
        Scalar::Int(_) | Scalar::Float(_) | Scalar::Bool(_) => json(),
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

fn render_structure(out: &mut String, keys: &KeyMap<StructureNode>, indent: usize) {
    for (key, child) in keys.iter() {
        let pad = "  ".repeat(indent);
        let kind = child.kind.as_str();
        let detail = match (kind, &child.value) {
            ("tensor", _) => format!(
                "{} {}",
                or_dash(child.dtype.as_deref()),
                serde_json::to_string(&child.shape).unwrap_or_default()
            ),
            ("bytes", value) => format!(
                "{} ({})",
                value.as_ref().map_or("-".into(), |v| value_text(kind, v)),
                plural(child.len.unwrap_or(0) as u64, "byte")
            ),
            (_, Some(value)) => value_text(kind, value),
            (_, None) => child
                .len
                .map_or_else(String::new, |n| plural(n as u64, "entry")),
        };
        out.push_str(format!("{pad}{key}: {kind} {detail}").trim_end());
        out.push('\n');
        if let Some(keys) = &child.keys {
            render_structure(out, keys, indent + 1);
        }
    }
}

fn or_dash(value: Option<&str>) -> String {
    value.unwrap_or("-").to_owned()
}

fn or_none(joined: String) -> String {
    if joined.is_empty() {
        "none".into()
    } else {
        joined
    }
}

fn counts(map: &BTreeMap<String, usize>) -> String {
    or_none(
        map.iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

fn list<'a>(items: impl IntoIterator<Item = &'a String>) -> String {
    or_none(
        items
            .into_iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", "),
    )
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
    use crate::report::PyFloat;

    #[test]
    fn counts_read_naturally() {
        assert_eq!(plural(1, "entry"), "1 entry");
        assert_eq!(plural(2, "entry"), "2 entries");
        assert_eq!(plural(0, "tensor"), "0 tensors");
        assert_eq!(human_count(11_689_512), "11.7 M");
        assert_eq!(human_count(512), "512");
    }

    #[test]
    fn scalars_read_as_python_writes_them() {
        let inf = Scalar::Float(PyFloat(f64::INFINITY));
        assert_eq!(value_text("float", &inf), "inf");
        assert_eq!(value_text("str", &inf), "\"inf\"");
        assert_eq!(value_text("NoneType", &Scalar::None), "None");
        assert_eq!(value_text("str", &Scalar::Str("a".into())), "\"a\"");
    }
}
