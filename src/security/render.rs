//! Presenting scans: plain text for people, JSON for programs. Both list every global of
//! every pickle with its class.

use serde_json::{json, Value as Json};

use super::scan::{FileScan, Found, Severity};

/// One JSON object for a file: `path`, `format`, `status`, `exit_code`, `pickles` (each with
/// `location`, `found`, `error` and `globals`: `module`, `name`, `path`, `class`, `reason`,
/// `resolves_to`, `count`), `issues` (`location`, `severity`, `message`).
pub fn to_json(scan: &FileScan) -> Json {
    let pickles: Vec<Json> = scan
        .pickles
        .iter()
        .map(|p| {
            json!({
                "location": p.location,
                "found": match p.found { Found::Expected => "expected", Found::Sniffed => "sniffed" },
                "error": p.error,
                "globals": p.globals.iter().map(|u| json!({
                    "module": u.global.module,
                    "name": u.global.name,
                    "path": u.path,
                    "class": u.verdict.class.name(),
                    "reason": u.verdict.why,
                    "resolves_to": u.verdict.resolves_to,
                    "count": u.count,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    let issues: Vec<Json> = scan
        .issues
        .iter()
        .map(|i| {
            json!({
                "location": i.location,
                "severity": severity_name(i.severity),
                "message": i.message,
            })
        })
        .collect();
    let status = scan.status();
    json!({
        "path": scan.path.display().to_string(),
        "format": scan.format,
        "status": status.name(),
        "exit_code": status.exit_code(),
        "pickles": pickles,
        "issues": issues,
    })
}

fn severity_name(severity: Severity) -> &'static str {
    match severity {
        Severity::Unreadable => "unreadable",
        Severity::Evasion => "evasion",
    }
}

/// A text block for a file: a status line, then each pickle with its globals, then issues.
pub fn to_text(scan: &FileScan) -> String {
    let mut out = format!(
        "{}: {} ({})\n",
        scan.path.display(),
        scan.status().name(),
        scan.format
    );
    for p in &scan.pickles {
        let how = match p.found {
            Found::Expected => "",
            Found::Sniffed => " (found by content)",
        };
        let none = if p.globals.is_empty() {
            ": no globals"
        } else {
            ""
        };
        out.push_str(&format!("  pickle {}{how}{none}\n", p.location));
        for u in &p.globals {
            let times = if u.count > 1 {
                format!(" ×{}", u.count)
            } else {
                String::new()
            };
            let via = match &u.verdict.resolves_to {
                Some(to) => format!(" → {to}"),
                None => String::new(),
            };
            out.push_str(&format!(
                "    {:<9}  {}{via}{times}  ({})\n",
                u.verdict.class.name(),
                u.path,
                u.verdict.why
            ));
        }
        if let Some(e) = &p.error {
            out.push_str(&format!("    stopped: {e}\n"));
        }
    }
    for i in &scan.issues {
        let at = if i.location.is_empty() {
            String::new()
        } else {
            format!("{}: ", i.location)
        };
        out.push_str(&format!(
            "  {} {at}{}\n",
            severity_name(i.severity),
            i.message
        ));
    }
    out
}
