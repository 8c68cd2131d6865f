use std::fs::File;
use std::path::PathBuf;

use clap::Args as ClapArgs;

use ckpt::onnx::program::{export_program, BatchDim, ProgramOptions, ProgramReport};
use ckpt::onnx::script::export_script;
use ckpt::onnx::AtcCommand;
use ckpt::onnx::Choice;
use ckpt::onnx::{export, Batch, ExportOptions, Extent, Opset};
use ckpt::torch::pt2::{is_pt2, Pt2Archive};
use ckpt::torch::script::convert::{GivenInput, GivenSize};
use ckpt::torch::script::{is_torchscript, ScriptArchive};
use ckpt::torch::DType;

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
    #[arg(long, value_name = "C,H,W|NAME:DIMS[:DTYPE]", value_parser = parse_shape)]
    input_shape: Vec<GivenInput>,
    /// `dynamic` (a named batch dimension, compiled with ATC's dynamic batch), a fixed
    /// size, or `static` (`.pt2` and TorchScript traces: every size as the program records
    /// it and no batch axis, so ops may work along any axis; for ATC without dynamic
    /// profiles; a program with a declared dynamic dimension is refused).
    #[arg(long, value_name = "dynamic|N|static", default_value = "dynamic", value_parser = parse_batch)]
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

/// `--input-shape` when not given (torchvision's ImageNet size).
const DEFAULT_INPUT_SHAPE: [u64; 3] = [3, 224, 224];

fn parse_opset(text: &str) -> Result<i64, String> {
    let version = text.parse::<i64>().map_err(|e| e.to_string())?;
    Opset::new(version)
        .map(Opset::version)
        .map_err(|e| e.to_string())
}

/// `C,H,W`, or `NAME:DIMS[:DTYPE]` (`ids:128:int64`), or `DIMS:DTYPE`: a per-sample shape
/// of positive sizes, the input it is for, its torch dtype.
fn parse_shape(text: &str) -> Result<GivenInput, String> {
    let dims = |part: &str| -> Option<Vec<GivenSize>> {
        part.split(',').map(|d| given_size(d.trim())).collect()
    };
    let dtype = |part: &str| {
        DType::from_name(part.trim()).ok_or_else(|| {
            format!("`{part}` in `{text}` is not a torch dtype (float32, int64, int32, bool)")
        })
    };
    let wrong = || {
        format!("`{text}` is not C,H,W or NAME:DIMS[:DTYPE] with positive sizes or dynamic ones (`seq<=512`)")
    };
    let parts: Vec<&str> = text.split(':').collect();
    let (name, shape, dtype) = match parts.as_slice() {
        [shape] => (None, dims(shape).ok_or_else(wrong)?, None),
        [shape, ty] if dims(shape).is_some() && DType::from_name(ty.trim()).is_some() => {
            (None, dims(shape).ok_or_else(wrong)?, Some(dtype(ty)?))
        }
        [name, shape] => (Some(name), dims(shape).ok_or_else(wrong)?, None),
        [name, shape, ty] => (Some(name), dims(shape).ok_or_else(wrong)?, Some(dtype(ty)?)),
        _ => return Err(wrong()),
    };
    if name.is_some_and(|n| n.trim().is_empty()) {
        return Err(wrong());
    }
    Ok(GivenInput {
        name: name.map(|n| n.trim().to_owned()),
        shape,
        dtype,
    })
}

/// One size of `--input-shape`: a positive number, or a dynamic dimension `NAME` or
/// `NAME<=MAX` (a name that is not a number).
fn given_size(text: &str) -> Option<GivenSize> {
    if let Ok(n) = text.parse::<u64>() {
        return (n > 0).then_some(GivenSize::Fixed(n));
    }
    let (symbol, max) = match text.split_once("<=") {
        Some((symbol, max)) => (symbol.trim(), Some(max.trim().parse::<u64>().ok()?)),
        None => (text, None),
    };
    let named = symbol
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && symbol
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    (named && symbol != "batch" && max != Some(0)).then(|| GivenSize::Dynamic {
        symbol: symbol.to_owned(),
        max,
    })
}

/// The torchvision export's `C,H,W` from `--input-shape` (one, unnamed, float32, rank 3,
/// every size fixed).
fn image_shape(given: &[GivenInput]) -> Result<[u64; 3], String> {
    match given {
        [] => Ok(DEFAULT_INPUT_SHAPE),
        [GivenInput {
            name: None,
            shape,
            dtype: None | Some(DType::Float32),
        }] => {
            let fixed: Option<Vec<u64>> = shape
                .iter()
                .map(|size| match size {
                    GivenSize::Fixed(n) => Some(*n),
                    GivenSize::Dynamic { .. } => None,
                })
                .collect();
            fixed
                .and_then(|sizes| <[u64; 3]>::try_from(sizes).ok())
                .ok_or_else(|| {
                    "--input-shape of a torchvision checkpoint is three fixed sizes C,H,W".into()
                })
        }
        _ => Err("a torchvision checkpoint takes one --input-shape C,H,W".into()),
    }
}

fn parse_batch(text: &str) -> Result<Batch, String> {
    match text {
        "dynamic" => return Ok(Batch::Dynamic("batch".to_owned())),
        "static" => return Ok(Batch::Static),
        _ => {}
    }
    match text.parse::<u64>() {
        Ok(n) if n > 0 => Ok(Batch::Fixed(n)),
        _ => Err(format!(
            "`{text}` is neither `dynamic`, `static` nor a positive batch size"
        )),
    }
}

pub fn run(args: Args) -> Result<(), Failure> {
    let input = &args.input;
    let fail = |e: &dyn std::fmt::Display| Failure::about(input, e);
    super::output::writable(&args.output)?;
    // Like every conversion: dangerous globals refused, unknown ones only when allowed. The
    // file scanned is the file read from here on, not the path again.
    let checked = args.safety.check(input)?;
    let _progress = ckpt::progress::Task::start(input);
    // A file that cannot be opened as a zip is left to the checkpoint reader, which says why.
    if is_pt2(&checked.file).unwrap_or(false) {
        return run_pt2(&args, checked.file);
    }
    if is_torchscript(&checked.file).unwrap_or(false) {
        return run_script(&args, checked.file);
    }
    let input_shape = image_shape(&args.input_shape).map_err(|e| fail(&e))?;
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
    let mut ckpt = checked.open().map_err(|e| fail(&e))?.checkpoint;
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

/// `to-onnx` on a `torch.export` archive (`file`, the scanned input): the graph comes from
/// the program, so `--arch` and `--input-shape` are refused rather than silently ignored.
fn run_pt2(args: &Args, file: File) -> Result<(), Failure> {
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
    let mut archive = Pt2Archive::from_file(file).map_err(|e| fail(&e))?;
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

/// `to-onnx` on a TorchScript archive from `torch.jit.trace` (`file`, the scanned input):
/// the graph comes from its code, so `--arch` is refused; `--input-shape` is needed only
/// when the archive does not record the example input (`traced_inputs.pkl`), and must agree
/// with it when it does.
fn run_script(args: &Args, file: File) -> Result<(), Failure> {
    let input = &args.input;
    let fail = |e: &dyn std::fmt::Display| Failure::about(input, e);
    if args.arch.is_some() {
        return Err(fail(
            &"--arch does not apply to a TorchScript archive: its code fixes the graph",
        ));
    }
    let options = program_options(args)?;
    let mut archive = ScriptArchive::from_file(input, file).map_err(|e| fail(&e))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_batch_is_dynamic_a_size_or_static() {
        assert_eq!(parse_batch("dynamic"), Ok(Batch::Dynamic("batch".into())));
        assert_eq!(parse_batch("4"), Ok(Batch::Fixed(4)));
        assert_eq!(parse_batch("static"), Ok(Batch::Static));
        for bad in ["0", "-1", "Static", ""] {
            let err = parse_batch(bad).unwrap_err();
            assert!(err.contains("`static`"), "{err}");
        }
    }

    #[test]
    fn input_shapes_name_the_input_and_its_dtype() {
        let given = |name: Option<&str>, shape: &[u64], dtype: Option<DType>| GivenInput {
            name: name.map(str::to_owned),
            shape: shape.iter().map(|&n| GivenSize::Fixed(n)).collect(),
            dtype,
        };
        assert_eq!(
            parse_shape("3,224,224"),
            Ok(given(None, &[3, 224, 224], None))
        );
        assert_eq!(
            parse_shape("ids:128:int64"),
            Ok(given(Some("ids"), &[128], Some(DType::Int64)))
        );
        assert_eq!(
            parse_shape("mask:128:bool"),
            Ok(given(Some("mask"), &[128], Some(DType::Bool)))
        );
        assert_eq!(parse_shape("x:3,8"), Ok(given(Some("x"), &[3, 8], None)));
        assert_eq!(parse_shape("ids:128"), Ok(given(Some("ids"), &[128], None)));
        assert_eq!(
            parse_shape("16:int32"),
            Ok(given(None, &[16], Some(DType::Int32)))
        );
        assert!(parse_shape("ids:0:int64").is_err());
        assert!(parse_shape("ids:8:words")
            .unwrap_err()
            .contains("not a torch dtype"));
        assert!(parse_shape(":8").is_err());
        let seq = |max| GivenSize::Dynamic {
            symbol: "seq".into(),
            max,
        };
        assert_eq!(
            parse_shape("ids:seq<=512:int64").map(|g| g.shape),
            Ok(vec![seq(Some(512))])
        );
        assert_eq!(
            parse_shape("x:seq,768").map(|g| g.shape),
            Ok(vec![seq(None), GivenSize::Fixed(768)])
        );
        for bad in [
            "ids:seq<=0",
            "ids:seq<=many",
            "ids:2seq",
            "ids:batch",
            "ids:s-q",
        ] {
            assert!(parse_shape(bad).is_err(), "{bad}");
        }
        assert!(image_shape(&[parse_shape("3,h<=224,224").unwrap()]).is_err());
        assert_eq!(image_shape(&[]), Ok(DEFAULT_INPUT_SHAPE));
        assert!(image_shape(&[given(Some("ids"), &[128], None)]).is_err());
        assert!(image_shape(&[given(None, &[3, 8], None)]).is_err());
    }
}
