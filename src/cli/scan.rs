//! `ckpt scan FILE|DIR...`: every global of every pickle in each file, classified by
//! allow-list.

use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use serde_json::json;

use ckpt::security::{
    render, scan_dcp, scan_dcp_member, scan_file, scan_tree, AllowError, AllowList, FileScan,
    Status,
};
use ckpt::torch::dcp::is_dcp;

use super::Failure;

/// Exit status: 0 every global in every pickle torch would read is safe; 1 a dangerous global
/// or an evasion in some file; 2 some file (or part of one) could not be read; 3 nothing
/// dangerous or unreadable, but some global is on no allow-list (unknown). Each file's status
/// is the first that applies of dangerous, unreadable, unknown, clean; over several files
/// unreadable outranks dangerous, which outranks unknown: a file that could not be checked
/// must not be mistaken for one that was.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Files to scan (any checkpoint, TorchScript or `.pt2` archive, safetensors file or
    /// pickle), `torch.distributed.checkpoint` folders (`.metadata` and every file it names,
    /// each reported on its own), or ordinary folders: every checkpoint below them, by name
    /// (.pt, .pth, .bin, .ckpt, .pkl, .tar, .pt2, .safetensors, …) or by first bytes, with a
    /// summary line per folder.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print one JSON object (`files`, `skipped`, `exit_code`) instead of text.
    #[arg(long)]
    json: bool,
    /// Treat this global as safe for this run: a dotted path (`mypkg.config.TrainConfig`) or
    /// `module.*` for every name under a module. Repeatable. Never passes a dangerous global.
    #[arg(long, value_name = "NAME")]
    allow: Vec<String>,
    /// Read `--allow` names from FILE, one per line (`#` starts a comment).
    #[arg(long, value_name = "FILE")]
    allow_file: Vec<PathBuf>,
}

/// What one command-line argument gave.
struct Scanned {
    scans: Vec<FileScan>,
    /// For an ordinary folder: the files it skipped (a summary line is printed for it).
    folder: Option<Vec<PathBuf>>,
}

fn scan_arg(path: &Path, allowed: &AllowList) -> Scanned {
    if is_dcp(path) {
        Scanned {
            scans: scan_dcp(path, allowed),
            folder: None,
        }
    } else if path.is_dir() {
        let tree = scan_tree(path, allowed);
        Scanned {
            scans: tree.scans,
            folder: Some(tree.skipped),
        }
    } else {
        Scanned {
            scans: scan_dcp_member(path, allowed).unwrap_or_else(|| vec![scan_file(path, allowed)]),
            folder: None,
        }
    }
}

/// `DIR: 12 checkpoints scanned: 10 clean, 1 unknown, 1 dangerous; 3 other files skipped`.
fn folder_summary(dir: &Path, scans: &[FileScan], skipped: usize) -> String {
    let mut counts = String::new();
    for status in [
        Status::Clean,
        Status::Unknown,
        Status::Dangerous,
        Status::Unreadable,
    ] {
        let n = scans.iter().filter(|s| s.status() == status).count();
        if n > 0 {
            let sep = if counts.is_empty() { "" } else { ", " };
            counts.push_str(&format!("{sep}{n} {}", status.name()));
        }
    }
    let scanned = match scans.len() {
        0 => "no checkpoint found".to_owned(),
        1 => format!("1 file scanned: {counts}"),
        n => format!("{n} files scanned: {counts}"),
    };
    let skipped = match skipped {
        0 => String::new(),
        1 => "; 1 other file skipped (not a checkpoint by name or first bytes)".to_owned(),
        n => format!("; {n} other files skipped (not checkpoints by name or first bytes)"),
    };
    format!("{}: {scanned}{skipped}", dir.display())
}

/// Scans every file and folder, prints, and returns the exit code.
pub fn run(args: Args) -> Result<u8, Failure> {
    let mut allowed = AllowList::default();
    let usage = |e: AllowError| Failure {
        file: None,
        message: e.to_string(),
    };
    for name in &args.allow {
        allowed.add(name).map_err(usage)?;
    }
    for file in &args.allow_file {
        allowed.add_file(file).map_err(usage)?;
    }
    let results: Vec<(&PathBuf, Scanned)> = args
        .files
        .iter()
        .map(|f| (f, scan_arg(f, &allowed)))
        .collect();
    let worst = results
        .iter()
        .flat_map(|(_, r)| r.scans.iter().map(FileScan::status))
        .max()
        .unwrap_or(Status::Clean);
    let code = worst.exit_code();
    if args.json {
        let files: Vec<_> = results
            .iter()
            .flat_map(|(_, r)| r.scans.iter().map(render::to_json))
            .collect();
        let skipped: Vec<_> = results
            .iter()
            .flat_map(|(_, r)| r.folder.iter().flatten())
            .map(|p| p.display().to_string())
            .collect();
        println!(
            "{}",
            json!({ "files": files, "skipped": skipped, "exit_code": code })
        );
    } else {
        for (arg, result) in &results {
            for scan in &result.scans {
                print!("{}", render::to_text(scan));
            }
            if let Some(skipped) = &result.folder {
                println!("{}", folder_summary(arg, &result.scans, skipped.len()));
            }
        }
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_with(status_issue: bool) -> FileScan {
        FileScan {
            path: PathBuf::from("x.pth"),
            format: "zip",
            pickles: Vec::new(),
            issues: if status_issue {
                vec![ckpt::security::Issue {
                    location: String::new(),
                    severity: ckpt::security::Severity::Unreadable,
                    message: "broken".into(),
                }]
            } else {
                Vec::new()
            },
        }
    }

    #[test]
    fn folder_summary_counts_each_verdict_and_the_skipped_files() {
        let scans = [scan_with(false), scan_with(false), scan_with(true)];
        assert_eq!(
            folder_summary(Path::new("dl"), &scans, 3),
            "dl: 3 files scanned: 2 clean, 1 unreadable; 3 other files skipped (not checkpoints by name or first bytes)"
        );
        assert_eq!(
            folder_summary(Path::new("empty"), &[], 0),
            "empty: no checkpoint found"
        );
    }
}
