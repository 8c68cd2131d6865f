//! Choosing and validating the output path of a rewriting command.

use std::path::{Path, PathBuf};

use clap::Args as ClapArgs;
use serde::Serialize;

use super::Failure;

/// `-o OUT` or `--in-place`, shared by every rewriting command.
#[derive(ClapArgs, Debug)]
pub struct OutputArgs {
    /// Output file (written to a temporary file beside it, then renamed into place).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "OUT",
        required_unless_present = "in_place"
    )]
    pub output: Option<PathBuf>,
    /// Replace the input file itself (atomically, after the new file is complete).
    #[arg(long, conflicts_with = "output")]
    pub in_place: bool,
}

impl OutputArgs {
    /// The path to write, checked writable before any work. Refuses an output that is the
    /// input unless `--in-place` was given.
    pub fn resolve(&self, input: &Path) -> Result<PathBuf, Failure> {
        let Some(output) = &self.output else {
            writable(input)?;
            return Ok(input.to_owned());
        };
        if same_file(input, output) {
            return Err(Failure::about(
                input,
                "the output is the input file; choose another -o, or pass --in-place to replace it",
            ));
        }
        writable(output)?;
        Ok(output.clone())
    }
}

/// Refuses an output path that cannot be written (a folder, a missing or read-only folder),
/// naming the path as the user gave it, before any work is done.
pub fn writable(output: &Path) -> Result<(), Failure> {
    ckpt::atomic_file::check_writable(output).map_err(|e| Failure {
        file: None,
        message: e.to_string(),
    })
}

fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(ma), Ok(mb)) => ma.dev() == mb.dev() && ma.ino() == mb.ino(),
        _ => false,
    }
}

/// A command's `--json` line: the output written, then what the command reports about it.
#[derive(Serialize)]
pub struct WrittenJson<'a, T: Serialize> {
    /// The output path.
    pub output: String,
    /// The command's summary, its fields inline.
    #[serde(flatten)]
    pub summary: &'a T,
}

impl<T: Serialize> WrittenJson<'_, T> {
    /// Prints the line.
    pub fn print(&self, output: &Path) -> Result<(), Failure> {
        let line = serde_json::to_string(self).map_err(|e| Failure::about(output, e))?;
        println!("{line}");
        Ok(())
    }
}
