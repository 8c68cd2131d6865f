//! `ckpt scan FILE...`: every global of every pickle in each file, classified by allow-list.

use std::path::PathBuf;

use clap::Args as ClapArgs;
use serde_json::json;

use crate::security::{render, scan_dcp, scan_file, AllowError, AllowList, Status};
use crate::torch::dcp::is_dcp;

use super::Failure;

/// Exit status: 0 every global in every pickle torch would read is safe; 1 a dangerous global
/// or an evasion in some file; 2 some file (or part of one) could not be read; 3 nothing
/// dangerous or unreadable, but some global is on no allow-list (unknown). Each file's status
/// is the first that applies of dangerous, unreadable, unknown, clean; over several files
/// unreadable outranks dangerous, which outranks unknown: a file that could not be checked
/// must not be mistaken for one that was.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Files to scan (any checkpoint, TorchScript or `.pt2` archive, or pickle), or
    /// `torch.distributed.checkpoint` folders (`.metadata` and every file it names, each
    /// reported on its own).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Print one JSON object (`files`, `exit_code`) instead of text.
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

/// Scans every file, prints, and returns the exit code.
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
    let scans: Vec<_> = args
        .files
        .iter()
        .flat_map(|f| match is_dcp(f) {
            true => scan_dcp(f, &allowed),
            false => vec![scan_file(f, &allowed)],
        })
        .collect();
    let worst = scans
        .iter()
        .map(|s| s.status())
        .max()
        .unwrap_or(Status::Clean);
    let code = worst.exit_code();
    if args.json {
        let files: Vec<_> = scans.iter().map(render::to_json).collect();
        println!("{}", json!({ "files": files, "exit_code": code }));
    } else {
        for scan in &scans {
            print!("{}", render::to_text(scan));
        }
    }
    Ok(code)
}
