use std::fs::File;
use std::path::PathBuf;

use clap::Args as ClapArgs;

use ckpt::report::pt2::{render_text, summary};
use ckpt::security::{scan_open, AllowList};
use ckpt::torch::pt2::{is_pt2, Pt2Archive};

use super::Failure;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Checkpoint to inspect (a file, a DCP checkpoint folder, or a DeepSpeed ZeRO folder).
    file: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<(), Failure> {
    if ckpt::torch::dcp::is_dcp(&args.file) {
        return inspect_dcp(&args);
    }
    if ckpt::torch::dcp::is_deepspeed_only(&args.file) {
        return inspect_deepspeed(&args);
    }
    // A file that cannot be opened (as a zip) is left to the checkpoint reader, which says
    // why.
    let pt2 = File::open(&args.file)
        .ok()
        .filter(|file| is_pt2(file).unwrap_or(false));
    if let Some(file) = pt2 {
        let archive = Pt2Archive::from_file(file).map_err(|e| Failure::about(&args.file, e))?;
        let report = summary(&args.file.display().to_string(), &archive);
        if args.json {
            let json = serde_json::to_string(&report).map_err(|e| Failure::about(&args.file, e))?;
            println!("{json}");
        } else {
            print!("{}", render_text(&report));
        }
        return Ok(());
    }
    // One open file: the globals reported are those of the bytes inspected.
    let report = ckpt::inspect(&args.file).map_err(|e| Failure::about(&args.file, e))?;
    if args.json {
        let json = serde_json::to_string(&report).map_err(|e| Failure::about(&args.file, e))?;
        println!("{json}");
    } else {
        print!("{}", ckpt::report::render_text(&report));
    }
    Ok(())
}

/// A DCP folder: its `.metadata` scanned and read, its layout checked; no item is read.
fn inspect_dcp(args: &Args) -> Result<(), Failure> {
    use ckpt::torch::dcp::{Folder, METADATA_FILE};
    let path = args.file.join(METADATA_FILE);
    let fail = |e: &dyn std::fmt::Display| Failure::about(&path, e);
    let file = File::open(&path).map_err(|e| fail(&e))?;
    let security = scan_open(&path, &file, &AllowList::default());
    let folder = Folder::open(&args.file, file).map_err(|e| Failure::about(&args.file, e))?;
    let report = ckpt::report::dcp(&folder, security.status().name());
    if args.json {
        let json = serde_json::to_string(&report).map_err(|e| Failure::about(&args.file, e))?;
        println!("{json}");
    } else {
        print!("{}", ckpt::report::render_dcp(&report));
    }
    Ok(())
}

/// A DeepSpeed ZeRO folder: every file scanned (reported by the worst status), decoded,
/// and the consolidated state dict located; no tensor bytes are read. Files whose globals
/// are unknown are still inspected (nothing is imported); dangerous ones are refused.
fn inspect_deepspeed(args: &Args) -> Result<(), Failure> {
    use ckpt::security::{check_deepspeed, Policy};
    use ckpt::torch::dcp::deepspeed::layout;
    let fail = |e: &dyn std::fmt::Display| Failure::about(&args.file, e);
    let checked = check_deepspeed(&args.file, Policy::AllowUnknown).map_err(|e| fail(&e))?;
    let layout = layout::read(&checked.folder).map_err(|e| fail(&e))?;
    let report = ckpt::report::deepspeed(&checked.folder, &layout, checked.scan.name());
    if args.json {
        let json = serde_json::to_string(&report).map_err(|e| fail(&e))?;
        println!("{json}");
    } else {
        print!("{}", ckpt::report::render_deepspeed(&report));
    }
    Ok(())
}
