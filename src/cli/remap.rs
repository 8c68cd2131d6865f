use std::path::PathBuf;

use clap::Args as ClapArgs;

use ckpt::torch::{self, save::StoragePlan, Location, LocationMap, OutputFormat};
use ckpt::transform::remap;

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
}

pub fn run(args: Args) -> Result<(), Failure> {
    let input = &args.input;
    let fail = |e: &dyn std::fmt::Display| Failure::about(input, e);
    let out = args.output.resolve(input)?;
    let map = match args.to {
        Some(to) => LocationMap::All(to),
        None => LocationMap::Rules(args.map),
    };
    args.safety.check(input)?;
    let mut ckpt = torch::open(input).map_err(|e| fail(&e))?;
    let format = OutputFormat::same_as(ckpt.format).map_err(|e| fail(&e))?;
    let mut graph = ckpt.graph.clone();
    let done = remap(&mut graph, ckpt.root, &map).map_err(|e| fail(&e))?;
    let root = ckpt.root;
    torch::save(
        &mut ckpt,
        graph,
        root,
        format,
        &out,
        &StoragePlan::copy_all(),
    )
    .map_err(|e| fail(&e))?;
    eprintln!(
        "relocated {} storage references, converted {} torch_npu tensors -> {}",
        done.storages,
        done.npu_tensors,
        out.display()
    );
    Ok(())
}
