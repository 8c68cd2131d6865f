//! `ckpt amp`: show the AMP loss-scaler state, or convert it between apex, native and npu.

use std::path::PathBuf;

use clap::Args as ClapArgs;
use serde_json::{json, Value as Json};

use ckpt::pipeline::Rewrite;
use ckpt::torch::amp::{self, AmpState, FoundAmp};
use ckpt::torch::{self, OutputFormat};
use ckpt::transform::{AmpConverted, AmpKind};

use super::output::OutputArgs;
use super::safety::SafetyArgs;
use super::Failure;

#[derive(ClapArgs, Debug)]
#[command(group(clap::ArgGroup::new("destination").args(["output", "in_place"])))]
pub struct Args {
    /// Checkpoint to read.
    input: PathBuf,
    /// Write the converted checkpoint here (with --to).
    #[arg(short = 'o', long = "output", value_name = "OUT", requires = "to")]
    output: Option<PathBuf>,
    /// Replace the input file itself (with --to; atomically, after the new file is complete).
    #[arg(long, requires = "to")]
    in_place: bool,
    /// Convert the loss-scaler state to this shape; everything else is left as it is.
    #[arg(long, value_name = "KIND", value_parser = ["native", "apex", "npu"], requires = "destination")]
    to: Option<String>,
    /// Which apex loss scaler to convert (`loss_scalerN`) when there are several.
    #[arg(long, value_name = "N", requires = "to")]
    scaler: Option<u32>,
    /// Print one JSON object (or `null`) instead of text.
    #[arg(long, conflicts_with = "to")]
    json: bool,
    #[command(flatten)]
    safety: SafetyArgs,
}

pub fn run(args: Args) -> Result<(), Failure> {
    let input = &args.input;
    let fail = |e: &dyn std::fmt::Display| Failure::about(input, e);
    let Some(to) = &args.to else {
        let ckpt = torch::open(input).map_err(|e| fail(&e))?;
        let found = amp::find(&ckpt.graph, ckpt.root);
        if args.json {
            println!("{}", found.as_ref().map_or(Json::Null, describe_json));
        } else {
            print!(
                "{}",
                found.as_ref().map_or_else(
                    || "no AMP loss-scaler state found\n".to_owned(),
                    describe_text,
                )
            );
        }
        return Ok(());
    };
    let to: AmpKind = to.parse().map_err(|e: String| fail(&e))?;
    let destination = OutputArgs {
        output: args.output.clone(),
        in_place: args.in_place,
    };
    let out = destination.resolve(input)?;
    let checked = args.safety.check(input)?;
    let _progress = ckpt::progress::Task::start(input);
    let mut ckpt = checked.open().map_err(|e| fail(&e))?.checkpoint;
    let format = OutputFormat::same_as(ckpt.format).map_err(|e| fail(&e))?;
    let mut rewrite = Rewrite::new(&ckpt);
    let done = rewrite.amp(to, args.scaler).map_err(|e| fail(&e))?;
    rewrite
        .save(&mut ckpt, format, &out)
        .map_err(|e| fail(&e))?;
    for warning in &done.warnings {
        eprintln!("ckpt: warning: {warning}");
    }
    eprintln!("{} -> {}", summary(&done), out.display());
    Ok(())
}

/// One line saying what the AMP conversion did.
pub fn summary(done: &AmpConverted) -> String {
    let at = done.path.join("/");
    match done.carried {
        Some((scale, tracker)) => format!(
            "converted the {} AMP state at `{at}` to {} (scale {scale:?}, growth tracker {tracker})",
            done.from, done.to
        ),
        None => format!("the AMP state at `{at}` is already {}; left as it is", done.to),
    }
}

fn describe_text(found: &FoundAmp) -> String {
    let mut rows: Vec<(String, String)> = vec![
        ("location".into(), format!("`{}`", found.path.join("/"))),
        ("kind".into(), found.state.kind().into()),
    ];
    match &found.state {
        AmpState::Native(s) | AmpState::Npu { scaler: s, .. } => {
            rows.push(("scale".into(), format!("{:?}", s.scale)));
            rows.push(("growth tracker".into(), s.growth_tracker.to_string()));
            rows.push(("growth factor".into(), format!("{:?}", s.growth_factor)));
            rows.push(("backoff factor".into(), format!("{:?}", s.backoff_factor)));
            rows.push(("growth interval".into(), s.growth_interval.to_string()));
            if let AmpState::Npu { dynamic, .. } = &found.state {
                rows.push(("dynamic".into(), dynamic.to_string()));
            }
        }
        AmpState::Apex(scalers) => {
            for s in scalers {
                rows.push((
                    format!("loss_scaler{}", s.index),
                    format!("loss_scale {:?}, unskipped {}", s.loss_scale, s.unskipped),
                ));
            }
            rows.push((
                "policy".into(),
                "apex dynamic: growth factor 2.0, backoff factor 0.5, growth interval 2000".into(),
            ));
        }
        AmpState::Disabled => rows.push((
            "state".into(),
            "a disabled GradScaler saved `{}`: there is no loss scale".into(),
        )),
    }
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    rows.iter()
        .map(|(k, v)| format!("{k:<width$}  {v}\n"))
        .collect()
}

fn describe_json(found: &FoundAmp) -> Json {
    let mut out = json!({ "path": found.path.join("/"), "kind": found.state.kind() });
    let fields = match &found.state {
        AmpState::Native(s) | AmpState::Npu { scaler: s, .. } => json!({
            "scale": s.scale,
            "growth_tracker": s.growth_tracker,
            "growth_factor": s.growth_factor,
            "backoff_factor": s.backoff_factor,
            "growth_interval": s.growth_interval,
        }),
        AmpState::Apex(scalers) => json!({
            "scalers": scalers.iter().map(|s| json!({
                "name": format!("loss_scaler{}", s.index),
                "loss_scale": s.loss_scale,
                "unskipped": s.unskipped,
            })).collect::<Vec<_>>(),
        }),
        AmpState::Disabled => json!({}),
    };
    if let (Some(out), Json::Object(fields)) = (out.as_object_mut(), fields) {
        out.extend(fields);
        if let AmpState::Npu { dynamic, .. } = found.state {
            out.insert("dynamic".into(), json!(dynamic));
        }
    }
    out
}
