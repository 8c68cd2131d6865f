//! The messages a user meets when the input is not what a command reads: one line naming the
//! file, what it is, and what to run instead; exit status 1; nothing written.

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

/// Runs `ckpt` and returns its one-line error, asserting status 1 and a single stderr line.
fn error_of(args: &[&Path]) -> String {
    let run = Command::new(env!("CARGO_BIN_EXE_ckpt"))
        .args(args)
        .output()
        .expect("ckpt runs");
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(run.status.code(), Some(1), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.starts_with("ckpt: error: "), "{stderr}");
    stderr
}

fn safetensors_file(dir: &Path) -> PathBuf {
    let header = br#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header);
    bytes.extend_from_slice(&[0; 8]);
    let path = dir.join("model.safetensors");
    std::fs::write(&path, bytes).expect("write");
    path
}

#[test]
fn a_safetensors_input_is_named_as_such_with_what_to_use_instead() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = safetensors_file(dir.path());
    let out = dir.path().join("out.pth");
    for command in ["convert", "strip-module", "to-safetensors"] {
        let error = error_of(&[Path::new(command), &input, Path::new("-o"), &out]);
        assert!(error.contains("is a safetensors file"), "{error}");
        assert!(error.contains("safetensors.torch.load_file"), "{error}");
        assert!(!out.exists());
    }
    let error = error_of(&[Path::new("inspect"), &input]);
    assert!(error.contains("is a safetensors file"), "{error}");
}

#[test]
fn a_missing_input_says_no_such_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("typo.pth");
    let out = dir.path().join("out.pth");
    for command in ["strip-module", "convert", "to-safetensors"] {
        let error = error_of(&[Path::new(command), &missing, Path::new("-o"), &out]);
        assert!(error.ends_with("typo.pth: no such file\n"), "{error}");
    }
    let error = error_of(&[Path::new("inspect"), &missing]);
    assert!(error.ends_with("typo.pth: no such file\n"), "{error}");
}

#[test]
fn a_folder_given_for_a_file_says_which_command_reads_folders() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out.pth");
    let plain = dir.path().join("downloads");
    std::fs::create_dir(&plain).expect("mkdir");
    let error = error_of(&[Path::new("convert"), &plain, Path::new("-o"), &out]);
    assert!(
        error.contains("is a folder, not a checkpoint file"),
        "{error}"
    );
    assert!(error.contains("ckpt scan DIR"), "{error}");
    let sharded = fixture("dcp/fsdp2_2ranks");
    let error = error_of(&[Path::new("inspect"), &plain]);
    assert!(error.contains("is a folder"), "{error}");
    let error = error_of(&[Path::new("convert"), &sharded, Path::new("-o"), &out]);
    assert!(error.contains("ckpt consolidate DIR"), "{error}");
    assert!(!out.exists());
}

#[test]
fn consolidate_of_a_file_or_a_plain_folder_says_what_it_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out.pth");
    let error = error_of(&[
        Path::new("consolidate"),
        &fixture("zip_train_ckpt.pth"),
        Path::new("-o"),
        &out,
    ]);
    assert!(error.contains("needs no consolidating"), "{error}");
    let error = error_of(&[Path::new("consolidate"), dir.path(), Path::new("-o"), &out]);
    assert!(
        error.contains("is not a sharded checkpoint folder"),
        "{error}"
    );
    assert!(!out.exists());
}

#[test]
fn a_state_dict_of_ones_own_model_is_told_how_to_export_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("model.onnx");
    let error = error_of(&[
        Path::new("to-onnx"),
        &fixture("zip_tinycnn_sd.pth"),
        Path::new("-o"),
        &out,
    ]);
    assert!(error.contains("torch.export.save"), "{error}");
    assert!(error.contains("torch.jit.trace"), "{error}");
    assert!(!out.exists());
}
