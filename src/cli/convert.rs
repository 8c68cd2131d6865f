//! `ckpt convert`: several rewrites in one pass, in a fixed order:
//! extract → keep → drop-optimizer → strip-module → remap → amp → dtype → plain → write
//! (format).

use std::path::PathBuf;

use clap::Args as ClapArgs;

use ckpt::pipeline::{output_format, Rewrite};
use ckpt::torch::{self, DType, Location, LocationMap, OutputFormat};
use ckpt::transform::{AmpKind, CastScope, Plain, PrefixRule, TRAINING_STATE_KEYS};

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
    /// With --map/--to: go on when no storage location matches (as `ckpt remap`).
    #[arg(long)]
    allow_noop: bool,
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
    /// Make the output load with `torch.load`'s default `weights_only=True` (torch ≥ 2.6):
    /// rewrite argparse Namespaces and omegaconf configs into dicts and lists, numpy arrays
    /// into tensors, numpy scalars into numbers, paths into strings and enum members into
    /// their values; refuse (naming the object and its key) anything else torch's allow-list
    /// lacks. Implies --allow-unknown-globals for the classes it rewrites away.
    #[arg(long)]
    plain: bool,
    /// With --plain: print the key path of every rewritten object, not only the counts.
    #[arg(long, short = 'v', requires = "plain")]
    verbose: bool,
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
        .find(|k| args.drop_optimizer && TRAINING_STATE_KEYS.contains(&k.as_str()))
    {
        return Err(fail(&format!(
            "--keep `{key}` and --drop-optimizer contradict each other: --drop-optimizer removes `{key}`"
        )));
    }
    // The plain rewrite leaves only allow-listed globals in the output (or writes nothing),
    // so the classes it removes need no --allow-unknown-globals; dangerous ones still fail.
    let safety = SafetyArgs {
        allow_unknown_globals: args.safety.allow_unknown_globals || args.plain,
    };
    let checked = safety.check(input)?;
    let _progress = ckpt::progress::Task::start(input);
    let mut ckpt = checked.open().map_err(|e| fail(&e))?.checkpoint;
    let format = output_format(args.format.as_deref(), ckpt.format).map_err(|e| fail(&e))?;
    let mut rewrite = Rewrite::new(&ckpt);
    let mut done: Vec<String> = Vec::new();
    let mut warnings: Vec<String> = Vec::new();

    if let Some(key) = &args.extract {
        rewrite.extract(key).map_err(|e| fail(&e))?;
        done.push(format!("extracted `{key}`"));
    }
    if !args.keep.is_empty() {
        rewrite.keep(&args.keep).map_err(|e| fail(&e))?;
        done.push(format!("kept {}", quoted(&args.keep)));
    }
    if args.drop_optimizer {
        let dropped = rewrite.drop_optimizer().map_err(|e| fail(&e))?;
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
        let stripped = rewrite.strip_module(&rule).map_err(|e| fail(&e))?;
        done.push(if stripped.removed.is_empty() {
            "found no wrapper prefixes".to_owned()
        } else {
            format!(
                "stripped {} from {} of {} state dicts",
                stripped.removed.join(", "),
                stripped.removed.len(),
                stripped.state_dicts
            )
        });
    }
    if args.to.is_some() || !args.map.is_empty() {
        let map = match &args.to {
            Some(to) => LocationMap::All(to.clone()),
            None => LocationMap::Rules(args.map.clone()),
        };
        let moved = rewrite.relocate(&map).map_err(|e| fail(&e))?;
        super::remap::refuse_noop(&moved, args.allow_noop).map_err(|e| fail(&e))?;
        done.push(format!(
            "relocated {} storage references, converted {} torch_npu tensors",
            moved.storages, moved.npu_tensors
        ));
    }
    if let Some(kind) = &args.amp {
        let kind: AmpKind = kind.parse().map_err(|e: String| fail(&e))?;
        let converted = rewrite.amp(kind, args.scaler).map_err(|e| fail(&e))?;
        warnings.extend(converted.warnings.iter().cloned());
        done.push(super::amp::summary(&converted));
    }
    if let Some(name) = &args.dtype {
        let dtype =
            DType::from_name(name).ok_or_else(|| fail(&format!("unknown dtype `{name}`")))?;
        let scope = if args.dtype_optimizer {
            CastScope::WithOptimizer
        } else {
            CastScope::Model
        };
        let tensors = rewrite.cast(dtype, scope).map_err(|e| fail(&e))?;
        done.push(format!(
            "cast {tensors} tensors ({} storages) to {dtype}",
            rewrite.plan.len()
        ));
    }
    if args.plain {
        let plain = rewrite.plain().map_err(|e| fail(&e))?;
        done.extend(plain_summary(&plain, args.verbose));
    }

    rewrite
        .save(&mut ckpt, format, &out)
        .map_err(|e| fail(&e))?;
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

/// One line per kind of object the plain rewrite changed (with `verbose`, the key paths of
/// each), or one line saying there was nothing to change.
fn plain_summary(plain: &Plain, verbose: bool) -> Vec<String> {
    if plain.rewritten.is_empty() {
        return vec![
            "plain: nothing to rewrite (every object is on torch's weights_only allow-list)"
                .to_owned(),
        ];
    }
    plain
        .counts()
        .into_iter()
        .map(|(kind, count)| {
            let mut line = format!("plain: {count} × {}", kind.describe());
            if verbose {
                let paths: Vec<&str> = plain
                    .rewritten
                    .iter()
                    .filter(|f| f.plain == Ok(kind))
                    .map(|f| f.path.as_str())
                    .collect();
                line.push_str(&format!(" at {}", paths.join(", ")));
            }
            line
        })
        .collect()
}
