//! Scanning a `torch.distributed.checkpoint` folder: the pickles its reader reads, file by file.
//!
//! A reader of the folder reads `.metadata` (a pickle), then, at the ranges the metadata
//! names, each stored item of the `.distcp` files (a `torch.save` zip with its own pickle).
//! So the scan reads the same: `.metadata` as any file ([`scan_open`]), then, when it decodes
//! as DCP metadata, every item through [`Folder::items`] (the list the security check and
//! `consolidate` read) with [`scan_zip_at`]. Files the metadata does not name are not read,
//! by the scan or by any reader. One [`FileScan`] per file; an item that cannot be read is
//! an unreadable [`Issue`] on its file, or on `.metadata` when no file can be named.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

use ckpt_formats::torch::dcp::{is_dcp, Folder, METADATA_FILE};

use super::classify::AllowList;
use super::scan::{scan_file, scan_open, scan_zip_at, FileScan, Issue, Severity, Status};

/// The `format` of a `.distcp` file's scan: concatenated `torch.save` zips.
pub const DISTCP_FORMAT: &str = "distcp";

/// Scans the DCP folder `dir` (one holding `.metadata`): `.metadata` first, then every file
/// the metadata names, in name order. Never fails: what cannot be read is an [`Issue`].
pub fn scan_dcp(dir: &Path, allowed: &AllowList) -> Vec<FileScan> {
    let path = dir.join(METADATA_FILE);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(_) => return vec![scan_file(&path, allowed)],
    };
    let mut metadata = scan_open(&path, &file, allowed);
    let folder = match Folder::open(dir, file) {
        Ok(folder) => folder,
        Err(e) => {
            metadata.issues.push(unreadable(
                "",
                format!("not readable as DCP metadata, so its stored items cannot be found: {e}"),
            ));
            return vec![metadata];
        }
    };
    let mut files: BTreeMap<&str, (FileScan, Option<File>)> = BTreeMap::new();
    for (name, size) in &folder.files {
        let full = dir.join(name);
        let mut scan = FileScan {
            path: full.clone(),
            format: DISTCP_FORMAT,
            pickles: Vec::new(),
            issues: Vec::new(),
        };
        let open = match size {
            Some(_) => File::open(&full)
                .map_err(|e| {
                    scan.issues
                        .push(unreadable("", format!("cannot read the file: {e}")))
                })
                .ok(),
            None => None,
        };
        files.insert(name, (scan, open));
    }
    for item in folder.items() {
        let target = item.file.and_then(|name| files.get_mut(name));
        match (item.place, target) {
            (Ok(info), Some((scan, Some(file)))) => {
                let location = format!("{}@{}:", item.fqn, info.offset);
                let found = scan_zip_at(
                    &scan.path,
                    file,
                    info.offset,
                    info.length,
                    &location,
                    allowed,
                );
                scan.pickles.extend(found.pickles);
                scan.issues.extend(found.issues);
            }
            (Ok(_), Some((_, None))) => {}
            (Err(what), Some((scan, _))) => scan.issues.push(unreadable(item.fqn, what)),
            (Err(what), None) => metadata.issues.push(unreadable(item.fqn, what)),
            (Ok(info), None) => metadata.issues.push(unreadable(
                item.fqn,
                format!("`{}` is not a file in the folder", info.relative_path),
            )),
        }
    }
    let mut scans = vec![metadata];
    scans.extend(files.into_values().map(|(scan, _)| scan));
    scans
}

/// Scans one file of a DCP folder as the folder's readers read it: the stored items its
/// `.metadata` places in it, each by the zip rule. `None` when `path` is not a file the
/// `.metadata` beside it names. A shard file is several `torch.save` zips back to back,
/// which nothing reads as one archive (`torch.load` of the file alone would find the last
/// item's directory records): judged alone it is ambiguous, judged as DCP reads it, it is
/// its items. When `.metadata` is not clean its scan comes first, so nothing is hidden.
pub fn scan_dcp_member(path: &Path, allowed: &AllowList) -> Option<Vec<FileScan>> {
    let name = path.file_name()?;
    let dir = match path.parent() {
        Some(p) if p.as_os_str().is_empty() => Path::new("."),
        Some(p) => p,
        None => return None,
    };
    if name == METADATA_FILE || !path.is_file() || !is_dcp(dir) {
        return None;
    }
    let mut scans = scan_dcp(dir, allowed).into_iter();
    let metadata = scans.next()?;
    let mut member = scans.find(|s| s.path.file_name() == Some(name))?;
    member.path = path.to_owned();
    Some(match metadata.status() {
        Status::Clean => vec![member],
        _ => vec![metadata, member],
    })
}

fn unreadable(location: &str, message: String) -> Issue {
    Issue {
        location: location.to_owned(),
        severity: Severity::Unreadable,
        message,
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::PathBuf;

    use super::*;
    use crate::security::Status;

    /// A writable copy of the committed FSDP2 folder (2 ranks).
    fn copy() -> tempfile::TempDir {
        let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/dcp/fsdp2_2ranks");
        let dir = tempfile::tempdir().unwrap();
        for entry in fs::read_dir(fixture).unwrap() {
            let entry = entry.unwrap();
            fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
        }
        dir
    }

    fn names(scans: &[FileScan]) -> Vec<String> {
        scans
            .iter()
            .map(|s| s.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn metadata_then_every_named_file_each_with_its_items_pickles() {
        let dir = copy();
        let scans = scan_dcp(dir.path(), &AllowList::default());
        assert_eq!(names(&scans), [".metadata", "__0_0.distcp", "__1_0.distcp"]);
        for scan in &scans {
            assert_eq!(scan.status(), Status::Clean, "{:?}", scan.issues);
        }
        for scan in &scans[1..] {
            assert_eq!(scan.format, DISTCP_FORMAT);
            assert!(scan.pickles.len() > 1, "one pickle per stored item");
            assert!(scan.pickles.iter().all(|p| p.location.contains('@')));
        }
    }

    #[test]
    fn a_shard_file_alone_is_scanned_as_its_folder_reads_it() {
        let dir = copy();
        let shard = dir.path().join("__1_0.distcp");
        let scans = scan_dcp_member(&shard, &AllowList::default()).expect("a DCP member");
        assert_eq!(names(&scans), ["__1_0.distcp"]);
        assert_eq!(scans[0].status(), Status::Clean, "{:?}", scans[0].issues);
        assert_eq!(scans[0].path, shard);
        // Outside its folder the shard is several zips back to back: not a member any more.
        let alone = tempfile::tempdir().unwrap();
        let moved = alone.path().join("__1_0.distcp");
        fs::copy(&shard, &moved).unwrap();
        assert!(scan_dcp_member(&moved, &AllowList::default()).is_none());
        assert!(scan_dcp_member(&dir.path().join(METADATA_FILE), &AllowList::default()).is_none());
    }

    #[test]
    fn a_shard_beside_metadata_that_names_no_items_is_scanned_alone() {
        let dir = copy();
        fs::write(
            dir.path().join(METADATA_FILE),
            b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00trueq\x00\x85R.",
        )
        .unwrap();
        let shard = dir.path().join("__0_0.distcp");
        // The metadata names no items now: the shard is no member, and is scanned alone.
        assert!(scan_dcp_member(&shard, &AllowList::default()).is_none());
    }

    #[test]
    fn a_dangerous_metadata_global_is_flagged() {
        let dir = copy();
        // protocol 2: os.system('true') as the whole pickle.
        fs::write(
            dir.path().join(METADATA_FILE),
            b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00trueq\x00\x85R.",
        )
        .unwrap();
        let scans = scan_dcp(dir.path(), &AllowList::default());
        assert_eq!(names(&scans), [".metadata"], "no items can be found");
        assert_eq!(scans[0].status(), Status::Dangerous);
        assert_eq!(
            scans[0].paths_of(crate::security::Class::Dangerous),
            ["os.system"]
        );
    }

    #[test]
    fn a_truncated_item_file_is_unreadable_and_named() {
        let dir = copy();
        let shard = dir.path().join("__1_0.distcp");
        let len = fs::metadata(&shard).unwrap().len();
        fs::File::options()
            .write(true)
            .open(&shard)
            .unwrap()
            .set_len(len / 2)
            .unwrap();
        let scans = scan_dcp(dir.path(), &AllowList::default());
        assert_eq!(scans[1].status(), Status::Clean);
        assert_eq!(scans[2].status(), Status::Unreadable);
        assert!(scans[2].issues[0].message.contains("truncated"));
    }
}
