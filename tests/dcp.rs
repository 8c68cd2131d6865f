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

/// A batch plan whose first step is `consolidate` takes DCP folders as inputs (found by a
/// glob), chains the consolidated checkpoint through the later steps, hashes each folder into
/// the manifest, and skips it on a rerun.
#[test]
fn batch_consolidates_then_casts_and_exports() {
    use ckpt::batch::manifest::hash_folder_reporting;
    use ckpt::batch::{run, Manifest, Options, Status};
    use ckpt::torch::DType;

    let work = tempfile::tempdir().unwrap();
    let step = work.path().join("runs/a/step_3");
    fs::create_dir_all(&step).unwrap();
    for entry in fs::read_dir(fixture()).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), step.join(entry.file_name())).unwrap();
    }
    let plan = work.path().join("plan.toml");
    fs::write(
        &plan,
        r#"
[[job]]
inputs = ["runs/*/step_*"]
output_dir = "out"
name = "{name}-{sha8}"
steps = [{ consolidate = "model" }, { dtype = "float16" }, "to-safetensors", "format"]
"#,
    )
    .unwrap();
    let options = Options {
        plan: plan.clone(),
        jobs: 1,
        shard: None,
        dry_run: false,
        manifest: None,
        policy: Policy::SafeOnly,
    };
    let summary = run(&options, &mut std::io::sink()).unwrap();
    assert_eq!((summary.done, summary.failed.len()), (1, 0), "{summary:?}");

    let manifest = Manifest::load(&summary.manifest).unwrap().unwrap();
    let entry = &manifest.entries[0];
    assert_eq!(entry.status, Status::Ok);
    assert_eq!(entry.input, "runs/a/step_3");
    let (sha, size) = hash_folder_reporting(&step, &|_| {}).unwrap();
    assert_eq!((entry.sha256.as_str(), entry.size), (sha.as_str(), size));
    let stem = format!("step_3-{}", &sha[..8]);
    let kinds: Vec<&str> = entry.outputs.iter().map(|o| o.kind.as_str()).collect();
    assert_eq!(kinds, ["safetensors", "checkpoint"]);

    let out = work.path().join("out");
    assert!(out.join(format!("{stem}.safetensors")).is_file());
    let ckpt = ckpt::torch::open(&out.join(format!("{stem}.pth"))).unwrap();
    assert_eq!(ckpt.scan.tensors.len(), 6);
    let floats = ckpt
        .scan
        .tensors
        .iter()
        .filter(|t| t.dtype == DType::Float16);
    assert_eq!(
        floats.count(),
        5,
        "every float tensor cast, the int64 buffer kept"
    );

    let again = run(&options, &mut std::io::sink()).unwrap();
    assert_eq!((again.done, again.skipped), (0, 1));
}

/// A DCP folder given to a job that does not start with `consolidate` fails the plan.
#[test]
fn batch_without_consolidate_refuses_a_dcp_folder() {
    use ckpt::batch::{run, Options};
    let work = tempfile::tempdir().unwrap();
    let plan = work.path().join("plan.toml");
    let text = format!(
        "[[job]]\ninputs = [\"{}\"]\noutput_dir = \"out\"\nsteps = [\"format\"]\n",
        fixture().display()
    );
    fs::write(&plan, text).unwrap();
    let options = Options {
        plan,
        jobs: 1,
        shard: None,
        dry_run: false,
        manifest: None,
        policy: Policy::SafeOnly,
    };
    let err = run(&options, &mut std::io::sink()).unwrap_err().to_string();
    assert!(
        err.contains("make `consolidate` the job's first step"),
        "{err}"
    );
}
