use std::path::PathBuf;

use clap::Args as ClapArgs;

use ckpt::torch::{self, save::StoragePlan, state_dict::find_state_dicts, OutputFormat};
use ckpt::transform::{strip_state_dict, PrefixRule};

use super::output::OutputArgs;
use super::safety::SafetyArgs;
use super::Failure;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Input checkpoint.
    input: PathBuf,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    safety: SafetyArgs,
    /// Strip exactly this prefix (repeatable) instead of auto-detecting
    /// `module.`, `_orig_mod.`, `_fsdp_wrapped_module.` and `_checkpoint_wrapped_module.`.
    #[arg(long = "prefix", value_name = "P")]
    prefixes: Vec<String>,
    /// Only the state dicts under this top-level key.
    #[arg(long, value_name = "K")]
    key: Option<String>,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let input = &args.input;
    let fail = |e: &dyn std::fmt::Display| Failure::about(input, e);
    let out = args.output.resolve(input)?;
    args.safety.check(input)?;
    let mut ckpt = torch::open(input).map_err(|e| fail(&e))?;
    let format = OutputFormat::same_as(ckpt.format).map_err(|e| fail(&e))?;
    let rule = if args.prefixes.is_empty() {
        PrefixRule::Auto
    } else {
        PrefixRule::Explicit(args.prefixes.clone())
    };
    let mut graph = ckpt.graph.clone();
    let start = match &args.key {
        Some(key) => graph
            .lookup(ckpt.root, key)
            .ok_or_else(|| fail(&format!("there is no top-level key `{key}`")))?,
        None => ckpt.root,
    };
    let state_dicts = find_state_dicts(&graph, start).map_err(|e| fail(&e))?;
    let mut stripped = Vec::new();
    for sd in &state_dicts {
        let removed = strip_state_dict(&mut graph, *sd, &rule).map_err(|e| fail(&e))?;
        if !removed.is_empty() {
            stripped.push(removed.concat());
        }
    }
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
    if stripped.is_empty() {
        eprintln!(
            "no wrapper prefixes found; wrote an unchanged copy to {}",
            out.display()
        );
    } else {
        eprintln!(
            "stripped {} from {} of {} state dicts -> {}",
            stripped.join(", "),
            stripped.len(),
            state_dicts.len(),
            out.display()
        );
    }
    Ok(())
}
