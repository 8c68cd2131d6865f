//! DCP folders: the committed FSDP2 fixture (2 ranks: rows, uneven rows, columns, a
//! replicated buffer) consolidates to the tensors it holds; damaged copies are refused before
//! anything is written. `ckpt shard` of single checkpoints consolidates back to their
//! tensors exactly, at several rank counts.

use std::fs;
use std::path::{Path, PathBuf};

use ckpt::security::{check_dcp, Policy};
use ckpt::sharded::{consolidate, OutputKind, Selection};

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
    use ckpt::batch::hash_folder_reporting;
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

/// The leaves of a checkpoint or safetensors file, as DCP flattens them, with every tensor's
/// row-major bytes and every value's pickle, sorted by key.
fn flattened(path: &Path) -> Vec<(String, String)> {
    use ckpt::sharded::source::{Input, LeafKind, Safetensors};
    let mut input = if path.extension().is_some_and(|e| e == "safetensors") {
        Input::Safetensors(Safetensors::open(path).unwrap())
    } else {
        Input::Checkpoint(Box::new(ckpt::torch::open(path).unwrap()))
    };
    let leaves = input.leaves().unwrap();
    let mut out = Vec::new();
    for leaf in leaves {
        let text = match &leaf.kind {
            LeafKind::Tensor(t) => {
                let rows = t.size.first().copied().unwrap_or(1);
                let bytes = input
                    .rows(t, 0, rows, |r, _| {
                        let mut bytes = Vec::new();
                        r.read_to_end(&mut bytes)?;
                        Ok(bytes)
                    })
                    .unwrap();
                format!("{} {:?} {:?}", t.dtype, t.size, bytes)
            }
            LeafKind::Value(node) => format!("{:?}", input.value_pickle(*node).unwrap()),
        };
        out.push((leaf.fqn, text));
    }
    // Consolidation writes tensors before values; the entries, not their order, must match.
    out.sort();
    out
}

fn shard_to(input: &Path, ranks: u64, dir: &Path) -> ckpt::sharded::Sharded {
    use ckpt::sharded::source::{Input, Safetensors};
    let mut input = if input.extension().is_some_and(|e| e == "safetensors") {
        Input::Safetensors(Safetensors::open(input).unwrap())
    } else {
        Input::Checkpoint(Box::new(ckpt::torch::open(input).unwrap()))
    };
    ckpt::sharded::shard(&mut input, ranks, dir, false).unwrap()
}

#[test]
fn sharded_checkpoints_consolidate_to_their_tensors_exactly() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    for name in [
        "zip_train_ckpt.pth",
        "legacy_train_ckpt.pth",
        "zip_params_views.pth",
        "zip_protocol4.pth",
    ] {
        let input = fixtures.join(name);
        let expected = flattened(&input);
        for ranks in [1, 3, 4] {
            let work = tempfile::tempdir().unwrap();
            let dir = work.path().join("dcp");
            let summary = shard_to(&input, ranks, &dir);
            let folder = check_dcp(&dir, Policy::SafeOnly).unwrap();
            assert!(folder.problems().is_empty(), "{name} over {ranks}");
            assert_eq!(
                folder.ranks().len() as u64,
                ranks.min(folder.ranks().len() as u64)
            );
            assert!(summary.chunks >= summary.tensors);
            let back = work.path().join("back.pth");
            consolidate(&folder, &Selection::default(), OutputKind::Pth, &back).unwrap();
            let got = flattened(&back);
            assert_eq!(got.len(), expected.len(), "{name} over {ranks} ranks");
            for (g, e) in got.iter().zip(&expected) {
                assert!(g == e, "{name} over {ranks} ranks: `{}` differs", e.0);
            }
        }
    }
}

#[test]
fn rows_are_split_as_torch_chunk_splits_them() {
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/zip_train_ckpt.pth");
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("dcp");
    shard_to(&input, 3, &dir);
    let folder = check_dcp(&dir, Policy::SafeOnly).unwrap();
    let entry = |fqn: &str| {
        folder
            .metadata
            .entries
            .iter()
            .find(|e| e.fqn == fqn)
            .unwrap()
            .kind
            .clone()
    };
    // 4 rows over 3 ranks: ceil(4/3) = 2, so [2, 2] and rank 2 holds nothing.
    let ckpt::torch::dcp::EntryKind::Tensor { chunks, .. } =
        entry("state_dict.module.conv1.weight")
    else {
        panic!("a tensor")
    };
    let rows: Vec<(u64, u64)> = chunks.iter().map(|c| (c.offsets[0], c.sizes[0])).collect();
    assert_eq!(rows, vec![(0, 2), (2, 2)]);
    assert_eq!(chunks[0].sizes, vec![2, 3, 3, 3]);
    // A 0-d buffer is stored once; values are bytes entries.
    let ckpt::torch::dcp::EntryKind::Tensor { chunks, .. } =
        entry("state_dict.module.bn1.num_batches_tracked")
    else {
        panic!("a tensor")
    };
    assert_eq!(chunks.len(), 1);
    assert_eq!(entry("epoch"), ckpt::torch::dcp::EntryKind::Bytes);
}

#[test]
fn a_safetensors_input_round_trips_byte_for_byte() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let work = tempfile::tempdir().unwrap();
    let st = work.path().join("model.safetensors");
    let mut opened = ckpt::open(&fixtures.join("zip_tinycnn_sd.pth")).unwrap();
    ckpt::to_safetensors(&mut opened.checkpoint, None, &st).unwrap();
    let dir = work.path().join("dcp");
    shard_to(&st, 2, &dir);
    let folder = check_dcp(&dir, Policy::SafeOnly).unwrap();
    let back = work.path().join("back.safetensors");
    consolidate(
        &folder,
        &Selection::default(),
        OutputKind::Safetensors,
        &back,
    )
    .unwrap();
    assert_eq!(fs::read(&back).unwrap(), fs::read(&st).unwrap());
}

#[test]
fn a_truncated_safetensors_input_is_refused_when_opened() {
    use ckpt::sharded::source::Safetensors;
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let work = tempfile::tempdir().unwrap();
    let st = work.path().join("model.safetensors");
    let mut opened = ckpt::open(&fixtures.join("zip_tinycnn_sd.pth")).unwrap();
    ckpt::to_safetensors(&mut opened.checkpoint, None, &st).unwrap();
    let bytes = fs::read(&st).unwrap();
    fs::write(&st, &bytes[..bytes.len() - 10]).unwrap();
    let err = Safetensors::open(&st).err().unwrap().to_string();
    assert!(err.contains("truncated?"), "{err}");
    fs::write(&st, &bytes[..40]).unwrap();
    let err = Safetensors::open(&st).err().unwrap().to_string();
    assert!(err.contains("header claims"), "{err}");
}

#[test]
fn conjugate_views_are_refused_before_anything_is_written() {
    use ckpt::sharded::source::Input;
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/zip_dtypes.pth");
    let work = tempfile::tempdir().unwrap();
    let mut opened = Input::Checkpoint(Box::new(ckpt::torch::open(&input).unwrap()));
    let err = ckpt::sharded::shard(&mut opened, 2, &work.path().join("dcp"), false)
        .unwrap_err()
        .to_string();
    assert!(err.contains("`conj_complex64`: a conjugate"), "{err}");
    assert_eq!(fs::read_dir(work.path()).unwrap().count(), 0);
}

#[test]
fn shard_refuses_a_non_empty_folder_and_bad_rank_counts_leaving_nothing() {
    use ckpt::sharded::source::Input;
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/zip_tinycnn_sd.pth");
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("dcp");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("notes.txt"), b"mine").unwrap();
    let mut opened = Input::Checkpoint(Box::new(ckpt::torch::open(&input).unwrap()));
    let err = ckpt::sharded::shard(&mut opened, 2, &dir, false)
        .unwrap_err()
        .to_string();
    assert!(err.contains("--force"), "{err}");
    let err = ckpt::sharded::shard(&mut opened, 2, &dir, true)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a DCP checkpoint"), "{err}");
    let fresh = work.path().join("fresh");
    let err = ckpt::sharded::shard(&mut opened, 0, &fresh, false)
        .unwrap_err()
        .to_string();
    assert!(err.contains("--ranks 0"), "{err}");
    let names: Vec<_> = fs::read_dir(work.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("dcp")]);
}

#[test]
fn a_memo_bomb_without_tensors_is_one_value_to_shard() {
    // Lists that share one another name 1000^k entries in a few kilobytes. DCP walks into a
    // list only when it holds a tensor or a mapping at some depth: this one holds neither,
    // so it is one value, decided once per shared list rather than once per path (which
    // ran for minutes).
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/hostile/memo_bomb.pth");
    let work = tempfile::tempdir().unwrap();
    let sharded = shard_to(&input, 2, &work.path().join("dcp"));
    assert_eq!((sharded.tensors, sharded.values), (0, 1));
}

#[test]
fn the_cli_writes_a_folder_and_refuses_to_overwrite_without_force() {
    use std::process::Command;
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/zip_train_ckpt.pth");
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("dcp");
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ckpt"))
            .arg("shard")
            .arg(&input)
            .arg("-o")
            .arg(&dir)
            .args(["--ranks", "2"])
            .args(extra)
            .output()
            .unwrap()
    };
    let first = run(&["--json"]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let summary: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(summary["ranks"], 2);
    let again = run(&[]);
    assert_eq!(again.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--force"), "{stderr}");
    assert!(run(&["--force"]).status.success());
}
