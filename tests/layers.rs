//! The layer order of ARCHITECTURE.md inside the `ckpt` crate, enforced: every module path a
//! source file names (`use` trees, grouped or not, fully qualified paths in code,
//! `super::`/`self::` paths, intra-doc links) must reach its own layer or one before it in
//! [`LAYERS`]. The layers below these are crates of the workspace (`crates/`), where Cargo
//! refuses an upward path; each layer here is meant to become one too, and until then this
//! test is what refuses it, naming the file, the line and the path. A path into another
//! crate (`ckpt_pickle::…`) is Cargo's to check, not this test's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layers in dependency order: each uses only itself and those before it. A file
/// belongs to the layer of the longest prefix (relative to `src/`) that matches its path.
const LAYERS: &[(&str, &[&str])] = &[
    ("export", &["onnx/"]),
    (
        "tool",
        &[
            "lib.rs",
            "open.rs",
            "pipeline.rs",
            "safetensors.rs",
            "atomic_dir.rs",
            "sharded/",
            "security/",
            "report/",
            "batch/",
            "check/",
        ],
    ),
    ("cli", &["main.rs", "cli/"]),
];

/// Upward paths that stay for now, each with the reason. A listed path that no longer
/// occurs fails the test, so the list only shrinks.
const ALLOWED: &[(&str, &str, &str)] = &[];

fn layer_of(rel: &str) -> Option<usize> {
    LAYERS
        .iter()
        .enumerate()
        .flat_map(|(i, (_, prefixes))| prefixes.iter().map(move |p| (i, *p)))
        .filter(|(_, p)| rel == *p || (p.ends_with('/') && rel.starts_with(p)))
        .max_by_key(|(_, p)| p.len())
        .map(|(i, _)| i)
}

/// One path a file names: where, and the module path it resolves to (from the crate root).
#[derive(Debug)]
struct Reference {
    line: usize,
    written: String,
    resolved: Vec<String>,
}

/// The source with comments, strings and character literals blanked (newlines kept, so
/// lines still count), plus the text of each doc comment with its line.
fn lex(source: &str) -> (String, Vec<(usize, String)>) {
    let s: Vec<char> = source.chars().collect();
    let mut code = String::with_capacity(source.len());
    let mut docs = Vec::new();
    let mut line = 1;
    let mut i = 0;
    let blank = |c: char, code: &mut String| code.push(if c == '\n' { '\n' } else { ' ' });
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            let end = (i..s.len()).find(|&j| s[j] == '\n').unwrap_or(s.len());
            let text: String = s[i..end].iter().collect();
            if text.starts_with("///") || text.starts_with("//!") {
                docs.push((line, text[3..].to_string()));
            }
            i = end;
            continue;
        }
        if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < s.len() {
                if s[i] == '/' && s.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if s[i] == '\n' {
                        line += 1;
                    }
                    blank(s[i], &mut code);
                    i += 1;
                }
            }
            continue;
        }
        let ident_before = i > 0 && (s[i - 1].is_alphanumeric() || s[i - 1] == '_');
        // Raw strings: r"…", r#"…"#, br#"…"#.
        if !ident_before && (c == 'r' || (c == 'b' && next == Some('r'))) {
            let start = if c == 'b' { i + 2 } else { i + 1 };
            let hashes = s[start..].iter().take_while(|&&h| h == '#').count();
            if s.get(start + hashes) == Some(&'"') {
                let mut j = start + hashes + 1;
                loop {
                    if j >= s.len() {
                        break;
                    }
                    if s[j] == '"'
                        && s[j + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|&&h| h == '#')
                            .count()
                            == hashes
                    {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                for &ch in &s[i..j.min(s.len())] {
                    if ch == '\n' {
                        line += 1;
                    }
                    blank(ch, &mut code);
                }
                i = j;
                continue;
            }
        }
        if c == '"' {
            let mut j = i + 1;
            while j < s.len() && s[j] != '"' {
                j += if s[j] == '\\' { 2 } else { 1 };
            }
            for &ch in &s[i..(j + 1).min(s.len())] {
                if ch == '\n' {
                    line += 1;
                }
                blank(ch, &mut code);
            }
            i = j + 1;
            continue;
        }
        if c == '\'' {
            // A character literal ('x', '\n', '\u{..}', '{'), not a lifetime ('a).
            let end = if next == Some('\\') {
                (i + 2..s.len()).find(|&j| s[j] == '\'')
            } else if s.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            if let Some(end) = end {
                for _ in i..=end {
                    code.push(' ');
                }
                i = end + 1;
                continue;
            }
        }
        if c == '\n' {
            line += 1;
        }
        code.push(c);
        i += 1;
    }
    (code, docs)
}

#[derive(Debug, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Star,
    Other(char),
}

fn tokens(code: &str) -> Vec<(usize, Token)> {
    let s: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' || c == '$' {
            let end = (i + 1..s.len())
                .find(|&j| !(s[j].is_alphanumeric() || s[j] == '_'))
                .unwrap_or(s.len());
            let word: String = s[i..end].iter().collect();
            out.push((line, Token::Ident(word.trim_start_matches('$').to_string())));
            i = end;
        } else if c == ':' && s.get(i + 1) == Some(&':') {
            out.push((line, Token::PathSep));
            i += 2;
        } else {
            out.push((
                line,
                match c {
                    '{' => Token::Open,
                    '}' => Token::Close,
                    ',' => Token::Comma,
                    '*' => Token::Star,
                    other => Token::Other(other),
                },
            ));
            i += 1;
        }
    }
    out
}

/// The paths of a `use` tree or path starting at `at` (after its root segment), each as its
/// segments; a group `{a, b::c}` yields one path per member.
fn expand(
    toks: &[(usize, Token)],
    at: &mut usize,
    prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) {
    let mut path = prefix;
    loop {
        if toks.get(*at).map(|t| &t.1) != Some(&Token::PathSep) {
            out.push(path);
            return;
        }
        *at += 1;
        match toks.get(*at).map(|t| &t.1) {
            Some(Token::Ident(word)) => {
                path.push(word.clone());
                *at += 1;
            }
            Some(Token::Open) => {
                *at += 1;
                loop {
                    match toks.get(*at).map(|t| &t.1) {
                        Some(Token::Close) => {
                            *at += 1;
                            return;
                        }
                        Some(Token::Comma) => *at += 1,
                        Some(Token::Ident(word)) => {
                            let mut member = path.clone();
                            if word != "self" {
                                member.push(word.clone());
                            }
                            *at += 1;
                            expand(toks, at, member, out);
                            // Skip `as alias`.
                            if matches!(toks.get(*at).map(|t| &t.1), Some(Token::Ident(w)) if w == "as")
                            {
                                *at += 2;
                            }
                        }
                        Some(Token::Star) => {
                            out.push(path.clone());
                            *at += 1;
                        }
                        None => return,
                        Some(_) => *at += 1,
                    }
                }
            }
            _ => {
                out.push(path);
                return;
            }
        }
    }
}

/// Resolves a path written in module `module` to segments from the crate root, or `None`
/// for a path into another crate.
fn resolve(
    module: &[String],
    segments: &[String],
    children: &dyn Fn(&[String]) -> bool,
) -> Option<Vec<String>> {
    let (first, rest) = segments.split_first()?;
    match first.as_str() {
        "crate" | "ckpt" => Some(rest.to_vec()),
        "self" => Some(module.iter().chain(rest).cloned().collect()),
        "super" => {
            let mut base = module.to_vec();
            let mut rest = segments;
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
            Some(base.into_iter().chain(rest.iter().cloned()).collect())
        }
        _ => {
            let child: Vec<String> = module.iter().chain([first]).cloned().collect();
            children(&child).then(|| module.iter().chain(segments).cloned().collect())
        }
    }
}

/// Every path `source` (the file of module `module`) names, resolved from the crate root.
fn references(
    source: &str,
    module: &[String],
    children: &dyn Fn(&[String]) -> bool,
) -> Vec<Reference> {
    let (code, docs) = lex(source);
    let toks = tokens(&code);
    let mut found = Vec::new();
    // Inline modules (`mod tests { … }`) open a module inside the file's.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    let mut in_use = false;
    while i < toks.len() {
        let (line, tok) = &toks[i];
        match tok {
            Token::Open => depth += 1,
            Token::Close => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            Token::Other(';') => in_use = false,
            Token::Ident(word) if word == "mod" => {
                if let (Some((_, Token::Ident(name))), Some((_, Token::Open))) =
                    (toks.get(i + 1), toks.get(i + 2))
                {
                    inline.push((name.clone(), depth));
                }
            }
            Token::Ident(word) if word == "use" => in_use = true,
            Token::Ident(word) => {
                let after_sep = i > 0 && toks[i - 1].1 == Token::PathSep;
                let rooted = matches!(word.as_str(), "crate" | "ckpt" | "super" | "self");
                if !after_sep
                    && (rooted || in_use)
                    && toks.get(i + 1).map(|t| &t.1) == Some(&Token::PathSep)
                {
                    let here: Vec<String> = module
                        .iter()
                        .cloned()
                        .chain(inline.iter().map(|(n, _)| n.clone()))
                        .collect();
                    let mut paths = Vec::new();
                    let mut at = i + 1;
                    expand(&toks, &mut at, vec![word.clone()], &mut paths);
                    for segments in paths {
                        if let Some(resolved) = resolve(&here, &segments, children) {
                            found.push(Reference {
                                line: *line,
                                written: segments.join("::"),
                                resolved,
                            });
                        }
                    }
                    i = at;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    for (line, text) in docs {
        for target in doc_links(&text) {
            let segments: Vec<String> = target.split("::").map(str::to_string).collect();
            if let Some(resolved) = resolve(module, &segments, &|_| false) {
                found.push(Reference {
                    line,
                    written: target,
                    resolved,
                });
            }
        }
    }
    found
}

/// The targets of a doc comment's intra-doc links that are paths: ``[`a::b`]``,
/// `[text](a::b)`, `[text][a::b]`.
fn doc_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let path = |t: &str| {
        let t = t
            .trim_matches('`')
            .trim_end_matches("()")
            .trim_end_matches('!');
        let t = t.split_once('@').map_or(t, |(_, p)| p);
        (t.contains("::")
            && t.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == ':'))
        .then(|| t.to_string())
    };
    let mut rest = text;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']') else {
            break;
        };
        let inside = &rest[open + 1..open + close];
        let after = &rest[open + close + 1..];
        let explicit = ['(', '[']
            .into_iter()
            .find(|&o| after.starts_with(o))
            .and_then(|o| {
                after[1..]
                    .find(if o == '(' { ')' } else { ']' })
                    .map(|end| &after[1..1 + end])
            });
        match explicit {
            Some(target) => out.extend(path(target)),
            None => out.extend(path(inside)),
        }
        rest = &rest[open + close + 1..];
    }
    out
}

/// The module path of a file relative to `src/` (`torch/dcp/mod.rs` → `torch::dcp`).
fn module_of(rel: &str) -> Vec<String> {
    let trimmed = rel.trim_end_matches(".rs");
    let mut parts: Vec<String> = trimmed.split('/').map(str::to_string).collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The file that defines the module named by the longest prefix of `path`.
fn file_of(path: &[String], files: &BTreeMap<String, String>) -> String {
    for len in (1..=path.len()).rev() {
        let dir = path[..len].join("/");
        for candidate in [format!("{dir}.rs"), format!("{dir}/mod.rs")] {
            if files.contains_key(&candidate) {
                return candidate;
            }
        }
    }
    "lib.rs".to_string()
}

fn sources(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path: PathBuf = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.insert(rel, std::fs::read_to_string(&path).unwrap());
        }
    }
}

/// One upward path: the file naming it, where, as written and as resolved, and the layers
/// it goes from and to.
struct Upward {
    file: String,
    line: usize,
    written: String,
    resolved: String,
    from: &'static str,
    to: &'static str,
}

/// Every upward path in `files` (path relative to `src/` → source).
fn violations(files: &BTreeMap<String, String>) -> Result<Vec<Upward>, String> {
    let mut out = Vec::new();
    for (rel, source) in files {
        let from =
            layer_of(rel).ok_or_else(|| format!("src/{rel} is in no layer of LAYERS: place it"))?;
        let module = module_of(rel);
        let children = |m: &[String]| {
            let dir = m.join("/");
            files.contains_key(&format!("{dir}.rs")) || files.contains_key(&format!("{dir}/mod.rs"))
        };
        for r in references(source, &module, &children) {
            let target = file_of(&r.resolved, files);
            let to = layer_of(&target).ok_or_else(|| format!("src/{target} is in no layer"))?;
            if to > from {
                out.push(Upward {
                    file: rel.clone(),
                    line: r.line,
                    written: r.written,
                    resolved: r.resolved.join("::"),
                    from: LAYERS[from].0,
                    to: LAYERS[to].0,
                });
            }
        }
    }
    Ok(out)
}

#[test]
fn every_path_reaches_its_own_layer_or_one_before_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = BTreeMap::new();
    sources(&root, &root, &mut files);
    assert!(files.len() > 100, "read {} files under src/", files.len());
    let found = violations(&files).unwrap_or_else(|e| panic!("{e}"));
    let mut used = vec![false; ALLOWED.len()];
    let mut upward = Vec::new();
    for u in found {
        match ALLOWED
            .iter()
            .position(|(f, p, _)| *f == u.file && u.resolved.starts_with(p))
        {
            Some(k) => used[k] = true,
            None => upward.push(format!(
                "src/{}:{}: `{}` is in layer `{}`, above `{}`",
                u.file, u.line, u.written, u.to, u.from
            )),
        }
    }
    assert!(upward.is_empty(), "upward paths (a layer uses only itself and the layers before it in tests/layers.rs's LAYERS):\n{}", upward.join("\n"));
    for ((file, path, _), used) in ALLOWED.iter().zip(used) {
        assert!(
            used,
            "src/{file} no longer names `{path}`: remove it from ALLOWED"
        );
    }
}

/// The checker itself: each form an upward path can take is caught.
#[test]
fn each_form_of_an_upward_path_is_caught() {
    let files = |planted: &str| {
        BTreeMap::from([
            ("lib.rs".to_string(), String::new()),
            ("onnx/mod.rs".to_string(), planted.to_string()),
            ("onnx/read.rs".to_string(), String::new()),
            ("sharded/dcp/mod.rs".to_string(), String::new()),
            ("security/mod.rs".to_string(), String::new()),
        ])
    };
    let caught = |planted: &str| {
        violations(&files(planted))
            .unwrap()
            .into_iter()
            .map(|v| v.resolved)
            .collect::<Vec<_>>()
    };
    for (planted, path) in [
        ("use crate::sharded::dcp::Folder;", "sharded::dcp::Folder"),
        (
            "use crate::{onnx::read, security::{scan, Status}};",
            "security::scan",
        ),
        (
            "fn f() { let x = crate::batch::export(); }",
            "batch::export",
        ),
        (
            "#[cfg(test)]\nmod tests {\n    use super::super::sharded::open;\n}",
            "sharded::open",
        ),
        (
            "/// See [`crate::security::scan`].\nfn f() {}",
            "security::scan",
        ),
        (
            "/// See [the scan](crate::security::scan).\nfn f() {}",
            "security::scan",
        ),
        (
            "macro_rules! m { () => { $crate::sharded::open() }; }",
            "sharded::open",
        ),
    ] {
        assert!(
            caught(planted).iter().any(|c| c == path),
            "{planted}: {:?}",
            caught(planted)
        );
    }
    for quiet in [
        "use crate::onnx::read; use std::io::Read;",
        "// crate::onnx::open in a comment\nconst S: &str = \"crate::onnx::open\";",
        "fn f<'a>(c: char) -> bool { c == '{' || c == '\"' }\nuse crate::onnx::read;",
        "/// Mentioned as `crate::onnx::open`, not linked.\nfn f() {}",
    ] {
        assert!(caught(quiet).is_empty(), "{quiet}: {:?}", caught(quiet));
    }
}
