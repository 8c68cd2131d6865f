//! DeepSpeed ZeRO folders: the committed fixtures (ZeRO-1/2/3 and bf16 over 2 ranks, written
//! by DeepSpeed 0.19.8; see fixtures/deepspeed/generate.py) consolidate to exactly what
//! DeepSpeed's own `get_fp32_state_dict_from_zero_checkpoint` returns, in `.pth` and
//! safetensors (tied names there as `safetensors.torch.save_model` writes them); damaged folders are refused with one error naming the file, and nothing is
//! written.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use ckpt::pickle::Value;
use ckpt::security::{check_deepspeed, Policy};
use ckpt::sharded::deepspeed::consolidate;
use ckpt::sharded::{OutputKind, Selection};

const CONFIGS: [&str; 4] = ["zero1", "zero2", "zero3", "bf16"];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/deepspeed")
}

/// One tensor: key, safetensors dtype name, shape, bytes.
type Stored = (String, String, Vec<usize>, Vec<u8>);

/// The expected state dict: (key, dtype, shape, bytes) in key order, and tied key → key.
struct Expected {
    tensors: Vec<Stored>,
    aliases: Vec<(String, String)>,
}

fn expected(config: &str) -> Expected {
    let bytes = fs::read(fixtures().join(format!("{config}.expected.safetensors"))).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let json: serde_json::Value = serde_json::from_slice(
        &fs::read(fixtures().join(format!("{config}.expected.json"))).unwrap(),
    )
    .unwrap();
    let tensors = json["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            let key = k.as_str().unwrap();
            let t = file.tensor(key).unwrap();
            (
                key.to_owned(),
                format!("{:?}", t.dtype()),
                t.shape().to_vec(),
                t.data().to_vec(),
            )
        })
        .collect();
    let aliases = json["aliases"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect();
    Expected { tensors, aliases }
}

/// The tensors of a safetensors file, by key.
fn read_safetensors(path: &Path) -> Vec<Stored> {
    let bytes = fs::read(path).unwrap();
    let file = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut tensors: Vec<_> = file
        .tensors()
        .into_iter()
        .map(|(k, t)| {
            (
                k,
                format!("{:?}", t.dtype()),
                t.shape().to_vec(),
                t.data().to_vec(),
            )
        })
        .collect();
    tensors.sort();
    tensors
}

/// The tensors of a `.pth` state dict in key order, and each key's storage.
fn read_pth(path: &Path) -> (Vec<Stored>, Vec<String>) {
    let mut ckpt = ckpt::torch::open(path).unwrap();
    let pairs = ckpt.graph.mapping(ckpt.root).unwrap().to_vec();
    let mut tensors = Vec::new();
    let mut storages = Vec::new();
    for (k, v) in pairs {
        let key = ckpt.graph.str(k).unwrap().to_owned();
        let t = ckpt.scan.tensor_at(v).unwrap().clone();
        let element = t.dtype.element_size() as u64;
        let data = ckpt
            .read_storage_range(&t.storage.key, t.offset * element, t.numel() * element)
            .unwrap();
        let dtype = safetensors_name(t.dtype.name());
        let shape = t.shape.iter().map(|&d| d as usize).collect();
        storages.push(t.storage.key.clone());
        tensors.push((key, dtype, shape, data));
    }
    (tensors, storages)
}

/// The safetensors spelling of the dtypes the fixtures hold.
fn safetensors_name(torch: &str) -> String {
    match torch {
        "float32" => "F32",
        "int64" => "I64",
        "bfloat16" => "BF16",
        other => other,
    }
    .to_owned()
}

#[test]
fn every_fixture_consolidates_to_what_deepspeed_returns() {
    let out = tempfile::tempdir().unwrap();
    for config in CONFIGS {
        let want = expected(config);
        let folder = check_deepspeed(&fixtures().join(config), Policy::SafeOnly)
            .unwrap()
            .folder;
        let pth = out.path().join(format!("{config}.pth"));
        consolidate(&folder, &Selection::default(), OutputKind::Pth, &pth).unwrap();
        let (got, storages) = read_pth(&pth);
        assert_eq!(got, want.tensors, "{config}: .pth");
        for (alias, source) in &want.aliases {
            let at = |k: &str| want.tensors.iter().position(|t| t.0 == k).unwrap();
            assert_eq!(
                storages[at(alias)],
                storages[at(source)],
                "{config}: {alias}"
            );
        }
        let st = out.path().join(format!("{config}.safetensors"));
        consolidate(&folder, &Selection::default(), OutputKind::Safetensors, &st).unwrap();
        // Tied names are stored once, under the alphabetically first name.
        let dropped: Vec<(&String, &String)> = want
            .aliases
            .iter()
            .map(|(a, s)| if a > s { (a, s) } else { (s, a) })
            .collect();
        let mut sorted: Vec<Stored> = want
            .tensors
            .iter()
            .filter(|t| dropped.iter().all(|(d, _)| **d != t.0))
            .cloned()
            .collect();
        sorted.sort();
        assert_eq!(read_safetensors(&st), sorted, "{config}: safetensors");
        let bytes = fs::read(&st).unwrap();
        let (_, header) = safetensors::SafeTensors::read_metadata(&bytes).unwrap();
        let metadata = header.metadata().clone().unwrap();
        for (name, kept) in dropped {
            assert_eq!(metadata.get(name), Some(kept), "{config}: {name}");
        }
    }
}

/// `--extract head` where `head.weight` is tied to `emb.weight`, outside the prefix: the tied
/// name is still written, with the bytes it shares.
#[test]
fn extracting_a_tied_name_whose_source_is_outside_the_prefix_keeps_it() {
    let out = tempfile::tempdir().unwrap();
    let folder = check_deepspeed(&fixtures().join("zero2"), Policy::SafeOnly)
        .unwrap()
        .folder;
    let whole = out.path().join("whole.pth");
    consolidate(&folder, &Selection::default(), OutputKind::Pth, &whole).unwrap();
    let (all, _) = read_pth(&whole);
    let emb = all.iter().find(|t| t.0 == "emb.weight").unwrap();
    let head = out.path().join("head.pth");
    let selection = Selection {
        model_only: false,
        extract: Some("head".into()),
    };
    let summary = consolidate(&folder, &selection, OutputKind::Pth, &head).unwrap();
    let (got, _) = read_pth(&head);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, "weight");
    assert_eq!((&got[0].1, &got[0].2, &got[0].3), (&emb.1, &emb.2, &emb.3));
    assert!(summary.dropped.contains(&"emb.weight".to_owned()));
}

/// The fixtures cover what they are meant to: buffers (one int64), frozen parameters, a tied
/// weight, and a parameter split over both ranks' partitions.
#[test]
fn fixtures_hold_buffers_frozen_tied_and_split_parameters() {
    use ckpt::torch::dcp::deepspeed::layout::{read, Role};
    let folder = check_deepspeed(&fixtures().join("zero2"), Policy::SafeOnly)
        .unwrap()
        .folder;
    let layout = read(&folder).unwrap();
    assert_eq!((layout.stage, layout.world), (2, 2));
    let role = |r| layout.tensors.iter().filter(|t| t.role == r).count();
    assert_eq!((role(Role::Buffer), role(Role::Frozen)), (3, 2));
    assert!(layout.tensors.iter().any(|t| t.aliases == ["head.weight"]));
    assert!(layout
        .tensors
        .iter()
        .any(|t| t.role == Role::Trained && t.pieces.len() == 2));
    let bf16 = check_deepspeed(&fixtures().join("bf16"), Policy::SafeOnly)
        .unwrap()
        .folder;
    let widened = read(&bf16).unwrap();
    assert!(widened.tensors.iter().any(|t| t.stored.is_some()));
}

/// A copy of a fixture's tag folder and its save folder.
fn copy(config: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let tag = dir.path().join("step1");
    fs::create_dir(&tag).unwrap();
    for entry in fs::read_dir(fixtures().join(config).join("step1")).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), tag.join(entry.file_name())).unwrap();
    }
    fs::write(dir.path().join("latest"), "step1\n").unwrap();
    (dir, tag)
}

/// `ckpt consolidate DIR -o OUT`: exit status, stderr, and whether OUT exists afterwards.
fn consolidate_cli(dir: &Path, out: &Path) -> (Option<i32>, String, bool) {
    let run = Command::new(env!("CARGO_BIN_EXE_ckpt"))
        .args(["consolidate", "-o"])
        .arg(out)
        .arg(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    (run.status.code(), stderr, out.exists())
}

/// Refused with exit 1 and one line containing every one of `words`; nothing written.
fn assert_refused(dir: &Path, words: &[&str]) {
    let out = dir.parent().unwrap().join("out.pth");
    let (code, stderr, written) = consolidate_cli(dir, &out);
    assert_eq!(code, Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    for word in words {
        assert!(stderr.contains(word), "{word}: {stderr}");
    }
    assert!(!written);
}

#[test]
fn the_save_folder_and_the_tag_folder_both_consolidate_from_the_command_line() {
    let (dir, tag) = copy("zero3");
    for (input, out) in [(dir.path(), "a.pth"), (tag.as_path(), "b.safetensors")] {
        let out = dir.path().join(out);
        let (code, stderr, written) = consolidate_cli(input, &out);
        assert_eq!(code, Some(0), "{stderr}");
        assert!(written);
    }
}

#[test]
fn a_truncated_optimizer_file_is_refused_naming_it() {
    let (dir, tag) = copy("zero2");
    let file = tag.join("zero_pp_rank_1_mp_rank_00_optim_states.pt");
    let bytes = fs::read(&file).unwrap();
    fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    assert_refused(dir.path(), &["zero_pp_rank_1_mp_rank_00_optim_states.pt"]);
}

#[test]
fn a_missing_rank_file_is_refused() {
    for config in ["zero2", "zero3"] {
        let (dir, tag) = copy(config);
        fs::remove_file(tag.join("zero_pp_rank_1_mp_rank_00_optim_states.pt")).unwrap();
        assert_refused(
            dir.path(),
            &["partition_count says 2 ranks", "1 *_optim_states.pt"],
        );
    }
}

/// The model states say a parameter is larger than the partitions hold (its `torch.Size` in
/// `param_shapes` enlarged): refused, naming the parameter, for both layouts.
#[test]
fn a_partition_shorter_than_param_shapes_say_is_refused() {
    for config in ["zero2", "zero3"] {
        let (dir, tag) = copy(config);
        let name = if config == "zero3" {
            "zero_pp_rank_0_mp_rank_00_model_states.pt"
        } else {
            "mp_rank_00_model_states.pt"
        };
        let path = tag.join(name);
        let mut source = ckpt::torch::open(&path).unwrap();
        let mut graph = source.graph.clone();
        let shapes = graph.lookup(source.root, "param_shapes").unwrap();
        let Value::List(groups) = graph.get(shapes).clone() else {
            panic!("param_shapes is a list")
        };
        let first = graph.mapping(groups[0]).unwrap()[0].1;
        let (_, args) = graph.reduce_of_global(first).unwrap();
        let dims = graph.tuple(graph.tuple(args).unwrap()[0]).unwrap().to_vec();
        graph.set(dims[0], Value::Int(600));
        let root = source.root;
        let edited = dir.path().join("edited.pt");
        ckpt::torch::save(
            &mut source,
            graph,
            root,
            ckpt::torch::OutputFormat::Zip,
            &edited,
            &ckpt::torch::StoragePlan::copy_all(),
        )
        .unwrap();
        fs::rename(&edited, &path).unwrap();
        assert_refused(
            dir.path(),
            &[name, "`emb.weight`", "shorter than param_shapes say"],
        );
    }
}

/// Files named as DeepSpeed names them but holding something else (a plain training
/// checkpoint) are refused, naming the file; unknown and dangerous globals are refused as in
/// any input.
#[test]
fn files_that_are_not_zero_states_or_are_unsafe_are_refused() {
    let (dir, tag) = copy("zero2");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let model = tag.join("mp_rank_00_model_states.pt");
    fs::copy(root.join("fixtures/zip_train_ckpt.pth"), &model).unwrap();
    assert_refused(dir.path(), &["mp_rank_00_model_states.pt", "buffer_names"]);
    fs::copy(root.join("fixtures/unsafe_module.pth"), &model).unwrap();
    assert_refused(
        dir.path(),
        &["mp_rank_00_model_states.pt", "--allow-unknown-globals"],
    );
    fs::copy(
        fixtures().join("zero2/step1/mp_rank_00_model_states.pt"),
        &model,
    )
    .unwrap();
    let optim = tag.join("zero_pp_rank_1_mp_rank_00_optim_states.pt");
    fs::copy(root.join("fixtures/hostile/reduce_os_system.pth"), &optim).unwrap();
    assert_refused(
        dir.path(),
        &["zero_pp_rank_1_mp_rank_00_optim_states.pt", "dangerous"],
    );
}

#[test]
fn inspect_reports_stage_ranks_and_tensors() {
    let run = Command::new(env!("CARGO_BIN_EXE_ckpt"))
        .args(["inspect", "--json"])
        .arg(fixtures().join("zero3"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(report["format"], "deepspeed");
    assert_eq!(report["zero_stage"], 3);
    assert_eq!(report["world_size"], 2);
    assert_eq!(report["tensors"], 10);
    assert_eq!(report["tied"], 1);
    assert_eq!(report["scan"], "clean");
    assert_eq!(report["dtypes"]["int64"], 1);
}

#[test]
fn inspect_text_names_the_stored_dtype_of_a_widened_buffer() {
    let run = Command::new(env!("CARGO_BIN_EXE_ckpt"))
        .arg("inspect")
        .arg(fixtures().join("bf16"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("float32 (stored bfloat16)") && l.contains("buffer")),
        "{stdout}"
    );
}
