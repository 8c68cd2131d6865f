//! The documentation stays true to the binary: every `ckpt COMMAND --flag` written in
//! README.md, ARCHITECTURE.md or docs/*.md names a command that exists and a flag that
//! command's `--help` lists, and every link to a heading (`file.md#anchor`, `#anchor`) finds
//! that heading. Links to files that are not there are not checked (some docs are generated).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn documents() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md"), root().join("ARCHITECTURE.md")];
    if let Ok(entries) = std::fs::read_dir(root().join("docs")) {
        let mut docs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        docs.sort();
        files.extend(docs);
    }
    files.into_iter().filter(|p| p.exists()).collect()
}

/// The text of every command written in code: inline code spans (which may run over a line
/// break) and lines of fenced blocks, a fenced line that starts with whitespace continuing
/// the one before it.
fn code_snippets(text: &str) -> Vec<String> {
    let mut snippets: Vec<String> = Vec::new();
    let mut prose = String::new();
    let mut in_fence = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            let continues = line.starts_with(char::is_whitespace) && !snippets.is_empty();
            match snippets.last_mut() {
                Some(last) if continues => {
                    last.push(' ');
                    last.push_str(line.trim());
                }
                _ => snippets.push(line.trim_start_matches("$ ").to_owned()),
            }
        } else {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    let mut parts = prose.split('`');
    parts.next();
    while let Some(code) = parts.next() {
        snippets.push(code.replace('\n', " "));
        parts.next();
    }
    snippets
}

/// `(command, flags)` for each `ckpt COMMAND …` in a snippet; `manifest merge` is one command.
fn commands_in(snippet: &str) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    let words: Vec<&str> = snippet.split_whitespace().collect();
    let mut i = 0;
    while i < words.len() {
        let is_command = words[i] == "ckpt"
            && words.get(i + 1).is_some_and(|w| {
                w.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                    && w.chars().all(|c| c.is_ascii_lowercase() || c == '-')
            });
        if !is_command {
            i += 1;
            continue;
        }
        let mut command = words[i + 1].to_owned();
        let mut j = i + 2;
        if command == "manifest" && words.get(j) == Some(&"merge") {
            command.push_str(" merge");
            j += 1;
        }
        let mut flags = Vec::new();
        while j < words.len() && words[j] != "ckpt" {
            for piece in words[j].split(['[', ']', '|', '(', ')', ',']) {
                let flag: String = piece
                    .split('=')
                    .next()
                    .unwrap_or("")
                    .trim_end_matches(['.', '…'])
                    .to_owned();
                if flag.starts_with("--")
                    && flag.len() > 2
                    && flag[2..]
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c == '-')
                {
                    flags.push(flag);
                }
            }
            j += 1;
        }
        found.push((command, flags));
        i = j;
    }
    found
}

fn help_of(command: &str) -> Option<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_ckpt"))
        .args(command.split(' '))
        .arg("--help")
        .output()
        .expect("run ckpt");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn every_documented_command_and_flag_exists() {
    let mut helps: HashMap<String, Option<String>> = HashMap::new();
    let mut problems = BTreeSet::new();
    let mut checked = 0;
    for file in documents() {
        let text = std::fs::read_to_string(&file).expect("read doc");
        let name = file
            .strip_prefix(root())
            .unwrap_or(&file)
            .display()
            .to_string();
        for snippet in code_snippets(&text) {
            for (command, flags) in commands_in(&snippet) {
                let help = helps
                    .entry(command.clone())
                    .or_insert_with(|| help_of(&command));
                let Some(help) = help else {
                    problems.insert(format!("{name}: `ckpt {command}` is not a command"));
                    continue;
                };
                for flag in flags {
                    checked += 1;
                    let listed = help
                        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                        .any(|word| word == flag);
                    if !listed {
                        problems.insert(format!("{name}: `ckpt {command}` has no {flag}"));
                    }
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{}",
        Vec::from_iter(problems).join("\n")
    );
    assert!(
        checked > 30,
        "only {checked} flags found: is the parser still reading the docs?"
    );
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors_of(path: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut in_fence = false;
    let mut anchors = BTreeSet::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
        } else if !in_fence && line.starts_with('#') {
            anchors.insert(anchor(line.trim_start_matches('#')));
        }
    }
    anchors
}

#[test]
fn every_link_to_a_heading_finds_it() {
    let mut problems = Vec::new();
    for file in documents() {
        let text = std::fs::read_to_string(&file).expect("read doc");
        let folder = file.parent().unwrap_or(Path::new("."));
        for link in text.split("](").skip(1) {
            let target = link.split(')').next().unwrap_or("");
            if target.contains("://") {
                continue;
            }
            let Some((path, fragment)) = target.split_once('#') else {
                continue;
            };
            let target_file = if path.is_empty() {
                file.clone()
            } else {
                folder.join(path)
            };
            if target_file.exists() && !anchors_of(&target_file).contains(fragment) {
                problems.push(format!("{}: no heading for `{target}`", file.display()));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_parser_finds_commands_and_flags() {
    let found =
        commands_in("ckpt convert IN -o OUT [--map FROM=TO | --to DEV] [--dtype-optimizer]…");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, "convert");
    assert_eq!(found[0].1, ["--map", "--to", "--dtype-optimizer"]);
    let merged = commands_in("ckpt manifest merge A.json -o ALL.json");
    assert_eq!(merged[0].0, "manifest merge");
    assert_eq!(anchor("Building `ckpt check`"), "building-ckpt-check");
}
