//! The batch manifest: one JSON record per input (its hash and size, the steps, every output
//! with its hash and size, the status, the duration, the tool version), written atomically
//! and rewritten as inputs complete; what resume and `ckpt manifest merge` read.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::BatchError;
use ckpt_base::atomic_file::{folder_of, write_atomically_as};

/// This build's version, recorded in every manifest and entry.
pub const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A whole manifest. Invariant: `entries` sorted by `(job, input)`, one per pair.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always `ckpt`.
    pub tool: String,
    /// The version of ckpt that wrote it.
    pub tool_version: String,
    /// SHA-256 of the plan file: manifests of different plans are never merged.
    pub plan_sha256: String,
    /// `I/N` for one shard's manifest; `null` for a whole batch or a merge.
    pub shard: Option<String>,
    /// The shards a merged manifest was made from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_shards: Vec<String>,
    /// Inputs in the whole plan, every shard together.
    pub inputs_total: usize,
    /// One per `(job, input)` done or failed so far.
    pub entries: Vec<Entry>,
}

/// The record of one input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The job's index in the plan (from 0).
    pub job: usize,
    /// The input's path relative to the plan's folder.
    pub input: String,
    /// SHA-256 (hex) of the input as processed (for a DCP folder, see [`hash_folder_reporting`]).
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
    /// The job's steps as the plan wrote them.
    pub steps: Vec<serde_json::Value>,
    /// Whether every step succeeded.
    pub status: Status,
    /// Why it failed (`Failed` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What it wrote.
    pub outputs: Vec<Output>,
    /// Wall time of its steps.
    pub duration_ms: u64,
    /// The version of ckpt that processed it; another version runs it again on resume.
    pub tool_version: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
/// How one input ended (`ok`/`failed` in the JSON).
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Every output was written.
    Ok,
    /// A step failed (see [`Entry::error`]).
    Failed,
}

/// One output file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Output {
    /// `checkpoint`, `onnx`, `onnx-data` or `safetensors`.
    pub kind: String,
    /// Relative to the plan's folder.
    pub path: String,
    /// SHA-256 (hex) of its bytes.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
}

/// What a run should do with one input, given the manifest of an earlier run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Everything matches: keep the earlier entry.
    Skip,
    /// Process it, for this reason.
    Run(String),
}

/// What an input is now, to compare with its earlier entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Identity<'a> {
    /// The input's SHA-256, hex.
    pub sha256: &'a str,
    /// Its size in bytes.
    pub size: u64,
    /// The steps the plan runs on it, as the manifest records them.
    pub steps: &'a [serde_json::Value],
    /// Outputs this run would write: `(kind, path relative to the plan's folder)`.
    pub outputs: &'a [(String, String)],
}

/// Decides whether an input can be skipped: the earlier entry succeeded with this tool
/// version, on the same bytes, with the same steps and output paths, and every output file
/// still has the recorded size and SHA-256 (`hash` computes them from a manifest path).
pub fn decide(
    previous: Option<&Entry>,
    now: &Identity<'_>,
    hash: impl Fn(&str) -> io::Result<(String, u64)>,
) -> Decision {
    let Some(prev) = previous else {
        return Decision::Run("new".into());
    };
    if prev.status != Status::Ok {
        return Decision::Run("failed before".into());
    }
    if prev.tool_version != TOOL_VERSION {
        return Decision::Run(format!("made by ckpt {}", prev.tool_version));
    }
    if prev.sha256 != now.sha256 || prev.size != now.size {
        return Decision::Run("input changed".into());
    }
    if prev.steps != now.steps {
        return Decision::Run("steps changed".into());
    }
    let recorded: Vec<(String, String)> = prev
        .outputs
        .iter()
        .filter(|o| o.kind != "onnx-data")
        .map(|o| (o.kind.clone(), o.path.clone()))
        .collect();
    if recorded != now.outputs {
        return Decision::Run("outputs changed".into());
    }
    for output in &prev.outputs {
        match hash(&output.path) {
            Ok((sha, size)) if sha == output.sha256 && size == output.size => {}
            Ok(_) => return Decision::Run(format!("{} was modified", output.path)),
            Err(_) => return Decision::Run(format!("{} is missing", output.path)),
        }
    }
    Decision::Skip
}

/// SHA-256 (hex) and size of a file, streamed.
pub fn hash_file(path: &Path) -> io::Result<(String, u64)> {
    hash_file_reporting(path, &|_| {})
}

/// [`hash_file`], calling `on_read` with the size of each chunk as it is hashed.
pub fn hash_file_reporting(path: &Path, on_read: &dyn Fn(u64)) -> io::Result<(String, u64)> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        size += n as u64;
        on_read(n as u64);
    }
    Ok((hex(&hasher.finalize()), size))
}

/// SHA-256 (hex) and size of a batch input: [`hash_file_reporting`] for a file; for a
/// folder (a DCP checkpoint), [`hash_folder_reporting`].
pub fn hash_input_reporting(path: &Path, on_read: &dyn Fn(u64)) -> io::Result<(String, u64)> {
    if path.is_dir() {
        hash_folder_reporting(path, on_read)
    } else {
        hash_file_reporting(path, on_read)
    }
}

/// SHA-256 (hex) and total size of the files of folder `dir` (the regular files directly in
/// it, subfolders not; for a DeepSpeed save folder, also those of the tag folder its `latest`
/// names, as `<tag>/<name>`), taken in byte order of their relative names: for each, its name,
/// a zero byte, its size (8 bytes little-endian) and its contents. The same files with the
/// same names and contents give the same hash wherever the folder is.
pub fn hash_folder_reporting(dir: &Path, on_read: &dyn Fn(u64)) -> io::Result<(String, u64)> {
    let files = folder_files(dir)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut total = 0u64;
    for name in files {
        let mut file = File::open(dir.join(&name))?;
        let size = file.metadata()?.len();
        hasher.update(name.as_os_str().as_encoded_bytes());
        hasher.update([0]);
        hasher.update(size.to_le_bytes());
        let mut read = 0u64;
        loop {
            let n = file.read(&mut buffer)?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
            read += n as u64;
            on_read(n as u64);
        }
        if read != size {
            return Err(io::Error::other(format!(
                "{} changed size while it was hashed",
                name.to_string_lossy()
            )));
        }
        total += size;
    }
    Ok((hex(&hasher.finalize()), total))
}

/// The bytes a batch input holds: a file's size, or the total of a folder's files (those
/// [`hash_folder_reporting`] reads). Unreadable entries count as 0.
pub fn input_size(path: &Path) -> u64 {
    if !path.is_dir() {
        return path.metadata().map_or(0, |m| m.len());
    }
    folder_files(path).map_or(0, |files| {
        files
            .iter()
            .filter_map(|name| std::fs::metadata(path.join(name)).ok())
            .map(|m| m.len())
            .sum()
    })
}

/// The files a folder input is made of, by name relative to it, in byte order: the regular
/// files directly in it (hidden ones included; subfolders are not part of it), and, for a
/// DeepSpeed save folder whose `latest` names a tag folder, that folder's files too (as
/// `<tag>/<name>`), where its checkpoint is.
fn folder_files(dir: &Path) -> io::Result<Vec<std::path::PathBuf>> {
    let direct = |folder: &Path| -> io::Result<Vec<std::ffi::OsString>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(folder)? {
            let entry = entry?;
            if entry.path().is_file() {
                names.push(entry.file_name());
            }
        }
        Ok(names)
    };
    let mut files: Vec<std::path::PathBuf> = direct(dir)?.into_iter().map(Into::into).collect();
    if let Some(tag) = ckpt_formats::torch::dcp::deepspeed::find(dir).filter(|t| t != dir) {
        if let Some(tag_name) = tag.file_name() {
            let tag_name = Path::new(tag_name);
            files.extend(direct(&tag)?.into_iter().map(|n| tag_name.join(n)));
        }
    }
    files.sort_by(|a, b| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    });
    Ok(files)
}

/// `bytes` as lowercase hex, two digits a byte (how the manifest writes digests).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Manifest {
    /// An empty manifest for the plan with this hash.
    pub fn new(plan_sha256: &str, shard: Option<String>, inputs_total: usize) -> Manifest {
        Manifest {
            tool: "ckpt".into(),
            tool_version: TOOL_VERSION.into(),
            plan_sha256: plan_sha256.into(),
            shard,
            merged_shards: Vec::new(),
            inputs_total,
            entries: Vec::new(),
        }
    }

    /// Reads a manifest; `None` when the file does not exist.
    pub fn load(path: &Path) -> Result<Option<Manifest>, BatchError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(manifest_error(path, &e.to_string())),
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| manifest_error(path, &format!("not a ckpt manifest: {e}")))
    }

    /// The entry of an input.
    pub fn entry(&self, job: usize, input: &str) -> Option<&Entry> {
        self.entries
            .binary_search_by(|e| (e.job, e.input.as_str()).cmp(&(job, input)))
            .ok()
            .map(|i| &self.entries[i])
    }

    /// Adds or replaces the entry of an input, keeping the order.
    pub fn record(&mut self, entry: Entry) {
        match self
            .entries
            .binary_search_by(|e| (e.job, e.input.as_str()).cmp(&(entry.job, entry.input.as_str())))
        {
            Ok(i) => self.entries[i] = entry,
            Err(i) => self.entries.insert(i, entry),
        }
    }

    /// Writes the manifest to `path` atomically (temporary file `.<name>.*.partial` beside
    /// it, fsync, rename).
    pub fn save(&self, path: &Path) -> Result<(), BatchError> {
        let mut text =
            serde_json::to_vec_pretty(self).map_err(|e| manifest_error(path, &e.to_string()))?;
        text.push(b'\n');
        write_atomically_as(path, &temp_prefix(path), |file| file.write_all(&text))
            .map_err(|e: io::Error| manifest_error(path, &e.to_string()))
    }

    /// Temporary files a killed writer of the manifest at `path` left behind.
    pub fn stale_temporaries(path: &Path) -> Vec<PathBuf> {
        let prefix = temp_prefix(path);
        let Ok(entries) = std::fs::read_dir(folder_of(path)) else {
            return Vec::new();
        };
        entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(&prefix) && n.ends_with(".partial"))
            })
            .collect()
    }
}

fn temp_prefix(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(".{name}.")
}

fn manifest_error(path: &Path, what: &str) -> BatchError {
    BatchError::Manifest {
        path: path.to_owned(),
        what: what.to_owned(),
    }
}

/// What a merge found.
#[derive(Clone, Debug, PartialEq)]
pub struct Merged {
    /// The merged manifest.
    pub manifest: Manifest,
    /// Shards `I/N` of the count the inputs used that none of them was.
    pub missing_shards: Vec<String>,
}

/// Joins shard manifests of one plan: entries are united; an input recorded twice keeps a
/// success over a failure; two different successes for one input are an error.
pub fn merge(manifests: Vec<(PathBuf, Manifest)>) -> Result<Merged, BatchError> {
    let Some((_, first)) = manifests.first() else {
        return Err(BatchError::Merge("no manifests to merge".into()));
    };
    let plan = first.plan_sha256.clone();
    let mut merged = Manifest::new(&plan, None, 0);
    let mut entries: BTreeMap<(usize, String), Entry> = BTreeMap::new();
    let mut counts = BTreeMap::new();
    for (path, manifest) in manifests {
        if manifest.plan_sha256 != plan {
            return Err(BatchError::Merge(format!(
                "{} was made from a different plan (plan SHA-256 {} vs {})",
                path.display(),
                &manifest.plan_sha256,
                plan
            )));
        }
        merged.inputs_total = merged.inputs_total.max(manifest.inputs_total);
        let shards = manifest
            .shard
            .iter()
            .chain(&manifest.merged_shards)
            .cloned();
        for shard in shards {
            if let Some((i, n)) = shard.split_once('/') {
                counts
                    .entry(n.to_owned())
                    .or_insert_with(Vec::new)
                    .push(i.to_owned());
            }
            merged.merged_shards.push(shard);
        }
        for entry in manifest.entries {
            let key = (entry.job, entry.input.clone());
            match entries.get(&key) {
                Some(old) if old.status == Status::Ok && entry.status == Status::Ok => {
                    if old.sha256 != entry.sha256 || old.outputs != entry.outputs {
                        return Err(BatchError::Merge(format!(
                            "`{}` has two different successful records ({} holds another)",
                            entry.input,
                            path.display()
                        )));
                    }
                }
                Some(old) if old.status == Status::Ok => {}
                _ => {
                    entries.insert(key, entry);
                }
            }
        }
    }
    merged.merged_shards.sort();
    merged.merged_shards.dedup();
    let mut missing_shards = Vec::new();
    for (n, have) in &counts {
        if let Ok(count) = n.parse::<u32>() {
            for i in 0..count {
                if !have.contains(&i.to_string()) {
                    missing_shards.push(format!("{i}/{n}"));
                }
            }
        }
    }
    merged.entries = entries.into_values().collect();
    Ok(Merged {
        manifest: merged,
        missing_shards,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DeepSpeed save folder is made of its own files and those of the tag folder its
    /// `latest` names: changing a rank's file changes the hash and the size.
    #[test]
    fn a_deepspeed_save_folder_hashes_its_tag_folder_too() {
        let dir = tempfile::tempdir().unwrap();
        let tag = dir.path().join("step1");
        std::fs::create_dir(&tag).unwrap();
        std::fs::write(dir.path().join("latest"), "step1").unwrap();
        std::fs::write(tag.join("mp_rank_00_model_states.pt"), b"model").unwrap();
        std::fs::write(tag.join("zero_pp_rank_0_mp_rank_00_optim_states.pt"), b"o0").unwrap();
        let files = folder_files(dir.path()).unwrap();
        let names: Vec<_> = files.iter().map(|f| f.to_string_lossy()).collect();
        assert_eq!(
            names,
            [
                "latest",
                "step1/mp_rank_00_model_states.pt",
                "step1/zero_pp_rank_0_mp_rank_00_optim_states.pt"
            ]
        );
        assert_eq!(input_size(dir.path()), 5 + 5 + 2);
        let before = hash_folder_reporting(dir.path(), &|_| {}).unwrap();
        std::fs::write(tag.join("zero_pp_rank_0_mp_rank_00_optim_states.pt"), b"o1").unwrap();
        assert_ne!(hash_folder_reporting(dir.path(), &|_| {}).unwrap(), before);
    }

    fn entry(input: &str, status: Status) -> Entry {
        Entry {
            job: 0,
            input: input.into(),
            sha256: "aa".into(),
            size: 3,
            steps: vec![serde_json::json!("strip-module")],
            status,
            error: None,
            outputs: vec![Output {
                kind: "safetensors".into(),
                path: "out/a.safetensors".into(),
                sha256: "bb".into(),
                size: 9,
            }],
            duration_ms: 1,
            tool_version: TOOL_VERSION.into(),
        }
    }

    #[test]
    fn resume_skips_only_what_still_matches() {
        let prev = entry("a.pth", Status::Ok);
        let steps = vec![serde_json::json!("strip-module")];
        let outputs = vec![("safetensors".to_string(), "out/a.safetensors".to_string())];
        let now = Identity {
            sha256: "aa",
            size: 3,
            steps: &steps,
            outputs: &outputs,
        };
        let good = |_: &str| Ok(("bb".to_string(), 9));
        assert_eq!(decide(Some(&prev), &now, good), Decision::Skip);
        assert!(matches!(decide(None, &now, good), Decision::Run(_)));
        let changed = Identity {
            sha256: "cc",
            ..now.clone()
        };
        assert_eq!(
            decide(Some(&prev), &changed, good),
            Decision::Run("input changed".into())
        );
        let other_steps = vec![serde_json::json!("drop-optimizer")];
        let restepped = Identity {
            steps: &other_steps,
            ..now.clone()
        };
        assert_eq!(
            decide(Some(&prev), &restepped, good),
            Decision::Run("steps changed".into())
        );
        let tampered = |_: &str| Ok(("xx".to_string(), 9));
        assert!(
            matches!(decide(Some(&prev), &now, tampered), Decision::Run(r) if r.contains("modified"))
        );
        let gone = |_: &str| Err(io::Error::from(io::ErrorKind::NotFound));
        assert!(
            matches!(decide(Some(&prev), &now, gone), Decision::Run(r) if r.contains("missing"))
        );
        let failed = entry("a.pth", Status::Failed);
        assert!(matches!(
            decide(Some(&failed), &now, good),
            Decision::Run(_)
        ));
    }

    #[test]
    fn merge_unites_shards_and_reports_gaps() {
        let mut a = Manifest::new("p", Some("0/3".into()), 2);
        a.record(entry("a.pth", Status::Ok));
        let mut b = Manifest::new("p", Some("1/3".into()), 2);
        b.record(entry("b.pth", Status::Failed));
        let merged = merge(vec![("a".into(), a.clone()), ("b".into(), b)]).expect("merge");
        assert_eq!(merged.manifest.entries.len(), 2);
        assert_eq!(merged.manifest.merged_shards, ["0/3", "1/3"]);
        assert_eq!(merged.missing_shards, ["2/3"]);
        let other = Manifest::new("q", Some("2/3".into()), 2);
        assert!(merge(vec![("a".into(), a), ("c".into(), other)]).is_err());
    }

    #[test]
    fn record_keeps_entries_sorted_and_unique() {
        let mut m = Manifest::new("p", None, 0);
        m.record(entry("b", Status::Ok));
        m.record(entry("a", Status::Ok));
        m.record(entry("b", Status::Failed));
        let inputs: Vec<&str> = m.entries.iter().map(|e| e.input.as_str()).collect();
        assert_eq!(inputs, ["a", "b"]);
        assert_eq!(m.entry(0, "b").map(|e| e.status), Some(Status::Failed));
    }
}
