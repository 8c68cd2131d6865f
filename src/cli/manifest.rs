//! `ckpt manifest merge`: join the manifests of a sharded batch.

use std::path::PathBuf;

use clap::{Args as ClapArgs, Subcommand};

use ckpt::batch::manifest::{merge, Manifest};

use super::Failure;

#[derive(ClapArgs, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Join shard manifests of one plan into one.
    Merge {
        /// Manifests to join.
        #[arg(required = true, value_name = "MANIFEST")]
        inputs: Vec<PathBuf>,
        /// The merged manifest.
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: PathBuf,
    },
}

pub fn run(args: Args) -> Result<(), Failure> {
    let Command::Merge { inputs, output } = args.command;
    let mut manifests = Vec::new();
    for path in &inputs {
        let manifest = Manifest::load(path)
            .map_err(|e| Failure::about(path, e))?
            .ok_or_else(|| Failure::about(path, "no such file"))?;
        manifests.push((path.clone(), manifest));
    }
    let merged = merge(manifests).map_err(|e| Failure {
        file: None,
        message: e.to_string(),
    })?;
    merged
        .manifest
        .save(&output)
        .map_err(|e| Failure::about(&output, e))?;
    let m = &merged.manifest;
    let failed = m
        .entries
        .iter()
        .filter(|e| e.status == ckpt::batch::Status::Failed)
        .count();
    eprintln!(
        "merged {} manifests: {} of {} inputs recorded, {failed} failed; wrote {}",
        inputs.len(),
        m.entries.len(),
        m.inputs_total,
        output.display()
    );
    if !merged.missing_shards.is_empty() {
        eprintln!(
            "ckpt: warning: no manifest for shard {}",
            merged.missing_shards.join(", ")
        );
    }
    Ok(())
}
