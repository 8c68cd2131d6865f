//! Every input a fuzz target ever crashed on, kept under `fuzz/regressions/<target>/` and
//! replayed through the command line: it must end with a clear one-line error (exit 1) or
//! succeed, never panic (exit 101).

use std::path::{Path, PathBuf};
use std::process::Command;

fn regressions(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no regression inputs in {}",
        dir.display()
    );
    files
}

/// The `onnx_export` target's options: auto architecture, a 64×64 input.
#[test]
fn to_onnx_crash_inputs_end_in_one_error_line() {
    let out_dir = tempfile::tempdir().unwrap();
    for input in regressions("onnx_export") {
        let out = out_dir.path().join("out.onnx");
        let run = Command::new(env!("CARGO_BIN_EXE_ckpt"))
            .args(["to-onnx", "--input-shape", "3,64,64", "-o"])
            .arg(&out)
            .arg(&input)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(1), "{}: {stderr}", input.display());
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
        assert!(!out.exists());
    }
}

/// The zero-width RegNet bottleneck the fuzzer found (group count 0, then a division by
/// it) is refused as a shape error naming the tensor.
#[test]
fn regnet_with_a_zero_width_bottleneck_is_a_shape_error() {
    let input = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions/onnx_export/regnet_zero_bottleneck.pth");
    let out_dir = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_ckpt"))
        .args(["to-onnx", "--input-shape", "3,64,64", "-o"])
        .arg(out_dir.path().join("out.onnx"))
        .arg(&input)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains(".f.b.0.weight"), "{stderr}");
    assert!(stderr.contains("groups"), "{stderr}");
}
