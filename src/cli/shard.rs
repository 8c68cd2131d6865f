//! `ckpt shard IN -o DIR --ranks N`: one checkpoint written as a sharded DCP folder, laid
//! out as FSDP2 on N ranks saves it.

use std::io::Read;
use std::path::PathBuf;

use clap::Args as ClapArgs;

use ckpt::sharded::source::Safetensors;
use ckpt::sharded::{shard, Input};
use ckpt::torch::safetensors::looks_like as looks_like_safetensors;

use super::output::WrittenJson;
use super::safety::SafetyArgs;
use super::Failure;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The checkpoint to shard (`.pth`/`.pt`, zip or legacy, or `.safetensors`).
    input: PathBuf,
    /// Output folder (written beside itself, then renamed into place).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    output: PathBuf,
    /// Number of ranks: every tensor is split along dim 0 into this many `torch.chunk` pieces.
    #[arg(long, value_name = "N")]
    ranks: u64,
    /// Replace an existing non-empty output folder, if it holds a DCP checkpoint.
    #[arg(long)]
    force: bool,
    /// Print a JSON summary instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    safety: SafetyArgs,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let about = |e: &dyn std::fmt::Display| Failure::about(&args.input, e);
    ckpt::atomic_dir::check_folder(&args.output, args.force).map_err(|e| Failure {
        file: None,
        message: e.to_string(),
    })?;
    let mut head = Vec::new();
    ckpt::torch::open_input(&args.input)
        .map_err(|e| about(&e))?
        .take(16)
        .read_to_end(&mut head)
        .map_err(|e| about(&e))?;
    let mut input = if looks_like_safetensors(&head) {
        Input::Safetensors(Safetensors::open(&args.input).map_err(|e| about(&e))?)
    } else {
        let opened = args
            .safety
            .check(&args.input)?
            .open()
            .map_err(|e| about(&e))?;
        Input::Checkpoint(Box::new(opened.checkpoint))
    };
    let summary = shard(&mut input, args.ranks, &args.output, args.force).map_err(|e| about(&e))?;
    if args.json {
        WrittenJson {
            output: args.output.display().to_string(),
            summary: &summary,
        }
        .print(&args.output)?;
    } else {
        println!(
            "{}: {} ranks, {} tensors in {} chunks ({} bytes), {} values",
            args.output.display(),
            summary.ranks,
            summary.tensors,
            summary.chunks,
            summary.tensor_bytes,
            summary.values
        );
    }
    Ok(())
}
