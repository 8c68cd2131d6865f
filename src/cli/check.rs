//! `ckpt check OUT.onnx --against MODEL.pt`: ONNX (tract) against TorchScript (libtorch). The
//! work is in `ckpt::check`, which only runs with the `libtorch` cargo feature; without it
//! the command still parses its arguments (so `--help` explains it) and then says how to get
//! a binary that has it.

use std::path::PathBuf;

use clap::Args as ClapArgs;

use super::safety::SafetyArgs;
use super::Failure;
use ckpt::check::DEFAULT_TOLERANCE;

// Without the `libtorch` feature only `onnx` is read (to name it in the error).
#[cfg_attr(not(feature = "libtorch"), allow(dead_code))]
#[derive(ClapArgs, Debug)]
pub struct Args {
    /// The ONNX file to check (e.g. written by `ckpt to-onnx`). Its inputs must be float32
    /// `[batch, fixed…]`; it runs in tract.
    #[arg(value_name = "OUT.onnx")]
    onnx: PathBuf,
    /// The TorchScript archive it came from (`torch.jit.trace` + `torch.jit.save`); it runs in
    /// libtorch, in eval mode, without gradients. `.pt2` archives cannot be run by libtorch's
    /// C++ API and are refused.
    #[arg(long, value_name = "MODEL.pt")]
    against: PathBuf,
    /// Batch sizes to run, in order.
    #[arg(long, value_name = "N,N,…", value_delimiter = ',', default_value = "1,3,8",
          value_parser = parse_batch)]
    batches: Vec<u64>,
    /// Seed of the random inputs: `torch.manual_seed(SEED)`, then `torch.randn` per batch size
    /// and per ONNX input, in order.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Largest `rel` that passes, where `rel = max|onnx − torch| / max(1, max|torch|)` per
    /// output and batch size. Exit status 1 when any comparison exceeds it.
    #[arg(long, value_name = "REL", default_value_t = DEFAULT_TOLERANCE, value_parser = parse_tolerance)]
    tolerance: f64,
    #[command(flatten)]
    safety: SafetyArgs,
}

fn parse_batch(text: &str) -> Result<u64, String> {
    text.trim()
        .parse::<u64>()
        .ok()
        .filter(|&b| b > 0)
        .ok_or_else(|| format!("`{text}` is not a positive batch size"))
}

fn parse_tolerance(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|t| t.is_finite() && *t >= 0.0)
        .ok_or_else(|| format!("`{text}` is not a finite tolerance >= 0"))
}

#[cfg(not(feature = "libtorch"))]
pub fn run(args: Args) -> Result<(), Failure> {
    Err(Failure::about(
        &args.onnx,
        "this ckpt was built without the `libtorch` feature, which `check` needs: rebuild with \
         `LIBTORCH_USE_PYTORCH=1 cargo build --release --features libtorch` (a Python with \
         torch 2.13 first on PATH; see docs/onnx.md, \"Building `ckpt check`\")",
    ))
}

#[cfg(feature = "libtorch")]
pub fn run(args: Args) -> Result<(), Failure> {
    use ckpt::check::{check, CheckOptions};

    // libtorch unpickles the archive: refuse dangerous globals first, as conversions do.
    args.safety.check(&args.against)?;
    let options = CheckOptions {
        batches: args.batches.clone(),
        seed: args.seed,
        tolerance: args.tolerance,
    };
    let report = check(&args.onnx, &args.against, &options)
        .map_err(|e| Failure::about(&e.file, e.message))?;
    print_table(&report);
    let failures = report.failures();
    let total = report.comparisons.len();
    if let Some(first) = failures.first() {
        return Err(Failure::about(
            &args.onnx,
            format!(
                "{} of {total} comparisons exceed the tolerance {:e} against {} (first: batch {} \
                 output `{}`: {})",
                failures.len(),
                options.tolerance,
                args.against.display(),
                first.batch,
                first.output,
                first.outcome,
            ),
        ));
    }
    eprintln!(
        "ok: {total} comparisons within rel {:e} (seed {})",
        options.tolerance, options.seed
    );
    Ok(())
}

/// One line per comparison on stdout: batch, output, shape, the figures and the verdict.
#[cfg(feature = "libtorch")]
fn print_table(report: &ckpt::check::Report) {
    println!(
        "{:>5}  {:<16} {:<20} {:>10} {:>10} {:>10}  result",
        "batch", "output", "shape", "max|diff|", "max|ref|", "rel"
    );
    for c in &report.comparisons {
        let verdict = if c.outcome.passes(report.tolerance) {
            "ok"
        } else {
            "FAIL"
        };
        let shape = format!("{:?}", c.shape);
        println!(
            "{:>5}  {:<16} {shape:<20} {}  {verdict}",
            c.batch,
            c.output,
            figures(&c.outcome)
        );
    }
}

/// The figures column of a comparison.
#[cfg(feature = "libtorch")]
fn figures(outcome: &ckpt::check::Outcome) -> String {
    use ckpt::check::Outcome;
    match outcome {
        Outcome::Measured(d) => {
            format!("{:>10.3e} {:>10.3e} {:>10.3e}", d.max_abs, d.max_ref, d.rel)
        }
        Outcome::ShapeDiffers { onnx, .. } => format!("the ONNX output has shape {onnx:?}"),
    }
}

#[cfg(all(test, not(feature = "libtorch")))]
mod tests {
    use clap::Parser;

    use crate::cli::{run, Cli};

    #[test]
    fn without_the_feature_it_says_how_to_build_it() {
        let cli = Cli::try_parse_from(["ckpt", "check", "m.onnx", "--against", "m.pt"]).unwrap();
        let failure = run(cli).unwrap_err().to_string();
        assert!(failure.starts_with("m.onnx: "), "{failure}");
        assert!(
            failure.contains("without the `libtorch` feature")
                && failure.contains("--features libtorch"),
            "{failure}"
        );
    }

    #[test]
    fn batches_and_tolerance_are_checked_when_parsed() {
        let parse = |extra: &[&str]| {
            let mut argv = vec!["ckpt", "check", "m.onnx", "--against", "m.pt"];
            argv.extend_from_slice(extra);
            Cli::try_parse_from(argv)
        };
        assert!(parse(&["--batches", "1,3,8", "--tolerance", "1e-3"]).is_ok());
        assert!(parse(&["--batches", "1,0"]).is_err());
        assert!(parse(&["--batches", "two"]).is_err());
        assert!(parse(&["--tolerance", "-1"]).is_err());
        assert!(parse(&["--tolerance", "nan"]).is_err());
    }
}
