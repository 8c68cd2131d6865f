//! Expanding a job's `inputs` (files, folders, glob patterns) into the files to process.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::BatchError;

/// Extensions a folder's files must have to count as checkpoints.
pub const CHECKPOINT_EXTENSIONS: [&str; 6] = ["pth", "pt", "tar", "ckpt", "bin", "pkl"];

/// One file to process.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Input {
    /// Index of the job in the plan.
    pub job: usize,
    /// The path relative to the plan's folder (`/`-separated; absolute when outside it): the
    /// input's identity in the manifest and its shard key.
    pub key: String,
    /// Where the file is.
    pub path: PathBuf,
}

/// The files `patterns` name, relative to `base`, sorted by key and without duplicates.
///
/// A plain path is a file, or a folder searched recursively for files with a
/// [`CHECKPOINT_EXTENSIONS`] extension (hidden names skipped); anything with `*`, `?` or `[`
/// is a glob (`**` crosses folders). A path that does not exist or a pattern that matches
/// nothing is an error: it is almost always a typo.
pub fn expand(job: usize, patterns: &[String], base: &Path) -> Result<Vec<Input>, BatchError> {
    let mut files = BTreeSet::new();
    for pattern in patterns {
        let mut matched = BTreeSet::new();
        if pattern.contains(['*', '?', '[']) {
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
            if path.is_dir() {
                walk(&path, &mut matched)
                    .map_err(|e| inputs_error(job, pattern, &format!("cannot be read: {e}")))?;
            } else if path.is_file() {
                matched.insert(path);
            } else {
                return Err(inputs_error(job, pattern, "does not exist"));
            }
        }
        if matched.is_empty() {
            return Err(inputs_error(job, pattern, "matches no file"));
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

fn walk(dir: &Path, files: &mut BTreeSet<PathBuf>) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            walk(&path, files)?;
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| CHECKPOINT_EXTENSIONS.contains(&e))
        {
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

    #[test]
    fn files_folders_and_globs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let base = dir.path();
        for f in [
            "a/x.pth.tar",
            "a/b/y.pth.tar",
            "a/b/z.pt",
            "a/notes.txt",
            "c.pth",
            "a/.hidden.pth",
        ] {
            let p = base.join(f);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(&p, b"x").expect("write");
        }
        let keys = |patterns: &[&str]| -> Vec<String> {
            let patterns: Vec<String> = patterns.iter().map(|s| s.to_string()).collect();
            expand(0, &patterns, base)
                .expect("expand")
                .into_iter()
                .map(|i| i.key)
                .collect()
        };
        assert_eq!(keys(&["a/**/*.pth.tar"]), ["a/b/y.pth.tar", "a/x.pth.tar"]);
        assert_eq!(keys(&["a"]), ["a/b/y.pth.tar", "a/b/z.pt", "a/x.pth.tar"]);
        assert_eq!(keys(&["c.pth", "c.pth", "*.pth"]), ["c.pth"]);
        let err = |p: &str| expand(0, &[p.to_string()], base).expect_err(p).to_string();
        assert!(err("missing.pth").contains("does not exist"));
        assert!(err("**/*.onnx").contains("matches no file"));
    }
}
