//! Scanning an ordinary folder (a downloads folder, a release tree): every checkpoint in it,
//! recursively.
//!
//! Which files are checkpoints is decided by name and by first bytes, so that neither a
//! renamed checkpoint nor a broken `model.pth` slips through: a file is scanned when its name
//! ends in an extension checkpoints are saved under ([`CHECKPOINT_EXTENSIONS`]) or its first
//! bytes open a container `torch.load` reads (a zip, a pickle of protocol 2–5, the legacy
//! magic number; a tar block is too common to count on its own). Everything else (configs,
//! READMEs, images) is skipped and counted. A `torch.distributed.checkpoint` folder inside
//! the tree is one checkpoint, scanned as [`scan_dcp`] scans it, and not walked further.
//!
//! Symbolic links to files are followed (torch would open what they point to); links to
//! folders are not, so a link loop cannot make the walk endless. Entries are visited in name
//! order, so the report is the same on every run.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use ckpt_formats::torch::dcp::is_dcp;

use super::classify::AllowList;
use super::scan::{scan_file, FileScan, Issue, Severity};
use super::scan_dcp::scan_dcp;

/// File name extensions checkpoints are saved under (compared without case). `tar` covers
/// `.pth.tar`; `bin` is Hugging Face's `pytorch_model.bin`.
pub const CHECKPOINT_EXTENSIONS: &[&str] = &[
    "pt",
    "pth",
    "pt2",
    "bin",
    "ckpt",
    "pkl",
    "pickle",
    "tar",
    "safetensors",
    "distcp",
];

/// How deep the walk goes below the folder given.
const MAX_DEPTH: usize = 64;

/// What a folder walk found: the scans of the checkpoints in it, and what it left out.
#[derive(Debug)]
pub struct TreeScan {
    /// The folder given.
    pub root: PathBuf,
    /// One scan per checkpoint file (a DCP folder gives one per file it reads), in walk
    /// order. A subfolder that cannot be listed is here too, as a scan with an unreadable
    /// issue, so it can never pass unnoticed.
    pub scans: Vec<FileScan>,
    /// Files that are not checkpoints by name or first bytes, and links to folders.
    pub skipped: Vec<PathBuf>,
}

/// Scans every checkpoint under the folder `root` (see the module docs for which files).
/// Never fails: what cannot be read is an [`Issue`] in [`TreeScan::scans`].
pub fn scan_tree(root: &Path, allowed: &AllowList) -> TreeScan {
    let mut tree = TreeScan {
        root: root.to_owned(),
        scans: Vec::new(),
        skipped: Vec::new(),
    };
    walk(root, 0, allowed, &mut tree);
    tree
}

fn walk(dir: &Path, depth: usize, allowed: &AllowList, tree: &mut TreeScan) {
    if depth > MAX_DEPTH {
        tree.scans.push(folder_issue(
            dir,
            format!("more than {MAX_DEPTH} folders deep; not walked further"),
        ));
        return;
    }
    let mut entries: Vec<PathBuf> = match fs::read_dir(dir) {
        Ok(list) => match list.map(|e| e.map(|e| e.path())).collect() {
            Ok(paths) => paths,
            Err(e) => {
                tree.scans
                    .push(folder_issue(dir, format!("cannot list the folder: {e}")));
                return;
            }
        },
        Err(e) => {
            tree.scans
                .push(folder_issue(dir, format!("cannot list the folder: {e}")));
            return;
        }
    };
    entries.sort();
    for path in entries {
        let Ok(link) = fs::symlink_metadata(&path) else {
            tree.scans.push(scan_file(&path, allowed));
            continue;
        };
        if link.is_dir() {
            if is_dcp(&path) {
                tree.scans.extend(scan_dcp(&path, allowed));
            } else {
                walk(&path, depth + 1, allowed, tree);
            }
        } else if link.file_type().is_symlink() && path.is_dir() {
            tree.skipped.push(path);
        } else if is_checkpoint(&path) {
            tree.scans.push(scan_file(&path, allowed));
        } else {
            tree.skipped.push(path);
        }
    }
}

/// Whether `path` is a checkpoint by its name or its first bytes. A file that cannot be
/// opened counts as one, so the scan reports why it could not be read.
fn is_checkpoint(path: &Path) -> bool {
    let by_name = path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        CHECKPOINT_EXTENSIONS
            .iter()
            .any(|known| e.eq_ignore_ascii_case(known))
    });
    if by_name {
        return true;
    }
    let mut head = Vec::with_capacity(8);
    match fs::File::open(path).and_then(|f| f.take(8).read_to_end(&mut head)) {
        Ok(_) => is_checkpoint_start(&head),
        Err(_) => true,
    }
}

/// First bytes `torch.load` reads as a checkpoint: a zip local header, a pickle of protocol
/// 2–5 (what every torch and Python 3 pickle begins with), or the legacy stream's magic
/// number (itself such a pickle).
fn is_checkpoint_start(head: &[u8]) -> bool {
    head.starts_with(b"PK\x03\x04") || matches!(head, [0x80, 2..=5, ..])
}

fn folder_issue(dir: &Path, message: String) -> FileScan {
    FileScan {
        path: dir.to_owned(),
        format: "folder",
        pickles: Vec::new(),
        issues: vec![Issue {
            location: String::new(),
            severity: Severity::Unreadable,
            message,
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::Status;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(name)
    }

    fn names(paths: &[PathBuf], root: &Path) -> Vec<String> {
        paths
            .iter()
            .map(|p| p.strip_prefix(root).unwrap().display().to_string())
            .collect()
    }

    #[test]
    fn scans_checkpoints_by_name_and_by_first_bytes_and_skips_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::create_dir(root.join("run1")).unwrap();
        fs::copy(fixture("zip_tinycnn_sd.pth"), root.join("run1/model.pth")).unwrap();
        fs::copy(fixture("zip_train_ckpt.pth"), root.join("renamed.data")).unwrap();
        fs::write(root.join("README.md"), "ckpt notes\n").unwrap();
        fs::write(root.join("config.json"), "{}").unwrap();
        let tree = scan_tree(root, &AllowList::default());
        let scanned: Vec<PathBuf> = tree.scans.iter().map(|s| s.path.clone()).collect();
        assert_eq!(names(&scanned, root), ["renamed.data", "run1/model.pth"]);
        assert_eq!(names(&tree.skipped, root), ["README.md", "config.json"]);
        assert!(tree.scans.iter().all(|s| s.status() == Status::Clean));
    }

    #[test]
    fn a_dangerous_file_deep_in_the_tree_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c");
        fs::create_dir_all(&deep).unwrap();
        fs::copy(fixture("hostile/reduce_os_system.pth"), deep.join("x.bin")).unwrap();
        let tree = scan_tree(dir.path(), &AllowList::default());
        assert_eq!(tree.scans.len(), 1);
        assert_eq!(tree.scans[0].status(), Status::Dangerous);
    }

    #[test]
    fn a_broken_file_with_a_checkpoint_name_is_unreadable_not_skipped() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("model.pth"), "not a checkpoint").unwrap();
        let tree = scan_tree(dir.path(), &AllowList::default());
        assert_eq!(tree.scans.len(), 1);
        assert_eq!(tree.scans[0].status(), Status::Unreadable);
    }

    #[test]
    fn a_dcp_folder_inside_is_one_checkpoint_and_not_walked() {
        let dir = tempfile::tempdir().unwrap();
        let first = fixture("dcp/fsdp2_2ranks");
        let copy = dir.path().join("sharded");
        fs::create_dir(&copy).unwrap();
        for entry in fs::read_dir(&first).unwrap() {
            let entry = entry.unwrap().path();
            if entry.is_file() {
                fs::copy(&entry, copy.join(entry.file_name().unwrap())).unwrap();
            }
        }
        let tree = scan_tree(dir.path(), &AllowList::default());
        let direct = scan_dcp(&copy, &AllowList::default());
        assert_eq!(tree.scans.len(), direct.len());
        assert!(tree.skipped.is_empty());
    }

    #[test]
    fn links_to_folders_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(dir.path(), dir.path().join("loop")).unwrap();
        let tree = scan_tree(dir.path(), &AllowList::default());
        assert!(tree.scans.is_empty());
        assert_eq!(names(&tree.skipped, dir.path()), ["loop"]);
    }

    #[test]
    fn an_unlistable_subfolder_is_unreadable() {
        let dir = tempfile::tempdir().unwrap();
        let scans = {
            let mut tree = TreeScan {
                root: dir.path().to_owned(),
                scans: Vec::new(),
                skipped: Vec::new(),
            };
            walk(
                &dir.path().join("missing"),
                0,
                &AllowList::default(),
                &mut tree,
            );
            tree.scans
        };
        assert_eq!(scans.len(), 1);
        assert_eq!(scans[0].status(), Status::Unreadable);
    }
}
