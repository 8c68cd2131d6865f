//! `.pt2` archives written by every torch generation since torch.export
//! (`fixtures/pt2/generations`, every torch version in its `VERSIONS`, 2.1.2 to 2.15.0: the
//! flat layout with schemas 1 to 8.7, the archive layout with pickled or raw weights and
//! schemas 8.8 to 8.20): `inspect` names the layout and
//! schema the manifest records, `scan` finds every pickle clean, and `to-onnx` writes a
//! model that tract runs at batch 1 and 3 from one file within 1e-4·max(1, max|ref|) of
//! the outputs the same torch computed. Also the refusals of a future schema and of a
//! layout that disagrees with itself.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use ckpt::onnx::program::{export_program, ProgramOptions};
use ckpt::torch::pt2::{Layout, Pt2Archive};
use ckpt::Status;

mod common;
use common::Fixture;
#[path = "common/cli.rs"]
mod cli;
use cli::{inspect_json, inspect_text};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pt2/generations")
}

fn manifest() -> serde_json::Map<String, serde_json::Value> {
    let text = std::fs::read_to_string(fixtures().join("manifest.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn ckpt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ckpt"))
}

#[test]
fn every_generation_is_read_scanned_and_exported_with_parity() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = manifest();
    let versions = std::fs::read_to_string(fixtures().join("VERSIONS")).unwrap();
    for version in versions.split_whitespace() {
        for model in ["cnn", "ops"] {
            let name = format!("{model}-{version}");
            assert_eq!(manifest[&name]["torch"], version, "{name} in manifest.json");
        }
    }
    assert_eq!(manifest.len(), 2 * versions.split_whitespace().count());
    for (name, entry) in &manifest {
        let path = fixtures().join(format!("{name}.pt2"));
        let archive = Pt2Archive::open(&path).unwrap();
        let layout = match archive.layout {
            Layout::Flat => "flat",
            Layout::Archive => "archive",
        };
        assert_eq!(layout, entry["layout"], "{name}");
        assert_eq!(archive.schema.to_string(), entry["schema"], "{name}");

        let scan = ckpt::scan_file(&path, &Default::default());
        assert_eq!(scan.format, "pt2", "{name}");
        assert_eq!(scan.status(), Status::Clean, "{name}: {:?}", scan.issues);
        assert!(!scan.pickles.is_empty(), "{name}: no pickle found");

        let mut archive = archive;
        let out = dir.path().join(format!("{name}.onnx"));
        export_program(&mut archive, &ProgramOptions::default(), &out).unwrap();
        Fixture::named(&fixtures(), name).assert_parity(&out, name);
    }
}

#[test]
fn inspect_names_the_layout_and_schema() {
    let input = fixtures().join("ops-2.1.2.pt2");
    let report = inspect_json(&input);
    assert_eq!(report["format"], "pt2");
    assert_eq!(report["layout"], "flat");
    assert_eq!(report["schema"], "1");
    // Parameters and buffers by their names in torch 2.1's pickled state dict.
    assert_eq!(report["state"]["parameters"], 6);
    assert_eq!(report["state"]["buffers"], 2);
    assert_eq!(report["tensors"], 8);
    let text = inspect_text(&input);
    assert!(
        text.contains("format          pt2 (flat layout, schema 1)"),
        "{text}"
    );
}

/// The records of a stored zip written front to back (Python's `zipfile` on a file: each
/// local header with its sizes, then the data), by name in order.
fn stored_records(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut records = Vec::new();
    let mut at = 0;
    while bytes[at..].starts_with(b"PK\x03\x04") {
        let u16_at = |i: usize| u16::from_le_bytes([bytes[at + i], bytes[at + i + 1]]) as usize;
        let size = u32::from_le_bytes(bytes[at + 18..at + 22].try_into().unwrap()) as usize;
        let (name_len, extra_len) = (u16_at(26), u16_at(28));
        let name = String::from_utf8(bytes[at + 30..at + 30 + name_len].to_vec()).unwrap();
        let data = at + 30 + name_len + extra_len;
        records.push((name, bytes[data..data + size].to_vec()));
        at = data + size;
    }
    records
}

/// A copy of flat-layout archive `src` with record `record` passed through `edit`.
fn rewritten(src: &Path, record: &str, edit: impl Fn(&[u8]) -> Vec<u8>, out: &Path) {
    let mut records = stored_records(&std::fs::read(src).unwrap());
    let found = records.iter_mut().find(|(name, _)| name == record).unwrap();
    found.1 = edit(&found.1);
    let mut file = std::fs::File::create(out).unwrap();
    file.write_all(&stored_zip(&records)).unwrap();
}

/// A stored (uncompressed) zip of `records` at the root, as Python's `zipfile` writes it.
fn stored_zip(records: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in records {
        let crc = crc32(data);
        let offset = out.len() as u32;
        let header = |sig: &[u8], central_entry: bool| {
            let mut h = sig.to_vec();
            if central_entry {
                h.extend_from_slice(&20u16.to_le_bytes());
            }
            h.extend_from_slice(&20u16.to_le_bytes());
            h.extend_from_slice(&[0; 6]); // flags, method (stored), time
            h.extend_from_slice(&0u16.to_le_bytes()); // date
            h.extend_from_slice(&crc.to_le_bytes());
            h.extend_from_slice(&(data.len() as u32).to_le_bytes());
            h.extend_from_slice(&(data.len() as u32).to_le_bytes());
            h.extend_from_slice(&(name.len() as u16).to_le_bytes());
            h.extend_from_slice(&0u16.to_le_bytes());
            if central_entry {
                h.extend_from_slice(&[0; 6]); // comment length, disk, internal attributes
                h.extend_from_slice(&0u32.to_le_bytes()); // external attributes
                h.extend_from_slice(&offset.to_le_bytes());
            }
            h.extend_from_slice(name.as_bytes());
            h
        };
        let local = header(b"PK\x03\x04", false);
        let entry = header(b"PK\x01\x02", true);
        out.extend_from_slice(&local);
        out.extend_from_slice(data);
        central.extend_from_slice(&entry);
    }
    let start = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(b"PK\x05\x06");
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(records.len() as u16).to_le_bytes());
    out.extend_from_slice(&(records.len() as u16).to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&start.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (!(crc & 1)).wrapping_add(1));
        }
    }
    !crc
}

fn refusal(path: &Path) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.onnx");
    let run = ckpt()
        .args([
            "to-onnx",
            path.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    assert!(!out.exists());
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    stderr
}

#[test]
fn a_future_schema_is_refused_naming_the_versions_known() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.pt2");
    let future = |json: &[u8]| {
        let text = String::from_utf8_lossy(json).replace(
            "\"schema_version\": {\"major\": 8, \"minor\": 7}",
            "\"schema_version\": {\"major\": 9, \"minor\": 0}",
        );
        assert!(text.contains("\"major\": 9"));
        text.into_bytes()
    };
    let src = fixtures().join("cnn-2.7.1.pt2");
    rewritten(&src, "serialized_exported_program.json", future, &path);
    let err = refusal(&path);
    assert!(err.contains("schema version 9.0"), "{err}");
    assert!(err.contains("schema 1 to 8.x"), "{err}");
}

#[test]
fn a_version_record_that_disagrees_with_the_program_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mixed.pt2");
    let src = fixtures().join("cnn-2.7.1.pt2");
    rewritten(&src, "version", |_| b"5.1".to_vec(), &path);
    let err = refusal(&path);
    assert!(err.contains("`version`: says schema 5.1"), "{err}");
}

#[test]
fn a_truncated_pickled_state_dict_is_refused_naming_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cut.pt2");
    let src = fixtures().join("cnn-2.5.1.pt2");
    rewritten(
        &src,
        "serialized_state_dict.pt",
        |b| b[..b.len() / 2].to_vec(),
        &path,
    );
    let err = refusal(&path);
    assert!(err.contains("serialized_state_dict.pt"), "{err}");
}
