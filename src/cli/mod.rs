//! The `ckpt` command line: argument parsing and printing only; the work is in the library.
//!
//! The binary's module tree: every subcommand uses the library (`ckpt`) through its public
//! API only.

mod amp;
mod atc_check;
mod batch;
pub(crate) mod check;
mod consolidate;
mod convert;
mod generate;
mod inspect;
mod manifest;
mod output;
mod remap;
mod safety;
mod scan;
mod shard;
mod strip_module;
mod to_onnx;
mod to_safetensors;

use std::path::PathBuf;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use ckpt::security::Status;

/// A failure to report: one line, naming the file it concerns.
#[derive(Debug)]
pub(crate) struct Failure {
    pub file: Option<PathBuf>,
    pub message: String,
}

impl Failure {
    pub fn about(file: &std::path::Path, error: impl std::fmt::Display) -> Self {
        Failure {
            file: Some(file.to_owned()),
            message: error.to_string(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{}: {}", file.display(), self.message),
            None => f.write_str(&self.message),
        }
    }
}

#[derive(Parser, Debug)]
#[command(
    name = "ckpt",
    version,
    about = "Read, rewrite and export PyTorch checkpoints without Python; never executes pickle code"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Draw no progress bars (they are drawn only when stderr is a terminal anyway).
    #[arg(long, short = 'q', global = true)]
    quiet: bool,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Report a checkpoint's format, tensors, locations, prefixes, AMP state and unsafe globals.
    Inspect(inspect::Args),
    /// List every global every pickle in each file names, classified safe, unknown or
    /// dangerous. Exit 0 clean, 3 unknown globals, 1 dangerous, 2 unreadable (the worst file
    /// decides, in that order).
    Scan(scan::Args),
    /// Remove DataParallel/DDP/compile/FSDP wrapper prefixes from every state dict.
    StripModule(strip_module::Args),
    /// Rewrite storage locations offline, like torch.load's map_location.
    Remap(remap::Args),
    /// Show the AMP loss-scaler state, or convert it between apex, native and npu (--to).
    Amp(amp::Args),
    /// Apply several rewrites in one pass: extract/keep/drop-optimizer, strip-module, remap,
    /// amp, dtype, then write in the chosen format.
    Convert(convert::Args),
    /// Read any ONNX model against a model of CANN's ONNX parser: nodes ATC refuses or
    /// converts into something that computes other values. Exit 0 clean, 2 findings, 1
    /// unreadable.
    AtcCheck(atc_check::Args),
    /// Export to ATC-ready ONNX (dynamic batch, opset 9–13): a torchvision-family checkpoint,
    /// a torch.export `.pt2` archive or a traced TorchScript model.
    ToOnnx(to_onnx::Args),
    /// Consolidate a sharded torch.distributed.checkpoint (DCP) folder into one state dict
    /// (.pth or safetensors), streaming each tensor's chunks into place.
    Consolidate(consolidate::Args),
    /// Write one checkpoint as a sharded torch.distributed.checkpoint (DCP) folder for N
    /// ranks, laid out as FSDP2 saves it (every tensor split along dim 0), for `dcp.load`.
    Shard(shard::Args),
    /// Write a checkpoint's state dict as safetensors (shared tensors stored once).
    ToSafetensors(to_safetensors::Args),
    /// Run a plan (TOML) of steps over many checkpoints in parallel, with a manifest,
    /// resume and sharding.
    Batch(batch::Args),
    /// Work with batch manifests (`merge` shard manifests).
    Manifest(manifest::Args),
    /// Run an ONNX export (tract) and its TorchScript model (libtorch) on the same random
    /// inputs at several batch sizes; print the differences, exit 1 past the tolerance.
    /// Needs a binary built with the `libtorch` cargo feature.
    Check(check::Args),
    /// Print shell completions (bash, zsh, fish) or the man page, drawn from this binary's
    /// own options.
    Generate(generate::Args),
}

/// Runs `ckpt` with the process's arguments: parses them (printing help or a usage error and
/// exiting as clap does), handles interrupts (Ctrl-C removes the
/// output being written and exits 130), runs the command, and on failure prints one line,
/// `ckpt: error: FILE: message`, and returns failure (status 1). `ckpt scan` exits with its own
/// status (0 clean, 1 dangerous, 2 unreadable) and does not return.
pub fn main() -> ExitCode {
    let args = Cli::parse();
    let interrupted = match args.command {
        Command::Batch(_) => {
            "interrupted; the outputs finished so far are kept, nothing partial is left (the same command resumes)"
        }
        _ => "interrupted; nothing written",
    };
    if let Err(e) = ckpt::interrupt::install(interrupted) {
        eprintln!("ckpt: error: cannot handle interrupts: {e}");
        return ExitCode::FAILURE;
    }
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("ckpt: error: {failure}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the parsed command line.
pub(crate) fn run(cli: Cli) -> Result<(), Failure> {
    ckpt::progress::set_quiet(cli.quiet);
    match cli.command {
        Command::Inspect(args) => inspect::run(args),
        Command::Scan(args) => {
            // A bad `--allow` is a usage error: status 2 (nothing was checked), never 1.
            let code = scan::run(args).unwrap_or_else(|failure| {
                eprintln!("ckpt: error: {failure}");
                Status::Unreadable.exit_code()
            });
            // Flush what was printed, then leave with the scan's own status.
            use std::io::Write;
            let _ = std::io::stdout().flush();
            std::process::exit(i32::from(code))
        }
        Command::StripModule(args) => strip_module::run(args),
        Command::Remap(args) => remap::run(args),
        Command::ToOnnx(args) => to_onnx::run(args),
        Command::AtcCheck(args) => {
            let code = atc_check::run(args)?;
            use std::io::Write;
            let _ = std::io::stdout().flush();
            if code != 0 {
                std::process::exit(i32::from(code));
            }
            Ok(())
        }
        Command::Amp(args) => amp::run(args),
        Command::Convert(args) => convert::run(args),
        Command::Consolidate(args) => consolidate::run(args),
        Command::Shard(args) => shard::run(args),
        Command::ToSafetensors(args) => to_safetensors::run(args),
        Command::Batch(args) => batch::run(args),
        Command::Manifest(args) => manifest::run(args),
        Command::Check(args) => check::run(args),
        Command::Generate(args) => generate::run(args),
    }
}
