//! A scratch folder holding the fuzz input as a file, for the targets that open paths.

use std::io::Write;
use std::path::PathBuf;

/// `data` written to `<scratch>/<name>`, in tmpfs when there is one (an export's fsync
/// costs nothing there). `None` when the file cannot be made; the folder goes with the
/// returned handle.
pub fn input_file(data: &[u8], name: &str) -> Option<(tempfile::TempDir, PathBuf)> {
    let dir = if std::path::Path::new("/dev/shm").is_dir() {
        "/dev/shm"
    } else {
        "/tmp"
    };
    let scratch = tempfile::tempdir_in(dir).ok()?;
    let path = scratch.path().join(name);
    std::fs::File::create(&path).ok()?.write_all(data).ok()?;
    Some((scratch, path))
}
