//! The batch plan: a TOML file of `[[job]]` tables, each naming inputs, an output folder, an
//! output name template and a chain of steps. Parsing validates everything a run would trip
//! over later (unknown steps and options, bad devices, dtypes, opsets, templates), so a bad
//! plan fails before any file is touched.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::sharded::Selection;
use ckpt_formats::torch::{DType, Location, LocationMap, LocationPattern};
use ckpt_formats::transform::{AmpKind, CastScope, PrefixRule};
use ckpt_import::script::GivenInput;
use ckpt_onnx::{Batch, Opset};

use super::template::Template;
use super::BatchError;

/// A whole plan. Invariant: at least one job.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub jobs: Vec<Job>,
}

/// One `[[job]]`. Invariants: `inputs` and `steps` are non-empty; at most one `dtype` step and
/// at most one step of each output kind, so the outputs of one input never collide; a
/// `consolidate` step, if any, is the first step and the only one.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    /// Files, folders or glob patterns (`**` allowed), relative to the plan's folder.
    pub inputs: Vec<String>,
    /// Where outputs go, relative to the plan's folder.
    pub output_dir: PathBuf,
    pub name: Template,
    pub steps: Vec<Step>,
    /// The steps as the plan wrote them, recorded in the manifest.
    pub steps_source: Vec<serde_json::Value>,
}

impl Job {
    /// Whether the job's inputs are DCP checkpoint folders (its first step is `consolidate`)
    /// rather than checkpoint files.
    pub fn consolidates(&self) -> bool {
        matches!(self.steps.first(), Some(Step::Consolidate(_)))
    }

    /// Whether `to-onnx` is the job's only step, so its inputs may be models' own programs
    /// (`.pt2` and TorchScript archives) as well as checkpoints.
    pub fn only_exports_onnx(&self) -> bool {
        matches!(self.steps.as_slice(), [Step::ToOnnx(_)])
    }
}

/// One step of a job's chain.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Consolidate a sharded DCP folder into one checkpoint the later steps work on; only
    /// ever the first step.
    Consolidate(Selection),
    /// Remove wrapper prefixes (auto-detected, or exactly these).
    StripModule(PrefixRule),
    /// Rewrite storage locations.
    Remap(LocationMap),
    /// Convert the AMP loss-scaler state.
    Amp { to: AmpKind, scaler: Option<u32> },
    /// Cast floating-point tensors.
    Dtype { to: DType, scope: CastScope },
    /// Drop optimizer, scheduler and AMP state.
    DropOptimizer,
    /// Make the mapping under a top-level key the whole checkpoint.
    Extract(String),
    /// Rewrite what torch's `weights_only` loader refuses into plain values.
    Plain,
    /// Write the checkpoint (`.pth`), in this container or the input's.
    Format(Option<String>),
    /// Export ONNX (`.onnx`).
    ToOnnx(OnnxStep),
    /// Export the state dict to safetensors (`.safetensors`), optionally the one under a key.
    ToSafetensors { key: Option<String> },
}

/// The options of a `to-onnx` step (those of `ckpt to-onnx`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OnnxStep {
    /// A torchvision architecture name; `None` for auto-detection.
    pub arch: Option<String>,
    pub opset: Opset,
    /// Per-sample input shapes: empty for the default (a checkpoint's 3×224×224, a
    /// trace's recorded example), one `C,H,W` for a checkpoint, one per input for a trace.
    pub input_shape: Vec<GivenInput>,
    pub batch: Batch,
    pub fold_bn: bool,
}

/// What kind of file an output step writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OutputKind {
    Checkpoint,
    Onnx,
    Safetensors,
}

impl OutputKind {
    /// The extension the output name gets.
    pub fn extension(self) -> &'static str {
        match self {
            OutputKind::Checkpoint => "pth",
            OutputKind::Onnx => "onnx",
            OutputKind::Safetensors => "safetensors",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            OutputKind::Checkpoint => "checkpoint",
            OutputKind::Onnx => "onnx",
            OutputKind::Safetensors => "safetensors",
        }
    }
}

impl Step {
    /// The step's name in the plan.
    pub fn name(&self) -> &'static str {
        match self {
            Step::Consolidate(_) => "consolidate",
            Step::StripModule(_) => "strip-module",
            Step::Remap(_) => "remap",
            Step::Amp { .. } => "amp",
            Step::Dtype { .. } => "dtype",
            Step::DropOptimizer => "drop-optimizer",
            Step::Extract(_) => "extract",
            Step::Plain => "plain",
            Step::Format(_) => "format",
            Step::ToOnnx(_) => "to-onnx",
            Step::ToSafetensors { .. } => "to-safetensors",
        }
    }

    /// The kind of file this step writes, if it writes one.
    pub fn output(&self) -> Option<OutputKind> {
        match self {
            Step::Format(_) => Some(OutputKind::Checkpoint),
            Step::ToOnnx(_) => Some(OutputKind::Onnx),
            Step::ToSafetensors { .. } => Some(OutputKind::Safetensors),
            _ => None,
        }
    }
}

/// Whether `steps` leave no unknown global in any checkpoint they write: a `plain` step
/// comes before every `format` step (its output holds only allow-listed globals, or it fails),
/// so the input's unknown classes need no `--allow-unknown-globals`.
pub fn plain_before_writes(steps: &[Step]) -> bool {
    let plain = steps.iter().position(|s| matches!(s, Step::Plain));
    let write = steps.iter().position(|s| matches!(s, Step::Format(_)));
    match (plain, write) {
        (Some(p), Some(w)) => p < w,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// Names of every step, for messages.
const STEP_NAMES: &str = "consolidate, strip-module, remap, amp, dtype, drop-optimizer, extract, \
     plain, format, to-onnx, to-safetensors";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    #[serde(default)]
    job: Vec<RawJob>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJob {
    inputs: Vec<String>,
    output_dir: PathBuf,
    #[serde(default = "default_name")]
    name: String,
    steps: Vec<RawStep>,
}

fn default_name() -> String {
    "{stem}".to_owned()
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawStep {
    Name(String),
    Table(BTreeMap<String, toml::Value>),
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct ConsolidateOptions {
    #[serde(default)]
    model_only: bool,
    extract: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct StripOptions {
    #[serde(default)]
    prefix: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RemapOptions {
    to: Option<String>,
    #[serde(default)]
    map: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AmpOptions {
    to: String,
    scaler: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DtypeOptions {
    to: String,
    #[serde(default)]
    optimizer: bool,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FormatOptions {
    container: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct OnnxOptions {
    arch: Option<String>,
    opset: Option<i64>,
    input_shape: Option<InputShapes>,
    batch: Option<toml::Value>,
    fold_bn: Option<bool>,
}

/// A `to-onnx` step's `input-shape`: `[C, H, W]`, or `ckpt to-onnx --input-shape`'s
/// `NAME:DIMS[:DTYPE]` texts, one per input.
#[derive(Deserialize)]
#[serde(untagged)]
enum InputShapes {
    Image(Vec<u64>),
    Inputs(Vec<String>),
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct SafetensorsOptions {
    key: Option<String>,
}

impl Plan {
    /// Parses and validates plan text.
    pub fn parse(text: &str) -> Result<Plan, BatchError> {
        let raw: RawPlan = toml::from_str(text).map_err(|e| BatchError::Plan {
            what: e.to_string().trim_end().to_owned(),
        })?;
        if raw.job.is_empty() {
            return Err(plan_error("the plan has no [[job]] table"));
        }
        let jobs = raw
            .job
            .into_iter()
            .enumerate()
            .map(|(i, job)| parse_job(job).map_err(|e| plan_error(&format!("job {}: {e}", i + 1))))
            .collect::<Result<_, _>>()?;
        Ok(Plan { jobs })
    }
}

fn plan_error(what: &str) -> BatchError {
    BatchError::Plan {
        what: what.to_owned(),
    }
}

fn parse_job(raw: RawJob) -> Result<Job, String> {
    if raw.inputs.is_empty() {
        return Err("`inputs` is empty".into());
    }
    if raw.steps.is_empty() {
        return Err("`steps` is empty".into());
    }
    let name = Template::parse(&raw.name).map_err(|e| format!("`name`: {e}"))?;
    let steps_source = raw.steps.iter().map(source_of).collect();
    let steps: Vec<Step> = raw
        .steps
        .into_iter()
        .enumerate()
        .map(|(i, s)| parse_step(s).map_err(|e| format!("step {}: {e}", i + 1)))
        .collect::<Result<_, _>>()?;
    let count = |pred: &dyn Fn(&Step) -> bool| steps.iter().filter(|s| pred(s)).count();
    if let Some(i) = steps
        .iter()
        .skip(1)
        .position(|s| matches!(s, Step::Consolidate(_)))
    {
        return Err(format!(
            "step {}: `consolidate` reads a DCP folder, so it can only be the first step",
            i + 2
        ));
    }
    if count(&|s| matches!(s, Step::Dtype { .. })) > 1 {
        return Err("more than one `dtype` step".into());
    }
    if let Some(plain) = steps.iter().position(|s| matches!(s, Step::Plain)) {
        if let Some(i) = steps[plain..]
            .iter()
            .position(|s| matches!(s, Step::Dtype { .. }))
        {
            return Err(format!(
                "step {}: `dtype` after `plain`; cast first (the plain rewrite's new tensors are not cast)",
                plain + i + 1
            ));
        }
    }
    for kind in [
        OutputKind::Checkpoint,
        OutputKind::Onnx,
        OutputKind::Safetensors,
    ] {
        if count(&|s| s.output() == Some(kind)) > 1 {
            return Err(format!(
                "more than one step writes a {} output; one per kind (they would share a name)",
                kind.name()
            ));
        }
    }
    Ok(Job {
        inputs: raw.inputs,
        output_dir: raw.output_dir,
        name,
        steps,
        steps_source,
    })
}

fn source_of(raw: &RawStep) -> serde_json::Value {
    match raw {
        RawStep::Name(name) => serde_json::Value::String(name.clone()),
        RawStep::Table(table) => serde_json::to_value(table).unwrap_or(serde_json::Value::Null),
    }
}

fn parse_step(raw: RawStep) -> Result<Step, String> {
    let (name, value) = match raw {
        RawStep::Name(name) => (name, None),
        RawStep::Table(table) => {
            let mut items = table.into_iter();
            match (items.next(), items.next()) {
                (Some((name, value)), None) => (name, Some(value)),
                _ => {
                    return Err(
                        "an inline table step has exactly one key, the step name: `{ remap = \"cpu\" }`"
                            .into(),
                    )
                }
            }
        }
    };
    let step = match name.as_str() {
        "consolidate" => {
            let options: ConsolidateOptions = options(value, |v| match v {
                toml::Value::String(key) => Some(ConsolidateOptions {
                    model_only: false,
                    extract: Some(key),
                }),
                _ => None,
            })?;
            Step::Consolidate(Selection {
                model_only: options.model_only,
                extract: options.extract,
            })
        }
        "strip-module" => {
            let options: StripOptions = options(value, |v| match v {
                toml::Value::String(p) => Some(StripOptions { prefix: vec![p] }),
                _ => None,
            })?;
            Step::StripModule(if options.prefix.is_empty() {
                PrefixRule::Auto
            } else {
                PrefixRule::Explicit(options.prefix)
            })
        }
        "remap" => {
            let options: RemapOptions = required(value, "remap", |v| match v {
                toml::Value::String(to) => Some(RemapOptions {
                    to: Some(to),
                    map: Vec::new(),
                }),
                _ => None,
            })?;
            Step::Remap(location_map(options)?)
        }
        "amp" => {
            let options: AmpOptions = required(value, "amp", |v| match v {
                toml::Value::String(to) => Some(AmpOptions { to, scaler: None }),
                _ => None,
            })?;
            Step::Amp {
                to: options.to.parse()?,
                scaler: options.scaler,
            }
        }
        "dtype" => {
            let options: DtypeOptions = required(value, "dtype", |v| match v {
                toml::Value::String(to) => Some(DtypeOptions {
                    to,
                    optimizer: false,
                }),
                _ => None,
            })?;
            let to = match DType::from_name(&options.to) {
                Some(d @ (DType::Float32 | DType::Float16 | DType::BFloat16)) => d,
                _ => {
                    return Err(format!(
                        "`dtype` is `{}`; use float32, float16 or bfloat16",
                        options.to
                    ))
                }
            };
            let scope = if options.optimizer {
                CastScope::WithOptimizer
            } else {
                CastScope::Model
            };
            Step::Dtype { to, scope }
        }
        "drop-optimizer" => {
            no_options(value, "drop-optimizer")?;
            Step::DropOptimizer
        }
        "plain" => {
            no_options(value, "plain")?;
            Step::Plain
        }
        "extract" => {
            let key = match value {
                Some(toml::Value::String(key)) => key,
                _ => {
                    return Err(
                        "`extract` takes a top-level key: `{ extract = \"state_dict\" }`".into(),
                    )
                }
            };
            Step::Extract(key)
        }
        "format" => {
            let options: FormatOptions = options(value, |v| match v {
                toml::Value::String(c) => Some(FormatOptions { container: Some(c) }),
                _ => None,
            })?;
            if let Some(c) = options
                .container
                .as_deref()
                .filter(|c| !matches!(*c, "zip" | "legacy"))
            {
                return Err(format!("`format` is `{c}`; use zip or legacy"));
            }
            Step::Format(options.container)
        }
        "to-onnx" => Step::ToOnnx(onnx_step(options(value, |_| None)?)?),
        "to-safetensors" => {
            let options: SafetensorsOptions = options(value, |v| match v {
                toml::Value::String(key) => Some(SafetensorsOptions { key: Some(key) }),
                _ => None,
            })?;
            Step::ToSafetensors { key: options.key }
        }
        other => return Err(format!("unknown step `{other}` (steps: {STEP_NAMES})")),
    };
    Ok(step)
}

/// Options of a step that may be written bare: defaults when absent, a table, or a scalar
/// shorthand that `shorthand` understands.
fn options<T: for<'de> Deserialize<'de> + Default>(
    value: Option<toml::Value>,
    shorthand: impl Fn(toml::Value) -> Option<T>,
) -> Result<T, String> {
    match value {
        None => Ok(T::default()),
        Some(v @ toml::Value::Table(_)) => v.try_into().map_err(|e: toml::de::Error| clean(e)),
        Some(v) => shorthand(v).ok_or_else(|| "unexpected value; give a table of options".into()),
    }
}

/// Options of a step that needs some.
fn required<T: for<'de> Deserialize<'de>>(
    value: Option<toml::Value>,
    step: &str,
    shorthand: impl Fn(toml::Value) -> Option<T>,
) -> Result<T, String> {
    match value {
        None => Err(format!("`{step}` needs a value: `{{ {step} = … }}`")),
        Some(v @ toml::Value::Table(_)) => v.try_into().map_err(|e: toml::de::Error| clean(e)),
        Some(v) => shorthand(v).ok_or_else(|| format!("`{step}`: unexpected value")),
    }
}

fn no_options(value: Option<toml::Value>, step: &str) -> Result<(), String> {
    match value {
        None => Ok(()),
        Some(toml::Value::Table(t)) if t.is_empty() => Ok(()),
        Some(_) => Err(format!("`{step}` takes no options")),
    }
}

fn clean(e: toml::de::Error) -> String {
    e.message().trim_end().to_owned()
}

fn location_map(options: RemapOptions) -> Result<LocationMap, String> {
    match (options.to, options.map.is_empty()) {
        (Some(to), true) => to
            .parse::<Location>()
            .map(LocationMap::All)
            .map_err(|e| e.to_string()),
        (None, false) => options
            .map
            .iter()
            .map(|rule| LocationMap::parse_rule(rule).map_err(|e| e.to_string()))
            .collect::<Result<Vec<(LocationPattern, Location)>, _>>()
            .map(LocationMap::Rules),
        _ => Err("`remap` takes either `to = \"DEVICE\"` or `map = [\"FROM=TO\", …]`".into()),
    }
}

fn onnx_step(options: OnnxOptions) -> Result<OnnxStep, String> {
    let opset = Opset::new(options.opset.unwrap_or(11)).map_err(|e| e.to_string())?;
    let input_shape = match options.input_shape {
        None => Vec::new(),
        Some(InputShapes::Image(dims)) if dims.len() == 3 && !dims.contains(&0) => {
            vec![GivenInput::fixed(&dims)]
        }
        Some(InputShapes::Image(_)) => {
            return Err("`input-shape` is three positive integers [C, H, W], or a list of NAME:DIMS[:DTYPE] texts".into())
        }
        Some(InputShapes::Inputs(texts)) => texts
            .iter()
            .map(|text| text.parse::<GivenInput>())
            .collect::<Result<_, _>>()
            .map_err(|e| format!("`input-shape`: {e}"))?,
    };
    let batch = match options.batch {
        None => Batch::Dynamic("batch".to_owned()),
        Some(toml::Value::String(s)) => s.parse().map_err(|e| format!("`batch`: {e}"))?,
        Some(toml::Value::Integer(n)) if n > 0 => Batch::Fixed(n.unsigned_abs()),
        Some(_) => return Err("`batch` is \"dynamic\", \"static\" or a positive integer".into()),
    };
    Ok(OnnxStep {
        arch: options.arch.filter(|a| a != "auto"),
        opset,
        input_shape,
        batch,
        fold_bn: options.fold_bn.unwrap_or(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str) -> String {
        match Plan::parse(text) {
            Err(e) => e.to_string(),
            Ok(plan) => panic!("parsed: {plan:?}"),
        }
    }

    #[test]
    fn the_issue_example_parses() {
        let plan = Plan::parse(
            r#"
[[job]]
inputs = ["ckpts/**/*.pth.tar"]
output_dir = "out"
name = "{stem}-{sha8}"
steps = ["strip-module", { remap = "cpu" }, "drop-optimizer", { to-onnx = { opset = 11 } }, "to-safetensors"]
"#,
        )
        .expect("plan");
        let job = &plan.jobs[0];
        let names: Vec<&str> = job.steps.iter().map(Step::name).collect();
        assert_eq!(
            names,
            [
                "strip-module",
                "remap",
                "drop-optimizer",
                "to-onnx",
                "to-safetensors"
            ]
        );
        assert_eq!(job.steps[1], Step::Remap(LocationMap::All(Location::cpu())));
        match &job.steps[3] {
            Step::ToOnnx(o) => assert_eq!(o.opset.version(), 11),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn options_in_tables_and_shorthands() {
        let plan = Plan::parse(
            r#"
[[job]]
inputs = ["a.pth"]
output_dir = "o"
steps = [{ strip-module = { prefix = ["module."] } }, { remap = { map = ["cuda:0=cpu"] } },
         { dtype = { to = "float16", optimizer = true } }, { amp = "npu" }, { extract = "model" },
         { format = "legacy" }, { to-safetensors = { key = "model" } }]
"#,
        )
        .expect("plan");
        let steps = &plan.jobs[0].steps;
        assert_eq!(
            steps[0],
            Step::StripModule(PrefixRule::Explicit(vec!["module.".into()]))
        );
        assert_eq!(
            steps[2],
            Step::Dtype {
                to: DType::Float16,
                scope: CastScope::WithOptimizer
            }
        );
        assert_eq!(steps[5], Step::Format(Some("legacy".into())));
        assert_eq!(
            steps[6],
            Step::ToSafetensors {
                key: Some("model".into())
            }
        );
        assert_eq!(plan.jobs[0].name.to_string(), "{stem}");
    }

    #[test]
    fn consolidate_comes_first() {
        let plan = Plan::parse(
            r#"
[[job]]
inputs = ["runs/*/step_*"]
output_dir = "o"
steps = [{ consolidate = { extract = "model", model-only = true } }, "strip-module", "to-safetensors"]

[[job]]
inputs = ["a.pth"]
output_dir = "o"
steps = ["format"]
"#,
        )
        .expect("plan");
        assert_eq!(
            plan.jobs[0].steps[0],
            Step::Consolidate(Selection {
                model_only: true,
                extract: Some("model".into())
            })
        );
        assert!(plan.jobs[0].consolidates());
        assert!(!plan.jobs[1].consolidates());
        let bare = Plan::parse(
            "[[job]]\ninputs = [\"d\"]\noutput_dir = \"o\"\nsteps = [{ consolidate = \"model\" }]",
        )
        .expect("plan");
        assert_eq!(
            bare.jobs[0].steps[0],
            Step::Consolidate(Selection {
                model_only: false,
                extract: Some("model".into())
            })
        );
        assert!(error(
            "[[job]]\ninputs = [\"d\"]\noutput_dir = \"o\"\nsteps = [\"strip-module\", \"consolidate\"]"
        )
        .contains("step 2: `consolidate`"));
    }

    #[test]
    fn a_plain_step_before_every_write_leaves_no_unknown_global_in_them() {
        let steps = |text: &str| {
            Plan::parse(&format!(
                "[[job]]\ninputs = [\"a\"]\noutput_dir = \"o\"\nsteps = [{text}]\n"
            ))
            .expect("plan")
            .jobs[0]
                .steps
                .clone()
        };
        assert!(plain_before_writes(&steps("\"plain\", \"format\"")));
        assert!(plain_before_writes(&steps("\"plain\", \"to-safetensors\"")));
        assert!(!plain_before_writes(&steps("\"format\", \"plain\"")));
        assert!(!plain_before_writes(&steps("\"strip-module\", \"format\"")));
    }

    #[test]
    fn errors_name_the_job_and_step() {
        let job = |steps: &str| {
            format!("[[job]]\ninputs = [\"a\"]\noutput_dir = \"o\"\nsteps = [{steps}]\n")
        };
        assert!(error(&job("\"frobnicate\"")).contains("job 1: step 1: unknown step `frobnicate`"));
        assert!(error(&job("{ remap = \"gpu:x\" }")).contains("step 1"));
        assert!(error(&job("{ dtype = \"int8\" }")).contains("use float32, float16 or bfloat16"));
        assert!(error(&job("{ to-onnx = { opset = 20 } }")).contains("step 1"));
        assert!(error(&job("{ to-onnx = { colour = 1 } }")).contains("unknown field"));
        assert!(error(&job("\"to-safetensors\", \"to-safetensors\"")).contains("more than one"));
        assert!(
            error(&job("{ dtype = \"float16\" }, { dtype = \"bfloat16\" }"))
                .contains("more than one `dtype`")
        );
        assert!(error(&job("\"plain\", { dtype = \"float16\" }"))
            .contains("step 2: `dtype` after `plain`"));
        assert!(error(&job("{ plain = true }")).contains("plain"));
        assert!(error(&job("{ remap = \"cpu\", amp = \"native\" }")).contains("exactly one key"));
        assert!(error(&job("\"remap\"")).contains("needs a value"));
        assert!(error("").contains("no [[job]]"));
        assert!(
            error("[[job]]\ninputs = []\noutput_dir = \"o\"\nsteps = [\"format\"]")
                .contains("`inputs` is empty")
        );
        assert!(error(
            "[[job]]\ninputs = [\"a\"]\noutput_dir = \"o\"\nname = \"{bad}\"\nsteps = [\"format\"]"
        )
        .contains("`name`"));
        assert!(error(
            "[[job]]\ninputs = [\"a\"]\noutput_dir = \"o\"\nsteps = [\"format\"]\ncolour = 1"
        )
        .contains("unknown field"));
    }
}
