use std::path::PathBuf;

use clap::Args as ClapArgs;

use ckpt::onnx::arch::Choice;
use ckpt::onnx::atc::AtcCommand;
use ckpt::onnx::{export, Batch, ExportOptions, Opset};

use super::Failure;

#[derive(ClapArgs, Debug)]
pub struct Args {
    /// Input checkpoint.
    input: PathBuf,
    /// Output ONNX file (written to a temporary file beside it, then renamed into place).
    #[arg(short = 'o', long = "output", value_name = "OUT.onnx")]
    output: PathBuf,
    /// torchvision architecture name, or `auto`: the checkpoint's `arch` field, else the keys.
    #[arg(long, value_name = "NAME|auto", default_value = "auto")]
    arch: String,
    /// ONNX opset (ATC takes 9–13).
    #[arg(long, default_value_t = 11, value_parser = parse_opset)]
    opset: i64,
    /// Per-sample input shape.
    #[arg(long, value_name = "C,H,W", default_value = "3,224,224", value_parser = parse_shape)]
    input_shape: [u64; 3],
    /// `dynamic` (a named batch dimension, compiled with ATC's dynamic batch) or a fixed size.
    #[arg(long, value_name = "dynamic|N", default_value = "dynamic", value_parser = parse_batch)]
    batch: Batch,
    /// Name of the graph input.
    #[arg(long, default_value = "input")]
    input_name: String,
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

fn parse_opset(text: &str) -> Result<i64, String> {
    let version = text.parse::<i64>().map_err(|e| e.to_string())?;
    Opset::new(version)
        .map(Opset::version)
        .map_err(|e| e.to_string())
}

fn parse_shape(text: &str) -> Result<[u64; 3], String> {
    let dims: Vec<u64> = text
        .split(',')
        .map(|d| d.trim().parse::<u64>().ok().filter(|&d| d > 0))
        .collect::<Option<_>>()
        .ok_or_else(|| format!("`{text}` is not C,H,W with positive integers"))?;
    dims.try_into()
        .map_err(|_| format!("`{text}` is not three dimensions C,H,W"))
}

fn parse_batch(text: &str) -> Result<Batch, String> {
    if text == "dynamic" {
        return Ok(Batch::Dynamic("batch".to_owned()));
    }
    match text.parse::<u64>() {
        Ok(n) if n > 0 => Ok(Batch::Fixed(n)),
        _ => Err(format!(
            "`{text}` is neither `dynamic` nor a positive batch size"
        )),
    }
}

pub fn run(args: Args) -> Result<(), Failure> {
    let input = &args.input;
    let fail = |e: &dyn std::fmt::Display| Failure::about(input, e);
    let options = ExportOptions {
        arch: match args.arch.as_str() {
            "auto" => Choice::Auto,
            name => Choice::Named(name.to_owned()),
        },
        opset: Opset::new(args.opset).map_err(|e| fail(&e))?,
        input: args.input_shape,
        batch: args.batch.clone(),
        input_name: args.input_name.clone(),
        output_name: args.output_name.clone(),
        fold_bn: !args.no_fold_bn,
        transform_input: args.transform_input,
        ..ExportOptions::default()
    };
    let mut ckpt = ckpt::torch::open(input).map_err(|e| fail(&e))?;
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
        &args.input_name,
        args.input_shape,
        args.batch,
        &args.soc,
    );
    println!("{command}");
    if let Some(path) = &args.atc_cmd {
        std::fs::write(path, format!("{command}\n")).map_err(|e| Failure::about(path, e))?;
    }
    Ok(())
}
