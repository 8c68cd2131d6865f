use std::path::PathBuf;

use clap::Args as ClapArgs;

use ckpt::pipeline::Rewrite;
use ckpt::torch::{self, Location, LocationMap, OutputFormat};
use ckpt::transform::Remapped;

use super::output::OutputArgs;
use super::safety::SafetyArgs;
use super::Failure;

#[derive(ClapArgs, Debug)]
#[command(group(clap::ArgGroup::new("target").required(true).args(["map", "to"])))]
pub struct Args {
    /// Input checkpoint.
    input: PathBuf,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    safety: SafetyArgs,
    /// Map one location to another: `cuda:1=cuda:0`, `cuda:*=cpu` (repeatable; first match wins).
    #[arg(long = "map", value_name = "FROM=TO", value_parser = LocationMap::parse_rule)]
    map: Vec<(torch::LocationPattern, Location)>,
    /// Put every storage on this device: `cpu`, `cuda:0`, `npu:0`.
    #[arg(long, value_name = "DEVICE", conflicts_with = "map")]
    to: Option<Location>,
    /// Write the output even when no storage location matches `--map` (or there are none).
    #[arg(long)]
    allow_noop: bool,
}

/// Refuses a relocation that matched no storage (`--map cuda:9=cpu` on a file whose storages
/// are all on `cuda:0`), naming the locations the file has, unless `allow_noop`.
pub fn refuse_noop(done: &Remapped, allow_noop: bool) -> Result<(), String> {
    if done.matched > 0 || allow_noop {
        return Ok(());
    }
    let found = if done.locations.is_empty() {
        "the checkpoint has no storages".to_owned()
    } else {
        let list: Vec<&str> = done.locations.iter().map(String::as_str).collect();
        format!("its storages are on {}", list.join(", "))
    };
    Err(format!(
        "the location map matches no storage ({found}); nothing would change. Pass --allow-noop to write the file anyway"
    ))
}

pub fn run(args: Args) -> Result<(), Failure> {
    let input = &args.input;
    let fail = |e: &dyn std::fmt::Display| Failure::about(input, e);
    let out = args.output.resolve(input)?;
    let map = match args.to {
        Some(to) => LocationMap::All(to),
        None => LocationMap::Rules(args.map),
    };
    let checked = args.safety.check(input)?;
    let _progress = ckpt::progress::Task::start(input);
    let mut ckpt = checked.open().map_err(|e| fail(&e))?.checkpoint;
    let format = OutputFormat::same_as(ckpt.format).map_err(|e| fail(&e))?;
    let mut rewrite = Rewrite::new(&ckpt);
    let done = rewrite.relocate(&map).map_err(|e| fail(&e))?;
    refuse_noop(&done, args.allow_noop).map_err(|e| fail(&e))?;
    rewrite
        .save(&mut ckpt, format, &out)
        .map_err(|e| fail(&e))?;
    eprintln!(
        "relocated {} storage references, converted {} torch_npu tensors -> {}",
        done.storages,
        done.npu_tensors,
        out.display()
    );
    Ok(())
}
