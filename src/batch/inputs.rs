//! Expanding a job's `inputs` (files, folders, glob patterns) into the files to process, or,
//! for a job that starts with `consolidate`, into the checkpoint folders (DCP or DeepSpeed)
//! to process.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ckpt_formats::torch::dcp::is_checkpoint_folder;

use super::BatchError;

/// Extensions a folder's files must have to count as checkpoints.
pub const CHECKPOINT_EXTENSIONS: [&str; 6] = ["pth", "pt", "tar", "ckpt", "bin", "pkl"];

/// Extensions a folder's files may have besides [`CHECKPOINT_EXTENSIONS`] in a job that only
/// exports ONNX: `torch.export` archives. (TorchScript archives are saved as `.pt`.)
pub const PROGRAM_EXTENSIONS: [&str; 1] = ["pt2"];

/// What a job's inputs are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Checkpoint files.
    Files,
    /// Checkpoint files and `torch.export` archives, for a job whose only step is `to-onnx`.
    Models,
    /// Checkpoint folders, for `consolidate`: DCP (a `.metadata` and its `.distcp` files) or
    /// DeepSpeed ZeRO (a save folder with `latest`, or a tag folder).
    DcpFolders,
}

/// One file (or DCP folder) to process.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Input {
    /// Index of the job in the plan.
    pub job: usize,
    /// The path relative to the plan's folder (`/`-separated; absolute when outside it): the
    /// input's identity in the manifest and its shard key.
    pub key: String,
    /// Where the file (or DCP folder) is.
    pub path: PathBuf,
}

/// The inputs `patterns` name, relative to `base`, sorted by key and without duplicates.
///
/// For [`Kind::Files`], a plain path is a file, or a folder searched recursively for files
/// with a [`CHECKPOINT_EXTENSIONS`] extension (hidden names skipped; [`Kind::Models`] also
/// takes [`PROGRAM_EXTENSIONS`]); anything with `*`, `?`
/// or `[` is a glob (`**` crosses folders) whose matching files count. For
/// [`Kind::DcpFolders`], the same with checkpoint folders (DCP or DeepSpeed) in place of files:
/// a plain path is such a folder or a folder searched recursively for them, a glob keeps the
/// ones it matches. A path that does not exist or a pattern that matches nothing is an error:
/// it is almost always a typo. So is a checkpoint folder given to a job of files, which needs
/// `consolidate`.
pub fn expand(
    job: usize,
    patterns: &[String],
    base: &Path,
    kind: Kind,
) -> Result<Vec<Input>, BatchError> {
    let mut files = BTreeSet::new();
    for pattern in patterns {
        let mut matched = BTreeSet::new();
        if kind == Kind::DcpFolders {
            dcp_folders(job, pattern, base, &mut matched)?;
        } else if pattern.contains(['*', '?', '[']) {
            let full = base.join(pattern);
            let text = full
                .to_str()
                .ok_or_else(|| inputs_error(job, pattern, "is not UTF-8"))?;
            let paths = glob::glob(text)
                .map_err(|e| inputs_error(job, pattern, &format!("is not a valid glob: {e}")))?;
            for path in paths {
                let path = path.map_err(|e| inputs_error(job, pattern, &e.to_string()))?;
                if path.is_file() {
                    matched.insert(path);
                }
            }
        } else {
            let path = base.join(pattern);
            if is_checkpoint_folder(&path) {
                return Err(inputs_error(
                    job,
                    pattern,
                    "is a DCP or DeepSpeed checkpoint folder; make `consolidate` the job's first step",
                ));
            } else if path.is_dir() {
                walk(&path, kind, &mut matched)
                    .map_err(|e| inputs_error(job, pattern, &format!("cannot be read: {e}")))?;
            } else if path.is_file() {
                matched.insert(path);
            } else {
                return Err(inputs_error(job, pattern, "does not exist"));
            }
        }
        if matched.is_empty() {
            let what = match kind {
                Kind::Files | Kind::Models => "matches no file",
                Kind::DcpFolders => "matches no DCP or DeepSpeed checkpoint folder",
            };
            return Err(inputs_error(job, pattern, what));
        }
        files.append(&mut matched);
    }
    let mut inputs: Vec<Input> = files
        .into_iter()
        .map(|path| Input {
            job,
            key: key_of(&path, base),
            path,
        })
        .collect();
    inputs.sort();
    Ok(inputs)
}

/// Adds the checkpoint folders (DCP or DeepSpeed ZeRO) `pattern` names to `found`.
fn dcp_folders(
    job: usize,
    pattern: &str,
    base: &Path,
    found: &mut BTreeSet<PathBuf>,
) -> Result<(), BatchError> {
    if pattern.contains(['*', '?', '[']) {
        let full = base.join(pattern);
        let text = full
            .to_str()
            .ok_or_else(|| inputs_error(job, pattern, "is not UTF-8"))?;
        let paths = glob::glob(text)
            .map_err(|e| inputs_error(job, pattern, &format!("is not a valid glob: {e}")))?;
        for path in paths {
            let path = path.map_err(|e| inputs_error(job, pattern, &e.to_string()))?;
            if is_checkpoint_folder(&path) {
                found.insert(path);
            }
        }
        return Ok(());
    }
    let path = base.join(pattern);
    if is_checkpoint_folder(&path) {
        found.insert(path);
    } else if path.is_dir() {
        walk_dcp(&path, found)
            .map_err(|e| inputs_error(job, pattern, &format!("cannot be read: {e}")))?;
    } else if path.exists() {
        return Err(inputs_error(
            job,
            pattern,
            "is not a DCP or DeepSpeed checkpoint folder; `consolidate` reads folders",
        ));
    } else {
        return Err(inputs_error(job, pattern, "does not exist"));
    }
    Ok(())
}

/// Adds the checkpoint folders below `dir` (not below one, nor hidden ones) to `found`.
fn walk_dcp(dir: &Path, found: &mut BTreeSet<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let hidden = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with('.'));
        if hidden || !path.is_dir() {
            continue;
        }
        if is_checkpoint_folder(&path) {
            found.insert(path);
        } else {
            walk_dcp(&path, found)?;
        }
    }
    Ok(())
}

fn walk(dir: &Path, kind: Kind, files: &mut BTreeSet<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            walk(&path, kind, files)?;
        } else if path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
            CHECKPOINT_EXTENSIONS.contains(&e)
                || (kind == Kind::Models && PROGRAM_EXTENSIONS.contains(&e))
        }) {
            files.insert(path);
        }
    }
    Ok(())
}

/// `path` relative to `base`, `/`-separated; the whole path when it is not under `base`.
pub fn key_of(path: &Path, base: &Path) -> String {
    let Ok(relative) = path.strip_prefix(base) else {
        return path.to_string_lossy().into_owned();
    };
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

fn inputs_error(job: usize, pattern: &str, what: &str) -> BatchError {
    BatchError::Plan {
        what: format!("job {}: input `{pattern}` {what}", job + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Creates each of `files` (a one-byte file, with its folders) under `base`.
    fn tree(base: &Path, files: &[&str]) {
        for f in files {
            let p = base.join(f);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(&p, b"x").expect("write");
        }
    }

    /// The keys of the inputs of `kind` that `patterns` expand to under `base`.
    fn keys(base: &Path, kind: Kind, patterns: &[&str]) -> Vec<String> {
        let patterns: Vec<String> = patterns.iter().map(|s| s.to_string()).collect();
        expand(0, &patterns, base, kind)
            .expect("expand")
            .into_iter()
            .map(|i| i.key)
            .collect()
    }

    #[test]
    fn files_folders_and_globs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path();
        tree(
            base,
            &[
                "a/x.pth.tar",
                "a/b/y.pth.tar",
                "a/b/z.pt",
                "a/notes.txt",
                "c.pth",
                "a/.hidden.pth",
            ],
        );
        let keys = |patterns: &[&str]| keys(base, Kind::Files, patterns);
        assert_eq!(keys(&["a/**/*.pth.tar"]), ["a/b/y.pth.tar", "a/x.pth.tar"]);
        assert_eq!(keys(&["a"]), ["a/b/y.pth.tar", "a/b/z.pt", "a/x.pth.tar"]);
        assert_eq!(keys(&["c.pth", "c.pth", "*.pth"]), ["c.pth"]);
        let err = |p: &str| {
            expand(0, &[p.to_string()], base, Kind::Files)
                .expect_err(p)
                .to_string()
        };
        assert!(err("missing.pth").contains("does not exist"));
        assert!(err("**/*.onnx").contains("matches no file"));
    }

    #[test]
    fn a_folder_gives_torch_export_archives_only_to_an_onnx_only_job() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path();
        tree(base, &["m/a.pt2", "m/b.pt", "m/c.pth"]);
        assert_eq!(keys(base, Kind::Files, &["m"]), ["m/b.pt", "m/c.pth"]);
        assert_eq!(
            keys(base, Kind::Models, &["m"]),
            ["m/a.pt2", "m/b.pt", "m/c.pth"]
        );
    }

    #[test]
    fn dcp_folders_by_path_walk_and_glob() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path();
        tree(
            base,
            &[
                "runs/a/step_1/.metadata",
                "runs/a/step_2/.metadata",
                "runs/b/step_1/.metadata",
                "runs/b/step_1/__0_0.distcp",
                "runs/b/notes/x.pth",
            ],
        );
        let keys = |patterns: &[&str]| keys(base, Kind::DcpFolders, patterns);
        assert_eq!(
            keys(&["runs"]),
            ["runs/a/step_1", "runs/a/step_2", "runs/b/step_1"]
        );
        assert_eq!(keys(&["runs/*/step_1"]), ["runs/a/step_1", "runs/b/step_1"]);
        assert_eq!(keys(&["runs/a/step_2"]), ["runs/a/step_2"]);
        let err = |p: &str, kind| {
            expand(0, &[p.to_string()], base, kind)
                .expect_err(p)
                .to_string()
        };
        assert!(err("runs/b/notes", Kind::DcpFolders).contains("matches no DCP"));
        assert!(err("runs/b/notes/x.pth", Kind::DcpFolders).contains("not a DCP"));
        assert!(err("runs/a/step_1", Kind::Files).contains("make `consolidate`"));
    }
}
