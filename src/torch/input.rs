//! Opening the file a command reads, with the messages a user needs when it is not a
//! checkpoint file at all: not there, a folder, a safetensors file.

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

/// Whether `head` (a file's first bytes) starts like a safetensors file: an 8-byte
/// little-endian header length below 2⁴⁰, then a JSON object.
pub fn looks_like_safetensors(head: &[u8]) -> bool {
    head.len() > 8 && head[8] == b'{' && head[..8].iter().skip(5).all(|&b| b == 0)
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
        let dcp = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/dcp/fsdp2_2ranks");
        let error = open_input(&dcp).unwrap_err().to_string();
        assert!(error.contains("ckpt consolidate"), "{error}");
    }

    #[test]
    fn safetensors_first_bytes_are_recognised() {
        let mut head = 64u64.to_le_bytes().to_vec();
        head.extend_from_slice(b"{\"w\":");
        assert!(looks_like_safetensors(&head));
        assert!(!looks_like_safetensors(
            b"PK\x03\x04\x14\x00\x00\x00\x00\x00"
        ));
    }
}
