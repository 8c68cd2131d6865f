//! `ckpt batch`: run a plan over many checkpoints.

use std::path::PathBuf;

use clap::Args as ClapArgs;

use ckpt::batch::{self, Options, Shard};

use super::safety::SafetyArgs;
use super::Failure;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The plan (TOML; see docs/guide.md, section "batch").
    plan: PathBuf,
    /// Inputs processed at once.
    #[arg(long, value_name = "N", default_value_t = default_jobs())]
    jobs: usize,
    /// Process only shard I of N, for job arrays: every input belongs to exactly one shard.
    /// Shards are numbered from 0 (0 ≤ I < N), as Kubernetes' $JOB_COMPLETION_INDEX; from a
    /// Slurm array numbered from 1, pass $((SLURM_ARRAY_TASK_ID - 1))/N.
    #[arg(long, value_name = "I/N")]
    shard: Option<Shard>,
    /// Print each input with its outputs and what a run would do; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Manifest file (default: `<plan>.manifest.json` beside the plan, or
    /// `<plan>.manifest.I-of-N.json` with --shard).
    #[arg(long, value_name = "FILE")]
    manifest: Option<PathBuf>,
    #[command(flatten)]
    safety: SafetyArgs,
}

fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

pub fn run(args: Args) -> Result<(), Failure> {
    if args.jobs == 0 {
        return Err(Failure::about(&args.plan, "--jobs must be at least 1"));
    }
    let options = Options {
        plan: args.plan.clone(),
        jobs: args.jobs,
        shard: args.shard,
        dry_run: args.dry_run,
        manifest: args.manifest.clone(),
        policy: args.safety.options().policy(),
    };
    let summary = batch::run(&options, &mut std::io::stdout().lock())
        .map_err(|e| Failure::about(&args.plan, e))?;
    let verb = if args.dry_run {
        "would process"
    } else {
        "processed"
    };
    eprintln!(
        "ckpt batch: {} inputs{}: {verb} {}, {} up to date, {} failed{}",
        summary.inputs,
        args.shard
            .map(|s| format!(" in shard {s}"))
            .unwrap_or_default(),
        summary.done,
        summary.skipped,
        summary.failed.len(),
        if args.dry_run {
            String::new()
        } else {
            format!("; manifest {}", summary.manifest.display())
        }
    );
    for (input, error) in &summary.failed {
        eprintln!("  FAILED {input}: {error}");
    }
    if summary.failed.is_empty() {
        Ok(())
    } else {
        Err(Failure {
            file: None,
            message: format!(
                "{} of {} inputs failed",
                summary.failed.len(),
                summary.inputs
            ),
        })
    }
}
