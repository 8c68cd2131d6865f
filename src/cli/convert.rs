//! `ckpt convert`: several rewrites in one pass, in a fixed order:
//! extract → keep → drop-optimizer → strip-module → remap → amp → dtype → write (format).

use std::path::PathBuf;

use clap::Args as ClapArgs;

use ckpt::torch::{self, state_dict::find_state_dicts, DType, Location, LocationMap, OutputFormat};
use ckpt::transform::{
    cast_floating, convert_amp, remap, select, strip_state_dict, AmpKind, CastScope, PrefixRule,
};

use super::output::OutputArgs;
use super::Failure;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Input checkpoint.
    input: PathBuf,
    #[command(flatten)]
    output: OutputArgs,
    /// Write only the mapping under this top-level key (e.g. `state_dict`) as the checkpoint.
    #[arg(long, value_name = "KEY")]
    extract: Option<String>,
    /// Keep only these top-level keys.
    #[arg(long, value_name = "KEY", num_args = 1..)]
    keep: Vec<String>,
    /// Remove optimizer, scheduler and AMP state (top-level `optimizer`, `lr_scheduler`,
    /// `scaler`, `amp`, Lightning's `optimizer_states`, …).
    #[arg(long)]
    drop_optimizer: bool,
    /// Remove wrapper prefixes from every state dict (as `ckpt strip-module`).
    #[arg(long)]
    strip_module: bool,
    /// With --strip-module: strip exactly this prefix (repeatable) instead of auto-detecting.
    #[arg(long = "prefix", value_name = "P", requires = "strip_module")]
    prefixes: Vec<String>,
    /// Map one storage location to another, `FROM=TO` (repeatable; as `ckpt remap`).
    #[arg(long = "map", value_name = "FROM=TO", value_parser = LocationMap::parse_rule)]
    map: Vec<(torch::LocationPattern, Location)>,
    /// Put every storage on this device (as `ckpt remap --to`).
    #[arg(long, value_name = "DEVICE", conflicts_with = "map")]
    to: Option<Location>,
    /// Convert the AMP loss-scaler state to this shape (as `ckpt amp --to`).
    #[arg(long, value_name = "KIND", value_parser = ["native", "apex", "npu"], conflicts_with = "drop_optimizer")]
    amp: Option<String>,
    /// With --amp: which apex loss scaler to convert when there are several.
    #[arg(long, value_name = "N", requires = "amp")]
    scaler: Option<u32>,
    /// Cast the floating-point tensors of every state dict to this dtype.
    #[arg(long, value_name = "DTYPE", value_parser = ["float32", "float16", "bfloat16"])]
    dtype: Option<String>,
    /// With --dtype: cast optimizer state too (not its `step` counters).
    #[arg(long, requires = "dtype", conflicts_with = "drop_optimizer")]
    dtype_optimizer: bool,
    /// Output container: `zip` (torch ≥ 1.6) or `legacy` (readable by torch ≤ 1.5).
    /// Default: the input's.
    #[arg(long, value_name = "FORMAT", value_parser = ["zip", "legacy"])]
    format: Option<String>,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let input = &args.input;
    let fail = |e: &dyn std::fmt::Display| Failure::about(input, e);
    let out = args.output.resolve(input)?;
    if let Some(key) = args
        .keep
        .iter()
        .find(|k| args.drop_optimizer && select::TRAINING_STATE_KEYS.contains(&k.as_str()))
    {
        return Err(fail(&format!(
            "--keep `{key}` and --drop-optimizer contradict each other: --drop-optimizer removes `{key}`"
        )));
    }
    let mut ckpt = torch::open(input).map_err(|e| fail(&e))?;
    let format = match args.format.as_deref() {
        Some("legacy") => OutputFormat::Legacy,
        Some(_) => OutputFormat::Zip,
        None => OutputFormat::same_as(ckpt.format).map_err(|e| fail(&e))?,
    };
    let mut graph = ckpt.graph.clone();
    let mut root = ckpt.root;
    let mut done: Vec<String> = Vec::new();
    let mut warnings: Vec<String> = Vec::new();

    if let Some(key) = &args.extract {
        root = select::extract(&graph, root, key).map_err(|e| fail(&e))?;
        done.push(format!("extracted `{key}`"));
    }
    if !args.keep.is_empty() {
        select::keep(&mut graph, root, &args.keep).map_err(|e| fail(&e))?;
        done.push(format!("kept {}", quoted(&args.keep)));
    }
    if args.drop_optimizer {
        let dropped = select::drop_training_state(&mut graph, root).map_err(|e| fail(&e))?;
        done.push(if dropped.is_empty() {
            "found no optimizer, scheduler or AMP state to drop".to_owned()
        } else {
            format!("dropped {}", quoted(&dropped))
        });
    }
    if args.strip_module {
        let rule = if args.prefixes.is_empty() {
            PrefixRule::Auto
        } else {
            PrefixRule::Explicit(args.prefixes.clone())
        };
        let state_dicts = find_state_dicts(&graph, root).map_err(|e| fail(&e))?;
        let mut stripped = Vec::new();
        for sd in &state_dicts {
            let removed = strip_state_dict(&mut graph, *sd, &rule).map_err(|e| fail(&e))?;
            if !removed.is_empty() {
                stripped.push(removed.concat());
            }
        }
        done.push(if stripped.is_empty() {
            "found no wrapper prefixes".to_owned()
        } else {
            format!(
                "stripped {} from {} of {} state dicts",
                stripped.join(", "),
                stripped.len(),
                state_dicts.len()
            )
        });
    }
    if args.to.is_some() || !args.map.is_empty() {
        let map = match &args.to {
            Some(to) => LocationMap::All(to.clone()),
            None => LocationMap::Rules(args.map.clone()),
        };
        let moved = remap(&mut graph, root, &map).map_err(|e| fail(&e))?;
        done.push(format!(
            "relocated {} storage references, converted {} torch_npu tensors",
            moved.storages, moved.npu_tensors
        ));
    }
    if let Some(kind) = &args.amp {
        let kind: AmpKind = kind.parse().map_err(|e: String| fail(&e))?;
        let converted = convert_amp(&mut graph, root, kind, args.scaler).map_err(|e| fail(&e))?;
        warnings.extend(converted.warnings.iter().cloned());
        done.push(super::amp::summary(&converted));
    }
    let mut plan = torch::save::StoragePlan::copy_all();
    if let Some(name) = &args.dtype {
        let dtype =
            DType::from_name(name).ok_or_else(|| fail(&format!("unknown dtype `{name}`")))?;
        let scope = if args.dtype_optimizer {
            CastScope::WithOptimizer
        } else {
            CastScope::Model
        };
        let cast = cast_floating(&mut graph, root, dtype, scope).map_err(|e| fail(&e))?;
        done.push(format!(
            "cast {} tensors ({} storages) to {dtype}",
            cast.tensors,
            cast.plan.len()
        ));
        plan = cast.plan;
    }

    torch::save(&mut ckpt, graph, root, format, &out, &plan).map_err(|e| fail(&e))?;
    for warning in &warnings {
        eprintln!("ckpt: warning: {warning}");
    }
    for line in &done {
        eprintln!("{line}");
    }
    let container = match format {
        OutputFormat::Zip => "zip",
        OutputFormat::Legacy => "legacy",
    };
    eprintln!("wrote {} ({container} format)", out.display());
    Ok(())
}

fn quoted(keys: &[String]) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
