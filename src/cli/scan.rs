//! `ckpt scan FILE...`: every global of every pickle in each file, classified.

use std::path::PathBuf;

use clap::Args as ClapArgs;
use serde_json::json;

use ckpt::security::{render, scan_file};

/// Exit status: 0 clean (unknown globals may be listed), 1 a dangerous global or an evasion
/// in some file, 2 some file (or part of one) could not be read. Each file's status is the
/// first that applies of dangerous, unreadable, clean; over several files the highest code
/// wins, so 2 outranks 1: a file that could not be checked must not be mistaken for one that
/// was.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Files to scan (any checkpoint, TorchScript or `.pt2` archive, or pickle).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print one JSON object (`files`, `exit_code`) instead of text.
    #[arg(long)]
    json: bool,
}

/// Scans every file, prints, and returns the exit code.
pub fn run(args: Args) -> u8 {
    let scans: Vec<_> = args.files.iter().map(|f| scan_file(f)).collect();
    let code = scans
        .iter()
        .map(|s| s.status().exit_code())
        .max()
        .unwrap_or(0);
    if args.json {
        let files: Vec<_> = scans.iter().map(render::to_json).collect();
        println!("{}", json!({ "files": files, "exit_code": code }));
    } else {
        for scan in &scans {
            print!("{}", render::to_text(scan));
        }
    }
    code
}
