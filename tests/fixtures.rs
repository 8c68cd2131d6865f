//! The pure-Rust tier against checkpoints written by real torch 2.13 (`fixtures/`): every
//! fixture reads with the facts torch itself reported (`fixtures/expected.json`), rewrites are
//! lossless, damaged files are errors and never panics, and the CLI keeps its error contract.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use ckpt::pickle::Value;
use ckpt::torch::{self, Checkpoint, Format, LocationMap, OutputFormat};
use ckpt::transform::{remap, strip_state_dict, PrefixRule};
use serde_json::Value as Json;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn expected() -> BTreeMap<String, Json> {
    let text = fs::read_to_string(fixtures().join("expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("valid expected.json")
}

fn report(path: &Path) -> Json {
    let ckpt = torch::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let security = ckpt::security::scan_file(path, &Default::default());
    let report = ckpt::report::inspect(&ckpt, &security).expect("report");
    serde_json::to_value(&report).expect("the report serializes")
}

#[test]
fn every_fixture_reads_with_the_facts_torch_reported() {
    let expected = expected();
    assert!(
        expected.len() >= 40,
        "expected.json lists {} fixtures",
        expected.len()
    );
    for (name, facts) in &expected {
        let got = report(&fixtures().join(name));
        for field in ["format", "tensors", "storages", "bytes", "dtypes"] {
            assert_eq!(got[field], facts[field], "{name}: {field}");
        }
        // torch counts locations per tensor object; our `locations` does too.
        assert_eq!(got["locations"], facts["locations"], "{name}: locations");
        let unsafe_expected = facts["unsafe_globals"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let unsafe_got = got["unsafe_globals"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(unsafe_got, unsafe_expected, "{name}: unsafe globals");
    }
}

#[test]
fn wrapper_prefixes_and_amp_kinds_are_detected() {
    let cases = [
        ("zip_dataparallel_sd.pth", "module.", None),
        ("zip_compiled_sd.pth", "_orig_mod.", None),
        ("zip_module_module_sd.pth", "module.", None),
        ("amp_apex.pth", "", Some("apex")),
        ("amp_native.pth", "", Some("native")),
        ("amp_npu.pth", "", Some("npu")),
        ("amp_disabled.pth", "", Some("disabled")),
        ("amp_lightning.ckpt", "", Some("native")),
    ];
    for (name, prefix, amp) in cases {
        let got = report(&fixtures().join(name));
        let prefixes: Vec<&str> = got["prefixes"]
            .as_array()
            .map(|a| a.iter().filter_map(Json::as_str).collect())
            .unwrap_or_default();
        if prefix.is_empty() {
            assert!(prefixes.is_empty(), "{name}: {prefixes:?}");
        } else {
            assert!(prefixes.contains(&prefix), "{name}: {prefixes:?}");
        }
        assert_eq!(got["amp"]["kind"].as_str(), amp, "{name}");
    }
}

/// Every storage's bytes, read through the library's own copy path.
fn storage_bytes(ckpt: &mut Checkpoint) -> BTreeMap<String, Vec<u8>> {
    let keys: Vec<String> = ckpt
        .scan
        .unique_storages()
        .iter()
        .map(|s| s.key.clone())
        .collect();
    keys.into_iter()
        .map(|key| {
            let mut file = tempfile::tempfile().expect("temp file");
            ckpt.copy_storage_to_file(&key, &mut file).expect("copy");
            let mut bytes = Vec::new();
            use std::io::Seek;
            file.rewind().expect("rewind");
            file.read_to_end(&mut bytes).expect("read");
            (key, bytes)
        })
        .collect()
}

/// `(dtype, shape, stride, offset, storage key)` of one tensor.
type Layout = (String, Vec<u64>, Vec<i64>, u64, String);

/// The layout of every tensor, in order.
fn tensor_layout(ckpt: &Checkpoint) -> Vec<Layout> {
    ckpt.scan
        .tensors
        .iter()
        .map(|t| {
            (
                t.dtype.to_string(),
                t.shape.clone(),
                t.stride.clone(),
                t.offset,
                t.storage.key.clone(),
            )
        })
        .collect()
}

fn rewritable_fixtures() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = fs::read_dir(fixtures())
        .expect("fixtures dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("pth" | "pt" | "ckpt" | "tar")
            )
        })
        .collect();
    paths.sort();
    paths
        .into_iter()
        .filter(|p| {
            torch::open(p)
                .map(|c| matches!(c.format, Format::Zip | Format::Legacy))
                .unwrap_or(false)
        })
        .collect()
}

#[test]
fn remap_to_cpu_keeps_every_tensor_and_byte_and_changes_only_tags() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fixtures = rewritable_fixtures();
    assert!(
        fixtures.len() >= 30,
        "only {} rewritable fixtures",
        fixtures.len()
    );
    for path in fixtures {
        let mut source = torch::open(&path).expect("open");
        let format = OutputFormat::same_as(source.format).expect("rewritable");
        let mut graph = source.graph.clone();
        remap(
            &mut graph,
            source.root,
            &LocationMap::All("cpu".parse().expect("cpu")),
        )
        .expect("remap");
        let out = dir.path().join("out.pth");
        let root = source.root;
        let plan = torch::StoragePlan::copy_all();
        torch::save(&mut source, graph, root, format, &out, &plan).expect("save");

        let mut rewritten = torch::open(&out).expect("reopen");
        assert_eq!(rewritten.format, source.format, "{}", path.display());
        assert_eq!(
            tensor_layout(&rewritten),
            tensor_layout(&source),
            "{}",
            path.display()
        );
        assert!(
            rewritten.scan.storages.iter().all(|s| s.location == "cpu"),
            "{}",
            path.display()
        );
        assert_eq!(
            storage_bytes(&mut rewritten),
            storage_bytes(&mut source),
            "{}",
            path.display()
        );
    }
}

#[test]
fn strip_module_renames_keys_and_metadata_like_torch() {
    let mut source = torch::open(&fixtures().join("zip_dataparallel_sd.pth")).expect("open");
    let mut graph = source.graph.clone();
    strip_state_dict(&mut graph, source.root, &PrefixRule::Auto).expect("strip");
    let keys: Vec<&str> = graph
        .mapping(source.root)
        .expect("mapping")
        .iter()
        .filter_map(|&(k, _)| graph.str(k))
        .collect();
    assert_eq!(keys[0], "conv1.weight");
    assert!(keys.iter().all(|k| !k.starts_with("module.")));
    // The `_metadata` mapping `BUILD` attaches to the state dict.
    let metadata = match graph.get(source.root) {
        Value::Object(object) => object
            .state
            .and_then(|state| graph.lookup(state, "_metadata")),
        _ => None,
    }
    .expect("_metadata");
    let meta_keys: Vec<&str> = graph
        .mapping(metadata)
        .expect("metadata mapping")
        .iter()
        .filter_map(|&(k, _)| graph.str(k))
        .collect();
    // consume_prefix_in_state_dict_if_present: 'module' replaces '' in place, then the
    // 'module.x' entries are popped and re-appended as 'x'.
    assert_eq!(
        meta_keys,
        ["", "conv1", "bn1", "relu", "pool", "flat", "fc"]
    );
    let out = tempfile::tempdir().expect("dir");
    let root = source.root;
    let plan = torch::StoragePlan::copy_all();
    torch::save(
        &mut source,
        graph,
        root,
        OutputFormat::Zip,
        &out.path().join("o.pth"),
        &plan,
    )
    .expect("save");
}

#[test]
fn truncated_files_are_errors_never_panics() {
    for name in [
        "zip_train_ckpt.pth",
        "legacy_train_ckpt.pth",
        "tar_pre2017.pth",
        "ts_traced.pt",
    ] {
        let bytes = fs::read(fixtures().join(name)).expect("fixture");
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("cut.pth");
        // Every cut must be survived; a cut in the first third (before any format's trailing
        // padding, such as tar's end-of-archive blocks) must be an error.
        let step = (bytes.len() / 97).max(1);
        for len in (0..bytes.len()).step_by(step) {
            fs::write(&path, &bytes[..len]).expect("write");
            let result = torch::open(&path);
            if len < bytes.len() / 3 {
                assert!(result.is_err(), "{name} cut to {len} bytes was accepted");
            }
        }
    }
}

#[test]
fn corrupted_bytes_never_panic() {
    let bytes = fs::read(fixtures().join("legacy_train_ckpt.pth")).expect("fixture");
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("bad.pth");
    // Flip each byte of the pickles (the first 2 KiB) in turn.
    for i in 0..bytes.len().min(2048) {
        let mut damaged = bytes.clone();
        damaged[i] ^= 0xff;
        fs::write(&path, &damaged).expect("write");
        let _ = torch::open(&path);
    }
}

fn ckpt_bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ckpt"))
}

#[test]
fn cli_errors_are_one_line_naming_the_file_with_status_1_and_no_output() {
    let dir = tempfile::tempdir().expect("dir");
    let garbage = dir.path().join("garbage.pth");
    fs::write(&garbage, b"this is not a checkpoint").expect("write");
    let out = dir.path().join("out.pth");
    let result = ckpt_bin()
        .args(["remap", "--to", "cpu", "-o"])
        .arg(&out)
        .arg(&garbage)
        .output()
        .expect("run ckpt");
    assert_eq!(result.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("garbage.pth"), "{stderr}");
    assert!(!out.exists());
    assert_eq!(
        fs::read_dir(dir.path()).expect("dir").count(),
        1,
        "no stray temp files"
    );
}

#[test]
fn cli_refuses_to_overwrite_the_input() {
    let dir = tempfile::tempdir().expect("dir");
    let input = dir.path().join("in.pth");
    fs::copy(fixtures().join("zip_dataparallel_sd.pth"), &input).expect("copy");
    let before = fs::read(&input).expect("read");
    let result = ckpt_bin()
        .args(["strip-module", "-o"])
        .arg(&input)
        .arg(&input)
        .output()
        .expect("run ckpt");
    assert_eq!(result.status.code(), Some(1));
    assert_eq!(fs::read(&input).expect("read"), before, "input untouched");
}

#[test]
fn cli_inspect_json_has_the_documented_fields() {
    let result = ckpt_bin()
        .args(["inspect", "--json"])
        .arg(fixtures().join("cuda0_train_ckpt.pth"))
        .output()
        .expect("run ckpt");
    assert!(result.status.success());
    let json: Json = serde_json::from_slice(&result.stdout).expect("one JSON object");
    for field in [
        "format",
        "tensors",
        "bytes",
        "locations",
        "prefixes",
        "amp",
        "keys",
        "unsafe_globals",
        "weights_only_blockers",
    ] {
        assert!(json.get(field).is_some(), "missing {field}");
    }
    assert_eq!(json["locations"]["cuda:0"], 15);
}

#[test]
fn cli_inspect_lists_what_blocks_a_weights_only_load() {
    let result = ckpt_bin()
        .args(["inspect", "--json"])
        .arg(fixtures().join("plain/plain_refused.pth"))
        .output()
        .expect("run ckpt");
    assert!(result.status.success());
    let json: Json = serde_json::from_slice(&result.stdout).expect("one JSON object");
    let blockers = json["weights_only_blockers"].as_array().expect("a list");
    let summary: Vec<(&str, &str, &Json)> = blockers
        .iter()
        .map(|b| {
            (
                b["class"].as_str().unwrap_or_default(),
                b["paths"][0].as_str().unwrap_or_default(),
                &b["plain"],
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("_plain_types.Opaque", "extra/hook", &Json::Null),
            ("argparse.Namespace", "args", &Json::from("namespace")),
        ]
    );
    let text = ckpt_bin()
        .arg("inspect")
        .arg(fixtures().join("plain/plain_np2.pth"))
        .output()
        .expect("run ckpt");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("28 objects block torch.load(weights_only=True); `ckpt convert --plain` rewrites them all"),
        "{text}"
    );
    assert!(text.contains("numpy._core.multiarray._reconstruct ×3 at mean, ids, count"));
}

#[test]
fn convert_plain_writes_only_allow_listed_globals_and_refuses_what_it_cannot_represent() {
    let dir = tempfile::tempdir().expect("temp dir");
    for name in ["plain_np1.pth", "plain_np2.pth", "plain_legacy.pth"] {
        let out = dir.path().join(name);
        let result = ckpt_bin()
            .args(["convert", "--plain", "-v"])
            .arg(fixtures().join("plain").join(name))
            .arg("-o")
            .arg(&out)
            .output()
            .expect("run ckpt");
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert!(result.status.success(), "{name}: {stderr}");
        assert!(stderr.contains("plain: 3 × numpy array → tensor at mean, ids, count"));
        assert!(stderr.contains("plain: 1 × argparse.Namespace → dict at args"));
        // The safe policy opens it (no unknown global is left) and nothing blocks it.
        let report = ckpt::open(&out).expect("opens").inspect().expect("inspect");
        assert!(report.weights_only_blockers.is_empty(), "{name}");
        assert!(report.unsafe_globals.is_empty(), "{name}");
        assert_eq!(
            report.dtypes.get("int64"),
            Some(&2),
            "{name}: ids and count"
        );
    }
    let out = dir.path().join("refused.pth");
    let result = ckpt_bin()
        .args(["convert", "--plain"])
        .arg(fixtures().join("plain/plain_refused.pth"))
        .arg("-o")
        .arg(&out)
        .output()
        .expect("run ckpt");
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert_eq!(result.status.code(), Some(1));
    assert!(
        stderr.contains("`extra/hook` is a `_plain_types.Opaque` object"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(!out.exists());
}

/// The element types of the tensors in a plain value's JSON form
/// (`fixtures/plain/_plain_values.py`: `{"tensor": {"dtype": …}}`), counted.
fn recorded_dtypes(value: &Json, counts: &mut BTreeMap<String, usize>) {
    match value {
        Json::Object(map) => {
            if let Some(dtype) = map.get("tensor").and_then(|t| t["dtype"].as_str()) {
                *counts.entry(dtype.to_owned()).or_default() += 1;
            }
            map.values().for_each(|v| recorded_dtypes(v, counts));
        }
        Json::Array(items) => items.iter().for_each(|v| recorded_dtypes(v, counts)),
        _ => {}
    }
}

/// Training checkpoints torch 1.13.1 (zip and legacy), 2.1.2 and 2.11.0 wrote
/// (`plain/plain_torchV.pth`): `convert --plain` rewrites every kind of blocker they hold and
/// reports each, keeps the format, and its output holds exactly the tensors (by element type)
/// of the plain form the writing torch recorded (`plain_torchV.json`).
#[test]
fn convert_plain_rewrites_training_checkpoints_older_torch_versions_wrote() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut inputs: Vec<PathBuf> = fs::read_dir(fixtures().join("plain"))
        .expect("plain fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.starts_with("plain_torch") && name.ends_with(".pth")
        })
        .collect();
    inputs.sort();
    assert!(inputs.len() >= 4, "{inputs:?}");
    for input in &inputs {
        let name = input.file_stem().and_then(|n| n.to_str()).expect("name");
        let record = fixtures()
            .join("plain")
            .join(format!("{}.json", name.trim_end_matches("_legacy")));
        let record: Json = serde_json::from_str(&fs::read_to_string(&record).expect("record"))
            .expect("JSON record");
        let before = ckpt::inspect(input).expect("inspect");
        assert!(!before.weights_only_blockers.is_empty(), "{name}");

        let out = dir.path().join(format!("{name}.pth"));
        let result = ckpt_bin()
            .args(["convert", "--plain", "-v"])
            .arg(input)
            .arg("-o")
            .arg(&out)
            .output()
            .expect("run ckpt");
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert!(result.status.success(), "{name}: {stderr}");
        for line in [
            "plain: 1 × argparse.Namespace → dict at args",
            "plain: 4 × omegaconf DictConfig → dict at cfg, cfg/model, cfg/data, cfg/data/sizes/0",
            "plain: 2 × omegaconf ListConfig → list at cfg/model/layers, cfg/data/sizes",
            "plain: 3 × numpy array → tensor at mean, ids, count",
            "plain: 3 × numpy scalar → Python number at args/beta, best, step",
            "plain: 2 × pathlib path → str at args/out, root",
            "plain: 2 × enum member → its value at mode, modes/0",
        ] {
            assert!(stderr.contains(line), "{name}: no `{line}` in {stderr}");
        }
        let report = ckpt::open(&out).expect("opens").inspect().expect("inspect");
        assert_eq!(report.format, before.format, "{name}");
        assert!(report.weights_only_blockers.is_empty(), "{name}");
        assert!(report.unsafe_globals.is_empty(), "{name}");
        let mut dtypes = BTreeMap::new();
        recorded_dtypes(&record["plain"], &mut dtypes);
        assert_eq!(report.dtypes, dtypes, "{name}");
        assert_eq!(
            report.tensors,
            before.tensors + 3,
            "{name}: plus the numpy arrays"
        );
    }
}

#[test]
fn a_batch_plain_step_makes_its_outputs_plain_and_needs_no_allow_flag() {
    let dir = tempfile::tempdir().expect("temp dir");
    fs::copy(
        fixtures().join("plain/plain_np2.pth"),
        dir.path().join("in.pth"),
    )
    .expect("copy");
    let plan = dir.path().join("plan.toml");
    fs::write(
        &plan,
        "[[job]]\ninputs = [\"in.pth\"]\noutput_dir = \"out\"\nsteps = [\"plain\", { format = \"legacy\" }]\n",
    )
    .expect("plan");
    let result = ckpt_bin()
        .args(["batch", "--jobs", "1"])
        .arg(&plan)
        .output()
        .expect("run ckpt");
    assert!(
        result.status.success(),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let report = ckpt::open(&dir.path().join("out/in.pth"))
        .expect("opens")
        .inspect()
        .expect("inspect");
    assert_eq!(report.format, "legacy");
    assert!(report.weights_only_blockers.is_empty());
}
