use std::path::PathBuf;

use clap::Args as ClapArgs;

use ckpt::onnx::program::{export_program, BatchDim, ProgramOptions, ProgramReport};
use ckpt::onnx::script::export_script;
use ckpt::onnx::AtcCommand;
use ckpt::onnx::Choice;
use ckpt::onnx::{export, Batch, ExportOptions, Extent, Opset};
use ckpt::torch::pt2::Pt2Archive;
use ckpt::torch::script::{image_shape, GivenInput, GivenSize, ScriptArchive};
use ckpt::Model;

use super::safety::SafetyArgs;
use super::Failure;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Input checkpoint.
    input: PathBuf,
    /// Output ONNX file (written to a temporary file beside it, then renamed into place).
    #[arg(short = 'o', long = "output", value_name = "OUT.onnx")]
    output: PathBuf,
    #[command(flatten)]
    safety: SafetyArgs,
    /// torchvision architecture name, or `auto` (the default): the checkpoint's `arch` field,
    /// else the keys. Not for `.pt2` archives, which carry their own graph.
    #[arg(long, value_name = "NAME|auto")]
    arch: Option<String>,
    /// ONNX opset (ATC takes 9–13).
    #[arg(long, default_value_t = 11, value_parser = parse_opset)]
    opset: i64,
    /// Per-sample input shape [default: 3,224,224]. For a TorchScript trace, repeat it as
    /// NAME:DIMS[:DTYPE] per input (`ids:128:int64`, `mask:128:bool`). Not for `.pt2`
    /// archives, whose program fixes it.
    #[arg(long, value_name = "C,H,W|NAME:DIMS[:DTYPE]")]
    input_shape: Vec<GivenInput>,
    /// `dynamic` (a named batch dimension, compiled with ATC's dynamic batch), a fixed
    /// size, or `static` (`.pt2` and TorchScript traces: every size as the program records
    /// it and no batch axis, so ops may work along any axis; for ATC without dynamic
    /// profiles; a program with a declared dynamic dimension is refused).
    #[arg(long, value_name = "dynamic|N|static", default_value = "dynamic")]
    batch: Batch,
    /// Name of the graph input [default: input]. A `.pt2` or TorchScript model with
    /// several inputs names them after its forward's parameters and refuses this flag.
    #[arg(long)]
    input_name: Option<String>,
    /// Name of the graph output.
    #[arg(long, default_value = "output")]
    output_name: String,
    /// Keep BatchNormalization nodes instead of folding them into the convolutions.
    #[arg(long)]
    no_fold_bn: bool,
    /// googlenet: the model was built with `transform_input=True` (torchvision's default
    /// with pretrained weights), so the graph re-normalises the input first.
    #[arg(long)]
    transform_input: bool,
    /// Ascend SoC for the printed ATC command.
    #[arg(long, default_value = "Ascend310P3")]
    soc: String,
    /// Also write the ATC command to FILE.
    #[arg(long, value_name = "FILE")]
    atc_cmd: Option<PathBuf>,
}

/// `--input-name` when not given.
const DEFAULT_INPUT_NAME: &str = "input";

fn parse_opset(text: &str) -> Result<i64, String> {
    let version = text.parse::<i64>().map_err(|e| e.to_string())?;
    Opset::new(version)
        .map(Opset::version)
        .map_err(|e| e.to_string())
}

pub fn run(args: Args) -> Result<(), Failure> {
    let input = &args.input;
    let fail = |e: &dyn std::fmt::Display| Failure::about(input, e);
    super::output::writable(&args.output)?;
    // Like every conversion: dangerous globals refused, unknown ones only when allowed. The
    // file scanned is the file read from here on, not the path again.
    let checked = args.safety.check(input)?;
    let _progress = ckpt::progress::Task::start(input);
    let opened = match checked.model().map_err(|e| fail(&e))? {
        Model::Program(archive) => return run_pt2(&args, archive),
        Model::Trace(archive) => return run_script(&args, archive),
        Model::Checkpoint(opened) => opened,
    };
    let input_shape =
        image_shape(&args.input_shape).map_err(|e| fail(&format!("--input-shape: {e}")))?;
    let options = ExportOptions {
        arch: match args.arch.as_deref().unwrap_or("auto") {
            "auto" => Choice::Auto,
            name => Choice::Named(name.to_owned()),
        },
        opset: Opset::new(args.opset).map_err(|e| fail(&e))?,
        input: input_shape,
        batch: args.batch.clone(),
        input_name: input_name(&args).to_owned(),
        output_name: args.output_name.clone(),
        fold_bn: !args.no_fold_bn,
        transform_input: args.transform_input,
        ..ExportOptions::default()
    };
    let mut ckpt = opened.checkpoint;
    let report = export(&mut ckpt, &options, &args.output).map_err(|e| fail(&e))?;
    let stripped = if report.stripped.is_empty() {
        String::new()
    } else {
        format!("; stripped {}", report.stripped.join(", "))
    };
    eprintln!(
        "architecture: {} (from {}){stripped}",
        report.arch, report.source
    );
    for note in &report.notes {
        eprintln!("note: {note}");
    }
    let external = report
        .written
        .external
        .as_ref()
        .map(|p| format!(", weights in {}", p.display()))
        .unwrap_or_default();
    eprintln!(
        "wrote {}: opset {}, {} nodes, {} initializers, {:.1} MiB{external}",
        args.output.display(),
        options.opset,
        report.nodes,
        report.initializers,
        report.written.bytes as f64 / f64::from(1 << 20),
    );
    let command = AtcCommand::new(
        &args.output,
        input_name(&args),
        input_shape,
        args.batch.clone(),
        &args.soc,
    );
    print_atc(&args, &command)
}

fn input_name(args: &Args) -> &str {
    args.input_name.as_deref().unwrap_or(DEFAULT_INPUT_NAME)
}

/// Prints the ATC command, and writes it to `--atc-cmd` when given.
fn print_atc(args: &Args, command: &AtcCommand) -> Result<(), Failure> {
    println!("{command}");
    if let Some(path) = &args.atc_cmd {
        std::fs::write(path, format!("{command}\n")).map_err(|e| Failure::about(path, e))?;
    }
    Ok(())
}

/// The options a `.pt2` or TorchScript export takes from the command line.
fn program_options(args: &Args) -> Result<ProgramOptions, Failure> {
    Ok(ProgramOptions {
        opset: Opset::new(args.opset).map_err(|e| Failure::about(&args.input, e))?,
        batch: args.batch.clone(),
        input_name: args.input_name.clone(),
        output_name: args.output_name.clone(),
        fold_bn: !args.no_fold_bn,
        ..ProgramOptions::default()
    })
}

/// `3, 224, 224`: a per-sample shape as the reports print it.
fn dims_text(shape: &[Extent]) -> String {
    shape
        .iter()
        .map(Extent::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// `input [batch, 3, 224, 224]`, or `inputs x [batch, …], k [batch, 1]` for several (no
/// `batch` in a static export, whose shapes are whole).
fn inputs_text(inputs: &[(String, Vec<Extent>)], batch: &Batch) -> String {
    let shape_text = |shape: &[Extent]| match batch {
        Batch::Static => format!("[{}]", dims_text(shape)),
        Batch::Dynamic(_) | Batch::Fixed(_) => format!("[batch, {}]", dims_text(shape)),
    };
    match inputs {
        [(_, shape)] => format!("input {}", shape_text(shape)),
        several => {
            let each: Vec<String> = several
                .iter()
                .map(|(name, shape)| format!("{name} {}", shape_text(shape)))
                .collect();
            format!("inputs {}", each.join(", "))
        }
    }
}

/// What a program export wrote, then its ATC command (NCHW for images, ND for token ids,
/// masks and other inputs).
fn finish_program(
    args: &Args,
    options: &ProgramOptions,
    report: &ProgramReport,
) -> Result<(), Failure> {
    eprintln!(
        "wrote {}: opset {}, {} nodes, {} initializers, {:.1} MiB",
        args.output.display(),
        options.opset,
        report.nodes,
        report.initializers,
        report.written.bytes as f64 / f64::from(1 << 20),
    );
    let outputs: Vec<String> = report.outputs.iter().map(ToString::to_string).collect();
    eprintln!("outputs: {}", outputs.join(", "));
    let command = AtcCommand::for_inputs(
        &args.output,
        report.inputs.clone(),
        args.batch.clone(),
        &args.soc,
    );
    print_atc(args, &command)
}

/// `to-onnx` on a `torch.export` archive (read from the scanned input): the graph comes from
/// the program, so `--arch` and `--input-shape` are refused rather than silently ignored.
fn run_pt2(args: &Args, mut archive: Pt2Archive) -> Result<(), Failure> {
    let input = &args.input;
    let fail = |e: &dyn std::fmt::Display| Failure::about(input, e);
    for (flag, given) in [
        ("--arch", args.arch.is_some()),
        ("--input-shape", !args.input_shape.is_empty()),
    ] {
        if given {
            return Err(fail(&format!(
                "{flag} does not apply to a torch.export (.pt2) archive: its program fixes the graph and the input shape"
            )));
        }
    }
    let options = program_options(args)?;
    let report = export_program(&mut archive, &options, &args.output).map_err(|e| fail(&e))?;
    let batch = match &report.batch {
        BatchDim::Symbol(_) => format!("{} (declared dynamic)", report.batch),
        BatchDim::Static => report.batch.to_string(),
        BatchDim::Traced(_) => format!(
            "{}, made dynamic: every node keeps it as its first dimension",
            report.batch
        ),
    };
    eprintln!(
        "program: {} nodes, {}; batch: {batch}",
        report.program_nodes,
        inputs_text(&report.inputs, &options.batch)
    );
    finish_program(args, &options, &report)
}

/// `to-onnx` on a TorchScript archive from `torch.jit.trace` (read from the scanned input):
/// the graph comes from its code, so `--arch` is refused; `--input-shape` is needed only
/// when the archive does not record the example input (`traced_inputs.pkl`), and must agree
/// with it when it does.
fn run_script(args: &Args, mut archive: ScriptArchive) -> Result<(), Failure> {
    let input = &args.input;
    let fail = |e: &dyn std::fmt::Display| Failure::about(input, e);
    if args.arch.is_some() {
        return Err(fail(
            &"--arch does not apply to a TorchScript archive: its code fixes the graph",
        ));
    }
    let options = program_options(args)?;
    let report = export_script(&mut archive, &args.input_shape, &options, &args.output)
        .map_err(|e| fail(&e))?;
    let exported = match &args.batch {
        Batch::Dynamic(_) => "a dynamic batch".to_owned(),
        Batch::Fixed(n) => format!("batch {n}"),
        Batch::Static => "every size static".to_owned(),
    };
    let traced = match report.traced_batch {
        Some(b) => format!("; traced at batch {b}, exported with {exported}"),
        None => format!("; exported with {exported}"),
    };
    eprintln!(
        "TorchScript trace: {} aten calls, {}{traced}",
        report.program.program_nodes,
        inputs_text(&report.program.inputs, &options.batch)
    );
    let dynamic = args
        .input_shape
        .iter()
        .flat_map(|g| &g.shape)
        .any(|size| matches!(size, GivenSize::Dynamic { .. }));
    if !dynamic {
        eprintln!(
            "note: a trace records one example: every input dimension but the batch is fixed at the size shown (name a dimension that varies in --input-shape, as `ids:seq<=512:int64`, or trace again, for other sizes)"
        );
    }
    finish_program(args, &options, &report.program)
}
