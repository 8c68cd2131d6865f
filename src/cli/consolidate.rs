//! `ckpt consolidate DIR -o OUT`: one state dict from a sharded DCP checkpoint folder, or the
//! fp32 state dict of a DeepSpeed ZeRO checkpoint folder.

use std::path::PathBuf;

use clap::{Args as ClapArgs, ValueEnum};

use ckpt::security::{check_dcp, check_deepspeed};
use ckpt::sharded::{consolidate, deepspeed, OutputKind, Selection};
use ckpt::torch::dcp::{is_checkpoint_folder, is_deepspeed_only};

use super::output::WrittenJson;
use super::safety::SafetyArgs;
use super::Failure;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum FormatArg {
    Pth,
    Safetensors,
}

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The DCP checkpoint folder (holding `.metadata` and `__<rank>_<n>.distcp` files), or a
    /// DeepSpeed ZeRO checkpoint folder (the save folder with `latest`, or a tag folder).
    dir: PathBuf,
    /// Output file.
    #[arg(short = 'o', long = "output")]
    output: PathBuf,
    /// Output format; inferred from the extension (`.safetensors`, else pth).
    #[arg(long, value_enum)]
    format: Option<FormatArg>,
    /// Drop optimizer state (`state`/`param_groups` mappings) and training-state keys. A
    /// DeepSpeed folder's output is the model's state dict already: no change.
    #[arg(long)]
    model_only: bool,
    /// Write only the entries under this dotted key (e.g. `model`), as the top level. For a
    /// DeepSpeed folder: the parameters and buffers named `PREFIX.…`, without the prefix.
    #[arg(long, value_name = "PREFIX")]
    extract: Option<String>,
    /// Print a JSON summary instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    safety: SafetyArgs,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let kind = match args.format {
        Some(FormatArg::Pth) => OutputKind::Pth,
        Some(FormatArg::Safetensors) => OutputKind::Safetensors,
        None if args.output.extension().is_some_and(|e| e == "safetensors") => {
            OutputKind::Safetensors
        }
        None => OutputKind::Pth,
    };
    let policy = args.safety.options().policy();
    let selection = Selection {
        model_only: args.model_only,
        extract: args.extract,
    };
    let fail = |e: &dyn std::fmt::Display| Failure::about(&args.dir, e);
    if !is_checkpoint_folder(&args.dir) {
        return Err(fail(&if args.dir.is_dir() {
            "is not a sharded checkpoint folder: it holds neither a torch.distributed.checkpoint `.metadata` nor a DeepSpeed ZeRO checkpoint (`*_model_states.pt` and `*_optim_states.pt` files, or a `latest` file naming their folder)"
        } else {
            "is not a folder: consolidate reads a sharded checkpoint folder (torch.distributed.checkpoint or DeepSpeed ZeRO); a single checkpoint file needs no consolidating"
        }));
    }
    let summary = if is_deepspeed_only(&args.dir) {
        let checked = check_deepspeed(&args.dir, policy).map_err(|e| fail(&e))?;
        deepspeed::consolidate(&checked.folder, &selection, kind, &args.output)
            .map_err(|e| fail(&e))?
    } else {
        let folder = check_dcp(&args.dir, policy).map_err(|e| fail(&e))?;
        consolidate(&folder, &selection, kind, &args.output).map_err(|e| fail(&e))?
    };
    if args.json {
        WrittenJson {
            output: args.output.display().to_string(),
            summary: &summary,
        }
        .print(&args.output)?;
    } else {
        println!(
            "{}: {} tensors from {} chunks ({} bytes), {} values; {} entries left out",
            args.output.display(),
            summary.tensors,
            summary.chunks,
            summary.tensor_bytes,
            summary.values,
            summary.dropped.len()
        );
    }
    Ok(())
}
