//! Writing an output file so that it is either complete or absent.

use std::fs::File;
use std::io;
use std::path::Path;

/// Runs `fill` on a new temporary file in `path`'s folder, fsyncs it, renames it over `path`
/// and fsyncs the folder. If `fill` fails, or the process dies, `path` is untouched: the
/// temporary file (`.ckpt-*.partial`) is removed on error and never has `path`'s name.
pub fn write_atomically<T, E>(
    path: &Path,
    fill: impl FnOnce(&mut File) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<io::Error>,
{
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut temp = tempfile::Builder::new()
        .prefix(".ckpt-")
        .suffix(".partial")
        .tempfile_in(dir)
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create a temporary file in {}: {e}", dir.display()),
            )
        })?;
    let value = fill(temp.as_file_mut())?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| {
        io::Error::new(
            e.error.kind(),
            format!(
                "cannot move the output into place at {}: {}",
                path.display(),
                e.error
            ),
        )
    })?;
    if let Ok(folder) = File::open(dir) {
        // Makes the rename durable; failing here does not undo a complete output.
        let _ = folder.sync_all();
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn complete_output_appears_under_its_name() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("out.bin");
        write_atomically(&path, |f| f.write_all(b"done")).expect("write");
        assert_eq!(std::fs::read(&path).expect("read"), b"done");
    }

    #[test]
    fn failed_fill_leaves_nothing_behind() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("out.bin");
        let result: Result<(), io::Error> = write_atomically(&path, |f| {
            f.write_all(b"half")?;
            Err(io::Error::other("interrupted"))
        });
        assert!(result.is_err());
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
    }
}
