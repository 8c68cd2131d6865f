use std::path::PathBuf;

use clap::Args as ClapArgs;

use ckpt::pipeline::Rewrite;
use ckpt::torch::OutputFormat;
use ckpt::transform::PrefixRule;

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
    let checked = args.safety.check(input)?;
    let _progress = ckpt::progress::Task::start(input);
    let mut ckpt = checked.open().map_err(|e| fail(&e))?.checkpoint;
    let format = OutputFormat::same_as(ckpt.format).map_err(|e| fail(&e))?;
    let rule = if args.prefixes.is_empty() {
        PrefixRule::Auto
    } else {
        PrefixRule::Explicit(args.prefixes.clone())
    };
    let mut rewrite = Rewrite::new(&ckpt);
    let stripped = match &args.key {
        Some(key) => rewrite.strip_module_in(key, &rule),
        None => rewrite.strip_module(&rule),
    }
    .map_err(|e| fail(&e))?;
    rewrite
        .save(&mut ckpt, format, &out)
        .map_err(|e| fail(&e))?;
    if stripped.removed.is_empty() {
        eprintln!(
            "no wrapper prefixes found; wrote an unchanged copy to {}",
            out.display()
        );
    } else {
        eprintln!(
            "stripped {} from {} of {} state dicts -> {}",
            stripped.removed.join(", "),
            stripped.removed.len(),
            stripped.state_dicts,
            out.display()
        );
    }
    Ok(())
}
