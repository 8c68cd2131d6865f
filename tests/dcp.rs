//! DCP folders: the committed FSDP2 fixture (2 ranks: rows, uneven rows, columns, a
//! replicated buffer) consolidates to the tensors it holds; damaged copies are refused before
//! anything is written.

use std::fs;
use std::path::{Path, PathBuf};

use ckpt::security::{check_dcp, Policy};
use ckpt::torch::dcp::consolidate::OutputKind;
use ckpt::torch::dcp::{consolidate, Selection};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dcp/fsdp2_2ranks")
}

/// A writable copy of the fixture folder.
fn copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for entry in fs::read_dir(fixture()).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
    }
    dir
}

#[test]
fn fixture_consolidates_to_whole_tensors() {
    let folder = check_dcp(&fixture(), Policy::SafeOnly).unwrap();
    assert!(folder.problems().is_empty());
    assert_eq!(folder.ranks(), vec![0, 1]);
    let out = tempfile::tempdir().unwrap();
    let pth = out.path().join("model.pth");
    let selection = Selection {
        model_only: false,
        extract: Some("model".into()),
    };
    let summary = consolidate(&folder, &selection, OutputKind::Pth, &pth).unwrap();
    assert_eq!(summary.tensors, 6);
    let ckpt = ckpt::torch::open(&pth).unwrap();
    let mut shapes: Vec<Vec<u64>> = ckpt.scan.tensors.iter().map(|t| t.shape.clone()).collect();
    shapes.sort();
    assert_eq!(
        shapes,
        vec![
            vec![4],
            vec![5],
            vec![5, 6],
            vec![6, 12],
            vec![12],
            vec![12, 5]
        ]
    );
}

#[test]
fn truncated_shard_is_refused_before_writing() {
    let dir = copy();
    let shard = dir.path().join("__1_0.distcp");
    let bytes = fs::read(&shard).unwrap();
    fs::write(&shard, &bytes[..bytes.len() - 64]).unwrap();
    let err = check_dcp(dir.path(), Policy::SafeOnly)
        .unwrap_err()
        .to_string();
    assert!(err.contains("run past the end of `__1_0.distcp`"), "{err}");
}

#[test]
fn storage_paths_outside_the_folder_are_refused() {
    let dir = copy();
    let meta = dir.path().join(".metadata");
    let bytes = fs::read(&meta).unwrap();
    let needle = b"__1_0.distcp";
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap();
    let mut hostile = bytes.clone();
    hostile[at..at + needle.len()].copy_from_slice(b"/_1_0.distcp");
    fs::write(&meta, hostile).unwrap();
    let err = check_dcp(dir.path(), Policy::SafeOnly)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a plain file name"), "{err}");
}

#[test]
fn a_dangerous_metadata_global_is_refused() {
    let dir = copy();
    let meta = dir.path().join(".metadata");
    // protocol 2: os.system('true') as the whole pickle.
    fs::write(
        &meta,
        b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00trueq\x00\x85R.",
    )
    .unwrap();
    let err = check_dcp(dir.path(), Policy::AllowUnknown)
        .unwrap_err()
        .to_string();
    assert!(err.contains("dangerous"), "{err}");
}
