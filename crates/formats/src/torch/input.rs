//! Opening the file a command reads, with the messages a user needs when it is not a
//! checkpoint file at all: not there, or a folder.

use std::fs::File;
use std::io;
use std::path::Path;

use super::dcp::is_checkpoint_folder;
use super::TorchError;

/// Opens `path` for reading as a checkpoint file. A missing or unreadable path, and a folder
/// (which `open(2)` opens but no read succeeds on), are refused here with one line that says
/// what to do instead, before any scan or decoding runs.
pub fn open_input(path: &Path) -> Result<File, TorchError> {
    let file = File::open(path).map_err(|source| TorchError::Open { source })?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(TorchError::Folder {
            sharded: is_checkpoint_folder(path),
        });
    }
    Ok(file)
}

/// The message of [`TorchError::Open`]: the reason without Rust's `(os error N)` suffix.
pub(super) fn open_reason(source: &io::Error) -> String {
    match source.kind() {
        io::ErrorKind::NotFound => "no such file".to_owned(),
        io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        _ => format!("cannot open it: {source}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_says_so_in_plain_words() {
        let dir = tempfile::tempdir().unwrap();
        let error = open_input(&dir.path().join("nope.pth")).unwrap_err();
        assert_eq!(error.to_string(), "no such file");
    }

    #[test]
    fn a_folder_is_refused_with_what_to_run_instead() {
        let dir = tempfile::tempdir().unwrap();
        let error = open_input(dir.path()).unwrap_err().to_string();
        assert!(
            error.starts_with("is a folder, not a checkpoint file"),
            "{error}"
        );
        assert!(error.contains("ckpt scan"), "{error}");
        let dcp = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/dcp/fsdp2_2ranks");
        let error = open_input(&dcp).unwrap_err().to_string();
        assert!(error.contains("ckpt consolidate"), "{error}");
    }
}
