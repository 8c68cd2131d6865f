//! `ckpt atc-check MODEL.onnx [--cann GEN] [--json] [--device-reading OUT.onnx]`: what
//! Ascend's ATC would refuse or compute differently in any ONNX file, read against the model
//! of CANN's ONNX parser; optionally the device reading, an ONNX file computing what the
//! `.om` would.

use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use prost::Message;
use serde_json::json;

use ckpt::onnx::atc_check::{check, Level};
use ckpt::onnx::cann::{generation, GENERATIONS};
use ckpt::onnx::device_reading::{read, Reading};
use ckpt::onnx::proto::ModelProto;

use super::Failure;

/// Exit status: 0 when ATC converts every node with its ONNX meaning (notes allowed), 2 when
/// some node is refused or changes meaning, 1 when the file cannot be read.
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The ONNX model (any producer: `ckpt to-onnx`, `torch.onnx.export`, …).
    model: PathBuf,
    /// The CANN generation whose parser to model: 2022 (the plugin sources read), or 8.1,
    /// 8.3, 8.5 (their model opsets from public reports, the 2022 operator rules).
    #[arg(long, value_name = "GEN", default_value = "2022")]
    cann: String,
    /// Print one JSON object (`file`, `cann`, `opset`, `nodes`, `findings`, `unmodelled`,
    /// `device_reading`, `exit_code`) instead of text.
    #[arg(long)]
    json: bool,
    /// Also write OUT.onnx, the device reading: the model with each node replaced by what
    /// ATC's parser turns it into (docs/atc.md says what it covers). A model ATC rejects, or
    /// with a node whose device meaning is not expressed, gets no reading (exit 1).
    #[arg(long, value_name = "OUT.onnx")]
    device_reading: Option<PathBuf>,
}

/// Runs the check; returns the exit status.
pub(crate) fn run(args: Args) -> Result<u8, Failure> {
    let Some(cann) = generation(&args.cann) else {
        let known: Vec<&str> = GENERATIONS.iter().map(|g| g.name).collect();
        return Err(Failure {
            file: None,
            message: format!(
                "--cann {}: unknown generation (known: {})",
                args.cann,
                known.join(", ")
            ),
        });
    };
    let bytes = std::fs::read(&args.model).map_err(|e| Failure::about(&args.model, e))?;
    let model = ModelProto::decode(bytes.as_slice())
        .ok()
        .filter(|m| m.graph.is_some())
        .ok_or_else(|| {
            Failure::about(
                &args.model,
                "not an ONNX model (no ModelProto with a graph)",
            )
        })?;
    let report = check(&model, cann);
    let code = if report.passes() { 0 } else { 2 };
    let reading = match &args.device_reading {
        Some(out) => Some(write_reading(&model, cann, &args.model, out)?),
        None => None,
    };
    if args.json {
        let mut value = serde_json::to_value(&report).unwrap_or_default();
        value["file"] = json!(args.model.display().to_string());
        value["exit_code"] = json!(code);
        if let (Some(out), Some(reading)) = (&args.device_reading, &reading) {
            value["device_reading"] = json!({
                "file": out.display().to_string(),
                "changed": reading.changed,
            });
        }
        println!("{value}");
        return Ok(code);
    }
    println!(
        "{}: opset {}, {} nodes, read against CANN {}'s ONNX parser",
        args.model.display(),
        report.opset.unwrap_or(0),
        report.nodes,
        report.cann
    );
    for finding in &report.findings {
        println!("{finding}");
    }
    if !report.unmodelled.is_empty() {
        println!(
            "checked for registration only (plugin not modelled): {}",
            report.unmodelled.join(", ")
        );
    }
    if let (Some(out), Some(reading)) = (&args.device_reading, &reading) {
        println!(
            "device reading: {} nodes read differently, written to {}",
            reading.changed.len(),
            out.display()
        );
        for change in &reading.changed {
            println!("  {} ({}): {}", change.node, change.op, change.reading);
        }
    }
    let count = |level| report.findings.iter().filter(|f| f.level == level).count();
    println!(
        "{}: {} rejected, {} change meaning, {} notes",
        if code == 0 { "ok" } else { "not ATC-clean" },
        count(Level::Reject),
        count(Level::ChangesMeaning),
        count(Level::Note)
    );
    Ok(code)
}

/// The device reading of `model`, written to `out` (atomically: complete or absent).
fn write_reading(
    model: &ModelProto,
    cann: &'static ckpt::onnx::cann::Generation,
    source: &Path,
    out: &Path,
) -> Result<Reading, Failure> {
    let reading = read(model, cann).map_err(|e| Failure::about(source, e))?;
    let bytes = reading.model.encode_to_vec();
    ckpt::atomic_file::write_atomically(out, |file| std::io::Write::write_all(file, &bytes))
        .map_err(|e: std::io::Error| Failure::about(out, e))?;
    Ok(reading)
}
