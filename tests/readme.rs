//! README's quick start runs as printed: every `$ command` in its examples is run from a
//! fresh folder that holds the checkout's `fixtures/` (with `release.toml` written from the
//! README's own plan), exits as shown (`$ echo $?`, else 0), and prints every output line the
//! README shows (a `…` line stands for lines left out; timings, and the order in which
//! parallel work finishes, are not compared).

use std::path::{Path, PathBuf};
use std::process::Command;

/// One `$ command` and the output lines shown under it.
struct Example {
    command: String,
    shown: Vec<String>,
}

fn readme() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md")
}

/// The fenced blocks of `text` with their info string (`toml`, `python`, or empty).
fn fenced_blocks(text: &str) -> Vec<(String, Vec<String>)> {
    let mut blocks = Vec::new();
    let mut current: Option<(String, Vec<String>)> = None;
    for line in text.lines() {
        if let Some(info) = line.strip_prefix("```") {
            match current.take() {
                Some(block) => blocks.push(block),
                None => current = Some((info.trim().to_owned(), Vec::new())),
            }
        } else if let Some((_, lines)) = current.as_mut() {
            lines.push(line.to_owned());
        }
    }
    blocks
}

fn examples(block: &[String]) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    for line in block {
        if let Some(command) = line.strip_prefix("$ ") {
            out.push(Example {
                command: command.to_owned(),
                shown: Vec::new(),
            });
        } else if let Some(last) = out.last_mut() {
            if !line.trim().is_empty() && line.trim() != "…" {
                last.shown.push(line.to_owned());
            }
        }
    }
    out
}

/// `[2/3] ok x (0.0 MiB in 0.03 s)` → `ok x (0.0 MiB)`: timings, and the order in which
/// parallel work finishes, differ from run to run.
fn normalized(line: &str) -> String {
    let line = match (line.find(" in "), line.rfind(" s)")) {
        (Some(start), Some(end)) if start < end => {
            format!("{}{}", &line[..start], &line[end + 2..])
        }
        _ => line.to_owned(),
    };
    match (line.find(" ["), line.find("] ")) {
        (Some(start), Some(end))
            if start < end
                && line[start + 2..end]
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == '/') =>
        {
            format!("{}{}", &line[..start], &line[end + 1..])
        }
        _ => line,
    }
}

#[test]
fn every_quick_start_command_runs_as_printed() {
    let text = readme();
    let blocks = fenced_blocks(&text);
    let dir = tempfile::tempdir().expect("tempdir");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    std::os::unix::fs::symlink(&fixtures, dir.path().join("fixtures")).expect("symlink");
    let plan = blocks
        .iter()
        .find(|(info, lines)| info == "toml" && lines.iter().any(|l| l == "[[job]]"))
        .expect("README has a batch plan");
    std::fs::write(dir.path().join("release.toml"), plan.1.join("\n")).expect("plan");
    let bin: PathBuf = Path::new(env!("CARGO_BIN_EXE_ckpt"))
        .parent()
        .expect("bin dir")
        .to_owned();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut ran = 0;
    for (_, block) in blocks.iter().filter(|(info, _)| info.is_empty()) {
        let list = examples(block);
        for (i, example) in list.iter().enumerate() {
            if example.command == "echo $?" {
                continue;
            }
            let want: i32 = list
                .get(i + 1)
                .filter(|next| next.command == "echo $?")
                .and_then(|next| next.shown.first())
                .and_then(|status| status.trim().parse().ok())
                .unwrap_or(0);
            let run = Command::new("sh")
                .arg("-c")
                .arg(&example.command)
                .current_dir(dir.path())
                .env("PATH", &path)
                .output()
                .expect("sh runs");
            let printed = format!(
                "{}{}",
                String::from_utf8_lossy(&run.stdout),
                String::from_utf8_lossy(&run.stderr)
            );
            assert_eq!(
                run.status.code(),
                Some(want),
                "$ {}\n{printed}",
                example.command
            );
            let printed: Vec<String> = printed.lines().map(normalized).collect();
            for line in &example.shown {
                assert!(
                    printed.contains(&normalized(line)),
                    "$ {}\nREADME shows {line:?}, the command printed:\n{}",
                    example.command,
                    printed.join("\n")
                );
            }
            ran += 1;
        }
    }
    assert!(ran >= 8, "only {ran} README commands found");
}
