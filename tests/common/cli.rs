//! `ckpt inspect` run as a user runs it, for the tests that check its reports.

use std::path::Path;
use std::process::Command;

/// `ckpt inspect <flags> <path>`, which must succeed (else the test fails showing ckpt's
/// stderr): its standard output.
fn inspect_stdout(flags: &[&str], path: &Path) -> Vec<u8> {
    let run = Command::new(env!("CARGO_BIN_EXE_ckpt"))
        .arg("inspect")
        .args(flags)
        .arg(path)
        .output()
        .expect("run ckpt");
    assert!(
        run.status.success(),
        "ckpt inspect {}: {}",
        path.display(),
        String::from_utf8_lossy(&run.stderr)
    );
    run.stdout
}

/// The report `ckpt inspect --json` prints for `path`.
pub fn inspect_json(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&inspect_stdout(&["--json"], path)).expect("one JSON report")
}

/// The text `ckpt inspect` prints for `path`.
pub fn inspect_text(path: &Path) -> String {
    String::from_utf8_lossy(&inspect_stdout(&[], path)).into_owned()
}
