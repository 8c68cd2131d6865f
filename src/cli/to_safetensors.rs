//! `ckpt to-safetensors`: a checkpoint's state dict as a safetensors file.

use std::path::PathBuf;

use clap::Args as ClapArgs;

use super::safety::SafetyArgs;
use super::Failure;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Input checkpoint.
    input: PathBuf,
    /// Output file (written to a temporary file beside it, then renamed into place).
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: PathBuf,
    /// Export the state dict under this top-level key (default: the only state dict found).
    /// Keys are written as they are: strip wrapper prefixes with `ckpt strip-module` first.
    #[arg(long, value_name = "K")]
    key: Option<String>,
    #[command(flatten)]
    safety: SafetyArgs,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let input = &args.input;
    let fail = |e: &dyn std::fmt::Display| Failure::about(input, e);
    super::output::writable(&args.output)?;
    let checked = args.safety.check(input)?;
    let _progress = ckpt::progress::Task::start(input);
    let mut ckpt = checked.open().map_err(|e| fail(&e))?.checkpoint;
    let written =
        ckpt::to_safetensors(&mut ckpt, args.key.as_deref(), &args.output).map_err(|e| fail(&e))?;
    if !written.skipped.is_empty() {
        eprintln!(
            "left out {} entries that are not tensors: {}",
            written.skipped.len(),
            written.skipped.join(", ")
        );
    }
    for (alias, kept) in &written.aliases {
        eprintln!("`{alias}` shares `{kept}`'s storage: stored once, recorded in the metadata");
    }
    eprintln!(
        "wrote {}: {} tensors, {:.1} MiB",
        args.output.display(),
        written.tensors,
        written.bytes as f64 / f64::from(1 << 20)
    );
    Ok(())
}
